"""Deleting rows writes pylance-compatible deletion files (Arrow IPC and roaring) in one commit."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError
from lance_fw.table.delete import delete_rows, expression_matcher


def _delete(uri: str, expression, text: str) -> int:
    snapshot = lance_fw.dataset(uri)._snapshot  # the table layer takes a snapshot, not the façade object
    return delete_rows(snapshot, expression_matcher(snapshot, expression), text)[0]


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_delete_then_pylance_reads_appends_and_compacts(uri, version):
    n = 24_000
    lance_fw.write_dataset(pa.table({"a": pa.array(range(n), pa.int64()), "s": [str(i) for i in range(n)]}), uri,
                           data_storage_version=version, max_rows_per_file=12_000)
    _delete(uri, pc.field("a") < 100, "a < 100")                    # few rows -> .arrow
    _delete(uri, pc.equal(pc.bit_wise_and(pc.field("a"), 1), 0), "a & 1 = 0")  # > 5000 rows -> .bin
    names = os.listdir(f"{uri}/_deletions")
    assert any(n.endswith(".arrow") for n in names) and any(n.endswith(".bin") for n in names)
    expected = [a for a in range(n) if a >= 100 and a % 2]
    assert lance.dataset(uri).to_table().column("a").to_pylist() == expected
    assert lance_fw.dataset(uri).to_table().column("a").to_pylist() == expected
    assert lance_fw.dataset(uri).count_rows() == lance.dataset(uri).count_rows() == len(expected)
    lance.write_dataset(pa.table({"a": pa.array([n], pa.int64()), "s": ["x"]}), uri, mode="append")
    lance.dataset(uri).optimize.compact_files()
    assert lance_fw.dataset(uri).to_table().column("a").to_pylist() == expected + [n]


def test_deleting_a_whole_fragment_drops_it(uri):
    lance_fw.write_dataset(pa.table({"a": list(range(10))}), uri, max_rows_per_file=5)
    _delete(uri, pc.field("a") < 5, "a < 5")
    assert [f.fragment_id for f in lance_fw.dataset(uri).get_fragments()] == [1]
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [5, 6, 7, 8, 9]


def test_delete_of_nothing_commits_nothing(uri):
    lance_fw.write_dataset(pa.table({"a": [1, 2]}), uri)
    assert _delete(uri, pc.field("a") > 5, "a > 5") == 1


def test_concurrent_change_to_the_same_fragment_is_a_conflict(uri):
    lance_fw.write_dataset(pa.table({"a": list(range(10))}), uri)
    stale = lance_fw.dataset(uri)
    lance.dataset(uri).delete("a = 1")
    with pytest.raises(CommitConflictError):
        delete_rows(stale._snapshot, expression_matcher(stale._snapshot, pc.field("a") == 2), "a = 2")
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [0, 2, 3, 4, 5, 6, 7, 8, 9]
