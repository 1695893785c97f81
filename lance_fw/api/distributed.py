"""pylance's distributed-write names: workers call ``write_fragments``, the driver commits once.

``lance_fw.fragment.write_fragments(data, uri)`` writes data files and returns ``FragmentMetadata``
without committing; ``LanceDataset.commit(uri, LanceOperation.Append(fragments))`` (or
``Overwrite(schema, fragments)``) makes them one new version. ``FragmentMetadata.to_json()`` gives
the same dictionary pylance 14 does, so fragments written by pylance workers can be committed by
lance_fw and the other way round (Ray, Daft and Spark drivers pass these around).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.api.fragment_metadata import FragmentMetadata
from lance_fw.api.fragment_metadata import _from_bytes as _from_bytes  # pickles made before the move
from lance_fw.api.write import plan_data_write, refuse_write_options
from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError
from lance_fw.file.version import V2_2, from_footer, version_name
from lance_fw.io.storage import resolve_storage
from lance_fw.options import CommitLock, Unsupported, Uri, refuse, uri_string
from lance_fw.schema import LanceSchema
from lance_fw.table import transaction
from lance_fw.table.manifest import list_versions
from lance_fw.table.merge_insert import Transaction, UpdateOperation
from lance_fw.table.write import (
    COMMIT_MESSAGE_KEY,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    committed_plugin_encodings,
)

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


class WriteProgressAdapter:
    """``table.write.FileProgress`` calling a pylance ``FragmentWriteProgress``: ``begin`` with the
    fragment as pylance shows it then (``fragment_id``; the file named only when ``named``, as
    ``LanceFragment.create`` does; rows and size unknown), ``complete`` with the written one."""

    def __init__(self, progress: Any, fragment_id: int, named: bool, version: tuple[int, int]) -> None:
        for method in ("begin", "complete"):
            if not callable(getattr(progress, method, None)):
                raise InvalidArgumentError(
                    f"progress must be a FragmentWriteProgress (with begin and complete), not {type(progress).__name__}"
                )
        self.progress, self.fragment_id, self.named, self.version = progress, fragment_id, named, version

    def opened(self, name: str) -> None:
        frag = table_pb2.DataFragment(id=self.fragment_id)
        if self.named:
            frag.files.add(path=name, file_major_version=self.version[0], file_minor_version=self.version[1])
        self.progress.begin(FragmentMetadata(frag, pending=True))

    def finished(self, fragment: table_pb2.DataFragment) -> None:
        done = table_pb2.DataFragment()
        done.CopyFrom(fragment)
        done.id = self.fragment_id
        self.progress.complete(FragmentMetadata(done))


def write_fragments(
    data: Any,
    dataset_uri: Uri,
    schema: pa.Schema | None = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int | None = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: int | None = None,
    max_page_bytes: int | None = None,
    progress: Any = None,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    storage_options: dict | None = None,
    enable_stable_row_ids: bool = False,
    target_bases: Unsupported = None,
    target_all_bases: Unsupported = None,
    initial_bases: Unsupported = None,
    base_store_params: Unsupported = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    namespace_client: Unsupported = None,
    table_id: Unsupported = None,
    session: Unsupported = None,
    allow_plugin_encodings: bool = False,
) -> list[FragmentMetadata]:
    """Write ``data`` into new data files of ``dataset_uri`` and return their metadata, uncommitted.
    ``mode="append"`` uses the existing dataset's schema; ``create``/``overwrite`` the data's.
    ``return_transaction=True`` (a pylance Transaction object) is not supported. ``progress`` (a
    ``lance_fw.progress.FragmentWriteProgress``) hears ``begin``/``complete`` of each file."""
    arguments = dict(locals())
    refuse_write_options("write_fragments", arguments, skip=("progress",))
    # pylance: "create" refuses an existing dataset; "overwrite" without data_storage_version
    # writes the dataset's file version
    plan, batches = plan_data_write(
        data, uri_string(dataset_uri), schema, mode, arguments, keep_dataset_version=True
    )
    tracker = None if progress is None else WriteProgressAdapter(progress, 0, False, plan.version)
    return [FragmentMetadata(f) for f in plan.write(batches, tracker)]


@dataclass
class _Append:
    fragments: list = field(default_factory=list)


@dataclass
class _Overwrite:
    new_schema: pa.Schema | None = None
    fragments: list = field(default_factory=list)


@dataclass
class _Delete:
    """pylance's ``LanceOperation.Delete``: fragments with new deletion files (from
    ``LanceFragment.delete``), the ids of fragments left without rows, and the predicate."""

    updated_fragments: list = field(default_factory=list)
    deleted_fragment_ids: list = field(default_factory=list)
    predicate: str = ""


@dataclass
class _Project:
    """pylance's ``LanceOperation.Project``: a new schema over the same data (dropped or renamed
    columns; no data written)."""

    schema: Any = None
    preserves_nullability: bool = False


@dataclass
class _Restore:
    """pylance's ``LanceOperation.Restore``: make an old version the newest."""

    version: int = 0


@dataclass
class _Merge:
    """pylance's ``LanceOperation.Merge``: every fragment of the new version (each with the files
    ``LanceFragment.merge_columns`` added) and the schema they hold (a ``LanceSchema`` or a
    ``pyarrow.Schema``)."""

    fragments: list = field(default_factory=list)
    schema: Any = None


#: ``LanceOperation`` names whose classes live in ``api/transactions.py`` (which reads
#: transactions and imports this module, so they are looked up when first used)
_READ_SIDE_CLASSES = (
    "BaseOperation",
    "Clone",
    "CreateIndex",
    "DataReplacement",
    "DataReplacementGroup",
    "Rewrite",
    "RewriteGroup",
    "RewrittenIndex",
    "UpdateConfig",
    "UpdateMap",
)


class _OperationNames(type):
    """Finds the ``_READ_SIDE_CLASSES`` on ``LanceOperation`` without an import cycle."""

    def __getattr__(cls, name: str) -> Any:
        if name in _READ_SIDE_CLASSES:
            from lance_fw.api import transactions

            return getattr(transactions, name)
        raise AttributeError(f"type object 'LanceOperation' has no attribute {name!r}")

    def __dir__(cls) -> list[str]:
        return sorted(set(super().__dir__()) | set(_READ_SIDE_CLASSES))


class LanceOperation(metaclass=_OperationNames):
    """The operations ``LanceDataset.commit`` accepts (pylance's names). ``Update`` is what
    ``MergeInsertBuilder.execute_uncommitted`` returns inside its ``Transaction``, or one built
    from ``LanceFragment.update_columns``/``delete_rows`` results; ``Rewrite``,
    ``DataReplacement`` and ``UpdateConfig`` are committed by ``api/operations.py``."""

    Append = _Append
    Overwrite = _Overwrite
    Merge = _Merge
    Delete = _Delete
    Project = _Project
    Restore = _Restore
    Update = UpdateOperation


def _messages(items: list) -> list[table_pb2.DataFragment]:
    """Fragments given as ``FragmentMetadata``, its JSON (text or dict), or the proto itself."""
    return [
        f.message
        if isinstance(f, FragmentMetadata)
        else FragmentMetadata.from_json(f).message
        if isinstance(f, (str, dict))
        else f
        for f in items
    ]


def _need_read_version(read_version: int | None, what: str) -> None:
    if read_version is None:
        raise InvalidArgumentError(f"LanceDataset.commit: {what} needs the read_version it was made from")


def _merge_schema(schema: Any) -> LanceSchema:
    """A Merge's schema: the field ids a ``LanceSchema`` from ``merge_columns`` carries, or a
    ``pyarrow.Schema``'s in pre-order (as pylance numbers them)."""
    if isinstance(schema, pa.Schema):
        return LanceSchema.from_arrow(schema)
    inner = schema if isinstance(schema, LanceSchema) else getattr(schema, "_schema", None)
    if not isinstance(inner, LanceSchema):
        raise InvalidArgumentError(
            f"LanceOperation.Merge: schema must be a LanceSchema or a pyarrow.Schema, not {type(schema).__name__}"
        )
    return inner


def commit(
    base_uri: Uri,
    operation: Any,
    read_version: int | None = None,
    commit_lock: CommitLock | None = None,
    storage_options: dict | None = None,
    enable_v2_manifest_paths: bool | None = None,
    detached: bool | None = False,
    max_retries: int = 20,
    *,
    commit_message: str | None = None,
    enable_stable_row_ids: bool | None = None,
    namespace_client: Unsupported = None,
    table_id: list | None = None,
    namespace_client_managed_versioning: bool = False,
    base_store_params: dict | None = None,
    commit_timeout: Unsupported = None,
) -> LanceDataset:
    """``LanceDataset.commit``: commit ``LanceOperation.Append(fragments)`` / ``Overwrite(schema,
    fragments)`` of fragments from ``write_fragments`` (pylance's distributed write) as one version.
    ``commit_timeout`` bounds pylance's retry loop; lance_fw's is bounded by ``max_retries``."""
    from lance_fw.api.dataset import LanceDataset

    refuse(
        "LanceDataset.commit",
        {
            "enable_v2_manifest_paths": enable_v2_manifest_paths,
            "detached": detached,
            "enable_stable_row_ids": enable_stable_row_ids,
            "namespace_client": namespace_client,
            "table_id": table_id,
            "namespace_client_managed_versioning": namespace_client_managed_versioning,
            "base_store_params": base_store_params,
        },
        {
            "enable_v2_manifest_paths": True,
            "detached": False,
            "enable_stable_row_ids": False,
            "namespace_client_managed_versioning": False,
        },
    )
    uri = uri_string(base_uri)
    storage = resolve_storage(uri, storage_options)
    given: dict[str, str] = {}  # a Transaction's transaction_properties
    if isinstance(operation, Transaction):
        read_version = operation.read_version if read_version is None else read_version
        given = dict(operation.transaction_properties or {})
        operation = operation.operation
    properties = {COMMIT_MESSAGE_KEY: commit_message} if commit_message else {}
    op: transaction.Operation
    if isinstance(operation, _Append):
        fragments = _messages(operation.fragments)
        if not list_versions(storage, uri):
            raise DatasetNotFoundError(f"{uri}: no dataset to append to; commit an Overwrite to create it")
        op = transaction.Append(
            fragments=fragments,
            properties=properties,
            plugin_encodings=committed_plugin_encodings(storage, uri, fragments),
        )
    elif isinstance(operation, _Overwrite):
        if operation.new_schema is None:
            raise InvalidArgumentError("LanceOperation.Overwrite needs new_schema")
        fragments = _messages(operation.fragments)
        lance_schema = LanceSchema.from_arrow(operation.new_schema)
        files = [f for frag in fragments for f in frag.files]
        version = from_footer(files[0].file_major_version, files[0].file_minor_version) if files else V2_2
        op = transaction.Overwrite(
            fragments=fragments,
            properties=properties,
            schema_fields=lance_schema.to_protos(),
            schema_metadata=lance_schema.metadata,
            data_format_version=version_name(version),
            plugin_encodings=committed_plugin_encodings(storage, uri, fragments, lance_schema),
        )
    elif isinstance(operation, _Delete):
        _need_read_version(read_version, "a Delete")
        op = transaction.Delete(
            updated=_messages(operation.updated_fragments),
            removed=[int(i) for i in operation.deleted_fragment_ids],
            predicate=str(operation.predicate),
            properties=properties,
        )
    elif isinstance(operation, _Project):
        projected = _merge_schema(operation.schema)
        op = transaction.Project(
            schema_fields=projected.to_protos(), schema_metadata=projected.metadata, properties=properties
        )
    elif isinstance(operation, _Restore):
        from lance_fw.table.restore import Restore

        old = LanceDataset(uri, version=int(operation.version), storage_options=storage_options)._snapshot
        op = Restore(old=old.manifest, old_indices=old.index_section, properties=properties)
    elif isinstance(operation, _Merge):
        _need_read_version(read_version, "a Merge")
        merged = _merge_schema(operation.schema)
        op = transaction.Merge(
            fragments=_messages(operation.fragments),
            properties=properties,
            schema_fields=merged.to_protos(),
            schema_metadata=merged.metadata,
        )
    elif isinstance(operation, UpdateOperation) and operation.staged is not None:
        _need_read_version(read_version, "an Update")
        op = replace(operation.staged, properties={**given, **properties})
    else:
        from lance_fw.api.operations import table_operation

        if read_version is None and isinstance(operation, UpdateOperation):
            _need_read_version(read_version, "an Update")
        made = table_operation(operation, uri, storage, read_version, {**given, **properties})
        if made is None:
            raise InvalidArgumentError(
                f"cannot commit a {type(operation).__name__}; use LanceOperation.Append, Overwrite, "
                "Merge, Delete, Project, Restore, Update, Rewrite, DataReplacement, UpdateConfig or a "
                "Transaction from execute_uncommitted"
            )
        op = made
    if max_retries < 1:
        raise InvalidArgumentError(f"max_retries must be at least 1, got {max_retries}")
    committed = transaction.commit(
        storage, uri, op, read_version=read_version, max_retries=max_retries, commit_lock=commit_lock
    )
    return LanceDataset(uri, version=committed, storage_options=storage_options)
