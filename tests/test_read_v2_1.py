"""Reading what only pylance writes at 2.1/2.2: its appends and deletions, and blob columns.

The both-ways type and encoding coverage lives in test_interop_v2_1.py.
"""

from __future__ import annotations

import glob

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table
from conftest import assert_tables_equal
from lance_fw.errors import CorruptFileError

VERSIONS = ["2.1", "2.2"]


@pytest.mark.parametrize("version", VERSIONS)
def test_appends_deletions_and_multi_page(uri, version):
    table = all_types_table(3000)
    lance.write_dataset(table, uri, data_storage_version=version, max_rows_per_file=1500)
    ds = lance.write_dataset(table, uri, mode="append", max_page_bytes=4096)
    ds.delete("int32 > 50 OR string IS NULL")
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    assert_tables_equal(expected, pa.Table.from_batches(list(lance_fw.dataset(uri).to_batches(batch_size=401)),
                                                        schema=expected.schema))


@pytest.mark.parametrize("version", ["2.2"])
def test_blob_columns(uri, version):
    """2.2 blob v2: the table holds descriptors (as pylance returns them), bytes come from
    take_blobs (inline in the data file or in sidecar files). (2.1's blob v1 layout: not yet.)"""
    from lance_fw.table.blobs import take_blobs

    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [b"x" * 10, None, b"y" * 200_000, b"", b"z" * 5000]
    table = pa.table([pa.array([1, 2, 3, 4, 5]), pa.array(values, pa.large_binary())],
                     schema=pa.schema([pa.field("id", pa.int64()), field]))
    lance.write_dataset(table, uri, data_storage_version=version)
    expected = lance.dataset(uri).to_table()
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())
    if version == "2.2":
        got = take_blobs(lance_fw.dataset(uri)._snapshot, "b", [4, 2, 0, 1])
        assert got == [values[4], values[2], values[0], None]


# --- damage that decodes to well-formed but invalid Arrow (issue 10, item 8) ---------------------

ROWS = 5000  # more than a 4096-value chunk
MARKER = b"MARKER"
RAW_TEXT = {"lance-encoding:compression": "none"}  # pylance stores the bytes as they are


def _text(n: int = ROWS) -> list[str]:
    """Printable ASCII that neither writer compresses, so the bytes appear verbatim in the file."""
    rng = np.random.default_rng(5)
    alphabet = np.array([chr(c) for c in range(32, 127)])
    text = ["".join(alphabet[rng.integers(0, len(alphabet), 12)]) for _ in range(n)]
    text[4321] = MARKER.decode() + text[4321]
    return text


def _text_table(shape: str) -> pa.Table:
    leaf = pa.field("s", pa.large_string() if shape == "large" else pa.string(), metadata=RAW_TEXT)
    values = pa.array(_text(), leaf.type)
    if shape == "list_of_struct":
        item = pa.struct([leaf])
        offsets = pa.array(np.arange(ROWS + 1, dtype=np.int32))
        column = pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays([values], fields=[leaf]),
                                          type=pa.list_(item))
        return pa.table([column], schema=pa.schema([pa.field("c", column.type)]))
    return pa.table([values], schema=pa.schema([leaf]))


def _break_utf8(uri: str) -> None:
    """Overwrite the marker's first byte in the only data file with 0xFF (never valid UTF-8)."""
    (path,) = glob.glob(f"{uri}/data/*.lance")
    data = bytearray(open(path, "rb").read())
    assert data.count(MARKER) == 1
    data[data.find(MARKER)] = 0xFF
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("shape", ["flat", "large", "list_of_struct"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", VERSIONS)
def test_text_that_is_not_utf8_raises_corrupt(uri, version, writer, shape):
    """2.1/2.2 string pages were not UTF-8 checked: the scan returned an array failing
    ``validate(full=True)`` (``to_pylist`` aborts on it, DuckDB crashes)."""
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(_text_table(shape), uri, data_storage_version=version)
    _break_utf8(uri)
    ds = lance_fw.dataset(uri)
    with pytest.raises(CorruptFileError, match=r"\.lance.*UTF8"):
        ds.to_table()
    with pytest.raises(CorruptFileError, match="UTF8"):
        ds.take([4321])
    assert ds.take([0, 1]).num_rows == 2  # rows of other chunks still read


@pytest.mark.parametrize("version", VERSIONS)
def test_non_ascii_text_reads_back(uri, version):
    """The UTF-8 check (with its ASCII shortcut) must not refuse real multi-byte text."""
    words = ["héllo", "日本語", "", "emoji 🎉", "ascii", None, "\u0000nul", "ÿ"]
    table = pa.table({"s": pa.array([words[i % len(words)] + ("" if i % 3 else str(i)) if words[i % len(words)]
                                     is not None else None for i in range(ROWS)])})
    lance.write_dataset(table, uri, data_storage_version=version)
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert_tables_equal(lance.dataset(uri).take([7, 4097]), lance_fw.dataset(uri).take([7, 4097]))


def test_leaf_columns_that_disagree_raise_corrupt():
    """The leaf columns of a list<struct<x, y>> agree on the list lengths in any sound file; merged
    as they were, disagreeing ones made an ArrowInvalid (or an invalid array) instead of a typed error."""
    from lance_fw.file import structure_v2_1
    from lance_fw.schema import LanceSchema

    item = pa.struct([("x", pa.int32()), ("y", pa.int32())])
    (field,) = LanceSchema.from_arrow(pa.schema([pa.field("c", pa.list_(item))])).fields
    def path(lengths, name):
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        leaf = pa.array(np.arange(int(np.sum(lengths)), dtype=np.int32))
        inner = pa.StructArray.from_arrays([leaf], names=[name])
        return pa.ListArray.from_arrays(offsets, inner)
    good = structure_v2_1.merge(field, [path([2, 1], "x"), path([2, 1], "y")], "f.lance")
    assert good.to_pylist() == [[{"x": 0, "y": 0}, {"x": 1, "y": 1}], [{"x": 2, "y": 2}]]
    for other in ([1, 1], [1, 2]):
        with pytest.raises(CorruptFileError, match="f.lance"):
            structure_v2_1.merge(field, [path([2, 1], "x"), path(other, "y")], "f.lance")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lance", "lance_fw"])
def test_non_nullable_text_under_null_structs(tmp_path, writer, version):
    """A struct that may be null over a non-nullable string child (Spark's ``named_struct``): the
    leaf's path array has nulls in a non-nullable child, which must not fail page validation."""
    rows = 5000
    child = pa.array([f"y{i}" if i % 9 else None for i in range(rows)])
    st = pa.StructArray.from_arrays([pa.array(range(rows), pa.int64()), child],
                                    fields=[pa.field("x", pa.int64(), False), pa.field("y", pa.string(), False)],
                                    mask=pa.array([i % 9 == 0 for i in range(rows)]))
    table = pa.table({"st": st})
    uri = str(tmp_path / "ds")
    (lance if writer == "lance" else lance_fw).write_dataset(table, uri, data_storage_version=version)
    expected = lance.dataset(uri).to_table()
    assert lance_fw.dataset(uri).to_table().to_pylist() == expected.to_pylist() == table.to_pylist()
    assert lance_fw.dataset(uri).take([0, 1, 4999, 9]).to_pylist() == lance.dataset(uri).take([0, 1, 4999, 9]).to_pylist()
