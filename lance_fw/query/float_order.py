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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.query.filter_functions import udf

#: XOR-ed into a negative float's bits so that larger magnitudes get smaller keys
MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def _keys(bits: np.ndarray) -> np.ndarray:
    return bits ^ ((bits >> np.int64(63)) & MAGNITUDE_BITS)


def _key_kernel(ctx, values):
    if isinstance(values, pa.Scalar):
        return pa.scalar(literal_key(values.as_py()) if values.is_valid else None, pa.int64())
    floats = np.ascontiguousarray(values.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(_keys(floats.view(np.int64)), pa.int64(), mask=~valid)


def literal_key(value: float) -> int:
    """The ``totalOrder`` key of one float64 (sign and payload of a NaN included)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    return int(_keys(np.array([bits], np.int64))[0])


def total_order_key(expr: pc.Expression) -> pc.Expression:
    """int64 keys in ``totalOrder`` of a float (or number) expression, cast to float64 first."""
    return pc.Expression._call(udf("total_order_key", _key_kernel, {"values": pa.float64()}, pa.int64()),
                               [expr.cast(pa.float64())])


def compare_to_literal(op: str, expr: pc.Expression, value: pa.Scalar) -> pc.Expression:
    """``expr <op> value`` for a float expression and a float literal of a matching type."""
    if np.isnan(value.as_py()):  # only a NaN literal's sign and bits decide
        return getattr(pc, op)(total_order_key(expr), pc.scalar(literal_key(value.as_py())))
    result = getattr(pc, op)(expr, value)  # IEEE for numbers (and false for every NaN)
    if op == "equal":
        return result
    is_nan = pc.is_nan(expr)
    negative = total_order_key(expr) < pc.scalar(0)
    if op in ("greater", "greater_equal"):
        return result | (is_nan & ~negative)
    if op in ("less", "less_equal"):
        return result | (is_nan & negative)
    return result  # not_equal: IEEE already says a NaN differs from every number


def compare_floats(op: str, a: pc.Expression, b: pc.Expression) -> pc.Expression:
    """``a <op> b`` for two number expressions, at least one of them a float: ``totalOrder``."""
    return getattr(pc, op)(total_order_key(a), total_order_key(b))
