"""scanner(...) with pylance's options; limit stops reading early."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from conftest import assert_tables_equal


@pytest.fixture
def ds_path(uri):
    table = pa.table({"id": pa.array(range(1000), pa.int64()), "s": [f"s{i % 7}" for i in range(1000)]})
    lance_fw.write_dataset(table, uri, max_rows_per_file=100)
    lance.dataset(uri).delete("id % 10 = 3")
    return uri


@pytest.mark.parametrize("kwargs", [
    {"limit": 5}, {"limit": 5, "offset": 250}, {"offset": 895}, {"filter": "id > 500", "limit": 7},
    {"columns": ["s"], "filter": "s = 's3'", "offset": 10, "limit": 20},
    {"with_row_id": True, "limit": 4, "offset": 98}, {"with_row_address": True, "filter": "id < 4"},
])
def test_scanner_equals_pylance(ds_path, kwargs):
    expected = lance.dataset(ds_path).scanner(**kwargs).to_table()
    assert_tables_equal(expected, lance_fw.dataset(ds_path).scanner(**kwargs).to_table())
    if "limit" in kwargs or "offset" in kwargs:  # pylance refuses to count with either
        with pytest.raises(ValueError, match="limit/offset with aggregate"):
            lance.dataset(ds_path).scanner(**kwargs).count_rows()
        with pytest.raises(lance_fw.errors.InvalidArgumentError, match="limit/offset with aggregate"):
            lance_fw.dataset(ds_path).scanner(**kwargs).count_rows()
    else:
        expected_count = lance.dataset(ds_path).scanner(**kwargs).count_rows()
        assert lance_fw.dataset(ds_path).scanner(**kwargs).count_rows() == expected_count == expected.num_rows
    assert_tables_equal(expected, lance_fw.dataset(ds_path).to_table(**kwargs))


def test_fragments_option_and_reader(ds_path):
    ds = lance_fw.dataset(ds_path)
    frags = ds.get_fragments()[2:4]
    table = ds.scanner(fragments=frags).to_reader().read_all()
    assert table.column("id").to_pylist() == [i for i in range(200, 400) if i % 10 != 3]


def test_limit_stops_reading_early(ds_path, monkeypatch):
    from lance_fw.table import fragment

    opened = []
    original = fragment.FragmentReader.__init__

    def counting(self, *args, **kwargs):
        opened.append(args[2].id)
        original(self, *args, **kwargs)
    monkeypatch.setattr(fragment.FragmentReader, "__init__", counting)
    rows = lance_fw.dataset(ds_path).scanner(limit=3).to_table()
    assert rows.num_rows == 3 and opened == [0]


def test_head(ds_path):
    assert lance_fw.dataset(ds_path).head(3).column("id").to_pylist() == [0, 1, 2]


# -- late materialisation --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wide_path(tmp_path_factory):
    """Several fragments of several pages, deletions, nested and string columns."""
    n = 30_000
    rng = np.random.default_rng(4)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "cat": pa.array(rng.integers(0, 100, n).astype(np.int32)),
        "name": pa.array([None if i % 97 == 0 else f"name-{i % 1000}" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
        "tags": pa.array([[f"t{j}" for j in range(i % 4)] for i in range(n)], pa.list_(pa.string())),
        "st": pa.StructArray.from_arrays([pa.array(np.arange(n) % 7, pa.int32()),
                                          pa.array([f"b{i % 5}" for i in range(n)])], names=["a", "b"]),
    })
    path = str(tmp_path_factory.mktemp("late") / "ds")
    lance_fw.write_dataset(table, path, max_rows_per_file=12_000, max_page_bytes=32 * 1024)
    lance.dataset(path).delete("id % 13 = 5 OR (id > 20000 AND id < 20100)")
    return path


@pytest.mark.parametrize("filter", [
    "id = 17", "id = 5",                      # one row / a deleted row
    "id < 0",                                 # nothing matches: other columns are never read
    "id IN (3, 4000, 12001, 29999)",          # a few rows in different fragments: take path
    "cat < 3", "cat < 50",                    # dense: range path
    "name = 'name-7' AND cat > 20", "st.a = 3 AND id > 25000", "name IS NULL",
])
@pytest.mark.parametrize("columns", [None, ["vec", "tags"], ["st", "id", "name"]])
def test_late_materialisation_equals_eager(wide_path, filter, columns):
    ours = lance_fw.dataset(wide_path).to_table(columns=columns, filter=filter, with_row_address=True)
    expected = lance.dataset(wide_path).to_table(columns=columns, filter=filter, with_row_address=True)
    assert_tables_equal(expected, ours)
    everything = lance_fw.dataset(wide_path).to_table(with_row_address=True)  # eager: read all, then filter
    from lance_fw.query.filter import parse_filter
    eager = everything.filter(parse_filter(filter, everything.schema))
    assert_tables_equal(eager.select(ours.column_names), ours)
    assert lance_fw.dataset(wide_path).count_rows(filter) == expected.num_rows


def test_late_materialisation_reads_only_filter_columns_without_matches(wide_path, monkeypatch):
    from lance_fw.file import reader as file_reader

    read = []
    original_range, original_take = file_reader.LanceFileReader.read_field, file_reader.LanceFileReader.take_field

    def read_field(self, field, start, stop):
        read.append(("range", field.name, stop - start))
        return original_range(self, field, start, stop)

    def take_field(self, field, rows):
        read.append(("take", field.name, len(rows)))
        return original_take(self, field, rows)
    monkeypatch.setattr(file_reader.LanceFileReader, "read_field", read_field)
    monkeypatch.setattr(file_reader.LanceFileReader, "take_field", take_field)
    assert lance_fw.dataset(wide_path).to_table(filter="id < 0").num_rows == 0
    assert {name for _, name, _ in read} == {"id"}
    read.clear()
    table = lance_fw.dataset(wide_path).to_table(filter="id = 12345")
    assert table.column("id").to_pylist() == [12345]
    assert {(kind, name) for kind, name, _ in read if name != "id"} == \
        {("take", n) for n in ("cat", "name", "vec", "tags", "st")}
    assert all(count == 1 for kind, _, count in read if kind == "take")


def test_fragment_filters_and_counts(wide_path):
    ours, theirs = lance_fw.dataset(wide_path).get_fragments()[1], lance.dataset(wide_path).get_fragments()[1]
    assert ours.count_rows("cat < 10") == theirs.count_rows("cat < 10")
    assert_tables_equal(theirs.to_table(columns=["id", "tags"], filter="cat = 4"),
                        ours.to_table(columns=["id", "tags"], filter="cat = 4"))


# -- SQL projections (columns=dict) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def proj_path(tmp_path_factory):
    n = 500
    table = pa.table({
        "x": pa.array([None if i % 9 == 4 else i - 100 for i in range(n)], pa.int64()),
        "y": pa.array([None if i % 7 == 1 else i / 8 for i in range(n)]),
        "i": pa.array(np.arange(n) % 17, pa.int32()),
        "s": pa.array([None if i % 11 == 3 else ["a", "Bc", "dEf ", " g"][i % 4] for i in range(n)]),
        "b": pa.array([None if i % 13 == 0 else i % 3 == 0 for i in range(n)]),
        "st": pa.StructArray.from_arrays([pa.array(np.arange(n) % 5, pa.int64()),
                                          pa.array([f"q{i % 3}" for i in range(n)])], names=["a", "b"]),
    })
    path = str(tmp_path_factory.mktemp("proj") / "ds")
    lance_fw.write_dataset(table, path, max_rows_per_file=200)
    return path


@pytest.mark.parametrize("columns", [
    {"x2": "x * 2", "s": "s", "up": "upper(s)"},
    {"z": "x + y", "w": "i * 2", "d": "x / 3", "m": "x % 3", "neg": "-x", "mix": "-x * 2 + (i % 2)"},
    {"c": "cast(x as double)", "l": "lower(s)", "len": "length(s)", "cc": "concat(s, '_z')", "len1": "length(s) + 1"},
    {"st_a": "st.a", "cmp": "x > 1", "and": "b AND x > 1", "or": "b OR x > 1", "not": "NOT b", "gt": "x + 1 > 2"},
    {"co": "coalesce(x, 0)", "abs": "abs(x - 3)", "isnull": "x IS NULL", "lit": "1", "round": "round(y)"},
    {"r1": "round(y, 1)", "sq": "sqrt(y)", "nif": "nullif(x, 2)", "str": "cast(x as string)", "pw": "power(y, 2)"},
    {"like": "s LIKE 'a%'", "in": "x IN (1, 2, -50)", "btw": "x BETWEEN 1 AND 20", "sw": "starts_with(s, 'd')"},
    {"rev": "reverse(s)", "lt": "ltrim(s)", "rep": "replace(s, 'a', 'b')", "ix": "i * x", "ni": "-i", "xy": "x * y"},
])
def test_sql_projection_equals_pylance(proj_path, columns):
    for kwargs in ({}, {"filter": "i < 5"}, {"filter": "x > 150", "limit": 7, "offset": 3}):
        expected = lance.dataset(proj_path).to_table(columns=columns, **kwargs)
        ours = lance_fw.dataset(proj_path).to_table(columns=columns, **kwargs)
        assert ours.column_names == list(columns)
        for name in columns:  # same types too (nullability aside)
            assert ours.schema.field(name).type == expected.schema.field(name).type, name
        assert_tables_equal(expected, ours)
    scanner = lance_fw.dataset(proj_path).scanner(columns=columns, with_row_id=True)
    assert scanner.to_table().schema == scanner.projected_schema
    assert scanner.projected_schema.names == [*columns, "_rowid"]


@pytest.mark.parametrize("columns", [{"f": "x * 2.5"}, {"q": "nope + 1"}, {"l": "1"}, {"a": "x AS y"},
                                     {"c": "CASE WHEN x > 1 THEN 1 ELSE 0 END"}, {"s": "s +"}])
def test_sql_projection_errors(proj_path, columns):
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        lance_fw.dataset(proj_path).to_table(columns=columns)


# -- stable row ids -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stable_ids_path(tmp_path_factory):
    """Stable row ids through appends (pylance's and ours), deletes and a compaction, so the
    fragments carry range, bitmap and array segments."""
    path = str(tmp_path_factory.mktemp("rowids") / "ds")
    lance.write_dataset(pa.table({"id": list(range(10))}), path, enable_stable_row_ids=True)
    lance.write_dataset(pa.table({"id": list(range(10, 25))}), path, mode="append")
    lance.dataset(path).delete("id % 4 = 1")
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=100)
    lance_fw.write_dataset(pa.table({"id": list(range(100, 110))}), path, mode="append")
    lance.write_dataset(pa.table({"id": list(range(200, 205))}), path, mode="append")
    lance.dataset(path).delete("id = 103 OR id = 201")
    return path


@pytest.mark.parametrize("kwargs", [
    {"with_row_id": True}, {"with_row_id": True, "with_row_address": True},
    {"with_row_id": True, "filter": "_rowid > 20 AND id > 0"}, {"with_row_id": True, "limit": 5, "offset": 17},
    {"with_row_id": True, "columns": {"double": "id * 2"}},
])
def test_stable_row_ids_equal_pylance(stable_ids_path, kwargs):
    expected = lance.dataset(stable_ids_path).to_table(**kwargs)
    assert expected.column("_rowid").to_pylist() != expected.column("_rowid").to_pylist()[:1] * expected.num_rows
    assert_tables_equal(expected, lance_fw.dataset(stable_ids_path).to_table(**kwargs))


def test_take_rows_by_stable_id(stable_ids_path):
    ids = [3, 7, 25, 27, 0, 1000, 26]  # 25 and 1000 name no live row
    assert_tables_equal(lance.dataset(stable_ids_path)._take_rows(ids),
                        lance_fw.dataset(stable_ids_path)._take_rows(ids))
    fragment = lance_fw.dataset(stable_ids_path).get_fragments()[-1]
    theirs = lance.dataset(stable_ids_path).get_fragments()[-1]
    assert_tables_equal(theirs.to_table(with_row_id=True), fragment.to_table(with_row_id=True))


def test_row_id_segment_kinds():
    from lance_fw._proto import rowids_pb2 as pb
    from lance_fw.table.row_ids import segment_values

    seg = pb.U64Segment
    holes = pb.EncodedU64Array(u16_array=pb.EncodedU64Array.U16Array(base=10,
                                                                      offsets=np.array([1, 3], "<u2").tobytes()))
    cases = [
        (seg(range=seg.Range(start=5, end=9)), [5, 6, 7, 8]),
        (seg(range_with_holes=seg.RangeWithHoles(start=10, end=15, holes=holes)), [10, 12, 14]),
        (seg(range_with_bitmap=seg.RangeWithBitmap(start=0, end=9, bitmap=bytes([0xDD, 0x01]))), [0, 2, 3, 4, 6, 7, 8]),
        (seg(sorted_array=pb.EncodedU64Array(u32_array=pb.EncodedU64Array.U32Array(
            base=2**33, offsets=np.array([0, 70000], "<u4").tobytes()))), [2**33, 2**33 + 70000]),
        (seg(array=pb.EncodedU64Array(u64_array=pb.EncodedU64Array.U64Array(
            values=np.array([9, 2**40, 3], "<u8").tobytes()))), [9, 2**40, 3]),
    ]
    for segment, expected in cases:
        assert segment_values(segment, "test").tolist() == expected


def test_expression_filters_late_materialised(wide_path):
    import pyarrow.compute as pc

    cases = [(pc.field("st", "a") == 3, "st.a = 3"),  # pylance refuses nested refs in expressions; same as SQL
             ((pc.field("cat") < 2) & pc.field("name").is_valid(), None), (pc.field("id") == 29_999, None)]
    for expression, sql in cases:
        expected = lance.dataset(wide_path).to_table(columns=["id", "tags"], filter=sql or expression)
        assert_tables_equal(expected, lance_fw.dataset(wide_path).to_table(columns=["id", "tags"], filter=expression))


def test_filters_that_print_alike_are_planned_apart(ds_path):
    """A scan's filter plan is kept per version and filter; two pyarrow filters that print the same
    (``divide(id, 2)`` with an integer or a float 2) are different filters, with different rows,
    however often each runs."""
    import pyarrow.compute as pc

    ds = lance_fw.dataset(ds_path)
    integer = pc.divide(pc.field("id"), 2) == 2
    floating = pc.divide(pc.field("id"), 2.0) == 2
    assert str(integer) == str(floating)
    for _ in range(2):
        assert_tables_equal(lance.dataset(ds_path).to_table(filter=integer), ds.to_table(filter=integer))
        # pylance cannot take the float one (substrait): pyarrow's own filter answers
        assert_tables_equal(lance.dataset(ds_path).to_table().filter(floating), ds.to_table(filter=floating))
    assert ds.to_table(filter=integer).num_rows == 2
    assert ds.to_table(filter=floating).num_rows == 1
