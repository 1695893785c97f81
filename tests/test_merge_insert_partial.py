"""merge_insert with a partial-schema source, differential against pylance 14.

pylance patches the source's columns in place (``update_mode`` REWRITE_COLUMNS: each touched
fragment gains a data file of those columns, its older files tombstone them as field id -2, rows
keep their order) when a partial source is joined through a BTREE/BITMAP index on the key, or when
``write_mode("rewrite_columns")`` asks; otherwise matched rows move to the end. Inserted rows get
nulls for the columns the source lacks. Every case runs the same merge on a pylance-written and a
lance_fw-written copy and compares what a reader can see: rows in order, schema, stats, fragment
layout, deletion files, the transaction's shape and index coverage; then each library reads the
other's result and pylance keeps writing on lance_fw's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError, InvalidUserInputError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import list_versions, read_transaction

Build = Callable[[Any], Any]
MODULES = (lance, lance_fw)


def _table(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "id": pa.array(ids),
            "a": pa.array([f"a{i}" for i in ids]),
            "b": pa.array(ids + 100),
            "c": pa.array(ids.astype(np.float64) / 2),
        }
    )


def _make(
    uri: str,
    module: Any,
    n: int,
    rows_per_file: int,
    index: str | None,
    delete: str | None,
    extra_index: str | None = None,
    schema: pa.Schema | None = None,
) -> None:
    table = _table(n) if schema is None else _table(n).cast(schema)
    module.write_dataset(table, uri, max_rows_per_file=rows_per_file)
    ds = module.dataset(uri)
    if index:
        ds.create_scalar_index("id", index)
    if extra_index:
        module.dataset(uri).create_scalar_index(extra_index, "BTREE")
    if delete:
        module.dataset(uri).delete(delete)


def _shape(uri: str) -> dict:
    """What the two results must share: layout, transaction shape and index coverage."""
    ds = lance.dataset(uri)
    storage = resolve_storage(uri, None)
    entry = max(list_versions(storage, uri), key=lambda v: v.version)
    txn = read_transaction(storage, uri, entry.path)
    assert txn is not None
    kind = txn.WhichOneof("operation")
    return {
        "version": ds.version,
        "fragments": [
            (
                f.fragment_id,
                [list(d.fields) for d in f.data_files()],
                f.deletion_file() is not None,
                f.physical_rows,
            )
            for f in ds.get_fragments()
        ],
        "operation": kind,
        "update_mode": txn.update.update_mode if kind == "update" else None,
        "fields_modified": sorted(txn.update.fields_modified),
        "updated_fragments": sorted(f.id for f in txn.update.updated_fragments),
        "new_fragments": len(txn.update.new_fragments),
        "indices": sorted(
            (d.name, d.num_rows_indexed, sorted(s.fragment_ids for s in d.segments)[0])
            for d in ds.describe_indices()
        ),
    }


def _same_table(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema.equals(expected.schema), (actual.schema, expected.schema)
    assert actual.equals(expected), (actual.slice(0, 20).to_pydict(), expected.slice(0, 20).to_pydict())


def _run(
    tmp_path: Any,
    build: Build,
    source: pa.Table,
    n: int = 10,
    rows_per_file: int = 4,
    index: str | None = "BTREE",
    delete: str | None = None,
    **kw: Any,
) -> tuple[str, str]:
    uris = []
    stats = []
    for module in MODULES:
        uri = str(tmp_path / module.__name__)
        _make(uri, module, n, rows_per_file, index, delete, **kw)
        ds = module.dataset(uri)
        stats.append(build(ds.merge_insert("id")).execute(source))
        assert ds.version == module.dataset(uri).version  # the dataset object moved to the new version
        uris.append(uri)
    theirs, ours = uris
    assert stats[1] == stats[0]
    expected = lance.dataset(theirs).to_table()
    _same_table(expected, lance.dataset(ours).to_table())  # pylance reads ours
    _same_table(expected, lance_fw.dataset(ours).to_table())
    _same_table(expected, lance_fw.dataset(theirs).to_table())  # lance_fw reads pylance's
    assert _shape(ours) == _shape(theirs)
    return theirs, ours


def _source(ids: list[int | None], columns: tuple[str, ...] = ("b",)) -> pa.Table:
    out: dict[str, pa.Array] = {"id": pa.array(ids, pa.int64())}
    for name in columns:
        if name == "a":
            out[name] = pa.array([None if i is None else f"new{i}" for i in ids])
        elif name == "b":
            out[name] = pa.array([None if i is None else -i for i in ids], pa.int64())
        else:
            out[name] = pa.array([None if i is None else -i / 4 for i in ids], pa.float64())
    return pa.table(out)


UPDATE = lambda b: b.when_matched_update_all()  # noqa: E731
UPSERT = lambda b: b.when_matched_update_all().when_not_matched_insert_all()  # noqa: E731

CASES: dict[str, tuple[Build, pa.Table, dict]] = {
    "update, btree": (UPDATE, _source([2, 5, 12]), {}),
    "upsert, btree": (UPSERT, _source([2, 5, 12]), {}),
    "update, no index": (UPDATE, _source([2, 5, 12]), {"index": None}),
    "upsert, no index": (UPSERT, _source([2, 5, 12]), {"index": None}),
    "upsert string column, bitmap": (UPSERT, _source([9, 1, 11], ("a",)), {"index": "BITMAP"}),
    "upsert, zonemap (not joined through)": (UPSERT, _source([2, 5, 12]), {"index": "ZONEMAP"}),
    "conditional update": (
        lambda b: b.when_matched_update_all("source.b < -3 and target.b > 0"),
        _source([2, 5, 12]),
        {},
    ),
    "insert only": (lambda b: b.when_not_matched_insert_all(), _source([2, 12, 13]), {}),
    "fail without match": (lambda b: b.when_matched_fail().when_not_matched_insert_all(), _source([12]), {}),
    "key-only source": (UPSERT, _source([2, 12], ()), {}),
    "two columns, source order": (UPDATE, _source([0, 3, 4], ("c", "a")), {}),
    "no match": (UPDATE, _source([20, 21]), {}),
    "empty source": (UPDATE, _source([]), {}),
    "null keys dropped by the indexed join": (UPSERT, _source([2, None, 12]), {}),
    "null keys without index": (UPSERT, _source([2, None, 12]), {"index": None}),
    "null keys, delete matched (no index probe)": (
        lambda b: b.when_matched_delete().when_not_matched_insert_all(),
        _source([2, None, 12]),
        {},
    ),
    "null keys, full source through the index": (UPSERT, _source([2, None, 12], ("a", "b", "c")), {}),
    "null keys, full source, rewrite_rows": (
        lambda b: UPSERT(b).write_mode("rewrite_rows"),
        _source([2, None, 12], ("a", "b", "c")),
        {},
    ),
    "rewrite_columns without index": (
        lambda b: UPDATE(b).write_mode("rewrite_columns"),
        _source([2, 5, 12]),
        {"index": None},
    ),
    "rewrite_rows with index": (lambda b: UPSERT(b).write_mode("rewrite_rows"), _source([2, 5, 12]), {}),
    "use_index(False)": (lambda b: UPSERT(b).use_index(False), _source([2, 5, 12]), {}),
    "delete matched": (lambda b: b.when_matched_delete(), _source([2, 5, 12]), {}),
    "delete by source": (
        lambda b: UPDATE(b).when_not_matched_by_source_delete("id > 7"),
        _source([2, 5, 12]),
        {},
    ),
    "fragments with deletions": (UPSERT, _source([2, 3, 5, 12]), {"delete": "id = 1 or id = 6"}),
    "index on the updated column": (UPDATE, _source([2, 9]), {"extra_index": "b"}),
}


@pytest.mark.parametrize("case", CASES)
def test_partial_merge_matches_pylance(tmp_path: Path, case: str) -> None:
    build, source, kw = CASES[case]
    _run(tmp_path, build, source, **kw)


def test_pages_fragments_and_deletions_are_crossed(tmp_path: Path) -> None:
    """10k rows in fragments of 6000 (pages and 4096-row chunks crossed), deleted rows inside the
    patched fragments, strings and numbers, inserts with a nullable column missing."""
    ids = [*range(0, 10_000, 3), *range(10_000, 10_050)]
    source = _source(ids, ("a", "b"))
    _, ours = _run(
        tmp_path,
        UPSERT,
        source,
        n=10_000,
        rows_per_file=6000,
        delete="id % 7 = 0 and id < 5000",
        extra_index="c",
    )
    assert _shape(ours)["update_mode"] == 1  # the columns were patched


def test_successive_patches_drop_fully_tombstoned_files(tmp_path: Path) -> None:
    theirs, ours = _run(tmp_path, UPDATE, _source([1, 2]))
    for uri, module in ((theirs, lance), (ours, lance_fw)):
        module.dataset(uri).merge_insert("id").when_matched_update_all().execute(_source([2, 3]))
        module.dataset(uri).merge_insert("id").when_matched_update_all().execute(_source([3], ("a",)))
    _same_table(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _shape(ours) == _shape(theirs)


def test_pylance_keeps_writing_on_our_result(tmp_path: Path) -> None:
    theirs, ours = _run(tmp_path, UPSERT, _source([2, 5, 12]))
    more = _table(3).cast(lance.dataset(theirs).schema)
    for uri in (theirs, ours):
        lance.write_dataset(more, uri, mode="append")
        lance.dataset(uri).merge_insert("id").when_matched_update_all().execute(_source([0, 5], ("c",)))
        lance.dataset(uri).optimize.compact_files()
    _same_table(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    _same_table(lance.dataset(theirs).to_table(), lance_fw.dataset(ours).to_table())


def test_lance_fw_compacts_a_patched_dataset(tmp_path: Path) -> None:
    """Each library compacts its twin: the same rows in the same order (the inserted row's
    fragment, not indexed, stays apart from the indexed ones in both, so it now comes first)."""
    theirs, ours = _run(tmp_path, UPSERT, _source([2, 5, 12]))
    lance.dataset(theirs).optimize.compact_files()
    lance_fw.dataset(ours).optimize.compact_files()
    _same_table(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _shape(ours)["fragments"] == _shape(theirs)["fragments"]


def _pylance_message(exc: BaseException) -> str:
    """pylance's message without its "Invalid user input: " prefix and Rust source location."""
    text = re.sub(r", /\S+\.rs:\d+:\d+$", "", str(exc))
    return text.removeprefix("Invalid user input: ")


@pytest.mark.parametrize(
    "build, source",
    [
        (lambda b: b.when_matched_fail().write_mode("rewrite_columns"), _source([2])),
        (lambda b: UPSERT(b).write_mode("rewrite_columns"), _source([2])),
        (
            lambda b: (
                b.when_matched_delete()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete()
                .write_mode("rewrite_columns")
            ),
            _source([2], ()),
        ),
        (lambda b: UPDATE(b).write_mode("rewrite_columns"), _table(2)),
    ],
)
def test_rewrite_columns_refusals_match_pylance(tmp_path: Path, build: Build, source: pa.Table) -> None:
    got = []
    for module in MODULES:
        uri = str(tmp_path / module.__name__)
        _make(uri, module, 10, 4, "BTREE", None)
        with pytest.raises(OSError) as info:
            build(module.dataset(uri).merge_insert("id")).execute(source)
        got.append(_pylance_message(info.value))
        assert module.dataset(uri).version == 2  # nothing committed
    assert isinstance(info.value, InvalidUserInputError)
    assert got[1] == got[0]


def test_inserting_without_a_non_nullable_column_is_refused_like_pylance(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("a", pa.string(), False),
            pa.field("b", pa.int64()),
            pa.field("c", pa.float64()),
        ]
    )
    got = []
    for module in MODULES:
        uri = str(tmp_path / module.__name__)
        _make(uri, module, 10, 4, "BTREE", None, schema=schema)
        with pytest.raises(OSError) as info:
            UPSERT(module.dataset(uri).merge_insert("id")).execute(_source([2, 12]))
        got.append(_pylance_message(info.value))
    assert got[1] == got[0]
    # updating only is fine: the missing column keeps its values
    theirs, ours = (str(tmp_path / m.__name__) for m in MODULES)
    for uri, module in ((theirs, lance), (ours, lance_fw)):
        UPDATE(module.dataset(uri).merge_insert("id")).execute(_source([2, 12]))
    _same_table(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _shape(ours) == _shape(theirs)


def test_builder_argument_errors(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _make(uri, lance_fw, 10, 4, "BTREE", None)
    with pytest.raises(InvalidArgumentError, match="Invalid write_mode: foo"):
        lance_fw.dataset(uri).merge_insert("id").write_mode("foo")
    with pytest.raises(ValueError, match="not configured to change the data"):
        lance_fw.dataset(uri).merge_insert("id").execute(_source([2]))
    with pytest.raises(OSError):  # the patch path's target side holds only the source's columns
        lance_fw.dataset(uri).merge_insert("id").when_matched_update_all("target.a = 'a2'").execute(
            _source([2])
        )
    assert lance_fw.dataset(uri).version == 2


def test_stable_row_ids_are_refused_not_rewritten(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(10), uri, max_rows_per_file=4, enable_stable_row_ids=True)
    lance.dataset(uri).create_scalar_index("id", "BTREE")  # pylance patches and records row versions
    with pytest.raises(UnsupportedFeatureError, match="stable row ids"):
        UPDATE(lance_fw.dataset(uri).merge_insert("id")).execute(_source([2]))
    assert lance_fw.dataset(uri).version == 2


def test_concurrent_append_rebases_and_concurrent_delete_conflicts(tmp_path: Path) -> None:
    import os

    from lance_fw.errors import CommitConflictError

    uri = str(tmp_path / "ds")
    _make(uri, lance_fw, 10, 4, "BTREE", None)
    stale = lance_fw.dataset(uri)
    lance.write_dataset(_table(2), uri, mode="append")  # another writer appends: no conflict
    UPDATE(stale.merge_insert("id")).execute(_source([2, 5]))
    got = lance.dataset(uri).to_table()
    assert got.column("id").to_pylist() == [*range(10), 0, 1]
    assert got.column("b").to_pylist()[:6] == [100, 101, -2, 103, 104, -5]
    assert lance.dataset(uri).version == 4

    stale = lance_fw.dataset(uri)
    lance.dataset(uri).delete("id = 3")  # another writer deletes in a fragment this merge patches
    before = sorted(os.listdir(os.path.join(uri, "data")))
    with pytest.raises(CommitConflictError):
        UPDATE(stale.merge_insert("id")).execute(_source([2]))
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before  # the patch file was removed
    assert lance.dataset(uri).version == 5
