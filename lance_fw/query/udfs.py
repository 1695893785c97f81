"""Registering numpy kernels as pyarrow scalar UDFs, and the array plumbing they share.

A filter is a ``pyarrow.compute.Expression``; an expression can only call registered functions, and
registered functions run inside ``Table.filter`` and dataset scans. Where pyarrow has no kernel with
pylance's semantics (list membership, a NaN's sign, libm's ``pow``), lance_fw registers a vectorised
numpy kernel once per process and input types.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LOCK = threading.Lock()
_REGISTERED: set[str] = set()


def udf(kind: str, fn: Callable, in_types: dict[str, pa.DataType], out_type: pa.DataType) -> str:
    """Register ``fn`` for these input types once per process; returns the function name."""
    name = f"lance_fw_{kind}({', '.join(str(t) for t in in_types.values())})"
    with _LOCK:
        if name not in _REGISTERED:
            try:
                pc.register_scalar_function(
                    fn, name, {"summary": kind, "description": f"Lance filter {kind}"}, in_types, out_type
                )
            except pa.ArrowKeyError:  # registered by an earlier import of this module
                pass
            _REGISTERED.add(name)
    return name


def call(name: str, *args: pc.Expression) -> pc.Expression:
    return pc.Expression._call(name, list(args))


def float64s(values: pa.Array | pa.ChunkedArray | pa.Scalar, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values with nulls as 0.0, validity) of an array or a scalar broadcast to ``n`` rows."""
    if isinstance(values, pa.Scalar):
        valid = values.is_valid
        return np.full(n, values.as_py() if valid else 0.0, np.float64), np.full(n, valid)
    data = np.ascontiguousarray(values.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    return data, np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
