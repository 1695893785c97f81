"""Reading what pylance 14 writes at file versions 2.1 and 2.2 (its default)."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table, nested_columns, scalar_columns
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


def _struct_with_nulls(n: int) -> pa.Array:
    return pa.StructArray.from_arrays(
        [pa.array([i if i % 3 else None for i in range(n)], pa.int32()),
         pa.array([f"s{i}" for i in range(n)])], names=["a", "b"],
        mask=pa.array([i % 5 == 0 for i in range(n)]))


@pytest.mark.parametrize("version", VERSIONS)
def test_structs_with_nulls_and_nested_lists(uri, version):
    n = 300
    rng = np.random.default_rng(3)
    lists = [None if i % 7 == 0 else [[int(x) for x in rng.integers(0, 5, i % 3)] if i % 4 else None, []]
             for i in range(n)]
    table = pa.table({
        "s": _struct_with_nulls(n),
        "ll": pa.array(lists, pa.list_(pa.list_(pa.int64()))),
        "ls": pa.array([None if i % 6 == 0 else [{"p": i, "q": None if i % 2 else "x"}] * (i % 3) for i in range(n)],
                       pa.list_(pa.struct([("p", pa.int64()), ("q", pa.string())]))),
        "fsl_in_list": pa.array([None if i % 5 == 0 else [[1.0, 2.0]] * (i % 3) for i in range(n)],
                                pa.list_(pa.list_(pa.float32(), 2))),
    })
    _roundtrip(table, uri, version)


def test_map_22(uri):
    table = pa.table({"m": pa.array([[("a", 1), ("b", None)], [], None, [("c", 3)]] * 50,
                                    pa.map_(pa.string(), pa.int32()))})
    _roundtrip(table, uri, "2.2")


@pytest.mark.parametrize("version", VERSIONS)
def test_encodings_pylance_picks_at_100k(uri, version):
    """The spec's table of what pylance chooses per data type (lance-format.md §5.5)."""
    n = 100_000
    rng = np.random.default_rng(11)
    hexes = [f"{x:016x}" for x in rng.integers(0, 2**62, n)]
    table = pa.table({
        "seq_i32": pa.array(np.arange(n, dtype=np.int32)),
        "rand_small_i64": pa.array(rng.integers(0, 1000, n)),
        "rand_full_i64": pa.array(rng.integers(-2**62, 2**62, n)),
        "const_i32": pa.array(np.full(n, 7, np.int32)),
        "runs": pa.array(np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)),
        "f32": pa.array(rng.random(n, dtype=np.float32)),
        "f64": pa.array(rng.random(n)),
        "bool": pa.array(rng.random(n) > 0.5),
        "null10": pa.array(np.arange(n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "all_null": pa.nulls(n, pa.int32()),
        "low_card_str": pa.array(rng.choice(["red", "green", "blue", "cyan"], n)),
        "hex": pa.array(hexes),
        "list_i32": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "fsl8": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("us")),
        "struct": pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.random(n))],
                                             names=["a", "b"]),
    })
    _roundtrip(table, uri, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_wide_values_use_full_zip(uri, version):
    rng = np.random.default_rng(5)
    n = 2000
    table = pa.table({
        "text": pa.array([None if i % 9 == 0 else "".join(rng.choice(list("abcdef"), 600 + i % 600)) for i in range(n)]),
        "vec128": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128, dtype=np.float32)), 128),
        "blob": pa.array([bytes(rng.integers(0, 4, 40_000, dtype=np.uint8)) if i % 50 == 0 else None
                          for i in range(n)], pa.large_binary()),
        "list_text": pa.array([None if i % 4 == 0 else ["x" * 300] * (i % 3) for i in range(n)],
                              pa.list_(pa.string())),
        "list_vec": pa.array([None if i % 3 == 0 else [[1.5] * 128] * (i % 3) for i in range(n)],
                             pa.list_(pa.list_(pa.float32(), 128))),
        "vec_null_items": pa.array([None if i % 2 else [None if j % 5 == 0 else 1.0 for j in range(128)]
                                    for i in range(n)], pa.list_(pa.float32(), 128)),
        "empty_or_null_lists": pa.array([None if i % 2 else [] for i in range(n)], pa.list_(pa.int32())),
    })
    _roundtrip(table, uri, version)


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
