"""The types DataFusion (pylance 14's planner) compares and computes two values in, for the filter
visitor (``filter._Visitor``): dates against timestamps, numbers against IN lists, and float16.

float16 (``halffloat``): pyarrow has no compute kernels for it, arrow-rs has. Every float16 is a
float32 exactly, so a float16 value is widened to float32 before pyarrow compares it, and what
arrow-rs would compute *in float16* (DataFusion's common type of a float16 and an integer or another
float16) is computed in float32 and rounded back to float16, as the ``half`` crate's operators do
(``f16::from_f32(a.to_f32() + b.to_f32())``). An integer next to a float16 becomes a float16 first
(rounded to nearest, infinity past 65504, as arrow-rs casts). A float32 or float64 next to a float16
wins (the float16 is widened to it, exactly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from lance_fw.query.filter import _Visitor as Visitor

HALF = pa.float16()
#: the type float16 values are compared and computed in (it holds every float16 exactly)
WIDE = pa.float32()


def temporal(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def common_time(value: pc.Expression, t: pa.DataType, other: pa.DataType) -> pc.Expression:
    """``value`` ready to compare with a value of type ``other``, as DataFusion coerces: a date
    becomes midnight UTC, a zone-less timestamp a wall clock in the other side's zone."""
    if pa.types.is_date(t) and pa.types.is_timestamp(other):
        return value.cast(pa.timestamp(other.unit)).cast(other)
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(other) and t.tz is None and other.tz is not None:
        return pc.assume_timezone(value, timezone=other.tz)
    return value


def common_numeric(column: pa.DataType, literals: list[pa.DataType]) -> pa.DataType | None:
    """The type DataFusion compares a numeric value and numeric literals in, when it is wider
    than the value's own: float64 once a float is involved with an integer or narrower float,
    int64 for a narrower integer (None: the value's type holds them all, or not numeric).
    A float16 next to integers only stays a float16 (DataFusion's common type of the two)."""
    numeric = [t for t in literals if pa.types.is_integer(t) or pa.types.is_floating(t)]
    if not numeric or not (pa.types.is_integer(column) or pa.types.is_floating(column)):
        return None
    if pa.types.is_float16(column) and all(pa.types.is_integer(t) for t in numeric):
        return None
    if any(pa.types.is_floating(t) for t in [column, *numeric]):
        return None if column == pa.float64() else pa.float64()
    return None if column == pa.int64() or any(t != pa.int64() for t in numeric) else pa.int64()


def decimal_float(value: pc.Expression) -> pc.Expression:
    """Decimal -> float64, correctly rounded (pyarrow's direct cast is off by an ulp at times)."""
    return value.cast(pa.string()).cast(pa.float64())


def _as_half(value: pc.Expression) -> pc.Expression:
    """An integer (or wider float) expression rounded to float16, as arrow-rs casts (no error)."""
    return value.cast(HALF, safe=False)


def half_scalar(value: pa.Scalar) -> pa.Scalar:
    """A literal compared with a float16 value, in the type pyarrow compares them in: a float16 as
    float32, an integer rounded to float16 first (DataFusion's common type); float32/float64 stay."""
    if pa.types.is_float16(value.type):
        return value.cast(WIDE)
    if pa.types.is_integer(value.type):
        return value.cast(HALF, safe=False).cast(WIDE)
    return value


def half_operands(
    a: pc.Expression, ta: pa.DataType, b: pc.Expression, tb: pa.DataType, fail: Callable[[str], Exception]
) -> tuple[pc.Expression, pa.DataType, pc.Expression, pa.DataType, bool]:
    """Two operands, at least one of them float16, ready for pyarrow: ``(a, ta, b, tb, half)`` where
    ``half`` says DataFusion computes the result in float16 (round it back with :func:`to_half`).
    Operands that are not float16 are returned unchanged; a float16 next to a decimal is refused
    with ``fail(why)`` (DataFusion has no common type for them; pyarrow would answer)."""
    if not (pa.types.is_float16(ta) or pa.types.is_float16(tb)):
        return a, ta, b, tb, False
    other = tb if pa.types.is_float16(ta) else ta
    if pa.types.is_decimal(other):
        raise fail("mixes float16 and decimal, which pylance cannot coerce to one type")
    if pa.types.is_float32(other) or pa.types.is_float64(other):
        return a.cast(other), other, b.cast(other), other, False
    if not (pa.types.is_float16(other) or pa.types.is_integer(other)):
        return a, ta, b, tb, False  # decimals and others: pyarrow refuses with a typed error
    a, b = (x if pa.types.is_float16(t) else _as_half(x) for x, t in ((a, ta), (b, tb)))
    return a.cast(WIDE), WIDE, b.cast(WIDE), WIDE, True


def to_half(value: pc.Expression) -> pc.Expression:
    """A float32 result rounded to float16 (overflow is infinity, as in the ``half`` crate)."""
    return _as_half(value)


def absolute(v: Visitor, value: pc.Expression) -> pc.Expression:
    """``abs``: a float16 stays a float16 (taken in float32, exact), as in DataFusion."""
    if pa.types.is_float16(v.type_of(value)):
        return to_half(pc.abs(value.cast(WIDE)))
    return pc.abs_checked(value)


def coalesce(v: Visitor, values: list[pc.Expression]) -> pc.Expression:
    """``coalesce`` in DataFusion's common type: with a float16 among the values, float64 or float32
    when one is there, else float16 (integers rounded to it), taken in float32 and rounded back."""
    types = [v.type_of(x) for x in values]
    if not any(pa.types.is_float16(t) for t in types):
        return pc.coalesce(*values)
    common = next((t for t in (pa.float64(), WIDE) if t in types), HALF)
    values = [x if pa.types.is_floating(t) else _as_half(x) for x, t in zip(values, types, strict=True)]
    out = pc.coalesce(*(x.cast(WIDE if common == HALF else common) for x in values))
    return to_half(out) if common == HALF else out
