"""The search table functions of DuckDB's ``lance`` extension in SQL: ``lance_vector_search``, and
``lance_fts`` / ``lance_hybrid_search`` (run by ``fts_functions.py``; found and registered here).

``SELECT id, _distance FROM lance_vector_search('t.lance', 'vec', [0.1, 0.2]::FLOAT[], k := 5)`` is run
before DuckDB sees the statement, as the other table functions are (``table_functions.py``): the call's
arguments are evaluated by DuckDB, the search runs in lance_fw (``to_table(nearest=...)``, an exact flat
search) and its rows -- the dataset's columns then ``_distance`` -- take the call's place. They are an
Arrow table, registered for that statement only under a name of its own (``statement.py`` registers it
when DuckDB's binder asks for the name, and unregisters it after the statement), so every column type
reaches DuckDB as the dataset has it.

``prefilter``: without it (the default) the ``k`` nearest rows are found first and DuckDB applies the
statement's ``WHERE`` to them afterwards, which is the extension's (and Lance's) post-filter. With
``prefilter := true`` the search returns the ``k`` nearest rows among those passing the ``WHERE`` of the
``SELECT`` whose ``FROM`` is the call: DuckDB evaluates that condition over the same snapshot with the row
addresses, and the search is restricted to those rows. A condition DuckDB might push into the search from
further out (a ``WHERE`` around a subquery, CTE or join that reads the search, with no ``LIMIT`` or
aggregate between them) cannot be seen here, so those shapes are refused rather than filtered after the
top-k, which would return other rows than the extension.
"""

from __future__ import annotations

import re
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb import table_functions
from lance_fw.duckdb.catalog import rewrite_reads
from lance_fw.duckdb.explain_output import EXPLAIN_PREFIX, JSON_FORMAT, publish_plans
from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.vector_search import DEFAULT_K, DISTANCE_COLUMN

VECTOR_SEARCH = "lance_vector_search"
#: The extension's full-text and hybrid searches (``fts_functions.py`` runs them).
TEXT_SEARCHES = ("lance_fts", "lance_hybrid_search")
#: Positional arguments of ``lance_vector_search``, in order.
POSITIONAL = ("dataset", "vector column", "query vector")
#: Named parameters and their defaults (the extension's; ``metric`` is lance_fw's addition).
DEFAULTS: Mapping[str, Any] = {
    "k": DEFAULT_K,
    "use_index": True,
    "prefilter": False,
    "nprobs": None,
    "nprobes": None,  # the spelling of pylance's ``nearest`` (the extension documents ``nprobs``)
    "refine_factor": None,
    "explain_verbose": False,
    "metric": None,
    "filter": None,
}
#: Named parameters that must be positive when given (the extension's checks).
POSITIVE = ("k", "nprobs", "nprobes", "refine_factor")
#: Prefix of the name a search result is registered under for its statement (never a ``lance_scan`` name).
RESULT_PREFIX = "__lance_fw_search_"
#: The row-address column DuckDB reports the rows passing a prefilter condition by.
ROW_ADDRESS = "_rowaddr"

_CALLS = re.compile(r"\b(" + "|".join((VECTOR_SEARCH, *TEXT_SEARCHES)) + r")\s*\(", re.I)
_MISSING = re.compile(r"Table with name (" + RESULT_PREFIX + r"[0-9a-f]+) does not exist")

#: Per connection: what each search name of the statement being prepared stands for, until registered.
_PENDING: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, Any]] = weakref.WeakKeyDictionary()


@dataclass
class Search:
    """One ``lance_vector_search`` call's evaluated arguments."""

    dataset: str
    column: str
    vector: list[float]
    k: int
    prefilter: bool
    use_index: bool
    explain_verbose: bool
    metric: str | None
    tuning: dict[str, int] = field(default_factory=dict)


def may_search(statement: str) -> bool:
    """Whether ``statement`` may call a search table function (a quick textual test)."""
    return _CALLS.search(statement) is not None


def pending(con: duckdb.DuckDBPyConnection, message: str) -> tuple[str, Any] | None:
    """(name, Arrow data) of the search result a DuckDB catalog error reports missing, if it is one;
    taken off the pending list (the statement runner registers it for the statement)."""
    match = _MISSING.search(message)
    if match is None:
        return None
    data = _PENDING.get(con, {}).pop(match.group(1), None)
    return None if data is None else (match.group(1), data)


def replace_searches(
    con: duckdb.DuckDBPyConnection,
    tree: exp.Expr,
    storage_options: Callable[[str], dict[str, str] | None],
    query: Callable[[str, object], pa.Table],
    busy: set[str],
    explained: list[dict[str, str]] | None = None,
) -> bool:
    """Run each search called in ``tree`` and put a name reading its rows in its place (in place).

    Args:
        query: runs a query through the statement path (it may read Lance datasets) and returns its rows.
        busy: dataset paths with writes pending in the open transaction (a prefilter may not read them).
        explained: when given, each search's description for ``EXPLAIN`` is appended to it.
    Returns:
        Whether any call was replaced.
    Raises:
        InvalidArgumentError: bad arguments; UnsupportedFeatureError: a search or statement shape lance_fw
        cannot run exactly; DatasetNotFoundError: no dataset there.
    """
    names = _PENDING.setdefault(con, {})
    names.clear()  # whatever an earlier statement left (it failed before binding it)
    calls = [t for t in tree.find_all(exp.Table) if _function_name(t) is not None]
    if not calls:
        return False
    if isinstance(tree, exp.Create) and str(tree.args.get("kind")).upper() == "VIEW":
        raise UnsupportedFeatureError(
            "CREATE VIEW over a search table function: a view would keep one search's rows; "
            "run the search in each query"
        )
    for table in calls:
        name = _function_name(table)
        if name in TEXT_SEARCHES:  # lance_fts / lance_hybrid_search: fts_functions runs them
            from lance_fw.duckdb import fts_functions

            text_rows, described = fts_functions.run(con, name, table, storage_options, query, busy)
            if explained is not None:
                explained.append(described)
            names[text_name := f"{RESULT_PREFIX}{uuid.uuid4().hex}"] = text_rows
            text_alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name))
            table.replace(exp.Table(this=exp.to_identifier(text_name, quoted=True), alias=text_alias))
            continue
        search = _arguments(con, table.this)
        condition = _prefilter_condition(table) if search.prefilter else None
        ds = _dataset(con, search.dataset, storage_options)
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(VECTOR_SEARCH))
        rows = None
        if condition is not None:
            rows = _passing_rows(con, ds, alias, condition, query, busy)
        result = _search(ds, search, rows)
        if explained is not None:
            explained.append(_description(ds, search, alias, condition))
        result_name = f"{RESULT_PREFIX}{uuid.uuid4().hex}"
        names[result_name] = result
        table.replace(exp.Table(this=exp.to_identifier(result_name, quoted=True), alias=alias))
    return True


def _function_name(table: exp.Table) -> str | None:
    call = table.this
    if not isinstance(call, exp.Anonymous | exp.Func):
        return None
    name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
    return name if name == VECTOR_SEARCH or name in TEXT_SEARCHES else None


# -- arguments --------------------------------------------------------------------------------------


def _arguments(con: duckdb.DuckDBPyConnection, call: exp.Expression) -> Search:
    positional, named = table_functions.split_arguments(VECTOR_SEARCH, call, list(DEFAULTS))
    if len(positional) != len(POSITIONAL):
        raise InvalidArgumentError(
            f"Invalid Input Error: {VECTOR_SEARCH} takes {len(POSITIONAL)} positional arguments "
            f"({', '.join(POSITIONAL)}), not {len(positional)}"
        )
    values = _evaluate(con, [*positional, *named.values()])
    given = dict(zip(named, values[len(positional) :], strict=True))
    options = {key: default if given.get(key) is None else given[key] for key, default in DEFAULTS.items()}
    dataset, column, vector = values[: len(POSITIONAL)]
    if dataset is None or column is None:
        raise InvalidArgumentError(
            f"Invalid Input Error: {VECTOR_SEARCH}: the dataset and column cannot be NULL"
        )
    if options["filter"] is not None:
        raise UnsupportedFeatureError(
            f"{VECTOR_SEARCH}: filter := (a REST namespace query_table filter); write the condition in WHERE"
        )
    if not isinstance(vector, list | tuple) or not vector:
        raise InvalidArgumentError(f"Invalid Input Error: {VECTOR_SEARCH} requires a non-empty query vector")
    if any(v is None for v in vector):
        raise InvalidArgumentError(f"Invalid Input Error: {VECTOR_SEARCH}: the query vector holds a NULL")
    for key in POSITIVE:
        if options[key] is None:
            continue
        if isinstance(options[key], bool) or not isinstance(options[key], int):
            raise InvalidArgumentError(f"Invalid Input Error: {VECTOR_SEARCH}: {key} must be an integer")
        if options[key] <= 0:
            raise InvalidArgumentError(f"Invalid Input Error: {VECTOR_SEARCH} requires {key} > 0")
    for key in ("use_index", "prefilter", "explain_verbose"):
        if not isinstance(options[key], bool):
            raise InvalidArgumentError(f"Invalid Input Error: {VECTOR_SEARCH}: {key} must be a BOOLEAN")
    tuning = {
        "nprobes": options["nprobes"] if options["nprobes"] is not None else options["nprobs"],
        "refine_factor": options["refine_factor"],
    }
    return Search(
        dataset=str(dataset),
        column=str(column),
        vector=[float(v) for v in vector],
        k=int(options["k"]),
        prefilter=bool(options["prefilter"]),
        use_index=bool(options["use_index"]),
        explain_verbose=bool(options["explain_verbose"]),
        metric=None if options["metric"] is None else str(options["metric"]),
        tuning={key: int(value) for key, value in tuning.items() if value is not None},
    )


def _evaluate(con: duckdb.DuckDBPyConnection, arguments: list[exp.Expression]) -> list[Any]:
    """The arguments' values, computed by DuckDB (any constant expression works)."""
    return table_functions.evaluate_constants(con, VECTOR_SEARCH, arguments)


def _dataset(
    con: duckdb.DuckDBPyConnection, target: str, storage_options: Callable[[str], dict[str, str] | None]
) -> LanceDataset:
    try:
        return table_functions.open_target(con, VECTOR_SEARCH, target, storage_options)
    except DatasetNotFoundError as exc:
        raise DatasetNotFoundError(
            f"IO Error: Failed to open Lance dataset: {target} (Lance error: dataset open '{target}': {exc})"
        ) from exc


# -- the prefilter's condition ----------------------------------------------------------------------


def _prefilter_condition(table: exp.Table) -> exp.Expression | None:
    """The ``WHERE`` condition a ``prefilter := true`` search must apply before its top-k, or None.

    Raises:
        UnsupportedFeatureError: a statement shape in which DuckDB might push a condition lance_fw
            cannot see into the search.
    """
    select = table.parent
    if (
        isinstance(select, exp.Join)
        or not isinstance(select, exp.From)
        or not isinstance(select.parent, exp.Select)
    ):
        raise _refused("joined with other tables")
    select = select.parent
    if select.args.get("joins"):
        raise _refused("joined with other tables")
    if select.args.get("having") or select.args.get("qualify"):
        raise _refused("under HAVING or QUALIFY")
    alias = table.args.get("alias")
    if alias is not None and alias.columns:
        raise _refused("with column aliases")
    where = select.args.get("where")
    if where is not None and any(c.name.lower() == DISTANCE_COLUMN for c in where.find_all(exp.Column)):
        raise _refused(f"with a WHERE on {DISTANCE_COLUMN}")
    _check_outer(select)
    return None if where is None else where.this


def _refused(shape: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{VECTOR_SEARCH} with prefilter := true {shape}: lance_fw applies only the WHERE of the SELECT "
        "reading the search before the top-k; filter in that WHERE, or use prefilter := false"
    )


def _sealed(node: exp.Expr) -> bool:
    """Whether no outer condition can reach below ``node``: it keeps a LIMIT / OFFSET, or aggregates
    all its rows into one."""
    if node.args.get("limit") or node.args.get("offset"):
        return True
    if isinstance(node, exp.Select) and not node.args.get("group"):
        return any(e.find(exp.AggFunc) for e in node.expressions)
    return False


def _check_outer(node: exp.Expr) -> None:
    """Refuse when a condition around ``node`` (whose rows are the search's) might reach the search:
    a WHERE / HAVING / QUALIFY or a join of a query reading it, with nothing sealing between."""
    while not _sealed(node):
        parent = node.parent
        if isinstance(parent, exp.Subquery | exp.SetOperation):
            node = parent
        elif isinstance(parent, exp.From | exp.Join):
            node = _reader(parent)
        else:
            if isinstance(parent, exp.CTE):
                for reference in _references(parent):
                    _check_outer(_reader(reference.parent))
            return  # the statement itself, or an expression's subquery (no outer condition reaches it)


def _reader(source: exp.Expr | None) -> exp.Expr:
    """The query whose ``FROM`` is ``source``, which must neither join nor filter what it reads."""
    outer = source.parent if isinstance(source, exp.From) else None
    if outer is None or outer.args.get("joins"):
        raise _refused("read by a join")
    if any(outer.args.get(k) for k in ("where", "having", "qualify")):
        raise _refused("read by a query that filters it further out")
    return outer


def _references(cte: exp.CTE) -> list[exp.Table]:
    """The tables in the CTE's query that read it by name."""
    name = cte.alias_or_name.lower()
    scope = cte.parent.parent if cte.parent is not None else None
    if scope is None:
        return []
    return [
        t
        for t in scope.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and not t.args.get("db") and t.name.lower() == name
    ]


# -- the search -------------------------------------------------------------------------------------


def _passing_rows(
    con: duckdb.DuckDBPyConnection,
    ds: LanceDataset,
    alias: exp.TableAlias,
    condition: exp.Expression,
    query: Callable[[str, object], pa.Table],
    busy: set[str],
) -> np.ndarray:
    """The row addresses of ``ds`` passing ``condition``, as DuckDB evaluates it (same snapshot)."""
    from lance_fw.duckdb.dml import AddressedDataset  # dml routes to this module

    if condition.find(exp.Placeholder, exp.Parameter):
        raise _refused("with prepared-statement parameters in its WHERE")
    name = f"{RESULT_PREFIX}{uuid.uuid4().hex}"
    _PENDING.setdefault(con, {})[name] = AddressedDataset(ds)
    condition = condition.copy()
    rewrite_reads(con, condition, busy)
    sql = (
        exp.select(exp.column(ROW_ADDRESS, quoted=True))
        .from_(exp.Table(this=exp.to_identifier(name, quoted=True), alias=alias.copy()))
        .where(condition)
        .sql(dialect="duckdb")
    )
    try:
        rows = query(sql, None)
    except duckdb.Error as exc:
        raise _refused(f"and a WHERE DuckDB cannot evaluate over the dataset alone ({exc})") from exc
    finally:
        _PENDING.get(con, {}).pop(name, None)
    return rows.column(ROW_ADDRESS).to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)


def _search(ds: LanceDataset, search: Search, rows: np.ndarray | None) -> pa.Table:
    """The dataset's columns and ``_distance`` of the ``k`` nearest rows (among ``rows`` if given).

    ``use_index`` as given: with a vector index on the column (built by pylance or lance_fw) the
    search goes through it (``nprobes``, ``refine_factor``) as pylance's would; without one, or
    with ``use_index := false``, it is exact (flat).
    """
    if rows is None:
        return ds.to_table(nearest=_nearest(search))
    passing = pc.field(ROW_ADDRESS).isin(pa.array(rows, pa.uint64()))
    return ds.to_table(nearest=_nearest(search), filter=passing, prefilter=True)


def _nearest(search: Search) -> dict[str, Any]:
    nearest: dict[str, Any] = {
        "column": search.column,
        "q": search.vector,
        "k": search.k,
        "use_index": search.use_index,
        **search.tuning,
    }
    if search.metric is not None:
        nearest["metric"] = search.metric
    return nearest


# -- EXPLAIN ----------------------------------------------------------------------------------------


def explain(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    storage_options: Callable[[str], dict[str, str] | None],
    query: Callable[[str, object], pa.Table],
    values: object,
    busy: set[str],
) -> bool:
    """``EXPLAIN [ANALYZE] [(options)] <query calling a search>``: DuckDB's plan of the query over the
    search's rows, and in its ``physical_plan`` each search as lance_fw ran it (``Lance Use Index``,
    ``k``, prefilter, metric, and lance_fw's plan of the search: ``explain_plan``). False: no search.
    """
    match = EXPLAIN_PREFIX.match(statement)
    if match is None:
        return False
    try:
        tree = sqlglot.parse_one(statement[match.end() :], read="duckdb")
    except sqlglot.errors.ParseError:
        return False  # DuckDB reports its own syntax error
    explained: list[dict[str, str]] = []
    if not replace_searches(con, tree, storage_options, query, busy, explained):
        return False
    rows = query(match.group(0) + tree.sql(dialect="duckdb"), values)
    json_format = JSON_FORMAT.search(match.group(0)) is not None
    plans = list(zip(rows.column(0).to_pylist(), rows.column(1).to_pylist(), strict=True))
    publish_plans(con, plans, SEARCH_NODE, explained, json_format)
    return True


#: The node name a search has in the JSON plan (DuckDB shows its rows as an Arrow scan).
SEARCH_NODE = "LANCE_VECTOR_SEARCH"


def _description(
    ds: LanceDataset, search: Search, alias: exp.TableAlias, condition: exp.Expression | None
) -> dict[str, str]:
    """What EXPLAIN says of one search: the options as given and lance_fw's plan (the prefilter as
    the SQL condition; lance_fw applies it as the row addresses DuckDB found for it)."""
    plan = ds.scanner(nearest=_nearest(search)).explain_plan(verbose=search.explain_verbose)
    return {
        "Lance Table": alias.name,
        "Lance Dataset": search.dataset,
        "Lance Vector Column": search.column,
        "Lance K": str(search.k),
        "Lance Use Index": str(search.use_index).lower(),
        "Lance Index Used": "none (lance_fw searches exactly)",
        "Lance Metric": search.metric or "default",
        "Lance Prefilter": str(search.prefilter).lower(),
        "Lance Pushed Filter": "" if condition is None else condition.sql(dialect="duckdb"),
        "Lance Plan": plan.rstrip(),
    }
