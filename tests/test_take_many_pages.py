"""Takes spread over many pages of a column equal pylance's.

A writer that cuts a page per input batch (pylance, given a stream of small batches) leaves
columns of tens to hundreds of pages: each FSST page with its own symbol table, the last small
page of a column often stored plainly, nullable pages with definition levels. A take then
chooses chunks page by page and reads and decodes them together
(``encodings_v2_1.take_pages.mini_block_pages_rows``); these tests check every row it returns against
pylance's, for takes of one row to a tenth of the rows, on files both libraries wrote.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from conftest import assert_tables_equal

ROWS = 120_000
BATCH = 1_024  # pylance cuts pages as the batches come: 4 to 40 pages a column here


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(17)
    words = np.array([f"item-{i:05d}" for i in range(3_000)] + ["ümlaut ✓ €", "", "\x00\xff?"])
    names = words[rng.integers(0, len(words), n)]
    notes = pa.array(
        [None if i % 13 == 5 else f"note {i % 977} " * (i % 4) for i in range(n)], pa.string()
    )
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "value": pa.array(rng.normal(100.0, 15.0, n)),
        "category": pa.array(rng.integers(0, 50, n).astype(np.int32)),
        "name": pa.array(names),
        "note": notes,
        "maybe": pa.array(rng.integers(0, 1000, n), mask=rng.random(n) < 0.2),  # dictionary pages
        "country": pa.array(np.array(["DE", "FR", "US", "ümlaut", ""])[rng.integers(0, 5, n)]),  # too
        "maybe_f": pa.array(rng.normal(0.0, 1.0, n), mask=rng.random(n) < 0.2),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
    })


def _takes(n: int) -> list[list[int]]:
    rng = np.random.default_rng(23)
    picks = [[0], [n - 1], [BATCH - 1, BATCH], sorted(rng.choice(n, 5, replace=False).tolist())]
    picks += [sorted(rng.choice(n, k, replace=False).tolist()) for k in (100, 1_000, n // 10)]
    picks.append(rng.integers(0, n, 300).tolist())  # unsorted, repeated
    return picks


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_takes_over_pylance_pages_cut_per_batch(uri, version):
    table = _table(ROWS)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=BATCH))
    lance.write_dataset(reader, uri, data_storage_version=version, max_rows_per_file=40_000)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for rows in _takes(ROWS):
        assert_tables_equal(pl.take(rows), fw.take(rows))
        assert_tables_equal(pl.take(rows, columns=["name"]), fw.take(rows, columns=["name"]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_takes_over_small_lance_fw_pages(uri, version):
    """lance_fw's writer with small pages: the same column read across dozens of pages."""
    lance_fw.write_dataset(_table(ROWS), uri, data_storage_version=version, max_page_bytes=64 * 1024)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for rows in _takes(ROWS):
        assert_tables_equal(pl.take(rows), fw.take(rows))


def test_pylance_pages_are_many_and_mixed(uri):
    """The layout the tests above rely on: many pages per column, FSST pages with their own
    tables, dictionary pages each with their own dictionary, and a column whose pages change
    encoding (checked so the tests cannot go vacuous); and every column decodes its pages
    together."""
    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import resolve_storage
    from lance_fw_plugins.encodings_v2_1 import take_pages as page_take

    table = _table(ROWS)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=BATCH))
    lance.write_dataset(reader, uri, data_storage_version="2.2")
    fragment = lance.dataset(uri).get_fragments()[0]
    path = f"{uri}/data/{fragment.data_files()[0].path}"
    file = LanceFileReader(resolve_storage(path), path)
    pages = [len(column.pages) for column in file.tail.columns]
    assert min(pages) >= 4, pages
    encodings = [{_value_encoding(page) for page in column.pages} for column in file.tail.columns]
    assert any(len(found) > 1 for found in encodings), encodings
    assert sum(_has_dictionary(column.pages[0]) for column in file.tail.columns) >= 2
    calls = []
    original = page_take.mini_block_pages_rows

    def counting(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(out is not None)
        return out

    page_take.mini_block_pages_rows = counting
    try:
        rows = sorted(np.random.default_rng(3).choice(ROWS, 200, replace=False).tolist())
        assert_tables_equal(lance.dataset(uri).take(rows), lance_fw.dataset(uri).take(rows))
    finally:
        page_take.mini_block_pages_rows = original
    assert len(calls) >= table.num_columns and all(calls), "every column's pages should decode together"


def _mini_block(page):
    from google.protobuf import any_pb2

    from lance_fw._proto import encodings_v2_1_pb2 as pb

    wrapped = any_pb2.Any()
    wrapped.ParseFromString(page.encoding.direct.encoding)
    layout = pb.PageLayout()
    layout.ParseFromString(wrapped.value)
    return layout.mini_block_layout


def _value_encoding(page) -> str:
    """The value compression a 2.1+ mini-block page names (``fsst``, ``inline_bitpacking``, ...)."""
    return _mini_block(page).value_compression.WhichOneof("compression") or "none"


def _has_dictionary(page) -> bool:
    return _mini_block(page).HasField("dictionary")
