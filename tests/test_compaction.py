"""ds.optimize.compact_files(): fewer fragments, same rows in the same order, pylance reads it."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw._proto import transaction_pb2
from lance_fw.errors import CommitConflictError
from tests.conftest import assert_tables_equal


def _operation(uri: str, version: int) -> str:
    """The operation of ``version``'s transaction file (pylance's Python API shows ReserveFragments
    only as a BaseOperation)."""
    name = lance.dataset(uri, version=version).read_transaction(version).uuid
    path = next((tmp for tmp in os.listdir(os.path.join(uri, "_transactions")) if name in tmp))
    txn = transaction_pb2.Transaction()
    txn.ParseFromString(open(os.path.join(uri, "_transactions", path), "rb").read())
    return txn.WhichOneof("operation")


def _small_appends(module, uri, version="2.2", n=6):
    for i in range(n):
        rows = range(i * 10, i * 10 + 10)
        module.write_dataset(pa.table({"a": pa.array(rows, pa.int64()), "s": [f"v{x}" for x in rows],
                                       "l": [[x] * (x % 3) for x in rows]}),
                             uri, mode="append", data_storage_version=version)


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-written", "lance_fw-written"])
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_compaction_keeps_rows_and_order(tmp_path, writer, version):
    uri = str(tmp_path / "ds")
    _small_appends(writer, uri, version)
    writer.dataset(uri).delete("a % 7 = 0")
    before = lance.dataset(uri).to_table()
    ds = lance_fw.dataset(uri)
    metrics = ds.optimize.compact_files(target_rows_per_fragment=25)
    # 51 live rows in one bin, cut into groups of >= 25 rows (8+9+8, then the rest): pylance's plan
    assert (metrics.fragments_removed, metrics.fragments_added) == (6, 2)
    assert metrics.files_removed == 6 + 6 and metrics.files_added == 2  # data + deletion files
    # pylance 14 commits ReserveFragments (version 8) before the Rewrite (version 9)
    assert ds.version == 9 and [f.physical_rows for f in ds.get_fragments()] == [25, 26]
    assert_tables_equal(before, lance.dataset(uri).to_table())
    assert_tables_equal(before, lance_fw.dataset(uri).to_table())
    assert _operation(uri, 8) == "reserve_fragments"
    assert lance.dataset(uri).read_transaction(9).operation.__class__.__name__ == "Rewrite"
    assert ds.optimize.compact_files(target_rows_per_fragment=25).fragments_removed == 0  # nothing left to do
    assert lance_fw.dataset(uri).version == 9


def test_large_fragments_and_lone_small_ones_are_left_alone(tmp_path):
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"a": range(100)}), uri)
    lance_fw.write_dataset(pa.table({"a": range(5)}), uri, mode="append")
    lance_fw.write_dataset(pa.table({"a": range(100)}), uri, mode="append")
    assert lance_fw.dataset(uri).optimize.compact_files(target_rows_per_fragment=50).fragments_removed == 0
    lance_fw.dataset(uri).delete("a >= 50 AND a < 90")  # > 10% of two fragments deleted
    metrics = lance_fw.dataset(uri).optimize.compact_files(target_rows_per_fragment=50)
    assert metrics.fragments_removed == 3 and lance.dataset(uri).count_rows() == 125


def test_concurrent_append_is_kept_and_concurrent_delete_conflicts(tmp_path):
    uri = str(tmp_path / "ds")
    _small_appends(lance_fw, uri)
    stale = lance_fw.dataset(uri)
    lance_fw.write_dataset(pa.table({"a": pa.array([999], pa.int64()), "s": ["x"], "l": [[1]]}), uri, mode="append")
    stale.optimize.compact_files(target_rows_per_fragment=1000)
    ids = lance.dataset(uri).to_table().column("a").to_pylist()
    # as in pylance 14, the rewritten fragments follow the kept ones (the concurrent append here)
    assert ids == [999] + list(range(60)) and len(lance.dataset(uri).get_fragments()) == 2

    stale = lance_fw.dataset(uri)
    lance.dataset(uri).delete("a = 5")
    files = sorted(os.listdir(os.path.join(uri, "data")))
    with pytest.raises(CommitConflictError):
        stale.optimize.compact_files(target_rows_per_fragment=1000)
    assert sorted(os.listdir(os.path.join(uri, "data"))) == files  # the rewritten files were removed
    assert lance.dataset(uri).count_rows() == 60


# -- the plan is pylance's: same groups, same fragment sizes, same order --------------------------

def _layout(uri, sizes, deletes, version):
    start = 0
    for i, n in enumerate(sizes):
        rows = range(start, start + n)
        lance.write_dataset(pa.table({"id": pa.array(rows, pa.int64()), "s": [f"r{j:07d}" for j in rows]}),
                            uri, mode="append" if i else "create", data_storage_version=version)
        start += n
    if deletes:
        lance.dataset(uri).delete(deletes)


LAYOUTS = [  # (fragment sizes, rows deleted, compact_files options)
    ([600] * 4, None, {"target_rows_per_fragment": 1000}),
    ([600] * 3, None, {"target_rows_per_fragment": 1000}),
    ([100] * 10, None, {"target_rows_per_fragment": 250}),
    ([300] * 9, None, {"target_rows_per_fragment": 1000}),
    ([100, 100, 2000, 100, 100], None, {"target_rows_per_fragment": 1000}),
    ([100, 2000, 100, 100], None, {"target_rows_per_fragment": 1000}),
    ([1000] * 3, "id % 5 = 0", {"target_rows_per_fragment": 2000}),
    ([1000] * 3, "id % 5 = 0", {"target_rows_per_fragment": 500}),
    ([1000, 50, 1000], "id < 100", {"target_rows_per_fragment": 1000}),
    ([1200] * 3, "id < 1150 OR (id >= 2400 AND id < 3550)", {"target_rows_per_fragment": 1000}),
    ([2000], "id % 5 = 0", {"target_rows_per_fragment": 500}),
    ([5000], "id % 5 = 0", {"target_rows_per_fragment": 1300}),
    ([1000, 1000], "id % 10 = 0", {"target_rows_per_fragment": 500, "materialize_deletions_threshold": 0.05}),
    ([1000, 1000], "id % 10 = 0", {"target_rows_per_fragment": 500, "materialize_deletions_threshold": 1.0}),
    ([1000, 1000], "id % 10 = 0", {"target_rows_per_fragment": 500, "materialize_deletions": False}),
    ([5000, 300, 300], "id < 2000", {"target_rows_per_fragment": 4096}),
]


@pytest.mark.parametrize("sizes, deletes, options", LAYOUTS, ids=[f"layout{i}" for i in range(len(LAYOUTS))])
def test_compaction_plan_matches_pylance(tmp_path, sizes, deletes, options):
    results = {}
    for module in (lance, lance_fw):
        uri = str(tmp_path / module.__name__)
        _layout(uri, sizes, deletes, "2.0" if len(sizes) % 2 else "2.1")
        metrics = module.dataset(uri).optimize.compact_files(**options)
        after = lance.dataset(uri)
        results[module] = ((metrics.fragments_removed, metrics.fragments_added, metrics.files_removed,
                            metrics.files_added), [f.count_rows() for f in after.get_fragments()], after.to_table())
    expected, actual = results[lance], results[lance_fw]
    assert actual[:2] == expected[:2]
    assert_tables_equal(expected[2], actual[2])  # same rows in the same (pylance's) order


def test_compaction_max_bytes_per_file_matches_pylance(tmp_path):
    """pylance rolls a compacted file after the batch in which written pages pass the limit."""
    counts = {}
    for module in (lance, lance_fw):
        uri = str(tmp_path / module.__name__)
        for i in range(3):
            rows = range(i * 400_000, (i + 1) * 400_000)
            lance.write_dataset(pa.table({"id": pa.array(rows, pa.int64())}), uri, mode="append")
        module.dataset(uri).optimize.compact_files(target_rows_per_fragment=10**7, max_bytes_per_file=1_000_000)
        counts[module] = [f.count_rows() for f in lance.dataset(uri).get_fragments()]
    assert counts[lance_fw] == counts[lance]  # pylance: [1053952, 146048]
