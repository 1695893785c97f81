"""Reading what pylance 14 writes at file versions 2.1 and 2.2 (its default)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from cases import (all_types_table, encodings_table, map_table, nested_columns, nested_v21_table, scalar_columns,
                   wide_table)
from conftest import assert_tables_equal

VERSIONS = ["2.1", "2.2"]


def _roundtrip(table: pa.Table, uri: str, version: str, **kwargs) -> None:
    lance.write_dataset(table, uri, data_storage_version=version, **kwargs)
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    assert_tables_equal(expected, pa.Table.from_batches(list(lance_fw.dataset(uri).to_batches(batch_size=37)),
                                                        schema=expected.schema))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", list(scalar_columns()) + list(nested_columns()))
def test_each_type_small(uri, version, name):
    _roundtrip(all_types_table().select([name]), uri, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_structs_with_nulls_and_nested_lists(uri, version):
    _roundtrip(nested_v21_table(), uri, version)


def test_map_22(uri):
    _roundtrip(map_table(), uri, "2.2")


@pytest.mark.parametrize("version", VERSIONS)
def test_encodings_pylance_picks_at_100k(uri, version):
    _roundtrip(encodings_table(), uri, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_wide_values_use_full_zip(uri, version):
    _roundtrip(wide_table(), uri, version)


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
