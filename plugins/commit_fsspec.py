"""Commits on fsspec filesystems without a native create-if-absent (e.g. ``memory://``).

Uses a process-wide lock around exists+write: correct for in-process filesystems. Object stores
with conditional PUT get their own handler later.
"""

from __future__ import annotations

import threading

from lance_fw.errors import CommitConflictError
from lance_fw.hookspecs import hookimpl
from lance_fw.table.commit import CommitHandler
from lance_fw_plugins.storage_fsspec import FsspecStorage

_lock = threading.Lock()


class LockingCommitHandler(CommitHandler):
    def commit(self, path: str, data: bytes) -> None:
        with _lock:
            if self.storage.exists(path):
                raise CommitConflictError(f"{path} already exists: another writer committed this version")
            try:
                self.storage.write_bytes(path, data)
            except BaseException:
                _drop_partial(self.storage, path, data)
                raise


def _drop_partial(storage, path: str, data: bytes) -> None:
    """A write that failed part way leaves a manifest readers would take as the newest version:
    remove it unless it is complete (then the version is published, and stays)."""
    try:
        if storage.exists(path) and storage.read_bytes(path) != data:
            storage.delete(path)
    except Exception:  # noqa: BLE001 - the original failure is what the caller must see
        pass


@hookimpl(trylast=True)
def lance_commit_handler(storage, uri: str) -> CommitHandler | None:
    return LockingCommitHandler(storage) if isinstance(storage, FsspecStorage) else None
