"""File format 2.0 both ways against pylance 14 (the oracle), hand-picked cases."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

import lance_fw
from cases import all_types_table, nested_columns, scalar_columns
from conftest import assert_tables_equal

V = "2.0"


@pytest.mark.parametrize("name", list(scalar_columns()) + list(nested_columns()))
def test_lance_fw_writes_pylance_reads_each_type(uri, name):
    table = all_types_table().select([name])
    lance_fw.write_dataset(table, uri, data_storage_version=V)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


@pytest.mark.parametrize("name", list(scalar_columns()) + list(nested_columns()))
def test_pylance_writes_lance_fw_reads_each_type(uri, name):
    table = all_types_table().select([name])
    lance.write_dataset(table, uri, data_storage_version=V)
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())


def test_all_types_in_one_dataset_with_appends_and_deletions(uri):
    table = all_types_table()
    lance.write_dataset(table, uri, data_storage_version=V)
    lance.write_dataset(table, uri, mode="append")
    ds = lance.write_dataset(table, uri, mode="append")
    ds.delete("int32 > 50 OR int64 IS NULL")
    expected = lance.dataset(uri).to_table()
    actual = lance_fw.dataset(uri).to_table()
    assert 0 < actual.num_rows < 3 * table.num_rows
    assert_tables_equal(expected, actual)


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-deletes", "lance_fw-deletes"])
@pytest.mark.parametrize("predicate, deleted, kind", [
    ("x < 4999", 4999, ("array", ".arrow")), ("x < 5000", 5000, ("bitmap", ".bin")),
    ("x < 5001", 5001, ("bitmap", ".bin")), ("x % 3 = 0", 6667, ("bitmap", ".bin"))])
def test_roaring_deletion_file(uri, writer, predicate, deleted, kind):
    """pylance stores 5000+ deleted rows as a roaring bitmap (.bin), fewer as an Arrow array (.arrow);
    both writers must pick the same kind, and both readers must honour it."""
    table = pa.table({"x": pa.array(range(20_000), pa.int64())})
    writer.write_dataset(table, uri, data_storage_version=V)
    writer.dataset(uri).delete(predicate)
    frag = lance.dataset(uri).get_fragments()[0]
    assert (frag.metadata.deletion_file.file_type, frag.metadata.deletion_file.num_deleted_rows) == (kind[0], deleted)
    assert frag.deletion_file().endswith(kind[1]) and (Path(uri) / frag.deletion_file()).is_file()
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert lance_fw.dataset(uri).count_rows() == lance.dataset(uri).count_rows() == 20_000 - deleted


def test_all_null_columns(uri):
    table = pa.table({"i": pa.nulls(10, pa.int32()), "s": pa.nulls(10, pa.string()),
                      "l": pa.nulls(10, pa.list_(pa.int64())), "n": pa.nulls(10)})
    lance_fw.write_dataset(table, uri, data_storage_version=V)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


def test_empty_table_and_zero_row_append(uri):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    lance_fw.write_dataset(schema.empty_table(), uri, data_storage_version=V)
    assert lance.dataset(uri).count_rows() == 0
    assert lance.dataset(uri).schema.names == ["a", "s"]
    lance_fw.write_dataset(schema.empty_table(), uri, mode="append")
    lance_fw.write_dataset(pa.table({"a": [1], "s": ["x"]}, schema=schema), uri, mode="append")
    assert lance.dataset(uri).to_table().to_pylist() == [{"a": 1, "s": "x"}]
    assert lance_fw.dataset(uri).to_table().to_pylist() == [{"a": 1, "s": "x"}]


def test_multi_page_and_three_fragments(uri):
    table = all_types_table(3000)
    lance_fw.write_dataset(table, uri, data_storage_version=V, max_rows_per_file=1000, max_page_bytes=2048)
    ds = lance_fw.dataset(uri)
    assert len(ds.get_fragments()) == 3
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2]
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, ds.to_table())
    # small batches cross page boundaries in every column
    assert_tables_equal(table, pa.Table.from_batches(list(ds.to_batches(batch_size=77))))


def test_pylance_multi_page_read(uri):
    table = all_types_table(3000)
    lance.write_dataset(table, uri, data_storage_version=V, max_rows_per_file=1500, max_page_bytes=4096)
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert_tables_equal(lance.dataset(uri).to_table(),
                        pa.Table.from_batches(list(lance_fw.dataset(uri).to_batches(batch_size=333))))


def test_pylance_appends_deletes_and_compacts_a_lance_fw_dataset(uri):
    table = all_types_table(200)
    lance_fw.write_dataset(table, uri, data_storage_version=V, max_rows_per_file=100)
    ds = lance.write_dataset(table, uri, mode="append")
    ds.delete("int32 < 0")
    lance_fw.write_dataset(table, uri, mode="append")
    ds = lance.dataset(uri)
    ds.optimize.compact_files()
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    assert lance_fw.dataset(uri).version == lance.dataset(uri).version


def test_versions_and_time_travel(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version=V)
    lance_fw.write_dataset(pa.table({"a": [2]}), uri, mode="append")
    lance_fw.write_dataset(pa.table({"a": [3]}), uri, mode="overwrite")
    ds = lance_fw.dataset(uri)
    assert ds.version == ds.latest_version == 3
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert ds.checkout_version(2).to_table().column("a").to_pylist() == [1, 2]
    assert lance_fw.dataset(uri, version=1).count_rows() == 1
    assert lance_fw.dataset(uri, asof=ds.versions()[1]["timestamp"]).version == 2
    assert lance.dataset(uri, version=2).to_table().column("a").to_pylist() == [1, 2]
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 2, 3]


def test_create_twice_fails(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version=V)
    with pytest.raises(lance_fw.errors.DatasetExistsError):
        lance_fw.write_dataset(pa.table({"a": [1]}), uri)


def test_append_schema_mismatch(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version=V)
    with pytest.raises(lance_fw.errors.SchemaError, match="'a'"):
        lance_fw.write_dataset(pa.table({"a": ["x"]}), uri, mode="append")


def test_inputs_pylance_accepts(uri, tmp_path):
    import pandas as pd

    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    lance_fw.write_dataset(reader, uri, data_storage_version=V)
    lance_fw.write_dataset(table.to_batches()[0], uri, mode="append")
    lance_fw.write_dataset(iter(table.to_batches()), uri, mode="append", schema=table.schema)
    lance_fw.write_dataset(pd.DataFrame({"a": [4], "b": ["w"]}), uri, mode="append")
    assert lance.dataset(uri).count_rows() == 10
    assert sorted(lance_fw.dataset(uri).to_table().column("a").to_pylist()) == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4]


def test_memory_storage_roundtrip():
    table = all_types_table(100)
    lance_fw.write_dataset(table, "memory://interop/ds", data_storage_version=V)
    assert_tables_equal(table, lance_fw.dataset("memory://interop/ds").to_table())


def test_file_format_in_manifest(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version=V)
    assert lance.dataset(uri).data_storage_version == "2.0"
    frag = lance.dataset(uri).get_fragments()[0].metadata
    assert (frag.files[0].file_major_version, frag.files[0].file_minor_version) == (2, 0)


# --- lists whose null rows are backed by items (issue 10, item 6) --------------------------------

REPRO = Path(__file__).parents[2] / "shared" / "repro"
LIST_REPROS = [REPRO / f"pylance_2_0_list_{i}.arrow" for i in range(1, 6)]


def _repro(path: Path) -> pa.Table:
    if not path.exists():
        pytest.skip(f"{path} is not there")
    return feather.read_table(path)


def _backed_list(lengths: np.ndarray, values: pa.Array, null: np.ndarray, large: bool = False) -> pa.Array:
    """A list array whose null rows still own items (as Arrow allows and pylance stores)."""
    offsets = np.zeros(len(lengths) + 1, np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(pa.array(offsets), values, mask=pa.array(null))


def null_lists_table(n: int = 3000, seed: int = 3) -> pa.Table:
    """Null lists (backed by items), null items and empty lists at every nesting level."""
    rng = np.random.default_rng(seed)

    def lengths(k):
        return rng.integers(0, 5, k)

    def nulls(k, every):
        return rng.integers(0, every, k) == 0

    l_len = lengths(n)
    ints = pa.array(rng.integers(-100, 100, int(l_len.sum())), pa.int32(), mask=nulls(int(l_len.sum()), 5))
    strs_len = lengths(n)
    strs = pa.array([f"v{j}" * (j % 3) for j in range(int(strs_len.sum()))],
                    mask=nulls(int(strs_len.sum()), 6))
    in_len = lengths(int((outer_len := lengths(n)).sum()))
    inner = _backed_list(in_len, pa.array(rng.integers(0, 1000, int(in_len.sum())), pa.uint16(),
                                          mask=nulls(int(in_len.sum()), 4)), nulls(len(in_len), 4), large=True)
    st_len = lengths(n)
    k = int(st_len.sum())
    structs = pa.StructArray.from_arrays([pa.array(rng.integers(0, 9, k), pa.int64(), mask=nulls(k, 3)),
                                          pa.array([f"s{j}" for j in range(k)], mask=nulls(k, 5))],
                                         names=["x", "y"])
    return pa.table({
        "id": pa.array(np.arange(n)),
        "l": _backed_list(l_len, ints, nulls(n, 6)),
        "ls": _backed_list(strs_len, strs, nulls(n, 7)),
        "lll": _backed_list(outer_len, inner, nulls(n, 5)),
        "lst": _backed_list(st_len, structs, nulls(n, 8), large=True),
    })


def _assert_reads_like_pylance(uri: str) -> None:
    expected = lance.dataset(uri).to_table()
    ds = lance_fw.dataset(uri)
    assert_tables_equal(expected, ds.to_table())
    assert_tables_equal(expected, pa.Table.from_batches(list(ds.to_batches(batch_size=77)), schema=ds.schema))
    rows = sorted(np.random.default_rng(1).choice(expected.num_rows, min(expected.num_rows, 50), replace=False))
    assert_tables_equal(lance.dataset(uri).take(rows), ds.take(rows))
    for column in ds.to_table().columns:
        for chunk in column.chunks:
            chunk.validate(full=True)


@pytest.mark.parametrize("path", LIST_REPROS, ids=lambda p: p.stem)
@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance_written", "lance_fw_written"])
def test_list_repro(uri, path, writer):
    table = _repro(path)
    writer.write_dataset(table, uri, data_storage_version=V)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    _assert_reads_like_pylance(uri)


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_null_lists_at_every_level_over_pages(uri, writer):
    table = null_lists_table()
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=V, max_page_bytes=4096)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    _assert_reads_like_pylance(uri)
