"""Reading what only pylance writes at 2.1/2.2: its appends and deletions, and blob columns.

The both-ways type and encoding coverage lives in test_interop_v2_1.py.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table
from conftest import assert_tables_equal

VERSIONS = ["2.1", "2.2"]


@pytest.mark.parametrize("version", VERSIONS)
def test_appends_deletions_and_multi_page(uri, version):
    table = all_types_table(3000)
    lance.write_dataset(table, uri, data_storage_version=version, max_rows_per_file=1500)
    ds = lance.write_dataset(table, uri, mode="append", max_page_bytes=4096)
    ds.delete("int32 > 50 OR string IS NULL")
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    assert_tables_equal(expected, pa.Table.from_batches(list(lance_fw.dataset(uri).to_batches(batch_size=401)),
                                                        schema=expected.schema))


@pytest.mark.parametrize("version", ["2.2"])
def test_blob_columns(uri, version):
    """2.2 blob v2: the table holds descriptors (as pylance returns them), bytes come from
    take_blobs (inline in the data file or in sidecar files). (2.1's blob v1 layout: not yet.)"""
    from lance_fw.table.blobs import take_blobs

    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [b"x" * 10, None, b"y" * 200_000, b"", b"z" * 5000]
    table = pa.table([pa.array([1, 2, 3, 4, 5]), pa.array(values, pa.large_binary())],
                     schema=pa.schema([pa.field("id", pa.int64()), field]))
    lance.write_dataset(table, uri, data_storage_version=version)
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    if version == "2.2":
        got = take_blobs(lance_fw.dataset(uri), "b", [4, 2, 0, 1])
        assert got == [values[4], values[2], values[0], None]
