"""Lance table functions in SQL: ``SELECT … FROM lance_config('ns.main.t')``, ``lance_compact_files(…)``, …

DuckDB's Python API cannot register table functions, so a statement calling one is rewritten before
DuckDB sees it: the call's arguments are evaluated by DuckDB (so any constant expression works), the
function runs in lance_fw (one Lance commit for those that change the dataset, at that moment, as the
extension's do), and its result -- always small: key/value rows, a count, a version list -- replaces the
call as an inline ``VALUES`` table with the extension's column names and types.

The dataset argument is an attached table's name (``ns.main.t``, ``ns.t``) or a dataset path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

import lance_fw
from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb.catalog import resolve
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

#: Result columns of the key/value listings and of the functions that change a dataset.
KV_COLUMNS = (("Key", "VARCHAR"), ("Value", "VARCHAR"))
COUNT_COLUMNS = (("Count", "BIGINT"),)
#: What a function that changed a dataset reports (the extension's convention: one row, 1).
DONE = [(1,)]


@dataclass(frozen=True)
class TableFunction:
    """One SQL table function: its argument count range, result columns and implementation."""

    name: str
    arguments: tuple[int, int]
    columns: tuple[tuple[str, str], ...]
    run: Callable[[LanceDataset, list[Any]], list[tuple[Any, ...]]]


def _kv(mapping: dict[str, str] | None) -> list[tuple[Any, ...]]:
    return sorted((str(k), str(v)) for k, v in (mapping or {}).items())


def _text_argument(value: Any, what: str) -> str:
    if value is None or value == "":
        raise InvalidArgumentError(f"{what} cannot be NULL or empty")
    return str(value)


def _compact(ds: LanceDataset, args: list[Any]) -> list[tuple[Any, ...]]:
    ds.optimize.compact_files()
    return DONE


def _cleanup(ds: LanceDataset, args: list[Any]) -> list[tuple[Any, ...]]:
    seconds = 0 if args[0] is None else int(args[0])
    delete_unverified = bool(args[1]) if args[1] is not None else False
    ds.cleanup_old_versions(older_than=timedelta(seconds=seconds), delete_unverified=delete_unverified)
    return DONE


def _versions(ds: LanceDataset, args: list[Any]) -> list[tuple[Any, ...]]:
    return [(v["version"], v["timestamp"]) for v in ds.versions()]


FUNCTIONS: dict[str, TableFunction] = {
    f.name: f
    for f in (
        TableFunction("lance_compact_files", (0, 0), COUNT_COLUMNS, _compact),
        TableFunction("lance_cleanup_old_versions", (2, 2), COUNT_COLUMNS, _cleanup),
        TableFunction(
            "lance_versions", (0, 0), (("version", "BIGINT"), ("timestamp", "TIMESTAMP")), _versions
        ),
    )
}

#: Cheap test before parsing: a statement that calls one of the functions.
_CALLS = re.compile(r"\b(" + "|".join(FUNCTIONS) + r")\s*\(", re.I)


def register(function: TableFunction) -> None:
    """Add a table function (a later module of the front end adds its own, e.g. the metadata ones)."""
    global _CALLS
    FUNCTIONS[function.name] = function
    _CALLS = re.compile(r"\b(" + "|".join(FUNCTIONS) + r")\s*\(", re.I)


def may_call(statement: str) -> bool:
    """Whether ``statement`` may call a Lance table function (a quick textual test)."""
    return _CALLS.search(statement) is not None


def replace_calls(
    con: duckdb.DuckDBPyConnection,
    tree: exp.Expr,
    storage_options: Callable[[str], dict[str, str] | None],
) -> bool:
    """Run each Lance table function called in ``tree`` and put its rows in its place (in place).

    Returns:
        Whether any call was replaced.
    Raises:
        InvalidArgumentError: wrong arguments; LanceError: what the function itself raises.
    """
    changed = False
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if not isinstance(call, exp.Anonymous | exp.Func):
            continue
        name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
        function = FUNCTIONS.get(name)
        if function is None:
            continue
        values = _evaluate(con, name, list(call.expressions))
        if not values:
            raise InvalidArgumentError(f"{name}: the first argument names the dataset")
        low, high = function.arguments
        if not low <= len(values) - 1 <= high:
            raise InvalidArgumentError(
                f"{name} takes {low + 1}"
                + (f" to {high + 1}" if high != low else "")
                + f" argument(s), not {len(values)}"
            )
        ds = open_target(con, name, values[0], storage_options)
        rows = function.run(ds, values[1:])
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name))
        table.replace(exp.Subquery(this=_rows_query(function.columns, rows), alias=alias))
        changed = True
    return changed


def _evaluate(con: duckdb.DuckDBPyConnection, name: str, arguments: Sequence[exp.Expression]) -> list[Any]:
    if not arguments:
        return []
    if any(isinstance(a, exp.PropertyEQ | exp.Kwarg) for a in arguments):
        raise UnsupportedFeatureError(f"{name}: named arguments")
    return evaluate_constants(con, name, arguments)


def evaluate_constants(
    con: duckdb.DuckDBPyConnection, name: str, arguments: Sequence[exp.Expression]
) -> list[Any]:
    """The values of a table function's argument expressions, computed by DuckDB (any constant
    expression works; prepared-statement parameters are refused, naming the function)."""
    if any(a.find(exp.Placeholder, exp.Parameter) for a in arguments):
        raise UnsupportedFeatureError(f"{name}: prepared-statement parameters as arguments")
    select = ", ".join(a.sql(dialect="duckdb") for a in arguments)
    con.abort()
    return list(con.sql(f"SELECT {select}").fetchall()[0])


def split_arguments(
    function: str, call: exp.Expression, known: Sequence[str]
) -> tuple[list[exp.Expression], dict[str, exp.Expression]]:
    """A call's positional arguments and its named ones (``k = 10``, ``k := 10``, ``k => 10``).

    Raises:
        InvalidArgumentError: a name outside ``known`` (the list is in the message), or one given twice.
    """
    positional: list[exp.Expression] = []
    named: dict[str, exp.Expression] = {}
    for argument in call.expressions:
        key = None
        if isinstance(argument, exp.PropertyEQ | exp.Kwarg):
            key = argument.this.name
        elif (
            isinstance(argument, exp.EQ) and isinstance(argument.this, exp.Column) and not argument.this.table
        ):
            key = argument.this.name
        if key is None:
            positional.append(argument)
            continue
        key = key.lower()
        if key not in known:
            raise InvalidArgumentError(
                f"Invalid Input Error: {function}: unknown named parameter {key!r} (known: {', '.join(known)})"
            )
        if key in named:
            raise InvalidArgumentError(f"Invalid Input Error: {function}: {key} given twice")
        named[key] = argument.expression
    return positional, named


def open_target(
    con: duckdb.DuckDBPyConnection,
    name: str,
    target: Any,
    storage_options: Callable[[str], dict[str, str] | None],
) -> LanceDataset:
    text = _text_argument(target, f"{name}: the dataset")
    try:
        table = sqlglot.parse_one(text, read="duckdb", into=exp.Table)
    except sqlglot.errors.ParseError:
        table = None
    found = resolve(con, table) if isinstance(table, exp.Table) else None
    if found is not None:
        catalog, table_name = found
        return lance_fw.dataset(catalog.path(table_name), storage_options=catalog.storage_options)
    return lance_fw.dataset(text, storage_options=storage_options(text))


def _rows_query(columns: tuple[tuple[str, str], ...], rows: list[tuple[Any, ...]]) -> exp.Expression:
    """``SELECT`` of literal rows with the given column names and DuckDB types (none: no rows)."""
    names = [exp.to_identifier(n, quoted=True) for n, _ in columns]
    if not rows:
        nulls = [exp.alias_(exp.cast(exp.null(), t), n, quoted=True) for n, t in columns]
        return exp.select(*nulls).where(exp.false())
    values = exp.values(
        [tuple(exp.cast(_literal(v), t) for v, (_, t) in zip(row, columns)) for row in rows],
        alias="rows",
        columns=[n.this for n in names],
    )
    return exp.select(*[exp.column(n.this, quoted=True) for n in names]).from_(values)


def _literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))
