"""``LanceDataset.commit`` of the operations a driver builds from its workers' fragments beyond
``Append``/``Overwrite``/``Merge``/``Delete``: a hand-built ``Update`` (from
``LanceFragment.update_columns`` or ``delete_rows``), ``Rewrite`` (a compaction done by hand),
``DataReplacement`` and ``UpdateConfig``, as the table layer's operations.

Why a module of its own: each needs more than its fields (the fragments as they were at the read
version, file sizes from storage), and ``api/distributed.py`` keeps the write side's own classes.
"""

from __future__ import annotations

from typing import Any

from lance_fw._proto import table_pb2
from lance_fw.api.distributed import FragmentMetadata, _messages
from lance_fw.api.transactions import DataFile, DataReplacement, Rewrite, UpdateConfig, UpdateMap
from lance_fw.errors import (
    FieldNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedFeatureError,
)
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table import metadata as table_metadata
from lance_fw.table import transaction
from lance_fw.table.fragment_ops import UPDATE_MODES, CallerRewrite, FragmentsUpdate, planned_states
from lance_fw.table.fragment_ops import DataReplacement as ReplaceFiles
from lance_fw.table.merge_insert import UpdateOperation
from lance_fw.table.paths import DATA_DIR


def _read_manifest(storage: Storage, uri: str, read_version: int | None, what: str) -> table_pb2.Manifest:
    if read_version is None:
        raise InvalidArgumentError(f"LanceDataset.commit: {what} needs the read_version it was made from")
    return transaction.latest_manifest(storage, uri, read_version)[0]


def _update(
    op: UpdateOperation, uri: str, storage: Storage, read_version: int | None, props: dict
) -> FragmentsUpdate:
    """A hand-built ``Update``: the fragments it replaces or removes must be as they were at
    ``read_version`` when it commits (else a conflict)."""
    if op.updated_fragment_offsets:
        raise UnsupportedFeatureError(
            "LanceDataset.commit: an Update with updated_fragment_offsets (per-row versions of "
            "stable row ids) is not supported yet"
        )
    if op.update_mode not in UPDATE_MODES:
        raise InvalidArgumentError(f"LanceOperation.Update: unknown update_mode {op.update_mode!r}")
    updated = _messages(op.updated_fragments)
    removed = [int(i) for i in op.removed_fragment_ids]
    read = _read_manifest(storage, uri, read_version, "an Update")
    return FragmentsUpdate(
        fragments=_messages(op.new_fragments),
        properties=props,
        updated=updated,
        expected=planned_states(read, [f.id for f in updated] + removed, "LanceOperation.Update"),
        fields_modified=[int(i) for i in op.fields_modified],
        removed=removed,
        update_mode=UPDATE_MODES[op.update_mode],
        fields_for_preserving_frag_bitmap=[int(i) for i in op.fields_for_preserving_frag_bitmap],
    )


def _rewrite(op: Rewrite, props: dict) -> CallerRewrite:
    if list(op.rewritten_indices or []):
        raise UnsupportedFeatureError(
            "LanceOperation.Rewrite with rewritten_indices (remapped index files) is not supported yet"
        )
    groups = [(_messages(list(g.old_fragments)), _messages(list(g.new_fragments))) for g in op.groups]
    for old, _ in groups:
        if not old:
            raise InvalidArgumentError("LanceOperation.RewriteGroup: old_fragments is empty")
    return CallerRewrite(groups=groups, properties=props)


def _data_file(given: Any, storage: Storage, uri: str) -> table_pb2.DataFile:
    """A ``DataFile`` (lance_fw's, pylance's shape, or the proto) as the proto; an unknown size is
    read from storage, as pylance records it."""
    if isinstance(given, table_pb2.DataFile):
        out = table_pb2.DataFile()
        out.CopyFrom(given)
    elif isinstance(given, DataFile) or hasattr(given, "fields"):
        path = getattr(given, "path", None)
        path = path() if callable(path) else path
        if path is None:
            path = getattr(given, "_path", None)
        if given.base_id if hasattr(given, "base_id") else None:
            raise UnsupportedFeatureError("DataReplacement: a data file in another base is not supported")
        out = table_pb2.DataFile(
            path=str(path),
            fields=[int(i) for i in given.fields],
            column_indices=[int(i) for i in (given.column_indices or [])],
            file_major_version=int(given.file_major_version),
            file_minor_version=int(given.file_minor_version),
            file_size_bytes=int(given.file_size_bytes or 0),
        )
    else:
        raise InvalidArgumentTypeError(
            f"DataReplacementGroup.new_file must be a DataFile, not {type(given).__name__}"
        )
    if not out.file_size_bytes:
        with storage.open_reader(join_uri(uri, DATA_DIR, out.path)) as reader:
            out.file_size_bytes = reader.size()
    return out


def _replacement(op: DataReplacement, uri: str, storage: Storage, props: dict) -> ReplaceFiles:
    pairs = [(int(g.fragment_id), _data_file(g.new_file, storage, uri)) for g in op.replacements]
    return ReplaceFiles(replacements=pairs, properties=props)


def _map(given: UpdateMap | None, what: str) -> table_metadata.UpdateMap | None:
    if given is None:
        return None
    if not isinstance(getattr(given, "updates", None), dict):
        raise InvalidArgumentTypeError(f"UpdateConfig.{what} must be a LanceOperation.UpdateMap")
    return table_metadata.UpdateMap(list(given.updates.items()), bool(given.replace))


def _update_config(
    op: UpdateConfig, uri: str, storage: Storage, read_version: int | None, props: dict
) -> table_metadata.UpdateConfig:
    fields = {int(k): _map(v, "field_metadata_updates") for k, v in (op.field_metadata_updates or {}).items()}
    read = transaction.latest_manifest(storage, uri, read_version)[0]
    known = {f.id for f in read.fields}
    for field_id in fields:
        if field_id not in known:
            raise FieldNotFoundError(f"Invalid user input: Field with id {field_id} does not exist")
    return table_metadata.UpdateConfig(
        properties=props,
        config=_map(op.config_updates, "config_updates"),
        table_metadata=_map(op.table_metadata_updates, "table_metadata_updates"),
        schema_metadata=_map(op.schema_metadata_updates, "schema_metadata_updates"),
        field_metadata={k: v for k, v in fields.items() if v is not None},
        storage=storage,
        uri=uri,
        read_version=read.version,
    )


def table_operation(
    operation: object, uri: str, storage: Storage, read_version: int | None, props: dict
) -> transaction.Operation | None:
    """The table layer's operation for ``operation`` (None: not one of these kinds)."""
    if isinstance(operation, UpdateOperation):
        return _update(operation, uri, storage, read_version, props)
    if isinstance(operation, Rewrite):
        return _rewrite(operation, props)
    if isinstance(operation, DataReplacement):
        return _replacement(operation, uri, storage, props)
    if isinstance(operation, UpdateConfig):
        return _update_config(operation, uri, storage, read_version, props)
    return None


__all__ = ["FragmentMetadata", "table_operation"]
