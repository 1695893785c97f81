"""``ATTACH 'dir' AS ns (TYPE LANCE)`` and SQL writes to its tables, through ``lance_fw.duckdb.connect()``.

Differential: each SQL write is compared with pylance doing the same on a copy of the dataset (``update``,
``delete``, an append), and reads with DuckDB over pylance's ``to_table()``.
"""

from __future__ import annotations

import os
import shutil

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw.duckdb
from lance_fw.errors import DatasetExistsError, InvalidArgumentError, UnsupportedFeatureError

ROWS = 9_000  # several 4096-value chunks; max_rows_per_file gives several fragments


def _table(n: int = ROWS, start: int = 0) -> pa.Table:
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([i * 0.5 for i in ids], pa.float64()),
            "s": pa.array([None if i % 11 == 0 else f"s{i % 13}" for i in ids], pa.string()),
        }
    )


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    lance.write_dataset(_table(), str(root / "t.lance"), max_rows_per_file=4000)
    return root


@pytest.fixture
def con(root):
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{root}' AS ns (TYPE LANCE)")
    return con


def _copy(root, name="t", to="copy"):
    shutil.copytree(root / f"{name}.lance", root.parent / f"{to}.lance")
    return str(root.parent / f"{to}.lance")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*), sum(id), count(s) FROM {t}",
        "SELECT s, count(*), sum(x) FROM {t} WHERE id > 100 GROUP BY s ORDER BY s NULLS FIRST",
        "SELECT a.id FROM {t} a JOIN {t} b ON a.id = b.id - 1 WHERE a.id % 1000 = 0 ORDER BY 1",
    ],
)
@pytest.mark.parametrize("name", ["ns.main.t", "ns.t"])
def test_reads_equal_duckdb_over_pylance(root, con, query, name):
    oracle = duckdb.connect()
    oracle.register("t", lance.dataset(str(root / "t.lance")).to_table())
    assert con.execute(query.format(t=name)).fetchall() == oracle.execute(query.format(t="t")).fetchall()


def test_update_matches_pylance_update(root, con):
    copy = _copy(root)
    assert con.execute("UPDATE ns.main.t SET x = x * 2, s = upper(s) WHERE id % 7 = 0").fetchall() == [(1286,)]
    lance.dataset(copy).update({"x": "x * 2", "s": "upper(s)"}, where="id % 7 = 0")
    ours, theirs = lance.dataset(str(root / "t.lance")), lance.dataset(copy)
    assert ours.to_table().equals(theirs.to_table())  # same rows in the same order
    assert ours.version == theirs.version


def test_delete_matches_pylance_delete(root, con):
    copy = _copy(root)
    assert con.execute("DELETE FROM ns.main.t WHERE s IS NULL OR id BETWEEN 4000 AND 4100").fetchall() == [(911,)]
    lance.dataset(copy).delete("s IS NULL OR id BETWEEN 4000 AND 4100")
    ours, theirs = lance.dataset(str(root / "t.lance")), lance.dataset(copy)
    assert ours.to_table().equals(theirs.to_table())
    assert [f.count_rows() for f in ours.get_fragments()] == [f.count_rows() for f in theirs.get_fragments()]


def test_insert_matches_a_pylance_append(root, con):
    copy = _copy(root)
    con.execute("INSERT INTO ns.main.t VALUES (100000, 1.5, 'new'), (100001, NULL, NULL)")
    con.execute("INSERT INTO ns.main.t (s, id) SELECT 'sel', id + 200000 FROM ns.main.t WHERE id < 3")
    lance.write_dataset(
        pa.table({"id": [100000, 100001], "x": [1.5, None], "s": ["new", None]}, schema=_table().schema),
        copy,
        mode="append",
    )
    lance.write_dataset(
        pa.table({"id": [200000, 200001, 200002], "x": [None] * 3, "s": ["sel"] * 3}, schema=_table().schema),
        copy,
        mode="append",
    )
    assert lance.dataset(str(root / "t.lance")).to_table().equals(lance.dataset(copy).to_table())


def test_insert_with_wrong_arity_or_unknown_column_is_refused(con, root):
    with pytest.raises(InvalidArgumentError, match="3 column"):
        con.execute("INSERT INTO ns.main.t VALUES (1, 2.0)")
    with pytest.raises(InvalidArgumentError, match="nope"):
        con.execute("INSERT INTO ns.main.t (id, nope) VALUES (1, 2)")
    assert lance.dataset(str(root / "t.lance")).version == 1


def test_create_table_columns_ctas_replace_if_not_exists(root, con):
    con.execute("CREATE TABLE ns.main.empty (id BIGINT, name VARCHAR, v FLOAT[3])")
    empty = lance.dataset(str(root / "empty.lance"))
    expected = duckdb.connect().sql("SELECT NULL::BIGINT id, NULL::VARCHAR name, NULL::FLOAT[3] v LIMIT 0")
    assert empty.count_rows() == 0 and empty.schema == expected.to_arrow_table().schema
    con.execute("CREATE TABLE ns.main.c AS SELECT id, s FROM ns.main.t WHERE id < 10")
    assert lance.dataset(str(root / "c.lance")).count_rows() == 10
    with pytest.raises(DatasetExistsError):
        con.execute("CREATE TABLE ns.main.c AS SELECT 1 AS id")
    con.execute("CREATE TABLE IF NOT EXISTS ns.main.c AS SELECT 1 AS id")
    assert lance.dataset(str(root / "c.lance")).count_rows() == 10
    con.execute("CREATE OR REPLACE TABLE ns.main.c AS SELECT 7::BIGINT AS id")
    replaced = lance.dataset(str(root / "c.lance"))
    assert replaced.to_table().to_pylist() == [{"id": 7}] and replaced.version == 2


def test_show_tables_sees_datasets_created_after_attach(root, con):
    lance.write_dataset(_table(5), str(root / "later.lance"))
    (root / "not_a_dataset.lance").mkdir()
    assert con.execute("SHOW TABLES FROM ns.main").fetchall() == [("later",), ("t",)]
    assert con.execute("SELECT count(*) FROM ns.main.later").fetchall() == [(5,)]


def test_truncate_and_drop(root, con):
    con.execute("TRUNCATE TABLE ns.main.t")
    ds = lance.dataset(str(root / "t.lance"))
    assert ds.count_rows() == 0 and ds.version == 2
    con.execute("DROP TABLE ns.main.t")
    assert not os.path.exists(root / "t.lance")
    con.execute("DROP TABLE IF EXISTS ns.main.t")
    with pytest.raises(lance_fw.errors.DatasetNotFoundError):
        con.execute("DROP TABLE ns.main.t")


def test_unsafe_table_names_never_leave_the_directory(root, con):
    lance.write_dataset(_table(3), str(root.parent / "outside.lance"))
    for name in ['"../outside"', '".."', '"a/b"']:
        with pytest.raises(InvalidArgumentError, match="Unsafe"):
            con.execute(f"DROP TABLE ns.main.{name}")
    assert lance.dataset(str(root.parent / "outside.lance")).count_rows() == 3


def test_transaction_commit_applies_and_rollback_discards(root, con):
    path = str(root / "t.lance")
    con.execute("BEGIN TRANSACTION")
    con.execute("INSERT INTO ns.main.t VALUES (-1, 0.0, 'rolled back')")
    assert lance.dataset(path).version == 1  # nothing committed yet
    with pytest.raises(UnsupportedFeatureError, match="COMMIT first"):
        con.execute("SELECT count(*) FROM ns.main.t")
    con.execute("ROLLBACK")
    assert lance.dataset(path).version == 1 and lance.dataset(path).count_rows() == ROWS

    con.execute("BEGIN")
    con.execute("DELETE FROM ns.main.t WHERE id < 10")
    con.execute("COMMIT")
    assert lance.dataset(path).count_rows() == ROWS - 10


def test_detach_forgets_the_directory(root, con):
    con.execute("DETACH ns")
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT count(*) FROM ns.main.t")


def _source_table() -> pa.Table:
    ids = list(range(8990, 9010))  # 10 match the tail of t, 10 are new
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([-1.0 if i % 3 == 0 else i * 10.0 for i in ids], pa.float64()),
            "s": pa.array([f"src{i}" for i in ids], pa.string()),
        }
    )


def test_merge_upsert_matches_pylance_merge_insert(root, con):
    copy = _copy(root)
    con.register("src", _source_table())
    got = con.execute(
        "MERGE INTO ns.main.t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE WHEN NOT MATCHED THEN INSERT"
    ).fetchall()
    assert got == [(20,)]
    lance.dataset(copy).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _source_table()
    )
    ours, theirs = lance.dataset(str(root / "t.lance")), lance.dataset(copy)
    assert ours.to_table().sort_by("id").equals(theirs.to_table().sort_by("id"))
    assert ours.version == theirs.version


MERGES = [
    "MERGE INTO {t} AS t USING src AS s ON t.id = s.id "
    "WHEN MATCHED AND s.x < 0 THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET x = s.x + t.x, s = upper(s.s) "
    "WHEN NOT MATCHED AND s.id % 2 = 0 THEN INSERT (id, s) VALUES (s.id, 'even') "
    "WHEN NOT MATCHED BY SOURCE AND t.id < 5 THEN DELETE",
    "MERGE INTO {t} AS t USING (SELECT * FROM src WHERE id < 9000) AS s ON t.id = s.id "
    "WHEN NOT MATCHED BY SOURCE AND t.id % 1000 = 0 THEN UPDATE SET s = 'orphan'",
]


@pytest.mark.parametrize("merge", MERGES)
def test_merge_clauses_match_duckdbs_own_merge(root, con, merge):
    native = duckdb.connect()
    native.register("src", _source_table())
    native.register("lance_t", lance.dataset(str(root / "t.lance")).to_table())
    native.execute("CREATE TABLE t AS SELECT * FROM lance_t")
    expected_count = native.execute(merge.format(t="t")).fetchall()
    expected = native.execute("SELECT * FROM t ORDER BY id").fetchall()

    con.register("src", _source_table())
    assert con.execute(merge.format(t="ns.main.t")).fetchall() == expected_count
    got = duckdb.connect()
    got.register("ours", lance.dataset(str(root / "t.lance")).to_table())
    assert got.execute("SELECT * FROM ours ORDER BY id").fetchall() == expected


def test_merge_with_a_target_row_matched_twice_is_refused(root, con):
    con.register("src", pa.table({"id": pa.array([5, 5], pa.int64()), "x": [1.0, 2.0], "s": ["a", "b"]}))
    with pytest.raises(InvalidArgumentError, match="more than one source row"):
        con.execute("MERGE INTO ns.main.t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE")
    assert lance.dataset(str(root / "t.lance")).version == 1


@pytest.mark.parametrize(
    ("statement", "clause"),
    [
        ("DELETE FROM ns.main.t WHERE id = 1 RETURNING id", "RETURNING"),
        ("UPDATE ns.main.t SET x = 1 WHERE id = 1 RETURNING id", "RETURNING"),
        ("UPDATE ns.main.t SET x = o.x FROM (SELECT 1 AS id, 2.0 AS x) o WHERE t.id = o.id", "FROM"),
        ("DELETE FROM ns.main.t USING (SELECT 1 AS id) o WHERE t.id = o.id", "USING"),
    ],
)
def test_clauses_lance_fw_cannot_carry_out_are_refused_by_name(root, con, statement, clause):
    with pytest.raises(UnsupportedFeatureError, match=clause):
        con.execute(statement)
    assert lance.dataset(str(root / "t.lance")).version == 1
