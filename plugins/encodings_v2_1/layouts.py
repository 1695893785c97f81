"""The 2.1/2.2 structural page layouts: mini-block and constant pages (full-zip: ``fullzip_layout``).

Each parser turns one page's buffers into ``PageLevels``: the rep and def levels of the page
(u16, or None where the layout has none) and the visible values as ``DecodedValues``. Turning
levels into Arrow nesting is ``repdef``'s job.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file.buffers import (
    UINT_BY_BITS,
    UINT_BY_BYTES,
    RawBytes,
    as_u8,
    gather_ranges,
    gather_rows,
    pool_empty,
)

from . import chunked, compressive
from .decoded_values import DecodedValues, present


@dataclass
class PageLevels:
    layers: list[int]
    num_rows: int
    rep: np.ndarray | None
    defs: np.ndarray | None
    values: DecodedValues | None  # None: no visible values stored (all-null constant page)
    constant: bytes | None = None  # a constant page's one value (raw bytes or Arrow-IPC-like buffers)
    constant_buffers: list[bytes] | None = None


_Int = TypeVar("_Int", int, np.ndarray)


def _pad8(n: _Int) -> _Int:
    """``n`` rounded up to a multiple of 8 (a Python int, or each of an array's)."""
    return n + (-n % 8)


# --- mini-block ---------------------------------------------------------------------------------

#: a chunk's value count is 2 ** (4-bit log2); only the last one's is implied, and no more than that
MAX_CHUNK_VALUES = 1 << 15
#: A mini-block chunk's metadata word (u16; u32 with ``has_large_chunk``): the chunk's size in
#: ``CHUNK_SIZE_UNIT``-byte units, minus one, above the low ``CHUNK_LOG2_BITS`` bits, which hold
#: log2 of its value count (0 in the last chunk, whose count is what remains).
CHUNK_LOG2_BITS = 4
CHUNK_LOG2_MASK = (1 << CHUNK_LOG2_BITS) - 1
CHUNK_SIZE_UNIT = 8
#: Metadata word dtype by ``has_large_chunk``.
CHUNK_META_DTYPE: dict[bool, np.dtype] = {False: np.dtype("<u2"), True: np.dtype("<u4")}


def _chunk_table(
    meta: np.ndarray, large: bool, num_items: int, total: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = CHUNK_META_DTYPE[large].itemsize
    if len(meta) % width:
        raise CorruptFileError(
            where,
            f"mini-block chunk metadata of {len(meta)} bytes is not a whole number of {width}-byte words",
        )
    words = meta.view(CHUNK_META_DTYPE[large])
    log_counts = (words & CHUNK_LOG2_MASK).astype(np.int64)
    counts = 1 << log_counts
    sizes = (words >> CHUNK_LOG2_BITS).astype(np.int64)
    sizes += 1
    sizes *= CHUNK_SIZE_UNIT
    if len(words):
        if not log_counts[:-1].all():
            raise CorruptFileError(where, "a non-final mini-block chunk has log2(values) = 0")
        counts[-1] = 0  # the last chunk's count is what the others leave
        last = num_items - int(counts.sum())
        if not 0 <= last <= MAX_CHUNK_VALUES:
            raise CorruptFileError(
                where,
                f"the page's {num_items} items leave {last} for its last mini-block "
                f"chunk (0 to {MAX_CHUNK_VALUES})",
            )
        counts[-1] = last
    elif num_items:
        raise CorruptFileError(where, f"mini-block page of {num_items} items has no chunks")
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    if starts[-1] > total:
        raise CorruptFileError(where, f"mini-block chunks need {starts[-1]} bytes, the page holds {total}")
    return starts[:-1], sizes, counts


@dataclass(frozen=True)
class ChunkTable:
    """Every chunk of a page: byte start, byte size, value count, and the values up to its end
    (the arrays are shared by cached tables, so read-only)."""

    starts: np.ndarray
    sizes: np.ndarray
    counts: np.ndarray
    ends: np.ndarray


@dataclass
class _Chunks:
    """Where everything sits in every mini-block chunk of a page (parsed for all chunks at once)."""

    num_levels: np.ndarray
    rep: tuple[np.ndarray, np.ndarray]  # (starts, sizes)
    defs: tuple[np.ndarray, np.ndarray]
    bufs: list[tuple[np.ndarray, np.ndarray]]


def _parse_chunks(
    data: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    has_rep: bool,
    has_def: bool,
    nbuf: int,
    large: bool,
    where: str,
) -> _Chunks:
    starts_a = np.asarray(starts, np.int64)
    sizes_a = np.asarray(sizes, np.int64)
    width = 4 if large else 2
    level_words = 1 + has_rep + has_def  # u16 fields: level count, rep bytes, def bytes
    header = 2 * level_words + width * nbuf
    if len(starts_a) == 1:  # a point lookup's one chunk: its header as Python ints, not arrays
        args = (int(starts_a[0]), int(sizes_a[0]), has_rep, has_def, nbuf, large, where)
        places = one_chunk_places(data, *args)
        return _chunks_of(list(np.array(places, np.int64).reshape(-1, 1)))  # each field a view of one array
    if len(starts_a) and (sizes_a < header).any():
        raise CorruptFileError(where, "a mini-block chunk is shorter than its header")
    # every chunk's header bytes as one (chunks, header) grid, then its u16 / u32 fields
    grid = gather_rows(data, starts_a, header)
    small = np.ascontiguousarray(grid[:, : 2 * level_words]).view("<u2").astype(np.int64)
    wide = np.ascontiguousarray(grid[:, 2 * level_words :]).view("<u4" if large else "<u2").astype(np.int64)
    fields = [small[:, i] for i in range(level_words)] + [wide[:, k] for k in range(nbuf)]
    return _chunks_of(_chunk_places(starts_a, sizes_a, fields, has_rep, has_def, header, level_words, where))


def one_chunk_places(
    data: np.ndarray, at: int, size: int, has_rep: bool, has_def: bool, nbuf: int, large: bool, where: str
) -> list[int]:
    """``_chunk_places`` of the one chunk of ``size`` bytes at ``at`` in ``data``, its header read
    as Python integers (a point lookup's chunk)."""
    level_words = 1 + has_rep + has_def  # u16 fields: level count, rep bytes, def bytes
    header = 2 * level_words + (4 if large else 2) * nbuf
    if size < header or at < 0 or at + header > len(data):
        raise CorruptFileError(where, "a mini-block chunk is shorter than its header")
    ints = struct.unpack_from(f"<{level_words}H{nbuf}{'I' if large else 'H'}", data.data, at)
    return _chunk_places(at, size, ints, has_rep, has_def, header, level_words, where)


def _chunks_of(places: list[np.ndarray]) -> _Chunks:
    """``_chunk_places``' list as a ``_Chunks``."""
    num_levels, rep_start, rep_bytes, def_start, def_bytes, *bufs = places
    return _Chunks(
        num_levels, (rep_start, rep_bytes), (def_start, def_bytes), list(zip(bufs[::2], bufs[1::2]))
    )


def _chunk_places(
    starts: _Int,
    sizes: _Int,
    fields: Sequence[_Int],
    has_rep: bool,
    has_def: bool,
    header: int,
    level_words: int,
    where: str,
) -> list[_Int]:
    """Where the parts of chunks starting at ``starts`` lie, from their header ``fields`` (level
    count, rep bytes, def bytes where present, then each buffer's size): level counts, rep start,
    rep bytes, def start, def bytes, then each buffer's start and size. The same
    arithmetic for one chunk's Python ints and for arrays of many chunks' fields."""
    num_levels = fields[0]
    rep_start = starts + _pad8(header)
    rep_bytes = fields[1] if has_rep else 0 * starts
    def_start = rep_start + _pad8(rep_bytes) if has_rep else rep_start
    def_bytes = fields[1 + has_rep] if has_def else 0 * starts
    cursor = def_start + _pad8(def_bytes) if has_def else def_start
    out = [num_levels, rep_start, rep_bytes, def_start, def_bytes]
    end = def_start + def_bytes
    for size in fields[level_words:]:
        out += [cursor, size]
        end = cursor + size
        cursor = cursor + _pad8(size)
    overrun = end > starts + sizes
    if overrun is True or (isinstance(overrun, np.ndarray) and overrun.any()):
        raise CorruptFileError(where, "a mini-block chunk's buffers overrun the chunk")
    return out


def _chunk_levels(
    enc: pb.CompressiveEncoding,
    data: np.ndarray,
    place: tuple[np.ndarray, np.ndarray],
    num_levels: np.ndarray,
    where: str,
) -> np.ndarray:
    starts, sizes = place
    if enc.WhichOneof("compression") == "flat" and enc.flat.bits_per_value == 16:
        if (sizes != 2 * num_levels).any():
            raise CorruptFileError(where, "flat16 level buffers do not match the chunks' level counts")
        return gather_ranges(data, starts, sizes).view("<u2")
    return chunked.decode_level_chunks(enc, data, starts, sizes, num_levels, where)


def _plain_fixed(enc: pb.CompressiveEncoding) -> tuple[int, int | None] | None:
    """(bits per item, items per list or None for scalars) when chunks can simply be concatenated:
    flat values of whole bytes, or a fixed-size list of them without item validity."""
    kind = enc.WhichOneof("compression")
    if kind == "flat" and enc.flat.bits_per_value % 8 == 0 and not enc.flat.HasField("data"):
        return enc.flat.bits_per_value, None
    if kind == "fixed_size_list" and not enc.fixed_size_list.has_validity:
        inner = _plain_fixed(enc.fixed_size_list.values)
        if inner is not None and inner[1] is None:
            return inner[0], enc.fixed_size_list.items_per_value
    return None


def mini_block(
    layout: pb.MiniBlockLayout, buffers: Sequence[RawBytes], num_rows: int, where: str
) -> PageLevels:
    return chunk_levels(page_chunks(layout, buffers, where), num_rows)[0]


def page_chunks(layout: pb.MiniBlockLayout, buffers: Sequence[RawBytes], where: str) -> ChunkRun:
    """Every chunk of a mini-block page, its chunk table read and its dictionary decoded."""
    if len(buffers) < 2:
        raise CorruptFileError(where, f"mini-block page has {len(buffers)} buffers, needs at least 2")
    data = as_u8(buffers[1])
    starts, sizes, counts = chunk_table(layout, as_u8(buffers[0]), len(data), where)
    dictionary = None
    if layout.HasField("dictionary"):
        if len(buffers) < 3:
            raise CorruptFileError(where, "dictionary page without a dictionary buffer")
        dictionary = mini_block_dictionary(layout, buffers[2], where)
    return ChunkRun(layout, data, starts, sizes, counts, dictionary, where)


def chunk_table(
    layout: pb.MiniBlockLayout, meta: np.ndarray, total: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(byte start, byte size, value count) of every chunk, from the chunk metadata words."""
    return _chunk_table(meta, layout.has_large_chunk, layout.num_items, total, where)


def mini_block_dictionary(layout: pb.MiniBlockLayout, buffer: RawBytes, where: str) -> DecodedValues:
    if layout.num_dictionary_items > 8 * len(buffer):  # every item takes at least a bit
        raise CorruptFileError(
            where, f"a dictionary of {layout.num_dictionary_items} items in {len(buffer)} bytes"
        )
    return compressive.decode_values(
        layout.dictionary, [buffer], layout.num_dictionary_items, "block", where=f"{where}, dictionary"
    )


@dataclass(frozen=True)
class ChunkRun:
    """Mini-block chunks laid end to end in ``data`` at ``starts``/``sizes`` (all of a page's, or
    a chosen few, possibly from several pages of one layout), ``counts`` values each: what decoding
    them needs besides which rows."""

    layout: pb.MiniBlockLayout
    data: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    counts: np.ndarray
    dictionary: DecodedValues | None
    where: str

    def parsed(self, plain_ok: bool) -> tuple[_Chunks, tuple[int, int | None] | None]:
        """The chunks parsed as ``layout`` says, and ``_plain_fixed`` of its values if ``plain_ok``."""
        layout = self.layout
        has_rep, has_def = layout.HasField("rep_compression"), layout.HasField("def_compression")
        args = (has_rep, has_def, layout.num_buffers, layout.has_large_chunk, self.where)
        chunks = _parse_chunks(self.data, self.starts, self.sizes, *args)
        plain = _plain_fixed(layout.value_compression) if plain_ok and layout.num_buffers == 1 else None
        return chunks, plain


def chunk_levels(
    run: ChunkRun, num_rows: int, needed: np.ndarray | None = None
) -> tuple[PageLevels, np.ndarray]:
    """Decode the chunks of ``run`` into levels and values; also returns each chunk's level
    count. ``needed``: the only values the caller will use (see ``chunked.decode_chunks``)."""
    layout, data, counts, dictionary, where = run.layout, run.data, run.counts, run.dictionary, run.where
    chunks, plain = run.parsed(True)
    has_rep, has_def = layout.HasField("rep_compression"), layout.HasField("def_compression")
    rep = (
        _chunk_levels(layout.rep_compression, data, chunks.rep, chunks.num_levels, where) if has_rep else None
    )
    defs = (
        _chunk_levels(layout.def_compression, data, chunks.defs, chunks.num_levels, where)
        if has_def
        else None
    )
    n = int(np.sum(counts))
    if plain is not None:
        bits, per_list = plain
        per_value = per_list or 1
        raw = _chunk_bytes(data, *chunks.bufs[0])
        if raw.size != n * per_value * bits // 8:
            raise CorruptFileError(where, f"mini-block values hold {raw.size} bytes for {n} values")
        items = raw.view(UINT_BY_BITS[bits]) if bits in UINT_BY_BITS else raw
        values = DecodedValues("fixed", n * per_value, items, bits)
        if per_list is not None:
            values = DecodedValues("fsl", n, dimension=per_list, inner=values)
    else:
        values = chunked.decode_chunk_ranges(
            layout.value_compression,
            data,
            chunks.bufs,
            counts,
            where,
            None if dictionary is not None else needed,
        )
    if dictionary is not None:
        values = look_up_dictionary(dictionary, values, where)
    return PageLevels(list(layout.layers), num_rows, rep, defs, values), chunks.num_levels


#: Chunks a strided run or a single chunk (``_chunk_bytes``) must average for the copies to be
#: cut so: below, one gather over every chunk costs less than the Python per piece.
STRIDED_CHUNKS_PER_PIECE = 4


def _chunk_bytes(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The chunks' value bytes laid end to end (one copy). Runs of chunks of one size at an even
    spacing (a page's chunks but its last, as a writer cuts fixed-width values) are copied through
    one strided view each, the chunks between them one slice each, instead of a copy per chunk: a
    128 MB vector page has tens of thousands of chunks, and a run of pylance's streamed pages ends
    each page in a shorter chunk (one gather over the run took 1.5x the strided copies)."""
    k = len(starts)
    if k >= 3:
        size, step = int(sizes[0]), int(starts[1] - starts[0])
        regular = np.zeros(k, bool)  # chunk i is `size` long and chunk i + 1 starts `step` after it
        regular[:-1] = (sizes[:-1] == size) & (np.diff(starts) == step)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], regular.view(np.int8), [0]])))
        between = np.flatnonzero(~regular)
        if step >= size and (len(edges) // 2 + len(between)) * STRIDED_CHUNKS_PER_PIECE <= k:
            at = np.zeros(k + 1, np.int64)
            np.cumsum(sizes, out=at[1:])
            out = pool_empty(int(at[-1]), np.uint8)
            firsts, lasts = edges[0::2], edges[1::2]  # each strided run's first chunk and its end
            for a, b, place, first in zip(
                firsts.tolist(), lasts.tolist(), at[firsts].tolist(), starts[firsts].tolist()
            ):
                grid = np.lib.stride_tricks.as_strided(
                    data[first:], shape=(b - a, size), strides=(step, 1), writeable=False
                )
                out[place : place + (b - a) * size].reshape(b - a, size)[...] = grid
            for place, first, length in zip(
                at[between].tolist(), starts[between].tolist(), sizes[between].tolist()
            ):
                out[place : place + length] = data[first : first + length]
            return out
    return gather_ranges(data, starts, sizes)


def look_up_dictionary(dictionary: DecodedValues, indices: DecodedValues, where: str) -> DecodedValues:
    """Replace dictionary indices by the dictionary's values (vectorised)."""
    idx = np.asarray(present(indices.data, "data"))
    if idx.dtype.kind != "u":  # stored unsigned; anything else is checked for negatives too
        idx = idx.astype(np.int64)
    if idx.size and (idx.max() >= dictionary.num_values or (idx.dtype.kind != "u" and idx.min() < 0)):
        raise CorruptFileError(where, f"dictionary index out of range ({dictionary.num_values} items)")
    if dictionary.kind == "fixed" and dictionary.bits_per_value % 8 == 0:
        width = dictionary.bits_per_value // 8
        if width in UINT_BY_BYTES:  # one value per index, not a row of bytes
            data = dictionary.fixed_bytes().view(UINT_BY_BYTES[width])[idx]
        else:
            data = dictionary.fixed_bytes().reshape(-1, width)[idx].reshape(-1)
        return DecodedValues("fixed", len(idx), data, dictionary.bits_per_value)
    if dictionary.kind == "variable":
        offs = present(dictionary.offsets, "offsets")
        lengths = (offs[1:] - offs[:-1])[idx]
        out_offs = np.zeros(len(idx) + 1, np.int64)
        np.cumsum(lengths, out=out_offs[1:])
        data = gather_ranges(np.asarray(dictionary.data, np.uint8), offs[:-1][idx], lengths)
        return DecodedValues("variable", len(idx), data, offsets=out_offs)
    raise UnsupportedEncodingError(f"{where}: a {dictionary.kind} dictionary is not supported")


# --- constant -----------------------------------------------------------------------------------


def constant(layout: pb.ConstantLayout, buffers: Sequence[RawBytes], num_rows: int, where: str) -> PageLevels:
    """Buffers are ``[value] [rep def]``: a value buffer only for a non-inline constant, so an
    odd count means one is there; rep and def come as a pair when the column is nested."""
    buffers = list(buffers)
    value = bytes(layout.inline_value) if layout.HasField("inline_value") else None
    value_buffers = None
    if value is None and len(buffers) % 2 == 1:
        value_buffers = _arrow_value_buffers(bytes(buffers[0]), where)
        buffers = buffers[1:]
    if len(buffers) not in (0, 2):
        raise CorruptFileError(where, f"constant page has {len(buffers)} level buffers (expected 0 or 2)")
    rep = _levels(layout, "rep", buffers[0], where) if buffers else None
    defs = _levels(layout, "def", buffers[1], where) if buffers else None
    return PageLevels(list(layout.layers), num_rows, rep, defs, None, value, value_buffers)


def _levels(layout: pb.ConstantLayout, which: str, buf: RawBytes, where: str) -> np.ndarray | None:
    raw = as_u8(buf)
    if not len(raw):
        return None
    field = f"{which}_compression"
    if layout.HasField(field):
        count = layout.num_rep_values if which == "rep" else layout.num_def_values
        return compressive.decode_levels(
            getattr(layout, field), raw, count, "block", f"{where}, {which} levels"
        )
    if len(raw) % 2:
        raise CorruptFileError(where, f"raw {which} levels buffer has an odd size")
    return raw.view("<u2").copy()


def _arrow_value_buffers(blob: bytes, where: str) -> list[bytes]:
    """``u32 nbuffers | u32 size x n | buffers``: the buffers of a length-1 Arrow array."""
    if len(blob) < 4 or 4 + 4 * struct.unpack_from("<I", blob, 0)[0] > len(blob):
        raise CorruptFileError(where, "constant page value buffer is truncated")
    (count,) = struct.unpack_from("<I", blob, 0)
    sizes = struct.unpack_from(f"<{count}I", blob, 4)
    pos = 4 + 4 * count
    out = []
    for size in sizes:
        if pos + size > len(blob):
            raise CorruptFileError(where, "constant page value buffer is truncated")
        out.append(blob[pos : pos + size])
        pos += size
    return out
