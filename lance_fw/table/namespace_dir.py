"""A directory of Lance tables (``root/<name>.lance``): the one implementation of "list, locate, declare
and drop the tables under a root" that ``lance_fw.namespace.DirectoryNamespace`` and the DuckDB
``ATTACH … (TYPE LANCE)`` catalog share.

Why a layer of its own: both front ends must agree on what counts as a table (a ``*.lance`` directory
with manifests, or one reserved by ``declare_table``) and on which names stay inside the root, and
pylance's directory namespace lists the same directories, so a table written by either library is seen
by the other. pylance additionally tracks tables in a ``__manifest`` Lance table at the root; this module
only reports whether one is there (the façade reads it, since reading a dataset is a higher layer).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from lance_fw.errors import InvalidArgumentError, LanceError
from lance_fw.io.storage import Storage, resolve_storage
from lance_fw.table.paths import VERSIONS_DIR

#: The ending of a dataset directory inside a root (pylance's directory namespace and DuckDB's use it)
DATASET_SUFFIX = ".lance"
#: The empty file pylance's ``declare_table`` leaves in a table directory that has no data yet
RESERVED_MARKER = ".lance-reserved"
#: The Lance table pylance's directory namespace keeps at the root to track tables and namespaces
MANIFEST_TABLE = "__manifest"
#: Table names that stay inside the root: no separators, no ``..``, nothing hidden
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-.]*")


class NamespaceError(LanceError):
    """A namespace request failed (pylance raises ``lance_namespace.errors.LanceNamespaceError``)."""


class TableNotFoundError(NamespaceError, LookupError):
    """No table of that id (pylance: ``lance_namespace.errors.TableNotFoundError``)."""


class TableAlreadyExistsError(NamespaceError, FileExistsError):
    """A table of that id exists (pylance: ``lance_namespace.errors.TableAlreadyExistsError``)."""


class NamespaceNotFoundError(NamespaceError, LookupError):
    """No child namespace of that id (pylance: ``lance_namespace.errors.NamespaceNotFoundError``)."""


@dataclass
class DirectoryTables:
    """The tables directly under ``root`` (a local path or an object-store URI)."""

    root: str
    storage_options: dict[str, str] | None = None

    def path(self, table: str) -> str:
        """The dataset path of ``table``; a name that could leave the directory is refused."""
        if not _SAFE_NAME.fullmatch(table) or ".." in table:
            raise InvalidArgumentError(f"Unsafe Lance dataset name for directory namespace: {table!r}")
        return f"{self.root.rstrip('/')}/{table}{DATASET_SUFFIX}"

    def tables(self, include_declared: bool = False) -> list[str]:
        """The tables in the directory now, sorted by name.

        Args:
            include_declared: also list tables reserved by ``declare_table`` that have no data yet
                (pylance's namespace lists them; a SQL catalog cannot read them).
        """
        storage = resolve_storage(self.root, self.storage_options)
        names = []
        for entry in storage.list_dir(self.root):
            if not entry.endswith(DATASET_SUFFIX):
                continue
            name = entry[: -len(DATASET_SUFFIX)]
            if self._state(name, include_declared):
                names.append(name)
        return sorted(names)

    def _state(self, name: str, include_declared: bool) -> bool:
        storage = resolve_storage(self.root, self.storage_options)
        base = f"{self.root.rstrip('/')}/{name}{DATASET_SUFFIX}"
        if _entries(storage, f"{base}/{VERSIONS_DIR}"):
            return True
        return include_declared and storage.exists(f"{base}/{RESERVED_MARKER}")

    def exists(self, table: str, include_declared: bool = True) -> bool:
        """Whether ``table`` has data (or, with ``include_declared``, is at least declared)."""
        self.path(table)
        return self._state(table, include_declared)

    def has_manifest(self) -> bool:
        """Whether pylance's ``__manifest`` tracking table is at the root."""
        storage = resolve_storage(self.root, self.storage_options)
        return bool(_entries(storage, f"{self.root.rstrip('/')}/{MANIFEST_TABLE}/{VERSIONS_DIR}"))

    def declare(self, table: str) -> str:
        """Reserve ``table`` without data (the marker file pylance writes); returns its path."""
        if self.exists(table):
            raise TableAlreadyExistsError(f"Table already exists: {table}")
        path = self.path(table)
        storage = resolve_storage(self.root, self.storage_options)
        with storage.open_output(f"{path}/{RESERVED_MARKER}"):
            pass
        return path

    def drop(self, table: str) -> str:
        """Delete every file of ``table``; returns its path. Raises TableNotFoundError when absent."""
        if not self.exists(table):
            raise TableNotFoundError(f"Table not found: table id '{table}'")
        path = self.path(table)
        _delete_tree(resolve_storage(self.root, self.storage_options), path)
        return path


def _entries(storage: Storage, path: str) -> list[str]:
    """A directory's entries without the empty name filer-backed stores (SeaweedFS) list for the
    directory itself, which stays behind once its files are deleted."""
    return [e for e in storage.list_dir(path) if e]


def _delete_tree(storage: Storage, path: str) -> None:
    """Delete the files under ``path``: a local directory at once, an object store file by file (its
    stores list a directory's entries, and a file lists as empty)."""
    if "://" not in path or path.startswith("file://"):
        local = path.removeprefix("file://")
        if os.path.isdir(local):
            shutil.rmtree(local)
        return
    for entry in storage.list_dir(path):
        if not entry:  # the marker of the directory itself (filer-backed stores list one)
            continue
        child = f"{path}/{entry}"
        if _entries(storage, child):
            _delete_tree(storage, child)
        storage.delete(child)  # a file, or the marker a filer-backed store keeps for a directory
    storage.delete(path)
