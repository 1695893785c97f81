"""Queries that read none of a ``lance_scan``'s columns (``SELECT count(*) FROM lance_scan('p')``, or
``FROM 'p.lance'``) read its rows alone, counted from the snapshot's metadata; DuckDB over the pylance
dataset is the oracle.

Each query is checked three ways: its rows equal DuckDB's over pylance's dataset (registered), the
rows-only source is what DuckDB scanned (or not, where a column is read), and a relation fetched again
after a commit counts the new version, as relations over ``lance_scan`` always do.
"""

from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb
from lance_fw.duckdb import dataset as duckdb_dataset
from lance_fw.duckdb.names import direct_reads, reads_rows_only, view_name
from lance_fw.errors import DatasetNotFoundError

#: Rows per fragment, and fragments: several 1024-value blocks and chunks (batches of nulls are
#: checked by a small ``NULL_BATCH_ROWS`` below).
ROWS, FRAGMENTS = 6000, 3


def _table(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "x": pa.array([float(i % 97) for i in range(start, start + n)])})


@pytest.fixture(params=["lance_fw", "pylance"])
def path(request, tmp_path) -> str:
    target = str(tmp_path / "t.lance")
    write = lance_fw.write_dataset if request.param == "lance_fw" else lance.write_dataset
    write(_table(0, ROWS * FRAGMENTS), target, max_rows_per_file=ROWS)
    lance.dataset(target).delete("id % 5 = 0")  # deletion files in every fragment
    return target


@pytest.fixture
def scanned(monkeypatch) -> list[str]:
    """The kinds of source DuckDB scanned ("rows" or "columns"), in order."""
    kinds: list[str] = []
    rows_scanner, columns_scanner = duckdb_dataset.LiveRowCount.scanner, duckdb_dataset.LiveDataset.scanner

    def rows(self, *args, **kwargs):
        kinds.append("rows")
        return rows_scanner(self, *args, **kwargs)

    def columns(self, *args, **kwargs):
        kinds.append("columns")
        return columns_scanner(self, *args, **kwargs)

    monkeypatch.setattr(duckdb_dataset.LiveRowCount, "scanner", rows)
    monkeypatch.setattr(duckdb_dataset.LiveDataset, "scanner", columns)
    return kinds


def _expected(path: str, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.register("pl", lance.dataset(path))
    return con.sql(sql.format(t="pl")).fetchall()


ROWS_ONLY = [
    "SELECT count(*) FROM {t}",
    "SELECT count(*) AS n, 42, count(1) FROM {t} AS t",
    "SELECT count(*) FROM {t} WHERE 1 = 1 GROUP BY ALL",
    "SELECT 7 AS seven FROM {t} LIMIT 3",
    "WITH c AS (SELECT 1 AS one) SELECT count(*) FROM {t}",
]
#: Queries whose values matter: read as always (DuckDB scans the columns).
READS_COLUMNS = [
    "SELECT count(*) FROM {t} WHERE id > 100",
    "SELECT count(id), count(*) * 2 FROM {t}",
    "SELECT count(*) FROM (SELECT * FROM {t} WHERE x < 3)",
    "SELECT count(*) FROM {t} AS t(a)",
    "SELECT count(*) FROM {t} AS a JOIN range(3) AS r ON a.id = r.range",
]


#: How a query names the dataset: the table macro, or the quoted path (DuckDB's replacement scan).
SPELLINGS = ["lance_scan('{p}')", "'{p}'"]


@pytest.mark.parametrize("spelled", SPELLINGS)
@pytest.mark.parametrize("sql", ROWS_ONLY)
def test_rows_only_queries_count_from_metadata(path, sql, spelled, scanned):
    got = fw_duckdb.connect().execute(sql.format(t=spelled.format(p=path))).fetchall()
    assert got == _expected(path, sql)
    assert scanned == ["rows"]


@pytest.mark.parametrize("spelled", SPELLINGS)
@pytest.mark.parametrize("sql", READS_COLUMNS)
def test_queries_reading_values_scan_the_columns(path, sql, spelled, scanned):
    got = fw_duckdb.connect().execute(sql.format(t=spelled.format(p=path))).fetchall()
    assert sorted(got) == sorted(_expected(path, sql))
    assert "rows" not in scanned and scanned


def test_a_call_in_a_subquery_and_a_pinned_version(path, scanned):
    """Per call: the subquery's count reads rows, the outer scan its columns; ``version :=`` pins."""
    sql = "SELECT (SELECT count(*) FROM {p}), max(id) FROM {t}"
    lance.write_dataset(_table(10**6, 100), path, mode="append")
    pinned = f"lance_scan('{path}', version := 2)"
    got = fw_duckdb.connect().execute(sql.format(p=pinned, t=f"lance_scan('{path}')")).fetchall()
    oracle = duckdb.connect()
    oracle.register("old", lance.dataset(path, version=2))
    oracle.register("pl", lance.dataset(path))
    assert got == oracle.sql(sql.format(p="old", t="pl")).fetchall()
    assert sorted(scanned) == ["columns", "rows"]


def test_a_relation_counts_the_latest_version_at_each_fetch(path, scanned):
    con = fw_duckdb.connect()
    relation = con.sql(f"SELECT count(*) FROM lance_scan('{path}')")
    assert relation.fetchall() == _expected(path, "SELECT count(*) FROM {t}")
    lance.write_dataset(_table(10**6, 1234), path, mode="append")
    assert relation.fetchall() == _expected(path, "SELECT count(*) FROM {t}")
    lance.dataset(path).delete("id < 1000")
    assert relation.fetchall() == _expected(path, "SELECT count(*) FROM {t}")
    assert relation.columns == ["count_star()"] and [str(t) for t in relation.types] == ["BIGINT"]
    assert set(scanned) == {"rows"}


def test_nulls_come_in_batches(path, monkeypatch):
    monkeypatch.setattr(duckdb_dataset, "NULL_BATCH_ROWS", 1000)
    sql = "SELECT 1 FROM {t}"
    got = fw_duckdb.connect().execute(sql.format(t=f"lance_scan('{path}')")).fetchall()
    assert got == _expected(path, sql)


def test_direct_reads_names_rows_only_calls():
    rows, plain = view_name("x", None, rows_only=True), view_name("x", None)
    assert reads_rows_only(rows) and not reads_rows_only(plain)
    assert direct_reads("SELECT count(*) FROM lance_scan('x')") == f'SELECT count(*) FROM "{rows}"'
    # the same dataset read for its values elsewhere in the statement: every call reads columns
    both = "SELECT (SELECT count(*) FROM lance_scan('x')), * FROM lance_scan('x')"
    assert direct_reads(both) == f'SELECT (SELECT count(*) FROM "{plain}"), * FROM "{plain}"'
    sampled = "SELECT count(*) FROM lance_scan('x') USING SAMPLE 10%"
    assert direct_reads(sampled) == f'SELECT count(*) FROM "{plain}" USING SAMPLE 10%'
    # a quoted path: its rows' name where only its rows are read, else left to the replacement scan
    path_rows = view_name("d/it's.lance", None, rows_only=True)
    assert direct_reads("SELECT count(*) FROM 'd/it''s.lance'") == f'SELECT count(*) FROM "{path_rows}"'
    assert direct_reads("SELECT * FROM 'd/t.lance'") is None
    assert direct_reads("SELECT count(*) FROM 'd/t.csv'") is None


def test_a_missing_dataset_or_version_raises_typed_before_anything_runs(path, tmp_path):
    con = fw_duckdb.connect()
    con.execute("BEGIN")
    with pytest.raises(DatasetNotFoundError):
        con.execute(f"SELECT count(*) FROM lance_scan('{tmp_path / 'none.lance'}')")
    with pytest.raises(DatasetNotFoundError):
        con.execute(f"SELECT count(*) FROM lance_scan('{path}', version := 99)")
    assert con.execute("SELECT 1").fetchall() == [(1,)]  # the transaction goes on
    con.execute("COMMIT")
