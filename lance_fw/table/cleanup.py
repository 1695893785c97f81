"""``cleanup_old_versions``: drop old manifests and the files only they reference.

Also the garbage collector for failed writes: a Spark task killed mid-write, or a commit that lost,
leaves data files no manifest references. Such *unverified* files may belong to a write still in
flight, so (as in pylance) they are only removed once older than ``UNVERIFIED_GRACE`` or when the
caller promises nobody is writing (``delete_unverified=True``). The latest version, and tagged
versions, are never removed. Index files are left alone (lance_fw does not manage indices yet).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta

from lance_fw.errors import InvalidArgumentError
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.deletion import deletion_path
from lance_fw.table.manifest import VERSIONS_DIR, list_versions, read_manifest
from lance_fw.table.tags import TAGS_DIR

DEFAULT_OLDER_THAN = timedelta(days=14)
UNVERIFIED_GRACE = timedelta(days=7)


@dataclass
class CleanupStats:
    """pylance's ``CleanupStats`` fields."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    deletion_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    failed_deletes: int = 0


def _referenced(uri: str, manifest) -> set[str]:
    """Paths of the data, deletion and transaction files one manifest needs."""
    out = set()
    for frag in manifest.fragments:
        for data_file in frag.files:
            out.add(join_uri(uri, "data", data_file.path))
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            out.add(deletion_path(uri, frag.id, d.read_version, d.id, d.file_type))
    if manifest.transaction_file:
        out.add(join_uri(uri, "_transactions", manifest.transaction_file))
    return out


def _tagged_versions(storage: Storage, uri: str) -> set[int]:
    tags = join_uri(uri, *TAGS_DIR)
    out = set()
    for name in storage.list_dir(tags):
        if name.endswith(".json"):
            try:
                out.add(int(json.loads(storage.read_bytes(join_uri(tags, name)))["version"]))
            except (ValueError, KeyError, TypeError):
                continue  # not a tag we understand: it protects nothing we could identify
    return out


def cleanup_old_versions(storage: Storage, uri: str, older_than: timedelta | None = None,
                         retain_versions: int | None = None, delete_unverified: bool = False,
                         error_if_tagged_old_versions: bool = True) -> CleanupStats:
    if retain_versions is not None and retain_versions < 1:
        raise InvalidArgumentError(f"retain_versions must be positive, got {retain_versions}")
    if older_than is None and retain_versions is None:
        older_than = DEFAULT_OLDER_THAN
    now = time.time()
    entries = list_versions(storage, uri)
    manifests = {e.version: read_manifest(storage, e.path)[0] for e in entries}
    protected = {entries[-1].version} if entries else set()
    if retain_versions is not None:
        protected |= {e.version for e in entries[-retain_versions:]}
    if older_than is not None:
        cutoff = now - older_than.total_seconds()
        protected |= {v for v, m in manifests.items()
                      if m.timestamp.seconds + m.timestamp.nanos / 1e9 >= cutoff}
    tagged = _tagged_versions(storage, uri)
    old = [e for e in entries if e.version not in protected]
    if error_if_tagged_old_versions and any(e.version in tagged for e in old):
        raise InvalidArgumentError(f"{uri}: versions {sorted(e.version for e in old if e.version in tagged)} are "
                                   "tagged; delete the tags or pass error_if_tagged_old_versions=False")
    removed = [e for e in old if e.version not in tagged]
    kept = [e for e in entries if e not in removed]
    needed = set().union(*(_referenced(uri, manifests[e.version]) for e in kept)) if kept else set()
    verified = set().union(*(_referenced(uri, manifests[e.version]) for e in removed)) if removed else set()

    stats = CleanupStats(old_versions=len(removed))
    for entry in removed:  # manifests first: a crash midway leaves orphans, never a version missing files
        _remove(storage, entry.path, stats, None)
    grace = now - UNVERIFIED_GRACE.total_seconds()
    for directory, counter in (("data", "data_files_removed"), ("_deletions", "deletion_files_removed"),
                               ("_transactions", "transaction_files_removed")):
        for name in storage.list_dir(join_uri(uri, directory)):
            path = join_uri(uri, directory, name)
            if path in needed:
                continue
            if path not in verified and not delete_unverified and storage.mtime(path) > grace:
                continue  # maybe a write still in flight
            _remove(storage, path, stats, counter)
    return stats


def _remove(storage: Storage, path: str, stats: CleanupStats, counter: str | None) -> None:
    try:
        with storage.open_reader(path) as reader:
            size = reader.size()
        storage.delete(path)
    except OSError:
        stats.failed_deletes += 1
        return
    stats.bytes_removed += size
    if counter:
        setattr(stats, counter, getattr(stats, counter) + 1)


__all__ = ["CleanupStats", "cleanup_old_versions", "VERSIONS_DIR"]
