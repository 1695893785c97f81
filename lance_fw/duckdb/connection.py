"""``Connection``: a DuckDB connection on which every statement resolves its ``lance_scan`` calls.

It forwards everything to the ``duckdb.DuckDBPyConnection`` it holds (``.con``), except the calls that
run or bind a statement, which go through ``statement.run_statement``. Relations are built by DuckDB's
own relation layer with this object as their connection, so each fetch of a relation (a new statement in
DuckDB: it runs again on every read) binds and runs through here as well, and reads the latest version.
"""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from lance_fw.duckdb import routing
from lance_fw.duckdb.s3_secrets import UNREDACTED_SETTING
from lance_fw.duckdb.statement import (
    Call,
    Parameters,
    Query,
    binder,
    execute,
    remember_captured,
    run_statement,
    statements,
    typed,
)
from lance_fw.errors import UnsupportedFeatureError

_T = TypeVar("_T")

_relation: types.ModuleType | None
try:  # DuckDB >= 2.0 builds relations in Python, over the connection object they are given
    from duckdb import _relation
except ImportError:  # pragma: no cover - older DuckDB
    _relation = None


def _relation_layer() -> types.ModuleType:
    if _relation is None or not hasattr(_relation, "CONNECTION_METHODS"):
        raise UnsupportedFeatureError(
            f"relations over lance_scan with duckdb {duckdb.__version__}: use "
            "execute(); relations need DuckDB's Python relation layer (duckdb >= 2.0)"
        )
    return _relation


#: The relation layer's other connection calls that bind SQL text it is given (besides _bind/_submit).
_BINDS_SQL = frozenset({"_create_view", "_prepare_script"})


class Connection:
    """A DuckDB connection whose statements may use ``lance_scan(path [, version := n])``."""

    def __init__(
        self,
        database: str = ":memory:",
        read_only: bool = False,
        config: dict | None = None,
        *,
        connection: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        from lance_fw.duckdb import install

        if connection is None:
            # lance_fw reads the S3 secret matching each s3:// dataset (s3_secrets.py), which DuckDB only
            # shows unredacted when the connection allows it; a config that says otherwise is kept.
            config = {UNREDACTED_SETTING: True, **(config or {})}
            connection = duckdb.connect(database, read_only=read_only, config=config)
        self.con = install(connection)

    # -- statements -----------------------------------------------------------------------------

    def execute(self, query: Query, parameters: Parameters = None) -> Connection:
        execute(self.con, query, parameters)
        return self

    def executemany(self, query: Query, parameters: Sequence[Parameters] | None = None) -> Connection:
        """Each parameter set is its own statement, with its own snapshots (DuckDB would bind once)."""
        if not parameters:
            self.con.executemany(query, parameters)
            return self
        for values in parameters:
            execute(self.con, query, values)
        return self

    def sql(self, query: Query, *, alias: str = "", params: Parameters = None) -> duckdb.DuckDBPyRelation:
        """A relation (lazy: each fetch runs it again, with the latest version of each dataset)."""
        layer = _relation_layer()
        parts = statements(self.con, query)
        for statement in parts[:-1]:
            execute(self.con, statement)
        last = parts[-1]
        if routing.needs_routing(self.con, last):
            # Lance table functions, searches, attached tables and index DDL exist only in lance_fw's
            # statement path: run it now and hand back its rows (computed once, not at each fetch)
            execute(self.con, last, params)
            if not isinstance(last, str) or not routing.returns_rows(last):
                self.con.abort()  # a command's status row: DuckDB's con.sql returns None for it
                # (as DuckDB's own stubs do, the relation type stays the annotation)
                return None  # type: ignore[return-value]
            with warnings.catch_warnings():  # the rows are wanted as a table: its one copy is ours
                warnings.simplefilter("ignore", UserWarning)
                rows = self.con.to_arrow_table()
            relation = self.con.from_arrow(rows)
            return relation.set_alias(alias) if alias else relation
        return layer.sql(self, last, alias, params)

    query = sql
    from_query = sql

    def cursor(self) -> Connection:
        return Connection(connection=self.con.cursor())

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what DuckDB's relation layer calls on its connection ------------------------------------

    def _bind(self, sql: Query, **options: Any) -> Any:
        signature = run_statement(self.con, Call(self.con._bind, (sql,), options), sql=sql)
        if options.get("capture"):  # (names, types, parameters, return type, deferred, captured, …)
            remember_captured(self.con, signature[_CAPTURED])
        return signature

    def _submit(self, sql: Query, values: Parameters, *rest: Any) -> Any:
        result = run_statement(
            self.con, Call(self.con._submit, (sql, values, *rest)), binder(self.con, sql, values), sql
        )
        return _StreamedResult(self.con, result) if _STREAM in rest else result

    def __getattr__(self, name: str) -> Any:
        if _relation is not None and name in getattr(_relation, "CONNECTION_METHODS", {}):
            method = _relation.CONNECTION_METHODS[name]
            return lambda *args, **kwargs: method(self, *args, **kwargs)
        attribute = getattr(self.con, name)
        if name in _BINDS_SQL:
            return lambda *args, **kwargs: run_statement(self.con, Call(attribute, args, kwargs))
        if callable(attribute):
            return _typing_errors(self.con, attribute)  # fetches of a result still streaming
        return attribute


def _typing_errors(con: duckdb.DuckDBPyConnection, function: Callable[..., _T]) -> Callable[..., _T]:
    """``function`` raising the typed error behind a DuckDB error, when a dataset raised one."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> _T:
        try:
            return function(*args, **kwargs)
        except (duckdb.Error, OSError) as exc:
            error = typed(con, exc)
            if error is exc:
                raise
            raise error from exc

    return call


#: Where ``_bind(..., capture=True)`` returns the (name, handle) pairs of the sources DuckDB captured.
_CAPTURED = 5

#: The format argument with which the relation layer asks for a result it streams to Arrow.
_STREAM = "stream"


class _StreamedResult:
    """A result the relation layer streams to Arrow: rows are read after the statement returned, so an
    error a dataset raises surfaces in the reader (as ``OSError``); it is raised typed there."""

    def __init__(self, con: duckdb.DuckDBPyConnection, result: Any) -> None:
        self._con = con
        self._result = result

    def arrow_reader(self) -> pa.RecordBatchReader:
        reader = _typing_errors(self._con, self._result.arrow_reader)()

        def batches() -> Iterator[pa.RecordBatch]:
            next_batch = _typing_errors(self._con, reader.read_next_batch)
            while True:
                try:
                    yield next_batch()
                except StopIteration:
                    return

        return pa.RecordBatchReader.from_batches(reader.schema, batches())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._result, name)


def connect(database: str = ":memory:", read_only: bool = False, config: dict | None = None) -> Connection:
    return Connection(database, read_only, config)
