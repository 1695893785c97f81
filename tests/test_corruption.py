"""Damaged datasets: every failure is a typed ``LanceError`` naming the file, never a raw
struct / protobuf / Arrow / IndexError traceback, and never a hang.

Datasets are small file-format-2.0 datasets written by lance_fw and by pylance (the oracle).
Byte sweeps flip every byte of a region and read the whole dataset back each time.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import os
import signal
import struct
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw._proto import file2_pb2, table_pb2
from lance_fw.errors import CorruptFileError, DatasetNotFoundError, LanceError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import encode_manifest, read_manifest

V = "2.0"
FOOTER = struct.Struct("<QQQIIHH4s")  # column_meta_start, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic
N = 30

WRITERS = {"lance_fw": lance_fw.write_dataset, "pylance": lance.write_dataset}


def small_table(n: int = N) -> pa.Table:
    return pa.table({
        "i": pa.array([i if i % 4 else None for i in range(n)], pa.int32()),
        "s": pa.array([f"s{i}" * (i % 3) if i % 5 else None for i in range(n)]),
        "l": pa.array([[i, i + 1] if i % 3 else None for i in range(n)], pa.list_(pa.int64())),
        "st": pa.array([{"a": i, "b": str(i)} for i in range(n)], pa.struct([("a", pa.int16()), ("b", pa.string())])),
    })


# --- helpers --------------------------------------------------------------------------------------

class Hang(AssertionError):
    pass


@contextlib.contextmanager
def no_hang(seconds: int = 20):
    """Fail (instead of hanging the suite) when the body runs longer than ``seconds``."""
    def on_alarm(signum, frame):
        raise Hang(f"read did not finish within {seconds}s")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class CountMismatch(AssertionError):
    pass


def read_all(uri: str) -> pa.Table:
    ds = lance_fw.dataset(uri)
    table = ds.to_table()
    if ds.count_rows() != table.num_rows:
        raise CountMismatch(f"count_rows() says {ds.count_rows()}, to_table() has {table.num_rows} rows")
    return table


def assert_error_names(uri: str, path: str, cls: type[LanceError] = LanceError) -> LanceError:
    """Reading ``uri`` raises ``cls`` whose message names ``path``'s file."""
    with no_hang(), pytest.raises(cls) as info:
        read_all(uri)
    assert os.path.basename(path) in str(info.value), f"message does not name {path}: {info.value}"
    return info.value


def data_files(uri: str) -> list[str]:
    return sorted(glob.glob(f"{uri}/data/*.lance"))


def manifests(uri: str) -> list[str]:
    return sorted(glob.glob(f"{uri}/_versions/*.manifest"))  # V2 names: newest first


def deletion_files(uri: str) -> list[str]:
    return sorted(glob.glob(f"{uri}/_deletions/*"))


def put(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def get(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def flipped(data: bytes, pos: int, mask: int) -> bytes:
    out = bytearray(data)
    out[pos] ^= mask
    return bytes(out)


@pytest.fixture(params=list(WRITERS))
def written(request, tmp_path):
    """(uri, lance_fw's reading of it) for a small multi-page 2.0 dataset, one data file."""
    uri = str(tmp_path / "ds")
    WRITERS[request.param](small_table(), uri, data_storage_version=V, max_page_bytes=128)
    assert len(data_files(uri)) == 1
    original = read_all(uri)
    assert original.equals(small_table())
    return uri, original


# --- data file tail ------------------------------------------------------------------------------

class Tail:
    """The parsed tail of a 2.0 data file (parsed here, independently of lance_fw's reader)."""

    def __init__(self, data: bytes):
        self.data = data
        (self.col_start, self.cmo_pos, self.gbo_pos, n_gb, n_cols, self.major, self.minor,
         magic) = FOOTER.unpack_from(data, len(data) - FOOTER.size)
        assert magic == b"LANC"
        cmo = np.frombuffer(data, "<u8", n_cols * 2, self.cmo_pos).reshape(-1, 2)
        self.gbs = [tuple(int(x) for x in r) for r in np.frombuffer(data, "<u8", n_gb * 2, self.gbo_pos).reshape(-1, 2)]
        self.columns = [file2_pb2.ColumnMetadata.FromString(data[p:p + n]) for p, n in cmo]
        gb0 = self.gbs[0]
        self.descriptor = file2_pb2.FileDescriptor.FromString(data[gb0[0]:gb0[0] + gb0[1]])

    def encode(self) -> bytes:
        """The file with this (possibly edited) tail: descriptor, column metadata, tables, footer."""
        out = bytearray(self.data[:self.col_start])
        desc = self.descriptor.SerializeToString()
        gbs = [(len(out), len(desc))] + self.gbs[1:]
        out += desc
        col_start = len(out)
        offsets = []
        for col in self.columns:
            blob = col.SerializeToString()
            offsets.append((len(out), len(blob)))
            out += blob
        cmo_pos = len(out)
        out += np.array(offsets, "<u8").tobytes()
        gbo_pos = len(out)
        out += np.array(gbs, "<u8").tobytes()
        out += FOOTER.pack(col_start, cmo_pos, gbo_pos, len(gbs), len(self.columns), self.major, self.minor, b"LANC")
        return bytes(out)


def test_tail_helper_round_trips(written):
    uri, original = written
    path = data_files(uri)[0]
    put(path, Tail(get(path)).encode())
    assert read_all(uri).equals(original)


# --- byte sweeps -----------------------------------------------------------------------------------

#: Escapes of known core bugs, each with a strict-xfail minimal reproduction at the end of this
#: module; sweeps tolerate exactly these so that anything new still fails them.
KNOWN_DELETION_ESCAPES: list = []


def _is_known(exc: BaseException, known) -> bool:
    return any(isinstance(exc, cls) and text in str(exc) for cls, text in known)


def sweep(uri: str, path: str, positions, masks=(0xFF,), *, original: pa.Table | None, results: str,
          names=None, known=()) -> dict[str, int]:
    """Flip each byte of ``path`` at ``positions`` (one at a time) and read the dataset.

    ``results``: which successful reads are fine: ``"any"`` (damage the format cannot detect),
    ``"same"`` (only the original data) or ``"none"`` (every flip must raise).
    A ``LanceError`` must name ``path`` (or one of ``names``); anything else fails, except
    ``known`` escapes. Returns a count of the outcomes.
    """
    clean = get(path)
    names = names or [os.path.basename(path)]
    problems, counts = [], {"error": 0, "same": 0, "different": 0, "known bug": 0}
    try:
        for pos in positions:
            for mask in masks:
                put(path, flipped(clean, pos, mask))
                where = f"byte {pos} ^ {mask:#x}"
                try:
                    with no_hang():
                        table = read_all(uri)
                except LanceError as exc:
                    counts["error"] += 1
                    if not any(n in str(exc) for n in names):
                        problems.append(f"{where}: {type(exc).__name__} does not name the file: {exc}")
                except Exception as exc:  # noqa: BLE001 - that is the point
                    if _is_known(exc, known):
                        counts["known bug"] += 1
                    else:
                        problems.append(f"{where}: {type(exc).__name__}: {exc}")
                else:
                    same = original is not None and table.equals(original)
                    counts["same" if same else "different"] += 1
                    if results == "none" or (results == "same" and not same):
                        problems.append(f"{where}: read succeeded ({'same' if same else 'different'} data)")
    finally:
        put(path, clean)
    assert not problems, f"{len(problems)} bad outcomes, e.g.:\n" + "\n".join(problems[:15])
    return counts


def test_data_file_footer_damage(written):
    uri, original = written
    path = data_files(uri)[0]
    size = os.path.getsize(path)
    # column_meta_start (footer bytes 0..7) is redundant (the offset table locates the metadata)
    sweep(uri, path, range(size - 40, size - 32), (0xFF, 0x01, 0x80), original=original, results="same")
    counts = sweep(uri, path, range(size - 32, size), (0xFF, 0x01, 0x80), original=original, results="none")
    assert counts["error"] == 32 * 3


def test_data_file_offset_tables_damage(written):
    """A changed length may still frame parseable metadata (e.g. a column's metadata followed by the
    next column's encoding field, which protobuf merges harmlessly): then the data must be intact."""
    uri, original = written
    path = data_files(uri)[0]
    tail = Tail(get(path))
    counts = sweep(uri, path, range(tail.cmo_pos, os.path.getsize(path) - 40), (0xFF, 0x80),
                   original=original, results="same")
    assert counts["error"] > 0.9 * sum(counts.values())


def test_data_file_column_metadata_damage(written):
    """Flipped varints may point at other bytes of the file (no checksums): wrong data is possible,
    but every failure must be a LanceError naming the file."""
    uri, original = written
    path = data_files(uri)[0]
    tail = Tail(get(path))
    counts = sweep(uri, path, range(tail.col_start, tail.cmo_pos), (0xFF, 0x01), original=original,
                   results="any")
    assert counts["error"] > counts["different"]


@pytest.mark.parametrize("fill", [b"\x00", b"\xff"])
def test_data_file_column_metadata_overwritten(written, fill):
    uri, _ = written
    path = data_files(uri)[0]
    data = get(path)
    tail = Tail(data)
    put(path, data[:tail.col_start] + fill * (tail.cmo_pos - tail.col_start) + data[tail.cmo_pos:])
    assert_error_names(uri, path, CorruptFileError)


def test_data_file_page_buffers_damage(written):
    """A flipped page buffer may decode to other values; it must never raise anything else."""
    uri, original = written
    path = data_files(uri)[0]
    tail = Tail(get(path))
    gb0_start, gb0_len = tail.gbs[0]
    pages = [p for p in range(tail.col_start) if not gb0_start <= p < gb0_start + gb0_len]
    sweep(uri, path, pages, (0xFF, 0x01), original=original, results="any")


def test_data_file_descriptor_damage(written):
    """Global buffer 0 (schema and row count)."""
    uri, original = written
    path = data_files(uri)[0]
    start, length = Tail(get(path)).gbs[0]
    sweep(uri, path, range(start, start + length), (0xFF, 0x01), original=original, results="any")


@pytest.mark.parametrize("cut", ["half", "minus_one", "ten_bytes", "empty", "footer_only"])
def test_truncated_data_file(written, cut):
    uri, _ = written
    path = data_files(uri)[0]
    data = get(path)
    keep = {"half": len(data) // 2, "minus_one": len(data) - 1, "ten_bytes": 10, "empty": 0}.get(cut)
    put(path, data[:keep] if keep is not None else data[-40:])
    assert_error_names(uri, path, CorruptFileError)


def test_data_file_with_garbage_appended(written):
    uri, _ = written
    path = data_files(uri)[0]
    put(path, get(path) + b"garbage" * 3)
    assert_error_names(uri, path, CorruptFileError)


def test_missing_data_file(written):
    uri, _ = written
    path = data_files(uri)[0]
    os.unlink(path)
    assert_error_names(uri, path)


def test_data_file_of_unknown_version(written):
    uri, _ = written
    path = data_files(uri)[0]
    tail = Tail(get(path))
    tail.major, tail.minor = 2, 9
    put(path, tail.encode())
    assert_error_names(uri, path, UnsupportedFeatureError)


# --- manifests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["half", "minus_one", "ten_bytes", "zero_bytes", "garbage_appended",
                                    "garbage"])
def test_damaged_manifest(written, damage):
    uri, _ = written
    path = manifests(uri)[0]
    data = get(path)
    put(path, {"half": data[:len(data) // 2], "minus_one": data[:-1], "ten_bytes": data[:10], "zero_bytes": b"",
               "garbage_appended": data + b"garbage", "garbage": bytes(range(256)) * 2}[damage])
    assert_error_names(uri, path, CorruptFileError)


def test_damaged_older_manifest_does_not_matter_for_latest(written):
    uri, _ = written
    lance_fw.write_dataset(small_table(), uri, mode="append")
    old, new = manifests(uri)[1], manifests(uri)[0]  # V2 names sort newest first
    put(old, b"")
    assert lance_fw.dataset(uri).count_rows() == 2 * N
    with pytest.raises(CorruptFileError, match=os.path.basename(old)):
        lance_fw.dataset(uri, version=1)
    assert os.path.basename(new) != os.path.basename(old)


def test_manifest_damage_sweep(written):
    """Flipped manifest bytes: LanceErrors name the manifest (or the data / deletion file whose
    name or metadata the flip changed)."""
    uri, original = written
    lance.dataset(uri).delete("i < 10")
    original = read_all(uri)
    path = manifests(uri)[0]
    sweep(uri, path, range(os.path.getsize(path)), (0xFF, 0x01), original=original, results="any",
          names=[os.path.basename(path), "/data/", "/_deletions/"])


def _rewrite_manifest(path: str, edit) -> None:
    storage = resolve_storage(path)
    manifest, index_section = read_manifest(storage, path)
    edit(manifest)
    put(path, encode_manifest(manifest, None, index_section))


def test_manifest_rewrite_helper_round_trips(written):
    uri, original = written
    _rewrite_manifest(manifests(uri)[0], lambda m: None)
    assert read_all(uri).equals(original)
    assert lance.dataset(uri).to_table().equals(original)


def test_unknown_reader_feature_flag(written):
    uri, _ = written

    def edit(manifest: table_pb2.Manifest) -> None:
        manifest.reader_feature_flags |= 1 << 10

    _rewrite_manifest(manifests(uri)[0], edit)
    with pytest.raises(UnsupportedFeatureError, match="1024"):
        lance_fw.dataset(uri)


def test_no_dataset_here(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(str(tmp_path / "nothing"))
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(str(tmp_path))  # exists, but empty
    (tmp_path / "data").mkdir()
    (tmp_path / "_versions").mkdir()
    (tmp_path / "_versions" / "notes.txt").write_text("not a manifest")
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(str(tmp_path))


def test_version_that_does_not_exist(written):
    uri, _ = written
    for version in (0, 2, 99):
        with pytest.raises(DatasetNotFoundError, match=str(version)):
            lance_fw.dataset(uri, version=version)
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(uri).checkout_version(5)


# --- deletion files --------------------------------------------------------------------------------

@pytest.fixture(params=["arrow", "bin"])
def with_deletions(request, tmp_path, written):
    """A dataset with one deletion file of each kind pylance writes (.arrow small, .bin roaring)."""
    if request.param == "arrow":
        uri, _ = written
        lance.dataset(uri).delete("i < 10")
    else:
        uri = str(tmp_path / "roaring")
        lance.write_dataset(pa.table({"x": pa.array(range(12_000), pa.int64())}), uri, data_storage_version=V)
        lance.dataset(uri).delete("x % 2 = 0")  # > 5000 rows -> a roaring bitmap
    (path,) = deletion_files(uri)
    assert path.endswith("." + request.param)
    return uri, path, read_all(uri)


@pytest.mark.parametrize("damage", ["garbage", "half", "ten_bytes", "zero_bytes"])
def test_damaged_deletion_file(with_deletions, damage):
    uri, path, _ = with_deletions
    data = get(path)
    put(path, {"garbage": bytes(range(7, 107)), "half": data[:len(data) // 2], "ten_bytes": data[:10],
               "zero_bytes": b""}[damage])
    assert_error_names(uri, path, CorruptFileError)


def test_missing_deletion_file(with_deletions):
    uri, path, _ = with_deletions
    os.unlink(path)
    assert_error_names(uri, path)


def test_deletion_file_damage_sweep(with_deletions):
    uri, path, original = with_deletions
    size = os.path.getsize(path)
    positions = range(size) if size < 2000 else range(0, size, 7)
    sweep(uri, path, positions, (0xFF, 0x01), original=original, results="any", known=KNOWN_DELETION_ESCAPES)


# --- minimal reproductions of core bugs the sweeps found ------------------------------------------
# Fixed ones stay as regression tests; open ones are strict xfails (they flip to failures once
# fixed: then drop the marker and the matching KNOWN_* entry).

def _first_page_of(tail: Tail, name: str):
    """The first page of the column of field ``name`` (2.0: one column per field, in schema pre-order)."""
    order = [f.name for f in tail.descriptor.schema.fields]
    return tail.columns[order.index(name)].pages[0]


def test_page_with_more_offsets_than_sizes(uri):
    """Was a RuntimeError (StopIteration in LanceFileReader._decode_pages)."""
    lance_fw.write_dataset(small_table(), uri, data_storage_version=V)
    path = data_files(uri)[0]
    tail = Tail(get(path))
    page = _first_page_of(tail, "i")
    assert len(page.buffer_sizes) == 2  # validity + values
    del page.buffer_sizes[-1]
    put(path, tail.encode())
    assert_error_names(uri, path, CorruptFileError)


@pytest.mark.parametrize("case", ["flat_on_string", "struct_on_struct_child", "struct_on_top_level_int"])
def test_encoding_that_does_not_fit_the_column_type(uri, case):
    """Were a ValueError from pa.Array.from_buffers, an ArrowInvalid from StructArray.from_arrays, and
    a column silently read as all nulls."""
    from google.protobuf import any_pb2

    from lance_fw._proto import encodings_v2_0_pb2 as pb

    lance_fw.write_dataset(small_table(), uri, data_storage_version=V)
    path = data_files(uri)[0]
    tail = Tail(get(path))
    if case == "flat_on_string":
        enc = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=8, buffer=pb.Buffer(buffer_index=0)))
        page = _first_page_of(tail, "s")
    else:
        enc = pb.ArrayEncoding(struct=pb.SimpleStruct())
        page = _first_page_of(tail, "a" if case == "struct_on_struct_child" else "i")
    wrapped = any_pb2.Any(type_url="/lance.encodings.ArrayEncoding", value=enc.SerializeToString())
    page.encoding.direct.encoding = wrapped.SerializeToString()
    put(path, tail.encode())
    try:
        with no_hang():
            table = read_all(uri)
    except CorruptFileError as exc:
        assert os.path.basename(path) in str(exc)
    else:
        raise AssertionError(f"the damaged file read without error: {table.slice(0, 3).to_pylist()}")


@pytest.mark.parametrize("where", ["manifest", "data_file"])
def test_schema_errors_name_the_file(uri, where):
    """Was a SchemaError without the file's name."""
    lance_fw.write_dataset(small_table(), uri, data_storage_version=V)
    if where == "manifest":
        path = manifests(uri)[0]

        def edit(manifest):
            manifest.fields[0].logical_type = "hnt32"

        _rewrite_manifest(path, edit)
    else:
        path = data_files(uri)[0]
        tail = Tail(get(path))
        tail.descriptor.schema.fields[-1].parent_id = 999
        put(path, tail.encode())
    assert_error_names(uri, path, LanceError)


def test_arrow_deletion_file_with_invalid_field_name(uri):
    """Was a raw UnicodeDecodeError (ArrowMemoryError / ArrowNotImplementedError for other bytes)."""
    lance.write_dataset(small_table(), uri, data_storage_version=V)
    lance.dataset(uri).delete("i < 10")
    (path,) = deletion_files(uri)
    data = get(path)
    at = data.rindex(b"row_id")  # the field name in the IPC footer's schema
    put(path, data[:at] + b"\xff" + data[at + 1:])
    assert_error_names(uri, path, CorruptFileError)


def test_deletion_file_with_rows_past_the_fragment(uri):
    lance.write_dataset(small_table(), uri, data_storage_version=V)
    lance.dataset(uri).delete("i < 10")  # deletes rows 1, 2, 3, 5, 6, 7, 9
    (path,) = deletion_files(uri)
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as writer:  # same count, one offset past the 30 rows
        writer.write_table(pa.table({"row_id": pa.array([1, 2, 3, 5, 6, 7, 100], pa.uint32())}, schema=schema))
    put(path, sink.getvalue().to_pybytes())
    assert_error_names(uri, path, CorruptFileError)


def test_empty_roaring_deletion_file(uri):
    """Was pyroaring's raw IndexError."""
    lance.write_dataset(pa.table({"x": pa.array(range(12_000), pa.int64())}), uri, data_storage_version=V)
    lance.dataset(uri).delete("x % 2 = 0")
    (path,) = deletion_files(uri)
    put(path, b"")
    assert_error_names(uri, path, CorruptFileError)


def test_missing_file_leaves_no_unraisable_exception(uri, monkeypatch):
    """Was an AttributeError from LocalReader.__del__ ('Exception ignored in ...') after a failed open."""
    lance_fw.write_dataset(small_table(), uri, data_storage_version=V)
    os.unlink(data_files(uri)[0])
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    with pytest.raises(DatasetNotFoundError):
        read_all(uri)
    gc.collect()
    assert not seen, [f"{u.exc_type.__name__}: {u.exc_value}" for u in seen]


def test_a_path_that_is_a_directory_is_a_storage_error(tmp_path):
    """A damaged manifest can name a directory as a data file; os.open accepts it, reads fail."""
    from lance_fw.errors import StorageError
    from lance_fw.io.storage import resolve_storage

    with pytest.raises(StorageError, match=str(tmp_path)):
        resolve_storage(str(tmp_path)).open_reader(str(tmp_path))


@pytest.mark.parametrize("case", ["string_offsets_descend", "list_offsets_descend", "list_offsets_past_items",
                                  "invalid_utf8", "large_string_invalid_utf8"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_page_values_that_would_build_invalid_arrow(uri, writer, case):
    """Were arrays failing ``validate(full=True)`` (to_pylist aborts, DuckDB crashed) or an
    ``ArrowInvalid`` (issue 10, items 8 and 11): every 2.0 page is checked as it is decoded."""
    table = small_table().append_column("ls", pa.array([f"large{i}" for i in range(N)], pa.large_string()))
    WRITERS[writer](table, uri, data_storage_version=V)
    path = data_files(uri)[0]
    data = bytearray(get(path))
    tail = Tail(bytes(data))
    column = {"string_offsets_descend": "s", "invalid_utf8": "s", "large_string_invalid_utf8": "ls"}.get(case, "l")
    page = _first_page_of(tail, column)
    sizes = list(page.buffer_sizes)
    ends_at = page.buffer_offsets[sizes.index(N * 8)]  # the u64 end offsets, one per row
    ends = np.frombuffer(bytes(data[ends_at:ends_at + N * 8]), "<u8").copy()
    if case.endswith("offsets_descend"):
        ends[N // 2] = 0
    elif case == "list_offsets_past_items":
        ends[-1] += 5
    else:
        string_bytes = page.buffer_offsets[sizes.index(N * 8) + 1]  # the bytes follow the offsets
        data[string_bytes + 1] = 0xFF  # a byte that never occurs in UTF-8
    data[ends_at:ends_at + N * 8] = ends.tobytes()
    put(path, bytes(data))
    with no_hang(), pytest.raises(CorruptFileError) as info:
        table = lance_fw.dataset(uri).to_table()
        for chunk in (c for col in table.columns for c in col.chunks):
            chunk.validate(full=True)  # (before the fix: invalid arrays came back)
    assert os.path.basename(path) in str(info.value)
    with pytest.raises(CorruptFileError):
        lance_fw.dataset(uri).take(list(range(N)))


@pytest.mark.parametrize("column", ["n", "l", "item"])
def test_page_length_past_the_column_rows(uri, column):
    """Was an attempt to allocate 2**40 rows (an all-null page decodes to as many rows as it says):
    a column's page lengths must add up to the rows it holds (file rows, or the list's items)."""
    table = pa.table({"n": pa.nulls(N, pa.int64()), "l": pa.array([[None] * 3] * N, pa.list_(pa.int32()))})
    lance_fw.write_dataset(table, uri, data_storage_version=V)
    path = data_files(uri)[0]
    tail = Tail(get(path))
    index = {"n": 0, "l": 1, "item": 2}[column]  # 2.0: one column per field, in pre-order
    tail.columns[index].pages[0].length = 2**40
    put(path, tail.encode())
    with no_hang():
        assert_error_names(uri, path, CorruptFileError)
        with pytest.raises(CorruptFileError):
            lance_fw.dataset(uri).take([0, N - 1])
