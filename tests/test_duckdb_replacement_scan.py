"""``FROM 'path.lance'``: a quoted dataset path in SQL reads the dataset, as DuckDB's ``lance`` extension's
replacement scan does -- in joins, CTEs, subqueries and views, each statement at the latest version.

Differential: every query is also run by plain DuckDB over pylance's ``to_table()`` of the same dataset.
"""

from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb
from lance_fw.errors import DatasetNotFoundError

ROWS = 10_000  # several 4096-value chunks


@pytest.fixture
def trips(tmp_path):
    path = str(tmp_path / "trips.lance")
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "fare": pa.array([i * 0.25 for i in range(ROWS)], pa.float64()),
            "zone": pa.array([f"z{i % 37}" for i in range(ROWS)]),
        }
    )
    lance.write_dataset(table, path, max_rows_per_file=3000)
    return path


def _oracle(path: str, query: str, alias_of: dict[str, str]) -> list[tuple]:
    con = duckdb.connect()
    for name, p in alias_of.items():
        con.register(name, lance.dataset(p).to_table())
    sql = query
    for name, p in alias_of.items():
        sql = sql.replace(f"'{p}'", name)
    return con.execute(sql).fetchall()


QUERIES = [
    "SELECT count(*), sum(id), min(zone) FROM '{p}'",
    "SELECT zone, count(*) AS n, sum(fare) FROM '{p}' WHERE id % 3 = 0 GROUP BY zone ORDER BY zone",
    "SELECT a.id, b.zone FROM '{p}' a JOIN '{p}' b ON a.id = b.id + 1 WHERE a.id < 50 ORDER BY a.id",
    "WITH t AS (SELECT * FROM '{p}' WHERE fare > 100) SELECT count(*) FROM t",
    "SELECT count(*) FROM (SELECT id FROM '{p}' ORDER BY fare DESC LIMIT 10)",
    "SELECT id FROM '{p}' WHERE id IN (SELECT id + 7 FROM '{p}' WHERE zone = 'z3') ORDER BY id LIMIT 20",
]


@pytest.mark.parametrize("query", QUERIES)
def test_quoted_dataset_path_reads_the_dataset(trips, query):
    sql = query.format(p=trips)
    got = lance_fw.duckdb.connect().execute(sql).fetchall()
    assert got == _oracle(trips, sql, {"t0": trips})


def test_trailing_slash_spelling_reads_the_same_dataset(trips):
    con = lance_fw.duckdb.connect()
    got = con.execute(f"SELECT count(*) FROM '{trips}/' a, (SELECT 1) b").fetchall()
    assert got == [(ROWS,)]


def test_view_over_a_quoted_path_sees_each_new_version(trips):
    con = lance_fw.duckdb.connect()
    con.execute(f"CREATE VIEW v AS SELECT count(*) AS n FROM '{trips}'")
    assert con.execute("SELECT n FROM v").fetchall() == [(ROWS,)]
    lance.write_dataset(pa.table({"id": [1], "fare": [1.0], "zone": ["x"]}), trips, mode="append")
    assert con.execute("SELECT n FROM v").fetchall() == [(ROWS + 1,)]
    assert lance.dataset(trips).count_rows() == ROWS + 1


def test_missing_dataset_path_is_a_typed_error(tmp_path):
    con = lance_fw.duckdb.connect()
    with pytest.raises(DatasetNotFoundError, match="nothing.lance"):
        con.execute(f"SELECT * FROM '{tmp_path}/nothing.lance'").fetchall()


def test_a_quoted_path_without_the_lance_suffix_stays_duckdbs(tmp_path):
    """Only ``*.lance`` paths are Lance datasets; anything else is DuckDB's to resolve (or refuse)."""
    con = lance_fw.duckdb.connect()
    with pytest.raises(duckdb.Error) as lance_fw_error:
        con.execute(f"SELECT * FROM '{tmp_path}/nothing.csv'").fetchall()
    with pytest.raises(duckdb.Error) as duckdb_error:
        duckdb.connect().execute(f"SELECT * FROM '{tmp_path}/nothing.csv'").fetchall()
    assert type(lance_fw_error.value) is type(duckdb_error.value)
