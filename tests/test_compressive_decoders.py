"""Compressive-encoding decoders (2.1/2.2) checked against bytes that pylance writes.

The tests carry their own small page/chunk parser (independent of the real reader) to cut
mini-block chunks out of pylance-written data files and drive
``lance_fw_plugins.encodings_v2_1.compressive`` directly. pylance is the oracle: what its
``to_table`` returns for the file is what the decoders must produce, and what lance_fw's
encoders write must read back through pylance. Generated data crosses 1024-value FastLanes
blocks and 4096-value chunks.
"""

from __future__ import annotations

import glob
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError
from lance_fw.file import fsst, fsst_encode
from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage
from lance_fw_plugins.encodings_v2_1 import chunked
from lance_fw_plugins.encodings_v2_1 import compressive as cz
from lance_fw_plugins.encodings_v2_1 import fastlanes as fl
from lance_fw_plugins.encodings_v2_1 import fullzip_values as fz_values
from lance_fw_plugins.encodings_v2_1.layouts import look_up_dictionary as gather_dictionary
from lance_fw_plugins.encodings_v2_1.repdef import values_to_arrow
from lance_fw_plugins.encodings_v2_1.value_encode import MIN_PACKING_SAVING

lance = pytest.importorskip("lance")

N = 100_000
VERSIONS = ["2.1", "2.2"]


# ---------------------------------------------------------------------------
# test-only page / chunk parser
# ---------------------------------------------------------------------------

def read_pages(ds_path: str, column: int = 0):
    """[(PageLayout, [page buffer bytes], page length)] for one column of the only data file."""
    (f,) = glob.glob(f"{ds_path}/data/*.lance")
    reader = resolve_storage(f).open_reader(f)
    tail = read_tail(reader)
    out = []
    for page in tail.columns[column].pages:
        a = any_pb2.Any()
        a.ParseFromString(page.encoding.direct.encoding)
        assert a.type_url == "/lance.encodings21.PageLayout"
        layout = pb.PageLayout()
        layout.ParseFromString(a.value)
        bufs = [reader.read(int(o), int(s)) for o, s in zip(page.buffer_offsets, page.buffer_sizes)]
        out.append((layout, bufs, page.length))
    return out


def _pad8(x: int) -> int:
    return (x + 7) & ~7


def miniblock_chunks(mb: pb.MiniBlockLayout, bufs: list[bytes]):
    """Yield dicts: num_values, num_levels, rep, def, values (list of memoryviews)."""
    large = mb.has_large_chunk
    meta = np.frombuffer(bufs[0], "<u4" if large else "<u2").astype(np.int64)
    data = memoryview(bufs[1])
    pos = 0
    seen = 0
    for i, word in enumerate(meta.tolist()):
        log = word & 0xF
        nbytes = ((word >> 4) + 1) * 8
        last = i == len(meta) - 1
        nvals = mb.num_items - seen if (last and log == 0) else 1 << log
        seen += nvals
        chunk = data[pos: pos + nbytes]
        pos += nbytes
        p = 0
        num_levels = struct.unpack_from("<H", chunk, p)[0]
        p += 2
        rep_bytes = def_bytes = 0
        if mb.HasField("rep_compression"):
            rep_bytes = struct.unpack_from("<H", chunk, p)[0]
            p += 2
        if mb.HasField("def_compression"):
            def_bytes = struct.unpack_from("<H", chunk, p)[0]
            p += 2
        fmt, w = ("<I", 4) if large else ("<H", 2)
        sizes = []
        for _ in range(mb.num_buffers):
            sizes.append(struct.unpack_from(fmt, chunk, p)[0])
            p += w
        p = _pad8(p)
        rep = chunk[p: p + rep_bytes]
        p = _pad8(p + rep_bytes)
        dfn = chunk[p: p + def_bytes]
        p = _pad8(p + def_bytes)
        values = []
        for s in sizes:
            values.append(chunk[p: p + s])
            p = _pad8(p + s)
        assert p <= nbytes
        yield dict(num_values=nvals, num_levels=num_levels, rep=rep, dfn=dfn, values=values)
    assert seen == mb.num_items


def decode_page(mb, bufs, where="test"):
    chunks = list(miniblock_chunks(mb, bufs))
    parts = [cz.decode_values(mb.value_compression, c["values"], c["num_values"], "miniblock", where)
             for c in chunks]
    return chunks, cz.concat(parts)


def page_values(mb: pb.MiniBlockLayout, bufs: list[bytes], arrow_type: pa.DataType) -> pa.Array:
    """A page's visible values as Arrow, through its dictionary when it has one."""
    _, dv = decode_page(mb, bufs)
    if mb.HasField("dictionary"):
        dictionary = cz.decode_values(mb.dictionary, [bufs[2]], mb.num_dictionary_items, "block")
        dv = gather_dictionary(dictionary, dv, "test")
    return values_to_arrow(dv, arrow_type, None, "test")


def fixed_as(dv: cz.DecodedValues, dtype) -> np.ndarray:
    return dv.fixed_bytes().view(dtype)


# ---------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------

def _hex_strings(rng, n):
    h = rng.bytes(8 * n).hex()
    return [h[i * 16:(i + 1) * 16] for i in range(n)]


def _data(rng):
    n = N
    return {
        "seq_i32": pa.array(np.arange(n, dtype=np.int32) - 5000),
        "dict_i64": pa.array(rng.integers(0, 1000, n)),
        "const_i32": pa.array(np.full(n, 7, dtype=np.int32)),
        "runs_i32": pa.array(np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)),
        "f32": pa.array(rng.random(n, dtype=np.float32)),
        "f64": pa.array(rng.random(n)),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000 + 1_600_000_000_000_000, pa.timestamp("us")),
        "nulls_i32": pa.array(np.arange(n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "str4": pa.array(np.array(["apple", "banana", "cherry", "date"])[rng.integers(0, 4, n)]),
        "hex": pa.array(_hex_strings(rng, n)),
        "list_i32": pa.array([list(range(i % 5)) for i in range(n)], pa.list_(pa.int32())),
        "fsl8": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        "bool": pa.array(rng.random(n) < 0.5),
        "list_small": pa.array([[1, 2], [], [3], None, [4, 5, 6]] * 4, pa.list_(pa.int32())),
    }


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    rng = np.random.default_rng(42)
    data = _data(rng)
    root = tmp_path_factory.mktemp("compressive")
    out = {}
    for ver in VERSIONS:
        for name, arr in data.items():
            p = str(root / f"{name}_{ver}")
            lance.write_dataset(pa.table({"c": arr}), p, data_storage_version=ver)
            out[(name, ver)] = (p, arr)
    return out


def _single_mb(datasets, name, ver, expect):
    path, arr = datasets[(name, ver)]
    pages = read_pages(path)
    assert len(pages) == 1
    layout, bufs, length = pages[0]
    assert layout.WhichOneof("layout") == "mini_block_layout"
    mb = layout.mini_block_layout
    assert mb.value_compression.WhichOneof("compression") == expect, mb
    return mb, bufs, arr


# ---------------------------------------------------------------------------
# tests against pylance bytes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("name,dtype", [("seq_i32", "<i4"), ("f32", "<f4"), ("f64", "<f8"), ("ts", "<i8")])
def test_inline_bitpacking(datasets, ver, name, dtype):
    mb, bufs, arr = _single_mb(datasets, name, ver, "inline_bitpacking")
    chunks, dv = decode_page(mb, bufs)
    assert dv.kind == "fixed" and dv.num_values == N
    expected = arr.to_numpy(zero_copy_only=False)
    if expected.dtype.kind == "M":
        expected = expected.view("<i8")
    np.testing.assert_array_equal(fixed_as(dv, dtype), expected)


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("name,dtype", [("seq_i32", "<u4"), ("f32", "<u4"), ("f64", "<u8")])
def test_inline_bitpacking_packer_matches_pylance_bytes(datasets, ver, name, dtype):
    """lance_fw's FastLanes packer reproduces every chunk pylance wrote, byte for byte and length
    for length (the last chunk is a partial, zero-padded block)."""
    mb, bufs, arr = _single_mb(datasets, name, ver, "inline_bitpacking")
    values = arr.to_numpy().view(dtype)
    seen = 0
    chunks = list(miniblock_chunks(mb, bufs))
    assert len(chunks) > 4 and chunks[-1]["num_values"] % fl.BLOCK  # several chunks, a partial last one
    for c in chunks:
        ours = fl.pack_inline(values[seen: seen + c["num_values"]], 8 * values.itemsize)
        assert ours.tobytes() == bytes(c["values"][0]), f"chunk at value {seen} differs"
        seen += c["num_values"]
    assert seen == N


HINTED_ROWS = 10_000  # several 4096-value chunks


def _hinted_column(kind: str) -> tuple[pa.Field, pa.Array]:
    """A column whose field metadata makes pylance pick the encoding named by ``kind``."""
    rng = np.random.default_rng(5)
    n = HINTED_ROWS
    if kind == "packed_struct":
        t = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.int16())])
        children = [pa.array(rng.integers(-100, 100, n).astype(np.int32)), pa.array(rng.random(n)),
                    pa.array(rng.integers(0, 9, n).astype(np.int16))]
        return (pa.field("c", t, metadata={"lance-encoding:packed": "true"}),
                pa.StructArray.from_arrays(children, fields=list(t)))
    if kind == "byte_stream_split":
        return (pa.field("c", pa.float64(), metadata={"lance-encoding:bss": "on", "lance-encoding:compression": "zstd"}),
                pa.array(rng.random(n)))
    scheme = {"general_lz4": "lz4", "general_zstd": "zstd"}[kind]
    return (pa.field("c", pa.int64(), metadata={"lance-encoding:compression": scheme}),
            pa.array(rng.integers(0, 1 << 40, n)))


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("kind", ["general_lz4", "general_zstd", "byte_stream_split", "packed_struct"])
def test_hinted_encodings_against_pylance(tmp_path, ver, kind):
    """Encodings pylance writes only when a field asks for them decode to what pylance reads."""
    field, column = _hinted_column(kind)
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table([column], schema=pa.schema([field])), p, data_storage_version=ver)
    expected = lance.dataset(p).to_table()
    names = set()
    for layout, _, _ in read_pages(p):
        enc = layout.mini_block_layout.value_compression
        names.add(enc.WhichOneof("compression"))
        if enc.WhichOneof("compression") == "general":
            names.add(enc.general.values.WhichOneof("compression"))
            names.add(pb.CompressionScheme.Name(enc.general.compression.scheme))
    wanted = {"general_lz4": "COMPRESSION_ALGORITHM_LZ4", "general_zstd": "COMPRESSION_ALGORITHM_ZSTD"}.get(kind, kind)
    assert wanted in names, names
    assert lance_fw.dataset(p).to_table().equals(expected)
    rows = [0, 4095, 4096, HINTED_ROWS - 1]
    assert lance_fw.dataset(p).take(rows).equals(lance.dataset(p).take(rows))


@pytest.mark.parametrize("ver", VERSIONS)
def test_rle(datasets, ver):
    for name in ("runs_i32",) + (("const_i32",) if ver == "2.1" else ()):
        mb, bufs, arr = _single_mb(datasets, name, ver, "rle")
        _, dv = decode_page(mb, bufs)
        np.testing.assert_array_equal(fixed_as(dv, "<i4"), arr.to_numpy())


def test_constant_layout_2_2(datasets):
    path, arr = datasets[("const_i32", "2.2")]
    (layout, bufs, length), = read_pages(path)
    cl = layout.constant_layout
    assert layout.WhichOneof("layout") == "constant_layout" and cl.inline_value == struct.pack("<i", 7)
    dv = cz.decode_values(pb.CompressiveEncoding(constant=pb.Constant(value=cl.inline_value)), [], length, "block")
    np.testing.assert_array_equal(fixed_as(dv, "<i4"), arr.to_numpy())


@pytest.mark.parametrize("ver", VERSIONS)
def test_bool_flat(datasets, ver):
    mb, bufs, arr = _single_mb(datasets, "bool", ver, "flat")
    _, dv = decode_page(mb, bufs)
    assert dv.bits_per_value == 1
    bits = np.unpackbits(dv.fixed_bytes(), bitorder="little", count=N).astype(bool)
    np.testing.assert_array_equal(bits, arr.to_numpy(zero_copy_only=False))


@pytest.mark.parametrize("ver", VERSIONS)
def test_dictionary_ints(datasets, ver):
    path, arr = datasets[("dict_i64", ver)]
    (layout, bufs, _), = read_pages(path)
    mb = layout.mini_block_layout
    _, dv = decode_page(mb, bufs)
    if ver == "2.1":  # 2.1 keeps plain inline bitpacking
        assert not mb.HasField("dictionary")
        np.testing.assert_array_equal(fixed_as(dv, "<i8"), arr.to_numpy())
        return
    assert mb.dictionary.WhichOneof("compression") == "inline_bitpacking"
    dic = cz.decode_values(mb.dictionary, [bufs[2]], mb.num_dictionary_items, "block")
    assert dic.num_values == mb.num_dictionary_items == 1000
    np.testing.assert_array_equal(fixed_as(dic, "<i8")[dv.data], arr.to_numpy())


@pytest.mark.parametrize("ver", VERSIONS)
def test_dictionary_strings(datasets, ver):
    path, arr = datasets[("str4", ver)]
    (layout, bufs, _), = read_pages(path)
    mb = layout.mini_block_layout
    expect_dict = "variable" if ver == "2.1" else "general"
    assert mb.dictionary.WhichOneof("compression") == expect_dict
    _, idx = decode_page(mb, bufs)
    dic = cz.decode_values(mb.dictionary, [bufs[2]], mb.num_dictionary_items, "block")
    assert dic.kind == "variable"
    words = np.array(dic.strings(), dtype=object)
    assert sorted(words.tolist()) == [b"apple", b"banana", b"cherry", b"date"]
    assert words[idx.data].tolist() == [s.encode() for s in arr.to_pylist()]


@pytest.mark.parametrize("ver", VERSIONS)
def test_fsst(datasets, ver):
    mb, bufs, arr = _single_mb(datasets, "hex", ver, "fsst")
    _, dv = decode_page(mb, bufs)
    assert dv.kind == "variable" and dv.offsets[0] == 0 and dv.offsets.size == N + 1
    got = pa.LargeStringArray.from_buffers(N, pa.py_buffer(dv.offsets.astype(np.int64)),
                                           pa.py_buffer(np.asarray(dv.data, np.uint8)))
    assert got.equals(arr.cast(pa.large_string()))


@pytest.mark.parametrize("ver", VERSIONS)
def test_nullable_def_levels(datasets, ver):
    mb, bufs, arr = _single_mb(datasets, "nulls_i32", ver, "inline_bitpacking")
    assert mb.def_compression.WhichOneof("compression") == "out_of_line_bitpacking"
    chunks, dv = decode_page(mb, bufs)
    defs = np.concatenate([cz.decode_levels(mb.def_compression, c["dfn"], c["num_levels"], "miniblock")
                           for c in chunks])
    assert defs.dtype == np.uint16 and defs.size == N
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(defs == 0, valid)
    vals = fixed_as(dv, "<i4")
    np.testing.assert_array_equal(vals[valid], arr.drop_null().to_numpy())


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("name", ["list_i32", "list_small"])
def test_list_rep_def(datasets, ver, name):
    path, arr = datasets[(name, ver)]
    pages = read_pages(path)
    rows = empties = nulls = 0
    values = []
    for layout, bufs, _ in pages:
        mb = layout.mini_block_layout
        chunks, dv = decode_page(mb, bufs)
        values.append(fixed_as(dv, "<i4"))
        for c in chunks:
            rep = cz.decode_levels(mb.rep_compression, c["rep"], c["num_levels"], "miniblock")
            dfn = cz.decode_levels(mb.def_compression, c["dfn"], c["num_levels"], "miniblock")
            assert (dfn == 0).sum() == c["num_values"]
            rows += int((rep == 1).sum())
            layers = list(mb.layers)
            if layers[-1] == pb.REPDEF_NULL_AND_EMPTY_LIST:
                nulls += int((dfn == 1).sum())
                empties += int((dfn == 2).sum())
            elif layers[-1] == pb.REPDEF_EMPTYABLE_LIST:
                empties += int((dfn == 1).sum())
    assert rows == len(arr)
    lens = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
    assert nulls == arr.null_count
    assert empties == int(np.sum(lens == 0))
    np.testing.assert_array_equal(np.concatenate(values), pc.list_flatten(arr).to_numpy())


def test_small_page_level_encodings(datasets):
    """2.1 small pages use flat16 levels, 2.2 small pages use block-form RLE."""
    kinds = {}
    for ver in VERSIONS:
        (layout, _, _), = read_pages(datasets[("list_small", ver)][0])
        kinds[ver] = layout.mini_block_layout.def_compression.WhichOneof("compression")
    assert kinds == {"2.1": "flat", "2.2": "rle"}


@pytest.mark.parametrize("ver", VERSIONS)
def test_fixed_size_list(datasets, ver):
    mb, bufs, arr = _single_mb(datasets, "fsl8", ver, "fixed_size_list")
    _, dv = decode_page(mb, bufs)
    assert dv.kind == "fsl" and dv.dimension == 8 and dv.validity is None
    np.testing.assert_array_equal(fixed_as(dv.inner, "<f4"), arr.flatten().to_numpy())


# ---------------------------------------------------------------------------
# synthetic: FastLanes, FSST, forms pylance does not write by default
# ---------------------------------------------------------------------------

def _widths(t: int) -> list[int]:
    return sorted({1, 3, t // 2 + 1, t - 1, t})


def _values_of_width(t: int, w: int, n: int = 5000) -> np.ndarray:
    """``n`` unsigned ``t``-bit values whose every 1024-value block needs exactly ``w`` bits."""
    rng = np.random.default_rng(t * 100 + w)
    hi = 1 << w if w < 64 else 1 << 63
    v = rng.integers(0, hi, n, dtype=np.uint64)
    v[:: fl.BLOCK] = (1 << w) - 1  # the widest value of each block
    return v.astype(fl.utype(t))


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_fastlanes_widths_against_pylance(tmp_path, ver, t):
    """Every width of every FastLanes type, both ways: pylance's packed pages decode to what pylance
    reads, and lance_fw's packed pages read back through pylance (5000 values: several 1024-value
    blocks, a 4096-value chunk boundary, a partial last block)."""
    arrow_type = pa.from_numpy_dtype(fl.utype(t))
    for w in _widths(t):
        values = _values_of_width(t, w)
        table = pa.table({"c": pa.array(values, arrow_type)})
        p = str(tmp_path / f"pylance_{w}")
        lance.write_dataset(table, p, data_storage_version=ver)
        expected = lance.dataset(p).to_table().column("c").combine_chunks()
        kinds = set()
        decoded = []
        for layout, bufs, _ in read_pages(p):
            mb = layout.mini_block_layout
            kinds.add(mb.value_compression.WhichOneof("compression"))
            decoded.append(page_values(mb, bufs, arrow_type))
        assert pa.concat_arrays(decoded).equals(expected), w
        if w <= t // 2 + 1:  # (pylance stores nearly full widths flat)
            assert kinds == {"inline_bitpacking"}, (w, kinds)
        q = str(tmp_path / f"lance_fw_{w}")
        lance_fw.write_dataset(table, q, data_storage_version=ver)
        # pylance's choice (packing when its padded blocks are smaller than flat), except that
        # lance_fw keeps flat a page that packing would shrink by less than MIN_PACKING_SAVING
        blocks = -(-len(values) // fl.BLOCK)
        saving = 1 - blocks * (t + fl.BLOCK * w) / (len(values) * t)
        ours = {"flat"} if kinds == {"inline_bitpacking"} and saving < MIN_PACKING_SAVING else kinds
        assert {layout.mini_block_layout.value_compression.WhichOneof("compression")
                for layout, _, _ in read_pages(q)} == ours, w
        np.testing.assert_array_equal(lance.dataset(q).to_table().column("c").to_numpy(), values)


def test_fastlanes_layout_position():
    # value at logical index FL_ORDER[r//8]*16 + (r%8)*128 + l is row r of lane l
    t, w = 16, 16
    v = np.arange(1024, dtype=np.uint16)
    packed = fl.pack(v, w, t)
    lanes = 1024 // t
    for r in (0, 1, 8, 9, 15):
        for lane in (0, 5, 63):
            assert packed[lanes * r + lane] == fl.FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane


@pytest.mark.parametrize("ver", VERSIONS)
def test_fsst_escapes_against_pylance(tmp_path, ver):
    """Text with characters pylance's symbol table leaves out: its FSST pages carry escape codes
    (255 + literal byte), and decode to what pylance reads (6000 values: two 4096-value chunks)."""
    rng = np.random.default_rng(9)
    words = ["lance ", "column ", "format ", "arrow "]
    values = []
    for _ in range(6000):
        parts = [words[j] for j in rng.integers(0, 4, 6)]
        rare = "".join(chr(c) for c in rng.integers(0x80, 0xD000, int(rng.integers(0, 4))))
        parts.insert(int(rng.integers(0, 6)), rare)
        values.append("".join(parts))
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"c": pa.array(values)}), p, data_storage_version=ver)
    expected = lance.dataset(p).to_table().column("c").combine_chunks()
    (layout, bufs, _), = read_pages(p)
    mb = layout.mini_block_layout
    assert mb.value_compression.WhichOneof("compression") == "fsst"
    chunks = list(miniblock_chunks(mb, bufs))
    assert len(chunks) >= 2
    assert sum(_escapes(c["values"][0]) for c in chunks) > 20  # thousands of rare bytes, 255 symbols
    assert page_values(mb, bufs, pa.string()).equals(expected)


def _escapes(chunk_buffer) -> int:
    """Escape codes in one chunk's FSST ``variable`` buffer (u32 offsets, then the codes)."""
    raw = bytes(chunk_buffer)
    offsets = np.frombuffer(raw, "<u4", count=1)
    first = int(offsets[0])
    count = first // 4 - 1
    offsets = np.frombuffer(raw, "<u4", count=count + 1)
    escapes = 0
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        i = a
        while i < b:
            if raw[i] == fsst.ESCAPE:
                escapes += 1
                i += 1
            i += 1
    return escapes


def test_fsst_escape_at_the_end_of_a_string_is_corrupt():
    table, _, _ = fsst_encode.compress_simple([b"hello"], [b"hello"])
    with pytest.raises(CorruptFileError):
        fsst.decompress(table, np.array([0, 1]), b"\xff")


def test_fsst_raw_when_encoder_switch_off():
    table = bytearray(fsst.SYMBOL_TABLE_SIZE)
    table[4:8] = b"TSSF"
    o, d = fsst.decompress(bytes(table), np.array([3, 5, 8]), b"xxxabcde")
    assert o.tolist() == [0, 2, 5] and d.tobytes() == b"abcde"


def test_byte_stream_split_and_packed_struct():
    v = np.array([1.5, -2.25, 3.0], "<f4")
    planes = v.view(np.uint8).reshape(3, 4).T.copy()
    enc = pb.CompressiveEncoding(byte_stream_split=pb.ByteStreamSplit(
        values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))))
    dv = cz.decode_values(enc, [planes.tobytes()], 3, "miniblock")
    np.testing.assert_array_equal(fixed_as(dv, "<f4"), v)
    rows = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])
    rows["a"], rows["b"] = [1, 2], [0.5, 0.25]
    enc = pb.CompressiveEncoding(packed_struct=pb.PackedStruct(
        bits_per_value=[32, 64], values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=96))))
    dv = cz.decode_values(enc, [rows.tobytes()], 2, "miniblock")
    a, b = cz.split_packed_struct(dv)
    assert a.view("<i4").tolist() == [1, 2] and b.view("<f8").tolist() == [0.5, 0.25]


def test_general_lz4_and_zstd_block():
    payload = np.arange(5000, dtype="<u4").tobytes()
    lz = pa.Codec("lz4_raw").compress(payload, asbytes=True)
    zs = pa.Codec("zstd").compress(payload, asbytes=True)
    inner = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=32))
    for scheme, blob in [(pb.COMPRESSION_ALGORITHM_LZ4, struct.pack("<I", len(payload)) + lz),
                         (pb.COMPRESSION_ALGORITHM_ZSTD, zs),
                         (pb.COMPRESSION_ALGORITHM_ZSTD, struct.pack("<Q", len(payload)) + zs)]:
        enc = pb.CompressiveEncoding(general=pb.General(
            compression=pb.BufferCompression(scheme=scheme), values=inner))
        dv = cz.decode_values(enc, [blob], 5000, "block")
        assert dv.data.tolist() == list(range(5000))
        dvm = cz.decode_values(enc, [blob], 5000, "miniblock")
        assert dvm.data.tolist() == list(range(5000))


def test_fsl_with_validity():
    enc = pb.CompressiveEncoding(fixed_size_list=pb.FixedSizeList(
        items_per_value=2, has_validity=True, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16))))
    dv = cz.decode_values(enc, [bytes([0b1011]), np.arange(4, dtype="<u2").tobytes()], 2, "miniblock")
    assert dv.validity.tolist() == [True, True, False, True]
    assert dv.inner.data.tolist() == [0, 1, 2, 3]


def test_rle_block_levels():
    vals = np.array([1, 0, 2], "<u2").tobytes()
    blob = struct.pack("<Q", len(vals)) + vals + bytes([2, 3, 1])
    enc = pb.CompressiveEncoding(rle=pb.Rle(values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=16)),
                                            run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8))))
    assert cz.decode_levels(enc, blob, 6, "miniblock").tolist() == [1, 1, 0, 0, 0, 2]


# ---------------------------------------------------------------------------
# corrupt inputs raise CorruptFileError, never IndexError / struct.error
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("name", ["seq_i32", "hex", "runs_i32", "fsl8", "bool", "str4"])
def test_truncated_chunks_raise_corrupt(datasets, ver, name):
    path, _ = datasets[(name, ver)]
    (layout, bufs, _), = read_pages(path)
    mb = layout.mini_block_layout
    c = next(miniblock_chunks(mb, bufs))
    for cut in (0, 1, 7, len(c["values"][0]) // 2):
        vals = [bytes(c["values"][0])[:cut]] + [bytes(v) for v in c["values"][1:]]
        with pytest.raises(CorruptFileError):
            cz.decode_values(mb.value_compression, vals, c["num_values"], "miniblock", where="f.lance")
    with pytest.raises(CorruptFileError):
        cz.decode_values(mb.value_compression, [], c["num_values"], "miniblock", where="f.lance")
    if mb.HasField("dictionary"):
        for cut in (0, 3, 9, len(bufs[2]) // 2):
            with pytest.raises(CorruptFileError):
                cz.decode_values(mb.dictionary, [bufs[2][:cut]], mb.num_dictionary_items, "block")


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("name", ["seq_i32", "f64", "hex", "fsl8", "runs_i32", "bool", "str4"])
def test_both_decode_paths_match_pylance(datasets, ver, name):
    """The whole-page decoder (``chunked.decode_chunks``) and the chunk-at-a-time one each give
    what pylance reads, value for value."""
    path, _ = datasets[(name, ver)]
    expected = lance.dataset(path).to_table().column("c").combine_chunks()
    (layout, bufs, _), = read_pages(path)
    mb = layout.mini_block_layout
    chunks, per_chunk = decode_page(mb, bufs)
    whole = chunked.decode_chunks(mb.value_compression, [c["values"] for c in chunks],
                                  [c["num_values"] for c in chunks])
    dictionary = cz.decode_values(mb.dictionary, [bufs[2]], mb.num_dictionary_items, "block") \
        if mb.HasField("dictionary") else None
    for got in (whole, per_chunk):
        if dictionary is not None:
            got = gather_dictionary(dictionary, got, "test")
        assert values_to_arrow(got, expected.type, None, "test").equals(expected)


# ---------------------------------------------------------------------------
# full-zip pages (per-value FSST / general zstd)
# ---------------------------------------------------------------------------

def fullzip_values(fz: pb.FullZipLayout, buf: bytes):
    """Test-only: (offsets, data) of the value payloads of a full-zip page without rep/def."""
    assert fz.bits_rep == 0 and fz.bits_def == 0 and fz.bits_per_offset in (32, 64)
    fmt, w = ("<I", 4) if fz.bits_per_offset == 32 else ("<Q", 8)
    pos, offs, starts = 0, [0], []
    for _ in range(fz.num_items):
        (n,) = struct.unpack_from(fmt, buf, pos)
        starts.append((pos + w, n))
        pos += w + n
    data = b"".join(buf[s: s + n] for s, n in starts)
    for _, n in starts:
        offs.append(offs[-1] + n)
    return np.array(offs, np.int64), data


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("case", ["text", "blob"])
def test_fullzip_variable(tmp_path, ver, case):
    rng = np.random.default_rng(3)
    if case == "text":
        words = np.array(["lance", "column", "format", "python", "numpy", "arrow", "page", "chunk"])
        arr = pa.array([" ".join(words[rng.integers(0, 8, int(rng.integers(100, 180)))]) for _ in range(300)])
        expect = "fsst"
    else:
        arr = pa.array([bytes(rng.integers(0, 4, 40_000, dtype=np.uint8)) for _ in range(6)], pa.binary())
        expect = "general"
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"c": arr}), p, data_storage_version=ver)
    pages = read_pages(p)
    got = []
    for layout, bufs, _ in pages:
        assert layout.WhichOneof("layout") == "full_zip_layout"
        fz = layout.full_zip_layout
        assert fz.value_compression.WhichOneof("compression") == expect, fz
        offs, data = fullzip_values(fz, bufs[0])
        dv = fz_values.decode_fullzip_variable(fz.value_compression, offs, data)
        got += dv.strings()
    want = [v if isinstance(v, bytes) else v.encode() for v in arr.to_pylist()]
    assert got == want
