"""One-row takes (the point lookup's path, ``encodings_v2_1.point``) equal pylance's.

A take of one row decodes that row's chunk header and value with integer arithmetic instead of the
general whole-array row path; every row here is taken alone, at the edges the format cuts at
(FastLanes blocks of 1024 values, chunks, pages, files), from files both libraries wrote, and
compared with pylance's answer for the same row.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table, encodings_table
from conftest import assert_tables_equal

ROWS = 9_000


def _point_table(n: int) -> pa.Table:
    """Values the point path decodes (plain, bitpacked at many widths, FSST and plain strings,
    binaries, vectors), next to escape-heavy and empty strings and nullable columns."""
    rng = np.random.default_rng(21)
    words = ["alpha", "beta", "gamma", "delta", "", "ümlaut ✓", "x" * 40]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "u8": pa.array(rng.integers(0, 256, n, dtype=np.uint8)),
        "i16_narrow": pa.array(rng.integers(-3, 4, n).astype(np.int16)),
        "u32_wide": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)),
        "i64_neg": pa.array(rng.integers(-(2**40), 2**40, n)),
        "u64_top": pa.array(rng.integers(2**63, 2**64 - 1, n, dtype=np.uint64)),
        "f32": pa.array(rng.random(n, dtype=np.float32)),
        "f64": pa.array(rng.standard_normal(n)),
        "words": pa.array([words[i % len(words)] + str(i) for i in range(n)]),
        "random_bytes": pa.array([bytes(rng.integers(0, 256, i % 37, dtype=np.uint8)) for i in range(n)]),
        "large_text": pa.array([f"row {i} " * (i % 5) for i in range(n)], pa.large_string()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 16, dtype=np.float32)), 16),
        "nullable_full": pa.array(np.arange(n, dtype=np.int32)),  # nullable field, no nulls
        "some_nulls": pa.array(np.arange(n, dtype=np.int32), mask=np.arange(n) % 7 == 3),
        "dates": pa.array(np.arange(n, dtype=np.int32), pa.date32()),
    })


def _edges(n: int, file_rows: int) -> list[int]:
    """Rows at the format's edges: around every block of 1024, chunk of 4096 and file start."""
    around = [0, 1, 1023, 1024, 1025, 2047, 4095, 4096, 4097, 8191, 8192, n - 2, n - 1]
    around += [s + d for s in range(0, n, file_rows) for d in (-1, 0, 1)]
    around += list(range(2_000, 2_040))  # every place in a chunk's first values
    rng = np.random.default_rng(4)
    return sorted({r for r in around + rng.integers(0, n, 30).tolist() if 0 <= r < n})


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_one_row_takes_equal_pylance(uri, version, writer):
    table = _point_table(ROWS)
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_rows_per_file=5_000)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for row in _edges(ROWS, 5_000):
        assert_tables_equal(pl.take([row]), fw.take([row]))


@pytest.mark.parametrize("table_name", ["all_types", "encodings"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_one_row_takes_of_every_type(uri, table_name, writer):
    """The general cases (lists, structs, dictionaries, nulls): one-row takes fall back to the
    general row path where the point path does not apply, with the same answers."""
    table = all_types_table(3_000) if table_name == "all_types" else encodings_table(9_000)
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version="2.2")
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for row in _edges(table.num_rows, table.num_rows):
        assert_tables_equal(pl.take([row]), fw.take([row]))


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_btree_point_lookups_equal_pylance(uri, writer):
    """``id = k`` answered by a B-tree index: each key's row, as pylance returns it."""
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_point_table(ROWS), uri, data_storage_version="2.2", max_rows_per_file=5_000)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for row in _edges(ROWS, 5_000):
        query = f"id = {row}"
        assert_tables_equal(pl.to_table(filter=query), fw.to_table(filter=query))
        assert "ScalarIndexQuery" in fw.scanner(filter=query).explain_plan()


def test_takes_keep_chunk_tables_of_many_chunk_pages(uri):
    """pylance writes a 32-float vector column in pages of ~20,000 mini-block chunks (more than
    8 KiB of chunk metadata). A take keeps such a page's chunk table (it once re-read and
    re-parsed it at every take, keeping only small ones) and answers as pylance does, again."""
    from lance_fw_plugins.encodings_v2_1 import take as page_take

    n = 120_000
    rng = np.random.default_rng(5)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 32, dtype=np.float32)), 32),
    })
    lance.write_dataset(table, uri, data_storage_version="2.2")
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    rows = sorted(rng.choice(n, 100, replace=False).tolist())
    page_take._CHUNK_TABLES.clear()
    assert_tables_equal(pl.take(rows, columns=["vec"]), fw.take(rows, columns=["vec"]))
    chunks = [len(entry[0].counts) for entry in page_take._CHUNK_TABLES._entries.values()]
    assert max(chunks) * 4 > 8 * 1024, "the page should have more than 8 KiB of chunk metadata"
    held = len(page_take._CHUNK_TABLES)
    assert_tables_equal(pl.take(rows, columns=["vec"]), lance_fw.dataset(uri).take(rows, columns=["vec"]))
    assert len(page_take._CHUNK_TABLES) >= held
