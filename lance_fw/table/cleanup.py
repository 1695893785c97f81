"""``cleanup_old_versions``: drop old manifests and the files only they reference.

Also the garbage collector for failed writes: a Spark task killed mid-write, a commit that lost, or
a commit that crashed between writing its ``_versions/.tmp*`` file and linking it, leaves files no
manifest references. Such *unverified* files may belong to a write still in flight, so (as in
pylance) they are only removed once older than ``UNVERIFIED_GRACE`` or when the caller promises
nobody is writing (``delete_unverified=True``). The dataset's own version and every later one, and
tagged versions, are never removed. Index files are left alone (lance_fw does not manage indices).

Cleanup fails safe: it deletes only what it can prove unreferenced.

- Everything is read before anything is deleted: an unreadable manifest (``CorruptFileError``) or an
  unreadable tag (``CorruptFileError`` naming the tag file) stops the cleanup, because the files that
  manifest or tag protects cannot be known.
- An unknown modification time (a store that reports none: ``Storage.mtime`` returns ``None``) is
  treated as *new*: such a file is never removed on account of its age.
- Only the file kinds Lance writes are candidates (``.lance`` in ``data/``, ``.arrow``/``.bin`` in
  ``_deletions/``, ``.txn`` in ``_transactions/``, ``.tmp*`` in ``_versions/``); anything else is
  not ours to delete.
- As pylance 14 does, an unverified file outside ``data/`` that was modified after the earliest kept
  manifest was written stays, even with ``delete_unverified`` (it may belong to a racing commit).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lance_fw._proto import table_pb2
from lance_fw.errors import CorruptFileError, InvalidArgumentError
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.blob_v2_write import sidecar_dir, sidecar_files
from lance_fw.table.file_listing import referenced_files
from lance_fw.table.manifest import VersionEntry, commit_time, list_versions, read_manifest
from lance_fw.table.paths import (
    DATA_DIR,
    DATA_FILE_SUFFIX,
    DELETIONS_DIR,
    TAGS_DIR,
    TRANSACTION_SUFFIX,
    TRANSACTIONS_DIR,
    VERSIONS_DIR,
)

DEFAULT_OLDER_THAN = timedelta(days=14)
UNVERIFIED_GRACE = timedelta(days=7)
MAX_DELETE_CONCURRENCY = 2**61 - 1  # pylance's bound on 64-bit platforms
TEMP_MANIFEST_PREFIX = ".tmp"  # commit handlers write `_versions/.tmp-<uuid>` (pylance: `.tmp_…`)
TAG_SUFFIX = ".json"
TAG_REQUIRED_COUNTS = ("version", "manifestSize")  # unsigned integers every tag file must hold

# (directory, file name suffixes cleanup may remove there, CleanupStats counter)
_MANAGED_DIRS = (
    (DATA_DIR, (DATA_FILE_SUFFIX,), "data_files_removed"),
    (DELETIONS_DIR, (".arrow", ".bin"), "deletion_files_removed"),
    (TRANSACTIONS_DIR, (TRANSACTION_SUFFIX,), "transaction_files_removed"),
)


@dataclass(slots=True)  # counters are bumped by name (``_remove``): a misspelt one fails
class CleanupStats:
    """pylance's ``CleanupStats`` fields. ``bytes_removed`` also counts manifests and temp manifests."""

    #: bytes of every file removed, manifests included
    bytes_removed: int = 0
    #: versions (manifests) removed
    old_versions: int = 0
    data_files_removed: int = 0
    deletion_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    #: files whose removal failed with an OS error (left for a later cleanup)
    failed_deletes: int = 0


@dataclass
class _Policy:
    """Which versions a call asks to remove (pylance's CleanupPolicy): every limit given must hold."""

    before_timestamp: float | None
    before_version: int | None
    versions: frozenset[int] | None

    def should_clean(self, version: int, timestamp: float) -> bool:
        return (
            (self.before_timestamp is None or timestamp < self.before_timestamp)
            and (self.before_version is None or version < self.before_version)
            and (self.versions is None or version in self.versions)
        )


def _referenced(storage: Storage, uri: str, manifest: table_pb2.Manifest) -> set[str]:
    """Paths of the data, deletion and transaction files one manifest needs."""
    return {join_uri(uri, f.path) for f in referenced_files(storage, uri, manifest, None)}


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tagged_versions(storage: Storage, uri: str) -> set[int]:
    """Versions the tags protect. A tag file we cannot read raises: it might protect any version."""
    tags = join_uri(uri, *TAGS_DIR)
    out = set()
    for name in storage.list_dir(tags):
        if not name.endswith(TAG_SUFFIX):
            continue  # pylance ignores other files here too
        path = join_uri(tags, name)
        try:
            body = json.loads(storage.read_bytes(path))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptFileError(
                path,
                f"tag file is not JSON ({exc}); cleanup stopped before deleting "
                "anything, because the version it protects is unknown",
            ) from None
        bad = [
            key for key in TAG_REQUIRED_COUNTS if not isinstance(body, dict) or not _is_count(body.get(key))
        ]
        if bad:
            raise CorruptFileError(
                path,
                f"tag file lacks a non-negative integer {bad[0]!r}; cleanup stopped "
                "before deleting anything, because the version it protects is unknown",
            )
        out.add(body["version"])
    return out


def _check_options(
    older_than: Any,
    retain_versions: Any,
    versions: Any,
    delete_unverified: Any,
    error_if_tagged_old_versions: Any,
    delete_rate_limit: Any,
    delete_concurrency: Any,
) -> frozenset[int] | None:
    """Refuse what pylance refuses (it raises ValueError/TypeError/OverflowError/OSError).
    The arguments are the caller's, unchecked (hence ``Any``): checking them is this function's job."""
    if older_than is not None and not isinstance(older_than, timedelta):
        raise InvalidArgumentError(
            f"older_than must be a datetime.timedelta, got {type(older_than).__name__}"
        )
    for name, value in (
        ("retain_versions", retain_versions),
        ("delete_rate_limit", delete_rate_limit),
        ("delete_concurrency", delete_concurrency),
    ):
        if value is not None and (not _is_count(value) or value == 0):
            raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    if delete_concurrency is not None and delete_concurrency > MAX_DELETE_CONCURRENCY:
        raise InvalidArgumentError(
            f"delete_concurrency must be at most {MAX_DELETE_CONCURRENCY}, got {delete_concurrency}"
        )
    for name, value in (
        ("delete_unverified", delete_unverified),
        ("error_if_tagged_old_versions", error_if_tagged_old_versions),
    ):
        if value is not None and not isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be a bool, got {value!r}")
    if versions is None:
        return None
    if isinstance(versions, (str, bytes)) or not hasattr(versions, "__iter__"):
        raise InvalidArgumentError(f"versions must be a list of version numbers, got {versions!r}")
    versions = list(versions)
    if not versions:
        raise InvalidArgumentError("versions must not be empty when specified")
    if not all(isinstance(v, int) and int(v) >= 0 for v in versions):
        raise InvalidArgumentError(f"versions must be non-negative integers, got {versions!r}")
    return frozenset(int(v) for v in versions)


def cleanup_old_versions(
    storage: Storage,
    uri: str,
    older_than: timedelta | None = None,
    retain_versions: int | None = None,
    *,
    delete_unverified: bool = False,
    error_if_tagged_old_versions: bool = True,
    delete_rate_limit: int | None = None,
    versions: list[int] | None = None,
    delete_concurrency: int | None = None,
    read_version: int | None = None,
) -> CleanupStats:
    """Remove the versions every given limit selects, then the files nothing kept references.

    ``older_than``, ``retain_versions`` and ``versions`` combine with AND; with none of them, versions
    older than two weeks go. A zero ``older_than`` means "no age limit" (pylance tests its truth value).
    ``read_version`` is the version of the dataset object asking: it and every later version are kept,
    as pylance does (None: the latest). ``delete_rate_limit`` paces deletes to at most that many per
    second; deletes run one at a time, so every ``delete_concurrency`` bound holds.
    """
    wanted = _check_options(
        older_than,
        retain_versions,
        versions,
        delete_unverified,
        error_if_tagged_old_versions,
        delete_rate_limit,
        delete_concurrency,
    )
    if older_than is None and retain_versions is None and wanted is None:
        older_than = DEFAULT_OLDER_THAN
    now = time.time()
    entries = list_versions(storage, uri)
    if not entries:
        return CleanupStats()
    tagged = _tagged_versions(storage, uri)  # before anything else, as pylance: a bad tag stops all
    policy = _Policy(
        now - older_than.total_seconds() if older_than else None,
        (entries[max(len(entries) - retain_versions, 0)].version if retain_versions else None),
        wanted,
    )
    current = entries[-1].version if read_version is None else read_version
    manifests = {e.version: read_manifest(storage, e.path)[0] for e in entries}  # CorruptFileError stops all

    removed: list[VersionEntry] = []
    kept: list[VersionEntry] = []
    tagged_old: list[int] = []
    for entry in entries:
        manifest = manifests[entry.version]
        old = entry.version < current and policy.should_clean(entry.version, commit_time(manifest))
        if old and entry.version in tagged:
            tagged_old.append(entry.version)
        (removed if old and entry.version not in tagged else kept).append(entry)
    if error_if_tagged_old_versions is not False and tagged_old:
        raise InvalidArgumentError(
            f"{uri}: versions {tagged_old} are tagged; delete the tags or pass "
            "error_if_tagged_old_versions=False"
        )
    needed = set().union(*(_referenced(storage, uri, manifests[e.version]) for e in kept))
    verified = set().union(*(_referenced(storage, uri, manifests[e.version]) for e in removed))
    earliest_kept = min(commit_time(manifests[e.version]) for e in kept)

    doomed: list[tuple[str, str | None]] = []
    listed: dict[str, list[str]] = {}
    for directory, suffixes, counter in _MANAGED_DIRS:
        listed[directory] = storage.list_dir(join_uri(uri, directory))
        for name in listed[directory]:
            path = join_uri(uri, directory, name)
            if not name.endswith(suffixes) or path in needed:
                continue
            if path in verified:
                doomed.append((path, counter))  # a removed version's file: no write in flight uses it
                continue
            mtime = _mtime(storage, path)
            if directory != DATA_DIR and (mtime is None or mtime > earliest_kept):
                continue  # as pylance 14: an unverified non-data file newer than every kept commit stays
            if _stale(mtime, now, delete_unverified):
                doomed.append((path, counter))
    for name in storage.list_dir(join_uri(uri, VERSIONS_DIR)):
        path = join_uri(uri, VERSIONS_DIR, name)
        if name.startswith(TEMP_MANIFEST_PREFIX):  # a commit that crashed before publishing
            mtime = _mtime(storage, path)
            if mtime is not None and mtime <= earliest_kept and _stale(mtime, now, delete_unverified):
                doomed.append((path, None))

    data_entries = set(listed[DATA_DIR])  # a data file's sidecar directory is named as the file
    stats = CleanupStats(old_versions=len(removed))
    pace = _Pace(delete_rate_limit)
    for entry in removed:  # manifests first: a crash midway leaves orphans, never a version missing files
        pace.wait()
        _remove(storage, entry.path, stats, None)
    for path, doomed_counter in doomed:
        pace.wait()
        _remove(storage, path, stats, doomed_counter)
        # a data file's blob v2 sidecars (in a directory named as the file) go with it, counted as pylance
        if doomed_counter == "data_files_removed" and sidecar_dir(path).rsplit("/", 1)[-1] in data_entries:
            for sidecar in sidecar_files(storage, path):
                pace.wait()
                _remove(storage, sidecar, stats, doomed_counter)
    return stats


def _mtime(storage: Storage, path: str) -> float | None:
    """The file's modification time; None (unknown, so: new) if it vanished since it was listed
    (a racing cleanup, or a commit handler removing its temp file)."""
    try:
        return storage.mtime(path)
    except FileNotFoundError:
        return None


def _stale(mtime: float | None, now: float, delete_unverified: bool | None) -> bool:
    """Whether an unreferenced file is old enough to be a leftover, not a write in flight.

    An unknown age counts as new: deleting a file of a running write corrupts the dataset.
    """
    if delete_unverified:
        return True
    return mtime is not None and mtime < now - UNVERIFIED_GRACE.total_seconds()


class _Pace:
    """At most ``rate`` deletes per second (pylance's ``delete_rate_limit``), or no limit."""

    def __init__(self, rate: int | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.next = time.monotonic()

    def wait(self) -> None:
        if self.interval:
            delay = self.next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.next = max(self.next, time.monotonic()) + self.interval


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


__all__ = ["VERSIONS_DIR", "CleanupStats", "cleanup_old_versions"]
