"""What only lance_fw's 2.1/2.2 writer decides: page splits, files, appends, layer choices.

The both-ways type and encoding coverage lives in test_interop_v2_1.py.
"""

from __future__ import annotations

import os
from decimal import Decimal

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError
from cases import all_types_table
from conftest import assert_tables_equal
from test_interop_v2_1 import roundtrip

VERSIONS = ["2.1", "2.2"]


def _roundtrip(table: pa.Table, uri: str, version: str, **kwargs) -> None:
    roundtrip(table, uri, version, "lance_fw", **kwargs)


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_page_multi_fragment(uri, version):
    table = all_types_table(3000)
    _roundtrip(table, uri, version, max_rows_per_file=1000, max_page_bytes=2048)
    assert len(lance.dataset(uri).get_fragments()) == 3
    take = lance.dataset(uri).take([0, 1234, 2999])
    assert_tables_equal(table.take([0, 1234, 2999]), take)


@pytest.mark.parametrize("version", VERSIONS)
def test_appends_both_ways(uri, version):
    table = all_types_table(500)
    lance_fw.write_dataset(table, uri, data_storage_version=version)
    lance.write_dataset(table, uri, mode="append")
    lance_fw.write_dataset(table, uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("int32 > 50")
    ds.optimize.compact_files()
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert lance_fw.dataset(uri).count_rows() == lance.dataset(uri).count_rows()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False]])
def test_struct_over_list_split_across_pages(uri, version, mask):
    """Each row its own page: pylance needs the same rep/def layers on every page of a column
    with a struct above a list (a null struct in one page, none in the next)."""
    column = pa.StructArray.from_arrays([pa.array([[1], None, [2, 3]], pa.list_(pa.int8()))], names=["f0"],
                                        mask=pa.array(mask))
    _roundtrip(pa.table({"c": column}), uri, version, max_page_bytes=1)


def test_top_level_lists_keep_pylance_layers(uri):
    """Without a struct above, a list column's layers follow its data (as pylance's do): no def
    numbers are spent on nulls that never occur."""
    _roundtrip(pa.table({"l": pa.array([[1, 2], [], [3]] * 100, pa.list_(pa.int32()))}), uri, "2.2")
    (path,) = [p for p in os.listdir(f"{uri}/data") if p.endswith(".lance")]
    from lance_fw.cli import _decode_any
    from lance_fw.file.container import read_tail
    from lance_fw.io.storage import resolve_storage

    reader = resolve_storage(uri).open_reader(f"{uri}/data/{path}")
    page = read_tail(reader).columns[0].pages[0]
    assert "REPDEF_EMPTYABLE_LIST" in _decode_any(page.encoding.direct.encoding)


# --- packed structs (lance-encoding:packed) ---------------------------------------------------------

PACKED = {"lance-encoding:packed": "true"}


def _packed_table(n: int = 5000) -> pa.Table:
    rng = np.random.default_rng(2)
    t = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("d", pa.decimal128(12, 2)), ("ts", pa.timestamp("us"))])
    rows = [None if i % 11 == 3 else {"a": int(rng.integers(-1000, 1000)), "b": float(rng.random()),
                                      "d": Decimal(int(rng.integers(-10**6, 10**6))).scaleb(-2), "ts": i * 1000}
            for i in range(n)]
    return pa.table([pa.array(np.arange(n)), pa.array(rows, t)],
                    schema=pa.schema([pa.field("id", pa.int64()), pa.field("p", t, metadata=PACKED)]))


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", VERSIONS)
def test_packed_struct_both_ways(uri, version, writer):
    """A packed struct is one column of row-major fixed-width rows in pylance's files. lance_fw wrote
    one column per field instead: pylance read every row of such a file as null (silently), and
    lance_fw could not read pylance's ("field 'a' has no column")."""
    table = _packed_table()
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_page_bytes=16 * 1024)
    (data_file,) = lance.dataset(uri).get_fragments()[0].metadata.files
    assert data_file.fields == [0, 1]  # "id" and the struct: its fields own no column
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(table, expected)
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    rows = [0, 3, 4095, 4096, 4999]
    assert_tables_equal(lance.dataset(uri).take(rows), lance_fw.dataset(uri).take(rows))


@pytest.mark.parametrize("field_type,value", [(pa.bool_(), True), (pa.int32(), None), (pa.string(), "x")])
def test_packed_struct_refuses_what_pylance_refuses(uri, field_type, value):
    """pylance refuses packed structs with bool or variable-width fields or nulls inside rows; so
    does lance_fw, with a typed error naming the option."""
    t = pa.struct([("a", pa.int64()), ("b", field_type)])
    table = pa.table([pa.array([{"a": 1, "b": value}] * 10, t)], schema=pa.schema([pa.field("p", t, metadata=PACKED)]))
    with pytest.raises(UnsupportedFeatureError, match="lance-encoding:packed"):
        lance_fw.write_dataset(table, uri, data_storage_version="2.1")


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_packed_struct_field_projection(uri, writer):
    """A field inside a packed struct has no column of its own: it is read with its struct (it
    came back all null: the scan took it for a field no data file holds). pylance 14 itself fails
    to project fields after the first one ("Need at least 2400 bytes in buffers[0]"), so those
    are checked against its read of the whole struct."""
    table = _packed_table(300)
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version="2.2")
    whole = lance.dataset(uri).to_table(columns=["p"]).column("p").combine_chunks().flatten()
    assert lance_fw.dataset(uri).to_table(columns=["p.a"]).column(0).to_pylist() == \
        lance.dataset(uri).to_table(columns=["p.a"]).column(0).to_pylist()
    for i, name in enumerate(["a", "b", "d", "ts"]):
        assert lance_fw.dataset(uri).to_table(columns=["id", f"p.{name}"]).column(1).to_pylist() == whole[i].to_pylist()
    rows = [0, 3, 299]
    taken = lance_fw.dataset(uri).take(rows, columns=["p.b"])  # pylance's take: struct p pruned to b
    assert taken.schema.names == ["p"]
    assert taken.column("p").combine_chunks().field("b").to_pylist() == whole[1].take(rows).to_pylist()
