"""``lance_fw.schema.schema_to_json`` / ``json_to_schema`` against pylance's ``lance.schema`` (issue 16):
every scalar type, hypothesis-built nested schemas with metadata and nullability, the round trip,
the JSON pylance refuses and the types it has no JSON for (a ``SchemaError``, a ``ValueError`` as
pylance's, never another answer)."""

from __future__ import annotations

from typing import Any

import lance.arrow  # registers pylance's extension types, as a pylance user has them
import lance.schema as pl_schema
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lance_fw.schema as fw_schema
from lance_fw.errors import LanceError, SchemaError

SCALARS: list[pa.DataType] = [
    pa.null(),
    pa.bool_(),
    *[pa.int8(), pa.int16(), pa.int32(), pa.int64()],
    *[pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()],
    *[pa.float16(), pa.float32(), pa.float64()],
    *[pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.binary(7), pa.binary(0)],
    *[pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns")],
    *[pa.timestamp(u) for u in ("s", "ms", "us", "ns")],
    *[pa.timestamp("us", "UTC"), pa.timestamp("ns", "America/New_York"), pa.timestamp("s", "+01:00")],
    *[pa.duration(u) for u in ("s", "ms", "us", "ns")],
    *[
        pa.decimal128(10, 2),
        pa.decimal128(38, 0),
        pa.decimal128(5, -2),
        pa.decimal256(40, 5),
        pa.decimal256(76, 76),
    ],
    *[
        pa.dictionary(i, v)
        for i in (pa.int8(), pa.uint16(), pa.int32(), pa.uint64())
        for v in (pa.string(), pa.int64())
    ],
    *[pa.dictionary(pa.int16(), v) for v in (pa.null(), pa.bool_(), pa.float16(), pa.large_binary())],
    pa.dictionary(pa.int32(), pa.string(), ordered=True),  # pylance writes ``false``: reads back unordered
    pa.uuid(),
    pa.json_(),
    pa.fixed_shape_tensor(pa.float32(), [2, 2]),
    lance.arrow.BFloat16Type(),
]

#: Types pylance 14 has no JSON form for.
REFUSED: list[pa.DataType] = [
    pa.string_view(),
    pa.binary_view(),
    pa.decimal32(5, 2),
    pa.decimal64(12, 2),
    pa.list_view(pa.int32()),
    pa.large_list_view(pa.int32()),
    pa.map_(pa.string(), pa.int64()),
    pa.dense_union([pa.field("a", pa.int32())]),
    pa.sparse_union([pa.field("a", pa.int32())]),
    pa.month_day_nano_interval(),
    pa.run_end_encoded(pa.int32(), pa.string()),
    *[
        pa.dictionary(pa.int16(), v)
        for v in (pa.timestamp("us"), pa.date32(), pa.binary(3), pa.decimal128(5, 2))
    ],
    pa.dictionary(pa.int16(), pa.list_(pa.int8())),
]


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except ValueError as exc:
        return "error", type(exc)
    except pa.ArrowException as exc:  # pylance's refusal of non-UTF-8 metadata
        return "error", type(exc)


def _check_same(schema: pa.Schema) -> None:
    """Both libraries give the same JSON (or both refuse), and read it back to the same schema."""
    expected, got = _outcome(pl_schema.schema_to_json, schema), _outcome(fw_schema.schema_to_json, schema)
    assert got[0] == expected[0], (schema, expected, got)
    if got[0] == "error":
        assert got[1] is SchemaError
        return
    assert got[1] == expected[1]
    back = fw_schema.json_to_schema(got[1])
    assert back.equals(pl_schema.json_to_schema(expected[1]), check_metadata=True)


@pytest.mark.parametrize("t", SCALARS, ids=str)
def test_every_scalar_type(t: pa.DataType) -> None:
    for nullable in (True, False) if t != pa.null() else (True,):
        _check_same(pa.schema([pa.field("c", t, nullable=nullable, metadata={"k": "v"})]))
        _check_same(pa.schema([pa.field("l", pa.list_(pa.field("item", t, nullable=nullable)))]))


@pytest.mark.parametrize("t", REFUSED, ids=str)
def test_refused_types_name_the_type(t: pa.DataType) -> None:
    for schema in (pa.schema([pa.field("c", t)]), pa.schema([pa.field("s", pa.struct([pa.field("c", t)]))])):
        with pytest.raises(ValueError):
            pl_schema.schema_to_json(schema)
        with pytest.raises(SchemaError) as info:
            fw_schema.schema_to_json(schema)
        assert str(t.value_type if pa.types.is_dictionary(t) else t) in str(info.value)


def test_round_trip_of_a_documented_example() -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False, metadata={"k": "v"}),
            pa.field("b", pa.list_(pa.string())),
            pa.field("c", pa.struct([pa.field("x", pa.list_(pa.float32(), 3), nullable=False)])),
        ],
        metadata={"m": "1", "n": "2"},
    )
    out = fw_schema.schema_to_json(schema)
    assert out == pl_schema.schema_to_json(schema)
    assert out["fields"][0] == {
        "name": "a",
        "type": {"type": "int64"},
        "nullable": False,
        "metadata": {"k": "v"},
    }
    assert "metadata" not in out["fields"][1]
    assert fw_schema.json_to_schema(out).equals(schema, check_metadata=True)


# -- hypothesis: nested schemas -------------------------------------------------------------------
_names = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), max_size=6
)
_metadata = st.one_of(st.none(), st.dictionaries(_names, _names, max_size=3))


def _fields(types: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.Field]:
    @st.composite
    def make(draw: st.DrawFn) -> pa.Field:
        t = draw(types)
        nullable = True if t == pa.null() else draw(st.booleans())
        return pa.field(draw(_names), t, nullable=nullable, metadata=draw(_metadata))

    return make()


def _extend(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
    child = _fields(children)
    return st.one_of(
        child.map(pa.list_),
        child.map(pa.large_list),
        st.tuples(child, st.integers(0, 5)).map(lambda c: pa.list_(c[0], c[1])),
        st.lists(child, max_size=3).map(pa.struct),
    )


_types = st.recursive(st.sampled_from(SCALARS + REFUSED[:3]), _extend, max_leaves=6)


@given(st.lists(_fields(_types), max_size=4), _metadata)
def test_nested_schemas_match_pylance(fields: list[pa.Field], metadata: dict[str, str] | None) -> None:
    _check_same(pa.schema(fields, metadata=metadata))


# -- JSON pylance refuses ---------------------------------------------------------------------------
def _one(t: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"fields": [{"name": "c", "type": t, "nullable": True, **extra}]}


_CHILD = {"name": "a", "type": {"type": "int8"}, "nullable": True}
BAD_JSON: list[Any] = [
    {},
    {"fields": None},
    {"fields": [], "metadata": {"a": 1}},
    {"fields": [{"name": "c", "type": {"type": "int32"}}]},
    {"fields": [{"type": {"type": "int32"}, "nullable": True}]},
    _one({"type": "int32"}, nullable="yes"),
    _one({"type": "foo"}),
    _one({"type": "Int32"}),
    _one({"type": "map"}),
    _one({"type": "string_view"}),
    _one({"type": "interval:month_day_nano"}),
    _one({"type": "list"}),
    _one({"type": "struct"}),
    _one({"type": "fixed_size_list", "fields": [_CHILD]}),
    _one({"type": "fixed_size_list", "fields": [_CHILD], "length": -1}),
    _one({"type": "fixed_size_binary"}),
    _one({"type": "fixed_size_binary", "length": 2**31}),
    *[
        _one({"type": t})
        for t in [
            "date32:ms",
            "time32:us",
            "time64:s",
            "time32:",
            "time32:ms:x",
            "duration:xx",
            "duration:",
            "timestamp:us",
            "timestamp:xx:-",
            "timestamp::-",
            "dict:",
            "dict:string:int32",
            "dict:string:int32:true:x",
            "dict:foo:int32:false",
            "dict:string:float:false",
            "dict:string:string:false",
            "dict:fixed_size_binary:int8:false",
            "dict:date32:day:int8:false",
            "decimal:10:2",
            "decimal:128:10",
            "decimal:64:10:2",
            "decimal:128:50:2",
            "decimal:128:a:2",
            "decimal:128:-1:0",
            "decimal:128:300:2",
            "decimal:128:5:-200",
            "decimal:128:0:0",
            "decimal:256:77:0",
        ]
    ],
    _one({"type": "int32"}, metadata={"ARROW:extension:name": "arrow.uuid", "ARROW:extension:metadata": ""}),
    "not an object",
]

ODD_BUT_ACCEPTED: list[dict[str, Any]] = [
    {"fields": [], "metadata": None},
    {"fields": [], "zzz": 1},
    _one({"type": "int32", "zz": 3, "fields": [_CHILD], "length": 3}, extra=1),
    _one({"type": "list", "fields": [_CHILD, {**_CHILD, "name": "b"}]}),
    _one({"type": "fixed_size_list", "length": 0, "fields": [_CHILD]}),
    _one({"type": "fixed_size_binary", "length": 0}),
    _one({"type": "struct", "fields": []}),
    _one({"type": "null"}, nullable=False),
    {"fields": [_CHILD, _CHILD]},
    *[
        _one({"type": t})
        for t in [
            "dict:string:int32:xyz",
            "dict:string:uint8:0",
            "dict:null:int8:false",
            "dict:string:int64:FALSE",
            "timestamp:us:",
            "timestamp:us:-:x",
            "timestamp:us:Not/AZone",
            "decimal:128:5:7",
            "decimal:128:+5:+2",
            "decimal:256:76:0",
        ]
    ],
    _one({"type": "fixed_size_binary", "length": 16}, metadata={"ARROW:extension:name": "arrow.uuid"}),
    _one({"type": "int32"}, metadata={"ARROW:extension:name": "foo.bar", "ARROW:extension:metadata": ""}),
]


@pytest.mark.parametrize("payload", BAD_JSON, ids=repr)
def test_json_pylance_refuses_is_refused(payload: Any) -> None:
    with pytest.raises(ValueError):
        pl_schema.json_to_schema(payload)
    with pytest.raises(SchemaError):
        fw_schema.json_to_schema(payload)


@pytest.mark.parametrize("payload", ODD_BUT_ACCEPTED, ids=repr)
def test_odd_json_pylance_accepts_reads_the_same(payload: dict[str, Any]) -> None:
    expected = pl_schema.json_to_schema(payload)
    assert fw_schema.json_to_schema(payload).equals(expected, check_metadata=True)


def test_a_list_without_a_child_is_a_lance_error() -> None:
    """pylance 14 panics here (index out of bounds): lance_fw says what is wrong instead."""
    with pytest.raises(SchemaError, match="no child field"):
        fw_schema.json_to_schema(_one({"type": "list", "fields": []}))


def test_unserialisable_input_is_a_type_error_as_in_pylance() -> None:
    for lib in (pl_schema, fw_schema):
        with pytest.raises(TypeError):
            lib.json_to_schema({"fields": [], "metadata": {"k": b"bytes"}})


def test_non_utf8_metadata_is_refused() -> None:
    schema = pa.schema([pa.field("a", pa.int8())], metadata={b"k": b"\xff\xfe"})
    with pytest.raises(pa.ArrowException):
        pl_schema.schema_to_json(schema)
    with pytest.raises(LanceError):
        fw_schema.schema_to_json(schema)
