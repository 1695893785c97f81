"""BTREE scalar index plugin vs pylance 14, both ways.

* lance_fw ``load()``/``search()`` of the files pylance's ``create_scalar_index(col, "BTREE")``
  writes must give exactly the row addresses of pylance's unindexed filter (addresses of rows
  deleted after the build may come back: the kernel drops them, so live addresses are compared).
* files lance_fw's ``train()`` writes, committed with pylance's own ``CreateIndex``, must be used by
  pylance (``ScalarIndexQuery`` in the plan) with exact results and the same statistics.
Data crosses 4096-row pages and several fragments, with nulls, NaN, -0.0 and deletions.
"""

from __future__ import annotations

import datetime
import decimal
import os
import uuid
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
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
from lance_fw.table.index_files import IndexFiles, index_dir
from lance_fw_plugins.index_btree import BTreeIndexType

N = 14_000
ROWS_PER_FILE = 4_500
BTREE = BTreeIndexType()
EPOCH = datetime.date(1970, 1, 1)


def _table(n: int = N, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-3000, 3000, n)
    null = rng.random(n) < 0.08
    floats = rng.normal(size=n).round(2)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf])
    pick = rng.random(n) < 0.05
    floats[pick] = rng.choice(specials, pick.sum())
    days = rng.integers(17000, 17400, n).astype(np.int32)
    micros = rng.integers(1_500_000_000_000_000, 1_500_000_500_000_000, n)
    words = np.array(["apple", "apricot", "banana", "band", "bandana", "", "ß-straße", "zz", "b"])
    strings = [f"{words[i % len(words)]}{v}" for i, v in enumerate(rng.integers(0, 500, n))]
    return pa.table(
        {
            "i": pa.array(ints, pa.int64(), mask=null),
            "i32": pa.array(rng.integers(0, 50, n).astype(np.int32)),
            "f": pa.array(floats, pa.float64(), mask=rng.random(n) < 0.03),
            "s": pa.array(strings, pa.string(), mask=rng.random(n) < 0.05),
            "d": pa.array(days, pa.date32()),
            "ts": pa.array(micros, pa.timestamp("us"), mask=rng.random(n) < 0.02),
            "b": pa.array(rng.random(n) < 0.3, mask=rng.random(n) < 0.1),
        }
    )


def _sql(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        if np.isnan(value):
            return "'-NaN'::double" if np.signbit(value) else "'NaN'::double"
        if np.isinf(value):
            return "'-inf'::double" if value < 0 else "'inf'::double"
        return repr(value)
    if isinstance(value, datetime.datetime):
        return f"timestamp '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"date '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"{value}"
    return str(value)


def _filter(col: str, q: ScalarQuery) -> str:
    if isinstance(q, EqualsQuery):
        return f"{col} = {_sql(q.value)}"
    if isinstance(q, InQuery):
        return f"{col} IN ({', '.join(_sql(v) for v in q.values)})"
    if isinstance(q, IsNullQuery):
        return f"{col} IS NULL"
    if isinstance(q, PrefixQuery):
        return f"{col} LIKE {_sql(q.prefix + '%')}"
    assert isinstance(q, RangeQuery)
    parts = []
    if q.lower is not None:
        parts.append(f"{col} {'>=' if q.lower_inclusive else '>'} {_sql(q.lower)}")
    if q.upper is not None:
        parts.append(f"{col} {'<=' if q.upper_inclusive else '<'} {_sql(q.upper)}")
    return " AND ".join(parts)


def _queries(values: list[Any]) -> list[ScalarQuery]:
    """Points that exist and that do not, IN lists, closed/open/one-sided ranges, IS NULL."""
    present = sorted({v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))})
    lo, mid, hi = present[len(present) // 5], present[len(present) // 2], present[4 * len(present) // 5]
    qs: list[ScalarQuery] = [
        EqualsQuery(mid),
        EqualsQuery(present[0]),
        EqualsQuery(present[-1]),
        InQuery((lo, mid, hi, present[-1])),
        RangeQuery(lo, True, hi, True),
        RangeQuery(lo, False, hi, False),
        RangeQuery(lower=mid),
        RangeQuery(lower=mid, lower_inclusive=False),
        RangeQuery(upper=mid),
        RangeQuery(upper=mid, upper_inclusive=False),
        RangeQuery(hi, True, lo, True),  # empty
        IsNullQuery(),
    ]
    if isinstance(mid, int) and not isinstance(mid, bool):
        qs += [EqualsQuery(mid + 100_000), RangeQuery(lower=present[-1] + 1)]
    if isinstance(mid, str):
        qs += [PrefixQuery("ban"), PrefixQuery("b"), PrefixQuery("zz4"), PrefixQuery("nope"), PrefixQuery("")]
        qs += [EqualsQuery("no such value")]
    if isinstance(mid, float):
        qs += [
            EqualsQuery(0.0),
            EqualsQuery(-0.0),
            EqualsQuery(float("nan")),
            EqualsQuery(float("inf")),
            RangeQuery(upper=0.0, upper_inclusive=False),
            RangeQuery(lower=-0.0),
            RangeQuery(lower=1.0, upper=float("inf")),
            RangeQuery(lower=float("-inf"), upper_inclusive=False, upper=-1.0),
            InQuery((0.0, 1.5, float("nan"))),
        ]
    return qs


def _addresses(ds: lance.LanceDataset, expr: str) -> np.ndarray:
    table = ds.scanner(columns=[], filter=expr, with_row_address=True, use_scalar_index=False).to_table()
    return np.sort(table["_rowaddr"].to_numpy())


def _live(ds: lance.LanceDataset) -> np.ndarray:
    return np.sort(ds.to_table(columns=[], with_row_address=True)["_rowaddr"].to_numpy())


def _pylance_index(ds: lance.LanceDataset, col: str, **kwargs: Any) -> IndexFiles:
    before = (
        set(os.listdir(os.path.join(ds.uri, "_indices")))
        if os.path.isdir(os.path.join(ds.uri, "_indices"))
        else set()
    )
    ds.create_scalar_index(col, "BTREE", name=f"{col}_idx", **kwargs)
    (new,) = set(os.listdir(os.path.join(ds.uri, "_indices"))) - before
    return IndexFiles(resolve_storage(ds.uri), index_dir(ds.uri, new))


@pytest.fixture(scope="module")
def pylance_built(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lance.LanceDataset, dict[str, IndexFiles]]:
    """pylance's BTREE on every column, then rows deleted (the index still names them)."""
    uri = str(tmp_path_factory.mktemp("btree") / "ds")
    lance.write_dataset(_table(), uri, max_rows_per_file=ROWS_PER_FILE)
    ds = lance.dataset(uri)
    stores = {col: _pylance_index(ds, col) for col in ds.schema.names}
    ds.delete("i32 = 7 OR i32 = 11")
    return lance.dataset(uri), stores


@pytest.mark.parametrize("col", ["i", "i32", "f", "s", "d", "ts", "b"])
def test_search_of_pylance_files_equals_pylance_filter(
    pylance_built: tuple[lance.LanceDataset, dict[str, IndexFiles]], col: str
) -> None:
    ds, stores = pylance_built
    assert len(ds.get_fragments()) >= 3 and ds.count_rows() > 3 * 4096
    reader = BTREE.load(stores[col], ds.schema.field(col))
    live = _live(ds)
    values = ds.to_table(columns=[col])[col].to_pylist()
    for q in _queries(values):
        assert reader.supports(q), q
        result = reader.search(q)
        assert result.exact and result.addresses.dtype == np.uint64
        assert np.all(np.diff(result.addresses.astype(np.int64)) > 0) or len(result.addresses) < 2
        got = np.intersect1d(result.addresses, live)
        expected = _addresses(ds, _filter(col, q))
        assert np.array_equal(got, expected), (q, len(got), len(expected))


def test_statistics_equal_pylance_index_stats(
    pylance_built: tuple[lance.LanceDataset, dict[str, IndexFiles]],
) -> None:
    ds, stores = pylance_built
    for col, store in stores.items():
        reader = BTREE.load(store, ds.schema.field(col))
        assert reader.statistics() == ds.stats.index_stats(f"{col}_idx")["indices"][0], col


def _commit_lance_fw_index(
    uri: str, col: str, params: dict[str, Any] | None = None
) -> tuple[lance.LanceDataset, IndexFiles]:
    """Train lance_fw's BTREE over ``col`` and commit it with pylance's own CreateIndex."""
    ds = lance.dataset(uri)
    table = ds.to_table(columns=[col], with_row_address=True).rename_columns(["value", "_rowaddr"])
    index_uuid = str(uuid.uuid4())
    store = IndexFiles(resolve_storage(uri), index_dir(uri, index_uuid))
    BTREE.check(ds.schema.field(col), params or {})
    BTREE.train(table.to_batches(max_chunksize=3000), ds.schema.field(col), params or {}, store)
    index = lance.Index(
        uuid=index_uuid,
        name=f"{col}_idx",
        fields=[ds.schema.get_field_index(col)],
        dataset_version=ds.version,
        fragment_ids={f.fragment_id for f in ds.get_fragments()},  # type: ignore[arg-type]
        index_version=BTREE.index_version,
        index_details=(BTREE.type_url, BTREE.details(params or {})),
    )
    op = lance.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[])
    return lance.LanceDataset.commit(uri, op, read_version=ds.version), store


@pytest.mark.parametrize("col", ["i", "f", "s", "d", "ts", "b"])
def test_pylance_uses_lance_fw_trained_files(tmp_path: Any, col: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(seed=3), uri, max_rows_per_file=ROWS_PER_FILE)
    lance.dataset(uri).delete("i32 < 5")  # deleted rows are not handed to train()
    ds, store = _commit_lance_fw_index(uri, col)
    values = ds.to_table(columns=[col])[col].to_pylist()
    for q in _queries(values):
        expr = _filter(col, q)
        if isinstance(q, RangeQuery) and q.lower is not None and q.upper is not None and q.lower > q.upper:
            continue
        plan = ds.scanner(columns=[], filter=expr).explain_plan()
        if q != PrefixQuery(""):  # pylance rewrites LIKE '%' as IS NOT NULL
            assert "ScalarIndexQuery" in plan, (expr, plan)
        got = np.sort(ds.to_table(columns=[], filter=expr, with_row_address=True)["_rowaddr"].to_numpy())
        assert np.array_equal(got, _addresses(ds, expr)), expr

    # the same files pylance writes, but for the order of equal values
    ref_uri = str(tmp_path / "ref")
    lance.write_dataset(ds.to_table(), ref_uri)
    ref = lance.dataset(uri)
    ref_store = _pylance_index(lance.dataset(ref_uri), col)
    _assert_same(store.read_table("page_lookup.lance"), ref_store.read_table("page_lookup.lance"))
    assert store.schema_metadata("page_lookup.lance") == ref_store.schema_metadata("page_lookup.lance")
    mine, theirs = store.read_table("page_data.lance"), ref_store.read_table("page_data.lance")
    assert mine.schema == theirs.schema
    _assert_same(mine.select(["values"]), theirs.select(["values"]))
    assert (
        BTREE.load(store, ref.schema.field(col)).statistics()
        == ds.stats.index_stats(f"{col}_idx")["indices"][0]
    )


def _assert_same(a: pa.Table, b: pa.Table) -> None:
    """Equal tables, NaN equal to NaN of the same sign (bitwise for floats)."""
    assert a.schema == b.schema
    for x, y in zip(a.columns, b.columns, strict=True):
        x, y = x.combine_chunks(), y.combine_chunks()
        if pa.types.is_floating(x.type):
            assert x.is_valid().equals(y.is_valid())
            bits = [np.asarray(v.fill_null(0).to_numpy(), np.float64).view(np.int64) for v in (x, y)]
            assert np.array_equal(bits[0], bits[1])
        else:
            assert x.equals(y)


def test_zone_size_sets_the_page_size_as_pylance_does(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": pa.array(np.arange(5000)[::-1])}), uri)
    ds, store = _commit_lance_fw_index(uri, "x", {"zone_size": 1000})
    assert store.schema_metadata("page_lookup.lance") == {"batch_size": "1000", "range_partitioned": "false"}
    assert ds.stats.index_stats("x_idx")["indices"][0] == {"min": "0", "max": "4999", "num_pages": 5}
    assert ds.to_table(filter="x = 2500")["x"].to_pylist() == [2500]
    reader = BTREE.load(store, ds.schema.field("x"))
    assert reader.search(RangeQuery(999, True, 1001, False)).addresses.tolist() == [3999, 4000]
    # pylance's own zone_size index (IndexConfig is how pylance 14 passes BTREE parameters)
    ref_uri = str(tmp_path / "ref")
    ref = lance.write_dataset(pa.table({"x": pa.array(np.arange(5000)[::-1])}), ref_uri)
    before = (
        set(os.listdir(os.path.join(ref_uri, "_indices")))
        if os.path.isdir(os.path.join(ref_uri, "_indices"))
        else set()
    )
    ref.create_scalar_index("x", IndexConfig("btree", {"zone_size": 1000}))
    (new,) = set(os.listdir(os.path.join(ref_uri, "_indices"))) - before
    ref_store = IndexFiles(resolve_storage(ref_uri), index_dir(ref_uri, new))
    assert ref_store.schema_metadata("page_lookup.lance") == store.schema_metadata("page_lookup.lance")
    ref_reader = BTREE.load(ref_store, ds.schema.field("x"))
    assert ref_reader.search(RangeQuery(999, True, 1001, False)).addresses.tolist() == [3999, 4000]
    assert ref_reader.statistics() == reader.statistics()


def test_refuses_unsupported_types_and_parameters() -> None:
    for t in (pa.list_(pa.int32()), pa.struct([("a", pa.int32())]), pa.month_day_nano_interval(), pa.null()):
        with pytest.raises(UnsupportedFeatureError):
            BTREE.check(pa.field("c", t), {})
    for params in (
        {"range_id": 0},
        {"batch_size": 10},
        {"zone_size": 0},
        {"zone_size": "7"},
        {"zone_size": True},
    ):
        with pytest.raises(InvalidArgumentError):
            BTREE.check(pa.field("c", pa.int64()), params)
    BTREE.check(pa.field("c", pa.int64()), {"zone_size": 128})


class _CountingStore(IndexFiles):
    """Counts the rows each ``take_rows`` / ``read_range`` asks for."""

    taken: list[int]
    with_values: list[int]

    def take_rows(self, name: str, rows: np.ndarray, columns: Any = None) -> pa.Table:
        self.taken.append(len(rows))
        if columns is None or "values" in columns:
            self.with_values.append(len(rows))
        return super().take_rows(name, rows, columns)

    def read_range(self, name: str, start: int, stop: int, columns: Any = None) -> pa.Table:
        self.taken.append(stop - start)
        if columns is None or "values" in columns:
            self.with_values.append(stop - start)
        return super().read_range(name, start, stop, columns)


def test_point_lookup_reads_one_page_and_coerces_literals(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    n = 60_000
    lance.write_dataset(pa.table({"x": pa.array(np.arange(n) * 2)}), uri, max_rows_per_file=25_000)
    ds = lance.dataset(uri)
    store = _pylance_index(ds, "x")
    counting = _CountingStore(store.storage, store.directory)
    counting.taken, counting.with_values = [], []
    reader = BTREE.load(counting, ds.schema.field("x"))
    assert counting.taken == []  # loading reads the lookup only
    assert reader.search(EqualsQuery(30_000)).addresses.tolist() == [15_000]
    assert counting.taken == [4096]
    # the same lookup again: its page is in the opened index's page cache (as in pylance's)
    assert reader.search(EqualsQuery(30_000)).addresses.tolist() == [15_000]
    assert counting.taken == [4096]
    # a float literal on an int column: exact meaning, no crash
    assert reader.search(EqualsQuery(5.5)).addresses.tolist() == []
    assert reader.search(EqualsQuery(6.0)).addresses.tolist() == [3]
    assert reader.search(RangeQuery(3.5, True, 8.5, False)).addresses.tolist() == [2, 3, 4]
    assert reader.search(RangeQuery(lower=2**80)).addresses.tolist() == []
    assert len(reader.search(RangeQuery(upper=2**80)).addresses) == n
    assert reader.search(EqualsQuery(-(2**70))).addresses.tolist() == []
    assert reader.search(RangeQuery(lower=float("nan"))).addresses.tolist() == []
    assert not reader.supports(EqualsQuery("12")) and not reader.supports(PrefixQuery("1"))
    with pytest.raises(UnsupportedFeatureError):
        reader.search(EqualsQuery("12"))
    # a wide range reads the ids of the pages wholly inside it, values only at its two ends
    reader = BTREE.load(counting, ds.schema.field("x"))  # a cold page cache
    counting.taken, counting.with_values = [], []
    got = reader.search(RangeQuery(lower=1001, upper=100_001)).addresses
    rows = np.arange(501, 50_001)
    assert got.tolist() == ((rows // 25_000) << 32 | rows % 25_000).tolist()
    assert sum(counting.with_values) == 2 * 4096  # the first and last page
    assert sum(counting.taken) == 13 * 4096


def test_temporal_and_decimal_literals(tmp_path: Any) -> None:
    """Literals of another Python type than the column's (aware datetimes on a UTC ns column,
    ints on a decimal column): expected rows from pyarrow's own comparison of pylance's rows."""
    uri = str(tmp_path / "ds")
    n = 9000
    ts = pa.array(np.arange(n, dtype=np.int64) * 1_000_000_007, pa.timestamp("ns", tz="UTC"))
    dec = pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(12, 2))
    d64 = pa.array(np.arange(n) * 86_400_000, pa.date64())
    lance.write_dataset(pa.table({"ts": ts, "dec": dec, "d64": d64}), uri, max_rows_per_file=4000)
    ds = lance.dataset(uri)
    stores = {col: _pylance_index(ds, col) for col in ("ts", "dec", "d64")}
    ds = lance.dataset(uri)
    rows = ds.to_table(with_row_address=True)
    utc = datetime.UTC
    cases = [
        (
            "ts",
            RangeQuery(datetime.datetime(1970, 1, 1, 0, 10, tzinfo=utc), True, None),
            pc.greater_equal,
            600,
        ),
        ("ts", EqualsQuery(ts[77].as_py()), pc.equal, ts[77]),
        ("dec", RangeQuery(decimal.Decimal("10.25"), False, 20, True), None, (42, 81)),
        ("dec", EqualsQuery(decimal.Decimal("1.5")), None, (6, 7)),
        ("dec", EqualsQuery(1.25), None, (5, 6)),
        ("dec", InQuery((decimal.Decimal("2.25"), decimal.Decimal("2.26"), 3)), None, None),
        (
            "d64",
            RangeQuery(datetime.date(1970, 2, 1), True, datetime.date(1970, 3, 1), False),
            None,
            (31, 59),
        ),
    ]
    for col, q, op, arg in cases:
        reader = BTREE.load(stores[col], ds.schema.field(col))
        got = reader.search(q).addresses
        if col == "ts" and op is pc.greater_equal:
            expected_rows = np.arange(n)[np.arange(n, dtype=np.int64) * 1_000_000_007 >= 600 * 10**9]
        elif col == "ts":
            expected_rows = np.array([77])
        elif arg is None:  # the IN case: 2.25 -> row 9, 3 -> row 12
            expected_rows = np.array([9, 12])
        else:
            expected_rows = np.arange(*arg)
        addr = rows["_rowaddr"].to_numpy()
        expected = np.sort(addr[expected_rows])
        assert np.array_equal(got, expected), (col, q, len(got), len(expected))
        assert reader.statistics() == ds.stats.index_stats(f"{col}_idx")["indices"][0]


def test_empty_and_all_null_indices(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": pa.array([None] * 9000, pa.int64())}), uri)
    ds, store = _commit_lance_fw_index(uri, "x")
    assert ds.stats.index_stats("x_idx")["indices"][0] == {"min": "N/A", "max": "N/A", "num_pages": 3}
    reader = BTREE.load(store, ds.schema.field("x"))
    assert reader.statistics() == {"min": "N/A", "max": "N/A", "num_pages": 3}
    assert len(reader.search(IsNullQuery()).addresses) == 9000
    assert reader.search(RangeQuery(lower=0)).addresses.tolist() == []
    assert ds.to_table(filter="x IS NULL").num_rows == 9000

    empty = IndexFiles(resolve_storage(uri), index_dir(uri, str(uuid.uuid4())))
    BTREE.train([], pa.field("x", pa.int64()), {}, empty)
    reader = BTREE.load(empty, pa.field("x", pa.int64()))
    assert reader.statistics() == {}
    assert reader.search(EqualsQuery(1)).addresses.tolist() == []
    assert reader.search(IsNullQuery()).addresses.tolist() == []


_F32 = float(np.float32(0.1))
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
OTHER_TYPES: dict[str, tuple[pa.Array, list[tuple[ScalarQuery, str]]]] = {
    "f32": (
        pa.array(np.array([0.1, 0.5, 0.25, np.nan, -0.0, 0.0, 1e30] * 1500, np.float32)),
        [
            (RangeQuery(upper=0.1), "x <= 0.1"),  # pylance rounds the literal to float32
            (EqualsQuery(0.1), "x = 0.1"),
            (EqualsQuery(_F32), f"x = {_F32!r}"),
            (RangeQuery(lower=0.1, lower_inclusive=False), "x > 0.1"),
            (EqualsQuery(0.0), "x = 0"),
            (RangeQuery(lower=1.0), "x >= 1.0"),
        ],
    ),
    "f16": (
        pa.array(
            np.array([0.1, 3.14159, -65504, np.nan, 0] * 2000, np.float16), mask=np.arange(10_000) % 5 == 4
        ),
        [(RangeQuery(lower=0.0), "x >= 0.0"), (IsNullQuery(), "x IS NULL")],
    ),
    "timestamp_tz": (
        pa.array(np.arange(9000, dtype=np.int64) * 1_000_000_007, pa.timestamp("ns", tz="UTC")),
        [
            (
                RangeQuery(lower=datetime.datetime(1970, 1, 1, 0, 10, tzinfo=datetime.UTC)),
                "x >= arrow_cast('1970-01-01T00:10:00Z', 'Timestamp(Nanosecond, Some(\"UTC\"))')",
            ),
            (
                RangeQuery(
                    lower=600_000_000_000 // 10**3 * datetime.timedelta(microseconds=1) + _EPOCH_UTC,
                    lower_inclusive=False,
                ),
                "x > to_timestamp_nanos(600000000000)",
            ),
        ],
    ),
    "decimal": (
        pa.array([decimal.Decimal(i) / 4 for i in range(9000)], pa.decimal128(12, 2)),
        [(EqualsQuery(decimal.Decimal("1.5")), "x = arrow_cast(1.5, 'Decimal128(12, 2)')")],
    ),
    "time64": (
        pa.array(np.arange(9000, dtype=np.int64) * 1000, pa.time64("us")),
        [
            (
                RangeQuery(lower=datetime.time(0, 0, 5), lower_inclusive=False),
                "x > arrow_cast('00:00:05', 'Time64(Microsecond)')",
            )
        ],
    ),
    "duration": (
        pa.array(np.arange(9000, dtype=np.int64), pa.duration("ms")),
        [
            (
                RangeQuery(lower=datetime.timedelta(seconds=5), lower_inclusive=False),
                "x > arrow_cast(5000, 'Duration(Millisecond)')",
            )
        ],
    ),
    "u64": (
        pa.array(np.array([2**64 - 1, 2**63, 5, 0] * 2500, np.uint64)),
        [
            (EqualsQuery(2**64 - 1), f"x = {2**64 - 1}"),
            (RangeQuery(lower=2**63), f"x >= {2**63}"),
            (RangeQuery(lower=5, upper=2**63, upper_inclusive=False), f"x >= 5 AND x < {2**63}"),
        ],
    ),
    "i8": (
        pa.array(np.array([-128, 127, 0, 5] * 2500, np.int8)),
        [(RangeQuery(lower=100), "x >= 100"), (InQuery((-128, 5)), "x IN (-128, 5)")],
    ),
    "large_string": (
        pa.array(["a", "b", "bc", None, "é"] * 2000, pa.large_string()),
        [
            (EqualsQuery("b"), "x = 'b'"),
            (PrefixQuery("b"), "x LIKE 'b%'"),
            (RangeQuery(lower="b", upper="é", upper_inclusive=False), "x >= 'b' AND x < 'é'"),
        ],
    ),
    "binary": (
        pa.array([b"\x00\x01", b"ab", b"", None, b"abc"] * 2000, pa.binary()),
        [
            (EqualsQuery(b"ab"), "x = X'6162'"),
            (RangeQuery(lower=b"ab"), "x >= X'6162'"),
            (EqualsQuery(b""), "x = X''"),
            (IsNullQuery(), "x IS NULL"),
        ],
    ),
    "fixed_size_binary": (
        pa.array([b"ab", b"cd", b"ce", None] * 2500, pa.binary(2)),
        [(EqualsQuery(b"cd"), "x = X'6364'"), (RangeQuery(lower=b"cd"), "x >= X'6364'")],
    ),
}


@pytest.mark.parametrize("kind", sorted(OTHER_TYPES))
def test_other_types_both_ways(tmp_path: Any, kind: str) -> None:
    values, cases = OTHER_TYPES[kind]
    theirs_uri, mine_uri = str(tmp_path / "theirs"), str(tmp_path / "mine")
    for uri in (theirs_uri, mine_uri):
        lance.write_dataset(pa.table({"x": values}), uri, max_rows_per_file=3000)
    theirs = lance.dataset(theirs_uri)
    reader = BTREE.load(_pylance_index(theirs, "x"), theirs.schema.field("x"))
    theirs = lance.dataset(theirs_uri)
    mine, store = _commit_lance_fw_index(mine_uri, "x")
    for q, expr in cases:
        expected = _addresses(theirs, expr)
        assert np.array_equal(reader.search(q).addresses, expected), expr
        assert "ScalarIndexQuery" in mine.scanner(columns=[], filter=expr).explain_plan()
        got = np.sort(mine.to_table(columns=[], filter=expr, with_row_address=True)["_rowaddr"].to_numpy())
        assert np.array_equal(got, expected), expr
    assert reader.statistics() == theirs.stats.index_stats("x_idx")["indices"][0]
    assert BTREE.load(store, mine.schema.field("x")).statistics() == reader.statistics()


def test_load_refuses_files_that_are_not_a_btree(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    field = pa.field("x", pa.int64())
    missing = IndexFiles(resolve_storage(uri), index_dir(uri, "missing"))
    with pytest.raises(CorruptFileError, match=r"page_data\.lance"):
        BTREE.load(missing, field)
    wrong = IndexFiles(resolve_storage(uri), index_dir(uri, "wrong"))
    wrong.write_table(
        "page_data.lance", pa.table({"values": pa.array([1]), "ids": pa.array([0], pa.uint64())})
    )
    wrong.write_table("page_lookup.lance", pa.table({"keys": pa.array([1])}))
    with pytest.raises(CorruptFileError, match=r"page_lookup\.lance"):
        BTREE.load(wrong, field)
    ranged = IndexFiles(resolve_storage(uri), index_dir(uri, "ranged"))
    BTREE.train(
        pa.table({"value": pa.array([3, 1]), "_rowaddr": pa.array([0, 1], pa.uint64())}).to_batches(),
        field,
        {},
        ranged,
    )
    lookup = ranged.read_table("page_lookup.lance")
    ranged.write_table("page_lookup.lance", lookup, {"batch_size": "4096", "range_partitioned": "true"})
    with pytest.raises(UnsupportedFeatureError, match="range-partitioned"):
        BTREE.load(IndexFiles(resolve_storage(uri), index_dir(uri, "ranged")), field)


def test_a_run_of_duplicates_is_read_as_ids_only(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    values = np.concatenate([np.zeros(3000), np.full(12_000, 5), np.full(3000, 9)]).astype(np.int64)
    lance.write_dataset(pa.table({"x": values}), uri, max_rows_per_file=7000)
    ds = lance.dataset(uri)
    store = _pylance_index(ds, "x")
    counting = _CountingStore(store.storage, store.directory)
    counting.taken, counting.with_values = [], []
    for q, expr in [
        (EqualsQuery(5), "x = 5"),
        (InQuery((5, 9)), "x IN (5, 9)"),
        (InQuery((0, 7)), "x IN (0, 7)"),
    ]:
        reader = BTREE.load(counting, ds.schema.field("x"))  # a cold page cache for each query
        assert np.array_equal(reader.search(q).addresses, _addresses(ds, expr)), expr
    # pages 1 and 2 hold only 5s: their values are never read
    assert sum(counting.with_values) == 3 * 2 * 4096  # pages 0 and 3 (7 may lie within [5, 9])
