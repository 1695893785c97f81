"""DuckDB through lance_scan('path') equals DuckDB over the same data as an Arrow table."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb

N = 3000

QUERIES = [
    "SELECT count(*), sum(id), round(avg(value), 6), min(name), max(name) FROM {t}",
    "SELECT category, count(*) AS n, round(avg(value), 6) AS v FROM {t} GROUP BY category ORDER BY category",
    "SELECT id, name FROM {t} WHERE id = 1234",
    "SELECT id FROM {t} WHERE value > 50 AND category IN (1, 2) ORDER BY id",
    "SELECT id FROM {t} WHERE big = 'L7' ORDER BY id LIMIT 5",
    "SELECT id, st.a FROM {t} WHERE st.a = 3 AND st.b LIKE 'b1%' ORDER BY id",
    "SELECT id, len(tags) AS k FROM {t} WHERE id < 20 ORDER BY id",
    "SELECT * FROM {t} ORDER BY id LIMIT 3",
    "WITH x AS (SELECT category, max(id) AS m FROM {t} GROUP BY category) SELECT * FROM x ORDER BY category",
    "SELECT count(*) FROM (SELECT id FROM {t} WHERE name IS NULL)",
    "SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.id = b.id + 1 WHERE a.id < 10 ORDER BY a.id",
]


def _table() -> pa.Table:
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "value": pa.array([(i * 37) % 101 / 1.5 for i in range(N)]),
        "category": pa.array([i % 5 for i in range(N)], pa.int32()),
        "name": pa.array([None if i % 13 == 0 else f"n{i % 29}" for i in range(N)]),
        "big": pa.array([f"L{i % 11}" for i in range(N)], pa.large_string()),
        "st": pa.StructArray.from_arrays([pa.array([i % 7 for i in range(N)], pa.int32()),
                                          pa.array([f"b{i % 20}" for i in range(N)])], names=["a", "b"]),
        "tags": pa.array([[f"t{j}" for j in range(i % 4)] for i in range(N)], pa.list_(pa.string())),
    })


@pytest.fixture(scope="module", params=["lance_fw-2.0", "lance_fw-2.2", "pylance-2.2"])
def dataset(request, tmp_path_factory):
    writer, version = request.param.split("-")
    path = str(tmp_path_factory.mktemp("duck") / "ds")
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_table(), path, data_storage_version=version, max_rows_per_file=1000)
    return path


@pytest.mark.parametrize("query", QUERIES)
def test_lance_scan_equals_arrow(dataset, query):
    con = fw_duckdb.connect()
    ours = con.sql(query.format(t=f"lance_scan('{dataset}')")).fetchall()
    plain = fw_duckdb.duckdb.connect()
    plain.register("arrow_table", _table())
    assert ours == plain.sql(query.format(t="arrow_table")).fetchall()


def test_pushdown_reaches_the_scanner(dataset):
    con = fw_duckdb.connect()
    plan = con.sql(f"EXPLAIN SELECT id FROM lance_scan('{dataset}') WHERE id = 5 AND big = 'L5'").fetchall()
    text = plan[0][1]
    assert "Filters:" in text and '"id" = 5' in text and "Projections: id" in text
    assert con.sql(f"SELECT id FROM lance_scan('{dataset}') WHERE id = 5 AND big = 'L5'").fetchall() == [(5,)]


def test_ctas_copy_version_and_install(dataset, tmp_path):
    con = fw_duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM lance_scan('{dataset}') WHERE category = 1")
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(N // 5,)]
    out = tmp_path / "out.parquet"
    con.execute(f"COPY (SELECT id FROM lance_scan('{dataset}') WHERE id < 10) TO '{out}' (FORMAT parquet)")
    assert con.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall() == [(10,)]
    lance_fw.write_dataset(_table().slice(0, 1), dataset, mode="append")
    assert con.sql(f"SELECT count(*) FROM lance_scan('{dataset}', version := 1)").fetchall() == [(N,)]
    assert con.sql(f"SELECT count(*) FROM lance_scan('{dataset}')").fetchall() == [(N + 1,)]
    raw = fw_duckdb.install(fw_duckdb.duckdb.connect())
    assert fw_duckdb.sql(raw, f"SELECT count(*) FROM lance_scan('{dataset}', version := 1)").fetchall() == [(N,)]


# -- fragments decoded in a bounded thread pool --------------------------------------------------

@pytest.fixture(scope="module")
def many_fragments(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("many") / "ds")
    lance_fw.write_dataset(_table(), path, max_rows_per_file=50)  # 60 fragments
    return path


@pytest.fixture
def opened(monkeypatch):
    """(fragment id, thread name) of every fragment reader opened; DuckDB decodes 4 fragments at once."""
    import threading

    from lance_fw.table import fragment

    monkeypatch.setattr(fw_duckdb.dataset, "READAHEAD", 4)
    seen = []
    original = fragment.FragmentReader.__init__

    def counting(self, *args, **kwargs):
        seen.append((args[2].id, threading.current_thread().name))
        original(self, *args, **kwargs)
    monkeypatch.setattr(fragment.FragmentReader, "__init__", counting)
    return seen


def test_limit_opens_only_a_few_fragments(many_fragments, opened):
    """Only the fragments a LIMIT needs, plus at most the readahead window, each opened once. DuckDB
    pulls one batch beyond the one that fills a LIMIT, and readahead may have started up to
    ``READAHEAD - 1`` fragments beyond the one being read (how many it got to depends on scheduling,
    so fewer is fine): LIMIT 10 (inside fragment 0) opens 0 and at most 0..4, LIMIT 120 (inside
    fragment 2) opens 0..2 and at most 0..6."""
    def assert_opened(needed: int, at_most: int) -> None:
        fragments = sorted(fragment for fragment, _ in opened)
        assert fragments == list(range(len(fragments))), opened  # in order, each once
        assert needed <= len(fragments) <= at_most, opened
        opened.clear()

    con = fw_duckdb.connect()
    rows = con.sql(f"SELECT id, name FROM lance_scan('{many_fragments}') LIMIT 10").fetchall()
    everything = set(zip(range(N), _table().column("name").to_pylist()))
    assert len(rows) == 10 and set(rows) <= everything
    assert_opened(1, 5)
    assert len(con.sql(f"SELECT id FROM lance_scan('{many_fragments}') LIMIT 120").fetchall()) == 120
    assert_opened(3, 7)
    assert con.sql(f"SELECT count(id) FROM lance_scan('{many_fragments}')").fetchall() == [(N,)]
    assert sorted(fragment for fragment, _ in opened) == list(range(60))


def test_readahead_results_unchanged(many_fragments, opened):
    con = fw_duckdb.connect()
    plain = fw_duckdb.duckdb.connect()
    plain.register("arrow_table", _table())
    for query in QUERIES:
        assert con.sql(query.format(t=f"lance_scan('{many_fragments}')")).fetchall() == \
            plain.sql(query.format(t="arrow_table")).fetchall()
    assert any(name.startswith("lance_fw-readahead") for _, name in opened)
    point = f"SELECT * FROM lance_scan('{many_fragments}') WHERE id = 2345"
    assert con.sql(point).fetchall() == plain.sql("SELECT * FROM arrow_table WHERE id = 2345").fetchall()


def test_readahead_order_errors_and_early_close():
    import time

    from lance_fw.query.scanner import readahead

    started, closed = [], []

    def produce(item):
        started.append(item)
        try:
            for k in range(3):
                if item == 7 and k == 1:
                    raise lance_fw.errors.CorruptFileError(f"item {item}", "broken")
                yield pa.record_batch({"x": [item * 10 + k]})
        finally:
            closed.append(item)

    out = [b.column(0)[0].as_py() for b in readahead(list(range(5)), produce, ahead=3)]
    assert out == [i * 10 + k for i in range(5) for k in range(3)]
    def settled() -> bool:  # every producer a worker started has been closed
        deadline = time.time() + 5
        while sorted(closed) != sorted(started) and time.time() < deadline:
            time.sleep(0.01)
        return sorted(closed) == sorted(started)

    with pytest.raises(lance_fw.errors.CorruptFileError):
        list(readahead(list(range(10)), produce, ahead=3))
    assert settled() and max(started) <= 9
    started.clear(), closed.clear()
    stream = readahead(list(range(50)), produce, ahead=3, depth=1)
    assert next(stream).column(0)[0].as_py() == 0
    stream.close()
    assert settled() and len(started) <= 3


def test_cli_sql_reports_typed_errors_and_goes_on(dataset, tmp_path, capsys, monkeypatch):
    import io

    from lance_fw.cli import main

    missing = tmp_path / "missing"
    assert main(["sql", f"SELECT * FROM lance_scan('{missing}')"]) == 1
    assert "DatasetNotFoundError" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(f"SELECT * FROM lance_scan('{missing}')\n"
                                                 f"SELECT count(*) AS n FROM lance_scan('{dataset}')\n"))
    assert main(["sql"]) == 0
    out = capsys.readouterr()
    assert "DatasetNotFoundError" in out.err and str(lance.dataset(dataset).count_rows()) in out.out
