"""One row of a mini-block page: the point lookup's path (a B-tree answer, ``take([k])``).

The general row path (``take.mini_block_rows``) handles any rows with whole-array steps; for one
row each of those steps costs its call overhead on arrays of one element, ~100 us a column. Here
the row's chunk is found, read and its header parsed as Python integers, its one value located
with the same format arithmetic (``layouts._chunk_places``) and decoded by the same kernels
(``fastlanes.unpack_one`` over ``unpack_at``'s plan table, ``fsst.decompress``), each check done once on integers: ~20 us.

Only the common shapes take this path (no repetition, definition levels or dictionary; one value
buffer holding plain whole-byte values, inline-bitpacked integers or variable-width bytes,
optionally FSST-compressed); anything else returns None and the general path decodes it.
"""

from __future__ import annotations

import struct

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file import fsst
from lance_fw.file.buffers import UINT_BY_BITS, as_u8
from lance_fw.file.encoding import PageInput

from . import chunked, fastlanes, layouts
from .compressive import _name
from .decoded_values import DecodedValues
from .layouts import ChunkTable, PageLevels


def one_row(layout: pb.MiniBlockLayout, page: PageInput, row: int, table: ChunkTable) -> PageLevels | None:
    """Levels of row ``row`` of a mini-block page alone, or None where its shape is not one this
    path decodes (module docstring)."""
    if (
        layout.HasField("rep_compression")
        or layout.HasField("def_compression")
        or layout.HasField("dictionary")
        or layout.num_buffers != 1
    ):
        return None
    enc = layout.value_compression
    plain = layouts._plain_fixed(enc)
    inline = chunked._plain_inline(enc)
    outer_fsst = _name(enc) == "fsst"
    variable, general = chunked._variable_of(enc.fsst.values if outer_fsst else enc)
    if plain is None and not inline and (variable is None or general is not None):
        return None
    where = page.where
    if layout.num_items != page.num_rows:
        raise CorruptFileError(
            where, f"mini-block chunks hold {layout.num_items} values for {page.num_rows} rows"
        )
    chunk = int(np.searchsorted(table.ends, row, side="right"))
    count = int(table.counts[chunk])
    if inline and not 0 < count <= fastlanes.BLOCK:  # several blocks in the chunk: the general path
        return None
    within = row - int(table.ends[chunk]) + count
    size = int(table.sizes[chunk])
    data = as_u8(page.read_parts([(1, int(table.starts[chunk]), size)])[0])
    if len(data) < size:
        raise CorruptFileError(where, f"a mini-block chunk of {size} bytes read as {len(data)}")
    places = layouts.one_chunk_places(data, 0, size, False, False, 1, layout.has_large_chunk, where)
    start, nbytes = places[-2:]
    buffer = data[start : start + nbytes]
    if plain is not None:
        values = _plain(buffer, count, within, *plain, where)
    elif inline:
        values = _inline(buffer, count, within, int(enc.inline_bitpacking.uncompressed_bits_per_value), where)
    else:
        assert variable is not None  # the shape check above
        offs, out = _variable(
            buffer, count, within, variable.variable.offsets.flat.bits_per_value // 8, where
        )
        if outer_fsst:
            offs, out = fsst.decompress(enc.fsst.symbol_table, offs, out, where)
        values = DecodedValues("variable", 1, out, offsets=offs)
    return PageLevels(list(layout.layers), 1, None, None, values)


def _plain(
    buffer: np.ndarray, count: int, within: int, bits: int, per_list: int | None, where: str
) -> DecodedValues:
    """Value ``within`` of a chunk of ``count`` plain values of ``bits`` (lists of ``per_list``)."""
    width = bits * (per_list or 1) // 8
    if len(buffer) != count * width:
        raise CorruptFileError(where, "mini-block value buffers do not hold their chunks' values")
    raw = buffer[within * width : (within + 1) * width].copy()
    values = DecodedValues(
        "fixed", per_list or 1, raw.view(UINT_BY_BITS[bits]) if bits in UINT_BY_BITS else raw, bits
    )
    return values if per_list is None else DecodedValues("fsl", 1, dimension=per_list, inner=values)


def _inline(buffer: np.ndarray, count: int, within: int, t: int, where: str) -> DecodedValues:
    """Value ``within`` of an inline-bitpacked chunk (one 1024-value block: a width word, then
    the packed words), checked as ``chunked._inline_words`` checks whole pages."""
    if t not in UINT_BY_BITS:
        raise UnsupportedEncodingError(f"{where}: inline bitpacking of {t}-bit values")
    isz, lanes = t // 8, fastlanes.BLOCK // t
    if len(buffer) % isz or len(buffer) < isz:
        raise CorruptFileError(
            where,
            f"inline bitpacking buffer of {len(buffer)} bytes is not a whole, non-zero number of {t}-bit words",
        )
    words = buffer.view(UINT_BY_BITS[t])
    width = int(words[0])
    if width > t:
        raise CorruptFileError(where, f"inline bitpacking width {width} > {t}")
    if len(words) < 1 + width * lanes:
        raise CorruptFileError(
            where, f"inline bitpacking buffer has {len(words)} {t}-bit words, needs {1 + width * lanes}"
        )
    value = fastlanes.unpack_one(words, 1, width, t, within)
    return DecodedValues("fixed", 1, np.array([value], UINT_BY_BITS[t]), t)


def _variable(
    buffer: np.ndarray, count: int, within: int, width: int, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Value ``within`` of a ``variable`` chunk (``count + 1`` offsets relative to the buffer, of
    ``width`` bytes, then the bytes they point into): (its offsets [0, length], its bytes)."""
    if len(buffer) % width:
        raise CorruptFileError(where, "variable chunk buffer is not padded to its offset width")
    if len(buffer) < (count + 1) * width:
        raise CorruptFileError(where, "variable chunk buffer is shorter than its offsets")
    lo, hi = struct.unpack_from("<2I" if width == 4 else "<2Q", buffer.data, within * width)
    if hi < lo or hi > len(buffer):
        raise CorruptFileError(where, "variable chunk offsets are out of order or point past their chunk")
    return np.array([0, hi - lo], np.int64), buffer[lo:hi].copy()
