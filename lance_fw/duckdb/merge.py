"""``MERGE INTO lake.main.t USING source ON … WHEN [NOT] MATCHED [BY SOURCE] [AND …] THEN …`` on an
attached Lance table: one Lance ``Update`` commit, as pylance's ``merge_insert`` makes.

DuckDB evaluates everything. The source is run once and held as an Arrow table (so a non-deterministic
source is read once); then one query per ``WHEN`` clause finds its rows -- each clause takes the rows
that match its condition and no earlier clause's, SQL's first-match rule -- with the target's row
addresses. Matched and by-source rows that are updated or deleted get deletion entries; updated and
inserted rows are appended. A target row matched by two source rows is an error (SQL and pylance agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.schema import conform

#: Names the target (with row addresses) and the materialised source are registered under.
SOURCE_NAME = "__lance_fw_merge_source"
ROW_ADDRESS = "_rowaddr"


@dataclass
class MergeResult:
    """What the clauses computed: addresses to delete, rows to append, and DuckDB's row count."""

    addresses: list[np.ndarray] = field(default_factory=list)
    rows: list[pa.Table] = field(default_factory=list)
    changed: int = 0


def plan_merge(
    tree: exp.Merge,
    ds: LanceDataset,
    target_sql: Callable[[str], exp.Expression],
    query: Callable[[exp.Expression], pa.Table],
    source: pa.Table,
) -> MergeResult:
    """Run each clause of ``tree`` (the source already registered as ``SOURCE_NAME``).

    Args:
        target_sql: the target table reference (registered with row addresses) under an alias.
        query: runs a SELECT and returns its rows.
    """
    target_alias = tree.this.alias or tree.this.name
    using = tree.args["using"]
    source_alias = using.alias or (using.name if isinstance(using, exp.Table) else "") or SOURCE_NAME
    on = tree.args.get("on")
    if on is None or tree.args.get("using_cond"):
        raise UnsupportedFeatureError("MERGE INTO … USING … USING (columns): write the ON condition")
    schema = ds.schema
    result = MergeResult()
    earlier: dict[str, list[exp.Expression]] = {"matched": [], "not_matched": [], "by_source": []}
    whens = tree.args["whens"].expressions
    if any(w.args.get("matched") for w in whens):
        duplicates = query(
            exp.select(exp.column(ROW_ADDRESS, table=target_alias))
            .from_(target_sql(target_alias))
            .join(_source(source_alias), on=on.copy())
            .group_by(exp.column(ROW_ADDRESS, table=target_alias))
            .having("count(*) > 1")
            .limit(1)
        )
        if duplicates.num_rows:
            raise InvalidArgumentError("MERGE INTO: a target row is matched by more than one source row")
    for when in whens:
        kind = (
            "matched"
            if when.args.get("matched")
            else ("by_source" if when.args.get("source") else "not_matched")
        )
        condition = when.args.get("condition")
        first_match = exp.and_(
            *(exp.not_(exp.func("coalesce", c.copy(), exp.false())) for c in earlier[kind]),
            condition.copy() if condition is not None else exp.true(),
        )
        if condition is not None:
            earlier[kind].append(condition)
        then = when.args["then"]
        if kind == "not_matched":
            select = (
                exp.select(*_insert_values(then, schema, source.schema.names, source_alias))
                .from_(_source(source_alias))
                .where(exp.and_(_no_match(target_sql(target_alias), on), first_match))
            )
            rows = query(select)
            result.rows.append(conform(rows, schema, "MERGE INTO … INSERT"))
            result.changed += rows.num_rows
            continue
        base = exp.select(exp.column(ROW_ADDRESS, table=target_alias)).from_(target_sql(target_alias))
        if kind == "matched":
            base = base.join(_source(source_alias), on=on.copy())
        else:
            base = base.where(_no_match(_source(source_alias), on))
        base = base.where(first_match)
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            rows = query(base)
        elif isinstance(then, exp.Update):
            outputs = _update_values(then, schema, source.schema.names, source_alias, kind, target_alias)
            rows = query(base.select(*outputs))
            result.rows.append(conform(rows.drop_columns([ROW_ADDRESS]), schema, "MERGE INTO … UPDATE"))
        else:
            raise UnsupportedFeatureError(f"MERGE INTO: WHEN … THEN {then.sql(dialect='duckdb')}")
        result.addresses.append(rows.column(ROW_ADDRESS).to_numpy())
        result.changed += rows.num_rows
    return result


def _source(alias: str) -> exp.Table:
    return exp.Table(
        this=exp.to_identifier(SOURCE_NAME, quoted=True), alias=exp.TableAlias(this=exp.to_identifier(alias))
    )


def _no_match(other: exp.Expression, on: exp.Expression) -> exp.Expression:
    return exp.not_(exp.Exists(this=exp.select("1").from_(other).where(on.copy())))


def _insert_values(
    then: exp.Expression, schema: pa.Schema, source_columns: list[str], alias: str
) -> list[Any]:
    if not isinstance(then, exp.Insert):
        raise UnsupportedFeatureError(f"MERGE INTO: WHEN NOT MATCHED THEN {then.sql(dialect='duckdb')}")
    columns = then.this
    values = then.expression
    if not values or isinstance(values, exp.Star) or isinstance(columns, exp.Star):  # INSERT / INSERT *
        missing = [n for n in schema.names if n not in source_columns]
        return [
            exp.alias_(
                exp.column(n, table=alias, quoted=True) if n not in missing else exp.null(), n, quoted=True
            )
            for n in schema.names
        ]
    names = [c.name for c in columns.expressions] if isinstance(columns, exp.Tuple) else schema.names
    given = values.expressions if isinstance(values, exp.Tuple) else [values]
    if len(names) != len(given):
        raise InvalidArgumentError(f"MERGE INTO … INSERT: {len(names)} column(s) but {len(given)} value(s)")
    unknown = [n for n in names if n not in schema.names]
    if unknown:
        raise InvalidArgumentError(f"MERGE INTO … INSERT: no column(s) {unknown}")
    chosen = dict(zip(names, given))
    return [exp.alias_(chosen[n].copy() if n in chosen else exp.null(), n, quoted=True) for n in schema.names]


def _update_values(
    then: exp.Update,
    schema: pa.Schema,
    source_columns: list[str],
    source_alias: str,
    kind: str,
    target_alias: str,
) -> list[Any]:
    sets: dict[str, exp.Expression] = {}
    for assignment in [e for e in then.expressions or [] if not isinstance(e, exp.Star)]:
        column = assignment.this.name
        if column not in schema.names:
            raise InvalidArgumentError(f"MERGE INTO … UPDATE: no column {column!r}")
        sets[column] = assignment.expression
    if not then.expressions or any(isinstance(e, exp.Star) for e in then.expressions):
        # UPDATE / UPDATE SET *: every column the source has, by name
        if kind == "by_source":
            raise InvalidArgumentError("MERGE INTO … WHEN NOT MATCHED BY SOURCE THEN UPDATE needs SET")
        sets = {
            n: exp.column(n, table=source_alias, quoted=True) for n in schema.names if n in source_columns
        }
    return [
        exp.alias_(
            sets[n].copy() if n in sets else exp.column(n, table=target_alias, quoted=True), n, quoted=True
        )
        for n in schema.names
    ]
