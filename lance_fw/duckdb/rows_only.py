"""Which ``lance_scan`` calls of a query read none of their dataset's columns, only its rows.

``SELECT count(*) FROM lance_scan('p')`` names no column, yet DuckDB reads one (the first) to count the
rows of any Arrow source. Such a call is read as its rows alone (``dataset.LiveRowCount``: a column of
nulls as long as the snapshot, counted from its metadata), as the DuckDB ``lance`` extension answers a
bare ``count(*)`` from metadata. DuckDB still computes the query; only what it scans changes, and only
where the query's result cannot depend on the values: the call is the whole ``FROM`` of its ``SELECT``,
which names no column (nor ``*`` but ``count(*)``), joins nothing, samples nothing and holds no subquery.
"""

from __future__ import annotations

from collections.abc import Collection

import duckdb
import sqlglot
from sqlglot import exp

#: What the ``SELECT`` over a call may not hold: a column (or ``*``) reads values; a join, a
#: subquery, a lateral or unnest may reach the call's columns; a sample depends on how rows are cut.
_NEEDS_VALUES = (exp.Column, exp.Join, exp.Subquery, exp.TableSample, exp.Lateral, exp.Unnest)


def may_read_rows_only(
    sql: str, tokens: list[tuple[int, duckdb.token_type]], ends: list[int], call_token: int
) -> bool:
    """A quick test on DuckDB's tokens (``ends``: where each ends) before a parse: the select list
    ahead of the call token (back to its ``SELECT``) names no column: each identifier there is a
    function's name or an ``AS`` alias, each ``*`` is ``(*)``."""

    def text(i: int) -> str:
        return sql[tokens[i][0] : ends[i]].strip().lower() if 0 <= i < len(tokens) else ""

    for i in range(call_token - 1, -1, -1):
        kind = tokens[i][1]
        if kind == duckdb.token_type.keyword and text(i) == "select":
            return True
        if kind == duckdb.token_type.identifier:
            if not text(i + 1).startswith("(") and text(i - 1) != "as":
                return False
        elif text(i) == "*" and not (text(i - 1).endswith("(") and text(i + 1).startswith(")")):
            return False
    return False


def rows_only_names(sql: str, names: Collection[str]) -> set[str]:
    """Those of ``names`` (quoted table names in the query ``sql``) every reference of which reads
    no column; none when ``sql`` does not parse (DuckDB reports its own error then)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return set()
    verdicts: dict[str, bool] = {}
    for table in tree.find_all(exp.Table):
        if table.name in names and not table.args.get("db"):
            verdicts[table.name] = verdicts.get(table.name, True) and _reads_no_column(table)
    return {name for name, rows_only in verdicts.items() if rows_only}


def _reads_no_column(table: exp.Table) -> bool:
    source = table.parent
    select = source.parent if isinstance(source, exp.From) else None
    if not isinstance(select, exp.Select):
        return False
    alias = table.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        return False
    if any(found is not table for found in select.find_all(exp.Table)):
        return False
    if any(True for _ in select.find_all(*_NEEDS_VALUES)):
        return False
    return all(isinstance(star.parent, exp.Count) for star in select.find_all(exp.Star))
