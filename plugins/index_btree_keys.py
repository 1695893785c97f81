"""Key domains of the BTREE index: how a column's values and a query's Python literals compare.

Why a key domain: pylance 14 sorts ``page_data.lance`` and answers queries in the column's own
order, and a query literal may not be of the column's type (``x = 5.5`` on an int64 column, a
``datetime`` against ``timestamp[ns]``). Every supported type maps its values to *keys* that sort
as pylance sorts them and every literal to key bounds with exactly the same meaning:

* integer-like columns (ints, bool, dates, timestamps, times, durations, decimals) use Python
  ``int`` keys (the stored integer: days, units since the epoch, the unscaled decimal); a literal
  becomes an exact rational in the column's unit, so ``x >= 5.5`` on an int column is ``x >= 6``
  and ``x = 5.5`` matches nothing;
* float columns use the IEEE total order (``f64::total_cmp``: ``-NaN < -inf < ... < inf < NaN``)
  as an ``int64``, except that ``-0.0`` and ``0.0`` are one key: pylance 14 (indexed or not)
  finds ``-0.0`` for ``x = 0.0`` and neither for ``x < 0``, while ``x = 'NaN'::double`` finds only
  positive NaNs and ``x < 0`` finds the negative ones;
* string and binary columns compare bytewise (Python ``str`` order is code point order, which is
  UTF-8 byte order).
"""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util import sets
from lance_fw_plugins.index_common import is_bytes_type

#: Units per second of each Arrow time unit.
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_MICROS_PER_DAY = 86_400_000_000
_MS_PER_DAY = 86_400_000
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
#: The mask that turns IEEE-754 bits into a signed integer of the total order (``total_cmp``).
_TOTAL_ORDER_MASK = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
#: The largest Unicode code point; the first and last UTF-16 surrogates (never in UTF-8).
_MAX_CODE_POINT = 0x10FFFF
_SURROGATE_FIRST = 0xD800
_SURROGATE_END = 0xE000


class NotComparable(Exception):
    """A literal that has no meaning against the column's type (a string for an int column)."""


@dataclass(frozen=True)
class Bounds:
    """A key interval; ``None`` ends are unbounded."""

    lo: Any = None
    lo_inclusive: bool = True
    hi: Any = None
    hi_inclusive: bool = True

    def above_lo(self, key: Any) -> bool:
        """``key`` is not below the lower end."""
        return self.lo is None or key > self.lo or (self.lo_inclusive and key == self.lo)

    def below_hi(self, key: Any) -> bool:
        """``key`` is not above the upper end."""
        return self.hi is None or key < self.hi or (self.hi_inclusive and key == self.hi)


class KeyDomain:
    """The keys of one column type (see the module docstring)."""

    def keys(self, values: pa.Array) -> Any:
        """Keys of ``values`` (nulls get an arbitrary key; callers mask them)."""
        raise NotImplementedError

    def key_list(self, values: pa.Array) -> list[Any]:
        """Keys as Python objects, ``None`` for nulls (the page lookup's min/max)."""
        raise NotImplementedError

    def bounds(self, lower: Any, lower_inclusive: bool, upper: Any, upper_inclusive: bool) -> Bounds | None:
        """Key bounds of ``lower <(=) x <(=) upper``; ``None`` when nothing can match.

        Raises: ``NotComparable`` for a literal of another kind."""
        raise NotImplementedError

    def point(self, value: Any) -> Any:
        """The key equal to ``value``, or ``None`` when no value of the column equals it."""
        b = self.bounds(value, True, value, True)
        if b is None or b.lo != b.hi:
            return None
        return b.lo

    def mask(self, values: pa.Array, bounds: Bounds) -> np.ndarray:
        """Which ``values`` (non-null) lie within ``bounds``."""
        raise NotImplementedError

    def mask_in(self, values: pa.Array, points: list[Any]) -> np.ndarray:
        """Which ``values`` (non-null) have one of the keys ``points``."""
        raise NotImplementedError

    def sort_order(self, values: pa.Array) -> np.ndarray:
        """Positions of the non-null ``values`` in key order, ties in position order (stable)."""
        raise NotImplementedError


def _valid(values: pa.Array) -> np.ndarray:
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _plain(value: Any) -> Any:
    """A numpy or Arrow scalar as its Python value."""
    if isinstance(value, pa.Scalar):
        return value.as_py()
    return value.item() if isinstance(value, np.generic) else value


def _rational(value: Any) -> Fraction | float:
    """An exact rational for a numeric literal, or a non-finite float; ``NotComparable`` otherwise."""
    value = _plain(value)
    if isinstance(value, bool | int):
        return Fraction(int(value))
    if isinstance(value, float):
        return value if not math.isfinite(value) else Fraction(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if not value.is_finite() else Fraction(value)
    if isinstance(value, Fraction):
        return value
    raise NotComparable(f"{value!r} is not a number")


class IntegerDomain(KeyDomain):
    """Integer-like columns: keys are the stored integers (see the module docstring).

    ``to_units`` turns a literal into an exact rational in the column's unit (or raises
    ``NotComparable``); ``storage`` is the integer Arrow type of the column's buffer.
    """

    def __init__(self, arrow_type: pa.DataType, storage: pa.DataType, kind: str) -> None:
        self.arrow_type = arrow_type
        self.storage = storage
        self.kind = kind
        info = np.iinfo(storage.to_pandas_dtype())
        self.min_key = int(info.min)
        self.max_key = int(info.max)

    def _ints(self, values: pa.Array) -> np.ndarray:
        if self.kind == "bool":
            return np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int8)
        ints = values.view(self.storage) if values.type != self.storage else values
        if ints.null_count:
            ints = ints.fill_null(0)
        return np.asarray(ints.to_numpy(zero_copy_only=False))

    def keys(self, values: pa.Array) -> np.ndarray:
        return self._ints(values)

    def key_list(self, values: pa.Array) -> list[Any]:
        ints = self._ints(values).tolist()
        valid = _valid(values)
        return [k if v else None for k, v in zip(ints, valid.tolist(), strict=True)]

    def to_units(self, value: Any) -> Fraction | float:
        """``value`` in the column's unit."""
        value = _plain(value)
        if self.kind == "number":
            return _rational(value)
        if self.kind == "bool":
            if isinstance(value, bool):
                return Fraction(int(value))
            raise NotComparable(f"{value!r} is not a boolean")
        return _temporal_units(value, self.arrow_type)

    def bounds(self, lower: Any, lower_inclusive: bool, upper: Any, upper_inclusive: bool) -> Bounds | None:
        lo = self.min_key
        hi = self.max_key
        if lower is not None:
            q = self.to_units(lower)
            if isinstance(q, float):  # NaN sorts above every number (a cast to float); inf too
                if q == -math.inf:
                    pass
                else:
                    return None
            else:
                lo = max(lo, math.ceil(q) if lower_inclusive else math.floor(q) + 1)
        if upper is not None:
            q = self.to_units(upper)
            if isinstance(q, float):
                if q == -math.inf:
                    return None
            else:
                hi = min(hi, math.floor(q) if upper_inclusive else math.ceil(q) - 1)
        if lo > hi:
            return None
        return Bounds(lo, True, hi, True)

    def mask(self, values: pa.Array, bounds: Bounds) -> np.ndarray:
        keys = self._ints(values)
        out = _valid(values)
        if bounds.lo is not None:
            out &= keys >= bounds.lo
        if bounds.hi is not None:
            out &= keys <= bounds.hi
        return out

    def mask_in(self, values: pa.Array, points: list[Any]) -> np.ndarray:
        keys = self._ints(values)
        if len(points) == 1:  # a point lookup: one comparison, not isin's sort-based setup
            return _valid(values) & (keys == keys.dtype.type(points[0]))
        return _valid(values) & np.isin(keys, np.asarray(points, dtype=keys.dtype))

    def sort_order(self, values: pa.Array) -> np.ndarray:
        valid = np.flatnonzero(_valid(values))
        keys = self._ints(values)[valid]
        return valid[np.argsort(keys, kind="stable")]


def _temporal_units(value: Any, arrow_type: pa.DataType) -> Fraction:
    """A date/time/duration literal as an exact rational in ``arrow_type``'s unit."""
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type):
        if hasattr(value, "nanosecond") and hasattr(value, "value"):  # pandas.Timestamp
            nanos = Fraction(int(value.value))
            micros = nanos / 1000
        elif isinstance(value, datetime.datetime):
            if value.tzinfo is not None:
                offset = value.utcoffset() or datetime.timedelta(0)
                value = value.replace(tzinfo=None) - offset
            micros = Fraction(_timedelta_micros(value - _EPOCH))
        elif isinstance(value, datetime.date):
            micros = Fraction((value - _EPOCH_DATE).days * _MICROS_PER_DAY)
        else:
            raise NotComparable(f"{value!r} is not a date or timestamp")
        if pa.types.is_date32(arrow_type):
            return micros / _MICROS_PER_DAY
        if pa.types.is_date64(arrow_type):
            return micros / 1000
        return micros * _UNITS_PER_SECOND[arrow_type.unit] / 1_000_000
    if pa.types.is_time(arrow_type):
        if not isinstance(value, datetime.time):
            raise NotComparable(f"{value!r} is not a time of day")
        of_day = (value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000 + value.microsecond
        return Fraction(of_day) * _UNITS_PER_SECOND[arrow_type.unit] / 1_000_000
    if pa.types.is_duration(arrow_type):
        if hasattr(value, "value") and hasattr(value, "nanoseconds"):  # pandas.Timedelta
            return Fraction(int(value.value)) * _UNITS_PER_SECOND[arrow_type.unit] / 1_000_000_000
        if not isinstance(value, datetime.timedelta):
            raise NotComparable(f"{value!r} is not a duration")
        return Fraction(_timedelta_micros(value)) * _UNITS_PER_SECOND[arrow_type.unit] / 1_000_000
    raise NotComparable(f"{arrow_type} is not a temporal type")


def _timedelta_micros(delta: datetime.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class DecimalDomain(IntegerDomain):
    """Decimal columns: keys are the unscaled integers (value * 10**scale), compared exactly."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.arrow_type = arrow_type
        self.storage = arrow_type
        self.kind = "number"
        self.scale = arrow_type.scale
        limit = 10**arrow_type.precision
        self.min_key = -limit
        self.max_key = limit

    def _ints(self, values: pa.Array) -> np.ndarray:
        shift = decimal.Decimal(1).scaleb(self.scale)
        ints = [0 if v is None else int(v * shift) for v in values.to_pylist()]
        return np.asarray(ints, dtype=object)

    def to_units(self, value: Any) -> Fraction | float:
        q = _rational(value)
        return q if isinstance(q, float) else q * 10**self.scale

    def mask_in(self, values: pa.Array, points: list[Any]) -> np.ndarray:
        wanted = set(points)
        keys = self._ints(values)
        return _valid(values) & np.fromiter((k in wanted for k in keys), dtype=bool, count=len(keys))

    def sort_order(self, values: pa.Array) -> np.ndarray:
        valid = np.flatnonzero(_valid(values))
        order = pc.sort_indices(values.take(pa.array(valid)))
        return valid[np.asarray(order.to_numpy(), dtype=np.int64)]


class FloatDomain(KeyDomain):
    """Float columns: the IEEE total order as ``int64`` with ``-0.0`` as ``0.0`` (module docstring).

    A literal is first rounded to the column's width, as pylance 14 casts it (on a ``float32``
    column ``x = 0.1`` finds the values ``float32(0.1)`` and ``x <= 0.1`` includes them)."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.width = np.dtype(arrow_type.to_pandas_dtype()).type

    @staticmethod
    def _float_keys(floats: np.ndarray) -> np.ndarray:
        bits = (np.asarray(floats, dtype=np.float64) + 0.0).view(np.int64)
        return bits ^ ((bits >> 63) & _TOTAL_ORDER_MASK)

    def _floats(self, values: pa.Array) -> np.ndarray:
        if values.null_count:
            values = values.fill_null(pa.scalar(0.0, values.type))
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)

    def keys(self, values: pa.Array) -> np.ndarray:
        return self._float_keys(self._floats(values))

    def key_list(self, values: pa.Array) -> list[Any]:
        keys = self.keys(values).tolist()
        return [k if v else None for k, v in zip(keys, _valid(values).tolist(), strict=True)]

    def _key(self, value: Any) -> int:
        value = _plain(value)
        if isinstance(value, bool | int):
            try:
                as_float = float(value)
            except OverflowError:
                as_float = math.inf if value > 0 else -math.inf
        elif isinstance(value, float | decimal.Decimal | Fraction):
            as_float = float(value)
        else:
            raise NotComparable(f"{value!r} is not a number")
        with np.errstate(over="ignore"):
            rounded = np.asarray([as_float]).astype(self.width)
        return int(self._float_keys(rounded.astype(np.float64))[0])

    def bounds(self, lower: Any, lower_inclusive: bool, upper: Any, upper_inclusive: bool) -> Bounds | None:
        lo = _INT64_MIN
        hi = _INT64_MAX
        if lower is not None:
            lo = self._key(lower) + (0 if lower_inclusive else 1)
        if upper is not None:
            hi = self._key(upper) - (0 if upper_inclusive else 1)
        if lo > hi or lo > _INT64_MAX or hi < _INT64_MIN:
            return None
        return Bounds(lo, True, hi, True)

    def mask(self, values: pa.Array, bounds: Bounds) -> np.ndarray:
        keys = self.keys(values)
        return _valid(values) & (keys >= bounds.lo) & (keys <= bounds.hi)

    def mask_in(self, values: pa.Array, points: list[Any]) -> np.ndarray:
        return _valid(values) & sets.isin(self.keys(values), np.asarray(points, dtype=np.int64))

    def sort_order(self, values: pa.Array) -> np.ndarray:
        valid = np.flatnonzero(_valid(values))
        # the raw total order (-0.0 before 0.0), as pylance sorts; keys make them one value
        bits = self._floats(values)[valid].view(np.int64)
        raw = bits ^ ((bits >> 63) & _TOTAL_ORDER_MASK)
        return valid[np.argsort(raw, kind="stable")]


class BytesDomain(KeyDomain):
    """String and binary columns: bytewise order; keys are ``str`` / ``bytes``."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.arrow_type = arrow_type
        self.is_string = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
        #: fixed-size binary compares as binary (pyarrow's kernels do not take it)
        self.compare_type = pa.binary() if pa.types.is_fixed_size_binary(arrow_type) else arrow_type

    def _comparable(self, values: pa.Array) -> pa.Array:
        return values.cast(self.compare_type) if self.compare_type != values.type else values

    def keys(self, values: pa.Array) -> pa.Array:
        return self._comparable(values)

    def key_list(self, values: pa.Array) -> list[Any]:
        return list(values.to_pylist())

    def literal(self, value: Any) -> str | bytes:
        """``value`` as this column's Python type."""
        value = _plain(value)
        if self.is_string:
            if isinstance(value, str):
                return value
            raise NotComparable(f"{value!r} is not a string")
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        raise NotComparable(f"{value!r} is not bytes")

    def bounds(self, lower: Any, lower_inclusive: bool, upper: Any, upper_inclusive: bool) -> Bounds | None:
        lo: Any = None if lower is None else self.literal(lower)
        hi: Any = None if upper is None else self.literal(upper)
        if lo is not None and hi is not None:
            if lo > hi or (lo == hi and not (lower_inclusive and upper_inclusive)):
                return None
        return Bounds(lo, lower_inclusive, hi, upper_inclusive)

    def point(self, value: Any) -> Any:
        return self.literal(value)

    def _scalar(self, key: str | bytes) -> pa.Scalar:
        return pa.scalar(key, self.compare_type)

    def mask(self, values: pa.Array, bounds: Bounds) -> np.ndarray:
        arr = self._comparable(values)
        out = _valid(values)
        if bounds.lo is not None:
            op = pc.greater_equal if bounds.lo_inclusive else pc.greater
            out &= _bools(op(arr, self._scalar(bounds.lo)))
        if bounds.hi is not None:
            op = pc.less_equal if bounds.hi_inclusive else pc.less
            out &= _bools(op(arr, self._scalar(bounds.hi)))
        return out

    def mask_in(self, values: pa.Array, points: list[Any]) -> np.ndarray:
        arr = self._comparable(values)
        return _valid(values) & _bools(pc.is_in(arr, value_set=pa.array(points, self.compare_type)))

    def mask_prefix(self, values: pa.Array, prefix: str) -> np.ndarray:
        """Which ``values`` start with ``prefix`` (string columns)."""
        return _valid(values) & _bools(pc.starts_with(values, pattern=prefix))

    def prefix_bounds(self, prefix: str) -> Bounds:
        """The key range of strings that start with ``prefix``: [prefix, next prefix)."""
        stem = prefix.rstrip(chr(_MAX_CODE_POINT))
        if not stem:
            return Bounds(prefix, True, None, True)
        following = ord(stem[-1]) + 1
        if _SURROGATE_FIRST <= following < _SURROGATE_END:
            following = _SURROGATE_END
        return Bounds(prefix, True, stem[:-1] + chr(following), False)

    def sort_order(self, values: pa.Array) -> np.ndarray:
        valid = np.flatnonzero(_valid(values))
        subset = self._comparable(values).take(pa.array(valid, pa.int64()))
        order = pc.sort_indices(subset)
        return valid[np.asarray(order.to_numpy(), dtype=np.int64)]


def _bools(result: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


_INT_STORAGE_BY_WIDTH = {32: pa.int32(), 64: pa.int64()}


def domain_for(arrow_type: pa.DataType) -> KeyDomain | None:
    """The key domain of a column type; ``None`` when the BTREE plugin does not index it."""
    t = arrow_type
    if pa.types.is_integer(t):
        return IntegerDomain(t, t, "number")
    if pa.types.is_boolean(t):
        return IntegerDomain(t, pa.int8(), "bool")
    if pa.types.is_floating(t):
        return FloatDomain(t)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return IntegerDomain(t, pa.int32(), "temporal")
    if pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return IntegerDomain(t, pa.int64(), "temporal")
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return DecimalDomain(t)
    if is_bytes_type(t):
        return BytesDomain(t)
    return None
