"""scanner(...) with pylance's options; limit stops reading early."""

from __future__ import annotations

import lance
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
