"""DuckDB front end: ``SELECT ... FROM lance_scan('path' [, version := n])``.

DuckDB's Python API has no table functions, so ``lance_scan`` is a table macro (``sql/lance_scan.sql``)
naming a table whose name carries the path and version; DuckDB evaluates the arguments and looks the name
up among the Python variables of the frame the statement runs from, where lance_fw offers the dataset
under that name (``statement.py``; a query's calls spelled with literals are read by that name directly).
The dataset is a ``pyarrow.dataset.Dataset`` subclass (``dataset.py``) that answers with the snapshot of the
statement running: DuckDB pushes projections and filters into its ``scanner``, and the filter is applied
exactly.

Snapshots. Every statement run through :class:`Connection` (or :func:`sql` / :func:`execute` on a
connection prepared with :func:`install`) opens each dataset it reads when it starts: the latest version,
or the one ``version :=`` pins, and one snapshot per dataset for the whole statement. This holds however the
call is written — literals of any kind (``'…'``, ``E'…'``, ``$$…$$``), parameters (``lance_scan(?)``,
``$name``), named arguments (``p := …``), expressions (``version := 0 + 1``) — and wherever it is:

- views and table macros expand at each statement that uses them, so they read the latest version then;
- a prepared statement (``PREPARE`` / ``EXECUTE``) reads the latest version at each ``EXECUTE``;
- ``executemany`` runs each parameter set as its own statement (DuckDB's own binds once);
- a relation (``con.sql(...)``) runs again on every fetch, as DuckDB relations do, and each fetch reads
  the latest version; relations derived from it (``filter``, ``join``, …) too;
- in an explicit transaction each statement still reads the latest version when it starts: Lance
  versions are not part of DuckDB's transaction.

Object storage. An ``s3://`` dataset is opened with the DuckDB S3 secret DuckDB itself picks for its path
(``CREATE SECRET (TYPE S3, KEY_ID …, SECRET …, ENDPOINT 'host:port', URL_STYLE 'path', USE_SSL false)``,
longest ``SCOPE`` first), translated to pylance's storage options; what the secret leaves out, or every
setting when no secret matches, comes from the ``AWS_*`` environment as it is when the statement runs
(``s3_secrets.py``). :func:`connect` allows DuckDB to hand lance_fw the secret's values
(``allow_unredacted_secrets``).

A dataset that cannot be opened raises the typed ``LanceError`` (``DatasetNotFoundError`` for a missing path
or version …), and so does a failure while DuckDB reads it. Statements run on ``Connection.con`` directly
bypass all of this: there ``lance_scan`` fails with DuckDB's catalog error.
"""

from __future__ import annotations

from importlib import resources

import duckdb

from lance_fw.duckdb.connection import Connection, Parameters, connect
from lance_fw.duckdb.dataset import READAHEAD, DuckDBDataset
from lance_fw.duckdb.statement import execute

_MACRO_FILE = "lance_scan.sql"


def _macro_sql() -> str:
    return resources.files("lance_fw.sql").joinpath(_MACRO_FILE).read_text()


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Define the ``lance_scan`` macro on an existing connection; run statements that use it with
    :func:`sql` or :func:`execute` (or wrap the connection: ``Connection(connection=con)``)."""
    con.execute(_macro_sql())
    return con


def sql(con: duckdb.DuckDBPyConnection, query: str, params: Parameters = None) -> duckdb.DuckDBPyRelation:
    """A relation over ``query`` on a connection prepared with :func:`install`."""
    return Connection(connection=con).sql(query, params=params)


__all__ = ["READAHEAD", "Connection", "DuckDBDataset", "connect", "execute", "install", "sql"]
