"""The commit-handler interface: create a manifest file only if it does not exist yet."""

from __future__ import annotations

import abc

from lance_fw.io.storage import Storage


class CommitHandler(abc.ABC):
    """Atomically publish ``data`` at ``path``; raise ``CommitConflictError`` if it exists.

    A version exists once its manifest file exists, so this is the only step that must be atomic.
    """

    def __init__(self, storage: Storage):
        self.storage = storage

    @abc.abstractmethod
    def commit(self, path: str, data: bytes) -> None: ...


def resolve_commit_handler(storage: Storage, uri: str) -> CommitHandler:
    from lance_fw.errors import StorageError
    from lance_fw.plugin_manager import get_plugin_manager

    handler = get_plugin_manager().hook.lance_commit_handler(storage=storage, uri=uri, options=getattr(storage, "options", {}))
    if handler is None:
        raise StorageError(f"no commit handler for {uri!r}")
    return handler
