"""How a scan evaluates a filter: the matcher per batch and the fields it must read first.

Why here (not in ``api/``): the scanner, ``delete`` and the Spark reader all plan filters the same
way over a table ``Snapshot``; keeping the one planner in ``query/`` lets them share it without
reaching into ``LanceDataset``.
"""

from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import InvalidArgumentError
from lance_fw.query.arrow_filter import lance_sql
from lance_fw.query.filter import filter_columns, parse_filter
from lance_fw.query.index_plan import IndexPlan, index_plan
from lance_fw.schema import LanceField
from lance_fw.table.fragment import Matcher, matcher_for, with_row_columns
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
    filter; the matcher still re-checks every candidate row, so results never depend on it."""
    if filter is None:
        return None
    expression = filter_expression(filter, snapshot.schema)
    filter_fields = snapshot.fields(_filter_columns(filter, snapshot.schema))
    if not isinstance(filter, str) and not _binds(expression, filter_fields):  # guessed columns fell short
        filter_fields = list(snapshot.lance_schema.fields)
    index = None
    if use_scalar_index:
        text = filter if isinstance(filter, str) else lance_sql(filter, snapshot.schema)
        index = index_plan(snapshot, text) if text is not None else None
    return FilterPlan(matcher_for(expression), filter_fields, index)


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
