"""How pylance 14 prints a BTREE index's min and max in ``index_stats`` (DataFusion's
``ScalarValue`` display): integers and temporal values other than dates as the stored integer,
floats in shortest positional form (``2``, ``-0``, ``NaN``, ``inf``), booleans ``true``/``false``,
binary as upper-case hex, decimals as ``Some(<unscaled>),<precision>,<scale>``, null as ``NULL``."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

#: the numpy type whose shortest form DataFusion prints: a half float displays as its float32 value
_NUMPY_FLOAT: dict[int, type[np.floating[Any]]] = {16: np.float32, 32: np.float32, 64: np.float64}


def format_stat(scalar: pa.Scalar) -> str:
    """``scalar`` as pylance's statistics show it."""
    if not scalar.is_valid:
        return "NULL"
    t = scalar.type
    if pa.types.is_floating(t):
        value = float(scalar.as_py())
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return str(np.format_float_positional(_NUMPY_FLOAT[t.bit_width](value), unique=True, trim="-"))
    if pa.types.is_boolean(t):
        return "true" if scalar.as_py() else "false"
    if pa.types.is_date(t):
        value = scalar.as_py()
        assert isinstance(value, datetime.date)
        return value.isoformat()
    if pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return str(scalar.cast(pa.int64()).as_py())
    if pa.types.is_decimal(t):
        value = scalar.as_py()
        assert isinstance(value, decimal.Decimal)
        unscaled = int(value.scaleb(t.scale))
        return f"Some({unscaled}),{t.precision},{t.scale}"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(scalar.as_py()).hex().upper()
    return str(scalar.as_py())
