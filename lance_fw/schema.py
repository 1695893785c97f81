"""Lance schema <-> Arrow schema.

Lance stores a schema as a flat, pre-order list of ``lance.file.Field`` messages linked by
``parent_id``; each field carries a ``logical_type`` string (``int32``, ``timestamp:us:UTC``,
``fixed_size_list:float:8``, ``list.struct`` ...). This module converts both ways and keeps the
original protobuf of each field so unknown fields written by other writers survive a rewrite.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa

from lance_fw._proto import file_pb2
from lance_fw.errors import SchemaError
from lance_fw.schema_json import DATE_TYPES, SIMPLE_TYPES
from lance_fw.schema_json import json_to_schema as json_to_schema  # pylance's lance.schema names
from lance_fw.schema_json import schema_to_json as schema_to_json

_BatchOrTable = TypeVar("_BatchOrTable", pa.RecordBatch, pa.Table)

# lance.file.Field.Encoding values pylance still writes (legacy, but readers of old files use them).
#: ``Field.encoding`` of the 0.1 (legacy) file format, written on every field as pylance does
_ENC_NONE, _ENC_PLAIN = file_pb2.NONE, file_pb2.PLAIN
_ENC_VAR_BINARY, _ENC_DICTIONARY = file_pb2.VAR_BINARY, file_pb2.DICTIONARY

#: Logical type names of parameterless types, as field protos store them.
_SIMPLE: dict[str, pa.DataType] = {**SIMPLE_TYPES, **DATE_TYPES}
_SIMPLE_NAMES = {str(t): name for name, t in _SIMPLE.items()}
#: Types whose logical type is ``<name>:<unit>``: the constructor from the unit, and the Arrow class.
_UNIT_TYPES: dict[str, tuple[Callable[[str], pa.DataType], type[pa.DataType]]] = {
    "time32": (pa.time32, pa.Time32Type),
    "time64": (pa.time64, pa.Time64Type),
    "duration": (pa.duration, pa.DurationType),
}


@dataclass
class LanceField:
    """One node of a Lance schema tree. ``pb`` keeps the message this field was read from."""

    name: str
    id: int
    logical_type: str
    nullable: bool = True
    metadata: dict[str, bytes] = field(default_factory=dict)
    children: list[LanceField] = field(default_factory=list)
    pb: file_pb2.Field | None = None

    # -- structure ------------------------------------------------------------------------
    @property
    def is_struct(self) -> bool:
        return self.logical_type == "struct"

    @property
    def is_list(self) -> bool:
        return self.logical_type in ("list", "large_list", "list.struct", "large_list.struct")

    @property
    def is_map(self) -> bool:
        return self.logical_type == "map"

    @property
    def is_packed(self) -> bool:
        """A struct stored row by row in one column: its metadata says so under either key pylance
        reads (``lance-encoding:packed`` or the older ``packed``)."""
        return self.is_struct and any(self.metadata.get(key, b"").lower() == b"true" for key in PACKED_KEYS)

    @property
    def is_blob_v2(self) -> bool:
        """A 2.2 blob column: stored as one column of descriptors (bytes live elsewhere)."""
        return self.logical_type == "struct" and self.metadata.get(EXTENSION_KEY) == BLOB_V2.encode()

    def walk(self) -> Iterator[LanceField]:
        """Pre-order walk: the order of field ids and of 2.0 columns."""
        yield self
        for child in self.children:
            yield from child.walk()

    # -- arrow ----------------------------------------------------------------------------
    def arrow_type(self) -> pa.DataType:
        return _arrow_type(self)

    def to_arrow(self) -> pa.Field:
        md = {k.encode(): v for k, v in self.metadata.items()} or None
        if self.is_blob_v2:  # what pylance returns for a blob column: its descriptors
            md = {BLOB_ENCODING_KEY.encode(): b"true", PACKED_KEY.encode(): b"true"}
        out = pa.field(self.name, self.arrow_type(), self.nullable, metadata=md)
        return _with_extension(out) if md and EXTENSION_KEY.encode() in md else out


#: Field metadata that makes pylance store a column as a blob (its bytes apart from the column)
BLOB_ENCODING_KEY = "lance-encoding:blob"
#: Field metadata asking for a struct of fixed-width fields stored row by row in one column
PACKED_KEY = "lance-encoding:packed"
#: Every key pylance 14 takes as that request (``packed`` is the older spelling, still honoured)
PACKED_KEYS = (PACKED_KEY, "packed")
EXTENSION_KEY = "ARROW:extension:name"
#: The serialised parameters of an Arrow extension type, stored next to its name (as pylance does)
EXTENSION_METADATA_KEY = "ARROW:extension:metadata"


@functools.lru_cache(maxsize=4096)
def _with_extension(field: pa.Field) -> pa.Field:
    """``field`` (a storage type tagged with an extension name in its metadata) as the registered
    extension type, the tags moved into the type, as Arrow IPC reads such a field back; unchanged
    when no such extension type is registered (the storage type and tags are what pylance gives
    then too). Cached: scans build their batch schema often."""
    return pa.ipc.read_schema(pa.schema([field]).serialize()).field(0)


def _extension_tagged(field: pa.Field) -> pa.Field:
    """An extension-typed Arrow field as Lance stores it: the storage type, with the extension's
    name and serialised parameters in the field metadata."""
    t = field.type
    if not isinstance(t, pa.BaseExtensionType):
        return field
    md = dict(field.metadata or {})
    md[EXTENSION_KEY.encode()] = t.extension_name.encode()
    md[EXTENSION_METADATA_KEY.encode()] = t.__arrow_ext_serialize__()
    return pa.field(field.name, t.storage_type, field.nullable, metadata=md)


BLOB_V2 = "lance.blob.v2"
#: What users write into a blob v2 column (the ``lance.blob.v2`` extension type's storage): inline
#: bytes, or an external uri with an optional range.
BLOB_STORAGE = pa.struct(
    [
        pa.field("data", pa.large_binary(), nullable=True),
        pa.field("uri", pa.utf8(), nullable=True),
        pa.field("position", pa.uint64(), nullable=True),
        pa.field("size", pa.uint64(), nullable=True),
    ]
)
#: The descriptor of one 2.2 blob: inline (kind 0) or in a sidecar file (kind 1, ``blob_id``).
BLOB_DESCRIPTOR = pa.struct(
    [
        pa.field("kind", pa.uint8(), False),
        pa.field("position", pa.uint64(), False),
        pa.field("size", pa.uint64(), False),
        pa.field("blob_id", pa.uint32(), False),
        pa.field("blob_uri", pa.string(), False),
    ]
)


def blob_v2_type() -> pa.DataType:
    """The ``lance.blob.v2`` extension type as registered (``lance_fw.blob.BlobType``, registered
    when ``lance_fw`` is imported; pylance's class where pylance registered it first), read back
    through Arrow IPC as any such field is: the kernel names the type without importing the façade."""
    tagged = pa.field("blob", BLOB_STORAGE, metadata={EXTENSION_KEY.encode(): BLOB_V2.encode()})
    return _with_extension(tagged).type


def _arrow_type(f: LanceField) -> pa.DataType:
    lt = f.logical_type
    if lt in _SIMPLE:
        return _SIMPLE[lt]
    if f.is_blob_v2:
        return BLOB_DESCRIPTOR
    if lt == "struct":
        return pa.struct([c.to_arrow() for c in f.children])
    if f.is_list:
        if len(f.children) != 1:
            raise SchemaError(f"list field {f.name!r} must have exactly one child")
        item = f.children[0].to_arrow()
        return pa.large_list(item) if lt.startswith("large_") else pa.list_(item)
    if lt == "map":
        entries = f.children[0]
        key, value = entries.children
        return pa.map_(key.to_arrow(), value.to_arrow())
    try:
        return _leaf_arrow_type(lt)
    except _UnknownLogicalType as exc:
        raise SchemaError(f"field {f.name!r}: {exc}") from exc.__cause__


class _UnknownLogicalType(ValueError):
    """A logical type string that names no Arrow type (``_leaf_arrow_type``)."""


@functools.lru_cache(maxsize=1024)
def _leaf_arrow_type(lt: str) -> pa.DataType:
    """The Arrow type of a logical type that depends on its string alone (not on children or
    metadata). Kept per string: a scan asks for each column's type on every batch, and building a
    vector column's ``fixed_size_list`` type took ~30 us (4% of a 2.0 scan of all columns)."""
    head, _, rest = lt.partition(":")
    parts = rest.split(":") if rest else []
    try:
        if head == "fixed_size_binary":
            return pa.binary(int(parts[0]))
        if head == "decimal":
            bits, precision, scale = (int(p) for p in parts)
            return (pa.decimal128 if bits == 128 else pa.decimal256)(precision, scale)
        if head == "timestamp":
            unit, tz = parts[0], ":".join(parts[1:])
            return pa.timestamp(unit, None if tz in ("-", "") else tz)
        if head in _UNIT_TYPES:
            return _UNIT_TYPES[head][0](parts[0])
        if head == "fixed_size_list":
            inner, _, size = rest.rpartition(":")
            return pa.list_(pa.field("item", _arrow_type(LanceField("item", -1, inner))), int(size))
        if head == "dict":
            value_lt, index_lt, ordered = rest.rsplit(":", 2)
            value_t = _arrow_type(LanceField("v", -1, value_lt))
            index_t = _arrow_type(LanceField("i", -1, index_lt))
            return pa.dictionary(index_t, value_t, ordered == "true")
    except (ValueError, IndexError, pa.ArrowInvalid, SchemaError) as exc:
        raise _UnknownLogicalType(f"bad logical type {lt!r}") from exc
    raise _UnknownLogicalType(f"unsupported logical type {lt!r}")


def logical_type_of(t: pa.DataType) -> str:
    """The Lance logical type string of an Arrow type (children are separate fields); an
    extension type is stored as its storage type."""
    if isinstance(t, pa.BaseExtensionType):
        return logical_type_of(t.storage_type)
    name = _SIMPLE_NAMES.get(str(t))
    if name is not None and not pa.types.is_dictionary(t):
        return name
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        base = "large_list" if pa.types.is_large_list(t) else "list"
        return base + ".struct" if pa.types.is_struct(t.value_type) else base
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list:{logical_type_of(t.value_type)}:{t.list_size}"
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return f"fixed_size_binary:{t.byte_width}"
    if pa.types.is_decimal(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz or '-'}"
    for unit_name, (_, unit_type) in _UNIT_TYPES.items():
        if isinstance(t, unit_type):
            return f"{unit_name}:{t.unit}"
    if pa.types.is_dictionary(t):
        if pa.types.is_nested(t.value_type) or pa.types.is_dictionary(t.value_type):
            raise SchemaError(
                f"Arrow type {t} cannot be stored in Lance: a dictionary's values must be a "
                "primitive, string or binary type (pylance refuses it too)"
            )
        ordered = "true" if t.ordered else "false"
        return f"dict:{logical_type_of(t.value_type)}:{logical_type_of(t.index_type)}:{ordered}"
    raise SchemaError(f"Arrow type {t} cannot be stored in Lance")


def _children_of(t: pa.DataType) -> list[pa.Field]:
    if isinstance(t, pa.BaseExtensionType):
        return _children_of(t.storage_type)
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        entries = pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False)
        return [entries]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    return []


@dataclass
class LanceSchema:
    """A Lance schema: top-level fields plus the Arrow schema metadata."""

    fields: list[LanceField]
    metadata: dict[str, bytes] = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_arrow(cls, schema: pa.Schema, first_id: int = 0) -> LanceSchema:
        """Assign ids in pre-order, starting at ``first_id``."""
        counter = iter(range(first_id, first_id + 1_000_000))

        def convert(af: pa.Field) -> LanceField:
            af = _extension_tagged(af)
            lf = LanceField(
                af.name,
                next(counter),
                logical_type_of(af.type),
                af.nullable,
                {k.decode(): v for k, v in (af.metadata or {}).items()},
            )
            lf.children = [convert(c) for c in _children_of(af.type)]
            return lf

        md = {k.decode(): v for k, v in (schema.metadata or {}).items()}
        out = cls([convert(f) for f in schema], md)
        check_names(out.fields)
        return out

    @classmethod
    def from_protos(
        cls, pbs: Iterable[file_pb2.Field], metadata: Mapping[str, bytes] | None = None
    ) -> LanceSchema:
        """Rebuild the tree from a flat pre-order list linked by ``parent_id``."""
        by_id: dict[int, LanceField] = {}
        roots: list[LanceField] = []
        for pb in pbs:
            lf = LanceField(pb.name, pb.id, pb.logical_type, pb.nullable, dict(pb.metadata), [], pb)
            by_id[pb.id] = lf
            if pb.parent_id < 0:
                roots.append(lf)
            elif pb.parent_id in by_id:
                by_id[pb.parent_id].children.append(lf)
            else:
                raise SchemaError(f"field {pb.name!r} (id {pb.id}) names unknown parent {pb.parent_id}")
        return cls(roots, dict(metadata or {}))

    # -- views ----------------------------------------------------------------------------
    def walk(self) -> Iterator[LanceField]:
        for f in self.fields:
            yield from f.walk()

    def max_field_id(self) -> int:
        return max((f.id for f in self.walk()), default=-1)

    def field(self, name: str) -> LanceField:
        """Top-level field by name, or a nested one by dotted path."""
        head, _, rest = name.partition(".")
        for f in self.fields:
            if f.name == name:
                return f
        for f in self.fields:
            if f.name == head and rest:
                return LanceSchema(f.children).field(rest)
        raise SchemaError(f"no field named {name!r}; the schema has {[f.name for f in self.fields]}")

    def project(self, names: list[str]) -> LanceSchema:
        return LanceSchema([self.field(n) for n in names], self.metadata)

    def to_arrow(self) -> pa.Schema:
        md = {k.encode(): v for k, v in self.metadata.items()} or None
        return pa.schema([f.to_arrow() for f in self.fields], metadata=md)

    def to_protos(self) -> list[file_pb2.Field]:
        """Pre-order ``lance.file.Field`` list, keeping whatever the original messages held."""
        out = []

        def emit(f: LanceField, parent: int) -> None:
            pb = file_pb2.Field()
            if f.pb is not None:
                pb.CopyFrom(f.pb)
            pb.name, pb.id, pb.parent_id = f.name, f.id, parent
            pb.logical_type, pb.nullable = f.logical_type, f.nullable
            pb.type = file_pb2.Field.PARENT  # pylance writes PARENT (0) on every field
            if f.pb is None:
                pb.encoding = _legacy_encoding(f.logical_type)
                if f.logical_type.startswith("dict:"):
                    pb.dictionary.SetInParent()
                _set_unenforced_keys(pb, f.metadata)
            pb.metadata.clear()
            for k, v in f.metadata.items():
                pb.metadata[k] = v
            out.append(pb)
            for c in f.children:
                emit(c, f.id)

        for f in self.fields:
            emit(f, -1)
        return out


#: Field metadata keys by which a writer marks the unenforced primary / clustering key (pylance's)
PRIMARY_KEY_KEY = "lance-schema:unenforced-primary-key"
PRIMARY_KEY_POSITION_KEY = "lance-schema:unenforced-primary-key:position"
CLUSTERING_KEY_POSITION_KEY = "lance-schema:unenforced-clustering-key:position"


def _set_unenforced_keys(pb: file_pb2.Field, metadata: Mapping[str, bytes | str]) -> None:
    """Record the key markers of a new field's metadata in its message, as pylance's writer does
    (readers take the key from the message, not the metadata)."""

    def text(key: str) -> str:
        value = metadata.get(key, "")
        return (value.decode("utf-8", "replace") if isinstance(value, bytes) else value).strip()

    def position(key: str) -> int:
        raw = text(key)
        if not raw:
            return 0
        try:
            return int(raw)
        except ValueError:
            raise SchemaError(f"field {pb.name!r}: metadata {key}={raw!r} is not an integer") from None

    pb.unenforced_primary_key = text(PRIMARY_KEY_KEY).lower() == "true"
    pb.unenforced_primary_key_position = position(PRIMARY_KEY_POSITION_KEY)
    pb.unenforced_clustering_key_position = position(CLUSTERING_KEY_POSITION_KEY)


def check_names(fields: list[LanceField], parent: str = "") -> None:
    """Names a new schema may store: no two siblings alike, and no '.' in a top-level name
    (pylance reads ``a.b`` as field ``b`` of struct ``a``; it refuses to write such a column, and
    cannot scan one). A '.' inside a nested name is fine, as in pylance."""
    seen: set[str] = set()
    for f in fields:
        where = f"{parent}.{f.name}" if parent else f.name
        if not parent and "." in f.name:
            raise SchemaError(
                f"top-level field {f.name!r} cannot contain '.': a dotted name means a nested "
                "field; use a struct column"
            )
        if f.name in seen:
            raise SchemaError(f"duplicate field name {where!r} in the schema")
        seen.add(f.name)
        check_names(f.children, where)


def _legacy_encoding(logical_type: str) -> file_pb2.Encoding:
    if logical_type in ("struct", "null"):
        return _ENC_NONE
    if logical_type in ("string", "large_string", "binary", "large_binary"):
        return _ENC_VAR_BINARY
    if logical_type.startswith("dict:"):
        return _ENC_DICTIONARY
    return _ENC_PLAIN


def _requires_values(f: pa.Field) -> bool:
    """Whether ``f`` or a field nested in it is declared non-nullable (so its data needs a look)."""
    children = [f.type.value_field] if pa.types.is_fixed_size_list(f.type) else _children_of(f.type)
    return not f.nullable or any(_requires_values(c) for c in children)


def _nested_values(array: pa.Array, f: pa.Field) -> list[tuple[pa.Field, pa.Array]]:
    """Each child field of ``f`` with its values at the positions where ``array`` is valid: a null
    under a null parent is no value at all, and is allowed (as pylance allows it)."""
    t = f.type
    if pa.types.is_struct(t):
        children = array.flatten()  # applies the slice offset (and the parent's validity)
        if array.null_count:
            valid = array.is_valid()
            children = [c.filter(valid) for c in children]
        return [(t.field(i), children[i]) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [(t.key_field, array.keys), (t.item_field, array.items)]
    if pa.types.is_fixed_size_list(t):  # every slot counts, also under a null list (as pylance checks)
        return [(t.value_field, array.values.slice(array.offset * t.list_size, len(array) * t.list_size))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [(t.value_field, array.flatten())]  # values of null lists are skipped
    return []


def check_nullability(array: pa.Array | pa.ChunkedArray, f: pa.Field, what: str, path: str = "") -> None:
    """A null in a field declared non-nullable (at any depth, under a valid parent) is refused:
    pylance refuses it, and readers rely on the declaration."""
    path = f"{path}.{f.name}" if path else f.name
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        if not f.nullable and chunk.null_count:
            raise SchemaError(
                f"{what}: field {path!r} is declared non-nullable but contains {chunk.null_count} "
                "null value(s)"
            )
        for child_field, values in _nested_values(chunk, f):
            if _requires_values(child_field):
                check_nullability(values, child_field, what, path)


def conform(data: _BatchOrTable, target: pa.Schema, what: str = "data") -> _BatchOrTable:
    """Cast a RecordBatch or Table to ``target`` column by column (by name): the one place data
    meets a stored schema (writes, Spark batches, merge_insert sources). A column that is missing
    or cannot be cast, or that holds nulls where ``target`` allows none, is a ``SchemaError``
    naming it."""
    if data.schema.equals(target):
        _check_target_nullability(data, target, what)
        return data
    arrays = []
    for f in target:
        try:
            column = data.column(f.name)
        except KeyError:
            raise SchemaError(
                f"{what}: column {f.name!r} is missing; the data has {data.schema.names}"
            ) from None
        if not column.type.equals(f.type) and _same_extension(column.type, f.type):
            column = _rewrap(column, f.type)  # lance_fw's and pylance's classes of one extension
        if not column.type.equals(f.type):
            try:
                column = column.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
                raise SchemaError(
                    f"{what}: column {f.name!r} is {column.type} and cannot be stored as {f.type}: {exc}"
                ) from None
        arrays.append(column)
    out = (pa.RecordBatch if isinstance(data, pa.RecordBatch) else pa.Table).from_arrays(
        arrays, schema=target
    )
    _check_target_nullability(out, target, what)
    return out


def _same_extension(a: pa.DataType, b: pa.DataType) -> bool:
    return (
        isinstance(a, pa.BaseExtensionType)
        and isinstance(b, pa.BaseExtensionType)
        and a.extension_name == b.extension_name
        and a.storage_type.equals(b.storage_type)
        and a.__arrow_ext_serialize__() == b.__arrow_ext_serialize__()
    )


def _rewrap(column: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([pa.ExtensionArray.from_storage(t, c.storage) for c in column.chunks], t)
    return pa.ExtensionArray.from_storage(t, column.storage)


def storage_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every extension-typed column as its storage array: what encoders write."""
    if not any(isinstance(t, pa.BaseExtensionType) for t in batch.schema.types):
        return batch
    arrays = [c.storage if isinstance(c.type, pa.BaseExtensionType) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def _check_target_nullability(data: pa.RecordBatch | pa.Table, target: pa.Schema, what: str) -> None:
    for i, f in enumerate(target):
        if _requires_values(f):
            check_nullability(data.column(i), f, what)
