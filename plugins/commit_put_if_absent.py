"""The generic commit handler: publish a manifest with the storage's own atomic put-if-absent.

It answers for ANY storage whose ``atomic_put_if_absent`` is true (local files through ``os.link``,
object stores through conditional PUT), so a storage plugin that implements
``Storage.put_if_absent`` gets safe commits without writing a commit handler. It is ``trylast``: a
scheme-specific handler (e.g. an external manifest store) installed for the same scheme answers
first when it declares the override (see plugin-authoring.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import CommitHandler
from lance_fw.io.storage import Storage


class PutIfAbsentCommitHandler(CommitHandler):
    """Commits are exactly as safe as ``storage.put_if_absent``, which the storage declares atomic
    across processes and machines. Thread-safe (it keeps no state of its own)."""

    def commit(self, path: str, data: bytes) -> None:
        """See ``CommitHandler.commit``; a conflict is the storage's ``CommitConflictError``."""
        self.storage.put_if_absent(path, data)


@hookimpl(trylast=True)
def lance_commit_handler(storage: Storage, uri: str, options: Mapping[str, Any]) -> CommitHandler | None:
    return (
        PutIfAbsentCommitHandler(storage) if getattr(storage, "atomic_put_if_absent", False) is True else None
    )
