"""Run one DuckDB statement with the datasets it reads registered for that statement only.

The statement is bound first (binding runs nothing); each time the binder reports a ``lance_scan`` name
missing, that dataset is opened at its latest (or pinned) version and registered, and the statement is
bound again. When it binds, it runs, and the names are unregistered afterwards (or, while DuckDB still
streams the statement's rows, before the connection's next statement). So:

- every dataset a statement reads is opened while that statement starts: the latest version then, or the
  pinned one, and one snapshot per dataset per statement (two spellings of one path share it);
- an ``s3://`` dataset is opened with the DuckDB S3 secret that matches it, if any, else with the ``AWS_*``
  environment as it is then (``s3_secrets.py``);
- nothing registered outlives its statement, so no later statement (a view, a prepared ``EXECUTE``, a
  relation fetched again) can read a snapshot opened for an earlier one: it registers its own.

Binding without running uses ``DuckDBPyConnection._bind`` (what DuckDB's own relation layer uses). A DuckDB
without it gets the statement itself as the probe: a missing name fails at bind, before anything ran.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from types import FrameType, MappingProxyType
from typing import Any, NamedTuple, NoReturn

import duckdb

import lance_fw
from lance_fw._util.lru import LruCache
from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb import copy_to, dml, explain, index_ddl, vector_functions
from lance_fw.duckdb.names import decode, literal_scan_names, missing_name, replacement_path, same_dataset
from lance_fw.duckdb.s3_secrets import storage_options_for
from lance_fw.errors import LanceError, UnsupportedFeatureError

#: A statement: SQL text, or one DuckDB parsed (``extract_statements``)
Query = str | duckdb.Statement
#: DuckDB's statement parameters: positional (a sequence) or named (a mapping), or none
Parameters = Sequence[Any] | dict[str, Any] | None

#: More distinct ``lance_scan`` calls than this in one statement is refused (each costs one more bind).
MAX_DATASETS_PER_STATEMENT = 256


class Call(NamedTuple):
    """One call into DuckDB: ``function(*args, **kwargs)``."""

    function: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = MappingProxyType({})


#: Packages whose frames DuckDB's lookup of Python variables by name looks past (it skips its own).
_FRAMES_TO_SKIP = ("duckdb", "lance_fw.duckdb")
_IN_CALLER_SCOPE = compile(
    "__lance_fw_result__ = __lance_fw_call__.function(*__lance_fw_call__.args, **__lance_fw_call__.kwargs)",
    "<lance_fw.duckdb statement>",
    "exec",
)


def _skipped(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in _FRAMES_TO_SKIP)


def _in_caller_scope(call: Call) -> Any:
    """``call`` made from a frame that holds the caller's variables.

    DuckDB reads a Python object named in a statement (``SELECT * FROM my_table``) from the first frame
    outside its own package; through this module that would be one of ours, where the user's variables
    are not. So the call runs from a frame whose namespace is the user's frame's globals and locals.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _skipped(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
    namespace = {} if frame is None else {**frame.f_globals, **frame.f_locals}
    namespace["__lance_fw_call__"] = call
    exec(_IN_CALLER_SCOPE, namespace)
    return namespace["__lance_fw_result__"]


class StatementDatasets:
    """The datasets one statement reads, registered on ``con`` under the names the macro computes."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._names: list[str] = []
        self._snapshots: dict[tuple[str, int | str | None], LanceDataset] = {}

    def call(self, step: Call) -> Any:
        """``step``, registering each dataset it reports missing and trying again."""
        for _ in range(MAX_DATASETS_PER_STATEMENT + 1):
            try:
                return _in_caller_scope(step)
            except duckdb.CatalogException as exc:
                if not self._register_missing(exc):
                    self._raise(exc)
            except duckdb.Error as exc:
                self._raise(exc)
        raise UnsupportedFeatureError(
            f"a statement reading more than {MAX_DATASETS_PER_STATEMENT} lance_scan datasets"
        )

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

    def expect(self, sql: Query) -> None:
        """Register ahead the datasets ``sql`` names with literal ``lance_scan`` calls, so that its
        first bind finds them (each name found missing costs DuckDB a bind). A guess from the text:
        a dataset that cannot be opened is left to the binder's report, which raises its error if
        the statement really reads it."""
        text = sql if isinstance(sql, str) else getattr(sql, "query", None)  # or a parsed Statement
        if not isinstance(text, str) or "lance_scan" not in text.lower():
            return
        for name in literal_scan_names(text):
            if name in self._names:
                continue
            try:
                self._register(name, *decode(name))
            except (LanceError, OSError):
                continue

    def _register_missing(self, exc: duckdb.CatalogException) -> bool:
        search = vector_functions.pending(self._con, str(exc))  # a search's rows, for this statement
        if search is not None:
            self._con.register(*search)
            self._names.append(search[0])
            return True
        name = missing_name(str(exc))
        path = None if name is not None else replacement_path(str(exc))
        if path is not None:
            name, uri, version = path, path, None
        elif name is not None:
            uri, version = decode(name)
        if name is None or name in self._names:
            return False
        self._register(name, uri, version)
        return True

    def _register(self, name: str, uri: str, version: int | str | None) -> None:
        key = (same_dataset(uri), version)
        snapshot = self._snapshots.get(key)
        if snapshot is None:
            snapshot = self._snapshots[key] = _open(self._con, uri, version)
        self._con.register(name, explain.scan_dataset(self._con, uri, snapshot, self._record))
        self._names.append(name)

    def _record(self, exc: LanceError) -> None:
        _FAILURES.setdefault(self._con, exc)

    def _raise(self, exc: duckdb.Error) -> NoReturn:
        raise typed(self._con, exc) from exc


#: Datasets opened by earlier statements, per connection: (path key, version) -> dataset
_OPENED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Datasets each connection keeps open between statements (the least recently read dropped first)
OPENED_PER_CONNECTION = 64


def _open(con: duckdb.DuckDBPyConnection, uri: str, version: int | str | None) -> LanceDataset:
    """The dataset ``uri`` at ``version`` (None: the latest now) for a statement. An earlier
    statement's dataset object is reused while it still is that version (for None: while no commit
    came since, one listing of the versions), so its parsed file metadata and opened indices
    stay warm. Local paths only: an object store dataset is opened again with the credentials of
    the moment (secrets, environment), and a tag is resolved again each time (tags move)."""
    if isinstance(version, str) or "://" in uri:  # object stores: credentials are read at each open
        return lance_fw.dataset(uri, version=version, storage_options=storage_options_for(con, uri))
    opened = _OPENED.get(con)
    if opened is None:
        opened = _OPENED[con] = LruCache(OPENED_PER_CONNECTION)
    key = (same_dataset(uri), version)
    opened_now: list[LanceDataset] = []

    def fresh() -> LanceDataset:
        opened_now.append(lance_fw.dataset(uri, version=version))  # a local path: no storage options
        return opened_now[-1]

    dataset = opened.get_or_load(key, fresh)
    if version is None and not opened_now and dataset.version != dataset.latest_version:
        dataset = fresh()  # a commit came since it was opened
        opened.put(key, dataset)
    return dataset


#: The first LanceError a dataset raised while DuckDB read it, per connection, for the statement running:
#: DuckDB reports it as its own error carrying only the text, possibly later, when the rows are fetched.
_FAILURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def typed(con: duckdb.DuckDBPyConnection, exc: Exception) -> Exception:
    """The typed error behind a DuckDB error ``con`` raised, if a dataset raised one; else ``exc``."""
    return _FAILURES.get(con, exc)


#: Names a statement could not unregister yet (DuckDB was still streaming its rows), per connection.
_LEFT_REGISTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def run_statement(
    con: duckdb.DuckDBPyConnection, run: Call, bind: Call | None = None, sql: Query | None = None
) -> Any:
    """``run()`` one statement with its datasets registered; ``bind`` binds it without running it;
    ``sql``, its text, names the datasets to register before the first try."""
    _FAILURES.pop(con, None)
    left = _LEFT_REGISTERED.get(con, [])
    while left:  # DuckDB refuses this, as it refuses the statement, while a result is unfinished
        con.unregister(left[-1])
        left.pop()
    datasets = StatementDatasets(con)
    try:
        if sql is not None:
            datasets.expect(sql)
        if bind is not None:
            datasets.call(bind)
        return datasets.call(run)
    finally:
        left = datasets.close()
        if left:
            _LEFT_REGISTERED[con] = left


def binder(con: duckdb.DuckDBPyConnection, statement: Query, parameters: Parameters) -> Call | None:
    """A call that binds ``statement`` with ``parameters`` without running it, where DuckDB offers one."""
    bind = getattr(con, "_bind", None)
    if bind is None:
        return None
    return Call(bind, (statement,), {"values": parameters})


def statements(con: duckdb.DuckDBPyConnection, query: Query) -> list[Query]:
    """The statements of a script, each run (and so resolved) on its own: a statement bound before the
    one ahead of it ran would not see what that one created."""
    if not isinstance(query, str) or index_ddl.may_be_index_ddl(query):  # DuckDB cannot parse index DDL
        return [query]
    parsed: list[Query] = list(con.extract_statements(query))
    return parsed if len(parsed) > 1 else [query]


def _query_table(con: duckdb.DuckDBPyConnection, sql: str, values: Any) -> Any:
    """The rows of ``sql`` as an Arrow table, its datasets registered for it."""

    def fetch() -> Any:
        return con.sql(sql, params=values).to_arrow_table()

    con.abort()  # a new statement ends the previous result, as ``execute`` would (``sql`` refuses to)
    return run_statement(con, Call(fetch), binder(con, sql, values), sql)


def _run_sql(con: duckdb.DuckDBPyConnection, sql: str, values: Any) -> Any:
    if explain.is_explain(sql):  # EXPLAIN names each Lance scan's pushdowns (explain.py)
        busy = {write.path for write in dml.session(con).pending or []}
        return explain.run(con, sql, values, partial(_run_plain, con), partial(_query_reader, con), busy)
    return _run_plain(con, sql, values)


def _run_plain(con: duckdb.DuckDBPyConnection, sql: Query, values: Any) -> Any:
    return run_statement(con, Call(con.execute, (sql, values)), binder(con, sql, values), sql)


def _query_reader(con: duckdb.DuckDBPyConnection, sql: str, values: Any) -> Any:
    """A streaming reader of ``sql``'s rows, its datasets registered for it."""

    def reader() -> Any:
        relation = con.sql(sql, params=values)
        fetch = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
        return fetch()

    con.abort()
    return run_statement(con, Call(reader), binder(con, sql, values), sql)


#: What ``COPY … TO`` returns in DuckDB: one row, the number of rows written.
COPY_RESULT = "SELECT ?::BIGINT AS Count"


def execute(
    con: duckdb.DuckDBPyConnection, query: Query, parameters: Parameters = None
) -> duckdb.DuckDBPyConnection:
    """``con.execute(query, parameters)``, each statement with its own snapshots (parameters go to the
    last statement of a script, as DuckDB's ``execute`` does)."""
    parts = statements(con, query)
    for i, statement in enumerate(parts):
        values = parameters if i == len(parts) - 1 else None
        if dml.route(
            con,
            statement,
            values,
            partial(_query_table, con),
            partial(_run_sql, con),
            partial(storage_options_for, con),
        ):
            continue
        copy = copy_to.parse(statement)
        if copy is not None:
            rows = run_statement(con, Call(copy_to.run, (con, copy, values)), binder(con, copy.query, values))
            con.execute(COPY_RESULT, [rows])
            continue
        _run_sql(con, statement, values) if isinstance(statement, str) else _run_plain(con, statement, values)
    return con
