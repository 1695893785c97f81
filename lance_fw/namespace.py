"""``lance.namespace``: a directory of Lance tables addressed by table ids (``DirectoryNamespace``).

Why: code written against pylance's namespace API (``list_tables``, ``create_table``, ``describe_table``,
``dataset(namespace_client=…, table_id=…)``) should run on lance_fw over the same directories. Tables
are ``root/<name>.lance`` datasets (``lance_fw.table.namespace_dir``, shared with DuckDB's ``ATTACH …
(TYPE LANCE)``), which pylance's directory namespace lists too; tables pylance tracks in its
``__manifest`` table are read from it. What needs writing that manifest (child namespaces, dropping a
manifest-tracked table) or a REST server is refused by name.

Requests are any objects with pylance's field names (``lance_namespace``'s pydantic models work, so do
this module's dataclasses of the same names); responses are this module's dataclasses, field for field
the ones pylance returns.
"""

from __future__ import annotations

import io
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from lance_fw._util.refusals import REFUSED_MARK, refusing
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.table.namespace_dir import (
    MANIFEST_TABLE,
    DirectoryTables,
    NamespaceError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

#: The property prefix whose keys pass to the object store with the prefix removed (as in pylance)
STORAGE_PREFIX = "storage."
#: ``__manifest`` rows describing a table / a child namespace (pylance's ``object_type`` values)
_TABLE_OBJECT, _NAMESPACE_OBJECT = "table", "namespace"


class InvalidInputError(NamespaceError, ValueError):
    """A malformed request (pylance: ``lance_namespace.errors.InvalidInputError``)."""


# --- requests (pylance takes lance_namespace's models; any object with these fields works here) ------


@dataclass
class _Request:
    id: list[str] | None = None
    context: dict[str, str] | None = None
    identity: Any = None


@dataclass
class ListTablesRequest(_Request):
    page_token: str | None = None
    limit: int | None = None
    include_declared: bool | None = None


@dataclass
class DescribeTableRequest(_Request):
    version: int | None = None


@dataclass
class TableExistsRequest(_Request):
    version: int | None = None


@dataclass
class DropTableRequest(_Request):
    pass


@dataclass
class CreateTableRequest(_Request):
    mode: str | None = None
    properties: dict[str, str] | None = None
    storage_options: dict[str, str] | None = None


@dataclass
class DeclareTableRequest(_Request):
    location: str | None = None
    properties: dict[str, str] | None = None


@dataclass
class ListNamespacesRequest(_Request):
    page_token: str | None = None
    limit: int | None = None


@dataclass
class DescribeNamespaceRequest(_Request):
    pass


@dataclass
class NamespaceExistsRequest(_Request):
    pass


# --- responses: pylance's fields, in pylance's order -------------------------------------------------


@dataclass
class ListTablesResponse:
    tables: list[str] = field(default_factory=list)
    page_token: str | None = None
    context: dict[str, str] | None = None


@dataclass
class DescribeTableResponse:
    table: str | None = None
    namespace: list[str] | None = None
    version: int | None = None
    location: str | None = None
    table_uri: str | None = None
    storage_options: dict[str, str] | None = None
    properties: dict[str, str] | None = None
    is_only_declared: bool | None = None
    context: dict[str, str] | None = None


@dataclass
class TableExistsResponse:
    context: dict[str, str] | None = None


@dataclass
class DropTableResponse:
    id: list[str] | None = None
    location: str | None = None
    transaction_id: str | None = None
    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


@dataclass
class CreateTableResponse:
    location: str | None = None
    version: int | None = None
    transaction_id: str | None = None
    storage_options: dict[str, str] | None = None
    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


@dataclass
class DeclareTableResponse:
    location: str | None = None
    transaction_id: str | None = None
    storage_options: dict[str, str] | None = None
    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


@dataclass
class ListNamespacesResponse:
    namespaces: list[str] = field(default_factory=list)
    page_token: str | None = None
    context: dict[str, str] | None = None


@dataclass
class DescribeNamespaceResponse:
    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


@dataclass
class NamespaceExistsResponse:
    context: dict[str, str] | None = None


class DynamicContextProvider(ABC):
    """Per-request context (e.g. auth headers) for a namespace; pylance's ABC, same method.

    A directory namespace makes no requests, so lance_fw accepts a provider and never calls it."""

    @abstractmethod
    def provide_context(self, info: dict[str, str]) -> dict[str, str]:
        """The context to add to the request described by ``info`` (``operation``, ``object_id``)."""


_MANIFEST_WRITES = "writing pylance's __manifest tracking table (child namespaces) is not implemented"
_TABLE_OPS = (
    "table operations through the namespace are not implemented: open the table with lance_fw.dataset"
)
_OTHER = "lance_fw's directory namespace implements tables and listing only"


@refusing(
    {
        _MANIFEST_WRITES: ["create_namespace", "drop_namespace", "register_table", "deregister_table",
                           "rename_table", "batch_commit_tables"],
        _TABLE_OPS: [
            "alter_table_add_columns", "alter_table_alter_columns", "alter_table_backfill_columns",
            "alter_table_drop_columns", "alter_transaction", "analyze_table_query_plan",
            "count_table_rows", "create_table_index", "create_table_scalar_index", "create_table_tag",
            "create_table_branch", "delete_from_table", "delete_table_branch", "delete_table_tag",
            "describe_table_index_stats", "describe_transaction", "drop_table_index",
            "explain_table_query_plan", "get_table_stats", "get_table_tag_version", "insert_into_table",
            "list_table_branches", "list_table_indices", "list_table_tags", "list_table_versions",
            "merge_insert_into_table", "query_table", "restore_table", "update_table",
            "update_table_schema_metadata", "update_table_tag", "update_field_metadata",
            "create_table_version", "describe_table_version", "batch_create_table_versions",
            "batch_delete_table_versions",
        ],
        _OTHER: ["create_materialized_view", "refresh_materialized_view", "create_empty_table",
                 "retrieve_ops_metrics", "reset_ops_metrics"],
    }
)  # fmt: skip
class DirectoryNamespace:
    """Tables as ``root/<name>.lance`` datasets, addressed by ids ``[name]`` (pylance's API).

    Args:
        session: pylance's object-store session; lance_fw has none to share (must be None).
        context_provider: accepted and unused (a directory makes no requests).
        properties: ``root`` (required), ``storage.*`` (object-store options, prefix removed),
            ``manifest_enabled`` / ``dir_listing_enabled`` (accepted: lance_fw always lists the
            directory and reads a ``__manifest`` that is there).
    """

    def __init__(
        self,
        session: object = None,
        context_provider: DynamicContextProvider | None = None,
        **properties: str,
    ) -> None:
        if session is not None:
            raise UnsupportedFeatureError("DirectoryNamespace(session=…): lance_fw has no Session")
        root = properties.get("root")
        if not root:
            raise InvalidArgumentError("DirectoryNamespace: the 'root' property is required")
        options = {k[len(STORAGE_PREFIX) :]: v for k, v in properties.items() if k.startswith(STORAGE_PREFIX)}
        self._root = root.rstrip("/") or root
        self._storage_options = options or None
        self._dir = DirectoryTables(self._root, self._storage_options)
        self._context_provider = context_provider

    def namespace_id(self) -> str:
        return f'DirectoryNamespace {{ root: "{self._root}" }}'

    def __repr__(self) -> str:
        return f"DirectoryNamespace({self.namespace_id()})"

    # -- namespaces (only the root, plus the child namespaces pylance's manifest lists) -----------------

    def list_namespaces(self, request: Any) -> ListNamespacesResponse:
        ids = _ids(request)
        if ids:
            return ListNamespacesResponse(namespaces=[])
        return ListNamespacesResponse(namespaces=_limit(sorted(self._manifest(_NAMESPACE_OBJECT)), request))

    def describe_namespace(self, request: Any) -> DescribeNamespaceResponse:
        ids = _ids(request)
        if not ids:
            return DescribeNamespaceResponse(properties={})
        self._check_namespace(ids)
        return DescribeNamespaceResponse(properties=None)

    def namespace_exists(self, request: Any) -> NamespaceExistsResponse:
        self._check_namespace(_ids(request))
        return NamespaceExistsResponse()

    def _check_namespace(self, ids: list[str]) -> None:
        if ids and (len(ids) > 1 or ids[0] not in self._manifest(_NAMESPACE_OBJECT)):
            raise NamespaceNotFoundError(f"Namespace not found: {'$'.join(ids)}")

    # -- tables ---------------------------------------------------------------------------------------

    def list_tables(self, request: Any) -> ListTablesResponse:
        ids = getattr(request, "id", None)
        if ids is None:
            raise InvalidInputError("Invalid input: Namespace ID is required")
        if ids:
            if len(ids) == 1 and ids[0] in self._manifest(_NAMESPACE_OBJECT):
                raise UnsupportedFeatureError(f"list_tables of child namespace {ids}: {_MANIFEST_WRITES}")
            return ListTablesResponse(tables=[])
        return ListTablesResponse(tables=_limit(self.table_names(), request))

    def list_all_tables(self, request: Any) -> ListTablesResponse:
        return self.list_tables(request)

    def table_names(self) -> list[str]:
        """Every table under the root: its ``*.lance`` directories and the tables ``__manifest`` tracks."""
        return sorted(set(self._dir.tables(include_declared=True)) | set(self._manifest(_TABLE_OBJECT)))

    def table_exists(self, request: Any) -> TableExistsResponse:
        self._location(_table_name(request))
        return TableExistsResponse()

    def describe_table(self, request: Any) -> DescribeTableResponse:
        name = _table_name(request)
        location = self._location(name)
        return DescribeTableResponse(
            table=name,
            namespace=[],
            location=location,
            table_uri=location,
            storage_options=self._storage_options,
        )

    def create_table(self, request: Any, request_data: bytes) -> CreateTableResponse:
        """Write the Arrow IPC stream ``request_data`` as a new table (``mode`` create / overwrite)."""
        import pyarrow as pa

        from lance_fw.api.write import write_dataset

        name = _table_name(request)
        mode = (getattr(request, "mode", None) or "create").lower()
        exists = name in self.table_names()
        if exists and mode == "create":
            raise TableAlreadyExistsError(f"Table already exists: {name}")
        data = pa.ipc.open_stream(io.BytesIO(request_data)).read_all()
        path = self._dir.path(name)
        ds = write_dataset(
            data, path, mode="overwrite" if exists else "create", storage_options=self._storage_options
        )
        return CreateTableResponse(
            location=_uri(path), version=ds.version, storage_options=self._storage_options
        )

    def declare_table(self, request: Any) -> DeclareTableResponse:
        name = _table_name(request)
        if name in self.table_names():
            raise TableAlreadyExistsError(f"Table already exists: {name}")
        if getattr(request, "location", None):
            raise UnsupportedFeatureError("declare_table(location=…): tables live at root/<name>.lance")
        return DeclareTableResponse(location=_uri(self._dir.declare(name)))

    def drop_table(self, request: Any) -> DropTableResponse:
        name = _table_name(request)
        if name in self._manifest(_TABLE_OBJECT):
            raise UnsupportedFeatureError(
                f"drop_table({name!r}): a __manifest table tracks it; {_MANIFEST_WRITES}"
            )
        try:
            path = self._dir.drop(name)
        except TableNotFoundError:
            raise TableNotFoundError(f"Table not found: {name}") from None
        return DropTableResponse(id=[name], location=_uri(path))

    def _location(self, name: str) -> str:
        """The path of an existing table. Raises TableNotFoundError."""
        if name in self.table_names():
            return self._dir.path(name)
        raise TableNotFoundError(f"Table not found: table id '{name}'")

    def _manifest(self, object_type: str) -> list[str]:
        """The root-level ids of ``object_type`` in pylance's ``__manifest`` table (none without one)."""
        if not self._dir.has_manifest():
            return []
        from lance_fw.api.dataset import LanceDataset

        rows = LanceDataset(f"{self._root}/{MANIFEST_TABLE}", storage_options=self._storage_options).to_table(
            columns=["object_id", "object_type"]
        )
        return [
            oid
            for oid, kind in zip(rows["object_id"].to_pylist(), rows["object_type"].to_pylist(), strict=True)
            if kind == object_type and "$" not in oid
        ]


_REST_CLIENT = (
    "it speaks the Lance REST namespace protocol to a catalog server, which lance_fw does not implement "
    "(use DirectoryNamespace)"
)
_REST_SERVER = "it serves a namespace over the Lance REST protocol, and lance_fw implements no REST server"


class RestNamespace:
    """pylance's REST namespace client: refused (lance_fw implements no REST namespace protocol)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise UnsupportedFeatureError(
            f"lance.namespace.RestNamespace is not supported by lance_fw: {_REST_CLIENT}"
        )


class RestAdapter:
    """pylance's REST server over a namespace: refused (lance_fw runs no HTTP server)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise UnsupportedFeatureError(
            f"lance.namespace.RestAdapter is not supported by lance_fw: {_REST_SERVER}"
        )


# the compatibility table reads a refused name's reason from this mark
setattr(RestNamespace, REFUSED_MARK, _REST_CLIENT)
setattr(RestAdapter, REFUSED_MARK, _REST_SERVER)


def resolve_table_uri(namespace_client: object, table_id: list[str]) -> tuple[str, dict[str, str] | None]:
    """(uri, storage options) of an existing table: what ``dataset(namespace_client=…, table_id=…)``
    opens. Raises TableNotFoundError, or UnsupportedFeatureError for a client that is not a
    ``DirectoryNamespace`` of this module."""
    ns = _directory(namespace_client)
    response = ns.describe_table(DescribeTableRequest(id=list(table_id)))
    assert response.location is not None
    return response.location, response.storage_options


def resolve_write_uri(
    namespace_client: object, table_id: list[str], mode: str
) -> tuple[str, dict[str, str] | None]:
    """(uri, storage options) ``write_dataset(…, namespace_client=…, table_id=…)`` writes to: the
    table's path; mode ``create`` refuses an existing table, ``append`` / ``overwrite`` a missing one
    for append (overwrite creates it)."""
    ns = _directory(namespace_client)
    name = _table_name(DescribeTableRequest(id=list(table_id)))
    exists = name in ns.table_names()
    if exists and mode == "create":
        raise TableAlreadyExistsError(f"Table already exists: {name}")
    if not exists and mode == "append":
        raise TableNotFoundError(f"Table not found: table id '{name}'")
    return ns._dir.path(name), ns._storage_options


def _directory(client: object) -> DirectoryNamespace:
    if not isinstance(client, DirectoryNamespace):
        raise UnsupportedFeatureError(
            f"namespace_client={type(client).__name__}: lance_fw resolves tables through its own "
            "lance_fw.namespace.DirectoryNamespace only"
        )
    return client


def _ids(request: Any) -> list[str]:
    return list(getattr(request, "id", None) or [])


def _table_name(request: Any) -> str:
    ids = _ids(request)
    if len(ids) != 1:
        if not ids:
            raise InvalidInputError("Invalid input: table id is required")
        raise UnsupportedFeatureError(f"table id {ids}: tables in child namespaces need {_MANIFEST_WRITES}")
    return ids[0]


def _limit(names: list[str], request: Any) -> list[str]:
    limit = getattr(request, "limit", None)
    return names[:limit] if limit else names


def _uri(path: str) -> str:
    """A local path as the ``file://`` URI pylance reports for created tables; URIs stay as they are."""
    return path if "://" in path else "file://" + os.path.abspath(path)


__all__ = [
    "CreateTableRequest", "CreateTableResponse", "DeclareTableRequest", "DeclareTableResponse",
    "DescribeNamespaceRequest", "DescribeNamespaceResponse", "DescribeTableRequest", "DescribeTableResponse",
    "DirectoryNamespace", "DropTableRequest", "DropTableResponse", "DynamicContextProvider",
    "InvalidInputError", "ListNamespacesRequest", "ListNamespacesResponse", "ListTablesRequest",
    "ListTablesResponse", "NamespaceError", "NamespaceExistsRequest", "NamespaceExistsResponse",
    "NamespaceNotFoundError", "RestAdapter", "RestNamespace", "TableAlreadyExistsError", "TableExistsRequest",
    "TableExistsResponse", "TableNotFoundError", "resolve_table_uri", "resolve_write_uri",
]  # fmt: skip
