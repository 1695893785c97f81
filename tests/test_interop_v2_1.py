"""File formats 2.1 and 2.2 (pylance 14's default) both ways: one side writes, the other reads."""

from __future__ import annotations

import math
from decimal import Decimal

import lance
import numpy as np
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


# --- nested structs beside lists (issue 10, item 6) -----------------------------------------------

REPRO = "/work/shared/repro/fw_2_2_nested_struct.arrow"
NESTED_ROWS = 5000  # past a 4096-value chunk and several 1024-value blocks


def _plain(value):
    """A row as Python values with NaN made comparable (NaN != NaN would fail equal rows)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def assert_same_rows(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema.types == expected.schema.types
    assert _plain(actual.to_pylist()) == _plain(expected.to_pylist())


def _nested(rng: np.random.Generator, t: pa.DataType, n: int, null_share: float) -> pa.Array:
    """``n`` values of ``t`` built bottom-up from masks, so null structs and lists hide real child
    values (as Arrow allows and the repro file has); every child draws its own null share."""
    child_share = lambda: float(rng.choice([0.0, 0.1, 0.4]))  # noqa: E731
    mask = rng.random(n) < null_share if null_share else None
    if pa.types.is_struct(t):
        children = [_nested(rng, f.type, n, child_share()) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=None if mask is None else pa.array(mask))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = rng.integers(0, 5, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        values = _nested(rng, t.value_type, int(offsets[-1]), child_share())
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        offsets = pa.array(offsets, pa.int64() if pa.types.is_large_list(t) else pa.int32())
        return cls.from_arrays(offsets, values, type=t, mask=None if mask is None else pa.array(mask))
    if pa.types.is_decimal(t):
        units = rng.integers(-10**8, 10**8, n).tolist()
        return pa.array([None if mask is not None and m else Decimal(u).scaleb(-t.scale)
                         for u, m in zip(units, mask if mask is not None else [False] * n)], t)
    if pa.types.is_date32(t):
        return pa.array(rng.integers(-5000, 20000, n).astype(np.int32), mask=mask).cast(t)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if pa.types.is_string(t):
        return pa.array([f"v{k}" for k in rng.integers(0, 10**6, n)], t, mask=mask)
    return pa.array(rng.standard_normal(n).astype(t.to_pandas_dtype()), t, mask=mask)


def _repro_type(list_type=pa.list_) -> pa.DataType:
    return pa.struct([("f0", pa.decimal128(12, 3)), ("f1", pa.struct([("f0", pa.date32()), ("f1", pa.bool_())])),
                      ("f2", list_type(pa.float32()))])


NESTED_SHAPES = {
    "repro_shape": _repro_type(),
    "repro_shape_large_list": _repro_type(pa.large_list),
    "list_of_structs": pa.list_(pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string()),
                                                                                 ("d", pa.list_(pa.int16()))]))])),
    "struct_over_large_list_of_structs": pa.struct([("s", pa.struct([("l", pa.large_list(pa.struct(
        [("x", pa.float64()), ("y", pa.bool_())])))])), ("t", pa.int8())]),
}


def test_repro_nested_struct_beside_list(uri):
    """The table that made pylance panic ("index out of bounds" in its rep/def decoder) when
    lance_fw wrote it at 2.1/2.2; pylance must read exactly the input."""
    table = pa.ipc.open_file(REPRO).read_all()
    for version in VERSIONS:
        target = f"{uri}_{version}"
        lance_fw.write_dataset(table, target, data_storage_version=version)
        assert_same_rows(table, lance.dataset(target).to_table())
        assert_same_rows(table, lance_fw.dataset(target).to_table())
        assert_same_rows(table.take([0, 4, 7, 18]), lance.dataset(target).take([0, 4, 7, 18]))


@pytest.mark.parametrize("page_bytes", [None, 4096])
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("shape", list(NESTED_SHAPES))
def test_nested_structs_beside_lists(uri, shape, version, writer, page_bytes):
    """Null structs at every level, null and empty lists, null items, values hidden under nulls,
    several thousand rows; small pages put different null patterns in different pages."""
    rng = np.random.default_rng(sorted(NESTED_SHAPES).index(shape))
    column = _nested(rng, NESTED_SHAPES[shape], NESTED_ROWS, 0.1)
    table = pa.table({"id": pa.array(np.arange(NESTED_ROWS)), "c": column})
    options = {} if page_bytes is None else {"max_page_bytes": page_bytes}
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, **options)
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(table, expected)
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    rows = [0, 1, 1023, 1024, 4095, 4096, NESTED_ROWS - 1]
    assert_tables_equal(lance.dataset(uri).take(rows), lance_fw.dataset(uri).take(rows))
