"""File formats 2.1 and 2.2 (pylance 14's default) both ways: one side writes, the other reads."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from cases import (all_types_table, encodings_table, map_table, nested_columns, nested_v21_table, scalar_columns,
                   wide_table)
from conftest import assert_tables_equal

VERSIONS = ["2.1", "2.2"]
WRITERS = ["pylance", "lance_fw"]


def roundtrip(table: pa.Table, uri: str, version: str, writer: str, **kwargs) -> None:
    """``writer`` writes; both read. What pylance reads is the oracle for what lance_fw reads."""
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, **kwargs)
    assert lance.dataset(uri).data_storage_version == version
    expected = lance.dataset(uri).to_table()
    if writer == "lance_fw":
        assert_tables_equal(table, expected)
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    batches = list(lance_fw.dataset(uri).to_batches(batch_size=37))
    assert_tables_equal(expected, pa.Table.from_batches(batches, schema=expected.schema))


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", list(scalar_columns()) + list(nested_columns()))
def test_each_type_small(uri, version, writer, name):
    roundtrip(all_types_table().select([name]), uri, version, writer)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_structs_with_nulls_and_nested_lists(uri, version, writer):
    roundtrip(nested_v21_table(), uri, version, writer)


@pytest.mark.parametrize("writer", WRITERS)
def test_map_22(uri, writer):
    roundtrip(map_table(), uri, "2.2", writer)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_encodings_at_100k(uri, version, writer):
    """The spec's table of what pylance picks per data type (lance-format.md §5.5)."""
    roundtrip(encodings_table(), uri, version, writer)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_wide_values_use_full_zip(uri, version, writer):
    roundtrip(wide_table(), uri, version, writer)
