"""Run one DuckDB statement with the datasets it reads resolved for that statement only.

DuckDB looks a table name it does not know up among the Python variables of the frame a statement runs
from. So each ``lance_scan`` name a statement may read (those spelled with literals, found in its text,
and any the binder reports missing) is offered there, as a ``LiveDataset``: an object that, whenever
DuckDB asks it for its schema or a scan, answers with the snapshot of the statement running on the
connection, opened at the first ask. The statement is bound first (binding runs nothing); each name the
binder still reports missing is offered (or, where DuckDB did not look among the variables, registered for
the statement), and it is bound again. When it binds, it runs. So:

- every dataset a statement reads is opened while that statement binds: the latest version then, or the
  pinned one, and one snapshot per dataset per statement (two spellings of one path share it);
- an ``s3://`` dataset is opened with the DuckDB S3 secret that matches it, if any, else with the ``AWS_*``
  environment as it is then (``s3_secrets.py``);
- nothing is written to DuckDB's catalog (a registered name is unregistered after its statement, or, while
  DuckDB still streams the statement's rows, before the connection's next statement), and an object DuckDB
  keeps (a relation keeps those it was created with, a prepared statement those it was bound with) reads
  the snapshot of the statement that runs it: no later statement reads a snapshot opened for an earlier one.

Binding without running uses ``DuckDBPyConnection._bind`` (what DuckDB's own relation layer uses). A DuckDB
without it gets the statement itself as the probe: a missing name fails at bind, before anything ran.
"""

from __future__ import annotations

import re
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
from lance_fw.duckdb.dataset import DuckDBDataset, LiveDataset, LiveRowCount
from lance_fw.duckdb.names import (
    decode,
    direct_reads,
    literal_scan_names,
    missing_name,
    reads_rows_only,
    replacement_path,
    same_dataset,
)
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


def _in_caller_scope(call: Call, offered: Mapping[str, object]) -> Any:
    """``call`` made from a frame that holds the caller's variables, and ``offered``.

    DuckDB reads a Python object named in a statement (``SELECT * FROM my_table``) from the first frame
    outside its own package; through this module that would be one of ours, where the user's variables
    are not. So the call runs from a frame whose namespace is the user's frame's globals and locals,
    plus the objects offered under names the statement may read.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _skipped(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
    namespace = {} if frame is None else {**frame.f_globals, **frame.f_locals}
    namespace.update(offered)
    namespace["__lance_fw_call__"] = call
    exec(_IN_CALLER_SCOPE, namespace)
    return namespace["__lance_fw_result__"]


class StatementDatasets:
    """The datasets one statement reads: one snapshot per dataset, opened when DuckDB first asks.

    Each ``lance_scan`` name the statement may read is offered to DuckDB as a Python variable of the
    frame the statement runs from (DuckDB looks names it does not know up there, and writes nothing to
    its catalog for them): a ``LiveDataset`` that resolves to this statement's snapshot through
    ``_CURRENT``. Where DuckDB does not look (its ``python_enable_replacements`` off, or a statement run
    from a frame of ours), the name is registered on ``con`` for the statement instead.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        # weakly: ``_CURRENT`` keeps the last statement per connection, which must not keep it alive
        self._con_ref = weakref.ref(con)
        self._names: list[str] = []
        self._offered: dict[str, LiveDataset | LiveRowCount] = {}
        self._specs: dict[str, tuple[str, int | str | None]] = {}
        #: whether the statement as written replaced its direct reads (``call``)
        self._as_written = False
        self._datasets: dict[tuple[str, int | str | None], DuckDBDataset] = {}

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        con = self._con_ref()
        if con is None:
            raise UnsupportedFeatureError("lance_scan: the DuckDB connection of this statement was closed")
        return con

    def call(self, step: Call, as_written: Call | None = None) -> Any:
        """``step``, offering each dataset it reports missing and trying again. ``as_written``: the
        statement as the user wrote it, where ``step`` reads its datasets directly (``direct_reads``);
        if ``step`` fails otherwise, it is run instead (and for the rest of the statement), so that
        what fails is the user's own text, with DuckDB's own error."""
        for _ in range(MAX_DATASETS_PER_STATEMENT + 1):
            if self._as_written and as_written is not None:
                step, as_written = as_written, None
            try:
                return _in_caller_scope(step, self._offered)
            except duckdb.CatalogException as exc:
                if not self._register_missing(exc):
                    self._fail(exc, as_written)
            except duckdb.Error as exc:
                self._fail(exc, as_written)
        raise UnsupportedFeatureError(
            f"a statement reading more than {MAX_DATASETS_PER_STATEMENT} lance_scan datasets"
        )

    def dataset(self, uri: str, version: int | str | None) -> DuckDBDataset:
        """What DuckDB scans for ``uri`` at ``version`` in this statement: opened at the first ask (two
        spellings of one path share it), then the same for the whole statement.

        Raises:
            LanceError: the dataset or version cannot be opened (recorded first, so that the DuckDB
            error wrapping it is raised as this typed error).
        """
        key = (same_dataset(uri), version)
        found = self._datasets.get(key)
        if found is None:
            try:
                snapshot = _open(self._con, uri, version)
            except LanceError as exc:
                self._record(exc)
                raise
            found = self._datasets[key] = explain.scan_dataset(self._con, uri, snapshot, self._record)
        return found

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

    def expect(self, text: str) -> None:
        """Offer ahead the datasets the statement ``text`` names with literal ``lance_scan`` calls, so
        that its first bind finds them (each name found missing costs DuckDB a bind). A guess from the
        text: nothing is opened until DuckDB asks, so a call in a comment or a string costs nothing."""
        if "lance_scan" not in text.lower():
            return
        for name in literal_scan_names(text):
            if name not in self._offered:
                try:
                    self._offer(name, *decode(name))
                except LanceError:  # an empty path: left to the binder, which reports it if it is read
                    continue

    def bound_before(self, keys: Sequence[str]) -> bool:
        """Whether everything ``keys`` names (a statement's text, or the sources DuckDB captured for a
        relation, which its SQL reads) bound on this connection with the catalog as it is now: then the
        statement binds again, and its probe is skipped. The datasets they read are offered and
        opened here, so that one that cannot be opened is raised by the probe, before anything ran."""
        bound = _BOUND.get(self._con)
        if bound is None or not keys:
            return False
        catalog = self._con._catalog_version()
        found = [bound.get(key) for key in keys]
        if any(entry is None or entry[0] != catalog for entry in found):
            return False
        for _, specs in found:
            for name, (uri, version) in specs.items():
                if name not in self._offered:
                    self._offer(name, uri, version)
                try:
                    self.dataset(uri, version)
                except LanceError:
                    _FAILURES.pop(self._con, None)
                    return False
        return True

    def remember(self, keys: Sequence[str], captured: Sequence[tuple[str, Any]] = ()) -> None:
        """Note that ``keys`` bound with the datasets offered now, and that each source DuckDB
        ``captured`` (name, handle) reads the one offered under its name. Not when a name had to be
        registered in the catalog: that registration ends with the statement."""
        if self._names or not (keys or captured):
            return
        bound = _BOUND.get(self._con)
        if bound is None:
            bound = _BOUND[self._con] = LruCache(BOUND_PER_CONNECTION)
        catalog = self._con._catalog_version()
        for key in keys:
            bound.put(key, (catalog, dict(self._specs)))
        for name, handle in captured:
            spec = self._specs.get(name)
            if spec is not None:
                bound.put(handle.name, (catalog, {name: spec}))

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
        offered = self._offered.get(name)
        if offered is None:
            self._offer(name, uri, version)
        else:  # offered, and still missing: DuckDB did not look among the Python variables
            self._con.register(name, offered)
            self._names.append(name)
        return True

    def _offer(self, name: str, uri: str, version: int | str | None) -> None:
        resolve = _resolver(self._con, uri, version)
        self._offered[name] = LiveRowCount(resolve) if reads_rows_only(name) else LiveDataset(resolve)
        self._specs[name] = (uri, version)

    def _record(self, exc: LanceError) -> None:
        _FAILURES.setdefault(self._con, exc)

    def _fail(self, exc: duckdb.Error, as_written: Call | None) -> None:
        """Raise the error of a failed try, unless the statement as written is still to be tried."""
        if as_written is None or typed(self._con, exc) is not exc:
            self._raise(exc)
        self._as_written = True

    def _raise(self, exc: duckdb.Error) -> NoReturn:
        raise typed(self._con, exc) from exc


#: The statement running on each connection, or the last one (DuckDB may start a scan of it while its
#: rows are read, after it returned): what the ``LiveDataset`` objects DuckDB holds resolve through.
_CURRENT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _resolver(
    con: duckdb.DuckDBPyConnection, uri: str, version: int | str | None
) -> Callable[[], DuckDBDataset]:
    """What a ``LiveDataset`` for ``uri`` at ``version`` resolves to: the connection's statement's
    dataset (held weakly: DuckDB keeps the object, which must not keep the connection open)."""
    connection = weakref.ref(con)

    def resolve() -> DuckDBDataset:
        con = connection()
        statement = None if con is None else _CURRENT.get(con)
        if statement is None:
            raise UnsupportedFeatureError(
                "lance_scan: read outside lance_fw's statement path (run it with lance_fw.duckdb)"
            )
        dataset: DuckDBDataset = statement.dataset(uri, version)
        return dataset

    return resolve


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


#: Statement texts that bound, per connection: text -> (DuckDB's catalog version then, the datasets
#: offered by name: (uri, version)). A statement bound before, with the catalog unchanged since, skips
#: the probe bind: it finds the same names (the probe only exists to find missing ones without running).
_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Statement texts remembered per connection (the least recently run dropped first).
BOUND_PER_CONNECTION = 64


#: How DuckDB's relation layer names a source it captured, in the SQL of the relation.
_CAPTURED_SOURCE = re.compile(r'"(__duckdb_source_[0-9a-f]+_[0-9]+)"')


def _bound_keys(sql: Query | None, call: Call) -> list[str]:
    """What a statement's binding is remembered under: the sources of a relation it reads, else its
    text when it has no parameter values (a parameter may name the dataset)."""
    if not isinstance(sql, str):
        return []
    captured = _CAPTURED_SOURCE.findall(sql) if "__duckdb_source_" in sql else []
    if captured:
        return captured
    return [] if call.kwargs.get("values") else [sql]


def remember_captured(con: duckdb.DuckDBPyConnection, captured: Sequence[tuple[str, Any]]) -> None:
    """After a relation bound: which dataset each source DuckDB captured for it reads, so that each
    fetch of the relation (its SQL reads the sources) skips the probe while the catalog is unchanged."""
    statement = _CURRENT.get(con)
    if statement is not None:
        statement.remember((), captured)


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
    datasets = _CURRENT[con] = StatementDatasets(con)
    keys = _bound_keys(sql, bind or run)
    text = sql if isinstance(sql, str) else getattr(sql, "query", None)  # or a parsed Statement
    direct = direct_reads(text) if isinstance(text, str) else None
    try:
        if isinstance(text, str):
            datasets.expect(text)
        if bind is not None and not datasets.bound_before(keys):
            datasets.call(*_reading_directly(bind, sql, direct))
            datasets.remember(keys)
        result = datasets.call(*_reading_directly(run, sql, direct))
        datasets.remember(keys)
        return result
    finally:
        left = datasets.close()
        if left:
            _LEFT_REGISTERED[con] = left


def _reading_directly(call: Call, sql: Query | None, direct: str | None) -> tuple[Call, Call | None]:
    """(``call`` on ``direct``, ``call``) when ``call`` runs the statement ``sql`` (its first
    argument) and ``direct`` reads its datasets directly; else (``call``, None)."""
    if direct is None or sql is None or not call.args or call.args[0] is not sql:
        return call, None
    return call._replace(args=(direct, *call.args[1:])), call


def binder(con: duckdb.DuckDBPyConnection, statement: Query, parameters: Parameters) -> Call | None:
    """A call that binds ``statement`` with ``parameters`` without running it, where DuckDB offers one."""
    bind = getattr(con, "_bind", None)
    if bind is None:
        return None
    return Call(bind, (statement,), {"values": parameters})


def statements(con: duckdb.DuckDBPyConnection, query: Query) -> list[Query]:
    """The statements of a script, each run (and so resolved) on its own: a statement bound before the
    one ahead of it ran would not see what that one created."""
    if not isinstance(query, str) or ";" not in query or index_ddl.may_be_index_ddl(query):
        return [query]  # one statement (each but the last ends with ';'), or index DDL DuckDB cannot parse
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
