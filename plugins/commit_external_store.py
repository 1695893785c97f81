"""Commits through an external manifest store, for storages without an atomic put-if-absent.

Selected by the storage option ``manifest_store`` (``sqlite:///abs/path/store.db`` for the built-in
SQLite store); without that option this plugin does not answer and the other handlers do. The
protocol is the one Lance's format docs describe for DynamoDB, over nothing but the storage's
``write_bytes`` / ``read_bytes`` / ``exists`` / ``delete`` and the store:

1. stage: write the manifest to ``_versions/<final name>-<uuid>`` (never listed as a version);
2. claim: ``store.put_if_absent(dataset, version, staging path)`` -- the one atomic step; a
   conflict means another writer holds the version;
3. publish: copy the staged manifest to its final name (now every reader lists the version);
4. mark committed: ``store.put_if_exists(dataset, version, final path)``;
5. delete the staging file.

A writer that dies after step 2 leaves a claim whose manifest is staged but not published. The
claim is durable: whoever next meets it (the next writer, whose claim on that version conflicts)
finishes steps 3-5 from the staged file (:meth:`ExternalStoreCommitHandler.repair`), so the version
appears and the next writer retries on top of it. A lance_fw reader opened with the same
``manifest_store`` option does the same when it opens the latest version (``dataset()``,
``checkout_latest``, ``latest_version`` ask the handler to ``repair`` the versions after the newest
listed one); a reader without the option, or pylance, sees the last published version until then,
which is what the crashed writer's caller was last told (it never heard its commit succeed).

Every writer of a dataset must go through the same store: a writer that publishes manifests by
other means (pylance without the store, a different store) can race this protocol.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lance_fw.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidArgumentError,
    StorageError,
)
from lance_fw.file.container import MAGIC
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import CommitHandler
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.manifest import VERSIONS_DIR, parse_manifest_name
from lance_fw.table.manifest_store import (
    MANIFEST_STORE_OPTION,
    ManifestStore,
    check_entry,
    open_manifest_store,
    staging_name,
)
from lance_fw.table.transaction import mark_maybe_published, remove_quietly

_LOCAL_PREFIX = "file://"


def store_key(base_uri: str) -> str:
    """The key a dataset has in the store: one spelling per dataset, whatever the caller wrote.

    Local paths become ``file://`` + the absolute, symlink-free path (processes with different
    working directories, or one writing ``file://`` and one not, meet on one key); other URIs are
    kept as given, without a trailing slash.
    """
    if "://" not in base_uri or base_uri.startswith(_LOCAL_PREFIX):
        local = base_uri.removeprefix(_LOCAL_PREFIX)
        return _LOCAL_PREFIX + os.path.realpath(local)
    return base_uri.rstrip("/")


def split_manifest_path(path: str) -> tuple[str, str, int]:
    """(dataset root, manifest file name, version) of a manifest path the commit loop hands us.

    Raises:
        InvalidArgumentError: ``path`` is not ``<root>/_versions/<manifest name>``.
    """
    base, _, rest = path.rpartition(f"/{VERSIONS_DIR}/")
    parsed = parse_manifest_name(rest) if base and "/" not in rest else None
    if parsed is None:
        raise InvalidArgumentError(
            f"external-store commit: {path!r} is not a manifest path "
            f"(<dataset>/{VERSIONS_DIR}/<version>.manifest)"
        )
    return base, rest, parsed[0]


class ExternalStoreCommitHandler(CommitHandler):
    """Publishes manifests through ``store`` (see the module docstring for the protocol).

    Usable with any :class:`ManifestStore`: a plugin for another store (DynamoDB, a SQL server)
    builds this handler with its own store from its own storage option.

    Thread-safety: keeps no state besides the store, which is thread-safe by contract.
    """

    def __init__(self, storage: Storage, store: ManifestStore) -> None:
        super().__init__(storage)
        self.store = store

    def commit(self, path: str, data: bytes) -> None:
        """See ``CommitHandler.commit``.

        Raises:
            CommitConflictError: the store holds another writer's claim on the version (any claim
                it left half done has been finished first, so the retry sees its version).
            StorageError: the storage or the store failed. A failure after our claim is flagged
                as maybe published: the claim stands, and the next writer publishes our staged
                manifest, so the caller must not delete the files it references.
        """
        base, final_name, version = split_manifest_path(path)
        key = store_key(base)
        staged = f"{VERSIONS_DIR}/{staging_name(final_name)}"
        self.storage.write_bytes(join_uri(base, staged), data)
        self._claim(base, key, version, staged)
        try:
            ours = self._publish(base, key, version, staged, final_name, data)
        except BaseException as exc:
            mark_maybe_published(exc, version)
            raise
        if not ours:
            raise CommitConflictError(
                f"{path} was published by a writer that does not use the manifest store "
                f"{self.store.url}; every writer of {base} must use it"
            )

    def repair(self, base_uri: str, version: int) -> bool:
        """Finish a claim on ``version`` whose manifest was staged but never published.

        Returns:
            True when this call published the staged manifest (or marked an already published one
            committed): the loop should retry at once. False when there is nothing to finish: no
            claim, or a claim already complete.
        Raises:
            CorruptFileError: the store names a file that is not this version's manifest, or the
                staged file it names is gone or is not a manifest (the claim cannot be finished;
                the message says how to clear it).
            StorageError: the store records the version as published, but its manifest is gone
                (the dataset was deleted without clearing the store), or a call failed.
        """
        base = base_uri.rstrip("/")
        key = store_key(base)
        entry = self.store.get(key, version)
        if entry is None:
            return False
        final_name, staged = check_entry(self._where(key), version, entry)
        final = join_uri(base, VERSIONS_DIR, final_name)
        if not staged:
            if self.storage.exists(final):
                return False
            raise StorageError(
                f"the manifest store {self.store.url} records version {version} of {key} as "
                f"published at {final}, which does not exist: the dataset was deleted or moved "
                f"without clearing the store. If it was dropped, clear it with "
                f"ManifestStore.delete({key!r}) (no writer may be committing meanwhile)"
            )
        staged_path = join_uri(base, entry)
        try:
            data = self.storage.read_bytes(staged_path)
        except (DatasetNotFoundError, StorageError):
            # its writer may have finished meanwhile and deleted it (an object store can report that
            # as a failed read of an object it had just listed): only then is a missing file normal
            if self.store.get(key, version) != entry:
                return False
            if self.storage.exists(staged_path):
                raise
            return self._staged_file_gone(base, key, version, entry, final_name)
        if not data.endswith(MAGIC):
            raise CorruptFileError(
                join_uri(base, entry),
                f"the staged manifest of claimed version {version} is "
                f"not a Lance manifest; {self._clear_hint(key)}",
            )
        self._publish(base, key, version, entry, final_name, data)
        return True

    def repair_latest(self, base_uri: str) -> bool:
        """Finish the newest claim of ``base_uri`` if it is still staged: one store read, for a
        reader to call before listing ``_versions/`` (as pylance's store-backed readers resolve
        the latest version through the store). Returns and raises as :meth:`repair`."""
        latest = self.store.get_latest(store_key(base_uri.rstrip("/")))
        if latest is None or not check_entry(self._where(store_key(base_uri)), *latest)[1]:
            return False
        return self.repair(base_uri, latest[0])

    def _claim(self, base: str, key: str, version: int, staged: str) -> None:
        """Step 2. On a conflict our staged file goes, and a half-done claim is finished first."""
        try:
            self.store.put_if_absent(key, version, staged)
            return
        except CommitConflictError:
            remove_quietly(self.storage, join_uri(base, staged))
            self.repair(base, version)
            raise
        except BaseException as exc:
            try:  # a store failure may or may not have recorded the claim: look
                mine = self.store.get(key, version) == staged
            except Exception:
                mark_maybe_published(exc, version)
                raise exc from None
            if mine and isinstance(exc, Exception):
                return
            if mine:  # Ctrl-C after the claim landed: the next writer publishes it
                mark_maybe_published(exc, version)
            else:
                remove_quietly(self.storage, join_uri(base, staged))
            raise

    def _publish(self, base: str, key: str, version: int, staged: str, final_name: str, data: bytes) -> bool:
        """Steps 3-5 for a claimed version; idempotent, so the writer and repairers may race here.
        Returns whether the published manifest is ``data`` (False: a writer outside the store put
        another manifest there first; the store then records that one)."""
        final = join_uri(base, VERSIONS_DIR, final_name)
        ours = self._place(final, data)
        self.store.put_if_exists(key, version, f"{VERSIONS_DIR}/{final_name}")
        remove_quietly(self.storage, join_uri(base, staged))
        return ours

    def _place(self, final: str, data: bytes) -> bool:
        """Put ``data`` at ``final`` unless a manifest is already there; whether ``final`` holds
        ``data`` afterwards. Uses the storage's atomic put-if-absent where it has one, so even a
        writer outside the store cannot be overwritten."""
        if getattr(self.storage, "atomic_put_if_absent", False) is True:
            try:
                self.storage.put_if_absent(final, data)
                return True
            except CommitConflictError:
                return self.storage.read_bytes(final) == data
        if self.storage.exists(final):
            return self.storage.read_bytes(final) == data
        self.storage.write_bytes(final, data)
        return True

    def _staged_file_gone(self, base: str, key: str, version: int, entry: str, final_name: str) -> bool:
        """The staged file of a claim that has not moved on is gone. The protocol deletes it only
        after marking the claim committed, so something else removed it: if the manifest was
        published before that, marking it is all that is left; otherwise the claim can never be
        finished, and saying so beats refusing the version forever."""
        final = join_uri(base, VERSIONS_DIR, final_name)
        if self.storage.exists(final):  # published, the writer died before marking it: mark it
            self.store.put_if_exists(key, version, f"{VERSIONS_DIR}/{final_name}")
            return True
        raise CorruptFileError(
            join_uri(base, entry),
            f"the manifest store {self.store.url} holds a claim on "
            f"version {version} whose staged manifest is gone, so no "
            f"writer can finish it; {self._clear_hint(key)}",
        )

    def _where(self, key: str) -> str:
        return f"{self.store.url} [{key}]"

    def _clear_hint(self, key: str) -> str:
        return (
            f"if the dataset was dropped or restored from a backup, clear its entries with "
            f"ManifestStore.delete({key!r}) while no writer is committing"
        )


@hookimpl
def lance_storage_options() -> Mapping[str, str]:
    return {
        MANIFEST_STORE_OPTION: "commit through an external manifest store: sqlite:///ABS/PATH.db "
        "(every writer of the dataset must name the same store)"
    }


@hookimpl(tryfirst=True)
def lance_commit_handler(storage: Storage, uri: str, options: Mapping[str, Any]) -> CommitHandler | None:
    url = options.get(MANIFEST_STORE_OPTION) if options else None
    if url is None:
        return None
    return ExternalStoreCommitHandler(storage, open_manifest_store(url))
