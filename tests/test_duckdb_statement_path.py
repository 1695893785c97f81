"""How a statement reaches its Lance datasets: offered to DuckDB as Python variables, read directly where
the call is spelled with literals, and bound once per statement text while the catalog stands.

Each test checks rows against pylance (or DuckDB over a pylance dataset) or against the statement run
as written, and checks that nothing of this shows: DuckDB's catalog is untouched, errors are DuckDB's
own for the user's text, and a transaction survives a dataset that cannot be opened.
"""

from __future__ import annotations

import shutil

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb
import lance_fw.duckdb.statement as statement
from lance_fw.duckdb.names import direct_reads, view_name
from lance_fw.errors import DatasetNotFoundError, LanceError, SchemaError

#: Rows of the datasets: two fragments and several 1024-value blocks.
N = 5000


def _table(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "g": pc.cast(pc.divide(ids, 7), pa.int32()), "s": pc.cast(ids, pa.string())})


@pytest.fixture(params=["lance_fw", "pylance"])
def path(request, tmp_path) -> str:
    target = str(tmp_path / "t.lance")
    write = lance_fw.write_dataset if request.param == "lance_fw" else lance.write_dataset
    write(_table(0, N), target, max_rows_per_file=3000)
    return target


def _append(path: str, n: int = 700) -> None:
    lance.write_dataset(_table(10 * N, n), path, mode="append")


def _expected(path: str, sql: str) -> list[tuple]:
    """The rows of ``sql`` (``{t}`` standing for the dataset) in DuckDB over pylance's dataset."""
    con = duckdb.connect()
    con.register("pl", lance.dataset(path))
    return con.sql(sql.format(t="pl")).fetchall()


def test_statements_leave_duckdbs_catalog_as_it_was(path):
    """Literal calls, parameters, views, relations fetched again and prepared statements all read the
    latest version without a single catalog change (the catalog version counts them; DuckDB counts
    every ``EXECUTE`` itself, as the baseline statement shows)."""
    con = fw_duckdb.connect()
    con.execute(f"CREATE VIEW v AS SELECT * FROM lance_scan('{path}')")
    con.execute("PREPARE by_path AS SELECT count(*) FROM lance_scan(?)")
    con.execute("PREPARE baseline AS SELECT 1")
    rel = con.sql(f"SELECT count(*) FROM lance_scan('{path}') WHERE id % 2 = 0")
    for _ in range(2):
        before = con.con._catalog_version()
        expected = lance.dataset(path).count_rows()
        assert con.execute(f"SELECT count(*) FROM lance_scan('{path}')").fetchall() == [(expected,)]
        assert con.execute("SELECT count(*) FROM lance_scan(?)", [path]).fetchall() == [(expected,)]
        assert con.execute("SELECT count(*) FROM v").fetchall() == [(expected,)]
        assert rel.fetchall() == _expected(path, "SELECT count(*) FROM {t} WHERE id % 2 = 0")
        assert con.con._catalog_version() == before
        con.execute("EXECUTE baseline")
        counted = con.con._catalog_version()
        assert con.execute(f"EXECUTE by_path('{path}')").fetchall() == [(expected,)]
        assert con.con._catalog_version() - counted == counted - before
        _append(path)
    assert con.sql("SHOW TABLES").fetchall() == [("v",)]


def test_a_relation_bound_before_a_schema_change_raises_a_schema_error(path):
    """DuckDB keeps the columns a relation bound; a later version with other columns is not read into
    them: the fetch raises ``SchemaError``, and a relation made again reads the new columns."""
    con = fw_duckdb.connect()
    sql = f"SELECT * FROM lance_scan('{path}') WHERE id BETWEEN 4090 AND 4100"
    rel = con.sql(sql)
    assert rel.fetchall() == _expected(path, "SELECT * FROM {t} WHERE id BETWEEN 4090 AND 4100")
    lance.dataset(path).add_columns({"twice": "id * 2"})
    with pytest.raises(SchemaError):
        rel.fetchall()
    fresh = con.sql(sql)
    assert fresh.columns == ["id", "g", "s", "twice"]
    assert fresh.fetchall() == _expected(path, "SELECT * FROM {t} WHERE id BETWEEN 4090 AND 4100")


def test_without_duckdbs_python_variable_lookup_datasets_are_registered_per_statement(path):
    """With ``python_enable_replacements`` off, DuckDB does not look at the offered variables: each
    statement registers its datasets for itself and unregisters them after, and still reads the
    latest version (or the pinned one)."""
    con = fw_duckdb.connect()
    con.execute("SET python_enable_replacements = false")
    for _ in range(2):
        assert con.execute(f"SELECT count(*), sum(id) FROM lance_scan('{path}')").fetchall() == _expected(
            path, "SELECT count(*), sum(id) FROM {t}"
        )
        assert con.sql("SELECT count(*) FROM lance_scan(?, version := 1)", params=[path]).fetchall() == [(N,)]
        _append(path)
    views = "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '\\_\\_lance\\_%' ESCAPE '\\'"
    assert con.execute(views).fetchall() == [(0,)]


QUERIES = [
    "SELECT count(*), sum(id) FROM lance_scan('{p}')",
    "SELECT count(*) FROM lance_scan('{p}') a JOIN lance_scan('{p}') b USING (id)",
    "SELECT count(*) FROM lance_scan('{p}') JOIN lance_scan('{p}') USING (id)",  # same implicit alias
    "SELECT data.g, count(*) FROM lance_scan('{p}')data GROUP BY ALL ORDER BY 1 LIMIT 3",
    "SELECT count(*) FROM lance_scan( '{p}' , VERSION := 1 )",
    "WITH x AS (SELECT * FROM lance_scan('{p}') WHERE g < 100) FROM x SELECT max(id)",
    "SELECT 'lance_scan(''{p}'')' AS s, (SELECT count(*) FROM lance_scan('{p}')) -- lance_scan('{p}')",
]


@pytest.mark.parametrize("query", QUERIES)
def test_reading_directly_returns_what_the_macro_returns(path, monkeypatch, query):
    """A query whose calls are read directly returns the rows of the query as written."""
    _append(path)
    sql = query.format(p=path)
    direct = fw_duckdb.connect().sql(sql).fetchall()
    monkeypatch.setattr(statement, "direct_reads", lambda text: None)
    assert direct == fw_duckdb.connect().sql(sql).fetchall()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT nosuch FROM lance_scan('{p}')",
        "SELECT lance_scan.id FROM lance_scan('{p}')",
        "SELECT * FROM lance_scan('{p}') WHERE s + 1 = 2",
    ],
)
def test_errors_are_duckdbs_for_the_text_as_written(path, monkeypatch, query):
    sql = query.format(p=path)
    with pytest.raises(duckdb.Error) as direct:
        fw_duckdb.connect().execute(sql)
    monkeypatch.setattr(statement, "direct_reads", lambda text: None)
    with pytest.raises(duckdb.Error) as as_written:
        fw_duckdb.connect().execute(sql)
    assert type(direct.value) is type(as_written.value)
    assert str(direct.value) == str(as_written.value)


def test_direct_reads_replaces_only_literal_calls_in_queries():
    name = view_name("/d/it's.lance", None)
    assert direct_reads("SELECT * FROM lance_scan('/d/it''s.lance') t") == f'SELECT * FROM "{name}" t'
    pinned = view_name("x", 3)
    assert direct_reads("from LANCE_SCAN ( 'x' , version := 3 )") == f'from "{pinned}"'
    for untouched in [
        "SELECT 'lance_scan(''x'')' -- lance_scan('x')",
        "INSERT INTO t SELECT * FROM lance_scan('x')",
        "CREATE VIEW v AS SELECT * FROM lance_scan('x')",
        "SELECT * FROM lance_scan(E'x')",
        "SELECT * FROM lance_scan($$x$$)",
        "SELECT * FROM main.lance_scan('x')",
        "SELECT * FROM lance_scan('x', version := 'tag')",
        "SELECT * FROM lance_scan(?)",
        "SELECT * FROM lance_scan('x' || 'y')",
    ]:
        assert direct_reads(untouched) is None, untouched


def test_a_dataset_gone_inside_a_transaction_raises_typed_and_leaves_it_open(path, tmp_path):
    """A statement bound before (its probe skipped since) whose dataset is gone raises the typed error
    before DuckDB runs anything, so the explicit transaction goes on."""
    copy = str(tmp_path / "copy.lance")
    shutil.copytree(path, copy)
    con = fw_duckdb.connect()
    con.execute("CREATE TABLE n (k BIGINT)")
    sql = f"INSERT INTO n SELECT count(*) FROM lance_scan('{copy}')"
    con.execute("BEGIN")
    con.execute(sql)
    con.execute(sql)
    shutil.rmtree(copy)
    with pytest.raises(DatasetNotFoundError):
        con.execute(sql)
    con.execute(f"INSERT INTO n SELECT count(*) FROM lance_scan('{path}')")
    con.execute("COMMIT")
    assert con.sql("SELECT k FROM n").fetchall() == [(N,)] * 3


def test_a_relation_fetched_after_its_view_changed_reads_the_new_dataset(path, tmp_path):
    """The probe is skipped only while DuckDB's catalog is unchanged: a view redefined to read another
    dataset is bound again, inside a transaction too."""
    other = str(tmp_path / "other.lance")
    lance.write_dataset(_table(0, 123), other)
    con = fw_duckdb.connect()
    con.execute(f"CREATE VIEW v AS SELECT * FROM lance_scan('{path}')")
    rel = con.sql("SELECT count(*) FROM v")
    assert rel.fetchall() == [(N,)]
    con.execute("BEGIN")
    con.execute(f"CREATE OR REPLACE VIEW v AS SELECT * FROM lance_scan('{other}')")
    assert rel.fetchall() == [(123,)]
    con.execute("COMMIT")
    assert rel.fetchall() == [(123,)]



@pytest.mark.parametrize(
    "where",
    [
        "id = 4321",
        "id IN (7, 3001, 4999, 123456)",
        "id BETWEEN 2990 AND 3010",
        "id >= 100",  # more rows than EAGER_ROWS: streamed
        "id = -1",
    ],
)
def test_index_lookups_through_duckdb_return_pylances_rows(path, where):
    """Lookups a B-tree answers (read at once when they find few rows, streamed otherwise) return
    the rows DuckDB over pylance returns, deleted rows left out."""
    from lance_fw.duckdb.dataset import EAGER_ROWS

    _append(path, n=10_000)
    lance.dataset(path).create_scalar_index("id", "BTREE")
    lance.dataset(path).delete("id % 1000 = 7 OR id = 3001")
    assert lance.dataset(path).count_rows(filter="id >= 100") > EAGER_ROWS
    sql = "SELECT * FROM {t} WHERE " + where + " ORDER BY id"
    con = fw_duckdb.connect()
    assert con.sql(sql.format(t=f"lance_scan('{path}')")).fetchall() == _expected(path, sql)


def test_an_index_lookup_that_cannot_read_raises_typed(path):
    import glob
    import os

    lance.dataset(path).create_scalar_index("id", "BTREE")
    with pytest.raises(Exception) as direct:
        for file in glob.glob(os.path.join(path, "data", "*.lance")):
            os.remove(file)
        lance_fw.dataset(path).to_table(filter="id = 4321")
    assert isinstance(direct.value, LanceError)
    con = fw_duckdb.connect()
    with pytest.raises(type(direct.value)):
        con.sql(f"SELECT * FROM lance_scan('{path}') WHERE id = 4321").fetchall()
    assert con.execute("SELECT 42").fetchall() == [(42,)]
