"""cleanup_old_versions against pylance's on the same history, and as the GC for failed writes."""

from __future__ import annotations

import os
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError
from lance_fw.table.cleanup import cleanup_old_versions


def _history(module, uri):
    module.write_dataset(pa.table({"a": range(10)}), uri)                      # v1
    module.write_dataset(pa.table({"a": range(5)}), uri, mode="overwrite")     # v2: v1's file is garbage
    module.write_dataset(pa.table({"a": range(3)}), uri, mode="append")        # v3
    module.dataset(uri).delete("a = 1")                                        # v4: deletion file
    module.dataset(uri).delete("a = 2")                                        # v5: v4's deletion file is garbage


def _storage(uri):
    return lance_fw.dataset(uri)._storage


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-written", "lance_fw-written"])
def test_same_stats_and_data_as_pylance(tmp_path, writer):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _history(writer, ours)
    _history(writer, theirs)
    before = lance.dataset(ours).to_table()
    stats = cleanup_old_versions(_storage(ours), ours, older_than=timedelta(0))
    expected = lance.dataset(theirs).cleanup_old_versions(older_than=timedelta(0))
    assert (stats.old_versions, stats.data_files_removed, stats.deletion_files_removed) == \
        (expected.old_versions, expected.data_files_removed, expected.deletion_files_removed)
    assert [v["version"] for v in lance.dataset(ours).versions()] == [5]
    assert lance.dataset(ours).to_table().equals(before)
    assert sorted(os.listdir(os.path.join(ours, "data"))) and \
        len(os.listdir(os.path.join(ours, "data"))) == len(os.listdir(os.path.join(theirs, "data")))


def test_retain_versions_and_default_age(tmp_path):
    uri = str(tmp_path / "ds")
    _history(lance_fw, uri)
    assert cleanup_old_versions(_storage(uri), uri).old_versions == 0  # all younger than two weeks
    stats = cleanup_old_versions(_storage(uri), uri, retain_versions=2)
    assert stats.old_versions == 3
    assert [v["version"] for v in lance_fw.dataset(uri).versions()] == [4, 5]
    assert lance_fw.dataset(uri, version=4).count_rows() == 6
    with pytest.raises(InvalidArgumentError, match="retain_versions"):
        cleanup_old_versions(_storage(uri), uri, retain_versions=0)


def test_orphans_of_failed_writes_are_kept_until_verified_or_old(tmp_path):
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"a": range(10)}), uri)
    orphan = os.path.join(uri, "data", "orphan-from-a-killed-task.lance")
    open(orphan, "wb").write(b"partial")
    assert cleanup_old_versions(_storage(uri), uri, older_than=timedelta(0)).data_files_removed == 0
    assert os.path.exists(orphan)  # could be a write in flight
    old = os.path.getmtime(orphan) - 8 * 86400
    os.utime(orphan, (old, old))
    stats = cleanup_old_versions(_storage(uri), uri, older_than=timedelta(0))
    assert stats.data_files_removed == 1 and stats.bytes_removed == 7 and not os.path.exists(orphan)
    open(orphan, "wb").write(b"partial")
    assert cleanup_old_versions(_storage(uri), uri, delete_unverified=True).data_files_removed == 1
    assert lance.dataset(uri).count_rows() == 10


def test_tagged_versions_are_protected(tmp_path):
    uri = str(tmp_path / "ds")
    _history(lance, uri)
    lance.dataset(uri).tags.create("keep", 2)
    with pytest.raises(InvalidArgumentError, match="tagged"):
        cleanup_old_versions(_storage(uri), uri, older_than=timedelta(0))
    stats = cleanup_old_versions(_storage(uri), uri, older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == 3
    assert lance.dataset(uri, version=2).count_rows() == 5
