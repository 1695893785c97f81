"""pylance 14's fragment-level distributed operations against pylance: ``LanceFragment.create`` /
``create_from_file`` + ``Append``/``Overwrite``, ``update_columns`` + ``Update``, ``merge`` +
``Merge``, ``delete_rows`` + ``Delete``, and hand-built ``Rewrite``, ``DataReplacement`` and
``UpdateConfig`` commits. The same code runs on both libraries over copies of one dataset
(fragments crossing 4096-row chunks, several fragments, deletions); tables, schemas, row order,
data file layouts and error classes must match, and each library reads the other's result.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 12_000
LIBS = (lance, lance_fw)


def _table(rows: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "s": pa.array([f"v{i % 97}" for i in range(rows)]),
            "x": pa.array(np.arange(rows) * 0.5),
        }
    )


def _copies(tmp_path: Path, delete: str | None = "id % 7 = 0") -> dict[Any, str]:
    """One pylance-written dataset (fragments of 5000 rows), copied once per library."""
    base = str(tmp_path / "base.lance")
    lance.write_dataset(_table(), base, max_rows_per_file=5000)
    if delete:
        lance.dataset(base).delete(delete)
    out = {}
    for lib in LIBS:
        out[lib] = str(tmp_path / f"{lib.__name__}.lance")
        shutil.copytree(base, out[lib])
    return out


def _same_result(paths: dict[Any, str]) -> pa.Table:
    """Both datasets read the same by both libraries; their data files name the same fields."""
    want = lance.dataset(paths[lance]).to_table()
    for lib in LIBS:
        for path in paths.values():
            got = lib.dataset(path).to_table()
            assert got.equals(want), (lib.__name__, path)
            assert got.schema.equals(want.schema, check_metadata=True)
    layouts = [
        [[list(d.fields) for d in f.data_files()] for f in lance.dataset(p).get_fragments()]
        for p in paths.values()
    ]
    assert layouts[0] == layouts[1]
    coverage = [
        sorted(
            (i.name, sorted(s.fragment_ids)) for i in lance.dataset(p).describe_indices() for s in i.segments
        )
        for p in paths.values()
    ]
    assert coverage[0] == coverage[1]
    return want


def _error_class(call: Callable[[], object]) -> type:
    with pytest.raises(Exception) as info:
        call()
    return next(c for c in (TypeError, OSError, ValueError, RuntimeError) if isinstance(info.value, c))


# -- LanceFragment.create ------------------------------------------------------------------------
def test_create_then_overwrite_and_append(tmp_path: Path) -> None:
    data = _table(9000)
    metas = {}
    for lib in LIBS:
        uri = str(tmp_path / lib.__name__)
        first = lib.LanceFragment.create(uri, data.slice(0, 5000), fragment_id=3)
        second = lib.LanceFragment.create(
            uri, data.slice(5000).to_batches(max_chunksize=1000), schema=data.schema
        )
        metas[lib] = [first.to_json(), second.to_json()]
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(data.schema, [first, second]))
        more = lib.LanceFragment.create(uri, data.slice(0, 4100), max_rows_per_group=100)
        lib.LanceDataset.commit(uri, lib.LanceOperation.Append([more]), read_version=ds.version)
    for meta in metas.values():
        for m in meta:
            m["files"][0]["path"] = m["files"][0]["file_size_bytes"] = None
    assert metas[lance] == metas[lance_fw]
    table = _same_result({lib: str(tmp_path / lib.__name__) for lib in LIBS})
    assert table.num_rows == 9000 + 4100
    for lib in LIBS:
        ids = [f.fragment_id for f in lib.dataset(str(tmp_path / lib.__name__)).get_fragments()]
        assert ids == [0, 1, 2]


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, uri: lib.LanceFragment.create(uri, _table(10).select(["s", "id", "x"])),
        lambda lib, uri: lib.LanceFragment.create(uri, pa.table({"q": [1.0]})),
        lambda lib, uri: lib.LanceFragment.create(uri, _table(10).to_batches()),
        lambda lib, uri: lib.LanceFragment.create(uri, _table(10).slice(0, 0)),
        lambda lib, uri: lib.LanceFragment.create(uri, _table(10), mode="bogus"),
    ],
    ids=["reordered", "other-columns", "no-schema", "empty", "bad-mode"],
)
def test_create_refuses_what_pylance_refuses(tmp_path: Path, call: Callable) -> None:
    paths = _copies(tmp_path, None)
    assert _error_class(lambda: call(lance, paths[lance])) is _error_class(
        lambda: call(lance_fw, paths[lance_fw])
    )


def test_create_with_overwrite_mode_writes_the_data_schema(tmp_path: Path) -> None:
    paths = _copies(tmp_path, None)
    other = pa.table({"q": pa.array(np.arange(5000) / 7)})
    for lib, uri in paths.items():
        meta = lib.LanceFragment.create(uri, other, mode="overwrite")
        assert [list(f.fields) for f in meta.files] == [[0]]
        lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(other.schema, [meta]), read_version=1)
    assert _same_result(paths).equals(other)


def test_create_from_file(tmp_path: Path) -> None:
    paths = _copies(tmp_path, None)
    extra = _table(5000)
    for lib, uri in paths.items():
        writer = lance.file.LanceFileWriter(f"{uri}/data/extra.lance")
        writer.write_batch(extra)
        writer.close()
        ds = lib.dataset(uri)
        meta = lib.LanceFragment.create_from_file("extra.lance", ds, 9)
        assert (meta.id, meta.physical_rows, [list(f.fields) for f in meta.files]) == (9, 5000, [[0, 1, 2]])
        lib.LanceDataset.commit(uri, lib.LanceOperation.Append([meta]), read_version=ds.version)
    assert _same_result(paths).num_rows == ROWS + 5000


# -- update_columns + Update ---------------------------------------------------------------------
def _updates() -> pa.Table:
    ids = np.array([1, 2, 4099, 4100, 4999, 5000, 7, 11_999, 8191, 123_456])
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(-ids.astype(np.float64))})


def test_update_columns_then_update_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    fields = {}
    for lib, uri in paths.items():
        lib.dataset(uri).create_scalar_index("x", "BTREE")
        lib.dataset(uri).create_scalar_index("s", "BITMAP")
        ds = lib.dataset(uri)
        updated, modified = [], []
        for fragment in ds.get_fragments():
            meta, modified = fragment.update_columns(_updates(), "id")
            updated.append(meta)
        fields[lib] = modified
        op = lib.LanceOperation.Update(updated_fragments=updated, fields_modified=modified)
        ds = lib.LanceDataset.commit(uri, op, read_version=ds.version)
        # a second update of the same column of one fragment: the older new file is tombstoned
        meta, modified = ds.get_fragment(0).update_columns(pa.table({"id": [3], "x": [0.25]}), "id", "id")
        lib.LanceDataset.commit(
            uri,
            lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=modified),
            read_version=ds.version,
        )
    assert fields[lance] == fields[lance_fw] == [2]
    table = _same_result(paths)
    assert table.filter(pa.compute.equal(table["id"], 4100))["x"].to_pylist() == [-4100.0]


def test_update_columns_by_row_id_with_offsets(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    offsets = {}
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        fragment = ds.get_fragment(1)
        row_ids = pa.array([(1 << 32) + 5, (1 << 32) + 4500, 42], pa.uint64())
        meta, modified, bitmap = fragment.update_columns(
            pa.table({"_rowid": row_ids, "s": ["a", "b", "c"]}), with_offsets=True
        )
        offsets[lib] = bitmap
        lib.LanceDataset.commit(
            uri,
            lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=modified),
            read_version=ds.version,
        )
    assert offsets[lance] == offsets[lance_fw]
    _same_result(paths)


@pytest.mark.parametrize(
    ("data", "left_on"),
    [
        (pa.table({"id": [1], "q": [1]}), "id"),
        (pa.table({"idd": [1], "x": [1.0]}), "id"),
        (pa.table({"id": [1], "x": [1.0]}), "nope"),
    ],
    ids=["unknown-column", "no-right-key", "no-left-key"],
)
def test_update_columns_refuses_what_pylance_refuses(tmp_path: Path, data: pa.Table, left_on: str) -> None:
    paths = _copies(tmp_path)
    classes = [
        _error_class(lambda lib=lib, uri=uri: lib.dataset(uri).get_fragment(0).update_columns(data, left_on))
        for lib, uri in paths.items()
    ]
    assert classes[0] is classes[1]


# -- merge + Merge -------------------------------------------------------------------------------
def test_merge_then_merge_operation_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    ids = np.arange(0, ROWS, 3)
    right = pa.table(
        {"key": pa.array(ids[::-1], pa.int64()), "z": [f"z{i}" for i in ids[::-1]], "w": ids[::-1] * 2}
    )
    schemas = {}
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        merged, schema = [], None
        for fragment in ds.get_fragments():
            meta, schema = fragment.merge(right, "id", "key")
            merged.append(meta)
        schemas[lib] = schema.to_pyarrow()
        lib.LanceDataset.commit(uri, lib.LanceOperation.Merge(merged, schema), read_version=ds.version)
    assert schemas[lance].equals(schemas[lance_fw])
    table = _same_result(paths)
    assert table.column_names == ["id", "s", "x", "z", "w"]
    assert table["z"].null_count == table.num_rows - len([i for i in ids if i % 7])


@pytest.mark.parametrize(("left_on", "right_on"), [("nope", None), ("id", "nope")])
def test_merge_refuses_what_pylance_refuses(tmp_path: Path, left_on: str, right_on: str | None) -> None:
    paths = _copies(tmp_path)
    right = pa.table({"id": pa.array([1, 2], pa.int64()), "z": ["a", "b"]})
    classes = [
        _error_class(
            lambda lib=lib, uri=uri: lib.dataset(uri).get_fragment(0).merge(right, left_on, right_on)
        )
        for lib, uri in paths.items()
    ]
    assert classes[0] is classes[1]


# -- delete_rows + Delete ------------------------------------------------------------------------
def test_delete_rows_then_delete_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        frags = ds.get_fragments()
        first = frags[0].delete_rows([1, 2, 3, 4096, 4097, 0, 7])  # 0 and 7 are deleted already
        unchanged = frags[1].delete_rows([5, 12, 19])  # ids 5005, 5012, 5019: deleted already
        gone = frags[2].delete_rows(range(frags[2].physical_rows))
        assert gone is None
        assert unchanged.to_json()["deletion_file"]["num_deleted_rows"] == frags[1].num_deletions
        assert (
            frags[1].delete_rows([]).to_json()["deletion_file"]["num_deleted_rows"] == frags[1].num_deletions
        )
        assert first.to_json()["deletion_file"]["num_deleted_rows"] == frags[0].num_deletions + 5
        op = lib.LanceOperation.Delete([first], [frags[2].fragment_id], "by offsets")
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
        assert _error_class(lambda frags=frags: frags[0].delete_rows([5000])) is ValueError
    assert _same_result(paths).num_rows == lance.dataset(paths[lance]).count_rows()


# -- Rewrite, DataReplacement, UpdateConfig ------------------------------------------------------
def test_rewrite_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    for lib, uri in paths.items():
        lib.dataset(uri).create_scalar_index("id", "BTREE")
        ds = lib.dataset(uri)
        old = ds.get_fragments()[:2]
        live = pa.concat_tables([f.to_table() for f in old])
        new = lib.fragment.write_fragments(live, uri, max_rows_per_file=4000)
        group = lib.LanceOperation.RewriteGroup([f.metadata for f in old], new)
        lib.LanceDataset.commit(uri, lib.LanceOperation.Rewrite([group], []), read_version=ds.version)
        assert [f.fragment_id for f in lib.dataset(uri).get_fragments()] == [2, 3, 4, 5]
        assert lib.dataset(uri).to_table(filter="id = 4100")["x"].to_pylist() == [2050.0]  # indexed
        stale = lib.LanceOperation.Rewrite([group], [])
        stale_commit = partial(lib.LanceDataset.commit, uri, stale, read_version=ds.version)
        assert _error_class(stale_commit) is OSError
    _same_result(paths)


def test_data_replacement_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path, None)
    for lib, uri in paths.items():
        lib.dataset(uri).add_columns({"y": "x * 2"})
        ds = lib.dataset(uri)
        rows = ds.get_fragment(1).physical_rows
        writer = lance.file.LanceFileWriter(f"{uri}/data/y1.lance")
        writer.write_batch(pa.table({"y": pa.array(-np.arange(rows, dtype=np.float64))}))
        writer.close()
        data_file = lib.fragment.DataFile("y1.lance", [3], [0], 2, 2) if lib is lance else _fw_data_file()
        op = lib.LanceOperation.DataReplacement([lib.LanceOperation.DataReplacementGroup(1, data_file)])
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
        files = lance.dataset(uri).get_fragment(1).data_files()
        assert files[-1].path == "y1.lance" and files[-1].file_size_bytes
    table = _same_result(paths)
    assert table["y"][5000].as_py() == -0.0 and table["y"][5001].as_py() == -1.0


def _fw_data_file() -> Any:
    from lance_fw.api.transactions import DataFile

    return DataFile("y1.lance", [3], [0], 2, 2)


def test_update_config_matches_pylance(tmp_path: Path) -> None:
    paths = _copies(tmp_path, None)
    seen = {}
    for lib, uri in paths.items():
        update = lib.LanceOperation.UpdateMap
        op = lib.LanceOperation.UpdateConfig(
            config_updates=update({"a": "1", "b": "2"}),
            table_metadata_updates=update({"t": "v"}),
            schema_metadata_updates=update({"s": "m"}),
            field_metadata_updates={2: update({"f": "g"})},
        )
        ds = lib.LanceDataset.commit(uri, op, read_version=1)
        op = lib.LanceOperation.UpdateConfig(
            config_updates=update({"a": None, "c": "3"}),
            schema_metadata_updates=update({"q": "r"}, replace=True),
        )
        ds = lib.LanceDataset.commit(uri, op, read_version=ds.version)
        seen[lib] = (ds.config(), ds.schema.metadata, ds.schema.field("x").metadata)
        missing = lib.LanceOperation.UpdateConfig(field_metadata_updates={9: update({"f": "g"})})
        assert (
            _error_class(partial(lib.LanceDataset.commit, uri, missing, read_version=ds.version)) is OSError
        )
    assert seen[lance] == seen[lance_fw]
    assert seen[lance][0] == {"b": "2", "c": "3"}
    _same_result(paths)


def test_operations_read_back_as_pylance_names_them(tmp_path: Path) -> None:
    """The transaction each commit writes reads back (by pylance) as the same operation kind."""
    paths = _copies(tmp_path)
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        meta, modified = ds.get_fragment(0).update_columns(_updates(), "id")
        ds = lib.LanceDataset.commit(
            uri,
            lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=modified),
            read_version=ds.version,
        )
        op = lib.LanceOperation.UpdateConfig(config_updates=lib.LanceOperation.UpdateMap({"k": "v"}))
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
    kinds = {
        lib: [type(lance.dataset(uri).read_transaction(v).operation).__name__ for v in (3, 4)]
        for lib, uri in paths.items()
    }
    assert kinds[lance] == kinds[lance_fw] == ["Update", "UpdateConfig"]
    updates = [lance.dataset(uri).read_transaction(3).operation for uri in paths.values()]
    assert [(u.fields_modified, u.update_mode, len(u.updated_fragments)) for u in updates] == [
        ([2], "rewrite_rows", 1)
    ] * 2


def test_update_with_removed_and_new_fragments_matches_pylance(tmp_path: Path) -> None:
    """A hand-built rows update: one fragment's rows deleted by offset, one fragment removed, and
    new fragments from ``write_fragments`` holding the rewritten rows; scalar indices survive."""
    paths = _copies(tmp_path)
    for lib, uri in paths.items():
        lib.dataset(uri).create_scalar_index("id", "BTREE")
        ds = lib.dataset(uri)
        frags = ds.get_fragments()
        moved = frags[0].to_table(filter="id < 100")
        offsets = [i for i in range(100) if i % 7]
        updated = frags[0].delete_rows(offsets)
        rewritten = moved.set_column(2, "x", pa.compute.multiply(moved["x"], -1))
        new = lib.fragment.write_fragments(rewritten, uri)
        op = lib.LanceOperation.Update(
            removed_fragment_ids=[frags[2].fragment_id], updated_fragments=[updated], new_fragments=new
        )
        ds = lib.LanceDataset.commit(uri, op, read_version=ds.version)
        assert ds.to_table(filter="id = 50")["x"].to_pylist() == [-25.0]
        assert ds.count_rows("id >= 10000") == 0
    table = _same_result(paths)
    assert table.num_rows == lance.dataset(paths[lance_fw]).count_rows()
    kinds = [lance.dataset(p).read_transaction(4).operation for p in paths.values()]
    assert [(k.removed_fragment_ids, len(k.new_fragments), k.update_mode) for k in kinds] == [
        ([2], 1, "rewrite_rows")
    ] * 2


@pytest.mark.parametrize("concurrent", ["delete", "add_columns"])
def test_update_over_a_concurrent_change_conflicts(tmp_path: Path, concurrent: str) -> None:
    """An ``Update`` replacing a fragment that a later commit changed (new deletions, a new data
    file) must not silently undo that change: both libraries refuse it with an ``OSError``."""
    paths = _copies(tmp_path)
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        meta, modified = ds.get_fragment(0).update_columns(_updates(), "id")
        if concurrent == "delete":
            lib.dataset(uri).delete("id = 10")
        else:
            lib.dataset(uri).add_columns({"y": "x * 2"})
        op = lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=modified)
        assert _error_class(partial(lib.LanceDataset.commit, uri, op, read_version=ds.version)) is OSError
    _same_result(paths)


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_update_and_merge_nested_columns_match_pylance(tmp_path: Path, version: str) -> None:
    rows = 6000
    st = pa.array([{"a": i, "b": str(i)} for i in range(rows)])
    lists = pa.array([[i, i + 1] for i in range(rows)])
    table = pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "st": st,
            "l": lists,
            "s": [f"{i % 5}" for i in range(rows)],
        }
    )
    base = str(tmp_path / "base.lance")
    lance.write_dataset(table, base, max_rows_per_file=4500, data_storage_version=version)
    paths = {}
    for lib in LIBS:
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        shutil.copytree(base, paths[lib])
    updates = pa.table(
        {
            "id": pa.array([1, 4500, 5999], pa.int64()),
            "st": pa.array([{"a": -1, "b": "x"}, {"a": None, "b": "n"}, {"a": -3, "b": None}], st.type),
            "l": pa.array([[9], [8, 8, 8], None], lists.type),
        }
    )
    right = pa.table({"id": pa.array([3, 4501], pa.int64()), "m": pa.array([{"p": 1.5}, {"p": 2.5}])})
    modified = {}
    for lib, uri in paths.items():
        ds = lib.dataset(uri)
        metas = [f.update_columns(updates, "id") for f in ds.get_fragments()]
        modified[lib] = [m[1] for m in metas]
        op = lib.LanceOperation.Update(updated_fragments=[m[0] for m in metas], fields_modified=metas[0][1])
        ds = lib.LanceDataset.commit(uri, op, read_version=ds.version)
        if version == "2.0":  # unmatched rows would be null structs, which 2.0 files cannot hold
            assert _error_class(partial(ds.get_fragment(0).merge, right, "id")) is ValueError
            continue
        merged = [f.merge(right, "id") for f in ds.get_fragments()]
        op = lib.LanceOperation.Merge([m[0] for m in merged], merged[0][1])
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
    assert modified[lance] == modified[lance_fw]
    result = _same_result(paths)
    assert result.filter(pa.compute.equal(result["id"], 4500))["st"].to_pylist() == [{"a": None, "b": "n"}]
