"""Index DDL through ``lance_fw.duckdb`` (``CREATE INDEX … USING``, ``DROP INDEX``, ``SHOW INDEXES``,
``REINDEX``, ``ALTER INDEX … OPTIMIZE``, ``lance_indexes``, ``lance_create_scalar_index``), against pylance.

Differential: the same data is written twice; one copy is indexed through SQL, the other with pylance's
``create_scalar_index``. pylance must then list both indices identically and plan with both
(``ScalarIndexQuery`` naming the index in ``explain_plan``), and both copies answer the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 10_000  # 3 fragments of 4000 / 4000 / 2000 rows: several 4096-row pages
ROWS_PER_FILE = 4000

#: index type -> (column, a filter the index answers)
CASES = {
    "BTREE": ("id", "id BETWEEN 100 AND 120"),
    "BITMAP": ("cat", "cat = 3"),
    "LABEL_LIST": ("tags", "array_has_any(tags, ['t3'])"),
    "ZONEMAP": ("id", "id > 9990"),
}


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64) + seed * 1_000_000,
            "cat": pa.array(rng.integers(0, 10, rows).astype(np.int32), mask=rng.random(rows) < 0.02),
            "tags": pa.array([[f"t{i % 7}", f"t{(i * 3) % 5}"] for i in range(rows)], pa.list_(pa.string())),
        }
    )


def _twins(tmp_path: Path) -> tuple[str, str]:
    """Two datasets with the same rows: one for SQL, one for pylance."""
    sql_uri, py_uri = str(tmp_path / "sql.lance"), str(tmp_path / "py.lance")
    for uri in (sql_uri, py_uri):
        lance.write_dataset(_table(ROWS, 0), uri, max_rows_per_file=ROWS_PER_FILE)
    return sql_uri, py_uri


def _listing(uri: str) -> list[tuple[Any, ...]]:
    """pylance's view of a dataset's indices (everything but uuids and timestamps)."""
    return [
        (
            d.name,
            d.index_type,
            d.type_url,
            d.field_names,
            d.num_rows_indexed,
            d.details,
            [sorted(s.fragment_ids) for s in d.segments],
        )
        for d in sorted(lance.dataset(uri).describe_indices(), key=lambda d: d.name)
    ]


@pytest.mark.parametrize("index_type", sorted(CASES))
def test_sql_index_is_pylances_index(tmp_path: Path, index_type: str) -> None:
    column, query = CASES[index_type]
    sql_uri, py_uri = _twins(tmp_path)
    con = lance_fw.duckdb.connect()
    con.execute(f"CREATE INDEX my_idx ON '{sql_uri}' ({column}) USING {index_type.lower()};")
    lance.dataset(py_uri).create_scalar_index(column, cast(Any, index_type), name="my_idx")

    assert _listing(sql_uri) == _listing(py_uri)
    for uri in (sql_uri, py_uri):
        plan = lance.dataset(uri).scanner(filter=query).explain_plan()
        assert "ScalarIndexQuery" in plan and "my_idx" in plan, plan
    got = lance.dataset(sql_uri).to_table(filter=query)
    assert got.equals(lance.dataset(py_uri).to_table(filter=query))
    assert got.num_rows > 0

    # SHOW INDEXES and lance_indexes list what pylance lists
    description = lance.dataset(py_uri).describe_indices()[0]
    want = [("my_idx", description.index_type, column, ROWS, "{}")]
    assert con.execute(f"SHOW INDEXES ON '{sql_uri}'").fetchall() == want
    assert con.execute(f"SELECT * FROM lance_indexes('{sql_uri}')").fetchall() == want

    con.execute(f"DROP INDEX my_idx ON '{sql_uri}'")
    lance.dataset(py_uri).drop_index("my_idx")
    assert _listing(sql_uri) == _listing(py_uri) == []
    assert con.execute(f"SELECT count(*) FROM lance_indexes('{sql_uri}')").fetchall() == [(0,)]


def test_untrained_index_and_retrain_follow_pylance(tmp_path: Path) -> None:
    """``CREATE INDEX … WITH (train = false)`` makes the index pylance's ``train=False`` makes (no
    rows, no fragments; queries answer as unindexed), and ``REINDEX … RETRAIN`` trains it as
    ``optimize_indices(retrain=True)`` does."""
    sql_uri, py_uri = _twins(tmp_path)
    con = lance_fw.duckdb.connect()
    con.execute(f"CREATE INDEX u ON '{sql_uri}' (cat) USING BITMAP WITH (train = false)")
    lance.dataset(py_uri).create_scalar_index("cat", "BITMAP", name="u", train=False)
    assert _listing(sql_uri) == _listing(py_uri)
    assert [d.num_rows_indexed for d in lance.dataset(sql_uri).describe_indices()] == [0]
    query = "SELECT count(*) FROM '{uri}' WHERE cat = 3"
    assert con.execute(query.format(uri=sql_uri)).fetchall() == [
        (lance.dataset(py_uri).count_rows("cat = 3"),)
    ]
    con.execute(f"REINDEX u ON '{sql_uri}' RETRAIN")
    lance.dataset(py_uri).optimize.optimize_indices(retrain=True)
    assert _listing(sql_uri) == _listing(py_uri)
    assert [d.num_rows_indexed for d in lance.dataset(sql_uri).describe_indices()] == [ROWS]
    assert con.execute(query.format(uri=sql_uri)).fetchall() == [
        (lance.dataset(py_uri).count_rows("cat = 3"),)
    ]


def test_attached_table_reindex_and_optimize_follow_pylance(tmp_path: Path) -> None:
    sql_uri, py_uri = _twins(tmp_path)
    (tmp_path / "lake").mkdir()
    lake_uri = str(tmp_path / "lake" / "t.lance")
    lance.write_dataset(_table(ROWS, 0), lake_uri, max_rows_per_file=ROWS_PER_FILE)
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{tmp_path / 'lake'}' AS lake (TYPE LANCE)")
    con.execute("CREATE INDEX id_idx ON lake.main.t (id) USING BTREE")
    con.execute("CREATE INDEX cat_idx ON lake.t (cat) USING BITMAP WITH (replace = true)")
    pl = lance.dataset(py_uri)
    pl.create_scalar_index("id", "BTREE", name="id_idx")
    pl.create_scalar_index("cat", "BITMAP", name="cat_idx")
    assert _listing(lake_uri) == _listing(py_uri)

    # rows appended after the index: REINDEX / ALTER INDEX … OPTIMIZE cover them, as optimize_indices
    con.execute(f"INSERT INTO lake.main.t SELECT * FROM '{sql_uri}' WHERE id < 500")
    lance.write_dataset(lance.dataset(sql_uri).to_table(filter="id < 500"), py_uri, mode="append")
    shown = dict((r[0], r[3]) for r in con.execute("SHOW INDEXES ON lake.main.t").fetchall())
    assert shown == {"cat_idx": ROWS, "id_idx": ROWS}
    con.execute("REINDEX id_idx ON lake.main.t")
    assert con.execute("ALTER INDEX cat_idx ON lake.main.t OPTIMIZE WITH (mode = 'append')").fetchall() == [
        ("optimize_index", "lake.main.t", "{}")
    ]
    pl = lance.dataset(py_uri)
    pl.optimize.optimize_indices(index_names=["id_idx"])
    pl.optimize.optimize_indices(index_names=["cat_idx"])
    got, want = lance.dataset(lake_uri), lance.dataset(py_uri)
    by_name = {d.name: d for d in want.describe_indices()}
    for d in got.describe_indices():
        assert d.num_rows_indexed == by_name[d.name].num_rows_indexed == ROWS + 500
        assert set().union(*[s.fragment_ids for s in d.segments]) == set().union(
            *[s.fragment_ids for s in by_name[d.name].segments]
        )
    shown = dict((r[0], r[3]) for r in con.execute("SHOW INDEXES ON lake.main.t").fetchall())
    assert shown == {"cat_idx": ROWS + 500, "id_idx": ROWS + 500}
    for query in ("id = 10003", "cat = 4 AND id < 3000"):
        assert "ScalarIndexQuery" in got.scanner(filter=query).explain_plan()
        assert got.to_table(filter=query).equals(want.to_table(filter=query))


def test_lance_create_scalar_index_is_a_btree_replacing_by_name(tmp_path: Path) -> None:
    sql_uri, py_uri = _twins(tmp_path)
    con = lance_fw.duckdb.connect()
    assert con.execute(f"SELECT Count FROM lance_create_scalar_index('{sql_uri}', 'id', 'k')").fetchall() == [
        (1,)
    ]
    assert con.execute(f"SELECT Count FROM lance_create_scalar_index('{sql_uri}', 'id', 'k')").fetchall() == [
        (1,)
    ]
    lance.dataset(py_uri).create_scalar_index("id", "BTREE", name="k")
    assert _listing(sql_uri) == _listing(py_uri)
    assert con.execute(f"SELECT * FROM lance_indices('{sql_uri}')").fetchall() == [("k", "id")]
    assert lance.dataset(sql_uri).version == 3  # the second call replaced the first


def test_pylance_indices_are_listed_and_dropped(tmp_path: Path) -> None:
    _sql_uri, py_uri = _twins(tmp_path)
    pl = lance.dataset(py_uri)
    pl.create_scalar_index("tags", "LABEL_LIST")
    pl.create_scalar_index("id", "ZONEMAP", name="zones")
    con = lance_fw.duckdb.connect()
    rows = con.execute(f"SHOW INDEXES FROM '{py_uri}'").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("tags_idx", "LabelList", "tags", ROWS),
        ("zones", "ZoneMap", "id", ROWS),
    ]
    con.execute(f"DROP INDEX zones ON '{py_uri}'")
    assert [d.name for d in lance.dataset(py_uri).describe_indices()] == ["tags_idx"]


def test_duckdbs_own_create_index_is_left_to_duckdb() -> None:
    con = lance_fw.duckdb.connect()
    con.execute("CREATE TABLE d (a INTEGER); INSERT INTO d VALUES (1), (2)")
    con.execute("CREATE INDEX d_a ON d (a)")
    con.execute("DROP INDEX d_a")
    assert con.execute("SELECT count(*) FROM d WHERE a = 2").fetchall() == [(1,)]


@pytest.mark.parametrize(
    "statement, error, words",
    [
        (
            "CREATE INDEX v ON '{uri}' (id) USING IVF_PQ WITH (num_partitions = 1)",
            UnsupportedFeatureError,
            "vector",
        ),
        ("CREATE INDEX v ON '{uri}' (id) USING ivf_hnsw_sq", UnsupportedFeatureError, "IVF_HNSW_SQ"),
        ("CREATE INDEX f ON '{uri}' (tags) USING INVERTED", UnsupportedFeatureError, "INVERTED"),
        ("CREATE INDEX u ON '{uri}' (id) USING BTREE WITH (train = 'no')", InvalidArgumentError, "train must be a bool"),
        ("CREATE INDEX u ON '{uri}' (id) USING BTREE WITH (replace = 'yes')", InvalidArgumentError, "replace must be"),
        ("CREATE INDEX two ON '{uri}' (id, cat) USING BTREE", UnsupportedFeatureError, "2 columns"),
        ("CREATE INDEX b ON '{uri}' (id) USING BTREE WITH (retrain = true)", InvalidArgumentError, "REINDEX"),
        ("CREATE INDEX b ON '{uri}' (id) USING BTREE WITH (colour = 'red')", InvalidArgumentError, "colour"),
        ("CREATE INDEX b ON '{uri}' (id)", InvalidArgumentError, "USING"),
        ("CREATE INDEX id_idx ON '{uri}' (id) USING BTREE", InvalidArgumentError, "already exists"),
        ("DROP INDEX missing ON '{uri}'", InvalidArgumentError, "missing"),
        (
            "ALTER INDEX id_idx ON '{uri}' OPTIMIZE WITH (mode = 'merge', num_indices_to_merge = 2)",
            UnsupportedFeatureError,
            "num_indices_to_merge",
        ),
        ("ALTER INDEX id_idx ON '{uri}' OPTIMIZE WITH (mode = 'sideways')", InvalidArgumentError, "sideways"),
        ("SHOW INDEXES ON some_duckdb_table", UnsupportedFeatureError, "some_duckdb_table"),
    ],
)
def test_what_lance_fw_does_not_do_is_refused_by_name(
    tmp_path: Path, statement: str, error: type[Exception], words: str
) -> None:
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(500, 0), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    before = _listing(uri)
    con = lance_fw.duckdb.connect()
    with pytest.raises(error, match=words):
        con.execute(statement.format(uri=uri))
    assert _listing(uri) == before
    assert lance.dataset(uri).version == 2


def test_index_ddl_inside_a_transaction_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    lance.write_dataset(_table(100, 0), str(tmp_path / "lake" / "t.lance"))
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{tmp_path / 'lake'}' AS lake (TYPE LANCE)")
    con.execute("BEGIN")
    with pytest.raises(UnsupportedFeatureError, match="transaction"):
        con.execute("CREATE INDEX i ON lake.main.t (id) USING BTREE")
    con.execute("ROLLBACK")
    assert lance.dataset(str(tmp_path / "lake" / "t.lance")).describe_indices() == []


def test_vector_index_ddl_is_used_by_pylance(tmp_path) -> None:
    """``CREATE INDEX … USING IVF_PQ WITH (…)`` builds the index through ``ds.create_index`` (the
    extension's ``metric_type`` as pylance's ``metric``); pylance lists it and plans an ANN search."""
    import lance
    import numpy as np
    import pyarrow as pa

    import lance_fw.duckdb

    uri = str(tmp_path / "v.lance")
    rng = np.random.default_rng(1)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(6000 * 8).astype(np.float32)), 8)
    lance.write_dataset(pa.table({"id": np.arange(6000), "vec": vec}), uri)
    con = lance_fw.duckdb.connect()
    con.execute(
        f"CREATE INDEX vec_idx ON '{uri}' (vec) USING IVF_PQ "
        "WITH (num_partitions = 4, num_sub_vectors = 2, metric_type = 'cosine')"
    )
    (described,) = lance.dataset(uri).describe_indices()
    assert described.name == "vec_idx" and described.index_type.startswith("IVF_PQ")
    assert described.details["metric_type"] == "COSINE"
    plan = lance.dataset(uri).scanner(nearest={"column": "vec", "q": [0.1] * 8, "k": 3}).explain_plan()
    assert "ANNSubIndex" in plan
