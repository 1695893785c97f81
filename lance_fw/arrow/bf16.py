"""bfloat16 in Arrow: the ``lance.bfloat16`` extension type over ``fixed_size_binary(2)``.

Why an extension type: Arrow has no bfloat16, and pylance stores one as two little-endian bytes per
value tagged ``ARROW:extension:name = lance.bfloat16`` (empty extension metadata). lance_fw writes
and reads the same tag, so a column written by either library reads back as bfloat16 in the other.

Conversion from Python floats follows pylance's (Rust ``half``): the value is first rounded to
float32, then to bfloat16 by round-to-nearest-even on the upper 16 bits, a NaN kept quiet. numpy
interop (``to_numpy``/``from_numpy``) needs the ``ml_dtypes`` package, as in pylance.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import numpy as np
import pyarrow as pa

#: The extension name pylance gives the type (read from and written to ``ARROW:extension:name``)
BFLOAT16_EXTENSION = "lance.bfloat16"
#: Bytes per bfloat16 value: the storage is ``fixed_size_binary(BFLOAT16_WIDTH)``
BFLOAT16_WIDTH = 2
#: float32 bit 15: the first bit dropped when keeping the upper 16 bits (the rounding bit)
_ROUND_BIT = 0x8000
#: Significant decimal digits that always suffice to read a float32 back exactly
_F32_MAX_DIGITS = 9
#: The quiet bit of a bfloat16 NaN (bit 6 of the 16), set as Rust ``half`` does for any NaN input
_QUIET_NAN_BIT = 0x0040


def _f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of float32 values: round to nearest, ties to even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    upper = (bits >> 16).astype(np.uint16)
    # round up when the dropped half is above one half, or exactly one half with an odd kept part
    round_up = ((bits & _ROUND_BIT) != 0) & ((bits & (3 * _ROUND_BIT - 1)) != 0)
    rounded = (upper + round_up.astype(np.uint16)).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(nan, upper | _QUIET_NAN_BIT, rounded).astype(np.uint16)


def _bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (exact: bfloat16 is float32's upper half)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _format_f32(value: float) -> str:
    """A float32 as Rust's ``Display`` writes it (what pylance prints): shortest digits, no exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    magnitude = abs(value)
    digits = _shortest_f32_digits(magnitude) if magnitude else Decimal(0)
    text = format(digits, "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return ("-" if math.copysign(1.0, value) < 0 else "") + text


def _shortest_f32_digits(value: float) -> Decimal:
    """The shortest decimal that reads back as the float32 ``value`` (> 0); of two equally short
    ones the nearer, a tie going up -- the choice Rust's float printing makes (numpy rounds such
    a tie to even, e.g. 0.337890625: Rust ``0.33789063``, numpy ``0.33789062``)."""
    exact = Decimal(value)
    target = np.float32(value)
    for significant in range(1, _F32_MAX_DIGITS + 1):
        step = Decimal(1).scaleb(exact.adjusted() - significant + 1)
        low = (exact / step).to_integral_value(rounding=ROUND_FLOOR) * step
        with np.errstate(over="ignore"):  # a candidate past float32's range is never a fit
            fits = [c for c in (low, low + step) if np.float32(float(c)) == target]
        if fits:
            return min(fits, key=lambda c: (abs(c - exact), -c))
    return exact


class BFloat16:
    """One bfloat16 value (pylance's ``lance.arrow.BFloat16``): built from a real number, compared
    and ordered as its float value; unhashable, as pylance's."""

    __slots__ = ("_bits",)

    def __init__(self, value: float) -> None:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
            raise TypeError(f"argument 'value': must be real number, not {type(value).__name__}")
        self._bits = int(bf16_bits_of(np.array([float(value)]))[0])

    @classmethod
    def from_bytes(cls, data: bytes) -> BFloat16:
        """The value of two little-endian bytes (a storage slot of a bfloat16 array)."""
        if len(data) != BFLOAT16_WIDTH:
            raise ValueError(f"BFloat16::from_bytes: expected {BFLOAT16_WIDTH} bytes, got {len(data)}")
        out = cls.__new__(cls)
        out._bits = int.from_bytes(data, "little")
        return out

    def as_float(self) -> float:
        return float(_bf16_bits_to_f32(np.array([self._bits], dtype=np.uint16))[0])

    def _other(self, other: object) -> float | None:
        return other.as_float() if isinstance(other, BFloat16) else None

    def __eq__(self, other: object) -> bool:
        value = self._other(other)
        return value is not None and self.as_float() == value

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: BFloat16) -> bool:
        return self.as_float() < other.as_float()

    def __le__(self, other: BFloat16) -> bool:
        return self.as_float() <= other.as_float()

    def __gt__(self, other: BFloat16) -> bool:
        return self.as_float() > other.as_float()

    def __ge__(self, other: BFloat16) -> bool:
        return self.as_float() >= other.as_float()

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return _format_f32(self.as_float())

    __repr__ = __str__


class BFloat16Type(pa.ExtensionType):
    """``lance.bfloat16``: storage ``fixed_size_binary(2)``, empty extension metadata."""

    def __init__(self) -> None:
        pa.ExtensionType.__init__(self, pa.binary(BFLOAT16_WIDTH), BFLOAT16_EXTENSION)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> BFloat16Type:
        return cls()

    def __arrow_ext_class__(self) -> type:
        return BFloat16Array

    def __arrow_ext_scalar_class__(self) -> type:
        return BFloat16Scalar

    def to_pandas_dtype(self) -> Any:
        return PandasBFloat16Type()

    def __reduce__(self) -> tuple[Any, ...]:
        return BFloat16Type.__arrow_ext_deserialize__, (self.storage_type, b"")


def _ml_bfloat16() -> Any:
    """``ml_dtypes.bfloat16``, numpy's bfloat16 dtype (ImportError without it, as in pylance)."""
    from ml_dtypes import bfloat16  # type: ignore[import-not-found,unused-ignore]

    return bfloat16


class BFloat16Array(pa.ExtensionArray):
    """An Arrow array of bfloat16 values (``lance.bfloat16`` over ``fixed_size_binary(2)``)."""

    def __repr__(self) -> str:
        return f"<lance.arrow.BFloat16Array object at 0x{id(self):016x}>\n{self}"

    def __str__(self) -> str:
        shown = [f"  {v}" for v in self] if len(self) < 22 else None
        if shown is not None:
            return "[\n" + ",\n".join(shown) + "\n]"
        head = ",\n".join(f"  {v}" for v in self[:10])
        tail = ",\n".join(f"  {v}" for v in self[-10:])
        return f"[\n{head},\n...\n{tail}\n]"

    def to_numpy(self, zero_copy_only: bool = False) -> np.ndarray:
        """The values as an ``ml_dtypes.bfloat16`` array (ValueError with nulls, as pylance)."""
        if self.null_count > 0:
            raise ValueError("Cannot convert null values to numpy")
        bfloat16 = _ml_bfloat16()
        storage = self.storage
        data = storage.buffers()[1]
        start = storage.offset * BFLOAT16_WIDTH
        return np.frombuffer(data, dtype=bfloat16, count=len(storage), offset=start)

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> BFloat16Array:
        """An array of a one-dimensional ``ml_dtypes.bfloat16`` numpy array."""
        if array.dtype != _ml_bfloat16():
            raise ValueError("Cannot convert non-bfloat16 values to BFloat16Array")
        if array.ndim != 1:
            raise ValueError("Cannot convert multi-dimensional array to BFloat16Array")
        return from_bf16_bits(array.view(np.uint16), None)


def from_bf16_bits(bits: np.ndarray, valid: np.ndarray | None) -> BFloat16Array:
    """A BFloat16Array of uint16 bit patterns (``valid``: False where null)."""
    little = np.ascontiguousarray(bits, dtype="<u2")
    validity = None
    nulls = 0
    if valid is not None and not valid.all():
        validity = pa.array(valid, pa.bool_()).buffers()[1]
        nulls = int((~valid).sum())
    storage = pa.Array.from_buffers(
        pa.binary(BFLOAT16_WIDTH), len(little), [validity, pa.py_buffer(little.tobytes())], nulls
    )
    out = pa.ExtensionArray.from_storage(BFloat16Type(), storage)
    return out


def bf16_bits_of(values: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns of floating values (float16/32/64), rounded as pylance rounds."""
    with np.errstate(over="ignore"):  # beyond float32's range is infinity, as in pylance
        return _f32_to_bf16_bits(np.asarray(values).astype(np.float32))


def bf16_values_of(array: pa.Array) -> np.ndarray:
    """The float32 values of a bfloat16 array (0 where null)."""
    storage = array.storage if isinstance(array, pa.ExtensionArray) else array
    raw = np.frombuffer(storage.buffers()[1], dtype="<u2", count=len(storage), offset=storage.offset * 2)
    return _bf16_bits_to_f32(raw)


def bfloat16_array(values: Iterable[float | None]) -> BFloat16Array:
    """A BFloat16Array of Python numbers and Nones (each rounded to float32, then to bfloat16)."""
    items = list(values)
    floats = np.zeros(len(items), dtype=np.float64)
    valid = np.ones(len(items), dtype=bool)
    for i, item in enumerate(items):
        if item is None:
            valid[i] = False
        elif isinstance(item, (str, bytes)) or not hasattr(item, "__float__"):
            raise TypeError(f"argument 'values': must be real number, not {type(item).__name__}")
        else:
            floats[i] = float(item)
    return from_bf16_bits(bf16_bits_of(floats), valid)


class BFloat16Scalar(pa.ExtensionScalar):
    """One slot of a BFloat16Array: ``as_py`` gives a ``BFloat16`` (None when null)."""

    def as_py(self, **kwargs: Any) -> BFloat16 | None:
        value = self.value
        if value is None:
            return None
        return BFloat16.from_bytes(value.as_py(**kwargs))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BFloat16):
            return self.as_py() == other
        if isinstance(other, BFloat16Scalar):
            return self.as_py() == other.as_py()
        if type(other).__name__ == "bfloat16":  # an ml_dtypes scalar
            return self.as_py() == BFloat16.from_bytes(other.tobytes())  # type: ignore[attr-defined]
        return False

    __hash__ = None  # type: ignore[assignment]


# -- pandas ---------------------------------------------------------------------------------------
from pandas.api.extensions import (  # noqa: E402  (after the Arrow types it wraps)
    ExtensionArray,
    ExtensionDtype,
    register_extension_dtype,
)


@register_extension_dtype
class PandasBFloat16Type(ExtensionDtype):
    """The pandas dtype of a bfloat16 column (``"lance.bfloat16"``), as pylance registers it."""

    kind = "f"
    na_value = None
    name = BFLOAT16_EXTENSION
    names = None
    type = BFloat16
    _is_numeric = True

    def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> PandasBFloat16Array:
        return PandasBFloat16Array(array)

    @classmethod
    def construct_array_type(cls) -> Any:
        return PandasBFloat16Array

    @classmethod
    def construct_from_string(cls, string: str) -> PandasBFloat16Type:
        if string == BFLOAT16_EXTENSION:
            return cls()
        raise TypeError(f"Cannot construct a '{cls.__name__}' from '{string}'")


class PandasBFloat16Array(ExtensionArray):
    """A pandas extension array over a BFloat16Array (the subset of the interface pylance has)."""

    dtype = PandasBFloat16Type()

    def __init__(self, data: Any) -> None:
        self.data = data

    @classmethod
    def _from_sequence(cls, scalars: Any, *, dtype: Any = None, copy: bool = False) -> PandasBFloat16Array:
        return cls(bfloat16_array(scalars))

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, int):
            return self.data[item].as_py()
        if isinstance(item, slice):
            return PandasBFloat16Array(self.data[item])
        if isinstance(item, np.ndarray) and np.issubdtype(item.dtype, np.bool_):
            return PandasBFloat16Array(self.data.filter(pa.array(item)))
        raise NotImplementedError()

    def __len__(self) -> int:
        return len(self.data)

    def isna(self) -> np.ndarray:
        return self.data.is_null().to_numpy(zero_copy_only=False)

    def to_numpy(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.data.to_numpy()

    def __arrow_array__(self, type: Any = None) -> Any:
        return self.data

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> PandasBFloat16Array:
        return cls(BFloat16Array.from_numpy(array))
