"""Commits on in-process fsspec filesystems (``memory://``), which have no create-if-absent.

The handler serialises exists+write with a lock of this process. That is correct only where every
writer of the filesystem is in this process: fsspec's memory filesystem is a per-process store. A
filesystem two processes can reach (``local://``, object stores, network filesystems) is never
claimed: those need a storage with an atomic ``put_if_absent`` or a commit-handler plugin, and
``resolve_commit_handler`` says so.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from fsspec.implementations.memory import MemoryFileSystem

from lance_fw.errors import CommitConflictError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import CommitHandler
from lance_fw.io.storage import Storage
from lance_fw_plugins.storage_fsspec import FsspecStorage

#: fsspec filesystem classes whose whole content lives in this process.
IN_PROCESS_FILESYSTEMS = (MemoryFileSystem,)

_lock = threading.Lock()


class LockingCommitHandler(CommitHandler):
    """Thread-safe; atomic only against writers in this process (see the module docstring)."""

    def commit(self, path: str, data: bytes) -> None:
        with _lock:
            if self.storage.exists(path):
                raise CommitConflictError(f"{path} already exists: another writer committed this version")
            try:
                self.storage.write_bytes(path, data)
            except BaseException:
                _drop_partial(self.storage, path, data)
                raise


def _drop_partial(storage: Storage, path: str, data: bytes) -> None:
    """A write that failed part way leaves a manifest readers would take as the newest version:
    remove it unless it is complete (then the version is published, and stays)."""
    try:
        if storage.exists(path) and storage.read_bytes(path) != data:
            storage.delete(path)
    except Exception:
        pass


def in_process(storage: Storage) -> bool:
    """Whether only this process can write ``storage``'s files (so a process lock serialises all writers)."""
    return isinstance(storage, FsspecStorage) and isinstance(storage.fs, IN_PROCESS_FILESYSTEMS)


@hookimpl(trylast=True)
def lance_commit_handler(storage: Storage, uri: str, options: Mapping[str, Any]) -> CommitHandler | None:
    return LockingCommitHandler(storage) if in_process(storage) else None
