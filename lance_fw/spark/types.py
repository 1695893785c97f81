"""Arrow (as Lance stores it) <-> Spark types, at both edges of the data source.

Spark has no unsigned ints, float16, fixed-size lists, large offsets or dictionaries, and it
checks every batch a reader yields against ``to_arrow_schema(schema, timezone="UTC")`` exactly,
nullability included. So reads map each Lance type to the nearest Spark type and cast; writes
cast Spark's batches back to the dataset's types (vectors to fixed-size lists, session-zone
timestamps to UTC). The mapping, documented in docs/spark.md:

=================================  ==========================================
Lance / Arrow                      Spark
=================================  ==========================================
uint8 / uint16 / uint32            smallint / int / bigint (value preserving)
uint64                             decimal(20,0)
float16                            float
fixed_size_list<T>[n]              array<T>, field metadata records n
large_string / string_view         string
large_binary / fixed_size_binary   binary
large_list                         array
dictionary<K, V>                   V
timestamp[any unit, tz]            timestamp (UTC instants)
timestamp[any unit]                timestamp_ntz (ns truncated to us)
date64                             date
time32 / time64                    time
decimal256(p <= 38)                decimal(p, s); wider is refused
=================================  ==========================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import SchemaError

if TYPE_CHECKING:  # pyspark is imported where it is used: the Arrow half needs no Spark
    from pyspark.sql.types import DataType, StructType

#: Spark field metadata naming a vector's dimension (the key lance-spark uses).
FSL_SIZE_KEY = "arrow.fixed-size-list.size"
#: lance-spark's Spark field metadata for a vector of half floats: ``array<float>`` with
#: ``FSL_SIZE_KEY`` stored as ``fixed_size_list<float16>`` (values narrowed on write).
FLOAT16_KEY = "arrow.float16"
#: lance-spark's Spark field metadata for a string column stored with 64-bit offsets.
LARGE_VAR_CHAR_KEY = "arrow:large-var-char"
#: The largest finite float16; a float beyond it would silently become infinity when narrowed.
FLOAT16_MAX = 65504.0

_WIDER = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
    pa.date64(): pa.date32(),
    pa.large_string(): pa.string(),
    pa.string_view(): pa.string(),
    pa.large_binary(): pa.binary(),
    pa.binary_view(): pa.binary(),
}


#: Arrow list types, all of which Spark reads as its one ArrayType
_LIST_KINDS = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_fixed_size_list,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)


def spark_arrow_type(t: pa.DataType, where: str = "") -> pa.DataType:
    """The Arrow type Spark accepts for Lance type ``t`` (what a reader must emit, before relabelling)."""
    if t in _WIDER:
        return _WIDER[t]
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type, where)
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    if pa.types.is_time(t):
        return pa.time64("us")
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"column {where!r}: {t} has no Spark type (decimal precision is at most 38)")
        return pa.decimal128(t.precision, t.scale)
    if any(is_kind(t) for is_kind in _LIST_KINDS):
        item = t.value_field
        return pa.list_(item.with_type(spark_arrow_type(item.type, where)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(spark_arrow_type(t.key_type, where)),
            t.item_field.with_type(spark_arrow_type(t.item_type, where)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(spark_arrow_type(f.type, f"{where}.{f.name}")) for f in t])
    return t


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark ``StructType`` a reader of ``schema`` declares; vector sizes go into field metadata."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    fields = []
    for f in schema:
        try:
            spark_type = from_arrow_type(spark_arrow_type(f.type, f.name))
        except SchemaError:
            raise
        except Exception as exc:  # pyspark's own type errors
            raise SchemaError(f"column {f.name!r}: {f.type} has no Spark type ({exc})") from None
        metadata = {FSL_SIZE_KEY: f.type.list_size} if pa.types.is_fixed_size_list(f.type) else {}
        fields.append(StructField(f.name, spark_type, f.nullable, metadata))
    return StructType(fields)


def relabel(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Cast a decoded batch to exactly ``target`` (Spark's expected Arrow schema), by column name.

    Casts are safe (overflow and truncation raise) except that nanoseconds are truncated to
    microseconds, as Spark itself does: the mapping above is lossless otherwise, so a cast that
    would lose data means the schema does not fit and must fail, not be silently applied."""
    arrays = []
    for f in target:
        column = batch.column(f.name)
        if not column.type.equals(f.type):
            column = pc.cast(column, options=pc.CastOptions(f.type, allow_time_truncate=True))
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def write_schema(spark_struct: StructType, existing: pa.Schema | None) -> pa.Schema:
    """The Arrow schema Spark rows are stored as.

    Appends keep the dataset's schema (after a compatibility check naming the column); a new
    dataset takes Spark's schema with timestamps in UTC and arrays carrying ``FSL_SIZE_KEY``
    metadata stored as fixed-size lists (vectors).
    """
    from pyspark.sql.pandas.types import to_arrow_type

    if existing is not None:
        check_append(spark_struct, existing)
        return existing
    fields = []
    for sf in spark_struct.fields:
        metadata = dict(sf.metadata or {})
        t = _stored_type(sf.name, sf.dataType, to_arrow_type(sf.dataType, timezone="UTC"), metadata)
        keep = {k: str(v) for k, v in metadata.items() if k.startswith("lance-")}
        fields.append(pa.field(sf.name, t, sf.nullable, metadata=keep or None))
    return pa.schema(fields)


def _stored_type(name: str, spark_type: DataType, t: pa.DataType, metadata: dict[str, Any]) -> pa.DataType:
    """The Arrow type a new dataset stores Spark column ``name`` as, after the lance-spark column
    properties in its ``metadata`` (vector size, float16, large strings), which are consumed."""
    size = metadata.pop(FSL_SIZE_KEY, None)
    float16 = str(metadata.pop(FLOAT16_KEY, "false")).strip().lower() == "true"
    large = str(metadata.pop(LARGE_VAR_CHAR_KEY, "false")).strip().lower() == "true"
    what = spark_type.simpleString()
    if size is not None:
        if not pa.types.is_list(t):
            raise SchemaError(
                f"column {name!r}: {FSL_SIZE_KEY} is set but the column is {what}, not an array"
            )
        t = pa.list_(t.value_field, int(size))
    if float16:  # as lance-spark: only on a vector of floats
        if size is None or t.value_type != pa.float32():
            raise SchemaError(
                f"column {name!r}: {FLOAT16_KEY} needs an array<float> column with {FSL_SIZE_KEY} "
                f"(a vector), but the column is {what}"
                + ("" if size is not None else f" without {FSL_SIZE_KEY}")
            )
        t = pa.list_(t.value_field.with_type(pa.float16()), t.list_size)
    if large:
        if t != pa.string():
            raise SchemaError(
                f"column {name!r}: {LARGE_VAR_CHAR_KEY} needs a string column, but it is {what}"
            )
        t = pa.large_string()
    return t


def check_float16_range(batch: pa.RecordBatch, target: pa.Schema) -> None:
    """Refuse finite floats beyond float16's range in columns stored as float16 (top level or vector
    elements): narrowing would silently store infinity. Precision is narrowed as lance-spark does."""
    for f in target:
        t = f.type
        if pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t):
            t = t.value_type
        if t != pa.float16() or f.name not in batch.schema.names:
            continue
        column = batch.column(f.name)
        if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            column = column.flatten()
        if column.type == pa.float16() or len(column) == 0:
            continue
        values = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        finite = values[np.isfinite(values)]
        if len(finite) and np.abs(finite).max() > FLOAT16_MAX:
            raise SchemaError(
                f"column {f.name!r} is stored as float16, whose largest value is {FLOAT16_MAX:g}; "
                f"the data holds {np.abs(finite).max():g}"
            )


def check_append(spark_struct: StructType, existing: pa.Schema) -> None:
    """Refuse an append whose columns differ from the dataset's, naming the first mismatch."""
    theirs = {sf.name: sf for sf in spark_struct.fields}
    if sorted(theirs) != sorted(existing.names):
        raise SchemaError(
            f"append schema does not match the dataset: dataset has columns {existing.names}, "
            f"the DataFrame has {list(theirs)}"
        )
    for name, stored, got in type_mismatches(
        spark_schema(existing), {n: f.dataType for n, f in theirs.items()}
    ):
        raise SchemaError(
            f"append schema does not match the dataset: column {name!r} is "
            f"{stored.simpleString()} in the dataset but {got.simpleString()} in the DataFrame"
        )


def type_mismatches(stored: StructType, wanted: dict[str, DataType]) -> list[tuple[str, DataType, DataType]]:
    """(name, stored type, wanted type) of each column of ``stored`` whose Spark type differs from
    ``wanted``'s: appends and reads both refuse such a column rather than cast it lossily."""
    return [
        (f.name, f.dataType, wanted[f.name])
        for f in stored.fields
        if not same_spark_type(wanted[f.name], f.dataType)
    ]


def same_spark_type(a: DataType, b: DataType) -> bool:
    """Equal up to nullability (Spark marks literals and aggregates non-null freely)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(a, StructType) and isinstance(b, StructType):
        return [f.name for f in a.fields] == [f.name for f in b.fields] and all(
            same_spark_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields)
        )
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return same_spark_type(a.elementType, b.elementType)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return same_spark_type(a.keyType, b.keyType) and same_spark_type(a.valueType, b.valueType)
    return a == b
