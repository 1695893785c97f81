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
    assert lance_fw.dataset(ds_path).scanner(**kwargs).count_rows() == expected.num_rows
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
