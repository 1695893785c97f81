"""Run one DuckDB statement with the datasets it reads registered for that statement only.

The statement is bound first (binding runs nothing); each time the binder reports a ``lance_scan`` name
missing, that dataset is opened at its latest (or pinned) version and registered, and the statement is
bound again. When it binds, it runs, and the names are unregistered afterwards (or, while DuckDB still
streams the statement's rows, before the connection's next statement). So:

- every dataset a statement reads is opened while that statement starts: the latest version then, or the
  pinned one, and one snapshot per dataset per statement (two spellings of one path share it);
- nothing registered outlives its statement, so no later statement (a view, a prepared ``EXECUTE``, a
  relation fetched again) can read a snapshot opened for an earlier one: it registers its own.

Binding without running uses ``DuckDBPyConnection._bind`` (what DuckDB's own relation layer uses). A DuckDB
without it gets the statement itself as the probe: a missing name fails at bind, before anything ran.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

import duckdb

import lance_fw
from lance_fw.duckdb.dataset import DuckDBDataset
from lance_fw.duckdb.names import decode, missing_name, same_dataset
from lance_fw.errors import LanceError, UnsupportedFeatureError

#: More distinct ``lance_scan`` calls than this in one statement is refused (each costs one more bind).
MAX_DATASETS_PER_STATEMENT = 256

T = TypeVar("T")


class StatementDatasets:
    """The datasets one statement reads, registered on ``con`` under the names the macro computes."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._con = con
        self._names: list[str] = []
        self._snapshots: dict[tuple[str, int | str | None], object] = {}
        self._failure: LanceError | None = None

    def call(self, step: Callable[[], T]) -> T:
        """``step()``, registering each dataset it reports missing and trying again."""
        for _ in range(MAX_DATASETS_PER_STATEMENT + 1):
            try:
                return step()
            except duckdb.CatalogException as exc:
                if not self._register_missing(exc):
                    self._raise(exc)
            except duckdb.Error as exc:
                self._raise(exc)
        raise UnsupportedFeatureError(f"a statement reading more than {MAX_DATASETS_PER_STATEMENT} "
                                      "lance_scan datasets")

    def close(self) -> list[str]:
        """Unregister the statement's names; those DuckDB still reads from (an unfinished result) are
        returned, for the connection's next statement to unregister."""
        while self._names:
            try:
                self._con.unregister(self._names[-1])
            except duckdb.ResourceInUseException:
                break
            self._names.pop()
        left, self._names = self._names, []
        return left

    def _register_missing(self, exc: duckdb.CatalogException) -> bool:
        name = missing_name(str(exc))
        if name is None or name in self._names:
            return False
        uri, version = decode(name)
        key = (same_dataset(uri), version)
        snapshot = self._snapshots.get(key)
        if snapshot is None:
            snapshot = self._snapshots[key] = lance_fw.dataset(uri, version=version)
        self._con.register(name, DuckDBDataset(snapshot, on_error=self._record))
        self._names.append(name)
        return True

    def _record(self, exc: LanceError) -> None:
        if self._failure is None:
            self._failure = exc

    def _raise(self, exc: duckdb.Error):
        """The typed error a dataset raised while DuckDB read it, else DuckDB's own."""
        if self._failure is not None:
            raise self._failure from exc
        raise exc


#: Names a statement could not unregister yet (DuckDB was still streaming its rows), per connection.
_LEFT_REGISTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def run_statement(con: duckdb.DuckDBPyConnection, run: Callable[[], T],
                  bind: Callable[[], object] | None = None) -> T:
    """``run()`` one statement with its datasets registered; ``bind`` binds it without running it."""
    left = _LEFT_REGISTERED.get(con, [])
    while left:  # DuckDB refuses this, as it refuses the statement, while a result is unfinished
        con.unregister(left[-1])
        left.pop()
    datasets = StatementDatasets(con)
    try:
        if bind is not None:
            datasets.call(bind)
        return datasets.call(run)
    finally:
        left = datasets.close()
        if left:
            _LEFT_REGISTERED[con] = left


def binder(con: duckdb.DuckDBPyConnection, statement, parameters) -> Callable[[], object] | None:
    """A call that binds ``statement`` with ``parameters`` without running it, where DuckDB offers one."""
    bind = getattr(con, "_bind", None)
    if bind is None:
        return None
    return lambda: bind(statement, values=parameters)


def statements(con: duckdb.DuckDBPyConnection, query) -> list:
    """The statements of a script, each run (and so resolved) on its own: a statement bound before the
    one ahead of it ran would not see what that one created."""
    if not isinstance(query, str):
        return [query]
    parsed = con.extract_statements(query)
    return parsed if len(parsed) > 1 else [query]


def execute(con: duckdb.DuckDBPyConnection, query, parameters=None) -> duckdb.DuckDBPyConnection:
    """``con.execute(query, parameters)``, each statement with its own snapshots (parameters go to the
    last statement of a script, as DuckDB's ``execute`` does)."""
    parts = statements(con, query)
    for i, statement in enumerate(parts):
        values = parameters if i == len(parts) - 1 else None
        run_statement(con, lambda: con.execute(statement, values), binder(con, statement, values))
    return con
