"""LABEL_LIST index plugin vs pylance 14, both ways.

Lists of int64 and large lists of strings across 4 fragments (bitmaps cross 4096-value containers),
with null lists, empty lists, null items and repeated items, rows deleted before training.
lance_fw must write pylance's keys, bitmaps and the null-lists global buffer (pylance answers
``NOT array_has_any`` from it), search pylance's files as pylance's filters select, and pylance must
use lance_fw's files.
"""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.interfaces import ContainsAllQuery, ContainsAnyQuery, EqualsQuery, ScalarQuery
from lance_fw_plugins.index_bitmap import (
    LABEL_LIST_NULLS_KEY,
    LOOKUP_FILE,
    BitmapIndexReader,
    LabelListIndexType,
)
from tests.test_index_bitmap import (
    assert_same_lookup,
    assert_search,
    commit_lance_fw_index,
    filter_addresses,
    pylance_index_path,
    read_lookup,
    store_of,
    train_into,
    uses_index,
)

ROWS = 20_000
ROWS_PER_FILE = 5_000
COLUMNS = ["l", "s"]


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    rows: list[list[int | None] | None] = []
    for i in range(ROWS):
        kind = i % 17
        if kind == 0:
            rows.append(None)
        elif kind == 1:
            rows.append([])
        elif kind == 2:
            rows.append([None, int(rng.integers(0, 30))])
        else:
            rows.append([int(v) for v in rng.integers(0, 30, int(rng.integers(1, 5)))])  # repeats happen
    labels = [None if r is None else [None if v is None else f"t{v}" for v in r] for r in rows]
    return pa.table(
        {
            "l": pa.array(rows, pa.list_(pa.int64())),
            "s": pa.array(labels, pa.large_list(pa.string())),
            "id": pa.array(np.arange(ROWS)),
        }
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    uri = str(tmp_path_factory.mktemp("label_list") / "ds")
    ds = lance.write_dataset(_table(), uri, max_rows_per_file=ROWS_PER_FILE)
    ds.delete("id % 7 = 2 OR (id >= 10000 AND id < 10500)")
    for column in COLUMNS:
        ds.create_scalar_index(column, "LABEL_LIST")
    return lance.dataset(uri)


@pytest.fixture(scope="module")
def readers(dataset: lance.LanceDataset) -> dict[str, BitmapIndexReader]:
    itype = LabelListIndexType()
    return {
        c: itype.load(store_of(pylance_index_path(dataset, f"{c}_idx")), dataset.schema.field(c))
        for c in COLUMNS
    }


@pytest.mark.parametrize("column", COLUMNS)
def test_trained_files_equal_pylance_files(dataset: lance.LanceDataset, column: str, tmp_path: Path) -> None:
    store = train_into(dataset, column, LabelListIndexType(), str(tmp_path))
    pylance_dir = pylance_index_path(dataset, f"{column}_idx")
    assert_same_lookup(read_lookup(pylance_dir), read_lookup(str(tmp_path)))
    assert store.schema_metadata(LOOKUP_FILE)[LABEL_LIST_NULLS_KEY] == "1"
    assert store.global_buffer(LOOKUP_FILE, 1) == store_of(pylance_dir).global_buffer(LOOKUP_FILE, 1)
    ((name, size),) = store.written
    assert size == (tmp_path / name).stat().st_size  # the size the kernel records in IndexMetadata.files


QUERIES: list[tuple[str, ScalarQuery, str]] = [
    ("l", ContainsAnyQuery((3,)), "array_has_any(l, [3])"),
    ("l", ContainsAnyQuery((3, 29, 1000)), "array_has_any(l, [3, 29, 1000])"),
    ("l", ContainsAllQuery((3, 4)), "array_has_all(l, [3, 4])"),
    ("l", ContainsAllQuery((5, 5)), "array_has_all(l, [5, 5])"),
    ("l", ContainsAllQuery((3, 1000)), "array_has_all(l, [3, 1000])"),
    ("l", ContainsAnyQuery((7,)), "array_contains(l, 7)"),
    ("s", ContainsAnyQuery(("t1", "t2")), "array_has_any(s, ['t1', 't2'])"),
    ("s", ContainsAllQuery(("t1", "t2", "t3")), "array_has_all(s, ['t1', 't2', 't3'])"),
]


@pytest.mark.parametrize(("column", "query", "filter"), QUERIES, ids=[q[2] for q in QUERIES])
def test_search_on_pylance_files_equals_pylance_filter(
    dataset: lance.LanceDataset,
    readers: dict[str, BitmapIndexReader],
    column: str,
    query: ScalarQuery,
    filter: str,
) -> None:
    assert_search(readers[column], query, filter_addresses(dataset, filter, use_index=False))


def test_a_null_item_is_the_null_key(
    dataset: lance.LanceDataset, readers: dict[str, BitmapIndexReader]
) -> None:
    """pylance answers ``array_has_any(l, [NULL])`` from the index with the rows holding a null item."""
    expected = filter_addresses(dataset, "array_has_any(l, [NULL])")
    assert len(expected)
    assert_search(readers["l"], ContainsAnyQuery((None,)), expected)


@pytest.mark.parametrize("column", COLUMNS)
def test_null_lists_equal_pylance(
    dataset: lance.LanceDataset, readers: dict[str, BitmapIndexReader], column: str
) -> None:
    expected = filter_addresses(dataset, f"{column} IS NULL", use_index=False)
    assert len(expected)
    np.testing.assert_array_equal(readers[column].list_null_addresses(), expected)


def test_only_list_queries_are_supported(readers: dict[str, BitmapIndexReader]) -> None:
    reader = readers["l"]
    assert not reader.supports(EqualsQuery(3))
    assert not reader.supports(ContainsAnyQuery(()))
    assert not reader.supports(ContainsAnyQuery((1.5,)))
    assert not readers["s"].supports(ContainsAnyQuery((3,)))


@pytest.mark.parametrize("column", COLUMNS)
def test_statistics_equal_pylance(
    dataset: lance.LanceDataset, readers: dict[str, BitmapIndexReader], column: str
) -> None:
    assert readers[column].statistics() == dataset.stats.index_stats(f"{column}_idx")["indices"][0]


@pytest.mark.parametrize("column", COLUMNS)
def test_pylance_uses_files_lance_fw_trained(tmp_path: Path, column: str) -> None:
    ds = lance.write_dataset(_table(), str(tmp_path / "ds"), max_rows_per_file=ROWS_PER_FILE)
    ds.delete("id % 9 = 4")
    ds = commit_lance_fw_index(ds, column, LabelListIndexType(), f"{column}_idx")
    (meta,) = ds.list_indices()
    assert meta["type"] == "LabelList"
    a, b = ("3", "4") if column == "l" else ("'t3'", "'t4'")
    filters = [
        f"array_has_any({column}, [{a}])",
        f"array_has_all({column}, [{a}, {b}])",
        f"array_contains({column}, {b})",
        f"NOT array_has_any({column}, [{a}])",  # null lists stay out: needs the null-lists buffer
        f"NOT array_has_all({column}, [{a}, {b}])",
    ]
    for f in filters:
        assert uses_index(ds, f), f
        np.testing.assert_array_equal(
            filter_addresses(ds, f), filter_addresses(ds, f, use_index=False), err_msg=f
        )
    assert ds.stats.index_stats(f"{column}_idx")["num_indexed_rows"] == ds.count_rows()


def test_empty_index_matches_pylance(tmp_path: Path) -> None:
    ds = lance.write_dataset(
        pa.table({"l": pa.array([[1]] * 5000, pa.list_(pa.int32()))}), str(tmp_path / "ds")
    )
    ds.delete("true")
    ds.create_scalar_index("l", "LABEL_LIST")
    ds = lance.dataset(ds.uri)
    store = train_into(ds, "l", LabelListIndexType(), str(tmp_path / "mine"))
    pylance_dir = pylance_index_path(ds, "l_idx")
    assert_same_lookup(read_lookup(pylance_dir), read_lookup(str(tmp_path / "mine")))
    assert store.global_buffer(LOOKUP_FILE, 1) == store_of(pylance_dir).global_buffer(LOOKUP_FILE, 1)
    reader = LabelListIndexType().load(store, ds.schema.field("l"))
    assert reader.statistics() == ds.stats.index_stats("l_idx")["indices"][0] == {}
    assert len(reader.search(ContainsAnyQuery((1,))).addresses) == 0


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.int32(),
        pa.string(),
        pa.list_(pa.int32(), 2),
        pa.list_(pa.struct([("a", pa.int32())])),
        pa.list_(pa.list_(pa.int32())),
    ],
)
def test_check_refuses_other_columns(arrow_type: pa.DataType) -> None:
    with pytest.raises(UnsupportedFeatureError, match="LABEL_LIST index column c"):
        LabelListIndexType().check(pa.field("c", arrow_type), {})


def test_check_refuses_parameters_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="with_position"):
        LabelListIndexType().check(pa.field("c", pa.list_(pa.int32())), {"with_position": True})
