"""pylance's ``lance.schema.schema_to_json`` / ``json_to_schema``: an Arrow schema as a JSON-able dict.

The form (pylance 14, checked type by type against it): ``{"fields": [field, ...], "metadata": {..}}``
where a field is ``{"name", "type": {"type": str, "fields"?: [field], "length"?: int}, "nullable",
"metadata"?}``. The type string of a scalar type is its Lance logical type (``int32``, ``halffloat``,
``timestamp:us:UTC``, ``decimal:128:10:2``, ``dict:string:int32:false``); ``list`` / ``large_list`` /
``fixed_size_list`` / ``struct`` carry their children in ``fields``, ``fixed_size_list`` /
``fixed_size_binary`` their size in ``length``. ``metadata`` keys are left out when empty. An
extension type is written as its storage type plus the ``ARROW:extension:*`` field metadata an Arrow
C export carries, and read back through Arrow IPC, so registered extension types come back.

Why it refuses what it refuses: pylance 14 has no JSON form for views, maps, unions, run-end encoded
arrays, intervals, decimal32/64, list views, nor for dictionaries whose value type's logical type
has a ``:`` in it (``dict:timestamp:us:-:int32:false`` does not parse back). Those raise
``SchemaError`` (a ``ValueError``, as pylance's ``ValueError``) naming the type, never another JSON.
"""

from __future__ import annotations

import ctypes
import json
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lance_fw.errors import SchemaError

#: The arrow-rs time units of a logical type string, as pyarrow names them.
_UNITS = ("s", "ms", "us", "ns")
_TIME32_UNITS = ("s", "ms")
_TIME64_UNITS = ("us", "ns")
#: Logical type name of a type that has no parameters (and of a dictionary's value or index type).
#: The manifest's field protos and the JSON schema share these names (``lance_fw.schema`` reads them).
SIMPLE_TYPES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "halffloat": pa.float16(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "large_string": pa.large_string(),
    "large_binary": pa.large_binary(),
}
#: Date types, whose logical names carry their unit.
DATE_TYPES: dict[str, pa.DataType] = {"date32:day": pa.date32(), "date64:ms": pa.date64()}
_NAME_OF = {t: name for name, t in {**SIMPLE_TYPES, **DATE_TYPES}.items()}
#: Decimal widths (bits) pylance 14 writes and reads.
_DECIMAL_WIDTHS = {"128": pa.decimal128, "256": pa.decimal256}
#: The largest ``length`` an Arrow fixed-size type holds (an i32).
_MAX_LENGTH = 2**31 - 1
#: A timestamp without a time zone: its logical type says ``-``.
_NO_TZ = "-"
_EXTENSION_NAME = "ARROW:extension:name"
_UNSIGNED = re.compile(r"\+?[0-9]+")
_SIGNED = re.compile(r"[+-]?[0-9]+")


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """The JSON-able dict of ``schema`` (pylance's form); ``SchemaError`` names a type it lacks."""
    out: dict[str, Any] = {"fields": [_field_json(f) for f in schema]}
    metadata = _text_metadata(schema.metadata, "schema metadata")
    if metadata:
        out["metadata"] = metadata
    return out


def json_to_schema(schema_json: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of ``schema_json`` (pylance's form); ``SchemaError`` says what is wrong."""
    data = json.loads(json.dumps(schema_json))  # what pylance parses: its JSON text
    if not isinstance(data, dict):
        raise SchemaError(f"Failed to convert json to schema: expected an object, got {data!r}")
    fields = _required(data, "fields", list, "schema")
    metadata = _metadata(data.get("metadata"), "schema")
    storage = pa.schema([_json_field(f) for f in fields], metadata=metadata or None)
    try:  # extension metadata -> registered extension types, as an Arrow C import does
        return pa.ipc.read_schema(pa.py_buffer(storage.serialize()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(f"Failed to convert json to schema: {exc}") from None


# -- Arrow -> JSON ------------------------------------------------------------------------------
def _field_json(field: pa.Field) -> dict[str, Any]:
    t = field.type
    metadata = _text_metadata(field.metadata, f"field {field.name!r} metadata")
    if isinstance(t, pa.BaseExtensionType):
        metadata = {**metadata, **_exported_metadata(field)}
        t = t.storage_type
    out: dict[str, Any] = {"name": field.name, "type": _type_json(t), "nullable": field.nullable}
    if metadata:
        out["metadata"] = metadata
    return out


def _type_json(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        name = "list" if pa.types.is_list(t) else "large_list"
        return {"type": name, "fields": [_field_json(t.value_field)]}
    if pa.types.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "fields": [_field_json(t.value_field)], "length": t.list_size}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed_size_binary", "length": t.byte_width}
    return {"type": _logical_type(t)}


def _logical_type(t: pa.DataType) -> str:
    if t in _NAME_OF:
        return _NAME_OF[t]
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return f"{'time32' if pa.types.is_time32(t) else 'time64'}:{t.unit}"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz if t.tz else _NO_TZ}"
    if pa.types.is_duration(t):
        return f"duration:{t.unit}"
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_dictionary(t):
        if t.value_type not in _NAME_OF or ":" in _NAME_OF[t.value_type]:
            raise SchemaError(
                f"Failed to convert schema to json: Cannot encode dictionary type {t}: its value "
                f"type {t.value_type} has no one-word logical type, so the logical type does not parse back"
            )
        # pylance writes ``false`` whatever the dictionary's ordering
        return f"dict:{_NAME_OF[t.value_type]}:{_NAME_OF[t.index_type]}:false"
    raise SchemaError(f"Failed to convert schema to json: Json conversion: Unsupported type: {t}")


def _text_metadata(metadata: Mapping[bytes, bytes] | None, what: str) -> dict[str, str]:
    try:
        return {k.decode(): v.decode() for k, v in (metadata or {}).items()}
    except UnicodeDecodeError as exc:
        raise SchemaError(f"Failed to convert schema to json: {what} is not UTF-8: {exc}") from None


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ``struct ArrowSchema`` (only ``metadata`` is read)."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


def _exported_metadata(field: pa.Field) -> dict[str, str]:
    """The field metadata an Arrow C export of ``field`` carries: for an extension type, its name
    and serialized parameters, which pyarrow exposes no other way for its C++ extension types (and
    which is what pylance sees, as it takes the schema through the C interface)."""
    capsule = field.__arrow_c_schema__()
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = _ArrowSchema.from_address(get_pointer(capsule, b"arrow_schema")).metadata
    if not address:
        return {}
    # C interface metadata: int32 count, then per pair int32 length + bytes of key and of value
    pos, out = 4, {}
    count = int.from_bytes(ctypes.string_at(address, 4), "little", signed=True)
    for _ in range(count):
        pair = []
        for _part in range(2):
            size = int.from_bytes(ctypes.string_at(address + pos, 4), "little", signed=True)
            pair.append(ctypes.string_at(address + pos + 4, size).decode())
            pos += 4 + size
        out[pair[0]] = pair[1]
    del capsule  # releases the exported struct only after its bytes were copied
    return out


# -- JSON -> Arrow ------------------------------------------------------------------------------
def _required(obj: dict[str, Any], key: str, kind: type, what: str) -> Any:
    if key not in obj:
        raise SchemaError(f"Failed to convert json to schema: missing field `{key}` in {what}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SchemaError(
            f"Failed to convert json to schema: {what}: `{key}` must be a {kind.__name__}, got {value!r}"
        )
    return value


def _metadata(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SchemaError(
            f"Failed to convert json to schema: {what} metadata must map strings to strings, got {value!r}"
        )
    return dict(value)


def _json_field(obj: Any) -> pa.Field:
    if not isinstance(obj, dict):
        raise SchemaError(f"Failed to convert json to schema: a field must be an object, got {obj!r}")
    name = _required(obj, "name", str, "a field")
    what = f"field {name!r}"
    t = _json_type(_required(obj, "type", dict, what), what)
    nullable = _required(obj, "nullable", bool, what)
    field = pa.field(name, t, metadata=_metadata(obj.get("metadata"), what) or None)
    return field.with_nullable(nullable)  # not pa.field(nullable=): that refuses a non-null ``null``


def _json_type(obj: dict[str, Any], what: str) -> pa.DataType:
    name = _required(obj, "type", str, what)
    if name in SIMPLE_TYPES or name in DATE_TYPES:
        return {**SIMPLE_TYPES, **DATE_TYPES}[name]
    if name.split(":")[0] in ("time32", "time64", "timestamp", "duration", "dict", "decimal"):
        return _parse_logical(name, what)
    if name in ("list", "large_list", "fixed_size_list", "struct"):
        children = obj.get("fields")
        if not isinstance(children, list):
            raise SchemaError(f"Failed to convert json to schema: {what}: type {name} requires `fields`")
        fields = [_json_field(c) for c in children]
        if name == "struct":
            return pa.struct(fields)
        if not fields:
            raise SchemaError(f"Failed to convert json to schema: {what}: type {name} has no child field")
        if name == "list":
            return pa.list_(fields[0])
        if name == "large_list":
            return pa.large_list(fields[0])
        return pa.list_(fields[0], _length(obj, name, what))
    if name == "fixed_size_binary":
        return pa.binary(_length(obj, name, what))
    raise SchemaError(
        f"Failed to convert json to schema: Json conversion: Unsupported type: {name!r} ({what})"
    )


def _length(obj: dict[str, Any], name: str, what: str) -> int:
    length = obj.get("length")
    if length is None:
        raise SchemaError(f"Failed to convert json to schema: {what}: type {name} requires a length")
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= _MAX_LENGTH:
        raise SchemaError(
            f"Failed to convert json to schema: {what}: length of {name} must be in [0, {_MAX_LENGTH}], got {length!r}"
        )
    return length


def _parse_logical(text: str, what: str) -> pa.DataType:
    """A parameterised logical type string, parsed as pylance 14 parses it (part counts included)."""
    kind, *rest = text.split(":")
    bad = SchemaError(f"Failed to convert json to schema: Unsupported logical type: {text} ({what})")
    if kind in ("time32", "time64", "duration"):
        units = {"time32": _TIME32_UNITS, "time64": _TIME64_UNITS, "duration": _UNITS}[kind]
        if len(rest) != 1 or rest[0] not in units:
            raise bad
        make = {"time32": pa.time32, "time64": pa.time64, "duration": pa.duration}[kind]
        return make(rest[0])
    if kind == "timestamp":
        parts = text.split(":", 2)
        if len(parts) != 3:
            raise SchemaError(
                f"Failed to convert json to schema: Unsupported timestamp type: {text} ({what})"
            )
        if parts[1] not in _UNITS:
            raise SchemaError(f"Failed to convert json to schema: Unsupported TimeUnit: {parts[1]} ({what})")
        return pa.timestamp(parts[1], None if parts[2] in (_NO_TZ, "") else parts[2])
    if kind == "dict":
        if len(rest) != 3 or rest[0] not in SIMPLE_TYPES or rest[1] not in SIMPLE_TYPES:
            raise SchemaError(
                f"Failed to convert json to schema: Unsupported dictionary type: {text} ({what})"
            )
        index = SIMPLE_TYPES[rest[1]]
        if not pa.types.is_integer(index):
            raise SchemaError(
                f"Failed to convert json to schema: dictionary index type {index} is not an integer"
            )
        return pa.dictionary(index, SIMPLE_TYPES[rest[0]])  # the ordered flag is never read back
    return _parse_decimal(text, rest, what)


def _parse_decimal(text: str, rest: list[str], what: str) -> pa.DataType:
    if len(rest) != 3:
        raise SchemaError(f"Failed to convert json to schema: Unsupported decimal type: {text} ({what})")
    width, precision, scale = rest
    if width not in _DECIMAL_WIDTHS:
        raise SchemaError(
            f"Failed to convert json to schema: Only Decimal128 and Decimal256 is supported. Found {width} ({what})"
        )
    # precision is a u8, scale an i8 in pylance's parser
    if not _UNSIGNED.fullmatch(precision) or not _SIGNED.fullmatch(scale):
        raise SchemaError(f"Failed to convert json to schema: bad decimal type {text} ({what})")
    if int(precision) > 255 or not -128 <= int(scale) <= 127:
        raise SchemaError(f"Failed to convert json to schema: decimal type {text} out of range ({what})")
    try:
        return _DECIMAL_WIDTHS[width](int(precision), int(scale))
    except (ValueError, pa.ArrowInvalid) as exc:
        raise SchemaError(f"Failed to convert json to schema: {text}: {exc} ({what})") from None
