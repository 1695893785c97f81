"""DuckDB front end: ``SELECT ... FROM lance_scan('path' [, version := n])``.

DuckDB's Python API has no table functions, so ``lance_scan`` is a table macro (``sql/lance_scan.sql``)
over a name this module registers before each statement: the statement is tokenised, every
``lance_scan('literal' [, version := n])`` call is found, and its dataset is registered as a
``pyarrow.dataset.Dataset`` subclass. DuckDB pushes projections and filters into its ``scanner``;
the filter is applied exactly (DuckDB does not re-check it).
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads

import lance_fw

_MACRO_FILE = "lance_scan.sql"

#: Fragments DuckDB scans decode at once (worker threads; see ``query.scanner.readahead``).
READAHEAD = min(4, os.cpu_count() or 1)


def _macro_sql() -> str:
    return resources.files("lance_fw.sql").joinpath(_MACRO_FILE).read_text()


def registered_name(uri: str, version: int | None) -> str:
    key = f"{uri}@{'latest' if version is None else version}"
    return "__lance_" + hashlib.md5(key.encode()).hexdigest()


class DuckDBDataset(pads.Dataset):
    """What DuckDB scans: it calls ``scanner(columns=[...], filter=Expression)`` then ``to_reader()``."""

    def __init__(self, ds):  # noqa: D107 - pyarrow's Dataset has no Python-level constructor to call
        self._lance = ds

    @property
    def schema(self) -> pa.Schema:
        return self._lance.schema

    def scanner(self, columns=None, filter=None, **kwargs):
        """Fragments are decoded up to ``READAHEAD`` at a time in worker threads, lazily and with
        bounded buffers (DuckDB stops pulling at a LIMIT, so little is read ahead)."""
        return self._lance.scanner(columns=columns, filter=filter, batch_size=kwargs.get("batch_size"),
                                   fragment_readahead=READAHEAD)

    def count_rows(self, **kwargs) -> int:
        return self._lance.count_rows()


def register(con: duckdb.DuckDBPyConnection, uri: str, version: int | None = None, name: str | None = None) -> str:
    """Register a dataset on ``con`` (under the name ``lance_scan`` uses unless ``name`` is given)."""
    name = name or registered_name(uri, version)
    con.register(name, DuckDBDataset(lance_fw.dataset(uri, version=version)))
    return name


def lance_scan_calls(sql: str) -> list[tuple[str, int | None]]:
    """(path, version) of every ``lance_scan('path' [, version := n])`` in a statement."""
    tokens = duckdb.tokenize(sql)
    kinds = duckdb.token_type
    calls = []
    for i, (pos, kind) in enumerate(tokens):
        if kind != kinds.identifier or sql[pos:pos + len("lance_scan")].lower() != "lance_scan":
            continue
        if i + 2 >= len(tokens) or tokens[i + 2][1] != kinds.string_const:
            continue
        start = tokens[i + 2][0]
        end = tokens[i + 3][0] if i + 3 < len(tokens) else len(sql)
        path = sql[start:end].strip().rstrip(",)").strip()[1:-1].replace("''", "'")
        version = None
        if i + 6 < len(tokens) and sql[tokens[i + 4][0]:tokens[i + 5][0]].strip().lower() == "version":
            if tokens[i + 6][1] == kinds.numeric_const:
                stop = tokens[i + 7][0] if i + 7 < len(tokens) else len(sql)
                version = int(sql[tokens[i + 6][0]:stop].strip().rstrip(")").strip())
        calls.append((path, version))
    return calls


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Define the ``lance_scan`` macro on an existing connection."""
    con.execute(_macro_sql())
    return con


def prepare(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """Register every dataset ``sql`` scans (re-opened per statement: it sees the latest version)."""
    for path, version in lance_scan_calls(sql):
        register(con, path, version)
    return sql


class Connection:
    """A DuckDB connection whose statements may use ``lance_scan('path')``."""

    def __init__(self, database: str = ":memory:", **kwargs):
        self.con = install(duckdb.connect(database, **kwargs))

    def sql(self, query: str):
        return self.con.sql(prepare(self.con, query))

    def execute(self, query: str, parameters=None):
        return self.con.execute(prepare(self.con, query), parameters)

    def __getattr__(self, name):
        return getattr(self.con, name)


def connect(database: str = ":memory:", **kwargs) -> Connection:
    return Connection(database, **kwargs)


def sql(con: duckdb.DuckDBPyConnection, query: str):
    """Run one statement with ``lance_scan`` on a connection prepared with :func:`install`."""
    return con.sql(prepare(con, query))
