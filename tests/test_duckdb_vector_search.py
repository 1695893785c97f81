"""``lance_vector_search`` through ``lance_fw.duckdb`` against pylance's ``to_table(nearest=...)``.

Differential: one pylance-written dataset (several fragments, 4096-row page edges crossed, deleted rows,
null vectors) is searched through SQL and through pylance with the same query vector, ``k``, metric and
condition; with ``prefilter := true`` the SQL ``WHERE`` is the prefilter, without it DuckDB applies the
``WHERE`` to the ``k`` nearest rows, which is pylance's post-filter. Rows and distances must be equal
(distances to the bit: both are lance-linalg's float32 kernels).
"""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw.duckdb
from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError, UnsupportedFeatureError

ROWS = 10_000  # fragments of 4500 / 4500 / 1000 rows
ROWS_PER_FILE = 4500
DIM = 8
#: rows deleted after writing (pylance's delete), so deletion files are honoured
DELETED = "id % 97 = 5"
pytestmark = pytest.mark.filterwarnings("ignore:Arrow output on a DB-API result")

#: conditions valid both as DuckDB SQL and as pylance filters
CONDITIONS = ("label < 3", "category = 'c2' AND id % 7 = 0", "id >= 9000 OR label = 9")


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    null_vectors = rng.random(rows) < 0.01
    vec = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM, mask=pa.array(null_vectors))
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "label": rng.integers(0, 10, rows).astype(np.int32),
            "category": pa.array([f"c{i % 5}" for i in range(rows)]),
            "vec": vec,
        }
    )


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("vs") / "items.lance")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=ROWS_PER_FILE)
    ds.delete(DELETED)
    return path


def _query(seed: int) -> list[float]:
    return [float(v) for v in np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)]


def _vector_sql(q: list[float]) -> str:
    return "[" + ", ".join(repr(v) for v in q) + "]::FLOAT[]"


def _sorted(table: pa.Table) -> list[tuple[int, float]]:
    rows = zip(table.column("id").to_pylist(), table.column("_distance").to_pylist(), strict=True)
    return sorted(rows, key=lambda r: (r[1], r[0]))


def _sql_search(uri: str, q: list[float], options: str, where: str | None) -> pa.Table:
    con = lance_fw.duckdb.connect()
    sql = f"SELECT * FROM lance_vector_search('{uri}', 'vec', {_vector_sql(q)}{options})"
    if where is not None:
        sql += f" WHERE {where}"
    return con.execute(sql).to_arrow_table()


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
@pytest.mark.parametrize("k", [1, 10, 300])
def test_search_equals_pylance(uri: str, metric: str, k: int) -> None:
    q = _query(k)
    got = _sql_search(uri, q, f", k := {k}, metric := '{metric}'", None)
    want = lance.dataset(uri).to_table(nearest={"column": "vec", "q": q, "k": k, "metric": metric})
    assert got.schema.names == [*lance.dataset(uri).schema.names, "_distance"]
    assert got.num_rows == k
    assert _sorted(got) == _sorted(want)
    assert got.column("vec").to_pylist() == want.column("vec").to_pylist()


@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("k", [5, 200])
def test_filtered_search_equals_pylance(uri: str, prefilter: bool, condition: str, k: int) -> None:
    q = _query(len(condition) + k)
    options = f", k = {k}, prefilter = {str(prefilter).lower()}, use_index = false"
    got = _sql_search(uri, q, options, condition)
    want = lance.dataset(uri).to_table(
        nearest={"column": "vec", "q": q, "k": k}, filter=condition, prefilter=prefilter
    )
    assert _sorted(got) == _sorted(want)
    if prefilter:
        assert got.num_rows == k  # the k nearest among the rows passing the condition
    else:
        assert got.num_rows <= k


def test_prefilter_with_a_subquery_condition(uri: str) -> None:
    """A condition only DuckDB can evaluate (a subquery over another Lance dataset) still prefilters."""
    q = _query(1)
    got = _sql_search(
        uri,
        q,
        ", k := 20, prefilter := true",
        f"id IN (SELECT id FROM '{uri}' WHERE label = 4 AND id < 5000)",
    )
    want = lance.dataset(uri).to_table(
        nearest={"column": "vec", "q": q, "k": 20}, filter="label = 4 AND id < 5000", prefilter=True
    )
    assert _sorted(got) == _sorted(want)


def test_prefilter_inside_ctes_and_sealed_subqueries(uri: str) -> None:
    """The shapes of the extension's own bigann test: a CTE whose SELECT filters the search, read
    further out without a condition, or sealed by a LIMIT before an outer WHERE."""
    q = _query(2)
    want = lance.dataset(uri).to_table(
        nearest={"column": "vec", "q": q, "k": 10}, filter="label = 1", prefilter=True
    )
    search = f"lance_vector_search('{uri}', 'vec', {_vector_sql(q)}, k = 10, prefilter = true) r"
    con = lance_fw.duckdb.connect()
    ranked = con.execute(
        f"WITH got AS (SELECT row_number() OVER (ORDER BY r._distance, r.id) - 1 AS rank, r.id "
        f"FROM {search} WHERE r.label = 1) SELECT id FROM got ORDER BY rank"
    ).fetchall()
    assert [r[0] for r in ranked] == [i for i, _ in _sorted(want)]
    first = con.execute(
        f"WITH got AS (SELECT r.id FROM {search} WHERE r.label = 1 ORDER BY r._distance, r.id LIMIT 1) "
        f"SELECT count(*) FROM got WHERE id >= 0"
    ).fetchall()
    assert first == [(1,)]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM (SELECT id, label FROM {search}) WHERE label = 1",
        "WITH got AS (SELECT id, label FROM {search}) SELECT id FROM got WHERE label = 1",
        "SELECT r.id FROM {search} r JOIN (SELECT 1 AS x) o ON r.label = o.x",
        "SELECT id FROM {search} WHERE _distance < 1",
        "SELECT label FROM {search} GROUP BY label HAVING label > 1",
    ],
)
def test_prefilter_shapes_it_cannot_push_are_refused(uri: str, sql: str) -> None:
    search = f"lance_vector_search('{uri}', 'vec', {_vector_sql(_query(3))}, k := 5, prefilter := true)"
    with pytest.raises(UnsupportedFeatureError, match="prefilter := true"):
        lance_fw.duckdb.connect().execute(sql.format(search=search)).fetchall()


def test_postfilter_shapes_need_no_pushdown(uri: str) -> None:
    """Without prefilter every condition applies after the top-k, wherever it is written."""
    q = _query(4)
    search = f"lance_vector_search('{uri}', 'vec', {_vector_sql(q)}, k := 50)"
    want = lance.dataset(uri).to_table(nearest={"column": "vec", "q": q, "k": 50}, filter="label = 1")
    got = lance_fw.duckdb.connect().execute(
        f"SELECT * FROM (SELECT id, label, _distance FROM {search}) WHERE label = 1"
    )
    assert _sorted(got.to_arrow_table()) == _sorted(want)


def test_attached_table_and_insert_of_search_rows(uri: str, tmp_path: Path) -> None:
    lance.write_dataset(lance.dataset(uri).to_table(), str(tmp_path / "items.lance"))
    q = _query(5)
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{tmp_path}' AS lake (TYPE LANCE)")
    con.execute("CREATE TABLE lake.main.hits (id BIGINT, _distance FLOAT)")
    con.execute(
        f"INSERT INTO lake.main.hits SELECT id, _distance FROM "
        f"lance_vector_search('lake.main.items', 'vec', {_vector_sql(q)}, k := 7)"
    )
    want = lance.dataset(uri).to_table(nearest={"column": "vec", "q": q, "k": 7})
    assert _sorted(lance.dataset(str(tmp_path / "hits.lance")).to_table()) == _sorted(want)


def test_argument_errors(uri: str, tmp_path: Path) -> None:
    con = lance_fw.duckdb.connect()
    call = f"SELECT * FROM lance_vector_search('{uri}', 'vec', "
    with pytest.raises(InvalidArgumentError, match="requires a non-empty query vector"):
        con.execute(call + "[]::FLOAT[])")
    with pytest.raises(InvalidArgumentError, match="requires k > 0"):
        con.execute(call + f"{_vector_sql(_query(0))}, k = 0)")
    with pytest.raises(InvalidArgumentError, match="unknown named parameter"):
        con.execute(call + f"{_vector_sql(_query(0))}, kk := 3)")
    with pytest.raises(InvalidArgumentError, match="does not match"):
        con.execute(call + "[1.0, 2.0]::FLOAT[])")
    with pytest.raises(DatasetNotFoundError, match="Failed to open Lance dataset"):
        con.execute(f"SELECT * FROM lance_vector_search('{tmp_path}/none.lance', 'vec', [1.0]::FLOAT[])")
    with pytest.raises(UnsupportedFeatureError, match="view"):
        con.execute(f"CREATE VIEW v AS {call}{_vector_sql(_query(0))})")


@pytest.mark.parametrize("options", ["", "(FORMAT JSON) ", "ANALYZE "])
def test_explain_shows_the_search(uri: str, options: str) -> None:
    q = _vector_sql(_query(6))
    sql = (
        f"EXPLAIN {options}SELECT id FROM lance_vector_search('{uri}', 'vec', {q}, k := 3, "
        "use_index := false, prefilter := true) r WHERE r.label = 2"
    )
    rows = dict(lance_fw.duckdb.connect().execute(sql).fetchall())
    plan = rows.get("physical_plan") or rows["analyzed_plan"]
    assert "Lance Use Index" in plan and "KNNVectorDistance" in plan and "r.label = 2" in plan
    if "JSON" in options:
        assert json.loads(plan)[-1]["extra_info"]["Lance Use Index"] == "false"


def test_search_through_a_vector_index_equals_pylance(tmp_path: Path) -> None:
    """``use_index`` (the default) searches the IVF_PQ index pylance built, as pylance does:
    the same approximate rows and distances; ``use_index := false`` searches exactly."""
    path = str(tmp_path / "ivf.lance")
    lance.write_dataset(_table(ROWS), path, max_rows_per_file=ROWS_PER_FILE)
    lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=2)
    q = _query(11)
    for options, nearest in [
        (", k := 20, nprobes := 2", {"k": 20, "nprobes": 2}),
        (", k := 20, use_index := false", {"k": 20, "use_index": False}),
    ]:
        got = _sql_search(path, q, options, None)
        want = lance.dataset(path).to_table(nearest={"column": "vec", "q": q, **nearest})
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()), options


def test_explain_analyze_json_shows_the_search(uri: str) -> None:
    """EXPLAIN (ANALYZE, FORMAT JSON) is a profile object, not a list of operators: the search's
    entry goes under its ``operator`` list (it crashed before)."""
    con = lance_fw.duckdb.connect()
    sql = f"SELECT id FROM lance_vector_search('{uri}', 'vec', {_vector_sql(_query(3))}, k := 3)"
    (row,) = con.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}").fetchall()
    profile = json.loads(row[1])
    assert any(node.get("name") == "LANCE_VECTOR_SEARCH" for node in profile["operator"])
