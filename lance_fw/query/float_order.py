"""Float comparisons in Lance filters, in the order pylance (DataFusion on arrow-rs) uses.

arrow-rs orders floats by IEEE 754 ``totalOrder``: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN,
and two NaNs are equal only when their bits are. A *negative* NaN is an ordinary result (x86
computes 0.0 / 0.0 as one, ``-x`` of a NaN is one), so treating every NaN alike would make ``x > 0``
keep rows pylance drops. Next to a literal number pylance still compares numbers the IEEE way (a
literal 0 matches both zeros) but places a NaN by its sign: below every number when negative, above
when positive; next to a NaN literal, or between two float expressions, it is ``totalOrder`` proper.

pyarrow's kernels see neither a NaN's sign nor -0.0 < 0.0, so :func:`total_order_key` maps a float64
to its ``totalOrder`` key: an int64 whose integer order is that order (the bits, with every bit but
the sign flipped on negatives). It is a registered UDF, vectorised with numpy, so the expression still
runs in ``Table.filter`` and dataset scans.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.query.udfs import call, float64s, udf

#: XOR-ed into a negative float's bits so that larger magnitudes get smaller keys
MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def _keys(bits: np.ndarray) -> np.ndarray:
    return bits ^ ((bits >> np.int64(63)) & MAGNITUDE_BITS)


def _key_kernel(ctx: pc.UdfContext, values: pa.Array | pa.Scalar) -> pa.Array:
    floats, valid = float64s(values, ctx.batch_length)
    return pa.array(_keys(floats.view(np.int64)), pa.int64(), mask=~valid)


def _nan_sign_kernel(negative: bool) -> Callable[[pc.UdfContext, pa.Array | pa.Scalar], pa.Array]:
    """A UDF kernel: whether each value is a NaN with its sign bit set (``negative``) or clear;
    false for numbers and NULLs. Most batches hold no NaN: they cost one ``isnan`` pass."""

    def kernel(ctx: pc.UdfContext, values: pa.Array | pa.Scalar) -> pa.Array:
        if isinstance(values, pa.Array) and not values.null_count:
            floats = values.to_numpy(zero_copy_only=False)  # float64 without NULLs: no copy
        else:
            floats = float64s(values, ctx.batch_length)[0]  # NULLs as 0.0: not a NaN
        found = np.isnan(floats)
        if found.any():
            found &= np.signbit(floats) if negative else ~np.signbit(floats)
        return pa.array(found, pa.bool_())

    return kernel


def nan_with_sign(expr: pc.Expression, negative: bool) -> pc.Expression:
    """Whether a float (or number) expression, cast to float64, is a NaN of that sign (NULL: false).

    Why not ``is_nan(x) & (total_order_key(x) < 0)``: that ran five kernels over every value of
    every probe, the key UDF with a copy and a validity array each; a filter such as ``value > 0.5``
    spent more time placing NaNs than comparing (a 2M-row scan: ~16 of its ~80 ms)."""
    kind = "negative_nan" if negative else "positive_nan"
    return call(
        udf(kind, _nan_sign_kernel(negative), {"values": pa.float64()}, pa.bool_()), expr.cast(pa.float64())
    )


def literal_key(value: float) -> int:
    """The ``totalOrder`` key of one float64 (sign and payload of a NaN included)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    return int(_keys(np.array([bits], np.int64))[0])


def total_order_key(expr: pc.Expression) -> pc.Expression:
    """int64 keys in ``totalOrder`` of a float (or number) expression, cast to float64 first."""
    return call(
        udf("total_order_key", _key_kernel, {"values": pa.float64()}, pa.int64()), expr.cast(pa.float64())
    )


def compare_to_literal(op: str, expr: pc.Expression, value: pa.Scalar) -> pc.Expression:
    """``expr <op> value`` for a float expression and a float literal of a matching type."""
    if np.isnan(value.as_py()):  # only a NaN literal's sign and bits decide
        return getattr(pc, op)(total_order_key(expr), pc.scalar(literal_key(value.as_py())))
    result = getattr(pc, op)(expr, value)  # IEEE for numbers (and false for every NaN)
    if op in ("greater", "greater_equal"):
        return result | nan_with_sign(expr, negative=False)
    if op in ("less", "less_equal"):
        return result | nan_with_sign(expr, negative=True)
    return result  # equal / not_equal: IEEE already says a NaN differs from every number


def compare_floats(op: str, a: pc.Expression, b: pc.Expression) -> pc.Expression:
    """``a <op> b`` for two number expressions, at least one of them a float: ``totalOrder``."""
    return getattr(pc, op)(total_order_key(a), total_order_key(b))


def extreme(args: list[pc.Expression], types: list[pa.DataType], greatest: bool) -> pc.Expression:
    """``greatest``/``least``: NULLs skipped; floats picked in ``totalOrder`` (a NaN is the greatest,
    a negative NaN the least, 0.0 is greater than -0.0), as DataFusion does."""
    if not any(pa.types.is_floating(t) for t in types):
        fn = pc.max_element_wise if greatest else pc.min_element_wise
        return fn(*args, skip_nulls=True)
    common = types[0] if all(t == types[0] for t in types) else pa.float64()
    args = [a.cast(common) for a in args]
    better = pc.greater if greatest else pc.less
    out = args[0]
    for arg in args[1:]:
        take = out.is_null() | (arg.is_valid() & better(total_order_key(arg), total_order_key(out)))
        out = pc.if_else(take, arg, out)
    return out


#: DataFusion's decimal for a float next to a decimal: (precision, scale) by float width
FLOAT_AS_DECIMAL = {16: (6, 3), 32: (14, 7), 64: (30, 15)}
MAX_DECIMAL128_PRECISION = 38


def as_common_decimal(
    a: pc.Expression, ta: pa.DataType, b: pc.Expression, tb: pa.DataType
) -> tuple[pc.Expression, pc.Expression]:
    """A float and a decimal, both cast to the decimal DataFusion compares them as. The float becomes
    ``decimal(30, 15)`` (float64) first, so NaN, infinity or a value out of range fails on the data
    (as in pylance) instead of comparing as something else."""

    def as_decimal(x: pc.Expression, t: pa.DataType) -> tuple[pc.Expression, pa.DataType]:
        return (
            (
                x.cast(pa.decimal128(*FLOAT_AS_DECIMAL[t.bit_width])),
                pa.decimal128(*FLOAT_AS_DECIMAL[t.bit_width]),
            )
            if pa.types.is_floating(t)
            else (x, t)
        )

    (a, ta), (b, tb) = as_decimal(a, ta), as_decimal(b, tb)
    scale = max(ta.scale, tb.scale)
    digits = max(ta.precision - ta.scale, tb.precision - tb.scale)
    common = pa.decimal128(min(MAX_DECIMAL128_PRECISION, digits + scale), scale)
    return a.cast(common), b.cast(common)
