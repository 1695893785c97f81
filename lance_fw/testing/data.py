"""Random Arrow data with nulls for the conformance kit, and an exact comparison.

The data is shaped to reach the places an encoding breaks: a null first row, a run of nulls
longer than a 1024-value FastLanes block, a run of one repeated value (constant / run-length
paths), empty strings and lists, and values over each type's whole range. Everything is driven by
a ``numpy`` generator, so a failing case replays from its seed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: Length of the run of nulls and of the run of one repeated value: longer than one 1024-value
#: FastLanes block, so at least one block is all-null and one is constant.
RUN_LENGTH = 1100
#: Most items a generated list holds, and most characters / bytes of a generated string.
MAX_LIST_ITEMS = 4
MAX_STRING_BYTES = 24

#: Arrow temporal types, the width of their storage integer, and the range values are drawn from
#: (values a clock or calendar can hold, so DuckDB and pylance convert them without overflow).
_DAY_S = 86_400
_TEMPORAL_RANGE = {
    ("date32", None): (0, 60_000),  # days, 1970 .. 2134
    ("date64", None): (0, 60_000),  # days, scaled to ms below
    ("time32", "s"): (0, _DAY_S - 1),
    ("time32", "ms"): (0, _DAY_S * 1000 - 1),
    ("time64", "us"): (0, _DAY_S * 10**6 - 1),
    ("time64", "ns"): (0, _DAY_S * 10**9 - 1),
}
_UNITS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
#: Timestamps and durations stay within +-4e9 seconds (about +-126 years around 1970).
_SECONDS_RANGE = 4 * 10**9

#: A reasonable default set of types for an encoding that claims to handle "anything".
DEFAULT_ARROW_TYPES: tuple[pa.DataType, ...] = (
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float32(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.binary(8),
    pa.date32(),
    pa.timestamp("us"),
    pa.timestamp("ns", tz="UTC"),
    pa.duration("ms"),
    pa.time64("us"),
    pa.list_(pa.int32()),
    pa.large_list(pa.string()),
    pa.list_(pa.float32(), 4),
    pa.struct([("a", pa.int16()), ("b", pa.string())]),
)


def random_array(
    arrow_type: pa.DataType,
    n: int,
    rng: np.random.Generator,
    null_fraction: float = 0.1,
    *,
    top_level_nulls: bool = True,
    struct_nulls: bool = True,
) -> pa.Array:
    """``n`` random values of ``arrow_type`` with nulls at every nesting level.

    Args:
        arrow_type: a primitive, string/binary, temporal, list or struct type (nested freely).
        n: the length.
        rng: the generator (the seed decides everything).
        null_fraction: probability of a null at each level.
        top_level_nulls: whether the array itself has nulls; at the top level the first row is null
            and a run of ``RUN_LENGTH`` nulls is placed, and a run of one repeated value follows it.
        struct_nulls: whether struct arrays may be null themselves (file version 2.0 cannot store
            struct validity, so the kit passes False for it; their children still have nulls).
    Raises:
        TypeError: a type this generator does not know; give the kit your own ``make_array``.
    """
    array = _random(
        arrow_type,
        n,
        rng,
        null_fraction if top_level_nulls else 0.0,
        null_fraction,
        struct_nulls,
        runs=top_level_nulls,
    )
    if n > 3 * RUN_LENGTH:  # a run of one repeated (non-null unless unlucky) value
        start = n - 2 * RUN_LENGTH
        indices = np.arange(n)
        indices[start : start + RUN_LENGTH] = start
        array = array.take(pa.array(indices))
    return array


def _mask(n: int, rng: np.random.Generator, fraction: float, runs: bool) -> np.ndarray | None:
    if fraction <= 0:
        return None
    mask = rng.random(n) < fraction
    if runs and n:
        mask[0] = True
        if n > 2 * RUN_LENGTH:
            start = n // 2 - RUN_LENGTH // 2
            mask[start : start + RUN_LENGTH] = True
    return mask


def _random(
    t: pa.DataType,
    n: int,
    rng: np.random.Generator,
    fraction: float,
    child_fraction: float,
    struct_nulls: bool,
    runs: bool = False,
) -> pa.Array:
    mask = _mask(n, rng, fraction, runs)
    if pa.types.is_struct(t):
        children = [_random(f.type, n, rng, child_fraction, child_fraction, struct_nulls) for f in t]
        struct_mask = pa.array(mask) if (mask is not None and struct_nulls) else None
        return pa.StructArray.from_arrays(children, fields=list(t), mask=struct_mask)
    if pa.types.is_fixed_size_list(t):
        values = _random(t.value_type, n * t.list_size, rng, child_fraction, child_fraction, struct_nulls)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=_pa_mask(mask))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = rng.integers(0, MAX_LIST_ITEMS + 1, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        values = _random(t.value_type, int(offsets[-1]), rng, child_fraction, child_fraction, struct_nulls)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        offset_type = pa.int64() if pa.types.is_large_list(t) else pa.int32()
        return cls.from_arrays(pa.array(offsets, offset_type), values, type=t, mask=_pa_mask(mask))
    return (
        pa.array(_values(t, n, rng), type=t, mask=mask)
        if not _is_temporal(t)
        else pa.array(_values(t, n, rng), type=_storage_type(t), mask=mask).view(t)
    )


def _pa_mask(mask: np.ndarray | None) -> pa.Array | None:
    return None if mask is None else pa.array(mask)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_temporal(t) and not pa.types.is_interval(t)


def _storage_type(t: pa.DataType) -> pa.DataType:
    return pa.int32() if t.bit_width == 32 else pa.int64()


def _values(t: pa.DataType, n: int, rng: np.random.Generator) -> np.ndarray | list:
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=info.dtype)
    if pa.types.is_floating(t):
        scale = 10.0 ** rng.integers(-3, 6, n)
        return (rng.standard_normal(n) * scale).astype(t.to_pandas_dtype())
    if pa.types.is_boolean(t):
        return rng.random(n) < 0.5
    if pa.types.is_fixed_size_binary(t):
        return [bytes(row) for row in rng.integers(0, 256, (n, t.byte_width), dtype=np.uint8)]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        alphabet = np.array(list("abcdefghij klmnop-é€"))
        lengths = rng.integers(0, MAX_STRING_BYTES + 1, n)
        chars = alphabet[rng.integers(0, len(alphabet), int(lengths.sum()))]
        ends = np.cumsum(lengths)
        return ["".join(chars[e - k : e]) for e, k in zip(ends, lengths)]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        lengths = rng.integers(0, MAX_STRING_BYTES + 1, n)
        blob = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
        ends = np.cumsum(lengths)
        return [blob[e - k : e] for e, k in zip(ends, lengths)]
    if _is_temporal(t):
        return _temporal_values(t, n, rng)
    raise TypeError(f"the conformance kit cannot generate {t}; override make_array for it")


def _temporal_values(t: pa.DataType, n: int, rng: np.random.Generator) -> np.ndarray:
    unit: str = getattr(t, "unit", "")  # every temporal type but date32/64 has one
    key = (str(t).split("[")[0], unit if pa.types.is_time(t) else None)
    if key in _TEMPORAL_RANGE:
        low, high = _TEMPORAL_RANGE[key]
        values = rng.integers(low, high, n, endpoint=True, dtype=np.int64)
        if pa.types.is_date64(t):
            values *= _DAY_S * 1000
    else:  # timestamp, duration
        per_second = _UNITS_PER_SECOND[unit]
        values = rng.integers(-_SECONDS_RANGE, _SECONDS_RANGE, n, dtype=np.int64) * per_second
        values += rng.integers(0, per_second, n, dtype=np.int64)
    return values.astype(np.int32 if t.bit_width == 32 else np.int64)


def assert_identical(expected: pa.Table, actual: pa.Table, what: str) -> None:
    """Same column names, exact Arrow types, valid arrays, equal values and nulls, in order.

    Nothing is cast or normalised: an encoding that hands back int32 for an int64 column, or a
    value that differs only in a null slot's validity, fails here, naming ``what`` (the read path).
    """
    assert actual.column_names == expected.column_names, (
        f"{what}: columns {actual.column_names}, expected {expected.column_names}"
    )
    assert actual.num_rows == expected.num_rows, (
        f"{what}: {actual.num_rows} rows, expected {expected.num_rows}"
    )
    for name in expected.column_names:
        e, a = expected.column(name).combine_chunks(), actual.column(name).combine_chunks()
        assert a.type == e.type, f"{what}: column {name!r} has type {a.type}, expected {e.type}"
        a.validate(full=True)
        if not a.equals(e):
            diff = first_difference(e, a)
            raise AssertionError(
                f"{what}: column {name!r} differs first at row {diff}: "
                f"expected {e[diff].as_py()!r}, got {a[diff].as_py()!r}"
            )


def first_difference(expected: pa.Array, actual: pa.Array) -> int:
    """Index of the first row where two equal-length arrays differ (values or nulls)."""
    for i in range(len(expected)):
        if not expected.slice(i, 1).equals(actual.slice(i, 1)):
            return i
    return len(expected)
