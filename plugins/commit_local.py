"""Local commits: write a temp file beside the manifest, then ``os.link`` it into place.

``link`` fails with EEXIST if another writer got there first, so two processes can never both
publish the same version, and a reader never sees a half-written manifest.
"""

from __future__ import annotations

import os
import uuid

from lance_fw.errors import CommitConflictError
from lance_fw.hookspecs import hookimpl
from lance_fw.table.commit import CommitHandler
from lance_fw_plugins.storage_local import LocalStorage, local_path


class LocalCommitHandler(CommitHandler):
    def commit(self, path: str, data: bytes) -> None:
        final = local_path(path)
        directory = os.path.dirname(final)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, final)
        except FileExistsError as exc:
            raise CommitConflictError(f"{final} already exists: another writer committed this version") from exc
        finally:
            _remove_quietly(tmp)


def _remove_quietly(path: str) -> None:
    """Drop the temp file; after a successful link a failure here must not fail the commit
    (``cleanup_old_versions`` removes stray ``.tmp-*`` files)."""
    try:
        os.unlink(path)
    except OSError:
        pass


@hookimpl(trylast=True)
def lance_commit_handler(storage, uri: str) -> CommitHandler | None:
    return LocalCommitHandler(storage) if isinstance(storage, LocalStorage) else None
