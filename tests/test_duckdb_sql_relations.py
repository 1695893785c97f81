"""``con.sql(...)`` (DuckDB's relation API, what notebooks use) reaches lance_fw's statement path too:
attached Lance tables, Lance table functions, searches, DML and transactions behave as through
``con.execute``. Before, ``con.sql`` said the catalog or function did not exist. Oracle: pylance on
the same datasets."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.duckdb import connect


@pytest.fixture()
def lake(tmp_path: Path):
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "id": np.arange(6000),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(6000 * 4, dtype=np.float32)), 4),
        }
    )
    lance_fw.write_dataset(table, str(tmp_path / "t.lance"), max_rows_per_file=2500)
    con = connect()
    con.execute(f"ATTACH '{tmp_path}' AS lake (TYPE LANCE)")
    return con, tmp_path


def test_reads_of_attached_tables(lake) -> None:
    con, root = lake
    got = con.sql("SELECT sum(id) AS s, count(*) AS n FROM lake.main.t WHERE id % 3 = 0").fetchall()
    want = lance.dataset(str(root / "t.lance")).to_table(filter="id % 3 = 0").column("id").to_numpy()
    assert [(int(s), n) for s, n in got] == [(int(want.sum()), len(want))]
    relation = con.sql("SELECT id FROM lake.main.t", alias="r")
    assert relation.alias == "r"
    assert relation.order("id").limit(3).fetchall() == [(0,), (1,), (2,)]


def test_table_functions_and_searches(lake) -> None:
    con, root = lake
    uri = str(root / "t.lance")
    versions = con.sql(f"SELECT count(*) FROM lance_versions('{uri}')").fetchall()
    assert versions == [(len(lance.dataset(uri).versions()),)]
    q = [0.5, 0.5, 0.5, 0.5]
    got = con.sql(f"SELECT id FROM lance_vector_search('{uri}', 'v', {q}::FLOAT[], k := 5) ORDER BY _distance, id")
    want = lance.dataset(uri).to_table(nearest={"column": "v", "q": q, "k": 5}, columns=["id"])
    assert sorted(r[0] for r in got.fetchall()) == sorted(want.column("id").to_pylist())


def test_dml_and_transactions(lake) -> None:
    con, root = lake
    uri = str(root / "t.lance")
    assert con.sql("INSERT INTO lake.main.t SELECT 6000, [1, 2, 3, 4]::FLOAT[4]") is None
    assert lance.dataset(uri).count_rows() == 6001
    con.sql("BEGIN")
    con.sql("DELETE FROM lake.main.t WHERE id < 10")
    con.sql("ROLLBACK")
    assert lance.dataset(uri).count_rows() == 6001
    con.sql("DELETE FROM lake.main.t WHERE id < 10")
    assert lance.dataset(uri).count_rows() == 5991
    assert con.sql("SELECT count(*) FROM lake.main.t").fetchall() == [(5991,)]
    assert con.sql("SELECT 42").fetchall() == [(42,)]  # plain DuckDB statements stay lazy relations
