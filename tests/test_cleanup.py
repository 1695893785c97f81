"""cleanup_old_versions against pylance's on the same history, and as the GC for failed writes."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from datetime import timedelta

import fsspec
import lance
import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

import lance_fw
from lance_fw.errors import CorruptFileError, InvalidArgumentError
from lance_fw.table.cleanup import cleanup_old_versions
from lance_fw_plugins.storage_fsspec import FsspecStorage


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


# --- Differential: the same bytes on disk, cleaned by pylance and by lance_fw -------------------------

_STAT_FIELDS = ("bytes_removed", "old_versions", "data_files_removed", "deletion_files_removed",
                "transaction_files_removed", "index_files_removed")
_DIRS = ("data", "_deletions", "_transactions", "_versions")


def _twins(tmp_path, writer) -> tuple[str, str]:
    """One history, copied byte for byte (mtimes too): `ours` is cleaned by lance_fw, `theirs` by pylance."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _history(writer, ours)
    shutil.copytree(ours, theirs)
    return ours, theirs


def _tree(uri: str) -> dict[str, list[str]]:
    return {d: sorted(os.listdir(os.path.join(uri, d))) if os.path.isdir(os.path.join(uri, d)) else []
            for d in _DIRS}


def _assert_same_cleanup(ours: str, theirs: str, **kwargs) -> None:
    expected = lance.dataset(theirs).cleanup_old_versions(**kwargs)
    stats = lance_fw.dataset(ours).cleanup_old_versions(**kwargs)
    assert {f: getattr(stats, f) for f in _STAT_FIELDS} == {f: getattr(expected, f) for f in _STAT_FIELDS}, kwargs
    assert _tree(ours) == _tree(theirs), kwargs
    remaining = [v["version"] for v in lance.dataset(theirs).versions()]
    assert [v["version"] for v in lance.dataset(ours).versions()] == remaining
    for version in remaining:  # pylance can still read every version lance_fw kept
        assert lance.dataset(ours, version=version).to_table().equals(
            lance.dataset(theirs, version=version).to_table())


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-written", "lance_fw-written"])
@pytest.mark.parametrize("kwargs", [
    {"versions": [2]},                                            # pylance keeps [1, 3, 4, 5]
    {"versions": [1, 3]},
    {"versions": (1, 1, 4)},
    {"versions": [2], "older_than": timedelta(days=1)},           # AND: nothing is a day old
    {"versions": [2], "older_than": timedelta(0)},                # timedelta(0) means "no age limit"
    {"versions": [1, 2, 3], "retain_versions": 2},
    {"versions": [5]},                                            # the latest version is never removed
    {"versions": [99, 0]},                                        # absent versions: nothing to do
    {"versions": [3], "delete_unverified": True, "error_if_tagged_old_versions": False},
    {"older_than": timedelta(0)},
    {"retain_versions": 2},
    {"retain_versions": 2, "older_than": timedelta(0)},
    {"retain_versions": 2, "older_than": timedelta(days=1)},
    {"retain_versions": 10},
    {"older_than": timedelta(0), "delete_rate_limit": 1000, "delete_concurrency": 2},
    {},
])
def test_every_pylance_option_same_result(tmp_path, writer, kwargs):
    ours, theirs = _twins(tmp_path, writer)
    _assert_same_cleanup(ours, theirs, **kwargs)


def test_versions_keyword_is_not_swallowed(uri):
    """Issue 18 item 3: `versions=[2]` removed every version but the latest."""
    _history(lance_fw, uri)
    stats = lance_fw.dataset(uri).cleanup_old_versions(versions=[2])
    assert stats.old_versions == 1
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 3, 4, 5]


def test_a_stale_dataset_object_keeps_versions_from_its_own_on(tmp_path):
    """pylance treats every version at or after the object's own as "latest": never removed."""
    ours, theirs = _twins(tmp_path, lance)
    expected = lance.dataset(theirs, version=3).cleanup_old_versions(older_than=timedelta(0))
    stats = lance_fw.dataset(ours, version=3).cleanup_old_versions(older_than=timedelta(0))
    assert (stats.old_versions, stats.bytes_removed) == (expected.old_versions, expected.bytes_removed)
    assert [v["version"] for v in lance_fw.dataset(ours).versions()] == [3, 4, 5]
    assert _tree(ours) == _tree(theirs)


@pytest.mark.parametrize("kwargs", [
    {"versions": []}, {"versions": [-1]}, {"versions": "2"}, {"versions": [2.5]}, {"versions": 2},
    {"retain_versions": 0}, {"retain_versions": -1}, {"retain_versions": 1.5},
    {"delete_rate_limit": 0}, {"delete_rate_limit": -1},
    {"delete_concurrency": 0}, {"delete_concurrency": -1}, {"delete_concurrency": 2 ** 61},
    {"older_than": 5}, {"delete_unverified": 1},
])
def test_invalid_options_raise_and_delete_nothing(tmp_path, kwargs):
    ours, theirs = _twins(tmp_path, lance)
    before = _tree(ours)
    with pytest.raises(Exception):
        lance.dataset(theirs).cleanup_old_versions(**kwargs)
    with pytest.raises(InvalidArgumentError):
        lance_fw.dataset(ours).cleanup_old_versions(**kwargs)
    assert _tree(ours) == before


def test_unknown_keyword_raises(uri):
    _history(lance_fw, uri)
    with pytest.raises(TypeError):
        lance_fw.dataset(uri).cleanup_old_versions(older_than=timedelta(0), version=[2])
    assert len(lance_fw.dataset(uri).versions()) == 5


# --- Fails safe: unknown ages, unreadable tags and manifests ----------------------------------------

_ORPHANS = ("data/orphan.lance", "_deletions/0-9-123.arrow", "_deletions/1-9-456.bin",
            "_transactions/9-orphan.txn", "_versions/.tmp-crashed", "_versions/.tmp_rename.manifest",
            "data/notes.txt", "_transactions/readme.md")


def _plant_orphans(uri: str, mtime: float) -> None:
    """Files a crashed writer (or a user) left behind, all with the given modification time."""
    for name in _ORPHANS:
        path = os.path.join(uri, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"partial")
        os.utime(path, (mtime, mtime))


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-written", "lance_fw-written"])
@pytest.mark.parametrize("age, kwargs", [
    (3600, {"older_than": timedelta(0)}),                            # young: maybe a write in flight
    (3600, {"older_than": timedelta(0), "delete_unverified": True}),  # caller vouches: removed
    (8 * 86400, {"older_than": timedelta(0)}),                       # past the 7-day grace period
    (8 * 86400, {}),                                                 # old orphans go even if no version does
    (-60, {"older_than": timedelta(0), "delete_unverified": True}),  # written after the latest commit
])
def test_orphans_and_stale_temp_manifests_like_pylance(tmp_path, writer, age, kwargs):
    """Issue 10 item 12: `_versions/.tmp*` from crashed commits are removed once stale, never young."""
    ours, theirs = _twins(tmp_path, writer)
    for root in (ours, theirs):
        _plant_orphans(root, time.time() - age)
    _assert_same_cleanup(ours, theirs, **kwargs)


def test_young_temp_manifest_is_kept_and_stale_one_removed(uri):
    lance_fw.write_dataset(pa.table({"a": range(10)}), uri)
    young, stale = os.path.join(uri, "_versions", ".tmp-young"), os.path.join(uri, "_versions", ".tmp-stale")
    for path in (young, stale):
        open(path, "wb").write(b"manifest in flight")
    old = time.time() - 8 * 86400
    os.utime(stale, (old, old))
    lance_fw.dataset(uri).cleanup_old_versions(older_than=timedelta(0))
    assert os.path.exists(young) and not os.path.exists(stale)


@pytest.mark.parametrize("body", [b"not json", b"{}", b"[]", b'{"version": "2"}', b'{"version": -1}',
                                  b'{"version": 2.5}', b'{"version": true, "manifestSize": 1}',
                                  b'{"version": 2}'])
def test_unreadable_tag_stops_cleanup_before_deleting(tmp_path, body):
    """Issue 18 item 4: a tag we cannot read might protect any version, so nothing may be removed."""
    ours, theirs = _twins(tmp_path, lance)
    for root in (ours, theirs):
        os.makedirs(os.path.join(root, "_refs", "tags"))
        with open(os.path.join(root, "_refs", "tags", "keep.json"), "wb") as f:
            f.write(body)
    before = _tree(ours)
    with pytest.raises(OSError):
        lance.dataset(theirs).cleanup_old_versions(older_than=timedelta(0))
    with pytest.raises(CorruptFileError, match="keep.json"):
        lance_fw.dataset(ours).cleanup_old_versions(older_than=timedelta(0))
    assert _tree(ours) == before == _tree(theirs)


def test_corrupt_manifest_stops_cleanup_before_deleting(uri):
    _history(lance_fw, uri)
    ds = lance_fw.dataset(uri)
    second = sorted(e for e in os.listdir(os.path.join(uri, "_versions")) if e.endswith(".manifest"))[1]
    with open(os.path.join(uri, "_versions", second), "r+b") as f:
        f.truncate(10)
    before = _tree(uri)
    with pytest.raises(CorruptFileError, match=second):
        ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert _tree(uri) == before


class _NoMtimeFileSystem(MemoryFileSystem):
    """A store that reports no modification time (some object stores, some fsspec backends): a real
    in-memory fsspec filesystem whose ``info`` drops every time field."""

    protocol = "nomtime"

    def info(self, path, **kwargs):
        return {k: v for k, v in super().info(path, **kwargs).items()
                if k not in ("created", "mtime", "LastModified")}


fsspec.register_implementation("nomtime", _NoMtimeFileSystem, clobber=True)


def test_unknown_modification_time_counts_as_new():
    """Issue 18 item 4: an unknown mtime became 0.0 (1970), so in-flight files looked stale."""
    uri = f"nomtime://cleanup-{uuid.uuid4().hex}/ds"
    lance_fw.write_dataset(pa.table({"a": range(10)}), uri)
    lance_fw.write_dataset(pa.table({"a": range(5)}), uri, mode="overwrite")
    ds = lance_fw.dataset(uri)
    storage = ds._storage
    in_flight = f"{uri}/data/in-flight.lance"
    storage.write_bytes(in_flight, b"a write still running")
    storage.write_bytes(f"{uri}/_versions/.tmp-in-flight", b"a commit still running")
    stats = ds.cleanup_old_versions(older_than=timedelta(0))
    assert storage.exists(in_flight) and storage.exists(f"{uri}/_versions/.tmp-in-flight")
    assert FsspecStorage("nomtime", {}).mtime(in_flight) is None
    assert stats.old_versions == 1 and stats.data_files_removed == 1  # v1's file: verified, so age is moot
    assert ds.to_table().equals(pa.table({"a": range(5)}))


def test_memory_filesystem_reports_modification_times():
    storage = FsspecStorage("memory", {})
    path = f"memory://mtime-{uuid.uuid4().hex}/f"
    storage.write_bytes(path, b"x")
    assert abs(storage.mtime(path) - time.time()) < 3600
