"""What only lance_fw's 2.1/2.2 writer decides: page splits, files, appends, layer choices.

The both-ways type and encoding coverage lives in test_interop_v2_1.py.
"""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table
from conftest import assert_tables_equal
from test_interop_v2_1 import roundtrip

VERSIONS = ["2.1", "2.2"]


def _roundtrip(table: pa.Table, uri: str, version: str, **kwargs) -> None:
    roundtrip(table, uri, version, "lance_fw", **kwargs)


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_page_multi_fragment(uri, version):
    table = all_types_table(3000)
    _roundtrip(table, uri, version, max_rows_per_file=1000, max_page_bytes=2048)
    assert len(lance.dataset(uri).get_fragments()) == 3
    take = lance.dataset(uri).take([0, 1234, 2999])
    assert_tables_equal(table.take([0, 1234, 2999]), take)


@pytest.mark.parametrize("version", VERSIONS)
def test_appends_both_ways(uri, version):
    table = all_types_table(500)
    lance_fw.write_dataset(table, uri, data_storage_version=version)
    lance.write_dataset(table, uri, mode="append")
    lance_fw.write_dataset(table, uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("int32 > 50")
    ds.optimize.compact_files()
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert lance_fw.dataset(uri).count_rows() == lance.dataset(uri).count_rows()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False]])
def test_struct_over_list_split_across_pages(uri, version, mask):
    """Each row its own page: pylance needs the same rep/def layers on every page of a column
    with a struct above a list (a null struct in one page, none in the next)."""
    column = pa.StructArray.from_arrays([pa.array([[1], None, [2, 3]], pa.list_(pa.int8()))], names=["f0"],
                                        mask=pa.array(mask))
    _roundtrip(pa.table({"c": column}), uri, version, max_page_bytes=1)


def test_top_level_lists_keep_pylance_layers(uri):
    """Without a struct above, a list column's layers follow its data (as pylance's do): no def
    numbers are spent on nulls that never occur."""
    _roundtrip(pa.table({"l": pa.array([[1, 2], [], [3]] * 100, pa.list_(pa.int32()))}), uri, "2.2")
    (path,) = [p for p in os.listdir(f"{uri}/data") if p.endswith(".lance")]
    from lance_fw.cli import _decode_any
    from lance_fw.file.container import read_tail
    from lance_fw.io.storage import resolve_storage

    reader = resolve_storage(uri).open_reader(f"{uri}/data/{path}")
    page = read_tail(reader).columns[0].pages[0]
    assert "REPDEF_EMPTYABLE_LIST" in _decode_any(page.encoding.direct.encoding)
