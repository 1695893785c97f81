"""pylance 14's text for the query a scalar index answers (``ScalarIndexQuery: query=[...]``).

Why rendered from the ``ScalarQuery`` and not from the filter: pylance prints the query its planner
built, not the filter as typed: ``3 < id`` shows as ``[id > 3]``, ``BETWEEN`` as
``[id >= 3 && id <= 5]``, a string without quotes (``[s = x]``), a date as ``2020-01-03``, an IN
list as ``[p.a IN [1,2]]``. A value whose spelling lance_fw does not know (timestamps, decimals,
binary ...) returns None, and the caller shows the filter's own SQL instead.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw import interfaces as q


def value_text(value: Any, single: bool = False) -> str | None:
    """A literal as DataFusion's ``ScalarValue`` displays it, or None when lance_fw does not know
    (``single``: the column is ``float32``, whose shortest digits are fewer)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        # Rust's Display: the shortest digits that read back, never an exponent, no ``.0``
        return str(np.format_float_positional(np.float32(value) if single else value, trim="-"))
    if isinstance(value, str):
        return value
    if type(value) is datetime.date:
        return value.isoformat()
    return None


def _values_text(values: tuple[Any, ...], sep: str, single: bool) -> str | None:
    texts = [value_text(v, single) for v in values]
    return None if any(t is None for t in texts) else sep.join(t for t in texts if t is not None)


def _range_text(column: str, query: q.RangeQuery, single: bool) -> str | None:
    parts = []
    if query.lower is not None:
        lower = value_text(query.lower, single)
        parts.append(None if lower is None else f"{column} {'>=' if query.lower_inclusive else '>'} {lower}")
    if query.upper is not None:
        upper = value_text(query.upper, single)
        parts.append(None if upper is None else f"{column} {'<=' if query.upper_inclusive else '<'} {upper}")
    if not parts or any(p is None for p in parts):
        return None
    return " && ".join(p for p in parts if p is not None)


def query_text(column: str, query: q.ScalarQuery, t: pa.DataType) -> str | None:
    """pylance's text for ``query`` on ``column`` (its quoted path, of type ``t``), or None when
    unknown."""
    single = pa.types.is_float32(t) or (pa.types.is_list(t) and pa.types.is_float32(t.value_type))
    if isinstance(query, q.EqualsQuery):
        value = value_text(query.value, single)
        return None if value is None else f"{column} = {value}"
    if isinstance(query, q.RangeQuery):
        return _range_text(column, query, single)
    if isinstance(query, q.IsNullQuery):
        return f"{column} IS NULL"
    if isinstance(query, q.PrefixQuery):
        return f"{column} LIKE '{query.prefix}%'"
    if isinstance(query, q.InQuery):
        values = _values_text(query.values, ",", single)
        return None if values is None else f"{column} IN [{values}]"
    if isinstance(query, (q.ContainsAnyQuery, q.ContainsAllQuery)):
        values = _values_text(query.values, ", ", single)
        function = "array_has_all" if isinstance(query, q.ContainsAllQuery) else "array_has_any"
        return None if values is None else f"{function}({column}, List([{values}]))"
    return None


def merge_ranges(a: q.RangeQuery, b: q.RangeQuery) -> q.ScalarQuery | None:
    """``a AND b`` on one column as one query, as pylance's planner folds them
    (``id > 3 AND id < 10`` -> ``[id > 3 && id < 10]``; ``id >= 3 AND id <= 3`` -> ``[id = 3]``);
    None when the bounds do not compare (the caller keeps an AND of two leaves)."""
    try:
        lower, lower_inclusive = _tighter(a.lower, a.lower_inclusive, b.lower, b.lower_inclusive, max)
        upper, upper_inclusive = _tighter(a.upper, a.upper_inclusive, b.upper, b.upper_inclusive, min)
    except TypeError:
        return None
    if lower is not None and lower == upper and lower_inclusive and upper_inclusive:
        return q.EqualsQuery(lower)
    return q.RangeQuery(lower, lower_inclusive, upper, upper_inclusive)


def _tighter(x: Any, x_inclusive: bool, y: Any, y_inclusive: bool, pick: Any) -> tuple[Any, bool]:
    if x is None:
        return y, y_inclusive
    if y is None:
        return x, x_inclusive
    if x == y:
        return x, x_inclusive and y_inclusive
    return (x, x_inclusive) if pick(x, y) == x else (y, y_inclusive)
