"""ds.optimize.compact_files(): fewer fragments, same rows in the same order, pylance reads it."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError
from tests.conftest import assert_tables_equal


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
    assert (metrics.fragments_removed, metrics.fragments_added) == (6, 3)
    assert metrics.files_removed == 6 + 6 and metrics.files_added == 3  # data + deletion files
    assert ds.version == 8 and [f.physical_rows for f in ds.get_fragments()] == [25, 25, 1]
    assert_tables_equal(before, lance.dataset(uri).to_table())
    assert_tables_equal(before, lance_fw.dataset(uri).to_table())
    assert lance.dataset(uri).read_transaction(8).operation.__class__.__name__ == "Rewrite"
    assert ds.optimize.compact_files(target_rows_per_fragment=25).fragments_removed == 0  # nothing left to do
    assert lance_fw.dataset(uri).version == 8


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
    assert ids == list(range(60)) + [999] and len(lance.dataset(uri).get_fragments()) == 2

    stale = lance_fw.dataset(uri)
    lance.dataset(uri).delete("a = 5")
    files = sorted(os.listdir(os.path.join(uri, "data")))
    with pytest.raises(CommitConflictError):
        stale.optimize.compact_files(target_rows_per_fragment=1000)
    assert sorted(os.listdir(os.path.join(uri, "data"))) == files  # the rewritten files were removed
    assert lance.dataset(uri).count_rows() == 60
