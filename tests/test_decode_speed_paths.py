"""The vectorised decode paths of the 2.1/2.2 reader give exactly what pylance gives.

Speed work replaced per-chunk Python loops by whole-page numpy passes: inline-bitpacked chunks
are unpacked straight from the page buffer (one strided view per run of equal-width chunks, a
per-value gather for small groups of widths), variable-width chunks are located without cutting
the page into pieces, and pages without rep/def levels skip the level walk. Each path is checked
here against pylance (scan, take, filter) and against the piece-wise decoder it replaces, on data
whose FastLanes block widths vary from block to block.
"""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError
from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage
from lance_fw_plugins.encodings_v2_1 import chunked, fastlanes, layouts
from lance_fw_plugins.encodings_v2_1 import compressive as cz

from tests.conftest import assert_tables_equal

lance = pytest.importorskip("lance")

VERSIONS = ["2.1", "2.2"]
BLOCK = fastlanes.BLOCK


def _varying_widths(rng: np.random.Generator, blocks: int, bits: int) -> np.ndarray:
    """``blocks`` FastLanes blocks of unsigned values whose bit width changes from block to block:
    a long run of one width (a strided view), widths seen in a few blocks only (the gather path),
    a repeated width at uneven spacing, all-zero blocks and full-width blocks."""
    widths = rng.integers(0, bits + 1, blocks)
    widths[blocks // 4 : blocks // 2] = bits // 2  # a long run of one width
    widths[::7] = bits - 1  # one width at even spacing across the page
    widths[3] = 0
    widths[5] = bits
    out = []
    for w in widths.tolist():
        v = rng.integers(0, 2**62, BLOCK, dtype=np.uint64) & np.uint64((1 << w) - 1)
        if w:
            v[int(rng.integers(0, BLOCK))] |= np.uint64(1 << (w - 1))  # the block's width is exactly w
        out.append(v)
    return np.concatenate(out).astype(fastlanes.utype(bits))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_unpack_inline_blocks_matches_values(bits):
    """Blocks laid anywhere in a word buffer (random gaps) unpack to their values, whatever mix
    of widths and spacing picks the strided, gathered or per-value path."""
    rng = np.random.default_rng(bits)
    values = _varying_widths(rng, 120, bits)
    blocks = fastlanes.pack_inline_blocks(values, bits)
    dt = fastlanes.utype(bits)
    pieces, starts, pos = [], [], 0
    for i, b in enumerate(blocks):
        gap = 0 if i % 3 else int(rng.integers(0, 4))
        pieces.append(np.zeros(gap, dt))
        pos += gap
        word = np.frombuffer(b, dt)
        pieces.append(word)
        starts.append(pos + 1)  # the packed words follow each block's width word
        pos += len(word)
    words = np.concatenate(pieces)
    widths = words[np.array(starts) - 1].astype(np.int64)
    out = np.empty((len(blocks), BLOCK), dt)
    fastlanes.unpack_inline_blocks(words, np.array(starts, np.int64), widths, bits, out)
    assert np.array_equal(out.reshape(-1), values)
    # the framed form, walked block by block
    stream = np.frombuffer(b"".join(blocks), dt)
    assert np.array_equal(fastlanes.unpack_inline(stream, bits, len(values) - 17), values[:-17])
    at = rng.integers(0, len(values), 300)
    got = fastlanes.unpack_at(words, np.array(starts, np.int64), widths, bits, at // BLOCK, at % BLOCK)
    assert np.array_equal(got, values[at])


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_out_of_line_unpack_every_width(bits):
    """Out-of-line bitpacking (one width for the page) round-trips at every width, the full
    width included (a plain FastLanes transpose), over more blocks than one round of the
    unpacker (``UNPACK_ROUND_BLOCKS``)."""
    rng = np.random.default_rng(100 + bits)
    for w in range(bits + 1):
        v = (rng.integers(0, 2**62, (fastlanes.UNPACK_ROUND_BLOCKS + 3) * BLOCK + 5, dtype=np.uint64) & np.uint64((1 << w) - 1)).astype(
            fastlanes.utype(bits)
        )
        packed = fastlanes.pack_out_of_line(v, w, bits)
        assert np.array_equal(fastlanes.unpack(packed, w, bits, len(v)), v), w


def _table(rng: np.random.Generator, rows_blocks: int) -> pa.Table:
    n = rows_blocks * BLOCK - 300  # a partial last chunk
    cols = {}
    for name, bits, dtype in (("u8", 8, pa.uint8()), ("i16", 16, pa.int16()), ("i32", 32, pa.int32()),
                              ("i64", 64, pa.int64())):
        v = _varying_widths(rng, rows_blocks, bits)[:n]
        cols[name] = pa.array(v.view(dtype.to_pandas_dtype()) if bits > 8 else v, dtype)
    cols["seq"] = pa.array(np.arange(n, dtype=np.int64) * 3)  # widths growing with the page
    # one width in every block: a strided run of blocks longer than one round of the unpacker
    cols["w45"] = pa.array(rng.integers(1 << 44, 1 << 45, n, dtype=np.int64))
    cols["f64"] = pa.array(rng.normal(100.0, 15.0, n))
    cols["s"] = pa.array([f"w{int(x)}" for x in rng.integers(0, 50_000, n)])
    cols["nested"] = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.random(n))], ["a", "b"]
    )
    cols["nullable_no_nulls"] = pa.array(np.arange(n, dtype=np.int64), pa.int64())
    cols["with_nulls"] = pa.array(rng.integers(0, 1000, n), mask=rng.random(n) < 0.1)
    cols["s_nulls"] = pa.array([f"v{int(x)}" for x in rng.integers(0, 90, n)], mask=rng.random(n) < 0.2)
    lengths = rng.integers(0, 4, n)
    items = pa.array(rng.integers(0, 1 << 40, int(lengths.sum())))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    cols["lists"] = pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(rng.random(n) < 0.05))
    cols["lowcard"] = pa.array(rng.choice([7, 1 << 40, -3, 12345], n))  # dictionary-encoded by pylance
    cols["same_lists"] = pa.array([[1, 2]] * n, pa.list_(pa.int64()))  # items through a dictionary
    nullable = ("nullable_no_nulls", "with_nulls", "s_nulls", "lists")
    schema = pa.schema([pa.field(k, v.type, nullable=k in nullable) for k, v in cols.items()])
    return pa.table(cols, schema=schema)


@pytest.fixture(scope="module")
def varying(tmp_path_factory):
    rng = np.random.default_rng(7)
    table = _table(rng, 70)
    out = {}
    for ver in VERSIONS:
        for writer in ("pylance", "lance_fw"):
            path = str(tmp_path_factory.mktemp("varying") / f"{writer}-{ver}.lance")
            if writer == "pylance":
                lance.write_dataset(table, path, data_storage_version=ver)
            else:
                lance_fw.write_dataset(table, path, data_storage_version=ver)
            out[(writer, ver)] = path
    return table, out


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_scan_take_filter_match_pylance(varying, ver, writer):
    table, paths = varying
    path = paths[(writer, ver)]
    expected = lance.dataset(path)
    got = lance_fw.dataset(path)
    assert_tables_equal(expected.to_table(), got.to_table())
    rng = np.random.default_rng(11)
    for rows in (np.sort(rng.choice(table.num_rows, 50, replace=False)), np.arange(1020, 1030),
                 np.array([0, table.num_rows - 1]), np.sort(rng.choice(table.num_rows, 30_000, replace=False))):
        assert_tables_equal(expected.take(rows.tolist()), got.take(rows.tolist()))
    for text in ("i64 < 1000", "u8 = 3", "seq = 3003", "i32 > 5 and i16 < 0", "with_nulls < 10"):
        assert_tables_equal(expected.to_table(filter=text), got.to_table(filter=text))


def _mini_block_pages(path: str):
    (f,) = glob.glob(f"{path}/data/*.lance")
    reader = resolve_storage(f).open_reader(f)
    tail = read_tail(reader)
    for col in tail.columns:
        for page in col.pages:
            a = any_pb2.Any()
            a.ParseFromString(page.encoding.direct.encoding)
            layout = pb.PageLayout()
            layout.ParseFromString(a.value)
            if layout.WhichOneof("layout") != "mini_block_layout":
                continue
            bufs = [reader.read(int(o), int(s)) for o, s in zip(page.buffer_offsets, page.buffer_sizes)]
            yield layout.mini_block_layout, bufs


def _chunk_places(mb, bufs):
    data = np.frombuffer(bufs[1], np.uint8)
    starts, sizes, counts = layouts.chunk_table(mb, np.frombuffer(bufs[0], np.uint8), len(data), "test")
    chunks = layouts._parse_chunks(
        data, starts, sizes, mb.HasField("rep_compression"), mb.HasField("def_compression"),
        mb.num_buffers, mb.has_large_chunk, "test",
    )
    return data, chunks.bufs, counts


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_chunk_ranges_equal_piecewise_decode(varying, ver, writer):
    """``decode_chunk_ranges`` (straight from the page buffer) equals ``decode_chunks`` over the
    chunks cut out one by one, for every mini-block page of the files, whole and with ``needed``;
    a page buffer at an odd address (a copy is made to align it) decodes the same."""
    _, paths = varying
    seen = set()
    for mb, bufs in _mini_block_pages(paths[(writer, ver)]):
        enc = mb.value_compression
        seen.add(enc.WhichOneof("compression"))
        data, places, counts = _chunk_places(mb, bufs)
        pieces = [[data[a[i] : a[i] + b[i]] for a, b in places] for i in range(len(counts))]
        whole = chunked.decode_chunks(enc, pieces, counts, "test")
        fast = chunked.decode_chunk_ranges(enc, data, places, counts, "test")
        _assert_same(whole, fast)
        odd = np.frombuffer(b"\0" + bytes(bufs[1]), np.uint8)[1:]
        _assert_same(whole, chunked.decode_chunk_ranges(enc, odd, places, counts, "test"))
        needed = np.unique(np.random.default_rng(1).integers(0, int(np.sum(counts)), 20))
        sparse = chunked.decode_chunk_ranges(enc, data, places, counts, "test", needed)
        _assert_same(whole, sparse, needed)
    assert seen & {"inline_bitpacking", "general", "variable", "fsst"}


def test_pylance_pages_include_dictionaries(varying):
    """The fixture reaches the dictionary gather (fixed-width values) the scans above check."""
    _, paths = varying
    assert any(mb.HasField("dictionary") for mb, _ in _mini_block_pages(paths[("pylance", "2.2")]))


@pytest.mark.parametrize("ver", VERSIONS)
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_level_chunks_equal_per_chunk_decode(varying, ver, writer):
    """The rep/def levels of every mini-block page, decoded for all chunks at once, equal the
    chunk-by-chunk decode."""
    _, paths = varying
    pages = 0
    for mb, bufs in _mini_block_pages(paths[(writer, ver)]):
        data, _, _ = _chunk_places(mb, bufs)
        starts, sizes, _ = layouts.chunk_table(mb, np.frombuffer(bufs[0], np.uint8), len(data), "test")
        chunks = layouts._parse_chunks(
            data, starts, sizes, mb.HasField("rep_compression"), mb.HasField("def_compression"),
            mb.num_buffers, mb.has_large_chunk, "test",
        )
        for field, place in (("rep_compression", chunks.rep), ("def_compression", chunks.defs)):
            if not mb.HasField(field):
                continue
            pages += 1
            enc = getattr(mb, field)
            a, b = place
            one_by_one = [cz.decode_levels(enc, data[x : x + y], int(n), "miniblock")
                          for x, y, n in zip(a.tolist(), b.tolist(), chunks.num_levels.tolist())]
            expected = np.concatenate(one_by_one) if one_by_one else np.zeros(0, np.uint16)
            got = chunked.decode_level_chunks(enc, data, a, b, chunks.num_levels, "test")
            assert got.dtype == np.uint16 and np.array_equal(got, expected)
    assert pages


def test_level_chunks_with_raw_tails():
    """Out-of-line bitpacked level chunks whose last partial block is stored raw (pylance's rule
    for a short tail) mixed with fully packed ones, and a zero-width chunk, decode as one by one."""
    rng = np.random.default_rng(3)
    enc = pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(
            uncompressed_bits_per_value=16, values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=3))
        )
    )
    counts = [1024, 2048, 30, 1024, 700, 5, 192, 1024 + 192]  # 192 = 64 * width: raw, packed size
    pieces, starts, pos = [], [], 0
    expected = []
    for i, n in enumerate(counts):
        levels = rng.integers(0, 8, n).astype(np.uint16)
        expected.append(levels)
        raw = fastlanes.pack_out_of_line(levels, 3, 16).tobytes()
        starts.append(pos)
        pieces.append(raw + b"\0" * (-len(raw) % 8))
        pos += len(pieces[-1])
    data = np.frombuffer(b"".join(pieces), np.uint8)
    sizes = np.array([len(fastlanes.pack_out_of_line(np.zeros(n, np.uint16), 3, 16).tobytes()) for n in counts])
    got = chunked.decode_level_chunks(enc, data, np.array(starts), sizes, np.array(counts), "test")
    assert np.array_equal(got, np.concatenate(expected))
    with pytest.raises(CorruptFileError):  # a chunk claiming more levels than its bytes hold
        chunked.decode_level_chunks(enc, data, np.array(starts), sizes, np.array(counts) * 40, "test")


def _assert_same(a, b, at=None):
    assert a.kind == b.kind and a.num_values == b.num_values
    if a.kind == "fixed":
        x, y = a.fixed_bytes(), b.fixed_bytes()
        if at is None or a.bits_per_value % 8:
            assert np.array_equal(x, y)
        else:
            w = a.bits_per_value // 8
            assert np.array_equal(x.reshape(-1, w)[at], y.reshape(-1, w)[at])
    elif a.kind == "variable":
        sa, sb = a.strings(), b.strings()
        idx = range(a.num_values) if at is None else at.tolist()
        assert [sa[i] for i in idx] == [sb[i] for i in idx]
    elif a.kind == "fsl":
        _assert_same(a.inner, b.inner, None if at is None else (at[:, None] * a.dimension
                                                                 + np.arange(a.dimension)).reshape(-1))


def _inline_page(bits: int = 32):
    """One mini-block page of three inline-bitpacked chunks, built by hand."""
    values = np.arange(3 * BLOCK, dtype=fastlanes.utype(bits))
    blocks = fastlanes.pack_inline_blocks(values, bits)
    data = b"".join(b + b"\0" * (-len(b) % 8) for b in blocks)
    sizes = np.array([len(b) for b in blocks], np.int64)
    starts = np.concatenate([[0], np.cumsum((sizes + 7) // 8 * 8)[:-1]])
    enc = pb.CompressiveEncoding(inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=bits))
    return enc, bytearray(data), starts, sizes, np.array([BLOCK] * 3), values


def test_damaged_inline_chunks_raise():
    enc, data, starts, sizes, counts, values = _inline_page()
    got = chunked.decode_chunk_ranges(enc, np.frombuffer(bytes(data), np.uint8), [(starts, sizes)], counts)
    assert np.array_equal(got.data, values)
    wide = bytearray(data)
    wide[int(starts[1])] = 40  # a width word above the value width
    with pytest.raises(CorruptFileError, match="width 40"):
        chunked.decode_chunk_ranges(enc, np.frombuffer(bytes(wide), np.uint8), [(starts, sizes)], counts)
    with pytest.raises(CorruptFileError, match="needs"):  # a chunk buffer cut short of its width
        chunked.decode_chunk_ranges(enc, np.frombuffer(bytes(data), np.uint8), [(starts, sizes - 8)], counts)
    with pytest.raises(CorruptFileError, match="whole"):
        chunked.decode_chunk_ranges(enc, np.frombuffer(bytes(data), np.uint8), [(starts, sizes - 3)], counts)
