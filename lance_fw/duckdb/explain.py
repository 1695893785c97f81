"""``EXPLAIN [ANALYZE] [(FORMAT JSON)] <query>`` naming what each Lance scan of the query was handed.

DuckDB shows a Lance dataset as a ``PYTHON_ARROW_SCAN`` of the ``pyarrow.dataset.Dataset`` lance_fw
registers: the plan says nothing of the scan lance_fw runs. So, as for ``lance_vector_search``
(``vector_functions.explain``), DuckDB's plan is kept and one ``LANCE_SCAN`` entry per Lance scan is
added to it, with the extension's key names, reporting only what happened in lance_fw:

- ``EXPLAIN ANALYZE``: the statement runs with datasets that record each ``scanner(columns, filter)``
  call DuckDB makes and count the rows they hand back (``Lance Rows Out``); ``Lance Plan`` is
  lance_fw's ``explain_plan`` of that very scanner.
- ``EXPLAIN``: nothing is scanned, so the query itself is run once over datasets that record the call
  and return no rows (a *probe*: DuckDB plans it exactly as the real query, so the projection and
  pyarrow filter it hands over are those a real run gets); ``Lance Plan (Bind)`` is lance_fw's plan of
  a scanner with those arguments. Only queries (``SELECT``, ``WITH`` …) are probed, never a statement
  that writes.

``Lance Filter IR Bytes``: the size of the filter DuckDB handed over, as Arrow serialises the
expression (0: no filter pushed; DuckDB then filters above the scan). ``Lance Pushed Filter Parts``: its
top-level ``and`` terms. ``Lance Limit Offset Pushdown`` is ``false``: DuckDB's Arrow scan passes no
LIMIT/OFFSET to lance_fw (the LIMIT only stops DuckDB pulling batches).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb.catalog import rewrite_reads
from lance_fw.duckdb.dataset import DuckDBDataset, _ReportingScanner
from lance_fw.duckdb.explain_output import EXPLAIN_PREFIX, EXPLAIN_RESULT, JSON_FORMAT, publish_plans
from lance_fw.errors import LanceError
from lance_fw.options import Columns, Filter

_ANALYZE_OPTION = re.compile(r"\bANALY[SZ]E\b", re.I)
#: The node name a Lance scan has in the plan output.
SCAN_NODE = "LANCE_SCAN"
#: What lance_fw's scans are: a scan of the whole dataset through its scanner (never a fragment list).
SCAN_MODE = "dataset"


@dataclass
class ScanRecord:
    """One ``scanner()`` call DuckDB made on a Lance dataset, and the rows handed back for it."""

    path: str
    version: int
    columns: Columns | None
    filter: Filter | None
    plan: str
    rows_out: int = 0


@dataclass
class _Session:
    """What an EXPLAIN in progress on one connection records; ``probe``: hand back no rows."""

    probe: bool
    scans: list[ScanRecord] = field(default_factory=list)
    datasets: int = 0


#: The EXPLAIN in progress per connection (the statement path registers recording datasets then).
_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def is_explain(statement: object) -> bool:
    """Whether ``statement`` is an ``EXPLAIN`` (a quick textual test)."""
    return isinstance(statement, str) and EXPLAIN_PREFIX.match(statement) is not None


def scan_dataset(
    con: duckdb.DuckDBPyConnection,
    path: str,
    snapshot: LanceDataset,
    on_error: Callable[[LanceError], None],
) -> DuckDBDataset:
    """The dataset the statement path registers for ``snapshot``: a recording one during an EXPLAIN."""
    session = _SESSIONS.get(con)
    if session is None:
        return DuckDBDataset(snapshot, on_error=on_error)
    session.datasets += 1
    return _RecordingDataset(snapshot, on_error, path, session)


class _RecordingDataset(DuckDBDataset):
    """A ``DuckDBDataset`` recording each scanner call (and, in a probe, returning no rows)."""

    def __init__(
        self,
        ds: LanceDataset,
        on_error: Callable[[LanceError], None],
        path: str,
        session: _Session,
    ) -> None:
        super().__init__(ds, on_error=on_error)
        self._path = path
        self._session = session

    def scanner(
        self, columns: Columns | None = None, filter: Filter | None = None, batch_size: int | None = None
    ) -> _ReportingScanner:
        scanner = super().scanner(columns=columns, filter=filter, batch_size=batch_size)
        record = ScanRecord(self._path, self._lance.version, columns, filter, scanner.explain_plan().rstrip())
        self._session.scans.append(record)
        return _CountingScanner(scanner, record, self._session.probe)


class _CountingScanner(_ReportingScanner):
    """A scanner whose reader counts the rows it hands DuckDB (none at all in a probe)."""

    def __init__(self, reporting: _ReportingScanner, record: ScanRecord, probe: bool) -> None:
        super().__init__(reporting._scanner, reporting._on_error)
        self._record = record
        self._probe = probe

    def to_reader(self) -> pa.RecordBatchReader:
        schema = self.projected_schema
        if self._probe:
            return pa.RecordBatchReader.from_batches(schema, iter(()))
        inner = super().to_reader()
        record = self._record

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in inner:
                record.rows_out += batch.num_rows
                yield batch

        return pa.RecordBatchReader.from_batches(schema, batches())


def run(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    values: Any,
    run_statement: Callable[[str, Any], Any],
    query_rows: Callable[[str, Any], pa.RecordBatchReader],
    busy: set[str],
) -> None:
    """Run the ``EXPLAIN`` ``statement`` and leave its rows, with one ``LANCE_SCAN`` entry per Lance
    scan, as ``con``'s result.

    Args:
        run_statement: runs a statement through the statement path (its result stays on ``con``).
        query_rows: a streaming reader of a query's rows through the statement path (the probe).
        busy: dataset paths with writes pending in the open transaction (reading one is refused).
    """
    match = EXPLAIN_PREFIX.match(statement)
    assert match is not None
    prefix = match.group(0)
    query = _attached_reads(con, statement[match.end() :], busy)
    statement = prefix + query
    analyze = match.group(1) is not None or _ANALYZE_OPTION.search(match.group(2) or "") is not None
    session = _Session(probe=False)
    _SESSIONS[con] = session
    try:
        run_statement(statement, values)
        rows = con.fetchall()
    finally:
        _SESSIONS.pop(con, None)
    if session.datasets == 0:  # no Lance dataset read: DuckDB's own plan, as it was
        con.execute(EXPLAIN_RESULT, [[r[0] for r in rows], [r[1] for r in rows]])
        return
    if not analyze:
        session = _probe(con, query, values, query_rows)
    scans = [_describe(scan, analyze) for scan in session.scans]
    json_format = JSON_FORMAT.search(prefix) is not None
    publish_plans(con, rows, SCAN_NODE, scans, json_format)


def _attached_reads(con: duckdb.DuckDBPyConnection, query: str, busy: set[str]) -> str:
    """``query`` with the tables of attached Lance directories read as their dataset paths."""
    try:
        tree = sqlglot.parse_one(query, read="duckdb")
    except sqlglot.errors.ParseError:
        return query  # DuckDB reports its own syntax error
    if tree is None or not rewrite_reads(con, tree, busy):
        return query
    return str(tree.sql(dialect="duckdb"))


def _probe(
    con: duckdb.DuckDBPyConnection,
    query: str,
    values: Any,
    query_rows: Callable[[str, Any], pa.RecordBatchReader],
) -> _Session:
    """The scanner calls the query makes, run over datasets returning no rows (queries only)."""
    session = _Session(probe=True)
    try:
        tree = sqlglot.parse_one(query, read="duckdb")
    except sqlglot.errors.ParseError:
        return session
    if not isinstance(tree, exp.Query):
        return session
    _SESSIONS[con] = session
    try:
        reader = query_rows(query, values)
        for _ in reader:  # the scans start with the first batch; over no rows, it is the last
            break
        reader.close()
    except (duckdb.Error, LanceError):  # EXPLAIN itself worked: its plan stands, without scan entries
        return _Session(probe=True)
    finally:
        _SESSIONS.pop(con, None)
    return session


def filter_ir_bytes(filter: Filter | None) -> int:
    """The size of the filter handed to lance_fw as Arrow serialises it (0: none)."""
    if filter is None:
        return 0
    if isinstance(filter, pc.Expression):
        _, (buffer,) = filter.__reduce__()
        return len(buffer)
    return len(str(filter).encode())


def filter_parts(filter: Filter | None) -> int:
    """The top-level ``and`` terms of the filter handed to lance_fw (0: none)."""
    if filter is None:
        return 0
    return len(_conjuncts(str(filter)))


def _conjuncts(text: str) -> list[str]:
    """``((a) and (b))`` -> [``(a)``, ``(b)``], nested ``and`` flattened; anything else is one term."""
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        return [text]
    inner = text[1:-1]
    depth, quoted, start, parts = 0, False, 0, []
    i = 0
    while i < len(inner):
        ch = inner[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:  # the outer parentheses do not enclose one expression
                return [text]
        elif depth == 0 and inner.startswith(" and ", i):
            parts.append(inner[start:i])
            start = i + len(" and ")
            i = start
            continue
        i += 1
    if not parts:
        return [text]
    parts.append(inner[start:])
    return [term for part in parts for term in _conjuncts(part)]


def _describe(scan: ScanRecord, analyze: bool) -> dict[str, str]:
    info = {
        "Lance Path": scan.path,
        "Lance Version": str(scan.version),
        "Lance Scan Mode": SCAN_MODE,
        "Lance Projection": ", ".join(scan.columns) if isinstance(scan.columns, list) else "*",
        "Lance Filter": "" if scan.filter is None else str(scan.filter),
        "Lance Pushed Filter Parts": str(filter_parts(scan.filter)),
        "Lance Filter IR Bytes" + ("" if analyze else " (Bind)"): str(filter_ir_bytes(scan.filter)),
        "Lance Limit Offset Pushdown": "false",
    }
    if analyze:
        info["Lance Rows Out"] = str(scan.rows_out)
        info["Lance Plan"] = scan.plan
    else:
        info["Lance Plan (Bind)"] = scan.plan
    return info
