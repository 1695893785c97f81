"""A small sqllogictest runner for DuckDB-dialect test files, used to run DuckDB's ``lance`` extension's
own suite (``../shared/conformance/lance-duckdb``) against ``lance_fw.duckdb.connect()``.

Why our own: the files are DuckDB's flavour of https://sqllogictest.org (``require``, ``test-env``,
``<REGEX>:`` error cells, ``${VAR}``), the suite is read where it lies (never copied into the project), and
the outcome we need is a tally per file -- which records pass as written -- not a stop at the first
failure, so the closing notes and ``docs/duckdb.md`` can report progress toward the 90 % target.

Values are rendered the way DuckDB's runner renders them: DuckDB's own ``CAST(… AS VARCHAR)`` of each
result column (so lists, structs, dates and floats print exactly as DuckDB prints them), ``NULL`` for
nulls and ``(empty)`` for empty strings; cells of ``R`` columns also match when both parse as numbers
within a relative tolerance, as DuckDB's runner does for floating-point results.

Run ``python tests/sqllogictest.py [FILE.test ...]`` for the tally table.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The suite's location relative to the repository root (tests read it from there, never a copy).
CONFORMANCE_ROOT = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "lance-duckdb"
#: DuckDB's runner's tolerance for floating-point cells of ``R`` columns.
REAL_TOLERANCE = 1e-6
_VAR = re.compile(r"\$\{(\w+)\}")
_REGEX_PREFIX = "<REGEX>:"
_NOT_REGEX_PREFIX = "<!REGEX>:"


@dataclass
class Record:
    """One ``statement`` or ``query`` of a test file."""

    kind: str  # "statement" or "query"
    line: int
    sql: str
    expect_error: bool = False
    error_text: str = ""
    types: str = ""
    sort: str = "nosort"
    expected: list[str] = field(default_factory=list)


@dataclass
class TestFile:
    """A parsed ``.test`` file: its records and the ``require`` / ``test-env`` lines it starts with."""

    path: Path
    records: list[Record]
    requires: list[str]
    required_env: dict[str, str]
    env_defaults: dict[str, str]


def parse(path: Path) -> TestFile:
    """Parse a test file into records (blank-line separated blocks; ``#`` lines are comments)."""
    lines = path.read_text().splitlines()
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for number, text in enumerate(lines, 1):
        if not text.strip():
            if current:
                blocks.append((start, current))
                current = []
            continue
        if text.startswith("#") and not current:
            continue
        if not current:
            start = number
        current.append(text)
    if current:
        blocks.append((start, current))

    records: list[Record] = []
    requires: list[str] = []
    required_env: dict[str, str] = {}
    env_defaults: dict[str, str] = {}
    for start, block in blocks:
        head = block[0].split()
        body = block[1:]
        if head[0] == "require":
            requires.append(head[1])
        elif head[0] == "require-env":
            required_env[head[1]] = head[2] if len(head) > 2 else ""
        elif head[0] == "test-env":
            env_defaults[head[1]] = " ".join(head[2:])
        elif head[0] == "statement":
            sql, rest = _split_result(body)
            records.append(
                Record("statement", start, sql, expect_error=head[1] == "error", error_text="\n".join(rest))
            )
        elif head[0] == "query":
            sql, rest = _split_result(body)
            sort = head[2] if len(head) > 2 and head[2] in ("rowsort", "valuesort", "nosort") else "nosort"
            records.append(Record("query", start, sql, types=head[1], sort=sort, expected=rest))
        else:
            raise ValueError(f"{path}:{start}: unknown sqllogictest record {head[0]!r}")
    return TestFile(path, records, requires, required_env, env_defaults)


def _split_result(body: list[str]) -> tuple[str, list[str]]:
    if "----" in body:
        i = body.index("----")
        return "\n".join(body[:i]), body[i + 1 :]
    return "\n".join(body), []


@dataclass
class Outcome:
    """What one record did: passed, or the reason it failed."""

    record: Record
    passed: bool
    detail: str = ""


def substitute(sql: str, env: dict[str, str]) -> str:
    """``${VAR}`` from the environment (or the file's ``test-env`` defaults); unknown names stay."""
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), sql)


def run_file(test: TestFile, connect: Callable[[], Any], env: dict[str, str]) -> list[Outcome]:
    """Run every record of ``test`` on one fresh connection, in order, collecting outcomes."""
    con = connect()
    render = _Renderer()
    outcomes = []
    try:
        for record in test.records:
            outcomes.append(_run_record(con, record, env, render))
    finally:
        con.close()
        render.close()
    return outcomes


def _run_record(con: Any, record: Record, env: dict[str, str], render: _Renderer) -> Outcome:
    sql = substitute(record.sql, env)
    try:
        result = con.execute(sql)
        # A statement's rows are fetched too: DuckDB runs it to the end only then (errors included), and
        # a result left unfinished would block the connection's next statement.
        table = result.to_arrow_table() if record.kind == "query" else result.fetchall()
    except Exception as exc:
        if record.kind == "statement" and record.expect_error:
            return _check_error(record, str(exc))
        return Outcome(record, False, f"{type(exc).__name__}: {_first_line(str(exc))}")
    if record.expect_error:
        return Outcome(record, False, "expected an error, the statement succeeded")
    if record.kind == "statement":
        return Outcome(record, True)
    return _compare(record, render.rows(table, record.types))


def _check_error(record: Record, message: str) -> Outcome:
    expected = record.error_text.strip()
    if not expected:
        return Outcome(record, True)
    if expected.startswith(_REGEX_PREFIX):
        ok = re.search(expected[len(_REGEX_PREFIX) :], message, re.S) is not None
    else:
        ok = expected in message
    return Outcome(record, ok, "" if ok else f"error text differs: {_first_line(message)}")


def _compare(record: Record, rows: list[list[str]]) -> Outcome:
    width = len(record.types)
    expected_cells = [cell for line in record.expected for cell in line.split("\t")]
    if rows and len(rows[0]) != width:
        return Outcome(record, False, f"{len(rows[0])} columns, the file declares {width}")
    # DuckDB's runner also accepts the values listed one per line when the column count says so.
    expected = [expected_cells[i : i + width] for i in range(0, len(expected_cells), width)]
    actual = rows
    if record.sort == "rowsort":
        actual, expected = sorted(actual), sorted(expected)
    elif record.sort == "valuesort":
        actual = [[v] for v in sorted(c for row in actual for c in row)]
        expected = [[v] for v in sorted(c for row in expected for c in row)]
    if len(actual) != len(expected):
        return Outcome(record, False, f"{len(actual)} rows, expected {len(expected)}")
    for row_a, row_e in zip(actual, expected):
        for column, (a, e) in enumerate(zip(row_a, row_e)):
            real = record.sort != "valuesort" and record.types[column] == "R"
            if not _same_cell(a, e, real):
                return Outcome(record, False, f"got {row_a}, expected {row_e}")
    return Outcome(record, True)


def _same_cell(actual: str, expected: str, real: bool) -> bool:
    if actual == expected:
        return True
    if expected.startswith(_REGEX_PREFIX):  # DuckDB's runner: the whole cell matches the pattern
        return re.fullmatch(expected[len(_REGEX_PREFIX) :], actual, re.S) is not None
    if expected.startswith(_NOT_REGEX_PREFIX):
        return re.fullmatch(expected[len(_NOT_REGEX_PREFIX) :], actual, re.S) is None
    if not real:
        return False
    try:
        a, e = float(actual), float(expected)
    except ValueError:
        return False
    return math.isclose(a, e, rel_tol=REAL_TOLERANCE, abs_tol=REAL_TOLERANCE)


class _Renderer:
    """Renders result cells with DuckDB's own VARCHAR cast, on a private plain DuckDB connection."""

    def __init__(self) -> None:
        import duckdb

        self._con = duckdb.connect()

    def rows(self, table: Any, types: str) -> list[list[str]]:
        import pyarrow as pa

        if table.num_columns == 0:
            return []
        names = [f"c{i}" for i in range(table.num_columns)]
        self._con.register("__slt_result", table.rename_columns(names))
        # DuckDB's runner converts each cell to the column type the file declares: a boolean in an
        # ``I`` column prints as 0 / 1.
        casts = ", ".join(
            f"CAST(CAST({n} AS INTEGER) AS VARCHAR)"
            if i < len(types) and types[i] == "I" and pa.types.is_boolean(table.schema.field(i).type)
            else f"CAST({n} AS VARCHAR)"
            for i, n in enumerate(names)
        )
        values = self._con.execute(f"SELECT {casts} FROM __slt_result").fetchall()
        self._con.unregister("__slt_result")
        return [[_cell(v) for v in row] for row in values]

    def close(self) -> None:
        self._con.close()


def _cell(value: str | None) -> str:
    if value is None:
        return "NULL"
    return value if value != "" else "(empty)"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else text


def staged_suite(workdir: Path) -> Path:
    """Copy the suite's fixture data under ``workdir/test/data`` (tests write next to it) and return
    ``workdir``, the directory to run from, since the files name datasets as ``test/data/…``."""
    target = workdir / "test" / "data"
    shutil.copytree(CONFORMANCE_ROOT / "test" / "data", target)
    return workdir


def suite_files() -> Iterator[Path]:
    """The suite's ``.test`` files, sorted by name."""
    yield from sorted((CONFORMANCE_ROOT / "test" / "sql").glob("*.test"))


def tally(outcomes: list[Outcome]) -> dict[str, int]:
    """Counts per record kind: queries with expected results, statements, errors expected."""
    out = {"queries": 0, "queries_passed": 0, "statements": 0, "statements_passed": 0}
    for o in outcomes:
        key = "queries" if o.record.kind == "query" else "statements"
        out[key] += 1
        out[f"{key}_passed"] += o.passed
    return out


def main(argv: list[str]) -> int:
    """Print the per-file tally of the suite run against ``lance_fw.duckdb.connect()``."""
    import tempfile

    import lance_fw.duckdb

    paths = [Path(a) for a in argv] or list(suite_files())
    totals = {"queries": 0, "queries_passed": 0, "statements": 0, "statements_passed": 0}
    print(f"{'file':45} {'queries':>10} {'statements':>12}")
    for path in paths:
        test = parse(path)
        with tempfile.TemporaryDirectory() as tmp:
            here = os.getcwd()
            os.chdir(staged_suite(Path(tmp)))
            try:
                outcomes = run_file(test, lance_fw.duckdb.connect, {**test.env_defaults, **os.environ})
            finally:
                os.chdir(here)
        counts = tally(outcomes)
        for k in totals:
            totals[k] += counts[k]
        print(
            f"{path.name:45} {counts['queries_passed']:>4}/{counts['queries']:<5} "
            f"{counts['statements_passed']:>5}/{counts['statements']:<6}"
        )
        if os.environ.get("SLT_VERBOSE"):
            for o in outcomes:
                if not o.passed:
                    print(f"    line {o.record.line}: {o.detail}")
    print(
        f"{'total':45} {totals['queries_passed']:>4}/{totals['queries']:<5} "
        f"{totals['statements_passed']:>5}/{totals['statements']:<6}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
