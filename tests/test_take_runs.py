"""Runs of rows (``take`` of consecutive positions, an index's range answer) read from large pages
equal pylance's: a take of a run of more than ``take.RUN_MIN_ROWS`` rows decodes the chunks from
its first row's to its last's and slices the run out of them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal

import lance_fw
from lance_fw_plugins.encodings_v2_1 import take

#: Two fragments of 1M-row-ish pages would be slow to write here: 150k rows a fragment still
#: spans many 1024-value FastLanes blocks and 4096-value chunks per page.
ROWS, PER_FILE = 300_000, 150_000


def _table() -> pa.Table:
    rng = np.random.default_rng(30)
    words = np.array([f"name-{i:04d}" for i in range(700)])
    return pa.table(
        {
            "id": pa.array(np.arange(ROWS, dtype=np.int64)),
            "small": pa.array(rng.integers(0, 50, ROWS).astype(np.int32), mask=rng.random(ROWS) < 0.05),
            "value": pa.array(rng.normal(0, 1, ROWS)),
            "name": pa.array(words[rng.integers(0, len(words), ROWS)]),
            "text": pa.array([f"row {i} " * (i % 7) for i in range(ROWS)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 4, dtype=np.float32)), 4),
        }
    )


@pytest.fixture(scope="module", params=["pylance", "lance_fw"])
def path(request, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp(request.param) / "t.lance")
    write = lance.write_dataset if request.param == "pylance" else lance_fw.write_dataset
    write(_table(), out, max_rows_per_file=PER_FILE, data_storage_version="2.2")
    ds = lance.dataset(out)
    ds.create_scalar_index("id", "BTREE")
    lance.dataset(out).delete("id > 200000 AND id % 1001 = 7")  # holes: positions past 200k shift
    return out


@pytest.mark.parametrize(
    "start, n",
    [(1000, 12_000), (0, 1025), (149_000, 3000), (4095, 8193), (299_000, 1000)],
)
def test_take_run_equals_pylance(path, start, n):
    """(pylance 14 takes 100k rows in a row of this table in ~75 s, 40k in ~7: runs stay short.)"""
    live = lance.dataset(path).count_rows()
    indices = np.arange(start, min(live, start + n))
    assert_tables_equal(lance.dataset(path).take(indices), lance_fw.dataset(path).take(indices))


@pytest.mark.parametrize(
    "where",
    [
        "id BETWEEN 1000 AND 30000",
        "id >= 140000 AND id < 160000",  # across the two fragments
        "id > 298000",
        "id BETWEEN 5 AND 140000",  # most of a fragment: whole pages
        "id < 30000 AND id NOT IN (10, 20000)",
    ],
)
def test_index_range_equals_pylance(path, where):
    expected = lance.dataset(path).to_table(filter=where)
    assert_tables_equal(expected, lance_fw.dataset(path).to_table(filter=where))
    with_ids = lance_fw.dataset(path).to_table(filter=where, columns=["id", "name"], with_row_id=True)
    assert with_ids.column("_rowid").equals(lance.dataset(path).to_table(filter=where, with_row_id=True)["_rowid"])


def test_run_path_is_taken(path, monkeypatch):
    """The run path runs here (else the takes above check only the row-by-row one)."""
    runs = []
    run_chunks = take._run_chunks
    monkeypatch.setattr(take, "_run_chunks", lambda *a: runs.append(1) or run_chunks(*a))
    lance_fw.dataset(path).take(np.arange(1000, 13_000))
    assert runs


@pytest.mark.parametrize("start, n", [(20_000, 60_000), (140_000, 50_000)])
def test_take_of_most_of_a_fragment_equals_pylance_scan(path, start, n):
    """Runs of tens of thousands of rows, against pylance's own scan of those positions
    (``offset`` / ``limit``): its take of this many rows takes minutes."""
    expected = lance.dataset(path).to_table(offset=start, limit=n)
    assert_tables_equal(expected, lance_fw.dataset(path).take(np.arange(start, start + n)))
