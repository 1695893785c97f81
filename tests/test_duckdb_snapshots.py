"""Which snapshot ``lance_scan`` reads: one per statement, whatever the SQL text looks like.

Every form a DuckDB user writes the call in (literals with any characters, parameters, named arguments,
expressions, views, CTEs, prepared statements, ``executemany``, relations fetched again) either reads the
latest version at the start of the statement (or the pinned ``version :=``), or raises a typed
``LanceError``. Each test writes with lance_fw and with pylance between statements and checks counts
against what was written, so a stale snapshot fails.
"""

from __future__ import annotations

import os

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb
from lance_fw.errors import DatasetNotFoundError, LanceError

N = 3000
COL = "ünï 0"


def _table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), COL: pa.array([i % 11 for i in ids], pa.int32()),
                     "s": pa.array([f"ü{i % 5}" for i in ids])})


@pytest.fixture(params=["lance_fw", "pylance"])
def path(request, tmp_path) -> str:
    """A dataset of N rows in 3 fragments, written by lance_fw or by pylance (version 1)."""
    target = str(tmp_path / "dïr ü" / "t.lance")
    write = lance_fw.write_dataset if request.param == "lance_fw" else lance.write_dataset
    write(_table(0, N), target, max_rows_per_file=1000)
    return target


def _append(path: str, n: int = 500, writer: str = "lance_fw") -> None:
    write = lance_fw.write_dataset if writer == "lance_fw" else lance.write_dataset
    start = lance.dataset(path).count_rows() + 10_000
    write(_table(start, n), path, mode="append")


def _count(con, sql: str, params=None) -> int:
    return con.execute(sql, params).fetchall()[0][0]


def _quoted(path: str) -> str:
    return path.replace("'", "''")


# -- defect 1: non-ASCII text before the call -----------------------------------------------------

def test_non_ascii_literal_before_the_call(path):
    con = fw_duckdb.connect()
    sql = f"SELECT 'ü' AS tag, count(*) FROM lance_scan('{path}')"
    assert con.sql(sql).fetchall() == [("ü", N)]
    _append(path)
    assert con.sql(sql).fetchall() == [("ü", N + 500)]  # not the pre-append count


def test_non_ascii_column_name(path):
    con = fw_duckdb.connect()
    plain = duckdb.connect()
    plain.register("arrow_table", _table(0, N))
    for query in [f'SELECT count(*), sum("{COL}") FROM {{t}} WHERE "{COL}" > 5',
                  f'SELECT "{COL}", count(*) FROM {{t}} WHERE s = \'ü3\' GROUP BY ALL ORDER BY 1',
                  f'SELECT "{COL}" AS "ä", id FROM {{t}} WHERE id % 997 = 0 ORDER BY id']:
        assert con.sql(query.format(t=f"lance_scan('{path}')")).fetchall() == \
            plain.sql(query.format(t="arrow_table")).fetchall()


# -- defect 2: every way of writing the call -------------------------------------------------------

def test_path_as_a_parameter(path):
    con = fw_duckdb.connect()
    assert _count(con, "SELECT count(*) FROM lance_scan(?)", [path]) == N
    _append(path, writer="pylance")
    assert _count(con, "SELECT count(*) FROM lance_scan($1)", [path]) == N + 500
    assert _count(con, "SELECT count(*) FROM lance_scan($p)", {"p": path}) == N + 500
    assert con.sql("SELECT count(*) FROM lance_scan(?)", params=[path]).fetchall() == [(N + 500,)]


def test_named_path_argument(path):
    con = fw_duckdb.connect()
    assert _count(con, f"SELECT count(*) FROM lance_scan(p := '{path}')") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan(p := '{path}', version := 1)") == N


def test_escape_string_and_dollar_quoted_literals(tmp_path):
    path = str(tmp_path / "it's" / "t.lance")
    lance_fw.write_dataset(_table(0, N), path, max_rows_per_file=1000)
    con = fw_duckdb.connect()
    escaped = path.replace("\\", "\\\\").replace("'", "\\'").replace("/", "\\x2F")
    assert _count(con, f"SELECT count(*) FROM lance_scan(E'{escaped}')") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan($${path}$$)") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan($q${path}$q$)") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan('{_quoted(path)}')") == N
    _append(path)
    assert _count(con, f"SELECT count(*) FROM lance_scan($${path}$$)") == N + 500


def test_version_as_an_expression(path):
    con = fw_duckdb.connect()
    _append(path)
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := 0 + 1)") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := 1 + 1)") == N + 500
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := ?)", [1]) == N
    with pytest.raises(DatasetNotFoundError):
        con.execute(f"SELECT count(*) FROM lance_scan('{path}', version := 40 + 2)")
    lance.dataset(path).tags.create("first-1", 1)
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := 'first-1')") == N
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := 'first' || '-1')") == N


def test_view_sees_appends_and_deletes(path):
    con = fw_duckdb.connect()
    con.execute(f"CREATE VIEW v AS SELECT * FROM lance_scan('{path}')")
    con.execute(f"CREATE VIEW pinned AS SELECT * FROM lance_scan('{path}', version := 1)")
    assert _count(con, "SELECT count(*) FROM v") == N
    _append(path)
    lance_fw.dataset(path).delete("id % 7 = 0")
    lance.dataset(path).delete("id < 100")
    expected = lance.dataset(path).count_rows()
    assert expected != N + 500
    assert _count(con, "SELECT count(*) FROM v") == expected
    assert _count(con, "SELECT count(*) FROM pinned") == N
    assert con.sql("SELECT count(*) FROM v").fetchall() == [(expected,)]
    # a view over a view, and a macro, expand at each statement too
    con.execute("CREATE VIEW w AS SELECT id FROM v WHERE id >= 10000")
    con.execute(f"CREATE MACRO recent() AS TABLE SELECT * FROM lance_scan('{path}') WHERE id >= 10000")
    _append(path, writer="pylance")
    new = lance.dataset(path).to_table(filter="id >= 10000").num_rows
    assert _count(con, "SELECT count(*) FROM w") == new
    assert _count(con, "SELECT count(*) FROM recent()") == new


def test_cte_and_the_same_dataset_twice(path):
    con = fw_duckdb.connect()
    sql = (f"WITH a AS (SELECT id FROM lance_scan('{path}')), b AS (SELECT id FROM lance_scan('{path}/')) "
           "SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b)")
    assert con.sql(sql).fetchall() == [(N, N)]
    _append(path)
    assert con.sql(sql).fetchall() == [(N + 500, N + 500)]


def test_one_snapshot_per_statement(path, monkeypatch):
    """Two spellings of one path in one statement open the dataset once, so they cannot differ."""
    opened = []
    original = lance_fw.dataset

    def counting(uri, *args, **kwargs):
        opened.append(uri)
        return original(uri, *args, **kwargs)
    monkeypatch.setattr(lance_fw, "dataset", counting)
    con = fw_duckdb.connect()
    sql = (f"SELECT count(*) FROM lance_scan('{path}') a JOIN lance_scan('{path}/') b USING (id) "
           f"JOIN lance_scan(?) c USING (id)")
    assert _count(con, sql, [path]) == N
    assert len(opened) == 1, opened


def test_prepared_statements(path):
    con = fw_duckdb.connect()
    con.execute(f"PREPARE s AS SELECT count(*) FROM lance_scan('{path}') WHERE id >= ?")
    con.execute("PREPARE by_path AS SELECT count(*) FROM lance_scan(?)")
    assert _count(con, "EXECUTE s(0)") == N
    assert _count(con, f"EXECUTE by_path('{_quoted(path)}')") == N
    _append(path)
    assert _count(con, "EXECUTE s(0)") == N + 500
    assert _count(con, f"EXECUTE by_path('{_quoted(path)}')") == N + 500


def test_executemany_resolves_each_parameter_set(path):
    con = fw_duckdb.connect()
    _append(path)
    con.execute("CREATE TABLE out (k INT, n BIGINT)")
    con.executemany(f"INSERT INTO out SELECT ?, count(*) FROM lance_scan('{path}', version := ?)",
                    [[1, 1], [2, 2]])
    con.executemany("INSERT INTO out SELECT ?, count(*) FROM lance_scan(?)", [[3, path]])
    assert con.sql("SELECT * FROM out ORDER BY k").fetchall() == [(1, N), (2, N + 500), (3, N + 500)]


def test_relation_fetched_again_reads_the_latest_version(path):
    """A relation runs again on every fetch (DuckDB's rule); each run is a statement with its own snapshot,
    whether or not another statement scanned the path in between."""
    con = fw_duckdb.connect()
    rel = con.sql(f"SELECT count(*) FROM lance_scan('{path}')")
    rows = con.sql(f"SELECT id FROM lance_scan('{path}')")
    assert rel.fetchall() == [(N,)]
    _append(path)
    assert rel.fetchall() == [(N + 500,)]
    assert rows.filter("id >= 10000").aggregate("count(*)").fetchall() == [(500,)]
    assert rows.arrow().read_all().num_rows == N + 500
    # a statement pinning an older version in between does not leak into the relation
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}', version := 1)") == N
    _append(path, writer="pylance")
    assert rel.fetchall() == [(N + 1000,)]
    assert rel.df().iloc[0, 0] == N + 1000
    joined = rows.join(con.sql(f"SELECT id AS k FROM lance_scan('{path}', version := 1)"), "id = k")
    assert joined.aggregate("count(*)").fetchall() == [(N,)]


def test_schema_change_between_statements(path):
    con = fw_duckdb.connect()
    rel = con.sql(f"SELECT * FROM lance_scan('{path}') WHERE id = 5")
    assert rel.fetchall() == [(5, 5, "ü0")]
    lance_fw.dataset(path).add_columns({"twice": "id * 2"})
    assert con.sql(f"SELECT * FROM lance_scan('{path}') WHERE id = 5").fetchall() == [(5, 5, "ü0", 10)]


def test_cursor_and_script(path):
    con = fw_duckdb.connect()
    cur = con.cursor()
    assert _count(cur, f"SELECT count(*) FROM lance_scan('{path}')") == N
    script = (f"CREATE TABLE t AS SELECT * FROM lance_scan('{path}'); "
              f"SELECT count(*) FROM t JOIN lance_scan('{path}') USING (id)")
    assert _count(con, script) == N
    assert con.sql(f"CREATE TABLE t2 AS SELECT 1 AS x; SELECT count(*) FROM lance_scan('{path}')").fetchall() \
        == [(N,)]


def test_transaction(path):
    con = fw_duckdb.connect()
    con.execute("CREATE TABLE t (n BIGINT)")
    con.execute("BEGIN")
    con.execute(f"INSERT INTO t SELECT count(*) FROM lance_scan('{path}')")
    _append(path)
    con.execute(f"INSERT INTO t SELECT count(*) FROM lance_scan('{path}')")
    con.execute("COMMIT")
    assert con.sql("SELECT n FROM t ORDER BY n").fetchall() == [(N,), (N + 500,)]


def test_errors_are_typed(path, tmp_path):
    con = fw_duckdb.connect()
    with pytest.raises(DatasetNotFoundError):
        con.execute(f"SELECT * FROM lance_scan('{tmp_path / 'missing'}')")
    with pytest.raises(DatasetNotFoundError):
        con.sql(f"SELECT * FROM lance_scan('{path}', version := 99)")
    with pytest.raises(LanceError):
        con.execute("SELECT * FROM lance_scan('')")
    # a typed error leaves the connection usable
    assert _count(con, f"SELECT count(*) FROM lance_scan('{path}')") == N


def test_raw_connection_helpers(path):
    raw = fw_duckdb.install(duckdb.connect())
    assert fw_duckdb.sql(raw, f"SELECT count(*) FROM lance_scan('{path}')").fetchall() == [(N,)]
    _append(path)
    assert fw_duckdb.execute(raw, "SELECT count(*) FROM lance_scan(?)", [path]).fetchall() == [(N + 500,)]


def test_python_variables_and_relation_views(path):
    """DuckDB's lookup of Python objects by name still finds the caller's variables, and a view made from
    a relation reads the latest version at each statement."""
    con = fw_duckdb.connect()
    wanted = pa.table({"id": pa.array([1, 2, 10_000_000], pa.int64())})
    assert con.sql(f"SELECT count(*) FROM wanted JOIN lance_scan('{path}') USING (id)").fetchall() == [(2,)]
    assert con.execute(f"SELECT count(*) FROM wanted JOIN lance_scan('{path}') USING (id)").fetchall() == [(2,)]
    con.sql(f"SELECT id FROM lance_scan('{path}')").create_view("ids")
    _append(path)
    assert con.table("ids").aggregate("count(*)").fetchall() == [(N + 500,)]
    reader = con.sql("SELECT id FROM ids").to_arrow_reader()
    assert reader.read_all().num_rows == N + 500
    assert _count(con, "SELECT count(*) FROM ids") == N + 500


def test_read_errors_are_typed_however_the_rows_are_fetched(tmp_path):
    """A dataset error while DuckDB reads (here: a data file gone) is the LanceError lance_fw raises,
    not DuckDB's wrapper naming the registered view, whether rows come at once or streamed later."""
    import glob

    path = str(tmp_path / "t.lance")
    lance_fw.write_dataset(_table(0, 20_000), path, max_rows_per_file=2000)
    os.remove(sorted(glob.glob(os.path.join(path, "data", "*.lance")))[5])
    with pytest.raises(LanceError) as direct:
        lance_fw.dataset(path).to_table()
    expected = type(direct.value)
    con = fw_duckdb.connect()
    sql = f"SELECT * FROM lance_scan('{path}')"
    for fetch in [lambda: con.sql(sql).fetchall(), lambda: con.sql(sql).arrow().read_all(),
                  lambda: con.sql(sql).to_arrow_reader().read_all(), lambda: con.execute(sql).fetchall(),
                  lambda: con.sql(sql).to_arrow_table()]:
        with pytest.raises(expected):
            fetch()
    assert _count(con, "SELECT 42") == 42  # the connection goes on


def test_without_a_binder_the_statement_is_the_probe(path, monkeypatch):
    """A DuckDB without ``_bind``: the statement itself reports the missing names (at bind, before it ran)."""
    import lance_fw.duckdb.statement as statement

    monkeypatch.setattr(statement, "binder", lambda *args: None)
    con = fw_duckdb.connect()
    con.execute("CREATE TABLE t (n BIGINT)")
    con.execute(f"INSERT INTO t SELECT count(*) FROM lance_scan('{path}') a JOIN lance_scan(?) b USING (id)", [path])
    _append(path)
    con.execute(f"INSERT INTO t SELECT count(*) FROM lance_scan('{path}')")
    assert con.sql("SELECT n FROM t ORDER BY n").fetchall() == [(N,), (N + 500,)]


# -- datasets registered before the first bind --------------------------------------------------


@pytest.mark.parametrize("call", ["lance_scan('{p}')", "lance_scan( '{p}' , version := 1 )", "LANCE_SCAN('{p}')"])
def test_literal_calls_are_registered_before_the_first_bind(path, monkeypatch, call):
    """A ``lance_scan`` spelled with literals (a quote in the path doubled) is registered before
    DuckDB binds the statement: the binder never reports it missing, and the rows are the
    version's."""
    import lance_fw.duckdb.statement as statement

    reported: list[str] = []
    original = statement.StatementDatasets._register_missing

    def register_missing(self, exc):
        reported.append(str(exc))
        return original(self, exc)

    monkeypatch.setattr(statement.StatementDatasets, "_register_missing", register_missing)
    quoted_dir = os.path.join(os.path.dirname(os.path.dirname(path)), "it's")
    os.makedirs(quoted_dir)
    target = os.path.join(quoted_dir, "t.lance")
    lance.write_dataset(lance.dataset(path).to_table(), target)
    _append(target)  # version 2: version := 1 must still read N rows
    sql = "SELECT count(*) FROM " + call.format(p=_quoted(target))
    expected = lance.dataset(target, version=1 if "version" in call else None).count_rows()
    con = fw_duckdb.connect()
    assert con.sql(sql).fetchall() == [(expected,)]
    assert _count(con, sql) == expected
    assert reported == []


def test_a_call_only_in_a_string_or_a_comment_is_not_read(tmp_path):
    """The text is only a guess: a ``lance_scan`` inside a string literal or a comment naming no
    dataset neither fails the statement nor stays registered after it."""
    missing = _quoted(str(tmp_path / "nowhere.lance"))
    con = fw_duckdb.connect()
    sql = f"-- lance_scan('{missing}')\nSELECT 'lance_scan(''{missing}'')' AS s"
    assert con.execute(sql).fetchall() == [(f"lance_scan('{missing}')",)]
    views = "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '\\_\\_lance\\_%' ESCAPE '\\'"
    assert _count(con, views) == 0
