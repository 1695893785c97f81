"""Constants in Lance SQL filters: typed literals (DATE, TIMESTAMP with zones and precision,
DECIMAL casts, X'..') turned into Python values with pylance 14's rules.

Split from ``filter`` so the visitor stays readable; functions here take the visitor only to
report errors (``visitor.fail``) and to resolve cast types (``visitor.cast_type``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import zoneinfo
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

if TYPE_CHECKING:  # the visitor calls these functions with itself; filter.py imports this module
    from lance_fw.query.filter import _Visitor


@dataclass(frozen=True)
class _Timestamp:
    """A TIMESTAMP literal: nanoseconds of its wall clock normalised to UTC, at its precision."""

    ns: int
    unit: str

    def scalar(self) -> pa.Scalar:
        return pa.scalar(_truncate(self.ns, self.unit), pa.timestamp(self.unit))


#: The Python value of a SQL constant (what ``_literal_value`` answers).
LiteralValue = int | float | str | bytes | bool | decimal.Decimal | dt.date | _Timestamp | None

_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_PRECISION_UNIT = {0: "s", 3: "ms", 6: "us", 9: "ns"}
_TIMESTAMP_TEXT = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?|[A-Za-z][A-Za-z0-9_+\-/]*)?\s*"
)
_EPOCH = dt.date(1970, 1, 1)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1


def _truncate(ns: int, unit: str) -> int:
    """``ns`` in ``unit``, truncated toward zero (as Arrow's Rust casts do)."""
    q = abs(ns) // _UNIT_NS[unit]
    return q if ns >= 0 else -q


def _is_string(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _is_literal(node: exp.Expression) -> bool:
    """A constant: literals, NULL, booleans, X'..', and negations / casts / parentheses of them."""
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean, exp.HexString)):
        return True
    if isinstance(node, (exp.Neg, exp.Paren, exp.Cast, exp.TryCast, exp.TsOrDsToDate)):
        return _is_literal(node.this)
    return False


def _scalar(value: LiteralValue) -> pa.Scalar:
    if isinstance(value, _Timestamp):
        return value.scalar()
    if isinstance(value, int) and not isinstance(value, bool) and value > _INT64_MAX:
        return pa.scalar(value, pa.uint64())  # DataFusion: an integer literal past int64 is a UInt64
    return pa.scalar(value)


def _literal_value(node: exp.Expression, visitor: _Visitor) -> LiteralValue:
    """The Python value of a constant: int, float, str, bytes, bool, None, Decimal, date, _Timestamp."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.HexString):
        return bytes.fromhex(node.this)
    if isinstance(node, exp.Paren):
        return _literal_value(node.this, visitor)
    if isinstance(node, exp.Neg):
        inner = _literal_value(node.this, visitor)
        if not isinstance(inner, (int, float, decimal.Decimal)) or isinstance(inner, bool):
            raise visitor.fail(node, "negates a value that is not a number")
        if (
            isinstance(inner, int) and inner > _INT64_MAX
        ):  # a UInt64 literal negated is a Float64 in DataFusion
            return -float(inner)
        return -inner
    if isinstance(node, exp.TsOrDsToDate):
        return _parse_temporal(str(_literal_value(node.this, visitor)), "date", visitor, node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _cast_literal(node, _literal_value(node.this, visitor), visitor)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            number = int(node.this)
        except ValueError:
            return float(node.this)
        if number > _UINT64_MAX:
            raise visitor.fail(node, "does not fit a 64-bit integer: not supported")
        return number
    raise visitor.fail(node, "is not a literal")


def _cast_literal(node: exp.Cast, inner: LiteralValue, visitor: _Visitor) -> LiteralValue:
    """``CAST(<constant> AS T)`` and typed literals (DATE '..', TIMESTAMP '..', decimal(p, s) '..')."""
    if inner is None:
        visitor.cast_type(node)  # still refuse types Lance rejects
        return None
    target = visitor.cast_type(node)
    try:
        if pa.types.is_timestamp(target):
            if isinstance(inner, _Timestamp):
                return _Timestamp(inner.ns, target.unit)
            return _parse_temporal(str(inner), target.unit, visitor, node)
        if pa.types.is_date(target):
            return _parse_temporal(str(inner), "date", visitor, node)
        if pa.types.is_decimal(target):
            return _decimal(inner, target, visitor, node)
        if pa.types.is_integer(target):
            number = (
                int(inner) if isinstance(inner, (int, float, decimal.Decimal)) else int(str(inner).strip())
            )
            return pa.scalar(number).cast(target, safe=True).as_py()
        if pa.types.is_floating(target):
            if not isinstance(inner, (int, float, str, bytes, decimal.Decimal)):
                raise TypeError(f"{inner!r} is not a number")  # float() refused dates alike
            return float(inner)
        if pa.types.is_boolean(target):
            text = str(inner).strip().lower()
            if text not in ("true", "false", "1", "0", "t", "f"):
                raise ValueError(f"{inner!r} is not a boolean")
            return text in ("true", "1", "t")
        if pa.types.is_string(target):
            return inner if isinstance(inner, str) else str(inner)
        if pa.types.is_binary(target):
            return inner if isinstance(inner, bytes) else str(inner).encode()
    except (ValueError, TypeError, decimal.InvalidOperation, pa.ArrowInvalid, OverflowError) as exc:
        raise visitor.fail(node, f"is not a valid literal: {exc}") from None
    raise visitor.fail(node, "is not a supported literal")


def _decimal(
    inner: LiteralValue, target: pa.Decimal128Type, visitor: _Visitor, node: exp.Expression
) -> decimal.Decimal:
    """Rounded half away from zero to the scale (as Arrow's Rust casts); too many digits fail."""
    scale, precision = target.scale, target.precision
    if isinstance(inner, float):  # the float is scaled and rounded, as the Rust cast does
        scaled = inner * 10**scale
        value = decimal.Decimal(math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)).scaleb(-scale)
    else:
        value = decimal.Decimal(str(inner).strip())
    value = value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    if not value.is_finite() or abs(value) >= decimal.Decimal(10) ** (precision - scale):
        raise visitor.fail(node, f"is too large for DECIMAL({precision}, {scale})")
    return value


def _parse_temporal(text: str, unit: str, visitor: _Visitor, node: exp.Expression) -> dt.date | _Timestamp:
    """A DATE ('YYYY-MM-DD') or a TIMESTAMP literal ('YYYY-MM-DD[ HH:MM:SS[.f]][Z|+hh:mm|zone]')."""
    match = _TIMESTAMP_TEXT.fullmatch(text)
    if match is None or (unit == "date" and match.group(4) is not None):
        raise visitor.fail(node, f"is not a valid {'date' if unit == 'date' else 'timestamp'}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        date = dt.date(int(year), int(month), int(day))
        if unit == "date":
            if zone:
                raise ValueError("a date has no time zone")
            return date
        clock = dt.time(int(hour or 0), int(minute or 0), int(second or 0))
        offset = _offset(zone, dt.datetime.combine(date, clock))
    except (ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
        raise visitor.fail(node, f"is not a valid timestamp: {exc}") from None
    seconds = (date - _EPOCH).days * 86_400 + clock.hour * 3600 + clock.minute * 60 + clock.second - offset
    nanos = int((fraction or "0")[:9].ljust(9, "0"))
    return _Timestamp(seconds * 10**9 + nanos, unit)


def _offset(zone: str | None, local: dt.datetime) -> int:
    """Seconds east of UTC of a literal's zone suffix at its local time."""
    if not zone or zone in ("Z", "z"):
        return 0
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        seconds = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
        return seconds if zone[0] == "+" else -seconds
    # an aware datetime with a ZoneInfo always has an offset; the fallback only satisfies the type
    return int((local.replace(tzinfo=zoneinfo.ZoneInfo(zone)).utcoffset() or dt.timedelta(0)).total_seconds())


def _half(value: int | float, visitor: _Visitor, node: exp.Expression) -> pa.Scalar:
    """A number literal next to a float16 column, as pylance coerces it: rounded to the nearest
    float16 (0.1 is 0.0999755859375, 2049 is 2048), refused when that loses the number altogether:
    a finite number becoming infinity (from 65520 on) or a non-zero one becoming 0 (at or below
    2**-25). Infinity and NaN literals are kept."""
    half = pa.scalar(float(value)).cast(pa.float16(), safe=False)
    rounded = half.as_py()
    if (math.isfinite(value) and not math.isfinite(rounded)) or (value != 0 and rounded == 0):
        raise visitor.fail(node, "cannot be used with a halffloat column: out of its range")
    return half


def _float_cast_type(node: exp.Expression, visitor: _Visitor) -> pa.DataType | None:
    """The float type of ``CAST(<constant> AS FLOAT|DOUBLE)``: pylance compares such a literal in
    its own type (DataFusion's coercion), not in a float column's (None: not such a cast)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, (exp.Cast, exp.TryCast)):
        return None
    target = visitor.cast_type(node)
    return target if pa.types.is_floating(target) else None
