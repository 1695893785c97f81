"""Filtered reads that take their other columns (late materialisation), takes spread over many
pages and scans equal pylance's, on the paths chosen for large reads: columns taken side by side
on the take pool (``fragment.PARALLEL_TAKE_ROWS``), vectors taken rather than read whole
(``_takes_values``), pages of chosen chunks decoded in groups (``take_pages.JOIN_BYTES``), and a page
decoded beside the next one (``reader_ahead.DECODE_AHEAD_BYTES``); scan reads ending at the widest
column's page boundaries (``fragment.WIDE_PAGE_BYTES``). The thresholds are lowered here so
that tables of tens of thousands of rows cross them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.file.reader_ahead as file_reader
import lance_fw.file.writer as file_writer
import lance_fw.table.fragment as fragment
import lance_fw_plugins.encodings_v2_1.take_pages as v21_take_pages
from conftest import assert_tables_equal

ROWS = 40_000


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(8)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "category": pa.array(rng.integers(0, 50, n).astype(np.int32)),
        "value": pa.array(rng.standard_normal(n)),
        "name": pa.array([f"name-{i % 977}-{'z' * (i % 13)}" for i in range(n)]),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 24, dtype=np.float32)), 24),
        "maybe": pa.array(np.arange(n, dtype=np.int32), mask=np.arange(n) % 5 == 0),
    })


@pytest.fixture(params=[False, True], ids=["default-thresholds", "low-thresholds"])
def thresholds(request, monkeypatch):
    if request.param:  # and lance_fw writes pages of 32 KiB, so a column has tens of them
        monkeypatch.setattr(fragment, "PARALLEL_TAKE_ROWS", 16)
        monkeypatch.setattr(v21_take_pages, "JOIN_BYTES", 64 << 10)
        monkeypatch.setattr(file_writer, "DEFAULT_MAX_PAGE_BYTES", 32 << 10)
        monkeypatch.setattr(file_reader, "DECODE_AHEAD_BYTES", 8 << 10)
        monkeypatch.setattr(file_reader, "RUN_PAGE_BYTES", 64 << 10)  # large pages decoded in runs
        monkeypatch.setattr(file_reader, "SMALL_PAGES_RUN_BYTES", 160 << 10)
        monkeypatch.setattr(fragment, "SCAN_READ_ROWS", 1024)  # reads of one page or less
        monkeypatch.setattr(fragment, "WIDE_PAGE_BYTES", 4 << 10)  # reads end at page boundaries
    return request.param


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_filtered_reads_equal_pylance(uri, writer, version, thresholds):
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_table(ROWS), uri, data_storage_version=version, max_rows_per_file=25_000)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for text in ("category < 5", "category = 7", "category < 12 AND value > 0", "maybe IS NULL"):
        for columns in (None, ["vector", "name"], ["id"]):
            assert_tables_equal(pl.to_table(filter=text, columns=columns),
                                fw.to_table(filter=text, columns=columns))
    rows = pl.to_table(filter="category < 5", with_row_id=True)
    assert_tables_equal(rows, fw.to_table(filter="category < 5", with_row_id=True))


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_takes_over_many_pages_equal_pylance(uri, writer, thresholds):
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_table(ROWS), uri, data_storage_version="2.2")
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    rng = np.random.default_rng(2)
    for share in (0.01, 0.1, 0.3):
        wanted = np.sort(rng.choice(ROWS, int(ROWS * share), replace=False)).tolist()
        assert_tables_equal(pl.take(wanted), fw.take(wanted))


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_scans_equal_pylance(uri, writer, version, thresholds):
    """Whole scans, one column (a page and the next decoded side by side), batches and offsets."""
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_table(ROWS), uri, data_storage_version=version)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for columns in (["name"], ["vector"], None):
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns))
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns, batch_size=1024))
    assert_tables_equal(pl.to_table(columns=["name"], offset=12_345, limit=20_000),
                        fw.to_table(columns=["name"], offset=12_345, limit=20_000))
    for batch_size in (100, 700, 5_000):  # batches cut as pylance cuts them, across page boundaries
        ours = list(fw.to_batches(columns=["name", "id"], batch_size=batch_size))
        theirs = list(pl.to_batches(columns=["name", "id"], batch_size=batch_size))
        assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
        assert all(a.equals(b) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_v2_0_nested_columns_decoded_ahead_equal_pylance(uri, writer, thresholds):
    """2.0 pages are decoded ahead on the pool as well (their reads are most of the work): lists
    (whose item pages are read through their list column, not ahead), structs of a number and a
    string, fixed-size lists and strings over many pages read as pylance reads them."""
    rng = np.random.default_rng(9)
    lengths = rng.integers(0, 5, ROWS)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    tags = pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1000, int(lengths.sum()))))
    point = pa.StructArray.from_arrays(
        [pa.array(rng.random(ROWS)), pa.array([f"p{i % 97}" for i in range(ROWS)])], ["x", "label"]
    )
    table = _table(ROWS).append_column("tags", tags).append_column("point", point)
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version="2.0", max_rows_per_file=25_000)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for columns in (None, ["tags", "id"], ["point"], ["point", "vector", "name"]):
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns))
    assert_tables_equal(pl.to_table(offset=9_999, limit=12_000), fw.to_table(offset=9_999, limit=12_000))
    ours = list(fw.to_batches(columns=["tags", "point", "vector"], batch_size=3_000))
    theirs = list(pl.to_batches(columns=["tags", "point", "vector"], batch_size=3_000))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert_tables_equal(pa.Table.from_batches(theirs), pa.Table.from_batches(ours))


def test_a_lone_large_page_is_decoded_beside_the_next_large_one_past_small_ones(uri, monkeypatch):
    """A read needing one large page decodes the next large page beside it, also when small pages
    (a write batch's last rows) lie between; the scan still equals pylance's."""
    monkeypatch.setattr(file_writer, "DEFAULT_MAX_PAGE_BYTES", 32 << 10)
    monkeypatch.setattr(file_reader, "DECODE_AHEAD_BYTES", 8 << 10)
    monkeypatch.setattr(file_reader, "RUN_PAGE_BYTES", 8 << 10)  # large pages are decoded alone
    table = _table(ROWS)
    lance_fw.write_dataset(pa.Table.from_batches(table.to_batches(max_chunksize=7_000)), uri)
    fw = lance_fw.dataset(uri)
    fragment_reader = fw._snapshot.fragment_reader(fw._snapshot.fragments[0])
    field = fw._snapshot.lance_schema.field("name")
    reader = fragment_reader._reader_for(field)
    col = reader._column(field)
    pages = reader.tail.columns[col].pages
    sizes = [sum(p.buffer_sizes) for p in pages]
    lone = next(i for i in range(len(pages) - 2) if sizes[i] >= 8 << 10 > sizes[i + 1] and sizes[i + 2] >= 8 << 10)
    start = sum(p.length for p in pages[:lone])
    reader.decode_ahead([field], start, start + 1)
    assert (col, lone + 2) in reader._ahead and (col, lone + 1) not in reader._ahead
    assert_tables_equal(lance.dataset(uri).to_table(columns=["name"]), fw.to_table(columns=["name"]))
