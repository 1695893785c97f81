"""How the DuckDB adapter batches a scan (issue 12): large batches, same rows as pylance's dataset.

DuckDB needs no pylance batch boundaries, and each batch costs a Python round trip, so the adapter
asks the scanner for ``dataset.BATCH_SIZE``-row batches; the rows DuckDB computes must not change.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb
from lance_fw.duckdb.dataset import BATCH_SIZE, FIRST_BATCH_SIZE, DuckDBDataset, batch_rows

ROWS = 150_000  # two fragments
PER_FILE = 140_000

QUERIES = [
    "SELECT category, count(*), sum(value) FROM {t} GROUP BY category ORDER BY category",
    "SELECT id, value FROM {t} ORDER BY value DESC, id LIMIT 10",
    "SELECT id, value FROM {t} WHERE id = 131073",
    "SELECT * FROM {t} WHERE id = 70001",
    "SELECT count(*), sum(id) FROM {t} WHERE category < 5",
    "SELECT id FROM {t} LIMIT 3",
]


def _table() -> pa.Table:
    rng = np.random.default_rng(12)
    return pa.table({
        "id": pa.array(np.arange(ROWS, dtype=np.int64)),
        "value": pa.array(rng.integers(0, 10**6, ROWS).astype(np.float64)),
        "category": pa.array(rng.integers(0, 50, ROWS).astype(np.int32)),
        "name": pa.array([f"n{i % 977}" for i in range(ROWS)]),
    })


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("batches")
    table = _table()
    out = {}
    for writer, write in (("lance_fw", lance_fw.write_dataset), ("pylance", lance.write_dataset)):
        out[writer] = str(root / writer)
        write(table, out[writer], max_rows_per_file=PER_FILE)
    return out


def test_duckdb_scans_come_in_large_batches(paths):
    """Failed before: DuckDB got the scanner's default 8192-row batches. The scan's first batch
    is ``FIRST_BATCH_SIZE`` rows (DuckDB pulls one batch for a ``LIMIT``), the rest large, the
    second fragment's first one too (the consumer asked for more)."""
    dataset = DuckDBDataset(lance_fw.dataset(paths["lance_fw"]))
    rows = batch_rows(dataset.schema, ["id"])
    assert rows == BATCH_SIZE > 8192  # a narrow column gets the most rows

    def cut(n: int, head: int) -> list[int]:  # a batch never spans two fragments
        return [head] * bool(head) + [min(rows, n - lo) for lo in range(head, n, rows)]

    sizes = [b.num_rows for b in dataset.scanner(columns=["id"]).to_reader()]
    assert sizes == cut(PER_FILE, FIRST_BATCH_SIZE) + cut(ROWS - PER_FILE, 0)


def test_filtered_duckdb_scan_is_exact(paths):
    scanner = DuckDBDataset(lance_fw.dataset(paths["lance_fw"])).scanner(
        columns=["id"], filter=pc.field("category") == 7
    )
    got = pa.Table.from_batches(list(scanner.to_reader())).column("id")
    table = _table()
    assert got.equals(table.filter(pc.field("category") == 7).column("id"))


@pytest.mark.parametrize("writer", ["lance_fw", "pylance"])
@pytest.mark.parametrize("columns", ["*", "id, name"])
def test_a_filtered_limit_reads_only_its_first_probe(paths, writer, columns, duckdb_pulls):
    """``SELECT ... WHERE ... LIMIT 10``: DuckDB pulls one batch, the first probe's matches (the
    scan's first ``FIRST_BATCH_SIZE`` rows, taken), and its rows are rows pylance's DuckDB scan
    finds. Failed before: a stream joined the matches up to ``batch_size`` rows, so the one
    batch DuckDB pulled read the whole table."""
    query = f"SELECT {columns} FROM {{t}} WHERE category = 7 LIMIT 10"
    ours = fw_duckdb.connect().sql(query.format(t=f"lance_scan('{paths[writer]}')")).fetchall()
    plain = fw_duckdb.duckdb.connect()
    plain.register("pl", lance.dataset(paths[writer]))
    everything = plain.sql(query.replace(" LIMIT 10", "").format(t="pl")).fetchall()
    assert len(ours) == 10 and set(ours) <= set(everything)
    assert len(duckdb_pulls) == 1 and duckdb_pulls[0] < FIRST_BATCH_SIZE / 10


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("writer", ["lance_fw", "pylance"])
def test_lance_scan_equals_duckdb_over_pylance(paths, writer, query):
    ours = fw_duckdb.connect().sql(query.format(t=f"lance_scan('{paths[writer]}')")).fetchall()
    plain = fw_duckdb.duckdb.connect()
    plain.register("pl", lance.dataset(paths[writer]))
    theirs = plain.sql(query.format(t="pl")).fetchall()
    if "LIMIT 3" in query:  # no ORDER BY: any 3 rows of the table
        assert len(ours) == 3 and {r[0] for r in ours} <= set(range(ROWS))
    else:
        assert ours == theirs


def test_wide_rows_get_smaller_batches(tmp_path):
    """Batches stay near ``BATCH_BYTES``: a 1536-float vector (6 KiB a row) falls back to the scanner's
    8192 rows, while its narrow columns alone still get ``BATCH_SIZE`` rows; DuckDB's answers equal
    DuckDB over pylance. Failed before the byte bound: 65536-row batches of 384 MiB."""
    rows, dim = 20_000, 1536
    rng = np.random.default_rng(3)
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * dim, dtype=np.float32)), dim),
    })
    path = str(tmp_path / "wide")
    lance_fw.write_dataset(table, path)
    ds = DuckDBDataset(lance_fw.dataset(path))
    # (the first batch FIRST_BATCH_SIZE rows)
    head = FIRST_BATCH_SIZE
    assert [b.num_rows for b in ds.scanner().to_reader()] == [head, 8192, 8192, rows - head - 2 * 8192]
    assert [b.num_rows for b in ds.scanner(columns=["id"]).to_reader()] == [head, rows - head]
    query = "SELECT id, vec[7] FROM {t} WHERE id % 997 = 5 ORDER BY id"
    plain = fw_duckdb.duckdb.connect()
    plain.register("pl", lance.dataset(path))
    assert fw_duckdb.connect().sql(query.format(t=f"lance_scan('{path}')")).fetchall() == \
        plain.sql(query.format(t="pl")).fetchall()
