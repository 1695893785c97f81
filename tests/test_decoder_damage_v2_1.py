"""Damaged 2.1/2.2 pages: the page decoder returns valid Arrow or raises CorruptFileError.

Issue 10, item 8. The pages come from files pylance and lance_fw write (5000 rows, so several
chunks and FastLanes blocks); their layout messages and buffers are damaged one field or byte at
a time and decoded whole and row by row (``decode_rows``, the ``take`` path). Never an
IndexError / ValueError / MemoryError or a huge allocation, never an array failing
``validate(full=True)``.
"""

from __future__ import annotations

import glob
import random
import struct
import tracemalloc

import lance
import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, LanceError
from lance_fw.file import structure_v2_1
from lance_fw.file.encoding import PageInput, validate_decoded
from lance_fw.file.reader import LanceFileReader
from lance_fw.io.storage import resolve_storage
from lance_fw_plugins.encodings_v2_1 import compressive as cz
from lance_fw_plugins.encodings_v2_1 import decode_page_layout
from lance_fw_plugins.encodings_v2_1 import fastlanes as fl
from lance_fw_plugins.encodings_v2_1.repdef import values_to_arrow

VERSIONS = ["2.1", "2.2"]
WRITERS = ["pylance", "lance_fw"]
ROWS = 5000
MUTATIONS = 150  # per (version, writer)
HUGE = [(1 << 31) - 1, 1 << 40, (1 << 63) - 1]


#: pylance encodings chosen through field metadata: general zstd/lz4, byte-stream-split, packed structs
HINTED = [
    pa.field("z", pa.int64(), metadata={"lance-encoding:compression": "zstd"}),
    pa.field("l4", pa.int32(), metadata={"lance-encoding:compression": "lz4"}),
    pa.field("bss", pa.float64(), metadata={"lance-encoding:bss": "on", "lance-encoding:compression": "zstd"}),
    pa.field("p", pa.struct([("a", pa.int32()), ("b", pa.float64())]), metadata={"lance-encoding:packed": "true"}),
]


def _table() -> pa.Table:
    rng = np.random.default_rng(3)
    n = ROWS
    item = pa.struct([("x", pa.int32()), ("s", pa.string())])
    words = np.array(["lance", "column", "format", "arrow", "page", "chunk", "ünï", "日本"])
    hinted = [pa.array(rng.integers(0, 1 << 40, n)), pa.array(rng.integers(0, 1000, n).astype(np.int32)),
              pa.array(rng.random(n)),
              pa.StructArray.from_arrays([pa.array(rng.integers(0, 100, n).astype(np.int32)), pa.array(rng.random(n))],
                                         fields=list(HINTED[3].type))]
    plain = pa.table({
        "i": pa.array(rng.integers(0, 1000, n)),
        "f": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.random(n))),
        "s": pa.array([f"text {i % 97}" if i % 5 else None for i in range(n)]),
        "w": pa.array([f"w{i}-{rng.integers(1 << 30)}" for i in range(n)]),
        "l": pa.array([None if i % 9 == 4 else [j if j % 5 else None for j in range(i % 6)] for i in range(n)],
                      pa.list_(pa.int16())),
        "st": pa.array([None if i % 7 == 3 else {"x": i if i % 4 else None, "s": f"y{i}"} for i in range(n)], item),
        "ls": pa.array([None if i % 10 == 1 else [{"x": j, "s": None} for j in range(i % 4)] for i in range(n)],
                       pa.large_list(item)),
        "text": pa.array([" ".join(words[rng.integers(0, 8, 12)]) if i % 9 else None for i in range(n)]),  # FSST
        "fsl": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 80).astype(np.float32)), 80),
        "c": pa.array([None] * n, pa.int32()),
        "cl": pa.array([None if i % 3 == 0 else [None] * (i % 4) for i in range(n)], pa.list_(pa.int32())),  # constant
        "k": pa.array([7] * n, pa.int64()),
    })
    for f, column in zip(HINTED, hinted):
        plain = plain.append_column(f, column)
    return plain


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """(version, writer) -> [(page encoding Any, buffers, rows, path type)] of one data file."""
    out = {}
    table = _table()
    for version in VERSIONS:
        for writer in WRITERS:
            uri = str(tmp_path_factory.mktemp("damage") / f"{writer}_{version}")
            write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
            write(table, uri, data_storage_version=version, max_page_bytes=16 * 1024)
            out[(version, writer)] = _pages(uri)
    return out


def _pages(uri: str) -> list:
    (path,) = glob.glob(f"{uri}/data/*.lance")
    reader = LanceFileReader(resolve_storage(path), path)
    chains = [c for top in reader.schema.fields for c in structure_v2_1.leaf_paths(top)]
    out = []
    for column, chain in zip(reader.tail.columns, chains):
        for page in column.pages:
            buffers = [bytes(reader._reader.read(int(o), int(s)))
                       for o, s in zip(page.buffer_offsets, page.buffer_sizes)]
            encoding = any_pb2.Any()
            encoding.ParseFromString(page.encoding.direct.encoding)
            out.append((encoding, buffers, page.length, structure_v2_1.path_type(chain)))
    reader.close()
    return out


def _layout(encoding: any_pb2.Any) -> pb.PageLayout:
    layout = pb.PageLayout()
    layout.ParseFromString(encoding.value)
    return layout


def _decode(layout: pb.PageLayout, buffers: list, rows: int, arrow_type: pa.DataType, wanted=None) -> pa.Array:
    encoding = any_pb2.Any(type_url="/lance.encodings21.PageLayout", value=layout.SerializeToString())
    page = PageInput([memoryview(b) for b in buffers], rows, arrow_type, "damaged.lance: column c, page 0")
    # as the kernel's reader does with every page a plugin decodes
    if wanted is None:
        return validate_decoded(decode_page_layout(encoding, page), page.where)
    return validate_decoded(decode_page_layout.decode_rows(encoding, page, np.asarray(wanted, np.int64)), page.where)


def _first(pages: list, kind: str, test=lambda m: True):
    for encoding, buffers, rows, arrow_type in pages:
        layout = _layout(encoding)
        if layout.WhichOneof("layout") == kind and test(getattr(layout, kind)):
            return layout, list(buffers), rows, arrow_type
    raise AssertionError(f"no {kind} page")


def _raises_corrupt(layout, buffers, rows, arrow_type) -> None:
    """Both decode paths raise CorruptFileError naming the file, without a large allocation first
    (numpy reports its allocations to tracemalloc, so lazily committed ones count too)."""
    tracemalloc.start()
    try:
        for wanted in (None, [0, rows - 1]):
            with pytest.raises(CorruptFileError, match="damaged.lance"):
                _decode(layout, buffers, rows, arrow_type, wanted)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated for a damaged page"


# --- one damaged field at a time: each raised something else before --------------------------------

@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_chunk_metadata_cut_mid_word(pages, version, writer):
    """Was a numpy ValueError (a view of an odd number of bytes as u16/u32 words)."""
    layout, buffers, rows, t = _first(pages[(version, writer)], "mini_block_layout")
    buffers[0] = buffers[0][:-1]
    _raises_corrupt(layout, buffers, rows, t)


@pytest.mark.parametrize("huge", HUGE)
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_huge_item_count(pages, version, writer, huge):
    """Was a MemoryError (gigabytes of FastLanes block offsets) or a numpy ValueError (an int64
    overflow gave negative sizes)."""
    layout, buffers, rows, t = _first(pages[(version, writer)], "mini_block_layout",
                                      lambda m: m.value_compression.WhichOneof("compression") == "inline_bitpacking")
    layout.mini_block_layout.num_items = huge
    _raises_corrupt(layout, buffers, rows, t)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_64_bit_width_word_with_its_top_bit_set(pages, version, writer):
    """A 64-bit chunk's width word of 2**63 + 3 read as a signed width was -(2**63 - 3): it
    passed the ``> 64`` check, then the unpacker had a negative width to group by."""

    def plain_64_bit(m):
        comp = m.value_compression
        return (comp.WhichOneof("compression") == "inline_bitpacking"
                and comp.inline_bitpacking.uncompressed_bits_per_value == 64
                and not m.HasField("def_compression") and not m.HasField("rep_compression"))

    try:
        layout, buffers, rows, t = _first(pages[(version, writer)], "mini_block_layout", plain_64_bit)
    except AssertionError:
        pytest.skip("this writer and version bitpack no 64-bit column without nulls inline here")
    data = bytearray(buffers[1])
    data[8:16] = struct.pack("<Q", (1 << 63) + 3)  # chunk 0: its header padded to 8 bytes, then the width
    buffers[1] = bytes(data)
    _raises_corrupt(layout, buffers, rows, t)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_huge_dictionary(pages, version, writer):
    found = [p for p in pages[(version, writer)] if _layout(p[0]).mini_block_layout.HasField("dictionary")]
    if not found:
        pytest.skip(f"{writer} writes no dictionary page at {version}")
    encoding, buffers, rows, t = found[0]
    layout = _layout(encoding)
    layout.mini_block_layout.num_dictionary_items = 1 << 40
    _raises_corrupt(layout, list(buffers), rows, t)


# --- garbled buffers of single compressive encodings ------------------------------------------------

GARBLED_VALUES = 5000  # several 1024-value blocks


def _garbling_cases():
    """(encoding, Arrow type, context, a sound buffer of GARBLED_VALUES values) to garble."""
    rng = np.random.default_rng(11)
    ints = rng.integers(0, 1 << 20, GARBLED_VALUES).astype("<u4")
    packed = fl.pack_inline(ints, 32).tobytes()
    flat32 = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))
    strings = [f"value {i}".encode() * int(i % 3) for i in range(GARBLED_VALUES)]
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in strings])]).astype("<u4")
    variable_mb = (offsets + 4 * (GARBLED_VALUES + 1)).tobytes() + b"".join(strings)
    variable_block = struct.pack("<II", 32, 8 + offsets.nbytes) + offsets.tobytes() + b"".join(strings)
    lz4 = struct.pack("<I", ints.nbytes) + pa.Codec("lz4_raw").compress(ints.tobytes(), asbytes=True)
    zstd = pa.Codec("zstd").compress(ints.tobytes(), asbytes=True)
    inline = pb.CompressiveEncoding(inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=32))
    variable = pb.CompressiveEncoding(variable=pb.Variable(offsets=flat32))

    def general(scheme):
        return pb.CompressiveEncoding(general=pb.General(compression=pb.BufferCompression(scheme=scheme),
                                                         values=flat32))
    return [
        (inline, pa.uint32(), "miniblock", packed),
        (inline, pa.uint32(), "block", packed),
        (variable, pa.binary(), "miniblock", variable_mb),
        (variable, pa.string(), "miniblock", variable_mb),
        (variable, pa.binary(), "block", variable_block),
        (general(pb.COMPRESSION_ALGORITHM_LZ4), pa.uint32(), "miniblock", lz4),
        (general(pb.COMPRESSION_ALGORITHM_LZ4), pa.uint32(), "block", lz4),
        (general(pb.COMPRESSION_ALGORITHM_ZSTD), pa.uint32(), "miniblock", zstd),
        (general(pb.COMPRESSION_ALGORITHM_ZSTD), pa.uint32(), "block", zstd),
    ]


def _garble(rng, blob: bytes) -> bytes:
    """One of: a flipped byte, a truncation, a random overwrite of a run, random bytes."""
    b = bytearray(blob)
    kind = int(rng.integers(0, 4))
    if kind == 0 and b:
        b[int(rng.integers(0, len(b)))] ^= int(rng.integers(1, 256))
    elif kind == 1:
        del b[int(rng.integers(0, len(b) + 1)):]
    elif kind == 2 and b:
        at = int(rng.integers(0, len(b)))
        run = rng.integers(0, 256, min(16, len(b) - at), dtype=np.uint8).tobytes()
        b[at:at + len(run)] = run
    else:
        b = bytearray(rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes())
    return bytes(b)


def test_garbled_buffers_decode_to_valid_arrow_or_raise_corrupt():
    """Each garbled buffer either decodes to values that make valid Arrow (same count, offsets in
    range, UTF-8 for text) or raises CorruptFileError; any other exception fails the test."""
    rng = np.random.default_rng(7)
    outcomes = {"ok": 0, "corrupt": 0}
    for enc, arrow_type, ctx, sound in _garbling_cases():
        sound_values = cz.decode_values(enc, [sound], GARBLED_VALUES, ctx, where="x")  # the ungarbled one decodes
        assert sound_values.num_values == GARBLED_VALUES
        for _ in range(40):
            blob = _garble(rng, sound)
            try:
                dv = cz.decode_values(enc, [blob], GARBLED_VALUES, ctx, where="x")
                array = values_to_arrow(dv, arrow_type, None, "x")
            except CorruptFileError as exc:
                assert exc.path == "x"
                outcomes["corrupt"] += 1
                continue
            assert len(array) == GARBLED_VALUES
            try:
                array.validate(full=True)
            except pa.ArrowInvalid:
                if not pa.types.is_string(arrow_type):
                    raise
                with pytest.raises(CorruptFileError):  # text: the page decoder's check refuses it
                    validate_decoded(array, "x")
                outcomes["corrupt"] += 1
                continue
            outcomes["ok"] += 1
    assert outcomes["ok"] and outcomes["corrupt"], outcomes  # both outcomes were exercised


# --- seeded random damage ---------------------------------------------------------------------------

def _mutate_message(rng: random.Random, msg) -> None:
    """Change one scalar field somewhere in ``msg`` (recursively) to a nearby or extreme value."""
    fields = msg.ListFields()
    if not fields:
        return
    f, value = rng.choice(fields)
    if f.type == f.TYPE_MESSAGE:
        items = list(value) if f.is_repeated else [value]
        if items:
            _mutate_message(rng, rng.choice(items))
        return
    if f.is_repeated:
        if len(value):
            value[rng.randrange(len(value))] = rng.choice([0, 1, 2, 5, 6, 7, 64, 1 << 20])
        return
    if f.type == f.TYPE_BOOL:
        setattr(msg, f.name, not value)
    elif f.type == f.TYPE_BYTES:
        setattr(msg, f.name, value[: rng.randrange(len(value) + 1)] + bytes([rng.randrange(256)]))
    elif f.type == f.TYPE_ENUM:
        setattr(msg, f.name, rng.randrange(5))
    elif f.type in (f.TYPE_UINT64, f.TYPE_INT64):
        setattr(msg, f.name, rng.choice([0, 1, value + 1, max(value - 1, 0), 2 * value, *HUGE]))
    elif f.type in (f.TYPE_UINT32, f.TYPE_INT32):
        setattr(msg, f.name, rng.choice([0, 1, value + 1, max(value - 1, 0), 2 * value, 7, 33, (1 << 31) - 1]))


def _damage(rng: random.Random, layout: pb.PageLayout, buffers: list, rows: int) -> tuple[list, int]:
    kind = rng.choice(["field", "field", "flip", "cut", "rows", "buffers"])
    if kind == "field":
        _mutate_message(rng, layout)
    elif kind in ("flip", "cut") and buffers:
        k = rng.randrange(len(buffers))
        b = bytearray(buffers[k])
        if kind == "flip" and b:
            b[rng.randrange(len(b))] ^= rng.randrange(1, 256)
        elif kind == "cut":
            del b[rng.randrange(len(b) + 1):]
        buffers[k] = bytes(b)
    elif kind == "rows":
        rows = rng.choice([0, 1, rows - 1, rows + 1, 2 * rows])
    else:
        buffers = buffers[:-1] if buffers and rng.random() < 0.5 else buffers + [b"\0" * 8]
    return buffers, max(rows, 0)


@pytest.fixture(scope="module")
def blob_pages(tmp_path_factory) -> list:
    """Pages of a 2.2 blob column as pylance writes it (descriptors in full-zip packed structs)."""
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [b"x" * (i % 50) if i % 7 else None for i in range(ROWS)]
    values[5] = b"y" * 200_000
    table = pa.table([pa.array(range(ROWS)), pa.array(values, pa.large_binary())],
                     schema=pa.schema([pa.field("id", pa.int64()), field]))
    uri = str(tmp_path_factory.mktemp("blob") / "ds")
    lance.write_dataset(table, uri, data_storage_version="2.2")
    return _pages(uri)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_random_page_damage(pages, version, writer):
    _random_damage(pages[(version, writer)], f"{version}/{writer}")


def test_random_blob_page_damage(blob_pages):
    """Was a MemoryError (a damaged field width sized a 1 TiB gather) and a KeyError (value
    lengths of 3 bytes)."""
    _random_damage(blob_pages, "blob", 10 * MUTATIONS)


def _random_damage(pages: list, seed: str, mutations: int = MUTATIONS) -> None:
    rng = random.Random(seed)
    outcomes = {"ok": 0, "corrupt": 0}
    for case in range(mutations):
        encoding, buffers, rows, arrow_type = rng.choice(pages)
        layout = _layout(encoding)
        buffers, rows = _damage(rng, layout, list(buffers), rows)
        wanted = sorted({rng.randrange(rows) for _ in range(5)}) if rows else []
        for mode in (None, wanted):
            try:
                array = _decode(layout, buffers, rows, arrow_type, mode)
            except LanceError:
                outcomes["corrupt"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - the test exists to catch these
                raise AssertionError(f"case {case} ({'all rows' if mode is None else 'some rows'}): "
                                     f"{type(exc).__name__}: {exc}") from exc
            array.validate(full=True)
            assert len(array) == (rows if mode is None else len(mode))
            outcomes["ok"] += 1
    assert outcomes["ok"] and outcomes["corrupt"], outcomes
