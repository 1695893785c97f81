"""pylance's ``LanceDataset.read_transaction(version)`` and ``get_transactions(n)``: the transaction
that made a version (``_transactions/*.txn`` or the manifest's inline section), as pylance's
``Transaction`` holding a ``LanceOperation.*`` object with pylance's field values.

Why a module of its own: reading a transaction turns every operation message into the Python
object pylance builds for it, which needs classes lance_fw had no use for while only writing
(``Rewrite``, ``CreateIndex``, ``UpdateConfig`` ...); they live here, with pylance's names and
fields, and the writing side (``api/distributed.py``) keeps the ones ``commit`` accepts. This
module imports ``distributed`` only inside functions, so ``LanceOperation`` there can take these
classes from here.
"""

from __future__ import annotations

import dataclasses
import operator
import uuid as uuidlib
from abc import ABC
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw.api.lance_schema import LanceSchema
from lance_fw.errors import (
    DatasetNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedFeatureError,
)
from lance_fw.io.storage import Storage
from lance_fw.schema import LanceSchema as KernelSchema
from lance_fw.table.indices import fragment_bitmap
from lance_fw.table.manifest import list_versions
from lance_fw.table.manifest import read_transaction as read_transaction_message
from lance_fw.table.merge_insert import Transaction, UpdateOperation

if TYPE_CHECKING:
    from lance_fw.api.distributed import FragmentMetadata

#: ``Transaction.UpdateMode`` numbers and pylance's names of them
UPDATE_MODES = {
    transaction_pb2.Transaction.REWRITE_ROWS: "rewrite_rows",
    transaction_pb2.Transaction.REWRITE_COLUMNS: "rewrite_columns",
}
#: an index's ``created_at`` counts milliseconds since the Unix epoch
_MILLIS = 1000


class BaseOperation(ABC):  # noqa: B024 (pylance's base class has no abstract method either)
    """pylance's ``LanceOperation.BaseOperation``: the base of the operations read here, and what
    pylance gives for an operation it has no Python class for (``ReserveFragments``, which
    compaction commits first)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


@dataclass
class RewriteGroup:
    """pylance's ``LanceOperation.RewriteGroup``: fragments compaction replaced by new ones."""

    old_fragments: list[FragmentMetadata]
    new_fragments: list[FragmentMetadata]


@dataclass
class RewrittenIndex:
    """pylance's ``LanceOperation.RewrittenIndex``: an index compaction remapped (its old and new
    uuid, the new details as ``Any`` type url and bytes, and the new index version)."""

    old_id: str
    new_id: str
    new_details_type_url: str
    new_details_value: bytes
    new_index_version: int


@dataclass
class Rewrite(BaseOperation):
    """pylance's ``LanceOperation.Rewrite`` (compaction)."""

    groups: list[RewriteGroup]
    rewritten_indices: list[RewrittenIndex]


@dataclass
class IndexFile:
    """pylance's ``IndexFile``: one file of an index segment and its size."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """pylance's ``Index``: one index segment as a transaction records it. ``fragment_ids`` is a
    ``set`` where pylance has its roaring ``Bitmap`` (both are sets of the covered fragment ids)."""

    uuid: str
    name: str
    fields: list[int]
    dataset_version: int
    fragment_ids: set[int]
    index_version: int
    created_at: datetime | None = None
    base_id: int | None = None
    files: list[IndexFile] | None = None
    index_details: tuple[str, bytes] | None = None
    covering_fields: list[int] = field(default_factory=list)


@dataclass
class CreateIndex(BaseOperation):
    """pylance's ``LanceOperation.CreateIndex``: index segments added and replaced."""

    new_indices: list[Index]
    removed_indices: list[Index]


@dataclass
class DataFile:
    """One data file as pylance's ``DataFile`` describes it (what a ``DataReplacementGroup`` holds)."""

    path: str
    fields: list[int]
    column_indices: list[int] = field(default_factory=list)
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: int | None = None
    base_id: int | None = None


@dataclass
class DataReplacementGroup:
    """pylance's ``LanceOperation.DataReplacementGroup``: the file that replaces a fragment's."""

    fragment_id: int
    new_file: DataFile


@dataclass
class DataReplacement(BaseOperation):
    """pylance's ``LanceOperation.DataReplacement``."""

    replacements: list[DataReplacementGroup]


@dataclass
class UpdateMap:
    """pylance's ``LanceOperation.UpdateMap``: keys set (a None value removes the key), and
    whether the map replaces the old one."""

    updates: dict[str, str | None]
    replace: bool = False


@dataclass
class UpdateConfig(BaseOperation):
    """pylance's ``LanceOperation.UpdateConfig``: changes to the config, table metadata, schema
    metadata and field metadata (None: left alone)."""

    config_updates: UpdateMap | None = None
    table_metadata_updates: UpdateMap | None = None
    schema_metadata_updates: UpdateMap | None = None
    field_metadata_updates: dict[int, UpdateMap] | None = None


@dataclass
class Clone(BaseOperation):
    """pylance's ``LanceOperation.Clone``: a shallow or deep clone of another dataset's version."""

    is_shallow: bool
    ref_name: str | None
    ref_version: int
    ref_path: str
    branch_name: str | None


def _with_fields(cls: type, **values: Any) -> Any:
    """``cls(**values)``; a value ``cls`` has no field for (one pylance's class has and lance_fw's
    writing class lacks so far) is set as an attribute, so it can still be read."""
    names = {f.name for f in dataclasses.fields(cls)}
    made = cls(**{k: v for k, v in values.items() if k in names})
    for name, value in values.items():
        if name not in names:
            setattr(made, name, value)
    return made


def _fragments(messages: Any) -> list[FragmentMetadata]:
    from lance_fw.api.distributed import FragmentMetadata

    return [FragmentMetadata(m) for m in messages]


def _schema(fields: Any, metadata: Any) -> LanceSchema:
    return LanceSchema(KernelSchema.from_protos(list(fields), dict(metadata)))


def _uuid(message: table_pb2.UUID) -> str:
    return str(uuidlib.UUID(bytes=bytes(message.uuid)))


def _utc(millis: int) -> datetime:
    """A time in milliseconds since the epoch, exactly (no float rounding)."""
    seconds, rest = divmod(millis, _MILLIS)
    return datetime.fromtimestamp(seconds, UTC) + timedelta(milliseconds=rest)


def _index(meta: table_pb2.IndexMetadata, where: str) -> Index:
    details = (meta.index_details.type_url, bytes(meta.index_details.value))
    return Index(
        uuid=_uuid(meta.uuid),
        name=meta.name,
        fields=list(meta.fields),
        dataset_version=meta.dataset_version,
        fragment_ids=set(fragment_bitmap(meta, where)),
        index_version=meta.index_version,
        created_at=_utc(meta.created_at) if meta.HasField("created_at") else None,
        base_id=meta.base_id if meta.HasField("base_id") else None,
        files=[IndexFile(f.path, f.size_bytes) for f in meta.files],
        index_details=details if meta.HasField("index_details") else None,
    )


def _update_map(message: transaction_pb2.Transaction.UpdateMap) -> UpdateMap:
    return UpdateMap(
        {e.key: e.value if e.HasField("value") else None for e in message.update_entries}, message.replace
    )


def _update_config(op: transaction_pb2.Transaction.UpdateConfig) -> UpdateConfig:
    """pylance's view: the ``UpdateMap`` fields, or the older flat fields (``upsert_values`` and
    ``delete_keys`` an update of the config, ``schema_metadata`` a replacement) where those are absent."""
    config = table = schema = None
    fields: dict[int, UpdateMap] | None = None
    if op.HasField("config_updates"):
        config = _update_map(op.config_updates)
    elif op.upsert_values or op.delete_keys:
        config = UpdateMap({**dict(op.upsert_values), **dict.fromkeys(op.delete_keys)})
    if op.HasField("table_metadata_updates"):
        table = _update_map(op.table_metadata_updates)
    if op.HasField("schema_metadata_updates"):
        schema = _update_map(op.schema_metadata_updates)
    elif op.schema_metadata:
        schema = UpdateMap(dict(op.schema_metadata), replace=True)
    if op.field_metadata_updates:
        fields = {k: _update_map(v) for k, v in op.field_metadata_updates.items()}
    elif op.field_metadata:
        fields = {k: UpdateMap(dict(v.metadata), replace=True) for k, v in op.field_metadata.items()}
    return UpdateConfig(config, table, schema, fields)


def _update(op: transaction_pb2.Transaction.Update) -> UpdateOperation:
    if op.updated_fragment_offsets or op.updated_fragment_offset_bitmaps:
        raise UnsupportedFeatureError(
            "read_transaction: an Update with updated_fragment_offsets (a column rewrite of some "
            "rows) cannot be shown as pylance does yet"
        )
    return UpdateOperation(
        removed_fragment_ids=list(op.removed_fragment_ids),
        updated_fragments=_fragments(op.updated_fragments),
        new_fragments=_fragments(op.new_fragments),
        fields_modified=list(op.fields_modified),
        fields_for_preserving_frag_bitmap=list(op.fields_for_preserving_frag_bitmap),
        update_mode=UPDATE_MODES[op.update_mode],
        updated_fragment_offsets=None,
    )


def _rewrite(op: transaction_pb2.Transaction.Rewrite, where: str) -> Rewrite:
    groups = [RewriteGroup(_fragments(g.old_fragments), _fragments(g.new_fragments)) for g in op.groups]
    if not groups and (op.old_fragments or op.new_fragments):  # the older flat form: one group
        groups = [RewriteGroup(_fragments(op.old_fragments), _fragments(op.new_fragments))]
    indices = [
        RewrittenIndex(
            _uuid(r.old_id),
            _uuid(r.new_id),
            r.new_index_details.type_url,
            bytes(r.new_index_details.value),
            r.new_index_version,
        )
        for r in op.rewritten_indices
    ]
    return Rewrite(groups, indices)


def operation_of(txn: transaction_pb2.Transaction, where: str) -> Any:
    """The ``LanceOperation.*`` object pylance builds for ``txn``'s operation.

    Raises:
        UnsupportedFeatureError: an operation (or a part of one) lance_fw cannot show as pylance does.
    """
    from lance_fw.api.distributed import LanceOperation  # imported here: it may import this module

    kind = txn.WhichOneof("operation")
    if kind == "append":
        return LanceOperation.Append(_fragments(txn.append.fragments))
    if kind == "overwrite":
        o = txn.overwrite
        if o.initial_bases:
            raise UnsupportedFeatureError(f"{where}: an Overwrite with initial_bases (multi-base datasets)")
        return _with_fields(
            LanceOperation.Overwrite,
            new_schema=_schema(o.schema, o.schema_metadata),
            fragments=_fragments(o.fragments),
            initial_bases=None,
        )
    if kind == "delete":
        d = txn.delete
        return LanceOperation.Delete(
            _fragments(d.updated_fragments), list(d.deleted_fragment_ids), d.predicate
        )
    if kind == "update":
        return _update(txn.update)
    if kind == "merge":
        m = txn.merge
        return _with_fields(
            LanceOperation.Merge,
            fragments=_fragments(m.fragments),
            schema=_schema(m.schema, m.schema_metadata),
            preserves_nullability=m.preserves_nullability,
        )
    if kind == "project":
        p = txn.project
        return LanceOperation.Project(_schema(p.schema, {}), p.preserves_nullability)
    if kind == "restore":
        return LanceOperation.Restore(txn.restore.version)
    if kind == "rewrite":
        return _rewrite(txn.rewrite, where)
    if kind == "create_index":
        c = txn.create_index
        return CreateIndex(
            [_index(i, where) for i in c.new_indices], [_index(i, where) for i in c.removed_indices]
        )
    if kind == "update_config":
        return _update_config(txn.update_config)
    if kind == "data_replacement":
        return DataReplacement(
            [
                DataReplacementGroup(g.fragment_id, _data_file(g.new_file))
                for g in txn.data_replacement.replacements
            ]
        )
    if kind == "clone":
        c = txn.clone
        return Clone(
            c.is_shallow,
            c.ref_name if c.HasField("ref_name") else None,
            c.ref_version,
            c.ref_path,
            c.branch_name if c.HasField("branch_name") else None,
        )
    if kind == "reserve_fragments":
        return BaseOperation()
    raise UnsupportedFeatureError(f"{where}: reading a {kind} transaction is not supported")


def _data_file(f: table_pb2.DataFile) -> DataFile:
    return DataFile(
        f.path,
        list(f.fields),
        list(f.column_indices),
        f.file_major_version,
        f.file_minor_version,
        f.file_size_bytes or None,
        f.base_id if f.HasField("base_id") else None,
    )


def transaction_of(txn: transaction_pb2.Transaction, where: str) -> Transaction:
    """pylance's ``Transaction`` for a transaction message."""
    return Transaction(
        read_version=txn.read_version,
        operation=operation_of(txn, where),
        uuid=txn.uuid,
        transaction_properties=dict(txn.transaction_properties),
    )


def _version_number(value: object, name: str) -> int:
    """An int argument as pylance's binding takes it: anything with ``__index__`` (numpy ints,
    bools), not None, floats or strings."""
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentTypeError(
            f"argument {name!r}: {type(value).__name__!r} object cannot be interpreted as an integer"
        ) from None
    if number < 0:
        raise InvalidArgumentError(f"argument {name!r}: a negative number ({number}) is not allowed")
    return number


def read_transaction(storage: Storage, uri: str, version: int) -> Transaction | None:
    """The transaction that created ``version`` (None when it records none).

    Raises:
        DatasetNotFoundError: no such version (an ``OSError``, as pylance's).
    """
    wanted = _version_number(version, "version")
    entry = next((e for e in list_versions(storage, uri) if e.version == wanted), None)
    if entry is None:
        raise DatasetNotFoundError(f"{uri}: version {wanted} does not exist")
    message = read_transaction_message(storage, uri, entry.path)
    return None if message is None else transaction_of(message, entry.path)


def get_transactions(storage: Storage, uri: str, version: int, recent: int) -> list[Transaction | None]:
    """The transactions of ``version`` and the ones before it, newest first: ``recent`` of them
    (at least one, as pylance), fewer where an older version is missing (never written or
    cleaned up)."""
    wanted = _version_number(recent, "recent_transactions")
    paths = {e.version: e.path for e in list_versions(storage, uri)}
    out: list[Transaction | None] = []
    while version in paths:
        message = read_transaction_message(storage, uri, paths[version])
        out.append(None if message is None else transaction_of(message, paths[version]))
        if len(out) >= wanted:
            break
        version -= 1
    return out


__all__ = [
    "BaseOperation",
    "Clone",
    "CreateIndex",
    "DataFile",
    "DataReplacement",
    "DataReplacementGroup",
    "Index",
    "IndexFile",
    "Rewrite",
    "RewriteGroup",
    "RewrittenIndex",
    "UpdateConfig",
    "UpdateMap",
    "get_transactions",
    "read_transaction",
    "transaction_of",
]
