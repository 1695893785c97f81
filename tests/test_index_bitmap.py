"""BITMAP index plugin vs pylance 14, both ways.

* lance_fw trains the same ``bitmap_page_lookup.lance`` pylance writes (keys, bitmaps, metadata);
* lance_fw's search over pylance's files returns the row addresses of pylance's filters;
* pylance commits and uses files lance_fw trained (``ScalarIndexQuery`` in its plan, same rows).

Data: 4 fragments of 5000 rows (so bitmaps cross 4096-value containers), nulls, NaN, -0.0, strings,
dates, timestamps, booleans and a high-cardinality column; rows deleted before training.
The helpers here are shared with test_index_label_list.py.
"""

from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

import lance
import numpy as np
import pyarrow as pa
import pyroaring
import pytest
from lance.bitmap import Bitmap

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.interfaces import (
    ContainsAnyQuery,
    EqualsQuery,
    InQuery,
    IsNullQuery,
    PrefixQuery,
    RangeQuery,
    ScalarQuery,
)
from lance_fw.io.storage import resolve_storage
from lance_fw.table.index_files import IndexFiles, index_dir
from lance_fw_plugins.index_bitmap import (
    LOOKUP_FILE,
    BitmapIndexReader,
    BitmapIndexType,
    LabelListIndexType,
    lance_index_types,
)
from lance_fw_plugins.index_bitmap_format import decode_row_addr_map, encode_row_addr_maps

ROWS = 20_000
ROWS_PER_FILE = 5_000
IndexType: TypeAlias = BitmapIndexType | LabelListIndexType


# --- helpers shared with test_index_label_list.py ----------------------------------------------


def store_of(path: str) -> IndexFiles:
    return IndexFiles(resolve_storage(path), path)


def pylance_index_path(ds: lance.LanceDataset, name: str) -> str:
    (meta,) = [i for i in ds.list_indices() if i["name"] == name]
    return index_dir(ds.uri, meta["uuid"])


def training_batches(ds: lance.LanceDataset, column: str) -> list[pa.RecordBatch]:
    """The kernel's training input: live rows, ``value`` and ``_rowaddr``, in small batches."""
    table = ds.to_table(columns=[column], with_row_address=True).rename_columns(["value", "_rowaddr"])
    return table.to_batches(max_chunksize=3000)


def train_into(ds: lance.LanceDataset, column: str, itype: IndexType, directory: str) -> IndexFiles:
    store = store_of(directory)
    itype.train(training_batches(ds, column), ds.schema.field(column), {}, store)
    return store


def commit_lance_fw_index(
    ds: lance.LanceDataset, column: str, itype: IndexType, name: str
) -> lance.LanceDataset:
    """Train with lance_fw into ``_indices/<uuid>/`` and commit it with pylance's CreateIndex."""
    new = str(uuid.uuid4())
    store = train_into(ds, column, itype, index_dir(ds.uri, new))
    files = [lance.IndexFile(path=n, size_bytes=s) for n, s in store.written]
    field = ds.lance_schema.field(column)
    assert field is not None
    index = lance.Index(
        uuid=new,
        name=name,
        fields=[field.id()],
        dataset_version=ds.version,
        fragment_ids=Bitmap([f.fragment_id for f in ds.get_fragments()]),
        index_version=itype.index_version,
        files=files,
        index_details=(itype.type_url, itype.details({})),
    )
    op = lance.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[])
    return lance.LanceDataset.commit(ds.uri, op, read_version=ds.version)


def filter_addresses(ds: lance.LanceDataset, filter: str, use_index: bool = True) -> np.ndarray:
    table = ds.to_table(columns=[], filter=filter, with_row_address=True, use_scalar_index=use_index)
    return np.sort(table.column("_rowaddr").to_numpy().astype(np.uint64))


def uses_index(ds: lance.LanceDataset, filter: str) -> bool:
    return "ScalarIndexQuery" in ds.scanner(columns=[], filter=filter).explain_plan()


def read_lookup(directory: str) -> pa.Table:
    return store_of(directory).read_table(LOOKUP_FILE)


def assert_same_lookup(expected: pa.Table, actual: pa.Table) -> None:
    """Same schema and metadata, same bitmap bytes, same keys (NaN equal to NaN)."""
    assert actual.schema.equals(expected.schema, check_metadata=True), (actual.schema, expected.schema)
    assert actual.column("bitmaps").combine_chunks().equals(expected.column("bitmaps").combine_chunks())
    ek, ak = expected.column("keys").to_pylist(), actual.column("keys").to_pylist()
    assert len(ek) == len(ak)
    for e, a in zip(ek, ak):
        if isinstance(e, float) and math.isnan(e):
            assert isinstance(a, float) and math.isnan(a)
        else:
            assert e == a and type(e) is type(a), (e, a)
        if isinstance(e, float) and e == 0.0:
            assert math.copysign(1, e) == math.copysign(1, a)


def assert_search(reader: BitmapIndexReader, query: ScalarQuery, expected: np.ndarray) -> None:
    assert reader.supports(query), query
    result = reader.search(query)
    assert result.exact
    assert result.addresses.dtype == np.uint64
    np.testing.assert_array_equal(result.addresses, expected, err_msg=repr(query))


# --- data ---------------------------------------------------------------------------------------


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    small = rng.integers(0, 25, ROWS)
    nulls = rng.random(ROWS) < 0.08
    floats = small.astype(np.float64) - 12.0
    floats[small == 3] = np.nan
    floats[small == 4] = -0.0
    day = datetime.date(2024, 1, 1)
    return pa.table(
        {
            "i": pa.array(small, mask=nulls),
            "s": pa.array([None if m else f"k{v}" for v, m in zip(small, nulls)]),
            "f": pa.array(floats, mask=nulls),
            "b": pa.array(small % 3 == 0, mask=nulls),
            "d": pa.array([day + datetime.timedelta(days=int(v)) for v in small], pa.date32()),
            "ts": pa.array((small * 1_000_000).astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
            "u": pa.array(rng.integers(0, 6000, ROWS).astype(np.uint32)),
            "sorted": pa.array(np.repeat(np.arange(4), ROWS // 4)),  # whole 4096-value containers
            "id": pa.array(np.arange(ROWS)),
        }
    )


COLUMNS = ["i", "s", "f", "b", "d", "ts", "u", "sorted"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    """pylance's BITMAP index on every column, built after deleting rows."""
    uri = str(tmp_path_factory.mktemp("bitmap") / "ds")
    ds = lance.write_dataset(_table(), uri, max_rows_per_file=ROWS_PER_FILE)
    ds.delete("id % 11 = 3 OR (id >= 5000 AND id < 5600)")
    for column in COLUMNS:
        ds.create_scalar_index(column, "BITMAP")
    return lance.dataset(uri)


@pytest.fixture(scope="module")
def readers(dataset: lance.LanceDataset) -> dict[str, BitmapIndexReader]:
    itype = BitmapIndexType()
    return {
        c: itype.load(store_of(pylance_index_path(dataset, f"{c}_idx")), dataset.schema.field(c))
        for c in COLUMNS
    }


# --- the plugin ---------------------------------------------------------------------------------


def test_registered_with_pylance_names() -> None:
    types = lance_index_types()
    bitmap, label_list = types["BITMAP"], types["LABEL_LIST"]
    assert (bitmap.display_name, bitmap.type_url, bitmap.index_version) == (
        "Bitmap",
        "/lance.table.BitmapIndexDetails",
        0,
    )
    assert (label_list.display_name, label_list.type_url, label_list.index_version) == (
        "LabelList",
        "/lance.table.LabelListIndexDetails",
        1,
    )
    assert bitmap.details({}) == b"" and label_list.details({}) == b""


@pytest.mark.parametrize("column", COLUMNS)
def test_trained_files_equal_pylance_files(dataset: lance.LanceDataset, column: str, tmp_path: Path) -> None:
    store = train_into(dataset, column, BitmapIndexType(), str(tmp_path))
    assert [n for n, _ in store.written] == [LOOKUP_FILE]
    assert_same_lookup(read_lookup(pylance_index_path(dataset, f"{column}_idx")), read_lookup(str(tmp_path)))


QUERIES: list[tuple[str, ScalarQuery, str]] = [
    ("i", EqualsQuery(7), "i = 7"),
    ("i", InQuery((1, 2, 24, 99)), "i IN (1, 2, 24, 99)"),
    ("i", RangeQuery(5, True, 9, False), "i >= 5 AND i < 9"),
    ("i", RangeQuery(20, False, None), "i > 20"),
    ("i", IsNullQuery(), "i IS NULL"),
    ("i", EqualsQuery(1000), "i = 1000"),
    ("s", EqualsQuery("k10"), "s = 'k10'"),
    ("s", RangeQuery("k18", True, "k3", True), "s BETWEEN 'k18' AND 'k3'"),
    ("s", PrefixQuery("k1"), "s LIKE 'k1%'"),
    ("s", PrefixQuery(""), "s LIKE '%'"),
    ("s", IsNullQuery(), "s IS NULL"),
    ("f", RangeQuery(5.0, False, None), "f > 5.0"),  # NaN is above every number
    ("f", RangeQuery(None, True, -1.5, True), "f <= -1.5"),
    ("f", EqualsQuery(0.0), "f = 0.0"),  # -0.0 equals 0.0
    ("f", RangeQuery(-0.0, False, None), "f > 0.0"),
    ("f", IsNullQuery(), "f IS NULL"),
    ("b", EqualsQuery(True), "b = true"),
    ("b", EqualsQuery(False), "b = false"),
    (
        "d",
        RangeQuery(datetime.date(2024, 1, 3), True, datetime.date(2024, 1, 6), False),
        "d >= date '2024-01-03' AND d < date '2024-01-06'",
    ),
    (
        "ts",
        EqualsQuery(datetime.datetime(1970, 1, 1, 0, 0, 5, tzinfo=datetime.UTC)),
        "ts = timestamp '1970-01-01 00:00:05'",
    ),
    ("u", InQuery(tuple(range(0, 6000, 7))), "u % 7 = 0"),
    ("u", RangeQuery(100, True, 4000, True), "u BETWEEN 100 AND 4000"),
    ("sorted", EqualsQuery(2), "sorted = 2"),
    ("sorted", RangeQuery(1, True, None), "sorted >= 1"),
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


def test_float_nan_is_the_greatest_key(
    dataset: lance.LanceDataset, readers: dict[str, BitmapIndexReader]
) -> None:
    nan_rows = filter_addresses(dataset, "isnan(f)", use_index=False)
    assert len(nan_rows)
    assert_search(readers["f"], EqualsQuery(float("nan")), nan_rows)
    assert_search(readers["f"], RangeQuery(float("nan"), False, None), nan_rows[:0])


def test_unanswerable_queries_are_not_supported(readers: dict[str, BitmapIndexReader]) -> None:
    assert not readers["i"].supports(EqualsQuery(1.5))  # int64 cannot hold it: the kernel scans
    assert not readers["u"].supports(EqualsQuery(-1))
    assert not readers["i"].supports(PrefixQuery("1"))
    assert not readers["i"].supports(ContainsAnyQuery((1,)))
    assert not readers["i"].supports(InQuery(()))
    with pytest.raises(UnsupportedFeatureError):
        readers["i"].search(EqualsQuery(1.5))


@pytest.mark.parametrize("column", ["i", "b", "u"])
def test_statistics_equal_pylance(
    dataset: lance.LanceDataset, readers: dict[str, BitmapIndexReader], column: str
) -> None:
    assert readers[column].statistics() == dataset.stats.index_stats(f"{column}_idx")["indices"][0]


@pytest.mark.parametrize("column", ["i", "s", "f", "ts", "u"])
def test_pylance_uses_files_lance_fw_trained(tmp_path: Path, column: str) -> None:
    ds = lance.write_dataset(_table(), str(tmp_path / "ds"), max_rows_per_file=ROWS_PER_FILE)
    ds.delete("id % 13 = 1")
    ds = commit_lance_fw_index(ds, column, BitmapIndexType(), f"{column}_idx")
    (meta,) = ds.list_indices()
    assert meta["type"] == "Bitmap"
    filters = {
        "i": ["i = 3", "i IN (4, 5)", "i > 20", "i IS NULL", "i IS NOT NULL"],
        "s": ["s = 'k7'", "s > 'k5'", "s IS NULL"],
        "f": ["f > 5.0", "f = 0.0", "f < -3.0", "f IS NULL"],
        "ts": ["ts = timestamp '1970-01-01 00:00:05'", "ts < timestamp '1970-01-01 00:00:03'"],
        "u": ["u = 17", "u BETWEEN 10 AND 3000", "NOT (u < 5000)"],
    }[column]
    for f in filters:
        assert uses_index(ds, f), f
        np.testing.assert_array_equal(
            filter_addresses(ds, f), filter_addresses(ds, f, use_index=False), err_msg=f
        )
    stats = ds.stats.index_stats(f"{column}_idx")
    reader = BitmapIndexType().load(
        store_of(pylance_index_path(ds, f"{column}_idx")), ds.schema.field(column)
    )
    assert stats["indices"][0] == reader.statistics()
    assert stats["num_indexed_rows"] == ds.count_rows()


def test_empty_and_all_null_indices_match_pylance(tmp_path: Path) -> None:
    table = pa.table({"x": pa.array([None] * 5000, pa.int32()), "y": pa.array(np.arange(5000))})
    ds = lance.write_dataset(table, str(tmp_path / "ds"), max_rows_per_file=3000)
    ds.create_scalar_index("x", "BITMAP")
    ds.delete("y >= 0")
    ds.create_scalar_index("y", "BITMAP")
    ds = lance.dataset(ds.uri)
    itype = BitmapIndexType()
    for column in ("x", "y"):
        trained = str(tmp_path / column)
        if column == "x":  # trained before the delete: train on the same rows
            batches = [
                pa.record_batch(
                    [
                        table["x"].combine_chunks(),
                        pa.array(np.r_[np.arange(3000), (1 << 32) + np.arange(2000)], pa.uint64()),
                    ],
                    names=["value", "_rowaddr"],
                )
            ]
            itype.train(batches, ds.schema.field("x"), {}, store_of(trained))
        else:
            train_into(ds, column, itype, trained)
        assert_same_lookup(read_lookup(pylance_index_path(ds, f"{column}_idx")), read_lookup(trained))
        reader = itype.load(store_of(trained), ds.schema.field(column))
        assert reader.statistics() == ds.stats.index_stats(f"{column}_idx")["indices"][0]
    reader = itype.load(store_of(str(tmp_path / "x")), ds.schema.field("x"))
    assert len(reader.search(IsNullQuery()).addresses) == 5000
    assert len(reader.search(EqualsQuery(1)).addresses) == 0


@pytest.mark.parametrize(
    "arrow_type",
    [pa.dictionary(pa.int32(), pa.string()), pa.struct([("a", pa.int32())]), pa.list_(pa.int32()), pa.null()],
)
def test_check_refuses_non_scalar_columns(arrow_type: pa.DataType) -> None:
    with pytest.raises(UnsupportedFeatureError, match="BITMAP index column c"):
        BitmapIndexType().check(pa.field("c", arrow_type), {})


def test_check_refuses_parameters_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="num_bitmaps_cap"):
        BitmapIndexType().check(pa.field("c", pa.int32()), {"num_bitmaps_cap": 3})


def test_load_refuses_a_directory_without_the_lookup_file(tmp_path: Path) -> None:
    from lance_fw.errors import CorruptFileError

    with pytest.raises(CorruptFileError, match=LOOKUP_FILE):
        BitmapIndexType().load(store_of(str(tmp_path)), pa.field("c", pa.int32()))


# --- the RowAddrTreeMap bytes -------------------------------------------------------------------


def _pyroaring_tree_map(addrs: Sequence[int]) -> bytes:
    by_fragment: dict[int, list[int]] = {}
    for a in addrs:
        by_fragment.setdefault(a >> 32, []).append(a & 0xFFFFFFFF)
    out = len(by_fragment).to_bytes(4, "little")
    for fid in sorted(by_fragment):
        data = pyroaring.BitMap(by_fragment[fid], optimize=False).serialize()
        out += fid.to_bytes(4, "little") + len(data).to_bytes(4, "little") + data
    return out


@pytest.mark.parametrize("span", [300, 70_000, 2**32 - 1])
def test_tree_maps_equal_pyroaring_serialization(span: int) -> None:
    rng = np.random.default_rng(span)
    n, groups = 60_000, 7
    g = np.sort(rng.integers(0, groups, n))
    addrs = (rng.integers(0, 3, n).astype(np.uint64) << np.uint64(32)) | rng.integers(0, span, n).astype(
        np.uint64
    )
    order = np.lexsort((addrs, g))
    g, addrs = g[order], addrs[order]
    keep = np.r_[True, (g[1:] != g[:-1]) | (addrs[1:] != addrs[:-1])]
    g, addrs = g[keep], addrs[keep]
    offsets, data = encode_row_addr_maps(g, addrs, groups + 1)  # the last group is empty
    for k in range(groups + 1):
        mine = data[offsets[k] : offsets[k + 1]].tobytes()
        expected: Any = addrs[g == k]
        assert mine == _pyroaring_tree_map([int(a) for a in expected])
        np.testing.assert_array_equal(decode_row_addr_map(mine, "x"), expected)


def test_whole_fragment_entries_are_refused_not_misread() -> None:
    data = (1).to_bytes(4, "little") + (5).to_bytes(4, "little") + (0).to_bytes(4, "little")
    with pytest.raises(UnsupportedFeatureError, match="whole of fragment 5"):
        decode_row_addr_map(data, "f.lance")


def test_run_containers_are_read_too() -> None:
    """pylance writes no run containers, but a RowAddrTreeMap with them (cookie 12347) still decodes."""
    offsets = np.r_[np.arange(10, 9000), np.arange(20_000, 20_003), 70_000 + np.arange(5000)].astype(
        np.uint32
    )
    bitmap = pyroaring.BitMap(offsets.tolist())
    bitmap.run_optimize()
    data = bitmap.serialize()
    assert int.from_bytes(data[:2], "little") == 12347  # the run-container cookie
    tree = (1).to_bytes(4, "little") + (9).to_bytes(4, "little") + len(data).to_bytes(4, "little") + data
    expected = (np.uint64(9) << np.uint64(32)) | offsets.astype(np.uint64)
    np.testing.assert_array_equal(decode_row_addr_map(tree, "x"), expected)
