"""External manifest stores: the "which file is version N" record for stores without put-if-absent.

Lance's format docs describe commits through an external store (DynamoDB in pylance) for object
stores that cannot create a file only if it is absent. The store, not the object store, decides
which writer gets version N; the manifest file itself is published in steps that can each be
redone by anybody, so a writer that dies half way never leaves a version claimed but unpublished
for good (the built-in ``commit_external_store`` plugin documents the protocol and its repair).

This module holds the store interface, the staging-name rules and the SQLite store built in
(several processes on one machine). A DynamoDB-style backend implements :class:`ManifestStore`
and is handed to ``ExternalStoreCommitHandler`` by its own ``lance_commit_handler`` hook
(``docs/commit-handlers.md``).

Store entries hold paths *relative to the dataset* (``_versions/<name>``), so a dataset URI that
is spelled differently by two processes (``file://`` or not) still meets the same rules, and an
entry can never make lance_fw read or write outside the dataset: every entry is checked
(:func:`check_entry`) before it is used.
"""

from __future__ import annotations

import abc
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from types import TracebackType

from lance_fw.errors import (
    CommitConflictError,
    CorruptFileError,
    InvalidArgumentError,
    StorageError,
)
from lance_fw.table.manifest import parse_manifest_name
from lance_fw.table.paths import MANIFEST_SUFFIX, VERSIONS_DIR

#: The ``storage_options`` key that selects the external manifest store for commits.
MANIFEST_STORE_OPTION = "manifest_store"
#: URL scheme of the built-in SQLite store: ``sqlite:///absolute/path/store.db``.
SQLITE_URL_PREFIX = "sqlite://"
#: A staging manifest is the final name, this separator and a UUID (as pylance names them), so
#: neither lance_fw nor pylance ever lists one as a version (the name no longer ends ``.manifest``).
STAGING_SEPARATOR = "-"
#: Seconds a SQLite call waits for another process's write lock before failing.
SQLITE_BUSY_TIMEOUT_S = 60.0
#: Largest version SQLite's signed 64-bit INTEGER holds.
MAX_STORE_VERSION = 2**63 - 1


def staging_name(final_name: str) -> str:
    """A fresh staging name for the manifest file ``final_name`` (``<final>-<uuid4>``)."""
    return f"{final_name}{STAGING_SEPARATOR}{uuid.uuid4()}"


def final_name_of(name: str) -> str | None:
    """The final manifest name a staging name stands for; None if ``name`` is not a staging name."""
    head, sep, tail = name.partition(MANIFEST_SUFFIX + STAGING_SEPARATOR)
    if not sep:
        return None
    try:
        uuid.UUID(tail)
    except ValueError:
        return None
    return head + MANIFEST_SUFFIX


def check_entry(where: str, version: int, entry: str) -> tuple[str, bool]:
    """Validate a store entry for ``version``: (final manifest name, whether it is still staged).

    A store is shared state that other programs write; an entry that does not name this version's
    manifest in ``_versions/`` is refused rather than followed (it could point anywhere).

    Raises:
        CorruptFileError: naming ``where`` (the store and dataset) and the entry.
    """
    directory, _, name = entry.rpartition("/")
    staged_final = final_name_of(name) if directory == VERSIONS_DIR else None
    staged = staged_final is not None
    final = staged_final if staged_final is not None else name
    parsed = parse_manifest_name(final) if directory == VERSIONS_DIR else None
    if parsed is None or parsed[0] != version:
        raise CorruptFileError(
            where,
            f"the manifest store's entry for version {version} is {entry!r}, "
            f"which is not a manifest (or staged manifest) of that version in "
            f"{VERSIONS_DIR}/",
        )
    return final, staged


class ManifestStore(abc.ABC):
    """Maps (dataset, version) to the manifest file of that version, created at most once.

    Keys: ``base_uri`` is the dataset's URI as the commit handler normalizes it (every writer of one
    dataset must use the same store and spell the URI the same way after normalization); ``version``
    is a positive int. Values: the manifest's path relative to the dataset, either a staging name
    ``_versions/<final>-<uuid>`` (claimed, not yet published) or the final ``_versions/<final>``
    (published).

    Atomicity: ``put_if_absent`` is the one linearizable step the whole protocol rests on: of
    several concurrent calls for one key, from any process or machine, exactly one succeeds. The
    other methods are single-key reads and writes that must be strongly consistent (a ``get`` after
    a successful put sees it). DynamoDB: a conditional ``PutItem`` with
    ``attribute_not_exists(base_uri)`` on a table keyed (base_uri HASH, version RANGE), an
    ``UpdateItem`` with ``attribute_exists``, ``GetItem``/``Query`` with ``ConsistentRead``.

    Thread-safety: one store object is shared by every thread and every dataset of a process, so
    every method must be safe to call concurrently. Stores must also survive ``fork`` (hold no
    connection opened before the fork, or reopen it).
    """

    #: Names the store in error messages (a URL, a table name).
    url: str = ""

    @abc.abstractmethod
    def get(self, base_uri: str, version: int) -> str | None:
        """The entry for ``version`` of ``base_uri``.

        Returns:
            The manifest path relative to the dataset, or None when no writer has claimed it.
        Raises:
            StorageError: the store cannot answer.
        """

    @abc.abstractmethod
    def get_latest(self, base_uri: str) -> tuple[int, str] | None:
        """The highest claimed version of ``base_uri`` and its entry; None when there is none.

        Raises:
            StorageError: the store cannot answer.
        """

    @abc.abstractmethod
    def put_if_absent(self, base_uri: str, version: int, path: str) -> None:
        """Claim ``version``: record ``path`` (a staging path) only if the version has no entry.

        Raises:
            CommitConflictError: the version already has an entry (another writer claimed it);
                nothing was changed.
            StorageError: the store failed; the entry may or may not have been written, and the
                caller must ``get`` it before assuming either.
        """

    @abc.abstractmethod
    def put_if_exists(self, base_uri: str, version: int, path: str) -> None:
        """Replace the entry of a claimed ``version`` with ``path`` (the final manifest path).

        Idempotent: the writer and any number of repairers may all record the same final path.

        Raises:
            StorageError: the version has no entry (it was never claimed: a caller bug or a
                store emptied behind our back), or the store failed.
        """

    @abc.abstractmethod
    def delete(self, base_uri: str) -> None:
        """Forget every entry of ``base_uri`` (the dataset was dropped; a new one may start there).

        Only safe when no writer is committing to ``base_uri``.

        Raises:
            StorageError: the store failed.
        """


class SQLiteManifestStore(ManifestStore):
    """A ``ManifestStore`` in one SQLite file, shared by the processes of one machine.

    SQLite's file locks make ``put_if_absent`` (an ``INSERT`` into a primary key) atomic across
    processes on a local filesystem. Not for network filesystems (NFS, SMB): their locking is not
    reliable, and SQLite says so. WAL mode lets readers proceed while a writer commits; a busy
    database is waited for (``SQLITE_BUSY_TIMEOUT_S``), every write runs in ``BEGIN IMMEDIATE``.

    Thread- and fork-safe: each call opens its own connection (commits are rare next to the data
    they publish, so the cost of opening does not matter).
    """

    def __init__(self, path: str) -> None:
        """Open (creating if needed) the store at ``path``, an absolute file path.

        Raises:
            InvalidArgumentError: ``path`` is not absolute (two processes with different working
                directories would use different stores, and lose commits).
            StorageError: the file cannot be created or is not a SQLite database.
        """
        if not os.path.isabs(path):
            raise InvalidArgumentError(
                f"{MANIFEST_STORE_OPTION}: the SQLite store path must be absolute, "
                f"got {path!r} (write {SQLITE_URL_PREFIX}/abs/path/store.db)"
            )
        self.path = path
        self.url = f"{SQLITE_URL_PREFIX}{path}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise StorageError(f"{self.url}: cannot create its directory: {exc}") from exc
        with self._write() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS lance_manifests ("
                "base_uri TEXT NOT NULL, version INTEGER NOT NULL, path TEXT NOT NULL, "
                "PRIMARY KEY (base_uri, version))"
            )

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN ourselves, so nothing happens in an implicit transaction.
        db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            _set_wal(db)
        except BaseException:
            db.close()
            raise
        return db

    def _read(self) -> _Session:
        return _Session(self, write=False)

    def _write(self) -> _Session:
        return _Session(self, write=True)

    def get(self, base_uri: str, version: int) -> str | None:
        _check_version(version)
        with self._read() as db:
            row = db.execute(
                "SELECT path FROM lance_manifests WHERE base_uri = ? AND version = ?", (base_uri, version)
            ).fetchone()
        return None if row is None else row[0]

    def get_latest(self, base_uri: str) -> tuple[int, str] | None:
        with self._read() as db:
            row = db.execute(
                "SELECT version, path FROM lance_manifests WHERE base_uri = ? ORDER BY version DESC LIMIT 1",
                (base_uri,),
            ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def put_if_absent(self, base_uri: str, version: int, path: str) -> None:
        _check_version(version)
        try:
            with self._write() as db:
                db.execute(
                    "INSERT INTO lance_manifests (base_uri, version, path) VALUES (?, ?, ?)",
                    (base_uri, version, path),
                )
        except sqlite3.IntegrityError as exc:
            raise CommitConflictError(
                f"{base_uri}: version {version} is already claimed in the manifest "
                f"store {self.url}: another writer committed it"
            ) from exc

    def put_if_exists(self, base_uri: str, version: int, path: str) -> None:
        _check_version(version)
        with self._write() as db:
            changed = db.execute(
                "UPDATE lance_manifests SET path = ? WHERE base_uri = ? AND version = ?",
                (path, base_uri, version),
            ).rowcount
        if changed != 1:
            raise StorageError(
                f"{self.url}: version {version} of {base_uri} has no entry to update "
                "(it was never claimed, or the store was emptied meanwhile)"
            )

    def delete(self, base_uri: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM lance_manifests WHERE base_uri = ?", (base_uri,))

    def entries(self, base_uri: str) -> Iterator[tuple[int, str]]:
        """Every (version, entry) of ``base_uri``, oldest first (for tools and tests)."""
        with self._read() as db:
            rows = db.execute(
                "SELECT version, path FROM lance_manifests WHERE base_uri = ? ORDER BY version", (base_uri,)
            ).fetchall()
        return iter([(int(v), p) for v, p in rows])


class _Session:
    """One connection for one call: ``BEGIN IMMEDIATE`` ... ``COMMIT`` for writes (the write lock is
    taken up front, so two writers never both read and then fail to upgrade), and every
    ``sqlite3`` failure except a key conflict becomes a ``StorageError`` naming the store."""

    def __init__(self, store: SQLiteManifestStore, write: bool) -> None:
        self.store, self.write = store, write
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db = self.store._connect()
            if self.write:
                self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._close()
            raise StorageError(f"{self.store.url}: cannot open the manifest store: {exc}") from exc
        return self.db

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.write and self.db is not None:
                self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        except sqlite3.Error as err:
            if exc_type is None:
                raise StorageError(f"{self.store.url}: cannot commit to the manifest store: {err}") from err
        finally:
            self._close()
        if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
            raise StorageError(f"{self.store.url}: {exc}") from exc

    def _close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _set_wal(db: sqlite3.Connection) -> None:
    """Switch the database to WAL (persistent in the file; a no-op once done). Changing the journal
    mode needs a moment with no other writer, so a busy answer is retried until the timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _check_version(version: int) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or not 0 < version <= MAX_STORE_VERSION:
        raise InvalidArgumentError(
            f"manifest store: version must be an int in 1..{MAX_STORE_VERSION}, got {version!r}"
        )


_stores: dict[str, ManifestStore] = {}
_stores_lock = threading.Lock()


def open_manifest_store(url: str) -> ManifestStore:
    """The store a ``manifest_store`` option names (one object per URL and process).

    Raises:
        InvalidArgumentError: ``url`` is not ``sqlite:///absolute/path``.
        StorageError: the store cannot be opened.
    """
    if not isinstance(url, str) or not url.startswith(SQLITE_URL_PREFIX):
        raise InvalidArgumentError(
            f"storage option {MANIFEST_STORE_OPTION}={url!r}: expected "
            f"{SQLITE_URL_PREFIX}/absolute/path/store.db (the built-in store); other "
            "stores come with their own plugin and option"
        )
    path = url[len(SQLITE_URL_PREFIX) :]
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = SQLiteManifestStore(path)
        return store
