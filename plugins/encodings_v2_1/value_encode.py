"""What bytes the values and levels of one 2.1/2.2 page become: the ``CompressiveEncoding`` tree
and its buffers, per mini-block chunk or per full-zip value.

``encode.py`` chooses the page layout (constant, mini-block, full-zip) and assembles chunks and
pages; this module answers, for given values, which compressive encoding pylance 14 would pick and
what it writes: flat and FastLanes-bitpacked integers, RLE runs, ``variable`` offsets, fixed-size
lists, packed structs, page dictionaries, FSST and zstd, and the rep/def level buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file import fsst_encode
from lance_fw.file.buffer_compression import ZSTD, compress_framed
from lance_fw.file.buffers import fixed_bits, gather_ranges, headed, offsets_and_data, range_positions

from . import fastlanes
from .compressive import RLE_VALUES_LENGTH, SCHEME_NAMES, VARIABLE_BLOCK_HEADER_32

CHUNK_TARGET_BYTES = 4096
MAX_CHUNK_VALUES = 4096
#: pylance's FSST rule (lance-encoding, both layouts): string pages of at least this many bytes
#: whose longest value has at least FSST_MIN_LONGEST bytes; below that FSST does not pay.
FSST_MIN_PAGE_BYTES = fsst_encode.MIN_INPUT_BYTES
FSST_MIN_LONGEST = 5
_UINT_DTYPE: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

#: One chunk's value buffers (bytes, or views into the page's values where no copy is needed).
ChunkBuffers: TypeAlias = Sequence[bytes | memoryview]
#: ``(page values, [(first, stop) value span of each chunk]) -> each chunk's value buffers``.
PageChunker: TypeAlias = Callable[[pa.Array, list[tuple[int, int]]], Sequence[ChunkBuffers]]
#: A mini-block value plan: (value encoding, values per chunk, or None for chunks cut by bytes,
#: the chunker).
ValuePlan: TypeAlias = tuple[pb.CompressiveEncoding, int | None, PageChunker]
#: A level plan: (level encoding, one chunk's levels -> its packed buffer).
LevelPlan: TypeAlias = tuple[pb.CompressiveEncoding, Callable[[np.ndarray], bytes]]


def flat(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits))


def value_bits(t: pa.DataType) -> int:
    if pa.types.is_dictionary(t):  # stored through a page dictionary, never as raw indices
        return 0
    return fixed_bits(t) or 0


def fixed_bytes(values: pa.Array) -> np.ndarray:
    """Raw little-endian bytes of a fixed-width array (bit-packed for bools), offset applied."""
    t = values.type
    if pa.types.is_boolean(t):
        return np.packbits(pc.fill_null(values, False).to_numpy(zero_copy_only=False), bitorder="little")
    if pa.types.is_fixed_size_list(t):
        items = values.values.slice(values.offset * t.list_size, len(values) * t.list_size)
        return fixed_bytes(items)
    width = t.bit_width // 8
    buf = values.buffers()[1]
    if buf is None:
        return np.zeros(len(values) * width, np.uint8)
    return np.frombuffer(buf, np.uint8, count=len(values) * width, offset=values.offset * width)


def pow2_at_most(n: int) -> int:
    n = max(2, min(MAX_CHUNK_VALUES, n))
    return 1 << (n.bit_length() - 1)


def _per_chunk(encode: Callable[[pa.Array], ChunkBuffers]) -> PageChunker:
    """Lift a chunk encoder to the page form ``(page, spans) -> buffers per chunk`` that encodings
    vectorising across chunks implement directly."""
    return lambda page, spans: [encode(page.slice(a, b - a)) for a, b in spans]


class ContiguousChunks(Sequence[ChunkBuffers]):
    """Chunks of one value buffer each, laid end to end in one byte array: chunk c is
    ``raw[edges[c]:edges[c + 1]]``.

    Why not a list of views: a page of 128-byte vectors is ~2,000 chunks, and the per-chunk
    views and lists, with the per-chunk objects of joining them, kept Python's cyclic GC busy:
    a write of the bench's numeric table ran ~500 collections, full ones among them holding
    the GIL for ~50 ms each (~20% of the write). The chunk assembler copies these chunks as a
    few strided blocks instead (``encode._assemble_chunks``)."""

    def __init__(self, raw: np.ndarray, edges: np.ndarray) -> None:
        self.raw, self.edges = raw, edges

    def __len__(self) -> int:
        return len(self.edges) - 1

    @overload
    def __getitem__(self, c: int) -> ChunkBuffers: ...

    @overload
    def __getitem__(self, c: slice) -> Sequence[ChunkBuffers]: ...

    def __getitem__(self, c: int | slice) -> ChunkBuffers | Sequence[ChunkBuffers]:
        if isinstance(c, slice):
            return [self[i] for i in range(*c.indices(len(self)))]
        at = c + len(self) if c < 0 else c
        if not 0 <= at < len(self):
            raise IndexError(c)
        return [self.raw[int(self.edges[at]) : int(self.edges[at + 1])].data]


def _slice_bytes(
    raw: np.ndarray, spans: list[tuple[int, int]], width: int
) -> ContiguousChunks | list[list[memoryview]]:
    """Plain fixed-width chunks: consecutive byte ranges of the page's values."""
    flat_bytes = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    starts = np.fromiter((a for a, _ in spans), np.int64, len(spans))
    stops = np.fromiter((b for _, b in spans), np.int64, len(spans))
    if spans and np.array_equal(starts[1:], stops[:-1]):  # chunks follow each other (they do)
        return ContiguousChunks(flat_bytes, np.append(starts, stops[-1]) * width)
    view = flat_bytes.data
    return [[view[a * width : b * width]] for a, b in spans]


def value_plan(values: pa.Array, general: bool = True) -> ValuePlan:
    """(value encoding, values per chunk or None for byte-sized chunks, ``(page, spans) -> value
    buffers of each chunk``) for a mini-block page. ``general``: strings' chunks zstd-compressed
    where it pays (``zstd_pays``); False leaves them plain ``variable`` (FSST's grammar wants
    Variable values, not zstd over them; a field asking for a compression of its own gets it
    from ``general_compressed`` once its chunks are cut)."""
    t = values.type
    if pa.types.is_struct(t):
        return _packed_struct_plan(values)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        item_bits = value_bits(t.value_type)
        has_validity = values.values.null_count > 0
        fsl = pb.FixedSizeList(items_per_value=dim, values=flat(item_bits), has_validity=has_validity)

        def fsl_chunk(chunk: pa.Array) -> list[bytes]:
            items = chunk.values.slice(chunk.offset * dim, len(chunk) * dim)
            bufs = [fixed_bytes(items).tobytes()]
            if has_validity:
                bufs.insert(
                    0,
                    np.packbits(items.is_valid().to_numpy(zero_copy_only=False), bitorder="little").tobytes(),
                )
            return bufs

        if not has_validity and item_bits % 8 == 0:
            width = item_bits * dim // 8

            def fsl_page(page: pa.Array, spans: list) -> Sequence[ChunkBuffers]:
                return _slice_bytes(fixed_bytes(page), spans, width)

            per_chunk = pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, item_bits * dim))
            return pb.CompressiveEncoding(fixed_size_list=fsl), per_chunk, fsl_page
        per_chunk = pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, item_bits * dim))
        return pb.CompressiveEncoding(fixed_size_list=fsl), per_chunk, _per_chunk(fsl_chunk)
    bits = value_bits(t)
    if bits:
        rle = _rle_plan(values, bits) if bits in (8, 16, 32, 64) and not pa.types.is_boolean(t) else None
        if rle is not None:
            return rle
        if bits in (8, 16, 32, 64) and not pa.types.is_boolean(t) and _bitpacking_pays(values, bits):
            enc = pb.CompressiveEncoding(
                inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=bits)
            )
            dtype = _UINT_DTYPE[bits]

            def packed_page(page: pa.Array, spans: list) -> list[list[bytes]]:
                raw = fixed_bytes(page).view(dtype)
                if all(b - a == fastlanes.BLOCK for a, b in spans[:-1]):
                    # chunks are whole 1024-value blocks, so the page packs in one vectorised pass
                    return [[b] for b in fastlanes.pack_inline_blocks(raw, bits)]
                # a chunk cut short (its values' lists hold more levels than a chunk may) is
                # a block of its own
                return [fastlanes.pack_inline_blocks(raw[a:b], bits) for a, b in spans]

            return enc, fastlanes.BLOCK, packed_page
        if not pa.types.is_boolean(t):
            width = bits // 8
            return (
                flat(bits),
                pow2_at_most(CHUNK_TARGET_BYTES * 8 // bits),
                lambda page, spans: _slice_bytes(fixed_bytes(page), spans, width),
            )
        per_chunk = pow2_at_most(CHUNK_TARGET_BYTES * 8 // bits)
        return flat(bits), per_chunk, _per_chunk(lambda chunk: [fixed_bytes(chunk).tobytes()])
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    off_bits = 64 if large else 32
    enc = pb.CompressiveEncoding(variable=pb.Variable(offsets=flat(off_bits)))

    def variable_chunk(chunk: pa.Array) -> list[bytes]:
        offs, data = offsets_and_data(chunk)
        header = (len(chunk) + 1) * off_bits // 8
        rel = (offs - offs[0] + header).astype("<u8" if large else "<u4")
        body = data[offs[0] : offs[-1]].tobytes()
        buf = rel.tobytes() + body
        return [buf + b"\x00" * (-len(buf) % (off_bits // 8))]  # padded to the offset width

    if general and zstd_pays(values):

        def zstd_chunk(chunk: pa.Array) -> list[bytes]:
            return [compress_framed(variable_chunk(chunk)[0], ZSTD)]

        wrapped = pb.CompressiveEncoding(
            general=pb.General(
                compression=pb.BufferCompression(scheme=pb.COMPRESSION_ALGORITHM_ZSTD), values=enc
            )
        )
        return wrapped, None, _per_chunk(zstd_chunk)
    return enc, None, lambda page, spans: variable_chunks(page, spans, large)


#: Field metadata steering byte-stream-split, which pylance tries (before RLE and bit-packing)
#: only for 32- and 64-bit values of a field asking for general compression: "off", "on", or
#: "auto" (the default: where the values' bytes look repetitive, ``bss_wanted``).
BSS_META_KEY = "lance-encoding:bss"
BSS_MODES = ("off", "on", "auto")
#: Values a byte-stream-split chunk holds: its byte planes stay under 8 KiB, as pylance cuts them.
BSS_CHUNK_VALUES = {32: 1024, 64: 512}
#: pylance's "auto": the first values' Shannon entropy per byte position (each truncated to
#: thousandths of a bit), averaged over the positions, below half of 8 bits.
BSS_SAMPLE_VALUES = 64
BSS_AUTO_ENTROPY_BITS = 4.0


def bss_wanted(values: pa.Array, mode: str) -> bool:
    """Whether byte-stream-split encodes a page of ``values`` under ``mode`` (``BSS_MODES``)."""
    bits = value_bits(values.type)
    if bits not in BSS_CHUNK_VALUES or mode == "off" or pa.types.is_boolean(values.type):
        return False
    if mode == "on":
        return True
    width = bits // 8
    sample = fixed_bytes(values.slice(0, BSS_SAMPLE_VALUES)).reshape(-1, width)
    millibits = 0
    for plane in sample.T:
        counts = np.bincount(plane, minlength=256)
        p = counts[counts > 0] / len(plane)
        millibits += int(-(p * np.log2(p)).sum() * 1000)
    return bool(len(sample)) and millibits / width / 1000 < BSS_AUTO_ENTROPY_BITS


def bss_plan(values: pa.Array) -> ValuePlan:
    """Byte-stream-split chunks: each chunk's values as byte planes (every value's first byte,
    then every value's second, ...), ``BSS_CHUNK_VALUES`` values a chunk."""
    bits = value_bits(values.type)
    width = bits // 8
    enc = pb.CompressiveEncoding(byte_stream_split=pb.ByteStreamSplit(values=flat(bits)))

    def planes(page: pa.Array, spans: list[tuple[int, int]]) -> list[list[bytes]]:
        rows = fixed_bytes(page).reshape(-1, width)
        return [[np.ascontiguousarray(rows[a:b].T).tobytes()] for a, b in spans]

    return enc, BSS_CHUNK_VALUES[bits], planes


#: The general compression schemes, by the names field metadata gives them.
GENERAL_SCHEMES = {name: scheme for scheme, name in SCHEME_NAMES.items()}
#: Value bytes (every chunk's first buffer) a page needs before general compression is tried.
GENERAL_MIN_PAGE_BYTES = 4 * 1024
#: Value encodings a field's general compression wraps: pylance leaves fixed-size lists and
#: packed structs as they are.
GENERAL_INNER = frozenset({"byte_stream_split", "flat", "inline_bitpacking", "rle", "variable"})


def general_compressed(
    enc: pb.CompressiveEncoding, chunks: Sequence[ChunkBuffers], scheme: str, level: int | None
) -> tuple[pb.CompressiveEncoding, list[list[bytes | memoryview]]] | None:
    """A page's chunks with each chunk's first buffer compressed (``scheme`` at ``level``, framed
    by ``buffer_compression``), and their encoding, as pylance writes a column whose field asks
    for ``lance-encoding:compression``; None where pylance keeps them as they are: an encoding it
    does not wrap, under ``GENERAL_MIN_PAGE_BYTES`` of first buffers, or nothing saved in all."""
    if enc.WhichOneof("compression") not in GENERAL_INNER or not len(chunks):
        return None
    firsts = [chunk[0] for chunk in chunks]
    total = sum(len(first) for first in firsts)
    if total < GENERAL_MIN_PAGE_BYTES:
        return None
    packed = [compress_framed(first, scheme, level) for first in firsts]
    if sum(len(p) for p in packed) >= total:
        return None
    compression = pb.BufferCompression(scheme=GENERAL_SCHEMES[scheme], level=level)
    wrapped = pb.CompressiveEncoding(general=pb.General(compression=compression, values=enc))
    return wrapped, [[p, *chunk[1:]] for p, chunk in zip(packed, chunks)]


def variable_chunks(page: pa.Array, spans: list[tuple[int, int]], large: bool) -> list[list[bytes]]:
    """Every chunk's ``variable`` buffer (``count + 1`` offsets from the buffer's start, the
    bytes, zeros to the offset width) for a page at once: the offsets of all chunks are rebased
    and converted in one pass, and each chunk is one join of three slices (per-chunk array
    slicing and conversion took ~11 us a chunk, a 4 KiB chunk of text being ~4,000 a page)."""
    if not spans:
        return []
    width = 8 if large else 4
    offs, data = offsets_and_data(page)
    first = np.array([a for a, _ in spans], np.int64)
    stop = np.array([b for _, b in spans], np.int64)
    counts = stop - first + 1  # offsets per chunk
    header = counts * width
    rel = offs[range_positions(first, counts)] - np.repeat(offs[first] - header, counts)
    rel_view = rel.astype("<u8" if large else "<u4").data.cast("B")
    data_view = data.data
    rel_at = np.zeros(len(spans) + 1, np.int64)
    np.cumsum(header, out=rel_at[1:])
    pads = (-(header + offs[stop] - offs[first]) % width).tolist()
    edges, d0, d1 = rel_at.tolist(), offs[first].tolist(), offs[stop].tolist()
    return [
        [b"".join((rel_view[edges[i] : edges[i + 1]], data_view[d0[i] : d1[i]], _ZERO_PADS[pads[i]]))]
        for i in range(len(spans))
    ]


#: ``_ZERO_PADS[k]``: k zero bytes (a ``variable`` chunk is padded to its offset width).
_ZERO_PADS = [b"\x00" * k for k in range(8)]


def _rle_plan(values: pa.Array, bits: int) -> ValuePlan | None:
    """RLE (flat values + u8 run lengths, runs split at 255) when runs are long enough to pay."""
    raw = fixed_bytes(values).view(_UINT_DTYPE[bits])
    if len(raw) < 64:
        return None
    changes = int(np.count_nonzero(raw[1:] != raw[:-1])) + 1
    if changes * (bits // 8 + 1) * 8 > raw.nbytes:  # runs must save at least 8x over raw values
        return None
    enc = pb.CompressiveEncoding(rle=pb.Rle(values=flat(bits), run_lengths=flat(8)))

    def rle_chunk(chunk: pa.Array) -> list[bytes]:
        run_values, run_lengths = _runs(fixed_bytes(chunk).view(raw.dtype))
        return [run_values.tobytes(), run_lengths.tobytes()]

    return enc, MAX_CHUNK_VALUES, _per_chunk(rle_chunk)


def _runs(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run values, u8 run lengths) with runs split at 255."""
    if not len(vals):
        return vals[:0], np.zeros(0, np.uint8)
    starts = np.flatnonzero(np.concatenate([[True], vals[1:] != vals[:-1]]))
    lengths = np.diff(np.append(starts, len(vals)))
    pieces = (lengths + 254) // 255
    run_values = np.repeat(vals[starts], pieces)
    run_lengths = np.full(int(pieces.sum()), 255, np.int64)
    run_lengths[np.cumsum(pieces) - 1] = lengths - (pieces - 1) * 255
    return run_values, run_lengths.astype(np.uint8)


#: Fraction of a page's flat bytes that inline bit-packing must save to be chosen. pylance packs
#: whenever it saves anything, so float64 values (sign bit clear: 63 of 64 bits) are packed to
#: save 1.5%; unpacking them is then most of a scan's work (2M doubles: ~6.5 ms of unpacking per
#: 1M values here against a copy, and a 2-column scan 24 -> 15 ms, DuckDB top-N 34 -> 21 ms once
#: stored flat). Saving under 1/32 is not worth a decode pass to either reader; 30-of-32-bit floats
#: (6%) and narrower values are still packed, so sizes stay at pylance's (numeric bench table
#: +0.1%).
MIN_PACKING_SAVING = 1 / 32


def _bitpacking_pays(values: pa.Array, bits: int) -> bool:
    """Inline bit-packing is chosen when its blocks save at least ``MIN_PACKING_SAVING`` of the
    flat values: every 1024-value block (the last one padded) costs a width word plus 1024 values
    at the page's widest width, so a short page or a width close to ``bits`` stays flat."""
    raw = fixed_bytes(values).view(_UINT_DTYPE[bits])
    if not len(raw):
        return False
    width = int(raw.max()).bit_length()
    blocks = -(-len(raw) // fastlanes.BLOCK)
    packed = blocks * (bits + fastlanes.BLOCK * width) // 8
    return packed < raw.nbytes * (1 - MIN_PACKING_SAVING)


def _packed_struct_rows(values: pa.StructArray) -> tuple[pb.CompressiveEncoding, np.ndarray, int]:
    """A struct of fixed-width fields (``lance-encoding:packed``) as pylance stores it: each row's
    field values side by side, ``PackedStruct`` over a Flat of the summed width. Like pylance,
    only whole-byte fields without nulls of their own (the struct itself may be null).
    Returns (encoding, rows as a ``(len, bytes per row)`` uint8 array, bits per row)."""
    fields = [values.type.field(i) for i in range(values.type.num_fields)]
    children = values.flatten()  # (sliced like the struct; the struct's nulls are theirs too)
    rows_valid = values.is_valid().to_numpy(zero_copy_only=False)
    widths = [value_bits(f.type) for f in fields]
    for f, child, bits in zip(fields, children, widths):
        if not bits or bits % 8 or pa.types.is_fixed_size_list(f.type):
            raise UnsupportedFeatureError(
                f"packed struct field {f.name!r} ({f.type}): lance-encoding:packed "
                "needs fixed-width fields of whole bytes"
            )
        if child.null_count and (rows_valid & ~child.is_valid().to_numpy(zero_copy_only=False)).any():
            raise UnsupportedFeatureError(
                f"packed struct field {f.name!r} holds nulls: lance-encoding:packed "
                "stores none (as in pylance)"
            )
    rows = (
        np.concatenate(
            [fixed_bytes(c).reshape(len(values), bits // 8) for c, bits in zip(children, widths)], axis=1
        )
        if fields
        else np.zeros((len(values), 0), np.uint8)
    )
    total = sum(widths)
    enc = pb.CompressiveEncoding(packed_struct=pb.PackedStruct(bits_per_value=widths, values=flat(total)))
    return enc, rows, total


def _packed_struct_plan(values: pa.StructArray) -> ValuePlan:
    """A packed struct in mini-block chunks: a power-of-two count of whole rows per chunk."""
    enc, rows, total = _packed_struct_rows(values)

    def packed_page(page: pa.Array, spans: list[tuple[int, int]]) -> Sequence[ChunkBuffers]:
        return _slice_bytes(rows.reshape(-1), spans, total // 8)

    return enc, pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, total)), packed_page


#: pylance 14 stores a page of 64- or 128-bit values (integers, floats, temporal, decimals; never
#: narrower ones) through a page dictionary when it has at least DICT_FIXED_MIN_ROWS values, at
#: most one distinct value in DICT_FIXED_ROWS_PER_VALUE and fewer than DICT_FIXED_MAX_VALUES
#: (measured on pylance 14.0.2: 50 of 200 rows and 2570 of 100,000 are dictionaries, 100 of 200,
#: 1000 of 3000 and 2580 of 100,000 are not; its cardinality is an estimate, so near the edges
#: its choice wavers, lance_fw's counts). Values of 64 bits that repeat are ten times smaller so.
DICT_FIXED_MIN_ROWS = 100
DICT_FIXED_ROWS_PER_VALUE = 4
DICT_FIXED_MAX_VALUES = 2576
#: Values a page's distinct count is first estimated on (most pages are far from a dictionary).
DICT_SAMPLE_VALUES = 4096
#: The value kinds pylance's rule covers (intervals, lists and fixed-size binaries stay out).
_DICT_FIXED_KINDS = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_time,
    pa.types.is_duration,
    pa.types.is_decimal,
)
#: Arrow types a page's 64- or 128-bit values are dictionary-encoded as: their exact bits.
_DICT_BIT_TYPES = {64: pa.int64(), 128: pa.binary(16)}
#: The value widths the rule covers per file version (pylance 14: 2.1 pages of 64-bit values never
#: have a dictionary, of 128-bit decimals they do).
DICT_FIXED_BITS_V2_1 = frozenset({128})
DICT_FIXED_BITS_V2_2 = frozenset({64, 128})


def _fixed_dictionary(values: pa.Array, widths: frozenset[int]) -> tuple[pa.Array, pa.Array] | None:
    """(indices, dictionary of the values' bits) where pylance's rule takes a page dictionary.
    Values are compared by their bits (a float's -0.0 and NaN payloads stay as they are)."""
    t = values.type
    bits = value_bits(t)
    if (
        bits not in widths
        or len(values) < DICT_FIXED_MIN_ROWS
        or not any(is_kind(t) for is_kind in _DICT_FIXED_KINDS)
    ):
        return None
    as_bits = pa.Array.from_buffers(
        _DICT_BIT_TYPES[bits], len(values), values.buffers()[:2], values.null_count, values.offset
    )
    limit = min(DICT_FIXED_MAX_VALUES, len(values) // DICT_FIXED_ROWS_PER_VALUE)
    sample = as_bits.slice(0, DICT_SAMPLE_VALUES)
    if pc.count_distinct(sample).as_py() > limit:
        return None
    encoded = pc.dictionary_encode(as_bits)
    if len(encoded.dictionary) > limit:
        return None
    return encoded.indices, encoded.dictionary


def dictionary_of(
    values: pa.Array, fixed_widths: frozenset[int] = DICT_FIXED_BITS_V2_2
) -> tuple[pa.Array, pa.Array | None]:
    """(chunk values, page dictionary): Arrow dictionaries, low-cardinality strings and repeating
    values of ``fixed_widths`` bits (``DICT_FIXED_BITS_V2_*``) are stored as u32 indices into a
    per-page dictionary (nulls travel in the def levels)."""
    fixed = _fixed_dictionary(values, fixed_widths)
    if fixed is not None:
        indices, dictionary = fixed
    elif pa.types.is_dictionary(values.type):
        indices, dictionary = values.indices, values.dictionary
    elif (pa.types.is_string(values.type) or pa.types.is_binary(values.type)) and len(values) >= 64:
        sample = values.slice(0, 4096)
        if pc.count_distinct(sample).as_py() * 4 > len(sample):
            return values, None
        encoded = pc.dictionary_encode(values)
        if len(encoded.dictionary) * 4 > len(values):
            return values, None
        indices, dictionary = encoded.indices, encoded.dictionary
    else:
        return values, None
    return pc.fill_null(indices, 0).cast(pa.uint32()), dictionary


def dictionary_block(dictionary: pa.Array) -> tuple[pb.CompressiveEncoding, bytes]:
    """A dictionary page buffer: variable values in block form (``u32 32 | u32 data_start |
    offsets | data``) or flat fixed-width values."""
    bits = value_bits(dictionary.type)
    if bits:
        return flat(bits), fixed_bytes(dictionary).tobytes()
    offs, data = offsets_and_data(dictionary)
    rel = (offs - offs[0]).astype("<u4")
    start = VARIABLE_BLOCK_HEADER_32.size + rel.nbytes
    body = VARIABLE_BLOCK_HEADER_32.pack(32, start) + rel.tobytes() + data[offs[0] : offs[-1]].tobytes()
    return pb.CompressiveEncoding(variable=pb.Variable(offsets=flat(32))), body


def fsst_applies(values: pa.Array, compression: str | None) -> bool:
    """pylance's rule: FSST for string (not binary) pages of >= 32 KiB whose longest value has
    >= 5 bytes, unless the field names another compression; always when it names "fsst"."""
    t = values.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if not len(values) or not (text or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return False
    if compression is not None:
        return compression == "fsst"
    if not text:
        return False
    offs, _ = offsets_and_data(values)
    if int(offs[-1] - offs[0]) < FSST_MIN_PAGE_BYTES:
        return False
    return int(np.diff(offs).max()) >= FSST_MIN_LONGEST


def fsst_compressed(values: pa.Array, compressor: fsst_encode.ColumnCompressor) -> tuple[pa.Array, bytes]:
    """The page's strings FSST-compressed, as a binary array of the same length and offset width
    (nulls travel in the def levels), and the symbol table."""
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    offs, data = offsets_and_data(values)
    table, new_offs, codes = compressor.compress(offs, data)
    compressed = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(values),
        [None, pa.py_buffer(new_offs.astype(np.int64 if large else np.int32)), pa.py_buffer(codes)],
    )
    return compressed, table


def zstd_pays(values: pa.Array) -> bool:
    """Compress string chunks (binary, or strings FSST leaves out) when a sample of the data
    shrinks by at least a quarter."""
    offs, data = offsets_and_data(values.slice(0, 2048))
    sample = data[offs[0] : min(int(offs[-1]), int(offs[0]) + 64 * 1024)].tobytes()  # not the whole buffer
    if len(sample) < 1024:
        return False
    return len(pa.Codec("zstd").compress(pa.py_buffer(sample))) * 4 < len(sample) * 3


def levels_plan(levels: np.ndarray | None) -> LevelPlan:
    """Rep/def levels: FastLanes bitpacking at the page's widest level (a chunk's last partial
    1024-level block is stored raw where padding it would not pay, as pylance does)."""
    if levels is None or not len(levels):
        return flat(16), lambda chunk: chunk.astype("<u2").tobytes()
    width = max(1, int(levels.max()).bit_length())
    enc = pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(uncompressed_bits_per_value=16, values=flat(width))
    )

    def pack(chunk: np.ndarray) -> bytes:
        return fastlanes.pack_out_of_line(chunk.astype(np.uint16), width, 16).astype("<u2").tobytes()

    return enc, pack


def level_block(levels: np.ndarray) -> tuple[pb.CompressiveEncoding, bytes]:
    """A whole buffer of u16 levels, as the smaller of block-form RLE (``u64 values_byte_len |
    values | u8 run lengths``) and FastLanes bitpacking."""
    values, lengths = _runs(levels.astype("<u2"))
    rle = RLE_VALUES_LENGTH.pack(values.nbytes) + values.tobytes() + lengths.tobytes()
    enc, _pack = levels_plan(levels)
    packed = fastlanes.pack_out_of_line(
        levels.astype(np.uint16), enc.out_of_line_bitpacking.values.flat.bits_per_value, 16
    )
    if packed.nbytes < len(rle):
        return enc, packed.tobytes()
    return pb.CompressiveEncoding(rle=pb.Rle(values=flat(16), run_lengths=flat(8))), rle


def fixed_full_zip_values(values: pa.Array) -> tuple[pb.CompressiveEncoding, np.ndarray, int]:
    """(value encoding, the values' bytes one after another, bytes per value) of a full-zip page
    of fixed-width values: plain, or fixed-size lists (a validity bitmap first when items are null)."""
    t = values.type
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        items = values.values.slice(values.offset * dim, len(values) * dim)
        item_bits = value_bits(t.value_type)
        width = item_bits * dim // 8
        raw = (
            fixed_bytes(items).reshape(len(values), width) if len(values) else np.zeros((0, width), np.uint8)
        )
        fsl = pb.FixedSizeList(items_per_value=dim, values=flat(item_bits))
        if items.null_count:
            bitmap = np.packbits(
                items.is_valid().to_numpy(zero_copy_only=False).reshape(-1, dim), axis=1, bitorder="little"
            )
            raw = np.concatenate([bitmap, raw], axis=1)
            width += bitmap.shape[1]
            fsl.has_validity = True
        return pb.CompressiveEncoding(fixed_size_list=fsl), raw.reshape(-1), width
    if pa.types.is_boolean(t):  # a byte each (full-zip values are whole bytes), as pylance
        return flat(8), pc.fill_null(values, False).to_numpy(zero_copy_only=False).view(np.uint8), 1
    bits = value_bits(t)
    return flat(bits), fixed_bytes(values), bits // 8


def length_prefixed(offsets: np.ndarray, data: np.ndarray, which: np.ndarray, width: int) -> np.ndarray:
    """``length (u32 or u64) | bytes`` for each selected value (``which``: increasing), concatenated."""
    lengths = (offsets[1:] - offsets[:-1])[which]
    prefixes = lengths.astype("<u4" if width == 4 else "<u8").view(np.uint8).reshape(-1, width)
    if len(which) == len(offsets) - 1:  # every value (increasing indices): the bytes as they lie
        body = data[int(offsets[0]) : int(offsets[-1])]
    else:
        body = gather_ranges(data, offsets[:-1][which], lengths)
    return headed(prefixes, lengths, body)
