"""Nested 2.1/2.2 shapes that the interop property suite found misread or miswritten (issue 10
item 6), each replayed in the direction that failed, with pylance as the oracle: full reads,
``take`` and a read after a delete."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from conftest import assert_tables_equal
from lance_fw_plugins.encodings_v2_1 import fastlanes

DATA = Path(__file__).parent / "data"
VERSIONS = ["2.1", "2.2"]


def saved(name: str) -> pa.Table:
    """A table saved by the property suite (the take re-aligns IPC buffers for pylance)."""
    table = pa.ipc.open_file(DATA / name).read_all()
    return table.take(pa.array(range(table.num_rows)))


def same(expected: pa.Table, actual: pa.Table) -> None:
    """``assert_tables_equal``, with NaNs equal to NaNs (Arrow's ``equals`` holds them unequal)."""
    assert actual.column_names == expected.column_names
    assert repr(actual.to_pylist()) == repr(expected.to_pylist())
    if not _has_nan(expected):
        assert_tables_equal(expected, actual)


def _has_nan(table: pa.Table) -> bool:
    """Errs towards True (text holding 'nan'): then only the repr comparison above holds."""
    return "nan" in repr(table.to_pylist())


def check_reads(uri: str, expected: pa.Table | None = None) -> None:
    """lance_fw reads what pylance reads: whole, by take, after a delete."""
    oracle = lance.dataset(uri).to_table()
    if expected is not None:
        same(expected, oracle)
    same(oracle, lance_fw.dataset(uri).to_table())
    rows = np.unique(np.random.default_rng(0).integers(0, oracle.num_rows, 60))
    same(lance.dataset(uri).take(rows), lance_fw.dataset(uri).take(rows))
    lance.dataset(uri).delete("_rowid % 7 = 3")
    same(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())


def write(writer: str, table: pa.Table, uri: str, version: str) -> None:
    (lance.write_dataset if writer == "pylance" else lance_fw.write_dataset)(table, uri, data_storage_version=version)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("options", [{}, {"max_rows_per_file": 1024}], ids=["one_file", "rpf1024"])
def test_list_list_fsb_pylance_writes(uri, version, options):
    """A mini-block chunk of 2240 def levels packed 3 bits wide: pylance stores its 192-level tail
    raw (as wide as the padded block), which was read as a packed block (a null item read as
    b'\\x00\\x00')."""
    table = saved("list_list_fsb_rpf1024.arrow")
    lance.write_dataset(table, uri, data_storage_version=version, **options)
    check_reads(uri, table)


@pytest.mark.parametrize("width,count", [(3, 1024 + 192), (3, 192), (1, 64), (2, 2048 + 128), (3, 1024 + 100),
                                         (3, 1024 + 900), (5, 4096)])
def test_out_of_line_tail_as_pylance(width, count):
    """pylance's rule for the last partial 1024-value block: packed (zero-padded) only when the
    padding costs fewer bits than packing saves, else raw; on a tie the raw tail is as long as a
    packed block and the reader takes it as raw."""
    values = np.random.default_rng(count).integers(0, 1 << width, count).astype(np.uint16)
    packed = fastlanes.pack_out_of_line(values, width, 16)
    full, rest = divmod(count, 1024)
    pad_cost, savings = width * (1024 - rest), (16 - width) * rest
    raw_tail = rest and not pad_cost < savings
    assert packed.size == full * 64 * width + (rest if raw_tail else 64 * width * bool(rest))
    assert np.array_equal(fastlanes.unpack(packed, width, 16, count), values)


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", VERSIONS)
def test_list_of_struct_null_structs(uri, version, writer):
    """``list<struct<int32>>`` with null structs: a chunk's def levels end in a raw tail as long
    as a packed block (pylance-written: 'page holds 1197 values for 1211 visible items';
    lance_fw-written: pylance panicked, index out of bounds)."""
    table = saved("list_of_struct_null_structs.arrow")
    write(writer, table, uri, version)
    check_reads(uri, table)


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", VERSIONS)
def test_struct_of_list_of_fsl_null_structs(uri, version, writer):
    """``struct<list<fixed_size_list<double>[4]>, int8>`` with null structs and lists (lance_fw-
    written: pylance 'Item range 0..134 is greater than chunk items in chunk 128', and a panic
    after a delete)."""
    table = saved("struct_list_fsl_2_2_fw_writes.arrow")
    write(writer, table, uri, version)
    check_reads(uri, table)


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("version", VERSIONS)
def test_list_of_struct_mostly_null_lists(uri, version, writer):
    """4080 rows, 3997 null lists, 36 items: 2.1 chunks hold at most 4096 levels, so the bit-
    packed values' chunk is cut short of a 1024-value block (lance_fw's 2.1 write raised an
    untyped ValueError)."""
    table = saved("list_of_struct_mostly_null_lists_write_crash.arrow")
    write(writer, table, uri, version)
    check_reads(uri, table)


@pytest.mark.parametrize("version", VERSIONS)
def test_list_bool_all_valid_chunks_rpf700(uri, version):
    """``list<bool>`` with runs of null lists, 700 rows a file: a chunk whose levels are all 0
    inline-bitpacks each 1024-level block as its 2-byte width word alone (was CorruptFileError
    '700 levels cannot come from 2 bytes')."""
    table = saved("list_bool_runs_rpf700.arrow")
    lance.write_dataset(table, uri, data_storage_version=version, max_rows_per_file=700)
    check_reads(uri, table)
