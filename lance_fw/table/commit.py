"""The commit-handler interface: create a manifest file only if it does not exist yet.

A version exists once its manifest file exists, so publishing the manifest is the only step of a
commit that must be atomic. Handlers come from the ``lance_commit_handler`` hook; the built-in
generic one (``commit_put_if_absent``) serves every storage with an atomic ``put_if_absent``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from lance_fw.errors import CommitConflictError, InvalidArgumentError, LanceError, StorageError

# re-exported (``X as X``): its old home, plugins import it from here
from lance_fw.interfaces import CommitHandler as CommitHandler
from lance_fw.io.storage import Storage
from lance_fw.table.manifest import parse_manifest_name


def resolve_commit_handler(storage: Storage, uri: str) -> CommitHandler:
    """The commit handler for ``storage`` (opened for ``uri``), from the ``lance_commit_handler`` hook.

    Raises:
        StorageError: no installed handler can commit safely to ``uri``'s scheme; the message names
            the scheme, what would make it safe, and the installed commit handlers.
        PluginConflictError: two plugins answer for the scheme.
        PluginLoadError: the answering plugin returned something that is not a ``CommitHandler``.
    """
    from lance_fw.plugin_manager import failure_note, get_plugin_manager, plugins

    handler = get_plugin_manager().hook.lance_commit_handler(
        storage=storage, uri=uri, options=getattr(storage, "options", {})
    )
    if handler is None:
        scheme = uri.split("://", 1)[0] if "://" in uri else "file"
        installed = sorted(p["name"] for p in plugins() if "lance_commit_handler" in p["hooks"])
        raise StorageError(
            f"no commit handler can publish versions safely at {uri!r} (scheme {scheme!r}): its storage "
            f"({type(storage).__name__}) has no atomic put_if_absent, and no commit-handler plugin answers for "
            f"{scheme!r}. Use a storage plugin that implements put_if_absent atomically, install a "
            f"commit-handler plugin for the scheme, or pass commit_lock=. Installed commit handlers: "
            f"{installed or 'none'}{failure_note()}"
        )
    return handler


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` says "another writer holds this version": lance_fw's ``CommitConflictError``,
    or pylance's ``lance.commit.CommitConflictError``, which pylance documents for commit locks
    (checked only if pylance is loaded: lance_fw does not depend on it)."""
    if isinstance(exc, CommitConflictError):
        return True
    pylance_conflict = getattr(sys.modules.get("lance.commit"), "CommitConflictError", None)
    return isinstance(pylance_conflict, type) and isinstance(exc, pylance_conflict)


class CommitLockHandler(CommitHandler):
    """pylance's ``commit_lock``: a callable taking the version about to be committed and returning
    a context manager, inside which the manifest is written (what pylance does with it).

    It replaces the scheme's commit handler, as in pylance, so it makes a storage with no safe
    commit of its own committable: inside the lock the manifest is created with the storage's
    atomic ``put_if_absent`` when it has one, else after checking that no manifest is there.

    The lock's contract (pylance's ``CommitLock``): ``lock(version)`` waits while another writer
    holds it, then raises ``CommitConflictError`` (pylance's or lance_fw's) if ``version`` is
    already committed. Any other exception from it fails the commit as a ``StorageError`` (an
    ``OSError``, as pylance raises). ``__exit__`` receives the write's exception, if any; its
    return value is ignored (a failed write is never taken for a commit).

    Thread-safety: as thread-safe as the lock; the handler keeps no state of its own.
    """

    def __init__(self, storage: Storage, lock: Callable[[int], Any]) -> None:
        super().__init__(storage)
        if not callable(lock):
            raise InvalidArgumentError(
                f"commit_lock must be a callable taking the version number and returning "
                f"a context manager, got {type(lock).__name__}"
            )
        self.lock = lock

    def commit(self, path: str, data: bytes) -> None:
        parsed = parse_manifest_name(path.rsplit("/", 1)[-1])
        if parsed is None:
            raise InvalidArgumentError(f"{path} is not a manifest path")
        version = parsed[0]
        try:
            lease = self.lock(version)
            lease.__enter__()
        except Exception as exc:
            raise _lock_error(exc, version) from exc
        try:
            if self.storage.atomic_put_if_absent:
                self.storage.put_if_absent(path, data)
            elif self.storage.exists(path):
                raise CommitConflictError(
                    f"{path} already exists: another writer committed version {version}"
                )
            else:
                self.storage.write_bytes(path, data)
        except BaseException as exc:
            try:
                lease.__exit__(type(exc), exc, exc.__traceback__)
            except Exception:
                pass
            raise
        try:
            lease.__exit__(None, None, None)
        except Exception as exc:
            raise StorageError(
                f"commit_lock failed to release version {version} after its manifest was "
                f"published: {type(exc).__name__}: {exc}"
            ) from exc


def _lock_error(exc: Exception, version: int) -> LanceError:
    """The lock's own exception, typed: a conflict (retried by the commit loop) or a ``StorageError``."""
    if is_conflict(exc):
        return CommitConflictError(f"commit_lock refused version {version}: {exc}")
    return StorageError(f"commit_lock failed for version {version}: {type(exc).__name__}: {exc}")


def handler_label(handler: object) -> str:
    """How errors name a commit handler: the caller's lock, or the handler's module and class
    (the module is the plugin's)."""
    if isinstance(handler, CommitLockHandler):
        return f"commit_lock {handler.lock!r}"
    cls = type(handler)
    return f"{cls.__module__}.{cls.__qualname__}"
