"""A take of a few rows decodes only those rows of a mini-block page without repetition
(``take.levels_at``: values gathered from where they lie in their chunks, nothing built for the
other rows of the chunks read). Every value encoding with such a path serves the pages it can, and
the rows equal pylance's, with nulls, dictionaries, FSST, general compression and several pages
per column."""

from __future__ import annotations

import collections

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table, encodings_table
from conftest import assert_tables_equal
from lance_fw_plugins.encodings_v2_1 import take as take_module
from lance_fw_plugins.encodings_v2_1 import take_pages


def _served(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Count, per (value compression, served), the pages ``levels_at`` was asked for."""
    seen: collections.Counter = collections.Counter()
    original = take_module.levels_at

    def counting(run, *args):
        out = original(run, *args)
        seen[(run.layout.value_compression.WhichOneof("compression"), out is not None)] += 1
        return out

    monkeypatch.setattr(take_module, "levels_at", counting)
    return seen


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_few_rows_equal_pylance_and_decode_only_those_rows(uri, monkeypatch, version, writer):
    encodings, types = encodings_table(9000), all_types_table(9000)
    table = pa.table({**{n: encodings.column(n) for n in encodings.column_names},
                      **{f"t_{n}": types.column(n) for n in types.column_names}})
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_page_bytes=32 * 1024, max_rows_per_file=4500)
    rng = np.random.default_rng(7)
    seen = _served(monkeypatch)
    for indices in (np.sort(rng.choice(table.num_rows, 9, replace=False)).tolist(),  # a row or two a page
                    [0, 4095, 4096, 4499, 4500, 8999],                                # chunk / file edges
                    rng.integers(0, table.num_rows, 30)[::-1].tolist()):             # unsorted, repeats
        assert_tables_equal(lance.dataset(uri).take(indices), lance_fw.dataset(uri).take(indices))
    kinds = {kind for kind, served in seen if served}
    assert "inline_bitpacking" in kinds, seen
    assert kinds & {"variable", "fsst", "general"}, seen
    assert kinds & {"flat", "fixed_size_list"}, seen


def _decode_pages_rows(self, pages):
    """The plugin's batch capability as proposed for ``PageLayoutDecoder.decode_pages_rows``
    (set here so the reader's batching is tested before the plugin offers it)."""
    from lance_fw._proto import encodings_v2_1_pb2 as pb
    from lance_fw_plugins.encodings_v2_1 import repdef

    found = [pb.PageLayout.FromString(e.value) for e, _, _ in pages]
    if any(layout.WhichOneof("layout") != "mini_block_layout" for layout in found):
        return None
    levels = take_pages.mini_block_pages_rows(
        [layout.mini_block_layout for layout in found], [p for _, p, _ in pages], [r for _, _, r in pages]
    )
    return None if levels is None else repdef.build(levels, pages[0][1].arrow_type, pages[0][1].where)


def test_rows_of_many_pages_decode_as_one(uri, monkeypatch):
    """A take spread over many small pages of a column: the reader hands a run of row-decoded
    pages to the page decoder's ``decode_pages_rows`` at once; pages it accepts (mini-block, no
    repetition, no dictionary, equal encodings) decode as one, others page by page; every row
    equals pylance's, nulls and fixed-size lists included. (lance_fw-written: pylance 14 writes
    these columns as one page each whatever max_page_bytes says.)"""
    from lance_fw_plugins.encodings_v2_1 import PageLayoutDecoder

    rng = np.random.default_rng(5)
    n = 40_000
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "f": pa.array(rng.random(n), mask=rng.random(n) < 0.2),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 16, dtype=np.float32)), 16),
        "s": pa.array([f"v{i % 777}" for i in range(n)]),
        "l": pa.array([list(range(i % 3)) for i in range(n)], pa.list_(pa.int32())),
    })
    lance_fw.write_dataset(table, uri, data_storage_version="2.2", max_page_bytes=16 * 1024)
    calls = collections.Counter()

    def counting(self, pages):
        out = _decode_pages_rows(self, pages)
        calls[out is not None] += len(pages)
        return out

    monkeypatch.setattr(PageLayoutDecoder, "decode_pages_rows", counting, raising=False)
    for indices in (np.sort(rng.choice(n, 60, replace=False)).tolist(), [0, 1, n // 2, n - 1],
                    rng.integers(0, n, 50)[::-1].tolist()):
        assert_tables_equal(lance.dataset(uri).take(indices), lance_fw.dataset(uri).take(indices))
    assert calls[True] > 20, calls
