"""The 2.1/2.2 full-zip page layout: rows zipped end to end, each level's control word (rep and
def bits) followed by its value bytes (fixed width, or a length then the bytes), located through
the page's repetition index.

Split from ``layouts`` (which keeps the mini-block and constant layouts and ``PageLevels``, the
parsers' shared result) because full-zip parsing shares nothing with the mini-block chunk
arithmetic: it walks control words through the zipped stream, for a whole page
(``full_zip``) or for rows a take reads alone (``zipped_levels``, ``take.full_zip_rows``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import UINT_BY_BYTES, RawBytes, as_u8, gather_ranges, gather_rows

from . import fullzip_values
from .decoded_values import DecodedValues, present
from .layouts import PageLevels


def _ctrl_bytes(bits: int, where: str = "full-zip page") -> int:
    if bits == 0:
        return 0
    for width in (1, 2, 4):
        if bits <= 8 * width:
            return width
    raise CorruptFileError(where, f"{bits} control bits do not fit a control word")


def full_zip(layout: pb.FullZipLayout, buffers: Sequence[RawBytes], num_rows: int, where: str) -> PageLevels:
    if not buffers:
        raise CorruptFileError(where, "full-zip page without a data buffer")
    data = as_u8(buffers[0])
    row_starts = None
    if layout.WhichOneof("details") != "bits_per_value" or layout.bits_rep:
        if len(buffers) < 2:
            raise CorruptFileError(where, "full-zip page without its repetition index")
        row_starts = rep_index_offsets(as_u8(buffers[1]), num_rows, where)
    return zipped_levels(layout, data, row_starts, num_rows, where, layout.num_items)


def rep_index_offsets(rep_index: np.ndarray, num_rows: int, where: str) -> np.ndarray:
    """A full-zip repetition index: ``num_rows + 1`` byte offsets, each 1, 2, 4 or 8 bytes wide."""
    width = index_width(len(rep_index), num_rows, where)
    return rep_index.view(UINT_BY_BYTES[width]).astype(np.int64)


def index_width(nbytes: int, num_rows: int, where: str) -> int:
    width = nbytes // (num_rows + 1) if num_rows + 1 else 0
    if width not in (1, 2, 4, 8) or width * (num_rows + 1) != nbytes:
        raise CorruptFileError(where, f"full-zip repetition index of {nbytes} bytes for {num_rows} rows")
    return width


def fixed_stride(layout: pb.FullZipLayout, where: str) -> int | None:
    """Bytes per row of a fixed-width full-zip page without lists (None when rows vary)."""
    if layout.WhichOneof("details") != "bits_per_value" or layout.bits_rep:
        return None
    return _ctrl_bytes(layout.bits_rep + layout.bits_def, where) + layout.bits_per_value // 8


def zipped_levels(
    layout: pb.FullZipLayout,
    data: np.ndarray,
    row_starts: np.ndarray | None,
    num_rows: int,
    where: str,
    num_levels: int | None = None,
) -> PageLevels:
    """Levels and values of ``num_rows`` zipped rows laid end to end in ``data`` (a whole page, or
    chosen rows); ``row_starts`` are their ``num_rows + 1`` byte offsets (None for fixed-width
    rows without lists). ``num_levels``, when known, is checked."""
    bits_rep, bits_def = layout.bits_rep, layout.bits_def
    ctrl = _ctrl_bytes(bits_rep + bits_def, where)
    kind = layout.WhichOneof("details")
    layers = list(layout.layers)
    if kind == "bits_per_value":
        if layout.bits_per_value == 0 or layout.bits_per_value % 8:
            raise CorruptFileError(
                where, f"full-zip values of {layout.bits_per_value} bits (whole bytes only)"
            )
        width = layout.bits_per_value // 8
        if bits_rep == 0:  # no lists: every level is visible and has its value bytes
            stride = ctrl + width
            n = num_rows if num_levels is None else num_levels
            if len(data) < n * stride:
                raise CorruptFileError(where, f"full-zip data holds {len(data)} bytes, needs {n * stride}")
            starts = np.arange(n, dtype=np.int64) * stride
        else:  # invisible levels (null/empty lists) carry only their control word
            starts = _level_starts(
                layout,
                row_starts,
                data,
                num_levels,
                ctrl,
                num_rows,
                where,
                lambda defs, _: np.where(_visible_mask(layers, defs, len(defs)), width, 0),
            )
            n = len(starts)
        words = _ctrl_words(_gather_bytes(data, starts, ctrl, where), ctrl)
        rep, defs = _split_ctrl(words, bits_rep, bits_def)
        visible = _visible_mask(layers, defs, n)
        raw = _gather_bytes(data, starts[visible] + ctrl, width, where).reshape(-1)
        values = _fixed_values(layout.value_compression, raw, int(visible.sum()), width, where)
        return PageLevels(layers, num_rows, rep, defs, values)
    if kind != "bits_per_offset":
        raise CorruptFileError(where, "full-zip layout names neither bits_per_value nor bits_per_offset")
    if layout.bits_per_offset not in (32, 64):
        raise CorruptFileError(where, f"full-zip value lengths of {layout.bits_per_offset} bits (32 or 64)")
    len_bytes = layout.bits_per_offset // 8

    def value_size(defs: np.ndarray, pos: np.ndarray) -> np.ndarray:
        sizes = np.zeros(len(defs), np.int64)
        p = np.flatnonzero(defs == 0)
        if len(p):
            sizes[p] = len_bytes + _ctrl_words(
                _gather_bytes(data, pos[p] + ctrl, len_bytes, where), len_bytes
            )
        return sizes

    starts = _level_starts(layout, row_starts, data, num_levels, ctrl, num_rows, where, value_size)
    n = len(starts)
    if num_levels is not None and n != num_levels:
        raise CorruptFileError(where, f"full-zip page holds {n} levels, the layout says {num_levels}")
    words = _ctrl_words(_gather_bytes(data, starts, ctrl, where), ctrl)
    rep, defs = _split_ctrl(words, bits_rep, bits_def)
    has_value = defs == 0 if defs is not None else np.ones(n, bool)
    vstart = starts[has_value] + ctrl
    lengths = _ctrl_words(_gather_bytes(data, vstart, len_bytes, where), len_bytes).astype(np.int64)
    offsets = np.zeros(len(vstart) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    payload_starts = vstart + len_bytes
    if len(payload_starts) and (payload_starts + lengths).max() > len(data):
        raise CorruptFileError(where, "full-zip value runs past the end of the page")
    payload = gather_ranges(data, payload_starts, lengths)
    decoded = fullzip_values.decode_fullzip_variable(layout.value_compression, offsets, payload, where)
    values = _spread_variable(decoded, has_value, _visible_mask(layers, defs, n))
    return PageLevels(layers, num_rows, rep, defs, values)


def _level_starts(
    layout: pb.FullZipLayout,
    row_starts: np.ndarray | None,
    data: np.ndarray,
    n: int | None,
    ctrl: int,
    num_rows: int,
    where: str,
    value_size: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Byte offset of every level in the zipped stream.

    Without repetition each row is one level and the repetition index gives every start
    directly; with lists, all rows are walked in lockstep (one pass per level within a row).
    ``value_size(defs, positions)`` says how many bytes follow the control words of the levels at
    ``positions``.
    """
    if row_starts is None:
        raise CorruptFileError(where, "full-zip page of variable-size rows without a repetition index")
    if layout.bits_rep == 0:
        return row_starts[:-1]
    out: list[np.ndarray] = []
    order: list[np.ndarray] = []
    pos, ends = row_starts[:-1].copy(), row_starts[1:]
    row_ids = np.arange(num_rows)
    bits_def = layout.bits_def
    while True:
        active = np.flatnonzero(pos < ends)
        if not len(active):
            break
        p = pos[active]
        out.append(p)
        order.append(row_ids[active])
        words = _ctrl_words(_gather_bytes(data, p, ctrl, where), ctrl)
        defs = (words & ((1 << bits_def) - 1)) if bits_def else np.zeros(len(p), np.int64)
        pos[active] = p + ctrl + value_size(defs, p)
    if not out:
        return np.zeros(0, np.int64)
    starts = np.concatenate(out)
    rows = np.concatenate(order)
    result = starts[np.lexsort((starts, rows))]
    if n is not None and len(result) != n:
        raise CorruptFileError(where, f"full-zip stream holds {len(result)} levels, the layout says {n}")
    return result


def _fixed_values(
    enc: pb.CompressiveEncoding, raw: np.ndarray, count: int, width: int, where: str
) -> DecodedValues:
    """Fixed-width full-zip values; a fixed-size list with item validity carries its bitmap first."""
    if enc.WhichOneof("compression") == "fixed_size_list" and enc.fixed_size_list.has_validity:
        fsl = enc.fixed_size_list
        dim = fsl.items_per_value
        vbytes = (dim + 7) // 8
        grid = raw.reshape(count, width)
        validity = np.unpackbits(np.ascontiguousarray(grid[:, :vbytes]), axis=1, bitorder="little")[:, :dim]
        inner = fullzip_values.decode_fullzip_fixed(
            fsl.values, np.ascontiguousarray(grid[:, vbytes:]).reshape(-1), count * dim, where
        )
        return DecodedValues(
            "fsl", count, dimension=dim, validity=validity.reshape(-1).astype(bool), inner=inner
        )
    return fullzip_values.decode_fullzip_fixed(enc, raw, count, where)


def _gather_bytes(data: np.ndarray, starts: np.ndarray, width: int, where: str) -> np.ndarray:
    if width == 0:
        return np.zeros((len(starts), 0), np.uint8)
    if len(starts) and starts.max() + width > len(data):
        raise CorruptFileError(where, "full-zip control word or length runs past the page")
    return gather_rows(data, starts, width)


def _ctrl_words(grid: np.ndarray, width: int) -> np.ndarray:
    if width == 0:
        return np.zeros(len(grid), np.int64)
    return np.ascontiguousarray(grid).view(UINT_BY_BYTES[width]).reshape(-1).astype(np.int64)


def _split_ctrl(
    words: np.ndarray, bits_rep: int, bits_def: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    rep = (words >> bits_def).astype(np.uint16) if bits_rep else None
    defs = (words & ((1 << bits_def) - 1)).astype(np.uint16) if bits_def else None
    return rep, defs


def _visible_mask(layers: list[int], defs: np.ndarray | None, count: int) -> np.ndarray:
    from .repdef import visible_levels

    return visible_levels(layers, defs, count)


def _spread_variable(decoded: DecodedValues, has_value: np.ndarray, visible: np.ndarray) -> DecodedValues:
    """Variable values exist only for valid levels; give visible-but-null levels empty values."""
    if visible.size == 0 or np.array_equal(has_value, visible):
        return decoded
    if decoded.kind == "arrow":  # null rows take any row; the def levels make them null
        index = (np.cumsum(has_value) - 1)[visible].clip(0)
        array = present(decoded.array, "array")
        source = array if len(array) else pa.nulls(1, array.type)
        return DecodedValues("arrow", len(index), array=source.take(pa.array(index)))
    lengths = np.zeros(len(has_value), np.int64)
    lengths[has_value] = np.diff(present(decoded.offsets, "offsets"))
    lengths = lengths[visible]
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return DecodedValues("variable", len(lengths), decoded.data, offsets=offsets)
