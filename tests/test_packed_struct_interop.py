"""Packed structs (a struct stored row by row in one column) against pylance: pylance takes both
metadata keys, ``lance-encoding:packed`` and the older ``packed``; lance_fw must store and read
both as pylance does in 2.1+ files (else pylance reads lance_fw's struct as nulls, and lance_fw
cannot open pylance's). In 2.0 files the struct is one ``packed_struct`` column of whole rows, as
pylance writes it (its data files byte for byte); children pylance cannot pack (or read back) at
2.0 are refused by name."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
from lance_fw.errors import SchemaError, UnsupportedFeatureError

ROWS = 5000  # crosses a 4096-value chunk
STRUCT = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.float32())])


def _table(key: str, nulls: bool = True) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", STRUCT, metadata={key: "true"})])
    rng = np.random.default_rng(1)
    a = pa.array(rng.integers(0, 100, ROWS).astype(np.int32))
    b = pa.array(rng.random(ROWS).astype(np.float32))
    valid = pa.array(rng.random(ROWS) > (0.1 if nulls else -1.0))  # 2.0 stores no struct validity
    p = pa.StructArray.from_arrays([a, b], fields=list(STRUCT), mask=pc.invert(valid))
    return pa.table({"id": np.arange(ROWS), "p": p}, schema=schema)


@pytest.mark.parametrize("key", ["packed", "lance-encoding:packed"])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lance", "lance_fw"])
def test_packed_struct_round_trips_with_pylance(tmp_path, key, version, writer):
    path = str(tmp_path / "t.lance")
    {"lance": lance, "lance_fw": lance_fw}[writer].write_dataset(
        _table(key), path, data_storage_version=version
    )
    files = [list(d.fields) for f in lance.dataset(path).get_fragments() for d in f.data_files()]
    assert files == [[0, 1]]  # one column for the whole struct, as pylance stores it
    for where in (None, "p.a = 7", "id < 100"):
        want = lance.dataset(path).to_table(filter=where)
        got = lance_fw.dataset(path).to_table(filter=where)
        assert got.equals(want), where
    assert lance_fw.dataset(path).take([1, 4097, 4999]).equals(lance.dataset(path).take([1, 4097, 4999]))


def _data_files(path: str) -> list[bytes]:
    return [
        open(f"{path}/data/{d.path}", "rb").read()
        for f in lance.dataset(path).get_fragments()
        for d in f.data_files()
    ]


@pytest.mark.parametrize("key", ["packed", "lance-encoding:packed"])
def test_packed_structs_in_2_0_files_round_trip_with_pylance(tmp_path, key):
    table = _table(key, False)
    paths = {}
    for writer in ("lance", "lance_fw"):
        paths[writer] = path = str(tmp_path / f"{writer}.lance")
        {"lance": lance, "lance_fw": lance_fw}[writer].write_dataset(
            table, path, data_storage_version="2.0", max_rows_per_file=4500
        )
        files = [
            (list(d.fields), list(d.column_indices))
            for f in lance.dataset(path).get_fragments()
            for d in f.data_files()
        ]
        assert files == [([0, 1], [0, 1])] * 2  # the struct is one column, its fields have none
        for where in (None, "p.a = 7", "p.a < 10 AND id > 4000", "id < 100"):
            want = lance.dataset(path).to_table(filter=where)
            assert lance_fw.dataset(path).to_table(filter=where).equals(want), where
            assert (
                lance_fw.dataset(path)
                .to_table(columns=["p"], filter=where)
                .equals(lance.dataset(path).to_table(columns=["p"], filter=where))
            ), where
        assert lance.dataset(path).to_table().equals(table)
        rows = [1, 4097, 4499, 4500, 4999]
        assert lance_fw.dataset(path).take(rows).equals(lance.dataset(path).take(rows))
    assert _data_files(paths["lance"]) == _data_files(paths["lance_fw"])  # the same bytes as pylance
    paged = str(tmp_path / "paged.lance")  # many small pages: row-by-row take across them
    lance_fw.write_dataset(table, paged, data_storage_version="2.0", max_page_bytes=4096)
    assert lance.dataset(paged).to_table().equals(table)
    assert (
        lance_fw.dataset(paged)
        .to_table(filter="p.a = 7")
        .equals(lance.dataset(paged).to_table(filter="p.a = 7"))
    )
    rows = [0, 511, 512, 4097, 4999]
    assert lance_fw.dataset(paged).take(rows).equals(lance.dataset(paged).take(rows))


def test_packed_2_0_children_of_every_packable_kind_and_place(tmp_path):
    """Fixed-size binaries, decimals, half floats and fixed-size lists (nested too) are packed, in a
    packed struct at the top, inside a plain struct, and as list items; the files are pylance's bytes."""
    n = 4200  # rows; the list items (two a row) and the rows cross a 4096-value chunk
    rng = np.random.default_rng(2)
    kinds = pa.struct(
        [
            pa.field("i8", pa.int8()),
            pa.field("fsb", pa.binary(3)),
            pa.field("dec", pa.decimal128(12, 2)),
            pa.field("f16", pa.float16()),
            pa.field("ts", pa.timestamp("us")),
            pa.field("vec", pa.list_(pa.list_(pa.int16(), 2), 2)),
        ]
    )
    values = [
        pa.array(rng.integers(-100, 100, 2 * n).astype(np.int8)),
        pa.array([bytes([i % 256, 1, 2]) for i in range(2 * n)], pa.binary(3)),
        pa.array(np.arange(2 * n, dtype=np.int32)).cast(pa.decimal128(12, 2)),
        pa.array(rng.random(2 * n).astype(np.float16)),
        pa.array(np.arange(2 * n)).cast(pa.timestamp("us")),
        pa.array([[[i, 1], [2, i % 7]] for i in range(2 * n)], kinds.field("vec").type),
    ]
    items = pa.StructArray.from_arrays(values, fields=list(kinds))
    md = {"packed": "true"}
    outer_t = pa.struct([pa.field("x", pa.int32()), pa.field("q", kinds, metadata=md)])
    outer = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), items.slice(n, n)], fields=list(outer_t)
    )
    list_t = pa.list_(pa.field("item", kinds, metadata=md))
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2, dtype=np.int32)), items, type=list_t)
    schema = pa.schema([pa.field("p", kinds, metadata=md), pa.field("o", outer_t), pa.field("l", list_t)])
    table = pa.table({"p": items.slice(0, n), "o": outer, "l": lists}, schema=schema)
    paths = {}
    for writer in ("lance", "lance_fw"):
        paths[writer] = path = str(tmp_path / f"{writer}.lance")
        {"lance": lance, "lance_fw": lance_fw}[writer].write_dataset(table, path, data_storage_version="2.0")
        assert lance.dataset(path).to_table().equals(table), writer
        assert lance_fw.dataset(path).to_table().equals(table), writer
        # pylance's filtered scan fails here (packed metadata inside ``o``: "column types must
        # match schema types"), so the filter is checked against Arrow's
        want = lance.dataset(path).to_table().filter(pc.field("p", "i8") > 90)
        assert lance_fw.dataset(path).to_table(filter="p.i8 > 90").equals(want), writer
        assert lance_fw.dataset(path).take([0, 5, 1399]).equals(lance.dataset(path).take([0, 5, 1399]))
    assert _data_files(paths["lance"]) == _data_files(paths["lance_fw"])


@pytest.mark.parametrize(
    "child",
    [
        pa.field("s", pa.string()),  # pylance: "only implemented for fixed-width data blocks"
        pa.field("s", pa.bool_()),  # pylance: "only supports full-byte buffers"
        pa.field("s", pa.struct([pa.field("c", pa.int16())])),  # pylance writes it, cannot read it
        pa.field("s", pa.list_(pa.int32())),  # pylance panics
        pa.field("s", pa.dictionary(pa.int8(), pa.int32())),  # pylance panics
    ],
    ids=lambda f: str(f.type),
)
def test_packed_2_0_children_pylance_cannot_pack_are_refused_by_name(tmp_path, child):
    struct = pa.struct([pa.field("a", pa.int32()), child])
    schema = pa.schema([pa.field("p", struct, metadata={"packed": "true"})])
    table = pa.table({"p": pa.array([{"a": 1, "s": None}], struct)}, schema=schema)
    with pytest.raises(UnsupportedFeatureError, match=r"packed struct 'p'.*'s'"):
        lance_fw.write_dataset(table, str(tmp_path / "fw.lance"), data_storage_version="2.0")


def test_packed_2_0_nulls_are_refused_by_name(tmp_path):
    """pylance refuses null values in a 2.0 packed struct ("cannot pack nullable fixed-width data
    blocks") and null structs (2.0 has no struct validity): lance_fw says which field."""
    key = "packed"
    table = _table(key, False)
    a = pa.array(np.where(np.arange(ROWS) == 4500, None, 1), pa.int32())
    nulls = table.set_column(
        1,
        table.schema.field("p"),
        pa.StructArray.from_arrays([a, table["p"].combine_chunks().field(1)], fields=list(STRUCT)),
    )
    with pytest.raises(UnsupportedFeatureError, match=r"'p'\.'a'"):
        lance_fw.write_dataset(nulls, str(tmp_path / "a.lance"), data_storage_version="2.0")
    with pytest.raises(SchemaError, match="'p'"):
        lance_fw.write_dataset(_table(key), str(tmp_path / "b.lance"), data_storage_version="2.0")
