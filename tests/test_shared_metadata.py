"""Data file metadata parsed once per process (``read_support.shared_metadata``), never stale.

Every open of an unchanged data file shares one parse of its metadata, so that what decoders
keep per page (chunk tables, dictionaries) serves a dataset opened per query. Sharing must never
hand out the metadata of bytes the file no longer holds: the file's identity and the metadata
bytes themselves are compared at every open.
"""

from __future__ import annotations

import shutil

import lance
import lance.file as pl_file
import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal

import lance_fw
import lance_fw.file as fw_file
from lance_fw.errors import CorruptFileError
from lance_fw.file import read_support
from lance_fw.file.reader import LanceFileReader
from lance_fw.io.storage import resolve_storage


def _file(path: str, seed: int, rows: int = 20_000) -> None:
    rng = np.random.default_rng(seed)
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64) * seed),
        "name": pa.array([f"row {i} of {seed}" for i in rng.integers(0, 5_000, rows)]),
        "x": pa.array(rng.normal(size=rows)),
    })
    with pl_file.LanceFileWriter(path, version="2.1") as writer:
        writer.write_batch(table)


def _tail(path: str):
    return LanceFileReader(resolve_storage(path), path).tail


def test_reopened_file_shares_one_parse(tmp_path):
    path = str(tmp_path / "a.lance")
    _file(path, 1)
    assert _tail(path) is _tail(path)


def test_dataset_reopened_per_query_parses_each_file_once(uri, monkeypatch):
    lance.write_dataset(pa.table({"id": np.arange(50_000)}), uri, max_rows_per_file=20_000)
    parsed: list[str] = []
    original = read_support.read_metadata

    def counting(reader):
        parsed.append(reader.path)
        return original(reader)

    monkeypatch.setattr(read_support, "read_metadata", counting)
    for _ in range(3):  # a query per open, as DuckDB and the bench run them
        rows = [5, 25_000, 49_999]
        assert_tables_equal(lance.dataset(uri).take(rows), lance_fw.dataset(uri).take(rows))
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert len(parsed) == 3 and len(set(parsed)) == 3, parsed


@pytest.mark.parametrize("same_identity", [True, False])
def test_other_bytes_at_the_same_path_are_parsed_again(tmp_path, monkeypatch, same_identity):
    """A file replaced by another (even one whose identity the backend reports unchanged, as a
    rewrite within one timestamp tick could) reads as the new file, as pylance reads it."""
    if same_identity:
        monkeypatch.setattr("lance_fw_plugins.storage_local.LocalReader.identity", lambda self: "same")
    path, other = str(tmp_path / "x.lance"), str(tmp_path / "y.lance")
    _file(path, 1)
    _file(other, 7, rows=30_000)
    before = fw_file.LanceFileReader(path).read_all().to_table()
    assert before.num_rows == 20_000
    old_tail = _tail(path)
    shutil.copyfile(other, path)
    assert _tail(path) is not old_tail
    assert_tables_equal(
        pl_file.LanceFileReader(path).read_all().to_table(), fw_file.LanceFileReader(path).read_all().to_table()
    )


def test_damaged_metadata_after_an_open_is_found(tmp_path, monkeypatch):
    """A byte of the metadata changed in place after the file was opened (identity unchanged):
    the next open parses the damaged bytes and says so, never the earlier parse."""
    monkeypatch.setattr("lance_fw_plugins.storage_local.LocalReader.identity", lambda self: "same")
    path = str(tmp_path / "x.lance")
    _file(path, 3)
    fw_file.LanceFileReader(path).read_all().to_table()
    size = len(open(path, "rb").read())
    with open(path, "r+b") as out:  # the footer's magic
        out.seek(size - 2)
        out.write(b"??")
    with pytest.raises(CorruptFileError):
        fw_file.LanceFileReader(path).read_all().to_table()


def test_only_backends_with_an_identity_share(tmp_path, monkeypatch):
    monkeypatch.setattr("lance_fw_plugins.storage_local.LocalReader.identity", lambda self: None)
    path = str(tmp_path / "a.lance")
    _file(path, 1)
    assert _tail(path) is not _tail(path)


def test_first_open_reads_the_tail_then_the_metadata_once(tmp_path, monkeypatch):
    """A first open reads the file's last 64 KiB (footer, offset tables, column metadata,
    descriptor) and then the metadata bytes it keeps to compare later opens with: two reads, not
    four (the footer and the column offset table were read again to find where the metadata
    starts). A later open reads only those bytes, and the kept bytes are the file's own."""
    from lance_fw_plugins.storage_local import LocalReader

    path = str(tmp_path / "a.lance")
    _file(path, 3)
    reads: list[tuple[int, int]] = []
    original = LocalReader.read

    def counting(self, offset, length):
        reads.append((offset, length))
        return original(self, offset, length)

    monkeypatch.setattr(LocalReader, "read", counting)
    first = _tail(path)
    assert len(reads) == 2, reads
    size = (tmp_path / "a.lance").stat().st_size
    start = reads[1][0]
    assert reads[1] == (start, size - start) and start == first.metadata_start
    assert _tail(path) is first
    assert reads[2:] == [(start, size - start)]
    kept = read_support._SHARED.get((path, LocalReader(path).identity()))
    assert kept is not None and kept[1] == (tmp_path / "a.lance").read_bytes()[start:]
    # everything the parse read lies from there on: a copy with the bytes before it zeroed parses alike
    blanked = tmp_path / "blanked.lance"
    blanked.write_bytes(bytes(start) + (tmp_path / "a.lance").read_bytes()[start:])
    other = read_support.read_metadata(LocalReader(str(blanked))).tail
    assert (other.columns, other.descriptor, other.global_buffers) == (
        first.columns, first.descriptor, first.global_buffers)
