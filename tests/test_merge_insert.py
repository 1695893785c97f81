"""merge_insert and update, differential against pylance: same stats, same rows in the same order."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError, SchemaError
from tests.conftest import assert_tables_equal


def _target() -> pa.Table:
    return pa.table({"id": pa.array([1, 2, 3, None, 5, 6], pa.int64()),
                     "v": ["a", "b", "c", "n", "e", "f"],
                     "x": pa.array([10, 20, 30, 40, 50, 60], pa.int32())})


SOURCE = pa.table({"id": pa.array([2, 4, None, 6], pa.int64()), "v": ["B", "D", "N", "F"],
                   "x": pa.array([21, 41, 0, 59], pa.int32())})

CASES = {
    "upsert": lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
    "insert if not exists": lambda b: b.when_not_matched_insert_all(),
    "update only": lambda b: b.when_matched_update_all(),
    "conditional update": lambda b: b.when_matched_update_all(condition="target.x < source.x"),
    "delete matched": lambda b: b.when_matched_delete(),
    "replace by source": lambda b: b.when_matched_update_all().when_not_matched_insert_all()
    .when_not_matched_by_source_delete(),
    "delete not matched where": lambda b: b.when_not_matched_by_source_delete("x > 40"),
}


@pytest.fixture(params=["2.0", "2.2"])
def pair(request, tmp_path):
    theirs, ours = str(tmp_path / "pylance"), str(tmp_path / "lance_fw")
    for module, uri in ((lance, theirs), (lance_fw, ours)):
        module.write_dataset(_target(), uri, data_storage_version=request.param, max_rows_per_file=4)
        module.dataset(uri).delete("id = 1")
    return theirs, ours


@pytest.mark.parametrize("case", CASES)
def test_merge_insert_matches_pylance(pair, case):
    theirs, ours = pair
    expected = CASES[case](lance.dataset(theirs).merge_insert("id")).execute(SOURCE)
    ds = lance_fw.dataset(ours)
    got = CASES[case](ds.merge_insert("id")).execute(SOURCE)
    assert got == expected
    assert ds.version == lance.dataset(theirs).version  # one new version, and ds moved to it
    assert_tables_equal(lance.dataset(theirs).to_table(), lance_fw.dataset(ours).to_table())
    assert_tables_equal(lance_fw.dataset(ours).to_table(), lance.dataset(ours).to_table())  # pylance reads ours


def test_partial_source_updates_only_its_columns(pair):
    theirs, ours = pair
    source = pa.table({"id": pa.array([3, 5], pa.int64()), "x": pa.array([-3, -5], pa.int32())})
    expected = lance.dataset(theirs).merge_insert("id").when_matched_update_all().execute(source)
    assert lance_fw.dataset(ours).merge_insert("id").when_matched_update_all().execute(source) == expected
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())


def test_multi_column_keys(tmp_path):
    table = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "v": [1.0, 2.0, 3.0]})
    source = pa.table({"a": [1, 3], "b": ["y", "z"], "v": [20.0, 30.0]})
    out = []
    for module in (lance, lance_fw):
        uri = str(tmp_path / module.__name__)
        module.write_dataset(table, uri)
        stats = module.dataset(uri).merge_insert(["a", "b"]).when_matched_update_all() \
            .when_not_matched_insert_all().execute(source)
        out.append((stats, lance.dataset(uri).to_table()))
    assert out[0][0] == out[1][0]
    assert_tables_equal(out[0][1], out[1][1])


def test_errors(pair):
    _, ours = pair
    ds = lance_fw.dataset(ours)
    dup = pa.table({"id": pa.array([2, 2], pa.int64()), "v": ["x", "y"], "x": pa.array([0, 0], pa.int32())})
    with pytest.raises(InvalidArgumentError, match="ambiguous"):
        ds.merge_insert("id").when_matched_update_all().execute(dup)
    with pytest.raises(InvalidArgumentError, match="when_matched_fail"):
        ds.merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(SOURCE)
    with pytest.raises(SchemaError, match="lacks"):  # a source without nullable columns inserts nulls
        ds.merge_insert("id").when_not_matched_insert_all().execute(pa.table({"v": ["z"]}))
    with pytest.raises(SchemaError, match="not in the dataset"):
        ds.merge_insert("id").when_matched_update_all().execute(pa.table({"id": [2], "zzz": [1]}))
    with pytest.raises(InvalidArgumentError, match="key column"):
        ds.merge_insert("nope")
    assert lance_fw.dataset(ours).version == 2  # nothing was committed


@pytest.mark.parametrize("updates, where", [
    ({"v": "upper(v)"}, "id >= 3"),
    ({"x": "x * 2", "v": "'same'"}, None),
    ({"x": "x + 1"}, "v = 'zzz'"),
])
def test_update_matches_pylance(pair, updates, where):
    theirs, ours = pair
    expected = lance.dataset(theirs).update(updates, where=where)
    ds = lance_fw.dataset(ours)
    assert ds.update(updates, where=where) == expected
    assert ds.version == lance.dataset(theirs).version
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())


def test_conflicting_concurrent_delete_is_refused_without_leftovers(tmp_path):
    import os

    from lance_fw.errors import CommitConflictError

    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_target(), uri)
    stale = lance_fw.dataset(uri)
    lance.dataset(uri).delete("id = 3")  # another writer changes the same fragment
    files_before = {d: sorted(os.listdir(os.path.join(uri, d))) for d in ("data", "_deletions")}
    with pytest.raises(CommitConflictError):
        stale.merge_insert("id").when_matched_update_all().execute(SOURCE)
    assert {d: sorted(os.listdir(os.path.join(uri, d))) for d in ("data", "_deletions")} == files_before
    assert lance.dataset(uri).count_rows() == 5 and lance.dataset(uri).version == 2


def test_delete_reports_rows_like_pylance(pair):
    theirs, ours = pair
    assert lance_fw.dataset(ours).delete("x >= 50") == lance.dataset(theirs).delete("x >= 50") == \
        {"num_deleted_rows": 2}
