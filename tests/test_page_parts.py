"""Large mini-block pages decoded in parts side by side (``page_parts``), against pylance.

pylance writes a table in one piece, so a column of short strings is one FSST page per file;
with the part threshold scaled down, such pages are split into runs of chunks decoded on a
pool, and what lance_fw reads must still be what pylance reads: values, row order, nulls.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal

import lance_fw
from lance_fw_plugins.encodings_v2_1 import page_parts

ROWS = 60_000  # past several 4096-value chunks and 1024-value blocks


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    words = np.array(["lance", "columnar", "format", "vector", "duckdb", "spark", "arrow", "page"])
    counts = rng.integers(1, 6, ROWS)
    # a row number in each: distinct strings, so pylance stores FSST rather than a dictionary
    names = [f"{' '.join(words[rng.integers(0, len(words), int(k))])} #{i}" for i, k in enumerate(counts)]
    zstd = pa.field("zstd_text", pa.string(), metadata={"lance-encoding:compression": "zstd"})
    return pa.Table.from_arrays(
        [
            pa.array(names),
            pa.array([n[::-1] for n in names]),
            pa.array([None if i % 7 == 3 else n for i, n in enumerate(names)]),
            pa.array(np.arange(ROWS, dtype=np.int64) * 7919),
        ],
        schema=pa.schema(
            [pa.field("name", pa.string()), zstd, pa.field("with_nulls", pa.string()), pa.field("id", pa.int64())]
        ),
    )


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_large_pages_decoded_in_parts_read_as_pylance_reads_them(uri, monkeypatch, version):
    lance.write_dataset(_table(), uri, data_storage_version=version)
    monkeypatch.setattr(page_parts, "PART_MIN_BYTES", 8 << 10)
    split: list[int] = []  # rows of each page decoded in parts
    original = page_parts.mini_block_in_parts

    def counting(layout, page, num_rows, arrow_type):
        out = original(layout, page, num_rows, arrow_type)
        if out is not None:
            split.append(num_rows)
        return out

    monkeypatch.setattr(page_parts, "mini_block_in_parts", counting)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    for columns in (["name"], ["zstd_text"], ["with_nulls"], ["id"]):
        split.clear()
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns))
        if columns in (["name"], ["zstd_text"]):
            assert split == [ROWS]  # the FSST page, the zstd page: split
        if columns in (["with_nulls"], ["id"]):
            assert not split  # levels, or values decoded by an unpack: whole
    assert_tables_equal(pl.to_table(), fw.to_table())
    want = pl.to_table(columns=["name"], filter="id % 3 = 0")
    assert_tables_equal(want, fw.to_table(columns=["name"], filter="id % 3 = 0"))


def test_pages_decoded_on_a_pool_thread_stay_whole(uri, monkeypatch):
    """A page decoded on one of lance_fw's pool threads is not split (its siblings share the
    cores): the column pool decodes two columns' pages side by side."""
    from concurrent.futures import ThreadPoolExecutor

    from lance_fw._util import pools

    lance.write_dataset(_table(), uri, data_storage_version="2.2")
    monkeypatch.setattr(page_parts, "PART_MIN_BYTES", 8 << 10)
    with ThreadPoolExecutor(1, thread_name_prefix=f"{pools.THREAD_NAME_PREFIX}test") as pool:
        calls: list[bool] = []
        original = page_parts.mini_block_in_parts

        def counting(*args):
            out = original(*args)
            calls.append(out is not None)
            return out

        monkeypatch.setattr(page_parts, "mini_block_in_parts", counting)
        got = pool.submit(lambda: lance_fw.dataset(uri).to_table(columns=["name"])).result()
    assert_tables_equal(lance.dataset(uri).to_table(columns=["name"]), got)
    assert calls and not any(calls)
