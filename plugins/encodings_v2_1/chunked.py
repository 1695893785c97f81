"""Whole mini-block pages: the value buffers of many chunks decoded in one vectorised pass.

Split from ``compressive`` (which decodes one buffer at a time): inline bitpacking is unpacked for
all chunks at once, and variable-width chunks are located and copied one range per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file.buffers import UINT_BY_BITS, gather_ranges, range_positions

from . import fastlanes
from .compressive import (
    DecodedValues,
    _Buffers,
    _decode_mb,
    _fsst,
    _name,
    _u8,
    concat,
    decode_values,
    decompress_buffer,
)


def decode_chunks(
    enc: pb.CompressiveEncoding,
    chunks: Sequence[Sequence],
    counts: Sequence[int],
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
    counts = [int(c) for c in counts]
    if (
        kind == "inline_bitpacking"
        and not enc.inline_bitpacking.HasField("values")
        and all(0 < c <= fastlanes.BLOCK for c in counts)
    ):
        t = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        if t not in UINT_BY_BITS:
            raise UnsupportedEncodingError(f"{where}: inline bitpacking of {t}-bit values")
        bufs = []
        for i, b in enumerate(chunks):
            if len(b) < 1:
                raise CorruptFileError(where, f"chunk {i}: no value buffer for inline bitpacking")
            raw = _u8(b[0])
            if raw.size % (t // 8):
                raise CorruptFileError(
                    where,
                    f"chunk {i}: inline bitpacking buffer of {raw.size} bytes "
                    f"is not a whole number of {t}-bit words",
                )
            bufs.append(raw)
        stream = np.concatenate(bufs).view(UINT_BY_BITS[t])
        if (
            needed is not None and len(needed) * 8 < len(chunks) * fastlanes.BLOCK
        ):  # a few values: gather them
            first = np.zeros(len(counts) + 1, np.int64)
            np.cumsum(counts, out=first[1:])
            block = np.searchsorted(first, needed, side="right") - 1
            values = np.zeros(int(first[-1]), UINT_BY_BITS[t])
            values[needed] = fastlanes.unpack_inline_at(
                stream, t, len(chunks), block, needed - first[block], where
            )
            return DecodedValues("fixed", int(first[-1]), values, t)
        values = fastlanes.unpack_inline(stream, t, len(chunks) * fastlanes.BLOCK, where)
        if any(c != fastlanes.BLOCK for c in counts[:-1]):
            keep = (np.arange(fastlanes.BLOCK)[None, :] < np.array(counts)[:, None]).reshape(-1)
            values = values[keep]
        else:
            values = values[: sum(counts)]
        return DecodedValues("fixed", sum(counts), values, t)
    if kind == "fsst":
        inner = _variable_chunks(enc.fsst.values, chunks, counts, where)
        if inner is None:
            inner = concat(
                [
                    _decode_mb(enc.fsst.values, _Buffers(b, f"{where}: chunk {i}"), n, where)
                    for i, (b, n) in enumerate(zip(chunks, counts))
                ]
            )
        return _fsst(enc.fsst, inner, where, needed)
    fast = _variable_chunks(enc, chunks, counts, where, needed)
    if fast is not None:
        return fast
    return concat(
        [
            _decode_mb(enc, _Buffers(b, f"{where}: chunk {i}"), n, where)
            for i, (b, n) in enumerate(zip(chunks, counts))
        ]
    )


def _variable_chunks(
    enc, chunks: Sequence[Sequence], counts: list[int], where: str, needed: np.ndarray | None = None
) -> DecodedValues | None:
    """All chunks of a ``variable`` (optionally ``general``-compressed) page in one vectorised pass:
    each chunk buffer is ``(n+1)`` offsets relative to the buffer, then bytes; the buffers are
    concatenated and every value located by its global start. None when the page is another kind.
    Values not in ``needed`` (when given) come back empty."""
    general = None
    if _name(enc) == "general":
        general, enc = enc.general.compression, enc.general.values
    if _name(enc) != "variable" or enc.variable.HasField("values") or _name(enc.variable.offsets) != "flat":
        return None
    bits = enc.variable.offsets.flat.bits_per_value
    if bits not in (32, 64) or any(len(b) != 1 for b in chunks):
        return None
    width = bits // 8
    raws = [decompress_buffer(b[0], general, where) if general is not None else _u8(b[0]) for b in chunks]
    sizes = np.fromiter((r.size for r in raws), np.int64, len(raws))
    if (sizes % width).any():
        raise CorruptFileError(where, "variable chunk buffer is not padded to its offset width")
    big = np.concatenate(raws) if raws else np.zeros(0, np.uint8)
    words = big.view(UINT_BY_BITS[bits])
    counts_a = np.asarray(counts, np.int64)
    if (sizes < (counts_a + 1) * width).any():
        raise CorruptFileError(where, "variable chunk buffer is shorter than its offsets")
    base = np.zeros(len(raws), np.int64)
    np.cumsum(sizes[:-1], out=base[1:])
    # offsets of chunk c sit at words[base_c / width + j], j = 0..n_c
    offs = words[range_positions(base // width, counts_a + 1)].astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(counts_a + 1)])
    if (offs[bounds[1:] - 1] > sizes).any():
        raise CorruptFileError(where, "variable chunk offsets point past their chunk")
    starts = offs + np.repeat(base, counts_a + 1)
    value_starts = np.delete(starts, bounds[1:] - 1)  # n values: every offset but each chunk's last
    lengths = np.delete(starts, bounds[:-1]) - value_starts
    if (lengths < 0).any():
        raise CorruptFileError(where, "variable chunk offsets are out of order")
    if needed is not None:
        keep = np.zeros(len(lengths), bool)
        keep[needed] = True
        lengths = np.where(keep, lengths, 0)
        data = gather_ranges(big, value_starts, lengths)
    else:  # a chunk's values lie back to back: copy one range per chunk, not one per value
        data = gather_ranges(big, starts[bounds[:-1]], starts[bounds[1:] - 1] - starts[bounds[:-1]])
    out_offs = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out_offs[1:])
    return DecodedValues("variable", len(lengths), data, offsets=out_offs)
