"""A take of a few rows decodes only those rows of a mini-block page without repetition
(``take._levels_at``: values gathered from where they lie in their chunks, nothing built for the
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


def _served(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Count, per (value compression, served), the pages ``_levels_at`` was asked for."""
    seen: collections.Counter = collections.Counter()
    original = take_module._levels_at

    def counting(layout, *args):
        out = original(layout, *args)
        seen[(layout.value_compression.WhichOneof("compression"), out is not None)] += 1
        return out

    monkeypatch.setattr(take_module, "_levels_at", counting)
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
