"""Scalar functions of the Lance filter dialect (DataFusion names) as ``pyarrow.compute`` expressions.

pylance hands function calls to DataFusion, so a filter may call string, math, date and list
functions. Each one here was checked against pylance 14 (tests/test_filters.py). pyarrow has no
per-list "any element matches" kernel, so the list functions (``array_has*``, ``tags[1]``) are
vectorised numpy kernels registered once per input types as pyarrow scalar UDFs: an expression
can only call registered functions, and UDFs run inside ``Table.filter`` and dataset scans.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.file.buffers import range_positions
from lance_fw.query import coercion, float_math, float_order
from lance_fw.query.filter_regex import (
    MATCHED_GROUPS,
    regexp_like,
    regexp_match,
    regexp_replace,
)
from lance_fw.query.udfs import udf

if TYPE_CHECKING:  # the visitor calls these functions with itself; filter.py imports this module
    from lance_fw.query.filter import _Visitor

#: A function's builder: (the visitor, the call node, its argument nodes) -> the Arrow expression.
Builder = Callable[["_Visitor", exp.Expression, list[exp.Expression]], pc.Expression]

# -- list kernels (registered as pyarrow UDFs) -------------------------------------------------


def _layout(lists: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Child values and each row's (start, length) in them, for list / large / fixed-size lists."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    if isinstance(lists, pa.FixedSizeListArray):
        size = lists.type.list_size
        starts = (np.arange(n, dtype=np.int64) + lists.offset) * size
        lengths = np.full(n, size, dtype=np.int64)
    else:
        offsets = lists.offsets.to_numpy().astype(np.int64)
        starts, lengths = offsets[:-1], np.diff(offsets)
    values = lists.values
    if n and len(values):
        first, last = int(starts.min()), int((starts + lengths).max())
        values, starts = values.slice(first, last - first), starts - first
    return values, starts, lengths


def _positions(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every list element: its row and its position in the child values."""
    return np.repeat(np.arange(len(starts)), lengths), range_positions(starts, lengths)


def _rows_with(hits: np.ndarray, parents: np.ndarray, positions: np.ndarray, n: int) -> np.ndarray:
    """Per row: does any of its values hold (``hits`` is per child value)?"""
    out = np.zeros(n, dtype=bool)
    out[parents[hits[positions]]] = True
    return out


def _bools(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, pa.bool_(), mask=~valid)


def _numpy(array: pa.Array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=bool)


def _has_kernel(
    ctx: pc.UdfContext, lists: pa.Array | pa.ChunkedArray, needle: pa.Array | pa.Scalar
) -> pa.Array:
    values, starts, lengths = _layout(lists)
    parents, positions = _positions(starts, lengths)
    n, valid = len(starts), _numpy(lists.is_valid())
    if isinstance(needle, pa.Scalar):
        if not needle.is_valid:  # array_has(x, NULL) is NULL for every row
            return pa.nulls(n, pa.bool_())
        hits = _numpy(pc.equal(values, needle).fill_null(False))
        return _bools(_rows_with(hits, parents, positions, n), valid)
    hits = _numpy(pc.equal(values.take(pa.array(positions)), needle.take(pa.array(parents))).fill_null(False))
    return _bools(_rows_with(hits, parents, np.arange(len(parents)), n), valid & _numpy(needle.is_valid()))


def _set_kernel(mode: str) -> Callable:
    def kernel(ctx: pc.UdfContext, lists: pa.Array | pa.ChunkedArray, needles: pa.Array) -> pa.Array:
        values, starts, lengths = _layout(lists)
        wanted = needles.values
        if len(wanted) == 0:  # pylance: [] matches no row for _any and every row (even NULL) for _all
            return pa.array(np.full(len(starts), mode == "all"), pa.bool_())
        if values.type != wanted.type:
            values = values.cast(wanted.type)
        parents, positions = _positions(starts, lengths)
        n, valid = len(starts), _numpy(lists.is_valid())
        null_hits = ~_numpy(values.is_valid()) if wanted.null_count else None  # NULL matches NULL here
        if mode == "any":
            hits = _numpy(pc.is_in(values, value_set=wanted.drop_null()))
            return _bools(
                _rows_with(hits if null_hits is None else hits | null_hits, parents, positions, n), valid
            )
        out = np.ones(n, dtype=bool)
        for needle in pc.unique(wanted.drop_null()):
            out &= _rows_with(_numpy(pc.equal(values, needle).fill_null(False)), parents, positions, n)
        if null_hits is not None:
            out &= _rows_with(null_hits, parents, positions, n)
        return _bools(out, valid)

    return kernel


def _element_kernel(ctx: pc.UdfContext, lists: pa.Array | pa.ChunkedArray, index: pa.Scalar) -> pa.Array:
    values, starts, lengths = _layout(lists)
    i = index.as_py() if isinstance(index, pa.Scalar) else None
    if i is None or i == 0:
        return pa.nulls(len(starts), values.type)
    position = starts + (i - 1 if i > 0 else lengths + i)
    ok = _numpy(lists.is_valid()) & ((i - 1 < lengths) if i > 0 else (-i <= lengths))
    return values.take(pa.array(np.where(ok, position, 0), pa.int64(), mask=~ok))


def _list_type(v: _Visitor, node: exp.Expression, expression: pc.Expression) -> pa.DataType:
    t = v.type_of(expression)
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        raise v.fail(node, f"needs a list argument, not {t}")
    return t


def _array_has(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    lists = v.visit_value(args[0])
    t = _list_type(v, node, lists)
    if v.is_literal(args[1]):
        needle = v.list_literal(args[1], t.value_type)
        name = udf("array_has", _has_kernel, {"lists": t, "needle": needle.type}, pa.bool_())
        return pc.Expression._call(name, [lists, pc.scalar(needle)])
    needle = v.visit_value(args[1])
    name = udf("array_has", _has_kernel, {"lists": t, "needle": v.type_of(needle)}, pa.bool_())
    return pc.Expression._call(name, [lists, needle])


def _array_has_set(mode: str) -> Builder:
    def build(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
        lists = v.visit_value(args[0])
        t = _list_type(v, node, lists)
        if not isinstance(args[1], exp.Array):
            raise v.fail(node, "needs a list literal such as ['a', 'b'] as its second argument")
        scalars = [v.list_literal(e, t.value_type) for e in args[1].expressions]
        kinds = {s.type for s in scalars if s.is_valid}
        element = kinds.pop() if len(kinds) == 1 else (pa.float64() if kinds else t.value_type)
        wanted = pa.array([s.as_py() for s in scalars], element)
        name = udf(
            f"array_has_{mode}", _set_kernel(mode), {"lists": t, "needles": pa.list_(element)}, pa.bool_()
        )
        return pc.Expression._call(name, [lists, pc.scalar(pa.scalar(wanted.to_pylist(), pa.list_(element)))])

    return build


def list_element(
    v: _Visitor, node: exp.Expression, base: exp.Expression, index_node: exp.Expression
) -> pc.Expression:
    """``base[i]`` / ``array_element(base, i)``: 1-based, negative from the end, NULL when out of range."""
    lists = v.visit_value(base)
    t = _list_type(v, node, lists)
    index = v.int_literal(index_node)
    name = udf("array_element", _element_kernel, {"lists": t, "index": pa.int64()}, t.value_type)
    return pc.Expression._call(name, [lists, pc.scalar(pa.scalar(index, pa.int64()))])


def _array_length(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    lists = v.visit_value(args[0])
    _list_type(v, node, lists)
    if len(args) == 2 and v.int_literal(args[1]) != 1:
        raise v.fail(node, "supports only dimension 1")
    return pc.list_value_length(lists).cast(pa.uint64())


def _array_empty(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    lists = v.visit_value(args[0])
    _list_type(v, node, lists)
    return pc.equal(pc.list_value_length(lists), 0)


# -- strings ------------------------------------------------------------------------------------


def _unary(fn: Callable) -> Builder:
    return lambda v, node, args: fn(v.visit_value(args[0]))


def _with_pattern(fn: Callable, key: str = "pattern") -> Builder:
    def build(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
        pattern = v.string_literal(args[1])
        if pattern is None:
            return pc.scalar(pa.scalar(None, pa.bool_()))
        return fn(v.visit_value(args[0]), **{key: pattern})

    return build


def _strpos(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    """1-based position in characters (not bytes), 0 when absent, NULL for a NULL needle."""
    text, needle = v.visit_value(args[0]), v.string_literal(args[1])
    if needle is None:
        return pc.scalar(pa.scalar(None, pa.int32()))
    before = pc.list_element(pc.split_pattern(text, pattern=needle, max_splits=1), 0)
    return pc.if_else(pc.equal(pc.find_substring(text, needle), -1), 0, pc.add(pc.utf8_length(before), 1))


def _case_kernel(upper: bool) -> Callable:
    """Rust's full Unicode case mapping (``ß`` -> ``SS``), which Arrow's utf8_upper lacks; Python's
    str methods follow the same Unicode tables. ASCII-only arrays take Arrow's kernel."""

    def kernel(ctx: pc.UdfContext, values: pa.Array | pa.Scalar) -> pa.Array | pa.Scalar:
        fn = str.upper if upper else str.lower
        if isinstance(values, pa.Scalar):
            return pa.scalar(None if not values.is_valid else fn(values.as_py()), values.type)
        if pc.all(pc.string_is_ascii(values)).as_py() is not False:
            return pc.ascii_upper(values) if upper else pc.ascii_lower(values)
        return pa.array([None if x is None else fn(x) for x in values.to_pylist()], values.type)

    return kernel


def _case(upper: bool) -> Builder:
    def build(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
        value = v.visit_value(args[0])
        t = v.type_of(value)
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise v.fail(node, f"needs a string, not {t}")
        name = udf("upper" if upper else "lower", _case_kernel(upper), {"values": t}, t)
        return pc.Expression._call(name, [value])

    return build


def _as_string(v: _Visitor, node: exp.Expression) -> pc.Expression:
    value = v.visit_value(node)
    t = v.type_of(value)
    if pa.types.is_floating(t) or pa.types.is_timestamp(t):
        raise v.fail(node, "is not supported: Rust formats floats and timestamps differently from Arrow")
    return value if pa.types.is_string(t) or pa.types.is_large_string(t) else value.cast(pa.string())


def _concat(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    parts = [_as_string(v, a) for a in args]
    return pc.binary_join_element_wise(*parts, "", null_handling="replace", null_replacement="")


def _left(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    return pc.utf8_slice_codeunits(v.visit_value(args[0]), start=0, stop=v.int_literal(args[1]))


def _right(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    n, value = v.int_literal(args[1]), v.visit_value(args[0])
    if n == 0:
        return pc.utf8_slice_codeunits(value, start=0, stop=0)
    # n > 0: the last n characters; n < 0: all but the first -n (start=-n is positive then).
    return pc.utf8_slice_codeunits(value, start=-n)


def _replace(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    if v.string_literal(args[1]) == "":  # Arrow's kernel never ends on an empty pattern
        raise v.fail(node, "with an empty pattern is not supported yet")
    if v.string_literal(args[1]) is None or v.string_literal(args[2]) is None:
        return pc.scalar(pa.scalar(None, pa.string()))
    return pc.replace_substring(
        v.visit_value(args[0]), pattern=v.string_literal(args[1]), replacement=v.string_literal(args[2])
    )


def _trim(fn: Callable) -> Builder:
    def build(
        v: _Visitor, node: exp.Expression, args: list[exp.Expression]
    ) -> pc.Expression:  # DataFusion trims spaces only, unless told which
        characters = v.string_literal(args[1]) if len(args) > 1 else " "
        return fn(v.visit_value(args[0]), characters=characters)

    return build


def _split_part(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    n = v.int_literal(args[2])
    if n <= 0:
        raise v.fail(node, "supports only a positive part number")
    parts = pc.split_pattern(v.visit_value(args[0]), pattern=v.string_literal(args[1]))
    return pc.binary_join(pc.list_slice(parts, n - 1, n), "")  # '' past the last part, as DataFusion


def _repeat(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    return pc.binary_repeat(v.visit_value(args[0]), max(v.int_literal(args[1]), 0))


# -- numbers, nulls, dates ----------------------------------------------------------------------


def _float(v: _Visitor, node: exp.Expression) -> pc.Expression:
    return v.visit_value(node).cast(pa.float64())


def _round(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    """DataFusion's ``(x * 10^d).round() / 10^d`` in the argument's float type (float32 stays float32:
    pyarrow's ``round(ndigits=)`` in float64 differs in the last float32 digit)."""
    digits = v.int_literal(args[1]) if len(args) > 1 else 0
    value = v.visit_value(args[0])
    t = v.type_of(value)
    if not pa.types.is_floating(t) or pa.types.is_float16(t):  # DataFusion rounds a float16 as float64
        value, t = value.cast(pa.float64()), pa.float64()
    factor = pc.scalar(pa.scalar(10.0**digits, t))
    return pc.divide(pc.round(pc.multiply(value, factor), round_mode="half_towards_infinity"), factor)


def _log(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    base = v.visit_value(args[0]).cast(pa.float64())
    return pc.logb(_float(v, args[1]), base)


def _same_type(v: _Visitor, args: list[exp.Expression]) -> list[pc.Expression]:
    """Arguments of coalesce/greatest/least: literals take the type of the first non-literal."""
    anchor = next((a for a in args if not v.is_literal(a)), None)
    if anchor is None:
        raise v.fail(args[0], "needs at least one column argument")
    t = v.type_of(v.visit_value(anchor))
    return [pc.scalar(v.loose_literal(a, t)) if v.is_literal(a) else v.visit_value(a) for a in args]


def _nullif(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    a, b = _same_type(v, args)
    ta, tb = v.type_of(a), v.type_of(b)
    if pa.types.is_floating(ta) or pa.types.is_floating(tb):  # DataFusion: NaN = NaN, -0.0 != 0.0
        equal = float_order.compare_floats("equal", a, b)
    else:
        equal = pc.equal(a, b)
    return pc.if_else(pc.coalesce(equal, False), pc.scalar(pa.scalar(None, ta)), a)


def _extreme(v: _Visitor, args: list[exp.Expression], greatest: bool) -> pc.Expression:
    values = _same_type(v, args)
    return float_order.extreme(values, [v.type_of(x) for x in values], greatest)


def _power(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    """DataFusion folds ``power(x, 0)`` to 1 (even for NULL x) and ``power(x, 1)`` to x (a NaN keeps its sign)."""
    if v.is_literal(args[1]) and not isinstance(args[1], exp.Neg):  # -0.0 is an expression there: not folded
        exponent = v.loose_literal(args[1], pa.float64()).as_py()
        if exponent == 0:
            return pc.scalar(1.0).cast(pa.float64())  # a cast: Acero would narrow a bare literal
        if exponent == 1:
            return _float(v, args[0])
    return float_math.apply("power", _float(v, args[0]), _float(v, args[1]))


def _isnan(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    return pc.is_nan(_float(v, args[0]))


def _sub_second(e: pc.Expression, digits: int) -> pc.Expression:
    """Seconds and their fraction as an integer of ``digits`` decimals (Postgres' millisecond etc.)."""
    out = pc.second(e)
    for part in (pc.millisecond, pc.microsecond, pc.nanosecond)[: digits // 3]:
        out = pc.add(pc.multiply(out, 1000), part(e))
    return out


_DATE_PARTS = {
    "year": pc.year,
    "quarter": pc.quarter,
    "month": pc.month,
    "week": pc.iso_week,
    "day": pc.day,
    "hour": pc.hour,
    "minute": pc.minute,
    "second": pc.second,
    "doy": pc.day_of_year,
    "dow": lambda e: pc.day_of_week(e, count_from_zero=True, week_start=7),
    "millisecond": lambda e: _sub_second(e, 3),
    "microsecond": lambda e: _sub_second(e, 6),
    "nanosecond": lambda e: _sub_second(e, 9),
}
_UNIT_SECONDS = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _temporal(v: _Visitor, node: exp.Expression, value: pc.Expression) -> tuple[pc.Expression, pa.DataType]:
    """A date or timestamp argument; dates become timestamps (DataFusion casts them so)."""
    t = v.type_of(value)
    if pa.types.is_date(t):
        return value.cast(pa.timestamp("s")), pa.timestamp("s")
    if not pa.types.is_timestamp(t):
        raise v.fail(node, f"needs a date or timestamp, not {t}")
    return value, t


def _date_part(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    part = (v.string_literal(args[0]) or "").lower()
    value, t = _temporal(v, node, v.visit_value(args[1]))
    if part == "epoch":  # seconds since 1970 (UTC) with their fraction
        return pc.divide(value.cast(pa.int64()).cast(pa.float64()), float(_UNIT_SECONDS[t.unit]))
    if part not in _DATE_PARTS:
        raise v.fail(node, f"supports the parts {sorted(_DATE_PARTS) + ['epoch']}")
    return _DATE_PARTS[part](value)  # local time for zoned timestamps, as DataFusion


_TRUNC_UNITS = (
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
)


def _date_trunc(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    unit = (v.string_literal(args[0]) or "").lower()
    if unit not in _TRUNC_UNITS:
        raise v.fail(node, f"supports the units {list(_TRUNC_UNITS)}")
    value, _ = _temporal(v, node, v.visit_value(args[1]))
    return pc.floor_temporal(value, unit=unit, week_starts_monday=True)  # local time for zoned timestamps


def _now(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    now = dt.datetime.now(dt.UTC)
    if isinstance(node, exp.CurrentDate) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == "today"
    ):
        return pc.scalar(pa.scalar(now.date(), pa.date32()))
    return pc.scalar(pa.scalar(now, pa.timestamp("us", "UTC")))


def _get_field(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    return v.column(node)[0]


def _element(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    return list_element(v, node, args[0], args[1])


def _arity(*counts: int) -> Callable[[int], bool]:
    return lambda n: n in counts


_ANY = lambda n: n >= 1  # noqa: E731

#: name -> (accepted argument counts, builder(visitor, node, args))
FUNCTIONS: dict[str, tuple[Callable[[int], bool], Callable]] = {
    "array_has": (_arity(2), _array_has),
    "array_contains": (_arity(2), _array_has),
    "list_has": (_arity(2), _array_has),
    "array_has_any": (_arity(2), _array_has_set("any")),
    "list_has_any": (_arity(2), _array_has_set("any")),
    "arrays_overlap": (_arity(2), _array_has_set("any")),
    "array_has_all": (_arity(2), _array_has_set("all")),
    "list_has_all": (_arity(2), _array_has_set("all")),
    "array_length": (_arity(1, 2), _array_length),
    "list_length": (_arity(1, 2), _array_length),
    "cardinality": (_arity(1), _array_length),
    "array_element": (_arity(2), _element),
    "list_element": (_arity(2), _element),
    "array_extract": (_arity(2), _element),
    "list_extract": (_arity(2), _element),
    "array_empty": (_arity(1), _array_empty),
    "empty": (_arity(1), _array_empty),
    "lower": (_arity(1), _case(upper=False)),
    "upper": (_arity(1), _case(upper=True)),
    "length": (_arity(1), _unary(pc.utf8_length)),
    "octet_length": (_arity(1), _unary(pc.binary_length)),
    "reverse": (_arity(1), _unary(pc.utf8_reverse)),
    "starts_with": (_arity(2), _with_pattern(pc.starts_with)),
    "ends_with": (_arity(2), _with_pattern(pc.ends_with)),
    "contains": (_arity(2), _with_pattern(pc.match_substring)),
    "strpos": (_arity(2), _strpos),
    "concat": (_ANY, _concat),
    "left": (_arity(2), _left),
    "right": (_arity(2), _right),
    "replace": (_arity(3), _replace),
    "btrim": (_arity(1, 2), _trim(pc.utf8_trim)),
    "ltrim": (_arity(1, 2), _trim(pc.utf8_ltrim)),
    "rtrim": (_arity(1, 2), _trim(pc.utf8_rtrim)),
    "split_part": (_arity(3), _split_part),
    "repeat": (_arity(2), _repeat),
    "regexp_like": (_arity(2, 3), regexp_like),
    "regexp_match": (_arity(2, 3), regexp_match),
    "is_valid": (_arity(1), lambda v, node, args: v.visit_value(args[0]).is_valid()),
    "abs": (_arity(1), lambda v, n, a: coercion.absolute(v, v.visit_value(a[0]))),
    "sqrt": (_arity(1), lambda v, n, a: float_math.apply("sqrt", _float(v, a[0]))),
    "ln": (_arity(1), lambda v, n, a: pc.ln(_float(v, a[0]))),
    "exp": (_arity(1), lambda v, n, a: pc.exp(_float(v, a[0]))),
    "log": (_arity(2), _log),
    "log10": (_arity(1), lambda v, n, a: pc.log10(_float(v, a[0]))),
    "log2": (_arity(1), lambda v, n, a: pc.log2(_float(v, a[0]))),
    "signum": (_arity(1), lambda v, n, a: float_math.apply("signum", _float(v, a[0]))),
    "power": (_arity(2), _power),
    "round": (_arity(1, 2), _round),
    "isnan": (_arity(1), _isnan),
    "greatest": (_ANY, lambda v, n, a: _extreme(v, a, greatest=True)),
    "least": (_ANY, lambda v, n, a: _extreme(v, a, greatest=False)),
    "coalesce": (_ANY, lambda v, n, a: coercion.coalesce(v, _same_type(v, a))),
    "nullif": (_arity(2), _nullif),
    "date_part": (_arity(2), _date_part),
    "datepart": (_arity(2), _date_part),
    "date_trunc": (_arity(2), _date_trunc),
    "get_field": (_arity(2), _get_field),
    "regexp_replace": (_arity(3, 4), regexp_replace),
    "now": (_arity(0), _now),
    "current_timestamp": (_arity(0), _now),
    "current_date": (_arity(0), _now),
    "today": (_arity(0), _now),
}

#: sqlglot's typed nodes -> (DataFusion name, argument keys in call order)
_NODES: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.ArrayContains: ("array_has", ("this", "expression")),
    exp.ArrayContainsAll: ("array_has_all", ("this", "expression")),
    exp.ArraySize: ("array_length", ("this", "expression")),
    exp.Lower: ("lower", ("this",)),
    exp.Upper: ("upper", ("this",)),
    exp.Length: ("length", ("this",)),
    exp.Reverse: ("reverse", ("this",)),
    exp.StartsWith: ("starts_with", ("this", "expression")),
    exp.EndsWith: ("ends_with", ("this", "expression")),
    exp.Contains: ("contains", ("this", "expression")),
    exp.StrPosition: ("strpos", ("this", "substr")),
    exp.Concat: ("concat", ("expressions",)),
    exp.Left: ("left", ("this", "expression")),
    exp.Right: ("right", ("this", "expression")),
    exp.Replace: ("replace", ("this", "expression", "replacement")),
    exp.SplitPart: ("split_part", ("this", "delimiter", "part_index")),
    exp.Repeat: ("repeat", ("this", "times")),
    exp.RegexpLike: ("regexp_like", ("this", "expression", "flag")),
    exp.Abs: ("abs", ("this",)),
    exp.Sqrt: ("sqrt", ("this",)),
    exp.Ln: ("ln", ("this",)),
    exp.Exp: ("exp", ("this",)),
    exp.Log: ("log", ("this", "expression")),
    exp.Sign: ("signum", ("this",)),
    exp.Pow: ("power", ("this", "expression")),
    exp.Round: ("round", ("this", "decimals")),
    exp.IsNan: ("isnan", ("this",)),
    exp.Greatest: ("greatest", ("this", "expressions")),
    exp.Least: ("least", ("this", "expressions")),
    exp.Coalesce: ("coalesce", ("this", "expressions")),
    exp.Nullif: ("nullif", ("this", "expression")),
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement", "position")),
    exp.CurrentTimestamp: ("current_timestamp", ()),
    exp.CurrentDate: ("current_date", ()),
}


def call_arguments(node: exp.Expression) -> tuple[str, list]:
    """(DataFusion function name, argument nodes) of a sqlglot function node."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), list(node.expressions)
    if isinstance(node, exp.Trim) and node.args.get("position") is not None:
        name = "ltrim" if str(node.args["position"]).upper() == "LEADING" else "rtrim"
        # ltrim(s, 'x') parses as Trim(this='x', expression=s)
        return name, [node.expression, node.this] if node.expression is not None else [node.this]
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):  # date_trunc('day', x): unit parsed as a name
        return "date_trunc", [exp.Literal.string(node.args["unit"].name), node.this]
    name, keys = _NODES.get(type(node), (node.key, ()))
    args: list = []
    for key in keys:
        value = node.args.get(key)
        if isinstance(value, list):
            args.extend(value)
        elif value is not None:
            args.append(value)
    return name, args


def call(v: _Visitor, node: exp.Expression) -> pc.Expression:
    """The expression of a function call; ``v`` is the filter visitor (values, literals, errors)."""
    name, args = call_arguments(node)
    if name == "log" and isinstance(node, exp.Log) and node.expression is None:
        args = [exp.Literal.number(10), node.this]  # DataFusion: log(x) = log(10, x)
    spec = FUNCTIONS.get(name)
    if spec is None:
        raise v.fail(node, "is not a supported function")
    if not spec[0](len(args)):
        raise v.fail(node, f"has the wrong number of arguments ({len(args)})")
    return spec[1](v, node, args)


__all__ = ["FUNCTIONS", "MATCHED_GROUPS", "call", "call_arguments", "list_element"]
