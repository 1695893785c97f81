"""``lance-encoding:structural-encoding`` on a field, against pylance: full-zip or mini-block
pages whatever the values' width, where pylance writes them (a page dictionary or a constant
takes precedence), the same refusal of other values, and each engine reading the other's pages
back exactly (pylance's full-zip booleans are a byte each, which lance_fw did not read)."""

from __future__ import annotations

import glob

import lance
import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal

import lance_fw
from lance_fw.errors import InvalidUserInputError
from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage
from tests.test_fsst import value_encodings

RNG = np.random.default_rng(35)
ROWS = 20_000
FRAGMENT_ROWS = 12_000
KEY = "lance-encoding:structural-encoding"
VALUES = {
    "int32": lambda: pa.array(RNG.integers(0, 1000, ROWS).astype(np.int32)),
    "int32 with nulls": lambda: pa.array(RNG.integers(0, 1000, ROWS).astype(np.int32), mask=RNG.random(ROWS) < 0.1),
    "uint8": lambda: pa.array(RNG.integers(0, 255, ROWS).astype(np.uint8)),
    "bool": lambda: pa.array(RNG.random(ROWS) < 0.5),
    "bool with nulls": lambda: pa.array(RNG.random(ROWS) < 0.5, mask=RNG.random(ROWS) < 0.1),
    "list<int32>": lambda: pa.array([list(range(i % 5)) for i in range(ROWS)], pa.list_(pa.int32())),
    "unique strings": lambda: pa.array([f"row {i} " * 3 for i in range(ROWS)]),
    "wide strings": lambda: pa.array([f"{i} " + "lance format " * 30 for i in range(3000)]),
    "low-cardinality strings": lambda: pa.array([f"x{i % 7}" for i in range(ROWS)]),
    "fsl<f32,128>": lambda: pa.FixedSizeListArray.from_arrays(pa.array(RNG.random(3000 * 128, dtype=np.float32)), 128),
    "constant": lambda: pa.array([7] * ROWS, pa.int32()),
}


def _table(values: pa.Array, hint: str) -> pa.Table:
    return pa.table([values], schema=pa.schema([pa.field("c", values.type, metadata={KEY: hint})]))


def _layouts(path: str, column: int = 0) -> list[str]:
    return [layout for layout, _ in value_encodings(path, column)]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("hint", ["fullzip", "miniblock"])
@pytest.mark.parametrize("kind", list(VALUES))
def test_structural_encoding_as_pylance(tmp_path, version, hint, kind):
    table = _table(VALUES[kind](), hint)
    theirs, ours = str(tmp_path / "pylance"), str(tmp_path / "lance_fw")
    lance.write_dataset(table, theirs, data_storage_version=version, max_rows_per_file=FRAGMENT_ROWS)
    lance_fw.write_dataset(table, ours, data_storage_version=version, max_rows_per_file=FRAGMENT_ROWS)
    assert _layouts(ours) == _layouts(theirs)
    assert_tables_equal(table, lance.dataset(ours).to_table())
    assert_tables_equal(table, lance_fw.dataset(theirs).to_table())
    assert_tables_equal(table, lance_fw.dataset(ours).to_table())
    rows = [r for r in (0, 1023, 1024, FRAGMENT_ROWS - 1, FRAGMENT_ROWS, table.num_rows - 1) if r < table.num_rows]
    for path in (theirs, ours):
        assert_tables_equal(lance.dataset(path).take(rows), lance_fw.dataset(path).take(rows))


def test_unknown_structural_encoding_refused(tmp_path):
    """pylance: ``OSError`` "Invalid user input: Cannot determine structural encoding"; lance_fw:
    ``InvalidUserInputError`` (an ``OSError`` too) naming the field and value, nothing committed."""
    table = _table(VALUES["int32"](), "columnar")
    with pytest.raises(OSError, match="Cannot determine structural encoding"):
        lance.write_dataset(table, str(tmp_path / "pylance"))
    with pytest.raises(InvalidUserInputError, match="column 'c'.*'columnar'"):
        lance_fw.write_dataset(table, str(tmp_path / "lance_fw"))
    assert not glob.glob(str(tmp_path / "lance_fw" / "_versions" / "*"))


def test_damaged_byte_booleans_are_a_corrupt_file(uri):
    """A full-zip boolean byte other than 0 or 1 is damage, never a value."""
    table = _table(pa.array([True, False] * 5000), "fullzip")
    lance_fw.write_dataset(table, uri)
    (name,) = glob.glob(f"{uri}/data/*.lance")
    tail = read_tail(resolve_storage(name).open_reader(name))
    page = tail.columns[-1].pages[0]
    data = open(name, "rb").read()
    start, size = page.buffer_offsets[0], page.buffer_sizes[0]
    at = start + data[start : start + size].index(b"\x01")  # a True's byte
    with open(name, "r+b") as f:
        f.seek(at)
        f.write(b"\x02")
    with pytest.raises(lance_fw.errors.CorruptFileError, match="0 and 1"):
        lance_fw.dataset(uri).to_table()


@pytest.mark.parametrize(
    "table",
    [
        _table(pa.array(np.arange(ROWS, dtype=np.int32)), "FullZip"),  # pylance lowercases it
        pa.table(
            [pa.StructArray.from_arrays([pa.array(np.arange(ROWS)), pa.array(RNG.random(ROWS) < 0.5)], names=["a", "b"])],
            schema=pa.schema([pa.field("s", pa.struct([("a", pa.int64()), ("b", pa.bool_())]), metadata={KEY: "fullzip"})]),
        ),
    ],
    ids=["mixed case", "struct field's hint for its leaves"],
)
def test_structural_hint_spelling_and_scope_as_pylance(tmp_path, table):
    theirs, ours = str(tmp_path / "pylance"), str(tmp_path / "lance_fw")
    lance.write_dataset(table, theirs)
    lance_fw.write_dataset(table, ours)
    for column in range(table.schema[0].type.num_fields if pa.types.is_struct(table.schema[0].type) else 1):
        assert _layouts(ours, column) == _layouts(theirs, column)
    assert_tables_equal(table, lance.dataset(ours).to_table())
    assert_tables_equal(table, lance_fw.dataset(theirs).to_table())
