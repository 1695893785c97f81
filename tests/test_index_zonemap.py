"""ZONEMAP index plugin vs pylance 14, both ways.

* files: lance_fw's ``train()`` writes the zone table pylance writes for the same live rows (zones of
  ``rows_per_zone`` live rows per fragment, spans over deleted rows, NaN max, null bounds);
* search: on pylance's own files, every row pylance's filter returns is among lance_fw's candidates,
  and the candidates are whole zones;
* pylance uses lance_fw's files (committed with pylance's CreateIndex): explain_plan shows the zone
  map and the results equal the unindexed scan;
* statistics equal pylance's ``index_stats``; unsupported types and parameters are refused by name.
"""

from __future__ import annotations

import datetime
import decimal
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.file import LanceFileReader
from lance.indices import IndexConfig

from lance_fw.errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from lance_fw.interfaces import (
    EqualsQuery,
    InQuery,
    IsNullQuery,
    PrefixQuery,
    RangeQuery,
    ScalarQuery,
)
from lance_fw.io.storage import resolve_storage
from lance_fw.table.index_files import IndexFiles
from lance_fw_plugins.index_zonemap import TYPE_URL, ZoneMapIndexType, ZoneMapReader

ZT = ZoneMapIndexType()
N = 30_000
ROWS_PER_FILE = 11_000
RPZ = 1000


def _data() -> pa.Table:
    rng = np.random.default_rng(7)
    x = np.arange(N)
    return pa.table(
        {
            "i": pa.array(x, mask=(x % 97 == 0)),
            "f": pa.array(np.where(x % 50 == 0, np.nan, rng.random(N)), mask=(x % 101 == 0)),
            "s": pa.array([f"s{i:06d}" for i in x], mask=(x % 89 == 0)),
            "f32": pa.array(rng.random(N).astype(np.float32)),
            "b": pa.array(x % 3 == 0, mask=(x > 20_000)),
            "d": pa.array((x // 100).astype(np.int32), pa.int32()).cast(pa.date32()),
            "ts": pa.array(x * 1000, pa.timestamp("us")),
            "dec": pa.array([decimal.Decimal(int(i)) / 100 for i in x], pa.decimal128(12, 2)),
            "bin": pa.array([bytes([i % 256, i // 256 % 256]) for i in x]),
            "u8": pa.array(x % 256, pa.uint8()),
            "ls": pa.array([f"k{i % 1000:04d}" for i in x], pa.large_string()),
            "fsb": pa.array([bytes([i % 256, 1]) for i in x], pa.binary(2)),
        }
    )


COLUMNS = list(_data().column_names)


def _delete_some(ds: lance.LanceDataset) -> lance.LanceDataset:
    ds.delete("i >= 100 and i < 300")
    ds.delete("i >= 11000 and i < 11050")  # fragment 1's first 50 rows
    ds.delete("i % 7 = 3 and i > 25000")
    return lance.dataset(ds.uri)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    """3 fragments (11000, 11000, 8000 rows), deleted rows at a fragment start and in the middle."""
    uri = str(tmp_path_factory.mktemp("zm") / "base")
    ds = lance.write_dataset(_data(), uri, max_rows_per_file=ROWS_PER_FILE)
    ds = _delete_some(ds)
    assert len(ds.get_fragments()) == 3 and ds.count_rows() < N
    return uri


@pytest.fixture(scope="module")
def indexed(base: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of ``base`` with a pylance ZONEMAP (rows_per_zone 1000) on every column."""
    uri = str(tmp_path_factory.mktemp("zm") / "indexed")
    shutil.copytree(base, uri)
    ds = lance.dataset(uri)
    for col in COLUMNS:
        ds.create_scalar_index(col, IndexConfig("zonemap", {"rows_per_zone": RPZ}))
    return uri


def _index_dir(ds: lance.LanceDataset, name: str) -> str:
    u = next(d.segments[0].uuid for d in ds.describe_indices() if d.name == name)
    return os.path.join(ds.uri, "_indices", u)


def _store(path: str) -> IndexFiles:
    return IndexFiles(resolve_storage(path), path)


def _train(
    ds: lance.LanceDataset, col: str, params: dict[str, Any], path: str, chunk: int = 777
) -> IndexFiles:
    """lance_fw's train() over the live rows in row-address order, as the kernel feeds it."""
    os.makedirs(path, exist_ok=True)
    table = ds.to_table(columns=[col], with_row_address=True).rename_columns(["value", "_rowaddr"])
    store = _store(path)
    field = ds.schema.field(col)
    ZT.check(field, params)
    ZT.train(table.to_batches(max_chunksize=chunk), field, params, store)
    return store


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    """Equal, NaN equal to NaN."""
    la, lb = a.to_pylist(), b.to_pylist()
    return len(la) == len(lb) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and np.isnan(x) and np.isnan(y))
        for x, y in zip(la, lb)
    )


def _assert_same_zones(expected: pa.Table, got: pa.Table) -> None:
    assert got.schema.remove_metadata().equals(expected.schema.remove_metadata())
    for col in expected.column_names:
        assert _same(expected.column(col), got.column(col)), col


# --- files ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("col", COLUMNS)
def test_trained_zones_equal_pylances(indexed: str, col: str, tmp_path: Path) -> None:
    ds = lance.dataset(indexed)
    pylance_file = LanceFileReader(_index_dir(ds, f"{col}_idx") + "/zonemap.lance").read_all().to_table()
    store = _train(ds, col, {"rows_per_zone": RPZ}, str(tmp_path / "idx"))
    ours = store.read_table("zonemap.lance")
    _assert_same_zones(pylance_file, ours)
    assert pylance_file.num_rows == 30  # 10+10+... zones: 1000 live rows each, never across fragments
    assert store.schema_metadata("zonemap.lance") == {"rows_per_zone": str(RPZ)}
    # pylance reads lance_fw's file too
    theirs = LanceFileReader(str(tmp_path / "idx" / "zonemap.lance")).read_all().to_table()
    _assert_same_zones(pylance_file, theirs)


def test_default_zone_size_and_spans_over_deleted_rows(base: str, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    shutil.copytree(base, uri)
    ds = lance.dataset(uri)
    ds.create_scalar_index("i", "ZONEMAP")  # rows_per_zone: 8192
    ds = lance.dataset(uri)
    expected = LanceFileReader(_index_dir(ds, "i_idx") + "/zonemap.lance").read_all().to_table()
    ours = _train(ds, "i", {}, str(tmp_path / "idx"), chunk=4096).read_table("zonemap.lance")
    _assert_same_zones(expected, ours)
    # fragment 1 starts with deleted rows: its first zone starts at the first live offset
    frag1 = [z for z in ours.to_pylist() if z["fragment_id"] == 1]
    assert frag1[0]["zone_start"] == 50 and len(frag1) == 2


def test_float_edge_values_equal_pylances(tmp_path: Path) -> None:
    """-0.0 / 0.0 (total order), ±inf, NaN of both signs, all-NaN and all-null zones."""
    v = np.array([0.0, -0.0, -0.0, 0.0, np.inf, -np.inf, np.nan, np.nan, 1.0, -2.0, np.nan, 3.0, 5.0, 6.0])
    mask = np.zeros(len(v), bool)
    mask[[11, 12, 13]] = True
    t = pa.table({"f": pa.array(v, mask=mask), "h": pa.array(v.astype(np.float16), mask=mask)})
    ds = lance.write_dataset(t, str(tmp_path / "ds"))
    for col in ("f", "h"):
        ds.create_scalar_index(col, IndexConfig("zonemap", {"rows_per_zone": 2}))
        ds = lance.dataset(ds.uri)
        expected = LanceFileReader(_index_dir(ds, f"{col}_idx") + "/zonemap.lance").read_all().to_table()
        ours = _train(ds, col, {"rows_per_zone": 2}, str(tmp_path / col), chunk=3).read_table("zonemap.lance")
        _assert_same_zones(expected, ours)


# --- search on pylance's files ---------------------------------------------------------------------------

D = datetime.date(2020, 1, 1)
QUERIES: list[tuple[str, str, ScalarQuery]] = [
    ("i", "i = 5000", EqualsQuery(5000)),
    ("i", "i = 150", EqualsQuery(150)),  # a deleted row
    ("i", "i IN (3, 12000, 29999)", InQuery((3, 12000, 29999))),
    ("i", "i > 28500", RangeQuery(lower=28500, lower_inclusive=False)),
    ("i", "i BETWEEN 9000 AND 12000", RangeQuery(9000, True, 12000, True)),
    ("i", "i < 1000", RangeQuery(upper=1000, upper_inclusive=False)),
    ("i", "i IS NULL", IsNullQuery()),
    ("f", "f > 0.99", RangeQuery(lower=0.99, lower_inclusive=False)),
    ("f", "f = 0.5", EqualsQuery(0.5)),
    ("f", "f IS NULL", IsNullQuery()),
    ("f", "isnan(f)", EqualsQuery(float("nan"))),
    ("f32", "f32 < 0.001", RangeQuery(upper=0.001, upper_inclusive=False)),
    ("f32", "f32 >= 0.999", RangeQuery(lower=0.999)),
    ("s", "s = 's012345'", EqualsQuery("s012345")),
    ("s", "s >= 's029000'", RangeQuery(lower="s029000")),
    ("s", "s IN ('s000001', 's020000')", InQuery(("s000001", "s020000"))),
    ("s", "s LIKE 's0123%'", PrefixQuery("s0123")),
    ("s", "s IS NULL", IsNullQuery()),
    ("ls", "ls = 'k0005'", EqualsQuery("k0005")),
    ("b", "b = true", EqualsQuery(True)),
    ("b", "b IS NULL", IsNullQuery()),
    ("d", "d = date '2020-01-01'", EqualsQuery(D)),
    ("d", "d > date '1970-08-01'", RangeQuery(lower=datetime.date(1970, 8, 1), lower_inclusive=False)),
    (
        "ts",
        "ts < arrow_cast(500000000, 'Timestamp(Microsecond, None)')",
        RangeQuery(upper=datetime.datetime(1970, 1, 1, 0, 8, 20), upper_inclusive=False),
    ),
    ("dec", "dec = CAST(12.34 AS DECIMAL(12,2))", EqualsQuery(decimal.Decimal("12.34"))),
    ("dec", "dec > 290", RangeQuery(lower=decimal.Decimal(290), lower_inclusive=False)),
    ("bin", "bin = X'0102'", EqualsQuery(b"\x01\x02")),
    ("u8", "u8 = 255", EqualsQuery(255)),
    ("u8", "u8 > 250", RangeQuery(lower=250, lower_inclusive=False)),
    ("fsb", "fsb = X'0501'", EqualsQuery(b"\x05\x01")),
]


def _zone_rows(reader: ZoneMapReader, zone: int) -> set[int]:
    first = (int(reader.frag[zone]) << 32) | int(reader.start[zone])
    return set(range(first, first + int(reader.length[zone])))


@pytest.mark.parametrize(("col", "flt", "query"), QUERIES, ids=[q[1] for q in QUERIES])
def test_search_pylance_files_covers_pylances_matches(
    indexed: str, col: str, flt: str, query: ScalarQuery
) -> None:
    ds = lance.dataset(indexed)
    reader = ZT.load(_store(_index_dir(ds, f"{col}_idx")), ds.schema.field(col))
    assert reader.supports(query)
    result = reader.search(query)
    got = result.addresses
    assert not result.exact and got.dtype == np.uint64
    assert np.all(np.diff(got.astype(np.int64)) > 0)
    matches = set(ds.to_table(columns=[], filter=flt, with_row_address=True)["_rowaddr"].to_pylist())
    assert matches <= set(got.tolist())
    # the candidates are whole zones
    rows = set(got.tolist())
    kept = [z for z in range(reader.num_zones) if _zone_rows(reader, z) & rows]
    assert set().union(*(_zone_rows(reader, z) for z in kept)) == rows if kept else not rows
    if matches and col in ("i", "s", "d", "ts", "dec") and "NULL" not in flt:
        # sorted columns: only the zones that hold a match (no needless zone)
        assert all(_zone_rows(reader, z) & matches for z in kept)


def test_statistics_equal_pylances(indexed: str) -> None:
    ds = lance.dataset(indexed)
    for col in ("i", "s"):
        reader = ZT.load(_store(_index_dir(ds, f"{col}_idx")), ds.schema.field(col))
        assert reader.statistics() == ds.stats.index_stats(f"{col}_idx")["indices"][0]


# --- pylance uses lance_fw's files ------------------------------------------------------------------------


def _commit_ours(uri: str, col: str, params: dict[str, Any]) -> str:
    ds = lance.dataset(uri)
    u = str(uuid.uuid4())
    store = _train(ds, col, params, os.path.join(uri, "_indices", u))
    idx = lance.Index(
        uuid=u,
        name=f"{col}_idx",
        fields=[ds.lance_schema.field(col).id()],  # type: ignore[union-attr]
        dataset_version=ds.version,
        fragment_ids={f.fragment_id for f in ds.get_fragments()},  # type: ignore[arg-type]
        index_version=ZT.index_version,
        files=[lance.IndexFile(path=name, size_bytes=size) for name, size in store.written],
        index_details=(TYPE_URL, ZT.details(params)),
    )
    op = lance.LanceOperation.CreateIndex(new_indices=[idx], removed_indices=[])
    lance.LanceDataset.commit(uri, op, read_version=ds.version)
    return u


PYLANCE_FILTERS = [q[1] for q in QUERIES] + [
    "f < 0.01 OR i > 29000",
    "s LIKE 's02%' AND i < 25000",
    "i != 5000",
    "NOT (s = 's000001')",
    "i IS NOT NULL AND i < 300",
    "NOT (f > 0.5)",
]


def test_pylance_uses_lance_fw_index(base: str, indexed: str, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    shutil.copytree(base, uri)
    plain = lance.dataset(base)
    for col in COLUMNS:
        _commit_ours(uri, col, {"rows_per_zone": RPZ})
    ds = lance.dataset(uri)
    assert {d.name: d.type_url for d in ds.describe_indices()} == {f"{c}_idx": TYPE_URL for c in COLUMNS}
    assert ds.stats.index_stats("i_idx")["indices"][0] == {"num_zones": 30, "rows_per_zone": RPZ}
    indexable = {q[1] for q in QUERIES} - {"isnan(f)"}
    for flt in PYLANCE_FILTERS:
        plan = ds.scanner(filter=flt).explain_plan()
        pylance_plan = lance.dataset(indexed).scanner(filter=flt).explain_plan()
        assert ("ScalarIndexQuery" in plan) == ("ScalarIndexQuery" in pylance_plan), flt
        assert ("(ZoneMap)" in plan) == ("(ZoneMap)" in pylance_plan), flt
        if flt in indexable:
            assert "(ZoneMap)" in plan, flt
        got = ds.to_table(columns=["i", "s"], filter=flt, with_row_address=True)
        want = plain.to_table(columns=["i", "s"], filter=flt, with_row_address=True)
        assert got.sort_by("_rowaddr").equals(want.sort_by("_rowaddr")), flt


def test_pylance_updates_lance_fw_index_after_append(base: str, tmp_path: Path) -> None:
    """8192-row zones (default) and use_seeds: pylance appends, optimize_indices merges new zones into
    lance_fw's index, and lance_fw then answers from pylance's updated files."""
    uri = str(tmp_path / "ds")
    shutil.copytree(base, uri)
    _commit_ours(uri, "i", {})
    _commit_ours(uri, "s", {"use_seeds": True})
    ds = lance.write_dataset(_data().slice(0, 5000), uri, mode="append")
    ds.optimize.optimize_indices()
    ds = lance.dataset(uri)
    assert ds.stats.index_stats("i_idx")["num_unindexed_rows"] == 0
    assert ds.stats.index_stats("i_idx")["indices"][0] == {"num_zones": 6, "rows_per_zone": 8192}
    table = ds.to_table(columns=["i", "s"], with_row_address=True)
    for col, flt, query in [
        ("i", "i < 300", RangeQuery(upper=300, upper_inclusive=False)),
        ("s", "s = 's000010'", EqualsQuery("s000010")),
        ("i", "i IS NULL", IsNullQuery()),
    ]:
        assert "(ZoneMap)" in ds.scanner(filter=flt).explain_plan()
        want = ds.to_table(columns=[], filter=flt, with_row_address=True)["_rowaddr"].to_pylist()
        assert (
            len(want)
            == lance.dataset(base).count_rows(flt)
            + _data()
            .slice(0, 5000)
            .filter(pc.field(col).is_null() if "NULL" in flt else _arrow_filter(flt))
            .num_rows
        )
        reader = ZT.load(_store(_index_dir(ds, f"{col}_idx")), ds.schema.field(col))
        assert set(want) <= set(reader.search(query).addresses.tolist())
    assert table.num_rows == lance.dataset(base).count_rows() + 5000


def _arrow_filter(flt: str) -> Any:
    f = pc.field
    return {"i < 300": f("i") < 300, "s = 's000010'": f("s") == "s000010"}[flt]


# --- float semantics: no missed match under IEEE or total order ----------------------------------------


def test_float_queries_never_miss(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    v = np.round(rng.normal(size=4000), 1)
    v[rng.integers(0, 4000, 40)] = np.nan
    v[rng.integers(0, 4000, 10)] = -np.nan  # sign bit set: below everything in a total order
    v[rng.integers(0, 4000, 10)] = -0.0
    v[rng.integers(0, 4000, 10)] = np.inf
    v[rng.integers(0, 4000, 10)] = -np.inf
    mask = rng.random(4000) < 0.05
    arrow = pa.array(v, mask=mask)
    addr = np.arange(4000, dtype=np.uint64)
    store = _store(str(tmp_path))
    field = pa.field("f", pa.float64())
    ZT.train(
        pa.table({"value": arrow, "_rowaddr": addr}).to_batches(max_chunksize=300),
        field,
        {"rows_per_zone": 64},
        store,
    )
    reader = ZT.load(store, field)
    valid = ~mask
    nan = np.isnan(v) & valid
    queries: list[Any] = [0.0, -0.0, 1.5, 0.1, np.inf, -np.inf, 2, 10**400, decimal.Decimal("0.3"), np.nan]
    for q in queries:
        got = set(reader.search(EqualsQuery(q)).addresses.tolist())
        if isinstance(q, float) and np.isnan(q):
            want = nan
        else:
            qf = float(q) if not isinstance(q, int) or abs(q) < 1e300 else np.inf
            want = valid & ((v == qf) | (v.astype(np.float32) == np.float32(qf)))
        assert set(np.flatnonzero(want).tolist()) <= got, q
        for lo, hi in [(q, None), (None, q), (q, q)]:
            for inc in (True, False):
                got = set(reader.search(RangeQuery(lo, inc, hi, inc)).addresses.tolist())
                with np.errstate(invalid="ignore"):
                    qf = float(q) if not isinstance(q, int) or abs(q) < 1e300 else np.inf
                    ok = valid.copy()
                    if lo is not None:
                        ok &= (v >= qf) if inc else (v > qf)
                    if hi is not None:
                        ok &= (v <= qf) if inc else (v < qf)
                # a total order puts NaN above and -NaN below everything: never miss those either
                neg = nan & np.signbit(v)
                total = ok | (nan & ~neg & (hi is None)) | (neg & (lo is None))
                assert set(np.flatnonzero(total).tolist()) <= got, (lo, hi, inc)
    assert set(np.flatnonzero(mask).tolist()) <= set(reader.search(IsNullQuery()).addresses.tolist())


def test_int_query_values_are_coerced_without_missing(tmp_path: Path) -> None:
    vals = np.arange(-500, 500, dtype=np.int64)
    store = _store(str(tmp_path))
    field = pa.field("x", pa.int16())
    ZT.train(
        [
            pa.record_batch(
                {"value": pa.array(vals, pa.int16()), "_rowaddr": pa.array(np.arange(1000, dtype=np.uint64))}
            )
        ],
        field,
        {"rows_per_zone": 100},
        store,
    )
    reader = ZT.load(store, field)
    assert len(reader.search(EqualsQuery(2.5)).addresses) == 100  # 2 and 3 share a zone
    assert len(reader.search(EqualsQuery(-100.5)).addresses) == 200  # -101 | -100 straddle zones
    assert len(reader.search(EqualsQuery(10**6)).addresses) <= 100
    assert len(reader.search(RangeQuery(lower=10**6)).addresses) <= 100
    assert len(reader.search(RangeQuery(upper=-(10**6))).addresses) <= 100
    assert len(reader.search(EqualsQuery("7")).addresses) == 1000  # cannot compare: every zone
    assert len(reader.search(RangeQuery(lower=399, lower_inclusive=False)).addresses) == 100
    assert len(reader.search(RangeQuery(lower=399)).addresses) == 200


# --- refusals ------------------------------------------------------------------------------------------


def test_check_refuses_unsupported_types_and_params() -> None:
    for t in (
        pa.list_(pa.int32()),
        pa.struct([("a", pa.int32())]),
        pa.dictionary(pa.int32(), pa.string()),
        pa.null(),
    ):
        with pytest.raises(UnsupportedFeatureError, match="ZONEMAP"):
            ZT.check(pa.field("c", t), {})
    with pytest.raises(InvalidArgumentError, match="bogus"):
        ZT.check(pa.field("c", pa.int32()), {"bogus": 1})
    for bad in (0, -1, "10", True, 1.5):
        with pytest.raises(InvalidArgumentError, match="rows_per_zone"):
            ZT.check(pa.field("c", pa.int32()), {"rows_per_zone": bad})
    with pytest.raises(InvalidArgumentError, match="use_seeds"):
        ZT.check(pa.field("c", pa.int32()), {"use_seeds": "yes"})


def test_load_refuses_a_directory_without_a_zone_map(tmp_path: Path) -> None:
    with pytest.raises(CorruptFileError, match=r"zonemap\.lance"):
        ZT.load(_store(str(tmp_path)), pa.field("c", pa.int32()))


def test_details_bytes(indexed: str) -> None:
    # pylance: rows_per_zone, use_seeds (false for ints), has_null_bitmap (true: it writes the bitmap)
    assert ZT.details({"rows_per_zone": RPZ}) == b"\x08\xe8\x07\x10\x00\x18\x00"
    assert ZT.details({}) == b"\x08\x80\x40\x10\x00\x18\x00"


# --- more column types, tiny zones ------------------------------------------------------------------------


def _typed() -> pa.Table:
    x = np.arange(40)
    nulls = x % 11 == 5
    base = datetime.datetime(2024, 3, 1, 12, 0, 0)
    return pa.table(
        {
            "i8": pa.array((x * 7 % 50 - 25).astype(np.int8), mask=nulls),
            "u64": pa.array(np.where(x == 3, 2**64 - 1, x).astype(np.uint64)),
            "h": pa.array((x / 4).astype(np.float16), mask=nulls),
            "tz": pa.array(
                [base + datetime.timedelta(minutes=int(i)) for i in x], pa.timestamp("ns", tz="UTC")
            ),
            "t32": pa.array((x * 1000).astype(np.int32), pa.time32("ms")),
            "dur": pa.array(x.astype(np.int64), pa.duration("s")),
            "d64": pa.array((x * 86_400_000).astype(np.int64), pa.date64()),
            "lb": pa.array([bytes([40 - i]) * 2 for i in x], pa.large_binary(), mask=nulls),
            "b": pa.array(x % 5 == 0, mask=x > 30),
        }
    )


def test_more_types_equal_pylance_and_cover_its_matches(tmp_path: Path) -> None:
    ds = lance.write_dataset(_typed(), str(tmp_path / "ds"), max_rows_per_file=16)
    ds.delete("dur >= arrow_cast(14, 'Duration(Second)') and dur < arrow_cast(18, 'Duration(Second)')")
    ds = lance.dataset(ds.uri)
    table = ds.to_table(with_row_address=True)
    for col in _typed().column_names:
        ds.create_scalar_index(col, IndexConfig("zonemap", {"rows_per_zone": 3}))
        ds = lance.dataset(ds.uri)
        path = _index_dir(ds, f"{col}_idx")
        expected = LanceFileReader(path + "/zonemap.lance").read_all().to_table()
        ours = _train(ds, col, {"rows_per_zone": 3}, str(tmp_path / col), chunk=5).read_table("zonemap.lance")
        _assert_same_zones(expected, ours)
        reader = ZT.load(_store(path), ds.schema.field(col))
        values = table.column(col)
        addrs = table.column("_rowaddr").to_pylist()
        for k in (0, 7, 20, 33):
            v = values[k].as_py()
            if v is None:
                continue
            same = [a for a, w in zip(addrs, values.to_pylist()) if w == v]
            got = set(reader.search(EqualsQuery(v)).addresses.tolist())
            assert set(same) <= got, (col, v)
            above = [a for a, w in zip(addrs, values.to_pylist()) if w is not None and w > v]
            got = set(reader.search(RangeQuery(lower=v, lower_inclusive=False)).addresses.tolist())
            assert set(above) <= got, (col, v)


def test_tz_mismatch_keeps_every_zone(tmp_path: Path) -> None:
    field = pa.field("t", pa.timestamp("us", tz="UTC"))
    vals = pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)] * 10, field.type)
    store = _store(str(tmp_path))
    batch = pa.record_batch({"value": vals, "_rowaddr": pa.array(np.arange(10, dtype=np.uint64))})
    ZT.train([batch], field, {"rows_per_zone": 2}, store)
    reader = ZT.load(store, field)
    naive = datetime.datetime(2030, 1, 1)
    assert len(reader.search(EqualsQuery(naive)).addresses) == 10  # not comparable: kept
    aware = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    assert len(reader.search(EqualsQuery(aware)).addresses) == 0


def test_empty_training_writes_an_empty_zone_map(tmp_path: Path) -> None:
    store = _store(str(tmp_path))
    ZT.train([], pa.field("c", pa.string()), {}, store)
    reader = ZT.load(store, pa.field("c", pa.string()))
    assert reader.statistics() == {"num_zones": 0, "rows_per_zone": 8192}
    assert len(reader.search(EqualsQuery("a")).addresses) == 0


def test_unordered_training_input_is_refused(tmp_path: Path) -> None:
    batch = pa.record_batch({"value": pa.array([1, 2]), "_rowaddr": pa.array([5, 4], pa.uint64())})
    with pytest.raises(InvalidArgumentError, match="increasing"):
        ZT.train([batch], pa.field("c", pa.int64()), {}, _store(str(tmp_path)))
