"""The commit-handler interface: create a manifest file only if it does not exist yet.

A version exists once its manifest file exists, so publishing the manifest is the only step of a
commit that must be atomic. Handlers come from the ``lance_commit_handler`` hook; the built-in
generic one (``commit_put_if_absent``) serves every storage with an atomic ``put_if_absent``.
"""

from __future__ import annotations

import abc

from lance_fw.errors import StorageError
from lance_fw.io.storage import Storage


class CommitHandler(abc.ABC):
    """Publishes manifests for one storage, each exactly once.

    Thread-safety: one handler may be used by several threads (and its storage by other processes
    and machines) at once; :meth:`commit` must be safe under that concurrency, which is its point.
    """

    def __init__(self, storage: Storage):
        self.storage = storage

    @abc.abstractmethod
    def commit(self, path: str, data: bytes) -> None:
        """Publish ``data`` as the manifest at ``path`` unless a manifest is already there.

        Args:
            path: the manifest's full path or URI (``<dataset>/_versions/<name>.manifest``).
            data: the whole manifest.
        Returns:
            None once a reader listing ``_versions`` sees the whole manifest at ``path``.
        Raises:
            CommitConflictError: another writer holds this version (its manifest exists, or the
                handler has another claim on it); nothing was published. The commit loop re-reads
                the latest version and retries on it.
            StorageError: anything else. The manifest may or may not be in place: the loop checks
                (a failure after our exact manifest was published counts as committed).

        Atomicity: of several concurrent calls for one ``path`` -- threads, processes, machines --
        exactly one returns normally, and no reader ever sees a partial manifest.
        """

    def repair(self, base_uri: str, version: int) -> bool:
        """Resolve a claim on ``version`` whose manifest never appeared (optional).

        Called by the commit loop when :meth:`commit` raised ``CommitConflictError`` for
        ``version`` but no manifest of that version is listed: a handler that claims a version
        before writing the manifest (an external store, a lock table) may hold a claim left by a
        writer that crashed in between. A handler that can tell a dead claim from a live one (a
        lease that expired, a staged manifest it can finish publishing) repairs it here.

        Args:
            base_uri: the dataset's root URI.
            version: the version that was refused.
        Returns:
            True when the claim was finished (the manifest is now published) or dropped, so the
            loop should retry at once; False when nothing was repaired (the default): the claim may
            belong to a live writer, and the loop waits, then reports the version as stuck.
        Raises:
            StorageError: the handler's store failed; the commit fails with it.

        Thread-safety: may run concurrently with ``commit`` and ``repair`` calls of other writers;
        it must never drop a claim whose writer can still publish.
        """
        return False


def resolve_commit_handler(storage: Storage, uri: str) -> CommitHandler:
    """The commit handler for ``storage`` (opened for ``uri``), from the ``lance_commit_handler`` hook.

    Raises:
        StorageError: no installed handler can commit safely to ``uri``'s scheme; the message names
            the scheme, what would make it safe, and the installed commit handlers.
        PluginConflictError: two plugins answer for the scheme.
        PluginLoadError: the answering plugin returned something that is not a ``CommitHandler``.
    """
    from lance_fw.plugin_manager import failure_note, get_plugin_manager, plugins

    handler = get_plugin_manager().hook.lance_commit_handler(storage=storage, uri=uri,
                                                             options=getattr(storage, "options", {}))
    if handler is None:
        scheme = uri.split("://", 1)[0] if "://" in uri else "file"
        installed = sorted(p["name"] for p in plugins() if "lance_commit_handler" in p["hooks"])
        raise StorageError(
            f"no commit handler can publish versions safely at {uri!r} (scheme {scheme!r}): its storage "
            f"({type(storage).__name__}) has no atomic put_if_absent, and no commit-handler plugin answers for "
            f"{scheme!r}. Use a storage plugin that implements put_if_absent atomically, install a "
            f"commit-handler plugin for the scheme, or pass commit_lock=. Installed commit handlers: "
            f"{installed or 'none'}{failure_note()}")
    return handler
