"""Whole mini-block pages: the value buffers of many chunks decoded in one vectorised pass.

Split from ``compressive`` (which decodes one buffer at a time): inline bitpacking is unpacked for
all chunks at once, and variable-width chunks are located and copied one range per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw._util import sets
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file.buffers import (
    UINT_BY_BITS,
    as_u8,
    gather_ranges,
    pool_concatenate,
    pool_empty,
    range_positions,
)

from . import fastlanes
from .compressive import (
    _Buffers,
    _decode_mb,
    _fsst,
    _name,
    decode_levels,
    decode_values,
    decompress_buffer,
)
from .decoded_values import DecodedValues, concat, present


def decode_chunk_ranges(
    enc: pb.CompressiveEncoding,
    data: np.ndarray,
    bufs: Sequence[tuple[np.ndarray, np.ndarray]],
    counts: np.ndarray,
    where: str = "compressive encoding",
    needed: np.ndarray | None = None,
) -> DecodedValues:
    """As :func:`decode_chunks`, for chunks given as byte ranges of one page buffer ``data``:
    ``bufs[k]`` holds the (starts, sizes) of every chunk's k-th value buffer.

    The common encodings (inline bitpacking, variable) are decoded straight from ``data`` without
    cutting it into per-chunk pieces first: that Python-level slicing cost as much as the decoding
    on pages of a thousand chunks. Other encodings fall back to the piece-wise path."""
    counts = np.asarray(counts, np.int64)
    kind = _name(enc)
    if len(bufs) == 1 and len(counts):
        starts, sizes = (np.asarray(x, np.int64) for x in bufs[0])
        chunks = _Chunks(data, starts, sizes, counts)
        if _plain_inline(enc):
            fast = _inline_chunks(enc, chunks, where, needed)
            if fast is not None:
                return fast
        found = _variable_chunks(enc, chunks, where)
        if found is not None:
            inner = _variable_ranges(found[0], found[1], where, needed)
            # _variable_ranges checked the offsets it laid end to end
            return _fsst(enc.fsst, inner, where, needed, offsets_checked=True) if kind == "fsst" else inner
    places = [(a.tolist(), b.tolist()) for a, b in bufs]
    pieces = [[data[a[i] : a[i] + b[i]] for a, b in places] for i in range(len(counts))]
    return decode_chunks(enc, pieces, counts, where, needed)


class _Chunks(NamedTuple):
    """The value buffers of a page's mini-block chunks where they lie: chunk ``c``'s buffer is
    ``data[starts[c] : starts[c] + sizes[c]]`` and holds ``counts[c]`` values. One bundle, since
    every vectorised decoder here needs all four together."""

    data: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    counts: np.ndarray


def _plain_inline(enc: pb.CompressiveEncoding) -> bool:
    """Inline bitpacking whose packed words are stored as they are (no nested value encoding):
    the case the vectorised unpacking handles."""
    return _name(enc) == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values")


def _variable_chunks(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str
) -> tuple[pb.CompressiveEncoding, _Chunks] | None:
    """For a plain ``variable`` encoding (alone, inside ``general`` or as FSST's values): that
    encoding and the chunks as it reads them (each chunk decompressed on its own and laid end to
    end when ``general`` wraps it). None for anything else."""
    var, general = _variable_of(enc.fsst.values if _name(enc) == "fsst" else enc)
    if var is None:
        return None
    if general is not None:  # each chunk's buffer is compressed on its own
        data, starts, sizes = _laid_end_to_end(
            [
                decompress_buffer(chunks.data[a : a + n], general, where)
                for a, n in zip(chunks.starts.tolist(), chunks.sizes.tolist())
            ]
        )
        chunks = _Chunks(data, starts, sizes, chunks.counts)
    return var, chunks


def _inline_words(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """Inline-bitpacked chunks (one 1024-value block each: a width word, then its packed words)
    where they lie in ``data``, checked: (the page as words, each chunk's first packed word, each
    chunk's width, bits per value). None when a chunk holds more than one block."""
    data, starts, sizes, counts = chunks
    if not ((counts > 0) & (counts <= fastlanes.BLOCK)).all():
        return None
    t = int(enc.inline_bitpacking.uncompressed_bits_per_value)
    if t not in UINT_BY_BITS:
        raise UnsupportedEncodingError(f"{where}: inline bitpacking of {t}-bit values")
    dt, isz, lanes = UINT_BY_BITS[t], t // 8, fastlanes.BLOCK // t
    not_words = (sizes % isz != 0) | (sizes < isz)
    if not_words.any():
        bad = np.flatnonzero(not_words)
        raise CorruptFileError(
            where,
            f"chunk {int(bad[0])}: inline bitpacking buffer of {int(sizes[bad[0]])} bytes "
            f"is not a whole, non-zero number of {t}-bit words",
        )
    if data.ctypes.data % isz or (starts % isz).any():  # chunk buffers are 8-byte aligned in a page
        data, starts = gather_ranges(data, starts, sizes), np.cumsum(sizes) - sizes
    words = data[: data.size - data.size % isz].view(dt)
    first = starts // isz  # each chunk's width word
    if len(first) and first[-1] >= words.size:
        raise CorruptFileError(where, "inline bitpacking chunk lies past the page")
    raw_widths = words[first]  # compared unsigned: a damaged 64-bit width word is no negative width
    if (raw_widths > t).any():
        over = np.flatnonzero(raw_widths > t)
        raise CorruptFileError(
            where, f"chunk {int(over[0])}: inline bitpacking width {int(raw_widths[over[0]])} > {t}"
        )
    widths = raw_widths.astype(np.int64)
    if (sizes // isz < 1 + widths * lanes).any():
        short = np.flatnonzero(sizes // isz < 1 + widths * lanes)
        c = int(short[0])
        raise CorruptFileError(
            where,
            f"chunk {c}: inline bitpacking buffer has {int(sizes[c]) // isz} {t}-bit words, "
            f"needs {1 + int(widths[c]) * lanes}",
        )
    return words, first + 1, widths, t


def _inline_chunks(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str, needed: np.ndarray | None
) -> DecodedValues | None:
    """Inline-bitpacked chunks unpacked from where they lie in ``data`` (``_inline_words``).
    None when a chunk holds more than one block."""
    counts = chunks.counts
    found = _inline_words(enc, chunks, where)
    if found is None:
        return None
    words, packed, widths, t = found
    dt = UINT_BY_BITS[t]
    total = int(counts.sum())
    if needed is not None and len(needed) * 8 < len(counts) * fastlanes.BLOCK:  # a few values: gather them
        before = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=before[1:])
        block = np.searchsorted(before, needed, side="right") - 1
        values = np.zeros(total, dt)
        values[needed] = fastlanes.unpack_at(words, packed, widths, t, block, needed - before[block])
        return DecodedValues("fixed", total, values, t)
    short = np.flatnonzero(counts[:-1] != fastlanes.BLOCK)
    if 0 < len(short) <= SEGMENTS_UNPACKED_APART_UP_TO and len(short) * SEGMENT_BLOCKS_AT_LEAST <= len(
        counts
    ):
        return DecodedValues("fixed", total, _unpacked_end_to_end(words, packed, widths, t, counts, short), t)
    grid = fastlanes.empty_blocks(len(counts), t)
    fastlanes.unpack_inline_blocks(words, packed, widths, t, grid)
    return DecodedValues("fixed", total, _without_padding(grid, counts, short), t)


#: Short blocks within a run of chunks (each ends a page) up to which the blocks are unpacked
#: segment by segment straight into their places (``_unpacked_end_to_end``) rather than into a
#: padded grid cut afterwards (``_without_padding``), where the segments average at least
#: ``SEGMENT_BLOCKS_AT_LEAST`` blocks: a copy of every value saved (~1.5 us a 64-bit block) for
#: an unpack call per segment (~40 us more each).
SEGMENTS_UNPACKED_APART_UP_TO = 8
SEGMENT_BLOCKS_AT_LEAST = 32


def _unpacked_end_to_end(
    words: np.ndarray, packed: np.ndarray, widths: np.ndarray, t: int, counts: np.ndarray, short: np.ndarray
) -> np.ndarray:
    """The values of inline-bitpacked blocks (``unpack_inline_blocks``' arguments; ``counts[i]``
    values in block ``i``; ``short``: the blocks but the last holding fewer than ``BLOCK``
    values) laid end to end without padding. Each segment of blocks up to a short one is
    unpacked as a grid of whole blocks at its first value's place in one flat array; its last
    block's padding runs into the next segment's place, which the next segment, unpacked after
    it, overwrites."""
    begins = np.concatenate([[0], short + 1]).tolist()
    ends = np.concatenate([short + 1, [len(counts)]]).tolist()
    at = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=at[1:])
    places = at[begins].tolist()
    room = max(place + (end - begin) * fastlanes.BLOCK for place, begin, end in zip(places, begins, ends))
    flat = pool_empty(room, UINT_BY_BITS[t])
    for place, begin, end in zip(places, begins, ends):
        grid = flat[place : place + (end - begin) * fastlanes.BLOCK].reshape(end - begin, fastlanes.BLOCK)
        fastlanes.unpack_inline_blocks(words, packed[begin:end], widths[begin:end], t, grid)
    return flat[: int(at[-1])]


#: Blocks short of 1024 values within the chunks (each ends a page of a run of pages) up to which
#: the values are cut out as that many + 1 slices (one ``concatenate``), not through a mask over
#: every value (a 1M-value run of pylance's 8192-row pages: 4.8 ms by mask, 0.6 ms by slices).
SLICE_SHORT_BLOCKS_BELOW = 1024


def _without_padding(grid: np.ndarray, counts: np.ndarray, short: np.ndarray) -> np.ndarray:
    """The values of ``grid`` (a block of ``BLOCK`` slots per chunk), ``counts[i]`` of block ``i``
    (``short``: the blocks but the last holding fewer than ``BLOCK`` values)."""
    values = grid.reshape(-1)
    if not len(short):
        return values[: int(counts.sum())]
    if len(short) >= SLICE_SHORT_BLOCKS_BELOW:
        return values[(np.arange(fastlanes.BLOCK)[None, :] < counts[:, None]).reshape(-1)]
    starts = np.concatenate([[0], short + 1]) * fastlanes.BLOCK  # a run of blocks full but its last
    stops = np.concatenate([short, [len(counts) - 1]]) * fastlanes.BLOCK
    stops += counts[np.concatenate([short, [len(counts) - 1]])]
    return pool_concatenate([values[a:b] for a, b in zip(starts.tolist(), stops.tolist())])


def decode_chunk_values_at(
    enc: pb.CompressiveEncoding,
    data: np.ndarray,
    bufs: Sequence[tuple[np.ndarray, np.ndarray]],
    counts: np.ndarray,
    chunk: np.ndarray,
    within: np.ndarray,
    where: str = "compressive encoding",
) -> DecodedValues | None:
    """Only the values ``within[i]`` (less than the chunk's count) of chunk ``chunk[i]`` (chunks
    and their value buffers as in :func:`decode_chunk_ranges`), in that order: what a take of a few rows needs. Each value costs
    its own words or bytes, not a decode of every value of its chunk, and nothing is built for
    the values not asked for. None for encodings without such a path (the caller decodes the
    chunks whole)."""
    counts = np.asarray(counts, np.int64)
    if len(bufs) != 1 or not len(counts):
        return None
    starts, sizes = (np.asarray(x, np.int64) for x in bufs[0])
    chunks = _Chunks(data, starts, sizes, counts)
    if _plain_inline(enc):
        found = _inline_words(enc, chunks, where)
        if found is None:
            return None
        words, packed, widths, t = found
        return DecodedValues(
            "fixed", len(chunk), fastlanes.unpack_at(words, packed, widths, t, chunk, within), t
        )
    variable = _variable_chunks(enc, chunks, where)
    if variable is None:
        return None
    inner = _variable_at(variable[0], variable[1], chunk, within, where)
    return _fsst(enc.fsst, inner, where) if _name(enc) == "fsst" else inner


def decode_chunks(
    enc: pb.CompressiveEncoding,
    chunks: Sequence[Sequence],
    counts: Sequence[int] | np.ndarray,
    where: str = "compressive encoding",
    needed: np.ndarray | None = None,
) -> DecodedValues:
    """Decode and concatenate the value buffers of many mini-block chunks of one page.

    Same result as ``concat([decode_values(enc, b, n, "miniblock") for b, n in ...])``, but
    inline bitpacking (the common case) is unpacked for all chunks in one vectorised
    pass, and FSST decompresses all chunks' strings in one call. ``needed``: the only values the
    caller will use (others may come back empty, so FSST can skip them).
    """
    if len(chunks) != len(counts):
        raise ValueError("decode_chunks: chunks and counts differ in length")
    if not chunks:
        return (
            decode_values(enc, [b""], 0, "block", where)
            if _name(enc) == "flat"
            else DecodedValues("fixed", 0, np.zeros(0, np.uint8), 0)
        )
    kind = _name(enc)
    counts_a = np.asarray(counts, np.int64)
    single = all(len(b) == 1 for b in chunks)
    if _plain_inline(enc) and single:
        laid = _Chunks(*_laid_end_to_end([as_u8(b[0]) for b in chunks]), counts_a)
        fast = _inline_chunks(enc, laid, where, needed)
        if fast is not None:
            return fast
    var, general = _variable_of(enc.fsst.values if kind == "fsst" else enc)
    if var is not None and single:
        raws = [as_u8(b[0]) for b in chunks]
        if general is not None:
            raws = [decompress_buffer(r, general, where) for r in raws]
        inner = _variable_ranges(var, _Chunks(*_laid_end_to_end(raws), counts_a), where, needed)
        return _fsst(enc.fsst, inner, where, needed) if kind == "fsst" else inner
    inner = concat(
        [
            _decode_mb(
                enc.fsst.values if kind == "fsst" else enc, _Buffers(b, f"{where}: chunk {i}"), n, where
            )
            for i, (b, n) in enumerate(zip(chunks, counts_a.tolist()))
        ]
    )
    return _fsst(enc.fsst, inner, where, needed) if kind == "fsst" else inner


def _laid_end_to_end(pieces: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte pieces concatenated, with each one's start and size there."""
    sizes = np.fromiter((p.size for p in pieces), np.int64, len(pieces))
    starts = np.zeros(len(pieces), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    data = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
    return data, starts, sizes


def _variable_of(
    enc: pb.CompressiveEncoding,
) -> tuple[pb.CompressiveEncoding | None, pb.BufferCompression | None]:
    """A plain ``variable`` encoding (optionally inside ``general``) and that general compression;
    (None, None) for anything else."""
    general = None
    if _name(enc) == "general":
        general, enc = enc.general.compression, enc.general.values
    if _name(enc) != "variable" or enc.variable.HasField("values") or _name(enc.variable.offsets) != "flat":
        return None, None
    if enc.variable.offsets.flat.bits_per_value not in (32, 64):
        return None, None
    return enc, general


def _variable_ranges(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str, needed: np.ndarray | None = None
) -> DecodedValues:
    """All chunks of a ``variable`` page in one vectorised pass: each chunk's buffer holds
    ``(n+1)`` offsets relative to the buffer, then bytes; every value is located by its global
    start. Values not in ``needed`` (when given) come back empty."""
    if needed is not None:
        return _variable_needed(enc, chunks, where, needed)
    sizes, counts_a = chunks.sizes, chunks.counts
    words, big, base, width = _variable_words(enc, chunks, where)
    # offsets of chunk c sit at words[base_c / width + j], j = 0..n_c: its first and its end one
    at = base // width
    if len(at) and int(at[-1] + counts_a[-1]) >= len(words):
        raise CorruptFileError(where, "variable chunk offsets lie past their chunk")
    first, last = words[at].astype(np.int64), words[at + counts_a].astype(np.int64)
    if (last > sizes).any() or (last < first).any():
        raise CorruptFileError(where, "variable chunk offsets point past their chunk or are out of order")
    # a chunk's values lie back to back: copy one range per chunk, not one per value; in the
    # output, chunk c's value starts move by (bytes of the chunks before it) - (its first offset),
    # and the last chunk's end closes them (each other chunk's end is the next one's start)
    data = gather_ranges(big, base + first, last - first)
    before = np.zeros(len(counts_a) + 1, np.int64)
    np.cumsum(last - first, out=before[1:])
    out_offs = pool_empty(int(counts_a.sum()) + 1, np.int64)
    starts = gather_ranges(words, at, counts_a)
    starts = starts.view(np.int64) if starts.dtype == np.uint64 else starts  # u64 + i64 would be float
    np.add(starts, np.repeat(before[:-1] - first, counts_a), out=out_offs[:-1])
    out_offs[-1] = before[-1]
    if (out_offs[1:] < out_offs[:-1]).any():  # also a value past its chunk's end: the next chunk's start
        raise CorruptFileError(where, "variable chunk offsets are out of order")
    return DecodedValues("variable", len(out_offs) - 1, data, offsets=out_offs)


def _variable_words(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Variable chunks checked and aligned: (the page as offset words, the page, each chunk's
    start, offset width in bytes)."""
    big, base, sizes, counts_a = chunks
    width = enc.variable.offsets.flat.bits_per_value // 8
    if (sizes % width).any():
        raise CorruptFileError(where, "variable chunk buffer is not padded to its offset width")
    if (sizes < (counts_a + 1) * width).any():
        raise CorruptFileError(where, "variable chunk buffer is shorter than its offsets")
    if big.ctypes.data % width or (base % width).any():
        big, base = gather_ranges(big, base, sizes), np.cumsum(sizes) - sizes
    return big[: big.size - big.size % width].view(UINT_BY_BITS[8 * width]), big, base, width


def _variable_at(
    enc: pb.CompressiveEncoding, chunks: _Chunks, chunk: np.ndarray, within: np.ndarray, where: str
) -> DecodedValues:
    """Only values ``within[i]`` (less than the chunk's count) of chunks ``chunk[i]`` of a
    ``variable`` page (layout as in ``_variable_ranges``), in that order: each one's two offsets are read and checked on their
    own, so random access costs per wanted value, not per value of every chunk read."""
    sizes = chunks.sizes
    words, big, base, width = _variable_words(enc, chunks, where)
    at = base[chunk] // width + within
    lo, hi = words[at].astype(np.int64), words[at + 1].astype(np.int64)
    if (hi < lo).any() or (hi > sizes[chunk]).any():
        raise CorruptFileError(where, "variable chunk offsets are out of order or point past their chunk")
    lengths = hi - lo
    out_offs = np.zeros(len(chunk) + 1, np.int64)
    np.cumsum(lengths, out=out_offs[1:])
    return DecodedValues(
        "variable", len(chunk), gather_ranges(big, base[chunk] + lo, lengths), offsets=out_offs
    )


def _variable_needed(
    enc: pb.CompressiveEncoding, chunks: _Chunks, where: str, needed: np.ndarray
) -> DecodedValues:
    """Only the ``needed`` values of variable chunks (the others empty), from ``_variable_at``."""
    counts_a = chunks.counts
    total = int(counts_a.sum())
    first = np.zeros(len(counts_a) + 1, np.int64)
    np.cumsum(counts_a, out=first[1:])
    want = sets.unique(needed)
    chunk = np.searchsorted(first, want, side="right") - 1
    compact = _variable_at(enc, chunks, chunk, want - first[chunk], where)
    lengths = np.zeros(total, np.int64)
    lengths[want] = np.diff(present(compact.offsets, "offsets"))
    out_offs = np.zeros(total + 1, np.int64)
    np.cumsum(lengths, out=out_offs[1:])
    return DecodedValues("variable", total, compact.data, offsets=out_offs)


def decode_level_chunks(
    enc: pb.CompressiveEncoding,
    data: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    num_levels: np.ndarray,
    where: str,
) -> np.ndarray:
    """The rep or def levels of many mini-block chunks (chunk ``c``'s level buffer is
    ``data[starts[c] : starts[c] + sizes[c]]``, ``num_levels[c]`` levels), concatenated as u16.

    Out-of-line bitpacking (what pylance and lance_fw write for levels: one width for all blocks
    of a chunk) is unpacked for all fully packed chunks of one width at once; other encodings, and
    chunks whose last partial block is stored raw, are decoded chunk by chunk."""
    if not len(starts):
        return np.zeros(0, np.uint16)
    starts, sizes, counts = (np.asarray(x, np.int64) for x in (starts, sizes, num_levels))
    done = np.zeros(len(starts), bool)
    out = np.zeros(int(counts.sum()), np.uint16)
    first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    if _name(enc) == "out_of_line_bitpacking":
        done = _packed_level_chunks(enc.out_of_line_bitpacking, data, starts, sizes, counts, first, out)
    for c in np.flatnonzero(~done).tolist():
        a, b = int(starts[c]), int(sizes[c])
        out[first[c] : first[c + 1]] = decode_levels(
            enc, data[a : a + b], int(counts[c]), "miniblock", f"{where}, chunk {c}"
        )
    return out


def _packed_level_chunks(
    ob: pb.OutOfLineBitpacking,
    data: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    counts: np.ndarray,
    first: np.ndarray,
    out: np.ndarray,
) -> np.ndarray:
    """Unpack into ``out`` the chunks whose out-of-line level buffer is exactly whole packed
    16-bit FastLanes blocks of the encoding's width; returns which chunks it did."""
    t = int(ob.uncompressed_bits_per_value)
    w = int(ob.values.flat.bits_per_value) if _name(ob.values) == "flat" else -1
    if t != 16 or not 0 <= w <= t:
        return np.zeros(len(starts), bool)
    isz, block_words = t // 8, w * (fastlanes.BLOCK // t)
    nblocks = -(-counts // fastlanes.BLOCK)
    rest = counts % fastlanes.BLOCK
    raw_tail = (rest > 0) & (sizes == ((counts - rest) // fastlanes.BLOCK * block_words + rest) * isz)
    # a raw tail of the packed length is read as raw (fastlanes.unpack's rule, pylance's tie)
    packed = (sizes == nblocks * block_words * isz) & ~raw_tail & (counts > 0) & (starts % isz == 0)
    if data.ctypes.data % isz:
        return np.zeros(len(starts), bool)
    chosen = np.flatnonzero(packed)
    if not len(chosen) or w == 0:  # zero width: every level 0, as ``out`` already holds
        return packed
    words = data[: data.size - data.size % isz].view(fastlanes.utype(t))
    block_of_chunk = nblocks[chosen]
    block_in_chunk = range_positions(np.zeros(len(chosen), np.int64), block_of_chunk)
    block_starts = block_in_chunk * block_words + np.repeat(starts[chosen] // isz, block_of_chunk)
    grid = np.empty((len(block_starts), fastlanes.BLOCK), fastlanes.utype(t))
    fastlanes.unpack_inline_blocks(words, block_starts, np.full(len(block_starts), w), t, grid)
    # chunk c's levels are the first counts[c] values of its blocks: a per-block count to keep
    n = counts[chosen]
    keep = np.clip(np.repeat(n, block_of_chunk) - block_in_chunk * fastlanes.BLOCK, 0, fastlanes.BLOCK)
    levels = grid[np.arange(fastlanes.BLOCK)[None, :] < keep[:, None]]
    if len(chosen) == len(starts):  # every chunk: their levels are all of ``out``, in order
        out[:] = levels
    else:
        out[range_positions(first[chosen], n)] = levels
    return packed
