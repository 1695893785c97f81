"""The full-text table functions of DuckDB's ``lance`` extension in SQL: ``lance_fts`` and
``lance_hybrid_search``, run before DuckDB sees the statement as ``lance_vector_search`` is
(``vector_functions.py`` finds the calls, registers the rows and routes these two names here).

``lance_fts('t.lance', 'text', 'puppy', k := 10, prefilter := false)``: the ``k`` best rows of a match
query on one column (``to_table(full_text_query={"query": ..., "columns": [column]}, limit=k)``, BM25 as
pylance scores it; through the column's INVERTED index when there is one, a flat search otherwise) --
the dataset's columns then ``_score``.

``lance_hybrid_search('t.lance', 'vec', [..]::FLOAT[], 'text', 'puppy', k := 10, alpha := 0.5,
oversample_factor := 4)`` fuses an exact vector search and a full-text search as the extension does (not
by reciprocal rank): each side returns ``k * oversample_factor`` rows; distances and scores are min-max
normalised over those rows (a constant side normalises to 0.5), and a row's ``_hybrid_score`` is
``alpha * (1 - norm(distance)) + (1 - alpha) * norm(score)`` in float32, a side the row is missing from
adding nothing. The ``k`` highest are returned with the dataset's columns, ``_distance``, ``_score`` and
``_hybrid_score``. The extension orders equal scores by hash-map order, so when rows with the same score
straddle the ``k`` cut-off which of them are returned is undefined there: lance_fw refuses that case
rather than pick rows the extension might not.

``prefilter := true`` restricts both searches to the rows passing the ``WHERE`` of the ``SELECT`` reading
the call (evaluated by DuckDB over the same snapshot), with the same refusals as the vector search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb import table_functions
from lance_fw.duckdb import vector_functions as vf
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.fts_search import SCORE_COLUMN  # BM25 score: pylance's name, the extension's too

FTS = "lance_fts"
HYBRID = "lance_hybrid_search"
#: The fused score column of ``lance_hybrid_search``.
HYBRID_SCORE_COLUMN = "_hybrid_score"
#: The row-id column requested from each side of a hybrid search to join them.
ROW_ID = "_rowid"
#: The extension's defaults: ``k``, the hybrid weight of the vector side and its oversampling.
DEFAULT_K = 10
DEFAULT_ALPHA = 0.5
DEFAULT_OVERSAMPLE = 4
#: Positional arguments of each function, in order.
POSITIONAL: Mapping[str, tuple[str, ...]] = {
    FTS: ("dataset", "text column", "query"),
    HYBRID: ("dataset", "vector column", "query vector", "text column", "text query"),
}
#: Named parameters each function accepts (the extension's).
NAMED: Mapping[str, tuple[str, ...]] = {
    FTS: ("k", "prefilter", "filter"),
    HYBRID: (
        "k",
        "prefilter",
        "use_index",
        "nprobs",
        "refine_factor",
        "alpha",
        "oversample_factor",
        "filter",
    ),
}
#: Columns a prefilter's WHERE may not test (they exist only after the search).
SEARCH_COLUMNS = frozenset({SCORE_COLUMN, HYBRID_SCORE_COLUMN, vf.DISTANCE_COLUMN})


@dataclass
class TextSearch:
    """One ``lance_fts`` / ``lance_hybrid_search`` call's evaluated arguments."""

    function: str
    dataset: str
    text_column: str
    query: str
    k: int
    prefilter: bool
    vector_column: str = ""
    vector: tuple[float, ...] = ()
    alpha: float = DEFAULT_ALPHA
    oversample: int = DEFAULT_OVERSAMPLE


def run(
    con: duckdb.DuckDBPyConnection,
    function: str,
    table: exp.Table,
    storage_options: Callable[[str], dict[str, str] | None],
    query: Callable[[str, object], pa.Table],
    busy: set[str],
) -> tuple[pa.Table, dict[str, str]]:
    """The rows of the search ``table`` calls and its description for ``EXPLAIN``.

    Raises:
        InvalidArgumentError: bad arguments; UnsupportedFeatureError: a shape or result lance_fw
        cannot produce exactly as the extension; DatasetNotFoundError: no dataset there.
    """
    search = _arguments(con, function, table.this)
    condition = _condition(table) if search.prefilter or function == HYBRID else None
    if condition is not None and not search.prefilter:
        raise UnsupportedFeatureError(
            f"{HYBRID} with prefilter := false under a WHERE: the extension filters each side before "
            "normalising the scores, which lance_fw does not; use prefilter := true or filter outside"
        )
    ds = vf._dataset(con, search.dataset, storage_options)
    rows = None
    if condition is not None:
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(function))
        rows = vf._passing_rows(con, ds, alias, condition, query, busy)
    result = _fts(ds, search, rows) if function == FTS else _hybrid(ds, search, rows)
    description = {
        "Lance Search Mode": "fts" if function == FTS else "hybrid",
        "Lance Dataset": search.dataset,
        "Lance Text Column": search.text_column,
        "Lance K": str(search.k),
        "Lance Prefilter": str(search.prefilter).lower(),
        "Lance Pushed Filter": "" if condition is None else condition.sql(dialect="duckdb"),
    }
    return result, description


# -- arguments --------------------------------------------------------------------------------------


def _arguments(con: duckdb.DuckDBPyConnection, function: str, call: exp.Expression) -> TextSearch:
    positional, named = table_functions.split_arguments(function, call, NAMED[function])
    names = POSITIONAL[function]
    if len(positional) != len(names):
        raise InvalidArgumentError(
            f"Invalid Input Error: {function} requires ({', '.join(names)}), "
            f"not {len(positional)} positional arguments"
        )

    values = table_functions.evaluate_constants(con, function, [*positional, *named.values()])
    given = {k: v for k, v in zip(named, values[len(names) :], strict=True) if v is not None}
    for name, value in zip(names, values, strict=False):
        if value is None:
            raise InvalidArgumentError(f"Invalid Input Error: {function} requires a non-null {name}")
    if "filter" in given:
        raise UnsupportedFeatureError(
            f"{function}: filter := (a REST namespace query_table filter); write the condition in WHERE"
        )
    k = _integer(function, "k", given.get("k", DEFAULT_K))
    if k <= 0:
        raise InvalidArgumentError(f"Invalid Input Error: {function} requires k > 0")
    prefilter = given.get("prefilter", False)
    if not isinstance(prefilter, bool):
        raise InvalidArgumentError(f"Invalid Input Error: {function}: prefilter must be a BOOLEAN")
    if function == FTS:
        return TextSearch(FTS, str(values[0]), str(values[1]), str(values[2]), k, prefilter)
    for key in ("nprobs", "refine_factor"):
        if key in given and _integer(function, key, given[key]) <= 0:
            raise InvalidArgumentError(f"Invalid Input Error: {function} requires {key} > 0")
    vector = values[2]
    if not isinstance(vector, list | tuple) or not vector:
        raise InvalidArgumentError(f"Invalid Input Error: {function} requires a non-empty query vector")
    if any(v is None for v in vector):
        raise InvalidArgumentError(f"Invalid Input Error: {function} query vector contains NULL")
    alpha = given.get("alpha", DEFAULT_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | Decimal):  # 0.5 is a DECIMAL
        raise InvalidArgumentError(f"Invalid Input Error: {function}: alpha must be a FLOAT")
    oversample = _integer(function, "oversample_factor", given.get("oversample_factor", DEFAULT_OVERSAMPLE))
    return TextSearch(
        function=HYBRID,
        dataset=str(values[0]),
        vector_column=str(values[1]),
        vector=tuple(float(v) for v in vector),
        text_column=str(values[3]),
        query=str(values[4]),
        k=k,
        prefilter=prefilter,
        alpha=float(alpha),
        oversample=oversample if oversample > 0 else DEFAULT_OVERSAMPLE,  # the extension ignores <= 0
    )


def _integer(function: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"Invalid Input Error: {function}: {key} must be an integer")
    return value


def _condition(table: exp.Table) -> exp.Expression | None:
    """The prefilter's ``WHERE`` (the vector search's shape checks), which may not test a score."""
    try:
        condition = vf._prefilter_condition(table)
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(str(exc).replace(vf.VECTOR_SEARCH, _function(table), 1)) from exc
    if condition is not None and any(
        c.name.lower() in SEARCH_COLUMNS for c in condition.find_all(exp.Column)
    ):
        raise UnsupportedFeatureError(
            f"{_function(table)} with prefilter := true and a WHERE on a score column: the score exists "
            "only after the search; use prefilter := false"
        )
    return condition


def _function(table: exp.Table) -> str:
    call = table.this
    return call.name.lower() if isinstance(call, exp.Anonymous) else str(call.sql_name()).lower()


# -- the searches -----------------------------------------------------------------------------------


def _restricted(rows: np.ndarray | None) -> dict[str, Any]:
    if rows is None:
        return {}
    return {"filter": pc.field(vf.ROW_ADDRESS).isin(pa.array(rows, pa.uint64())), "prefilter": True}


def _text_query(search: TextSearch) -> dict[str, Any]:
    """A match query on the one column, as the extension's ``FullTextSearchQuery::with_column``."""
    return {"query": search.query, "columns": [search.text_column]}


def _fts(ds: LanceDataset, search: TextSearch, rows: np.ndarray | None) -> pa.Table:
    """The dataset's columns and ``_score`` of the ``k`` best matches (among ``rows`` if given)."""
    return ds.to_table(full_text_query=_text_query(search), limit=search.k, **_restricted(rows))


def _hybrid(ds: LanceDataset, search: TextSearch, rows: np.ndarray | None) -> pa.Table:
    """The extension's fusion of an exact vector search and a full-text search (module docstring)."""
    depth = max(search.k * search.oversample, search.k)
    nearest = {"column": search.vector_column, "q": list(search.vector), "k": depth, "use_index": False}
    vector = ds.to_table(nearest=nearest, with_row_id=True, **_restricted(rows))
    text = ds.to_table(
        full_text_query=_text_query(search), limit=depth, with_row_id=True, **_restricted(rows)
    )
    columns = [f.name for f in ds.schema]
    distances = _by_row(vector, vf.DISTANCE_COLUMN)
    scores = _by_row(text, SCORE_COLUMN)
    alpha = np.float32(min(max(search.alpha, 0.0), 1.0))
    d_low, d_high = _finite_range(distances.values())
    s_low, s_high = _finite_range(scores.values())
    fused: dict[int, np.float32] = {}
    for row in {**distances, **scores}:
        total = np.float32(0.0)
        if row in distances:
            total = np.float32(total + alpha * (np.float32(1.0) - _normalise(distances[row], d_low, d_high)))
        if row in scores:
            total = np.float32(total + (np.float32(1.0) - alpha) * _normalise(scores[row], s_low, s_high))
        fused[row] = total
    ranked = sorted(fused, key=lambda r: -float(fused[r]) if np.isfinite(fused[r]) else float("inf"))
    if len(ranked) > search.k and fused[ranked[search.k - 1]] == fused[ranked[search.k]]:
        raise UnsupportedFeatureError(
            f"{HYBRID}: rows with equal _hybrid_score straddle k = {search.k}; the extension picks among "
            "them in hash order, so lance_fw will not choose; raise or lower k"
        )
    chosen = ranked[: search.k]
    source = pa.concat_tables(
        [vector.select([*columns, ROW_ID]), text.select([*columns, ROW_ID])], promote_options="none"
    )
    ids = source.column(ROW_ID).to_numpy(zero_copy_only=False)
    first = {int(r): i for i, r in reversed(list(enumerate(ids)))}
    taken = source.take(pa.array([first[r] for r in chosen], pa.int64())).select(columns)
    extra = {
        vf.DISTANCE_COLUMN: [_finite_or_none(distances.get(r)) for r in chosen],
        SCORE_COLUMN: [_finite_or_none(scores.get(r)) for r in chosen],
        HYBRID_SCORE_COLUMN: [_finite_or_none(fused[r]) for r in chosen],
    }
    for name, values in extra.items():
        taken = taken.append_column(
            pa.field(name, pa.float32(), nullable=True), pa.array(values, pa.float32())
        )
    return taken


def _by_row(table: pa.Table, column: str) -> dict[int, np.float32]:
    """Row id -> value, the best per row (a row appears once per side in lance_fw; kept general)."""
    out: dict[int, np.float32] = {}
    ids = table.column(ROW_ID).to_pylist()
    values = table.column(column).to_pylist()
    for row, value in zip(ids, values, strict=True):
        if row is None or value is None:
            continue
        out[int(row)] = np.float32(value)
    return out


def _finite_range(values: Any) -> tuple[np.float32, np.float32]:
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return np.float32(0.0), np.float32(0.0)
    return np.float32(min(finite)), np.float32(max(finite))


def _normalise(value: np.float32, low: np.float32, high: np.float32) -> np.float32:
    """Min-max normalised to [0, 1]; 0.5 when all values are (nearly) equal; 0 for non-finite."""
    if not np.isfinite(value):
        return np.float32(0.0)
    if abs(np.float32(high - low)) < np.finfo(np.float32).eps:
        return np.float32(0.5)
    return np.float32(min(max(float(np.float32((value - low) / np.float32(high - low))), 0.0), 1.0))


def _finite_or_none(value: np.float32 | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)
