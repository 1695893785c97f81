"""The manifest's key-value maps: config, table metadata, schema metadata and field metadata.

Why one module: pylance 14 changes all four with one transaction operation, ``UpdateConfig``, each
map as an ``UpdateMap`` (entries ``key -> value``, a missing value deleting the key, or ``replace``
for the whole map). lance_fw writes the same transaction, so pylance's conflict resolver reads our
commits as its own, and rebases ours over concurrent commits by pylance's rules (``_check_concurrent``):
only the same config key, the same table-metadata key, any two schema-metadata updates, the same
field, or a schema metadata / field update under a concurrent overwrite, restore or ``Merge``
(``add_columns``) is a conflict; everything else (appends, deletes, compaction, other keys) rebases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from lance_fw._proto import file_pb2, table_pb2, transaction_pb2
from lance_fw.errors import (
    CorruptFileError,
    FieldNotFoundError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from lance_fw.io.storage import Storage
from lance_fw.query.column_paths import split_path
from lance_fw.table.flags import PLUGIN_ENCODINGS_KEY
from lance_fw.table.manifest import list_versions, read_transaction
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Operation, commit

#: ``file_pb2.Field.parent_id`` of a top-level field.
TOP_LEVEL_PARENT = -1
#: Transaction ``operation`` oneof names whose commit conflicts with a concurrent schema or field
#: metadata update (pylance 14: overwrite and restore replace the schema; a ``Merge`` must be replayed).
_SCHEMA_REPLACING = ("overwrite", "restore")
_SCHEMA_RECOMPUTING = ("merge",)

#: One update of a string map: (key, value), a None value deleting the key.
Entries = list[tuple[str, str | None]]


@dataclass(frozen=True)
class UpdateMap:
    """pylance's ``UpdateMap``: set/delete ``entries`` in a map, or (``replace``) make the map exactly
    the entries that have a value."""

    entries: Entries
    replace: bool = False

    def apply(self, target: MutableMapping, encode: bool = False) -> None:
        """Apply to ``target`` in place; ``encode``: the map stores bytes (schema and field metadata)."""
        if self.replace:
            target.clear()
        for key, value in self.entries:
            if value is not None:
                target[key] = value.encode() if encode else value
            elif not self.replace and key in target:
                del target[key]

    def to_proto(self, out: transaction_pb2.Transaction.UpdateMap) -> None:
        out.SetInParent()
        for key, value in self.entries:
            entry = out.update_entries.add(key=key)
            if value is not None:
                entry.value = value
        out.replace = self.replace


def _map_of(proto: transaction_pb2.Transaction.UpdateMap) -> UpdateMap:
    return UpdateMap(
        [(e.key, e.value if e.HasField("value") else None) for e in proto.update_entries], proto.replace
    )


@dataclass
class UpdateConfig(Operation):
    """One ``UpdateConfig`` transaction: any of the four maps (None / empty: left alone).

    ``storage``/``uri``/``read_version``: where to read the transactions committed since the update
    was planned, which decide whether it rebases (pylance's rules, see the module docstring)."""

    config: UpdateMap | None = None
    table_metadata: UpdateMap | None = None
    schema_metadata: UpdateMap | None = None
    field_metadata: dict[int, UpdateMap] = field(default_factory=dict)
    storage: Storage | None = None
    uri: str = ""
    read_version: int = 0

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        if base is None:
            raise IncompatibleTransactionError(f"{self.uri}: the dataset no longer exists")
        self._check_concurrent(base.version)
        if self.config is not None:
            self.config.apply(new.config)
            if PLUGIN_ENCODINGS_KEY in base.config:  # lance_fw's record survives a replace
                new.config[PLUGIN_ENCODINGS_KEY] = base.config[PLUGIN_ENCODINGS_KEY]
        if self.table_metadata is not None:
            self.table_metadata.apply(new.table_metadata)
        if self.schema_metadata is not None:
            self.schema_metadata.apply(new.schema_metadata, encode=True)
        by_id = {f.id: f for f in new.fields}
        for field_id, update in self.field_metadata.items():
            if field_id not in by_id:
                raise IncompatibleTransactionError(
                    f"{self.uri}: field id {field_id} was removed by a concurrent commit; "
                    "re-run update_field_metadata"
                )
            update.apply(by_id[field_id].metadata, encode=True)
        self._added = []

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        out = txn.update_config
        out.SetInParent()
        if self.config is not None:
            self.config.to_proto(out.config_updates)
        if self.table_metadata is not None:
            self.table_metadata.to_proto(out.table_metadata_updates)
        if self.schema_metadata is not None:
            self.schema_metadata.to_proto(out.schema_metadata_updates)
        for field_id, update in self.field_metadata.items():
            update.to_proto(out.field_metadata_updates[field_id])

    # -- rebasing ---------------------------------------------------------------------------
    def _check_concurrent(self, latest: int) -> None:
        """Raise ``IncompatibleTransactionError`` if a version committed after ``read_version`` (up to
        ``latest``) conflicts with this update; a version with no readable transaction conflicts only
        with schema or field metadata updates (its schema change cannot be ruled out)."""
        if latest <= self.read_version or self.storage is None:
            return
        touches_schema = self.schema_metadata is not None or bool(self.field_metadata)
        for entry in list_versions(self.storage, self.uri):
            if not self.read_version < entry.version <= latest:
                continue
            other = read_transaction(self.storage, self.uri, entry.path)
            kind = other.WhichOneof("operation") if other is not None else None
            if other is None or kind is None:
                clash = touches_schema
            elif kind == "update_config":
                clash = self._clashes_with(other.update_config)
            elif kind in _SCHEMA_REPLACING:
                upserts = set(other.overwrite.config_upsert_values) if kind == "overwrite" else set()
                clash = touches_schema or bool(upserts & self._config_keys())
            elif kind in _SCHEMA_RECOMPUTING:
                clash = touches_schema
            else:
                clash = False
            if clash:
                raise IncompatibleTransactionError(
                    f"{self.uri}: this UpdateConfig transaction is incompatible with the concurrent "
                    f"{kind or 'unknown'} transaction at version {entry.version}; re-read the dataset "
                    "and retry"
                )

    def _config_keys(self) -> set[str]:
        return {k for k, v in self.config.entries if v is not None} if self.config else set()

    def _clashes_with(self, other: transaction_pb2.Transaction.UpdateConfig) -> bool:
        mine_set = self._config_keys()
        mine_deleted = {k for k, v in self.config.entries if v is None} if self.config else set()
        theirs = _map_of(other.config_updates) if other.HasField("config_updates") else None
        theirs_set = {k for k, v in theirs.entries if v is not None} if theirs else set(other.upsert_values)
        theirs_deleted = {k for k, v in theirs.entries if v is None} if theirs else set(other.delete_keys)
        if mine_set & (theirs_set | theirs_deleted) or theirs_set & mine_deleted:
            return True
        if self.table_metadata is not None and other.HasField("table_metadata_updates"):
            theirs_md = _map_of(other.table_metadata_updates)
            if self.table_metadata.replace or theirs_md.replace:
                return True
            if {k for k, _ in self.table_metadata.entries} & {k for k, _ in theirs_md.entries}:
                return True
        other_schema = other.HasField("schema_metadata_updates") or len(other.schema_metadata) > 0
        if self.schema_metadata is not None and other_schema:
            return True
        other_fields = set(other.field_metadata_updates) | set(other.field_metadata)
        return bool(set(self.field_metadata) & other_fields)


# -- reading ---------------------------------------------------------------------------------
def schema_metadata(snapshot: Snapshot) -> dict[str, str]:
    """The schema metadata as strings (pylance's ``schema_metadata``); the manifest stores bytes."""
    return {
        k: _text(v, snapshot, f"schema metadata {k!r}") for k, v in snapshot.manifest.schema_metadata.items()
    }


def _text(value: bytes, snapshot: Snapshot, what: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(snapshot.uri, f"{what} is not UTF-8 text: {exc}") from exc


def field_paths(fields: Iterable[file_pb2.Field]) -> dict[tuple[str, ...], int]:
    """Every field's path (its name and its ancestors', top-level first) -> field id."""
    fields = list(fields)
    by_id = {f.id: f for f in fields}
    out: dict[tuple[str, ...], int] = {}
    for f in fields:
        path = [f.name]
        parent = f.parent_id
        while parent != TOP_LEVEL_PARENT and parent in by_id:
            path.append(by_id[parent].name)
            parent = by_id[parent].parent_id
        out[tuple(reversed(path))] = f.id
    return out


# -- argument checks (pylance raises TypeError for each) -------------------------------------
def _check_str(value: object, arg: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"argument {arg!r}: {type(value).__name__!r} object is not a str")
    return value


def _entries(values: object, arg: str) -> Entries:
    """``{key: str | None}`` checked as pylance checks it: a dict of string keys and string or None values."""
    if not isinstance(values, dict):
        raise InvalidArgumentTypeError(f"argument {arg!r}: {type(values).__name__!r} object is not a dict")
    return [(_check_str(k, arg), None if v is None else _check_str(v, arg)) for k, v in values.items()]


def _keys(keys: object, arg: str) -> list[str]:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise InvalidArgumentTypeError(
            f"argument {arg!r}: expected a list of str, got {type(keys).__name__!r}"
        )
    return [_check_str(k, arg) for k in keys]


# -- writing ---------------------------------------------------------------------------------
def _commit(snapshot: Snapshot, op: UpdateConfig) -> int:
    op.storage, op.uri, op.read_version = snapshot.storage, snapshot.uri, snapshot.version
    return commit(
        snapshot.storage, snapshot.uri, op, read_version=snapshot.version, commit_lock=snapshot.commit_lock
    )


def _check_not_managed(entries: Entries) -> Entries:
    """lance_fw's own config key (the plugins whose encodings the data files use) is never set or
    deleted by hand: without it pylance and lance_fw would take those files for readable."""
    if any(key == PLUGIN_ENCODINGS_KEY for key, _ in entries):
        raise InvalidArgumentError(
            f"config key {PLUGIN_ENCODINGS_KEY!r} is managed by lance_fw (it records the plugins whose "
            "encodings the data files use); it cannot be set or deleted"
        )
    return entries


def update_config(snapshot: Snapshot, values: Mapping[str, str | None], replace: bool = False) -> int:
    """Set (str) or delete (None) config keys, or (``replace``) make the config exactly ``values``'
    non-None entries (lance_fw's plugin record kept). One ``UpdateConfig`` commit; returns its version."""
    entries = _check_not_managed(_entries(values, "values"))
    return _commit(snapshot, UpdateConfig(config=UpdateMap(entries, bool(replace))))


def delete_config_keys(snapshot: Snapshot, keys: Sequence[str]) -> int:
    """Delete config keys (absent ones ignored): pylance commits a version even for no keys."""
    entries: Entries = [(k, None) for k in dict.fromkeys(_keys(keys, "keys"))]
    return _commit(snapshot, UpdateConfig(config=UpdateMap(_check_not_managed(entries))))


def update_table_metadata(snapshot: Snapshot, values: Mapping[str, str | None], replace: bool = False) -> int:
    """As ``update_config``, for the manifest's table metadata."""
    return _commit(
        snapshot, UpdateConfig(table_metadata=UpdateMap(_entries(values, "values"), bool(replace)))
    )


def update_schema_metadata(
    snapshot: Snapshot, values: Mapping[str, str | None], replace: bool = False
) -> int:
    """As ``update_config``, for the schema metadata."""
    return _commit(
        snapshot, UpdateConfig(schema_metadata=UpdateMap(_entries(values, "values"), bool(replace)))
    )


def update_field_metadata(
    snapshot: Snapshot, field_updates: Mapping[str, Mapping[str, str | None]], replace: bool = False
) -> int:
    """Field metadata by field path (``"s.x"``; backticks quote a name holding dots), each as
    ``update_config``. An unknown path raises ``FieldNotFoundError`` before anything is written."""
    if not isinstance(field_updates, dict):
        raise InvalidArgumentTypeError(
            f"argument 'field_updates': {type(field_updates).__name__!r} object is not a dict"
        )
    paths = field_paths(snapshot.manifest.fields)
    updates: dict[int, UpdateMap] = {}
    for path, values in field_updates.items():
        entries = _entries(values, "field_updates")
        _check_str(path, "field_updates")
        try:
            field_id = paths.get(tuple(split_path(path)))
        except InvalidArgumentError:  # an unbalanced backtick: no field has that path
            field_id = None
        if field_id is None:
            known = [".".join(p) for p in paths]  # pylance lists paths unquoted
            raise FieldNotFoundError(f"Field {path!r} not found.\nAvailable fields: {known}")
        updates[field_id] = UpdateMap(entries, bool(replace))
    return _commit(snapshot, UpdateConfig(field_metadata=updates))
