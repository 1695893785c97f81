"""``COPY (query) TO 'x.lance' (FORMAT lance, …)`` through ``lance_fw.duckdb.connect()``.

Differential: what the statement writes is read back by pylance and compared with DuckDB's own result
of the query; fragment layout options are compared with pylance's ``write_dataset`` of the same rows.
"""

from __future__ import annotations

import os

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw.duckdb
from lance_fw.errors import InvalidArgumentError, LanceError, UnsupportedFeatureError

ROWS = 20_000  # several 4096-value chunks and (with max_rows_per_file) several fragments
QUERY = f"SELECT i::BIGINT AS id, (i * 0.5)::DOUBLE AS x, 'n' || (i % 97)::VARCHAR AS name FROM range({ROWS}) t(i)"


def _expected(query: str = QUERY) -> pa.Table:
    return duckdb.connect().sql(query).to_arrow_table()


def test_copy_writes_what_duckdb_returns_and_reports_the_count(tmp_path):
    path = str(tmp_path / "out.lance")
    con = lance_fw.duckdb.connect()
    assert con.execute(f"COPY ({QUERY}) TO '{path}' (FORMAT lance)").fetchall() == [(ROWS,)]
    got = lance.dataset(path).to_table()
    assert got.schema == _expected().schema
    assert got.equals(_expected())


def test_modes_create_append_overwrite(tmp_path):
    path = str(tmp_path / "m.lance")
    con = lance_fw.duckdb.connect()
    con.execute(f"COPY (SELECT 1::BIGINT AS id) TO '{path}' (FORMAT lance, mode 'create')")
    with pytest.raises(LanceError):
        con.execute(f"COPY (SELECT 2::BIGINT AS id) TO '{path}' (FORMAT lance)")  # create is the default
    con.execute(f"COPY (SELECT 2::BIGINT AS id) TO '{path}' (FORMAT lance, MODE 'append')")
    assert sorted(lance.dataset(path).to_table()["id"].to_pylist()) == [1, 2]
    con.execute(f"COPY (SELECT 7::BIGINT AS id) TO '{path}' (FORMAT lance, mode 'overwrite')")
    ds = lance.dataset(path)
    assert ds.to_table()["id"].to_pylist() == [7]
    assert ds.version == 3


def test_layout_options_match_pylance(tmp_path):
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lance_fw.duckdb.connect().execute(
        f"COPY ({QUERY}) TO '{ours}' (FORMAT lance, max_rows_per_file 6000, max_rows_per_group 512, "
        "data_storage_version '2.1')"
    )
    lance.write_dataset(
        _expected(), theirs, max_rows_per_file=6000, max_rows_per_group=512, data_storage_version="2.1"
    )
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert [f.count_rows() for f in a.get_fragments()] == [f.count_rows() for f in b.get_fragments()]
    assert a.data_storage_version == b.data_storage_version == "2.1"
    assert a.to_table().equals(b.to_table())


def test_copy_reads_a_lance_dataset_into_another(tmp_path):
    src, dst = str(tmp_path / "src.lance"), str(tmp_path / "dst.lance")
    lance.write_dataset(_expected(), src, max_rows_per_file=7000)
    con = lance_fw.duckdb.connect()
    con.execute(f"COPY (SELECT id, name FROM '{src}' WHERE id % 2 = 0 ORDER BY id) TO '{dst}' (FORMAT lance)")
    expected = (
        duckdb.connect().sql(f"SELECT id, name FROM ({QUERY}) WHERE id % 2 = 0 ORDER BY id").to_arrow_table()
    )
    assert lance.dataset(dst).to_table().equals(expected)


def test_write_empty_file(tmp_path):
    empty = "SELECT 1::BIGINT AS id LIMIT 0"
    con = lance_fw.duckdb.connect()
    kept = str(tmp_path / "kept.lance")
    con.execute(f"COPY ({empty}) TO '{kept}' (FORMAT lance, write_empty_file true)")
    assert lance.dataset(kept).count_rows() == 0
    skipped = str(tmp_path / "skipped.lance")
    assert con.execute(
        f"COPY ({empty}) TO '{skipped}' (FORMAT lance, write_empty_file false)"
    ).fetchall() == [(0,)]
    assert not os.path.exists(skipped)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ("mode 'upsert'", InvalidArgumentError, "mode"),
        ("max_rows_per_file 0", InvalidArgumentError, "max_rows_per_file"),
        ("compression 'zstd'", UnsupportedFeatureError, "compression"),
        ("data_storage_version ''", InvalidArgumentError, "data_storage_version"),
    ],
)
def test_bad_or_unknown_options_are_refused_by_name(tmp_path, options, error, match):
    path = str(tmp_path / "bad.lance")
    with pytest.raises(error, match=match):
        lance_fw.duckdb.connect().execute(f"COPY (SELECT 1 AS id) TO '{path}' (FORMAT lance, {options})")
    assert not os.path.exists(path)


def test_a_failing_query_leaves_the_dataset_as_it_was(tmp_path):
    path = str(tmp_path / "keep.lance")
    con = lance_fw.duckdb.connect()
    con.execute(f"COPY (SELECT 1::BIGINT AS id) TO '{path}' (FORMAT lance)")
    with pytest.raises(duckdb.InvalidInputException, match="boom"):  # the class DuckDB raises itself
        con.execute(
            f"COPY (SELECT CASE WHEN i < 9000 THEN i ELSE error('boom') END::BIGINT AS id FROM range(10000) t(i)) "
            f"TO '{path}' (FORMAT lance, mode 'overwrite')"
        )
    ds = lance.dataset(path)
    assert ds.version == 1 and ds.to_table()["id"].to_pylist() == [1]


def test_other_copy_formats_stay_duckdbs(tmp_path):
    target = tmp_path / "out.parquet"
    lance_fw.duckdb.connect().execute(f"COPY (SELECT 1 AS lance) TO '{target}' (FORMAT parquet)")
    assert duckdb.connect().execute(f"SELECT lance FROM '{target}'").fetchall() == [(1,)]
