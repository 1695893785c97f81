"""Smoke calls (see ``compat_smokes``) for pylance's fragment-level distributed operations:
``LanceFragment.create``/``create_from_file``/``update_columns``/``merge``/``delete_rows``
committed with ``LanceDataset.commit``, and ``lance.progress``.

Each returns plain values: the committed table, and what a pylance user reads of the fragments
and progress calls.
"""

from __future__ import annotations

import importlib
import json
import os
from types import ModuleType
from typing import Any

import pyarrow as pa
from compat_smokes import DATA, Ctx, raises, smoke


def _progress(ctx: Ctx) -> ModuleType:
    return importlib.import_module(f"{ctx.lib.__name__}.progress")


def _files(meta: Any) -> list:
    return [list(f.fields) for f in meta.files]


@smoke("LanceFragment.create")
def _create(ctx: Ctx) -> object:
    uri = ctx.path()
    first = ctx.lib.LanceFragment.create(uri, DATA.slice(0, 6), fragment_id=5)
    second = ctx.lib.LanceFragment.create(uri, DATA.slice(6), max_rows_per_group=2)
    ds = ctx.lib.LanceDataset.commit(uri, ctx.lib.LanceOperation.Overwrite(DATA.schema, [first, second]))
    more = ctx.lib.LanceFragment.create(uri, DATA.slice(0, 2))
    ds = ctx.lib.LanceDataset.commit(uri, ctx.lib.LanceOperation.Append([more]), read_version=ds.version)
    refused = raises(lambda: ctx.lib.LanceFragment.create(uri, DATA.select(["x", "id", "s"])))
    return first.id, _files(first), [f.fragment_id for f in ds.get_fragments()], ds.to_table(), refused


@smoke("LanceFragment.create_from_file")
def _create_from_file(ctx: Ctx) -> object:
    import lance.file

    ds = ctx.fresh()
    writer = lance.file.LanceFileWriter(os.path.join(ds.uri, "data", "extra.lance"))
    writer.write_batch(DATA.slice(0, 3))
    writer.close()
    meta = ctx.lib.LanceFragment.create_from_file("extra.lance", ds, 8)
    ds = ctx.lib.LanceDataset.commit(ds.uri, ctx.lib.LanceOperation.Append([meta]), read_version=ds.version)
    return meta.id, meta.physical_rows, _files(meta), ds.to_table()


@smoke("LanceFragment.update_columns")
def _update_columns(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 2")
    updates = pa.table({"id": pa.array([1, 2, 5, 42], pa.int64()), "x": [-1.0, -2.0, -5.0, -42.0]})
    updated, modified = [], []
    for fragment in ds.get_fragments():
        meta, modified = fragment.update_columns(updates, "id")
        updated.append(meta)
    op = ctx.lib.LanceOperation.Update(updated_fragments=updated, fields_modified=modified)
    ds = ctx.lib.LanceDataset.commit(ds.uri, op, read_version=ds.version)
    by_row_id = pa.table({"_rowid": pa.array([0, 3], pa.uint64()), "s": ["a", "b"]})
    _, _, offsets = ds.get_fragment(0).update_columns(by_row_id, with_offsets=True)
    unknown = raises(lambda: ds.get_fragment(0).update_columns(pa.table({"id": [1], "q": [1]}), "id"))
    return modified, [_files(m) for m in updated], ds.to_table(), offsets, unknown


@smoke("LanceFragment.merge")
def _merge(ctx: Ctx) -> object:
    ds = ctx.fresh()
    right = pa.table({"key": pa.array([9, 1, 4], pa.int64()), "z": ["nine", "one", "four"]})
    merged: list = []
    schema: Any = None
    for fragment in ds.get_fragments():
        meta, schema = fragment.merge(right, "id", "key")
        merged.append(meta)
    ds = ctx.lib.LanceDataset.commit(
        ds.uri, ctx.lib.LanceOperation.Merge(merged, schema), read_version=ds.version
    )
    missing = raises(lambda: ds.get_fragment(0).merge(right, "nope"))
    return [_files(m) for m in merged], schema.to_pyarrow(), ds.to_table(), missing


@smoke("LanceFragment.delete_rows")
def _delete_rows(ctx: Ctx) -> object:
    ds = ctx.fresh()
    frags = ds.get_fragments()
    first = frags[0].delete_rows([1, 3])
    gone = frags[2].delete_rows([0, 1])
    op = ctx.lib.LanceOperation.Delete([first], [frags[2].fragment_id], "offsets")
    ds = ctx.lib.LanceDataset.commit(ds.uri, op, read_version=ds.version)
    out_of_range = raises(lambda: frags[1].delete_rows([4]))
    return first.to_json()["deletion_file"]["num_deleted_rows"], gone, ds.to_table(), out_of_range


def _recorder(ctx: Ctx) -> Any:
    class Recorder(_progress(ctx).FragmentWriteProgress):  # type: ignore[misc]
        def __init__(self) -> None:
            self.calls: list = []

        def begin(self, fragment: Any, **kwargs: Any) -> None:
            self.calls.append(("begin", fragment.id, fragment.physical_rows, _files(fragment)))

        def complete(self, fragment: Any, **kwargs: Any) -> None:
            self.calls.append(("complete", fragment.id, fragment.physical_rows, _files(fragment)))

    return Recorder()


@smoke("lance.progress.FragmentWriteProgress")
def _fragment_write_progress(ctx: Ctx) -> object:
    recorder = _recorder(ctx)
    ctx.lib.LanceFragment.create(ctx.path(), DATA, fragment_id=3, progress=recorder)
    return recorder.calls, raises(lambda: _progress(ctx).FragmentWriteProgress())


@smoke("lance.progress.NoopFragmentWriteProgress")
def _noop_progress(ctx: Ctx) -> object:
    meta = ctx.lib.LanceFragment.create(ctx.path(), DATA, progress=_progress(ctx).NoopFragmentWriteProgress())
    return meta.physical_rows


@smoke("lance.progress.FileSystemFragmentWriteProgress")
def _file_system_progress(ctx: Ctx) -> object:
    folder = ctx.path()
    tracker = _progress(ctx).FileSystemFragmentWriteProgress(folder, {"worker": "1"})
    tracker.begin(ctx.lib.LanceFragment.create(ctx.path(), DATA, fragment_id=6))
    begun = sorted(os.listdir(folder))
    with open(os.path.join(folder, "fragment_6.in_progress")) as f:
        state = json.load(f)
    tracker.complete(ctx.lib.LanceFragment.create(ctx.path(), DATA, fragment_id=6))
    return begun, state, sorted(os.listdir(folder))


@smoke("lance.progress.IndexProgress", "lance.IndexProgress")
def _index_progress(ctx: Ctx) -> object:
    made = [
        _progress(ctx).IndexProgress("progress", "train", c, t, "rows")
        for c, t in ((3, 12), (20, 12), (1, 0))
    ]
    return [(p.event, p.stage, p.completed, p.total, p.unit, p.fraction) for p in made]
