"""Byte and bit helpers the file layer, the encoding plugins and the query functions share:
gathers of byte ranges, unsigned dtypes by width, fixed widths of Arrow types, validity bitmaps.

Each was written several times over (in the 2.0 and 2.1 encodings, the reader and the query
functions); one copy here keeps them agreeing, e.g. on bit order or on what "fixed width" means.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: Little-endian unsigned numpy dtypes by width in bytes (how Lance stores offsets and words).
UINT_BY_BYTES: dict[int, np.dtype] = {
    1: np.dtype("<u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}
#: The same by width in bits.
UINT_BY_BITS: dict[int, np.dtype] = {8 * k: v for k, v in UINT_BY_BYTES.items()}
#: Unsigned Arrow types by width in bits (dictionary indices are stored unsigned).
ARROW_UINT_BY_BITS: dict[int, pa.DataType] = {
    8: pa.uint8(),
    16: pa.uint16(),
    32: pa.uint32(),
    64: pa.uint64(),
}


#: Arrays of at least this many bytes come from pyarrow's memory pool (``pool_empty``).
POOL_BYTES = 1 << 20


def pool_empty(count: int, dtype: np.dtype | type = np.uint8) -> np.ndarray:
    """``np.empty(count, dtype)`` whose memory, when large, comes from pyarrow's memory pool: the
    pool reuses freed pages, where numpy's fresh allocation of a big array makes the kernel fault in
    and zero every page before the first write (a 128 MiB copy: ~30 ms into fresh numpy memory,
    ~18 ms into the pool's). Decoded pages are tens of MiB and freed after each batch, so scans
    would otherwise pay those faults on every page."""
    dt = np.dtype(dtype)
    nbytes = count * dt.itemsize
    if nbytes < POOL_BYTES:
        return np.empty(count, dt)
    return np.frombuffer(pa.allocate_buffer(nbytes), dt, count)


def range_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[i] + j`` for ``j < lengths[i]``, for all i in order, as int64: the positions a
    concatenation of ranges reads (or writes), computed without a Python loop."""
    lengths = np.asarray(lengths, np.int64)
    if not len(lengths):
        return np.zeros(0, np.int64)
    out_starts = np.zeros(len(lengths), np.int64)  # where each range begins in the output
    np.cumsum(lengths[:-1], out=out_starts[1:])
    total = int(out_starts[-1] + lengths[-1])
    return np.repeat(np.asarray(starts, np.int64) - out_starts, lengths) + np.arange(total)


#: Mean range length above which slicing each range beats building a per-byte index array.
_SLICE_ABOVE = 64


#: Share of the bytes spanned by ordered ranges above which they are gathered through a mask of
#: the span (the gaps are small: headers between values, as in a full-zip page).
_MASK_ABOVE = 0.5


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``data[starts[i] : starts[i] + lengths[i]]`` for all i, concatenated (a copy)."""
    lengths = np.asarray(lengths, np.int64)
    if not len(lengths):
        return data[:0]
    total = int(lengths.sum())
    dense = _dense_ordered(np.asarray(starts, np.int64), lengths, total)
    if dense is not None:
        lo, hi, inside = dense
        return data[lo:hi][inside]
    if total > _SLICE_ABOVE * len(lengths):
        out = pool_empty(total, data.dtype)
        np.concatenate(
            [data[a : a + n] for a, n in zip(np.asarray(starts).tolist(), lengths.tolist())], out=out
        )
        return out
    return data[range_positions(starts, lengths)]


def _dense_ordered(starts: np.ndarray, lengths: np.ndarray, total: int) -> tuple[int, int, np.ndarray] | None:
    """For ranges in increasing order, not overlapping, that cover most of what they span: the
    span ``[lo, hi)`` and a mask of its bytes inside a range. Built from +1/-1 marks at the range
    edges and one cumulative sum: a pass over the span, where per-byte positions would cost 16
    bytes of index per byte gathered (a 10 MB full-zip string page: ~280 ms -> ~30 ms). None when
    the ranges are not like that."""
    ends = starts + lengths
    lo, hi = int(starts[0]), int(ends[-1])
    if hi <= lo or total < _MASK_ABOVE * (hi - lo) or (len(starts) > 1 and (starts[1:] < ends[:-1]).any()):
        return None
    full = lengths > 0
    marks = np.zeros(hi - lo + 1, np.int8)
    marks[starts[full] - lo] = 1
    marks[ends[full] - lo] -= 1  # an end may be the next range's start: 1 - 1 = 0, still inside
    return lo, hi, np.cumsum(marks[:-1], dtype=np.int8).view(np.bool_)


def gather_rows(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``data[starts[i] : starts[i] + width]`` for all i, as a ``(len(starts), width)`` array (a
    copy). Rows are fancy-indexed out of a sliding-window view of ``data``, one row copy each,
    where a per-element index would build and read ``width`` positions per row (128-byte rows:
    ~5x faster).

    Raises:
        IndexError: a row runs past the end of ``data`` (callers check bounds first, or treat it as
            damage).
    """
    starts = np.asarray(starts, np.intp)
    if not len(starts) or width == 0:
        return np.zeros((len(starts), width), data.dtype)
    if len(data) < width:
        raise IndexError(f"rows of {width} items out of {len(data)}")
    if data.ndim == 1 and data.flags.c_contiguous:  # the same view, without numpy's ~10 us of checks
        step = data.itemsize
        windows = np.ndarray((len(data) - width + 1, width), data.dtype, data, 0, (step, step))
        windows.flags.writeable = False
        return windows[starts]
    return np.lib.stride_tricks.sliding_window_view(data, width)[starts]


def is_variable_bytes(t: pa.DataType) -> bool:
    """Strings and binaries with 32- or 64-bit offsets: values of variable width as bytes."""
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def fixed_bits(t: pa.DataType) -> int | None:
    """Bits per value of a fixed-width Arrow type (1 for booleans); None for variable-width and
    nested types, fixed-size lists included."""
    if pa.types.is_boolean(t):
        return 1
    try:
        return t.bit_width
    except ValueError:  # pyarrow's answer for types without one fixed width
        return None


def validity_bitmap(valid: np.ndarray) -> tuple[pa.Buffer, int]:
    """The Arrow validity bitmap of the boolean mask ``valid`` (bit i = row i, least significant
    bit first) and its null count."""
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int(len(valid) - np.count_nonzero(valid))


def validity_or_none(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """As :func:`validity_bitmap`, but (None, 0) when no row is null (Arrow needs no bitmap then)."""
    if np.count_nonzero(valid) == len(valid):
        return None, 0
    return validity_bitmap(valid)
