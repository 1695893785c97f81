"""How a scan evaluates a filter: the matcher per batch and the fields it must read first.

Why here (not in ``api/``): the scanner, ``delete`` and the Spark reader all plan filters the same
way over a table ``Snapshot``; keeping the one planner in ``query/`` lets them share it without
reaching into ``LanceDataset``.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util.lru import LruCache
from lance_fw.errors import InvalidArgumentError
from lance_fw.query.arrow_filter import lance_sql
from lance_fw.query.filter import filter_columns, parse_filter
from lance_fw.query.index_plan import IndexPlan, Tree, index_tree, plan_of
from lance_fw.schema import LanceField
from lance_fw.table.matcher import Matcher, matcher_for
from lance_fw.table.rows import with_row_columns
from lance_fw.table.snapshot import Snapshot


class FilterPlan(NamedTuple):
    """A filter's evaluation: the matcher per batch, the fields it reads, and (when scalar indices
    answer part of it) the candidate rows of the fragments they cover."""

    matcher: Matcher
    fields: list[LanceField]
    scalar_index: IndexPlan | None = None


def filter_plan(
    snapshot: Snapshot, filter: str | pc.Expression | None, use_scalar_index: bool = True
) -> FilterPlan | None:
    """How a filter is evaluated per batch, and the fields it reads (None: no filter).

    ``use_scalar_index`` (pylance's scanner option): consult the version's scalar indices for a SQL
    filter; the matcher still re-checks every candidate row, so results never depend on it.

    Planning is a function of the version and the filter, so it is done once per filter and version
    (``PLANS_PER_VERSION`` kept): DuckDB hands the same pyarrow filter at each run of a query, and a
    point lookup otherwise spends a third of its time planning. Each scan still searches the indices
    itself (``plan_of``)."""
    if filter is None:
        return None
    key = (_filter_key(filter), use_scalar_index)
    plans = _PLANS.get(snapshot)
    if plans is None:
        plans = _PLANS.setdefault(snapshot, LruCache(PLANS_PER_VERSION))
    matcher, fields, planned = plans.get_or_load(key, lambda: _plan(snapshot, filter, use_scalar_index))
    index = None if planned is None else plan_of(snapshot, planned)
    return FilterPlan(matcher, list(fields), index)


#: Filter plans kept per version (the most recently used).
PLANS_PER_VERSION = 64
_PLANS: weakref.WeakKeyDictionary[Snapshot, LruCache] = weakref.WeakKeyDictionary()


def _filter_key(filter: str | pc.Expression) -> tuple[str, Any]:
    """What identifies a filter exactly: its text, or a pyarrow expression's serialised form (its
    ``str`` may print different literals alike, e.g. ``1`` and ``1.0``)."""
    if isinstance(filter, pc.Expression):
        _, (serialised,) = filter.__reduce__()
        return ("arrow", serialised.to_pybytes())
    if isinstance(filter, str):
        return ("sql", filter)
    filter_expression(filter, pa.schema([]))  # raises the error naming the type
    raise AssertionError("unreachable")


def _plan(
    snapshot: Snapshot, filter: str | pc.Expression, use_scalar_index: bool
) -> tuple[Matcher, tuple[LanceField, ...], tuple[Tree, bool] | None]:
    expression = filter_expression(filter, snapshot.schema)
    filter_fields = snapshot.fields(_filter_columns(filter, snapshot.schema))
    if not isinstance(filter, str) and not _binds(expression, filter_fields):  # guessed columns fell short
        filter_fields = list(snapshot.lance_schema.fields)
    planned = None
    if use_scalar_index:
        text = filter if isinstance(filter, str) else lance_sql(filter, snapshot.schema)
        planned = index_tree(snapshot, text) if text is not None else None
    return matcher_for(expression), tuple(filter_fields), planned


def filter_expression(filter: str | pc.Expression, schema: pa.Schema) -> pc.Expression:
    """A Lance SQL filter string or a pyarrow expression, as a pyarrow expression."""
    if isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        return parse_filter(filter, schema)
    raise InvalidArgumentError(
        f"filter must be a SQL string or a pyarrow.compute.Expression, not {type(filter).__name__}"
    )


def _filter_columns(filter: str | pc.Expression, schema: pa.Schema) -> list[str]:
    if isinstance(filter, str):
        return filter_columns(filter, schema) or schema.names[:1]
    return [n for n in schema.names if n in str(filter)] or schema.names[:1]


def _binds(expression: pc.Expression, fields: list[LanceField]) -> bool:
    """Whether ``expression`` can be evaluated on a batch of ``fields`` (plus _rowid, _rowaddr)."""
    schema = with_row_columns(pa.schema([f.to_arrow() for f in fields]), True, True)
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return False
    return True
