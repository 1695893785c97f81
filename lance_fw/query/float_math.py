"""Float functions of the Lance filter dialect with pylance's results, NaN signs included.

DataFusion computes float math with Rust's ``f64`` methods, i.e. the CPU and the C library: a
square root of a negative number is the CPU's default NaN (negative on x86), ``fmod`` is libm's,
``signum`` of any NaN is a positive NaN, and ``power(0, y < 0)`` is an error. pyarrow's kernels
differ in exactly these corners (``pc.sqrt(-inf)`` is a positive NaN, ``power(0, -1)`` is inf, there
is no ``fmod``), and a NaN's sign decides comparisons (``float_order``). So these are numpy kernels
registered as pyarrow UDFs. Only instructions and exact operations come from numpy (``sqrt``,
``fmod``, ``sign``): its transcendental loops may be SIMD versions whose NaN signs differ from libm's,
so ``pow`` still comes from Arrow, which calls libm.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.query.udfs import call, float64s, udf

_F64 = pa.float64()


def _kernel(fn: Callable[..., np.ndarray]) -> Callable[..., pa.Array]:
    """A UDF kernel applying ``fn`` to float64 numpy arrays; NULL wherever an input is NULL."""

    def kernel(ctx: pc.UdfContext, *inputs: pa.Array | pa.Scalar) -> pa.Array:
        columns = [float64s(values, ctx.batch_length) for values in inputs]
        valid = np.logical_and.reduce([v for _, v in columns])
        with np.errstate(all="ignore"):
            out = fn(*(data for data, _ in columns), valid)
        return pa.array(out, _F64, mask=~valid)

    return kernel


def _power(base: np.ndarray, exponent: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """libm's ``pow`` (through Arrow's kernel: numpy's may be a SIMD version with other NaN signs)."""
    if np.any(valid & (base == 0) & (exponent < 0)):
        raise pa.ArrowInvalid("Compute error: zero raised to a negative power is undefined")
    return pc.power(pa.array(base), pa.array(exponent)).to_numpy(zero_copy_only=False)


def _signum(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), np.nan, np.sign(values))  # np.nan is positive: Rust's f64::NAN


_FUNCTIONS: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "sqrt": (1, lambda values, valid: np.sqrt(values)),
    "signum": (1, _signum),
    "power": (2, _power),
    "fmod": (2, lambda a, b, valid: np.fmod(a, b)),  # Rust's % on floats: the sign of the dividend
}


def apply(name: str, *args: pc.Expression) -> pc.Expression:
    """``name(args)`` on float64 casts of ``args``, as pylance computes it (a float64 result)."""
    arity, fn = _FUNCTIONS[name]
    assert len(args) == arity, name
    in_types = {f"x{i}": _F64 for i in range(arity)}
    return call(udf(f"float_{name}", _kernel(fn), in_types, _F64), *(a.cast(_F64) for a in args))
