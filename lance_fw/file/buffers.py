"""Byte and bit helpers the file layer, the encoding plugins and the query functions share:
gathers of byte ranges, unsigned dtypes by width, fixed widths of Arrow types, validity bitmaps.

Each was written several times over (in the 2.0 and 2.1 encodings, the reader and the query
functions); one copy here keeps them agreeing, e.g. on bit order or on what "fixed width" means.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Raw bytes a decoder accepts: a page buffer (``memoryview`` / ``bytes``) or a uint8 array
#: already cut from one (what ``np.frombuffer`` takes).
RawBytes: TypeAlias = bytes | bytearray | memoryview | np.ndarray


def as_u8(buf: RawBytes) -> np.ndarray:
    """``buf``'s bytes as a flat uint8 array; a contiguous array is viewed, not copied."""
    if isinstance(buf, np.ndarray):
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, np.uint8)


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


def pool_concatenate(arrays: list[np.ndarray], dtype: np.dtype | type | None = None) -> np.ndarray:
    """``np.concatenate(arrays)`` (1-d; of ``dtype``, else numpy's result type) into
    :func:`pool_empty` memory: a decoded page's values joined from its pieces are as large as the
    page, and fresh numpy memory of that size is faulted in page by page."""
    out = pool_empty(sum(len(a) for a in arrays), np.result_type(*arrays) if dtype is None else dtype)
    if arrays:
        np.concatenate(arrays, out=out)
    return out


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


def headed(heads: np.ndarray, sizes: np.ndarray, body: np.ndarray) -> np.ndarray:
    """Element ``i`` of ``heads`` (an (n, w) uint8 array: w bytes each) followed by the next
    ``sizes[i]`` bytes of ``body``, for all i in order, as one uint8 array (a copy).

    Why: a full-zip page lays every value's control word and length before its bytes. Placing
    the bytes through a per-byte position array (``range_positions``) cost 8 bytes of index and a
    scatter per byte (a page of 1.7 MB of FSST codes: ~18 ms); Arrow's element-wise join of two
    binary arrays over the same memory copies each element once (~2 ms)."""
    heads = np.ascontiguousarray(heads, np.uint8)
    body = np.ascontiguousarray(body, np.uint8).reshape(-1)
    n, width = heads.shape
    body_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=body_offsets[1:])
    if len(sizes) != n or body_offsets[-1] > body.size or (n and int(np.min(sizes)) < 0):
        raise ValueError(
            f"headed: {n} heads, {len(sizes)} sizes adding up to {body_offsets[-1]}, {body.size} bytes"
        )
    if not width:
        return body[: int(body_offsets[-1])].copy()
    head_offsets = np.arange(0, width * n + 1, width, dtype=np.int64)
    joined = pc.binary_join_element_wise(
        binary_array(head_offsets, heads.reshape(-1)),
        binary_array(body_offsets, body),
        pa.scalar(b"", pa.large_binary()),
    )
    return binary_views(joined)[1]


def offsets_and_data(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string or binary array's offsets, widened to int64 and not rebased (they index the
    whole data buffer), and that whole data buffer as uint8; the array's slice offset honoured."""
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    width = np.dtype(np.int64 if large else np.int32)
    offs = np.frombuffer(
        values.buffers()[1], width, count=len(values) + 1, offset=values.offset * width.itemsize
    ).astype(np.int64)
    data = values.buffers()[2]
    return offs, np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)


def binary_array(offsets: np.ndarray, data: np.ndarray) -> pa.LargeBinaryArray:
    """The strings ``data[offsets[i]:offsets[i+1]]`` as a binary array over the same memory
    (int64 offsets, C-contiguous ``data``: no copy)."""
    return pa.Array.from_buffers(
        pa.large_binary(), offsets.size - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def binary_views(strings: pa.LargeBinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`binary_array`, without copies: (int64 offsets into the data, the data)."""
    offsets = np.frombuffer(strings.buffers()[1], np.int64, len(strings) + 1, strings.offset * 8)
    buffer, total = strings.buffers()[2], int(offsets[-1])
    if buffer is None or not total:
        return offsets, np.zeros(0, np.uint8)
    return offsets, np.frombuffer(buffer, np.uint8, total)


#: Ranges few enough that slicing each beats building the ``take`` below (~10 us of set-up).
_FEW_RANGES = 4
#: Mean range length above which slicing each range beats building a per-byte index array.
_SLICE_ABOVE = 64


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``data[starts[i] : starts[i] + lengths[i]]`` for all i, concatenated (a copy)."""
    lengths = np.asarray(lengths, np.int64)
    if not len(lengths):
        return data[:0]
    if len(lengths) <= _FEW_RANGES:  # a point lookup's one value: slices, not a kernel call
        spans = list(zip(np.asarray(starts).tolist(), lengths.tolist()))
        if all(a >= 0 and n >= 0 and a + n <= len(data) for a, n in spans):
            if len(spans) == 1:
                return data[spans[0][0] : spans[0][0] + spans[0][1]].copy()
            return np.concatenate([data[a : a + n] for a, n in spans])
    ordered = _ordered_take(data, np.asarray(starts, np.int64), lengths)
    if ordered is not None:
        return ordered
    total = int(lengths.sum())
    if total > _SLICE_ABOVE * len(lengths):
        out = pool_empty(total, data.dtype)
        np.concatenate(
            [data[a : a + n] for a, n in zip(np.asarray(starts).tolist(), lengths.tolist())], out=out
        )
        return out
    return data[range_positions(starts, lengths)]


def _ordered_take(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """For ranges in increasing order, not overlapping, inside ``data`` (1-D): their items, by one
    C++ ``take`` (ranges of wider items as ranges of their bytes: a page's offset words, one range
    per chunk, were gathered by an index per word, ~10% of scanning pylance's 1M-name page).
    Laid out as offsets, the range edges (start, end, next start, ...) are an Arrow
    binary array over ``data`` whose even elements are the ranges and odd ones the gaps; taking
    the even ones copies the ranges end to end (a page's chunks or a full-zip page's values,
    whatever their sizes: 7,000 ranges of 4 KiB in ~6 ms, a million of 25 bytes in ~20 ms, where
    slicing each costs ~0.3 us a range and a mask over the span ~3 ns a byte). None otherwise."""
    if data.ndim != 1 or not data.flags.c_contiguous:
        return None
    if data.dtype != np.uint8:  # wider items (a page's offset words): ranges of their bytes
        width = data.itemsize
        taken = _ordered_take(data.view(np.uint8), starts * width, lengths * width)
        return None if taken is None else taken.view(data.dtype)
    edges = np.empty(2 * len(starts), np.int64)
    edges[0::2] = starts
    edges[1::2] = starts + lengths
    if edges[0] < 0 or edges[-1] > len(data) or (edges[1:] < edges[:-1]).any():
        return None
    pieces = binary_array(edges, data)
    taken = pc.take(pieces, pa.array(np.arange(0, len(edges) - 1, 2)))
    total = int(edges[1::2].sum() - edges[0::2].sum())
    if not total:
        return data[:0].copy()
    return np.frombuffer(taken.buffers()[2], np.uint8, total)


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
    if len(starts) == 1:  # a point lookup's one row: a slice (the view below costs ~10 us)
        at = int(starts[0])
        if at < 0 or at + width > len(data):
            raise IndexError(f"row at {at} of {width} items out of {len(data)}")
        return data[at : at + width].reshape(1, width).copy()
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


def true_bytes(array: pa.BooleanArray) -> np.ndarray:
    """A numpy ``bool`` a row of a boolean array, true where it is true (a null counts as false),
    unpacked from its value and validity bitmaps: ``to_numpy`` converts bit by bit (~0.3 ms for
    262144 rows, ``unpackbits`` 0.02). ``bool``, not the ``uint8`` unpacked: ``np.flatnonzero``
    of 262144 bytes most of which are set takes 0.23 ms as ``bool``, 0.49 as ``uint8``."""
    validity, values = array.buffers()[:2]
    bits = _bytes_of_bits(values, array.offset, len(array))
    if validity is not None and array.null_count:
        bits &= _bytes_of_bits(validity, array.offset, len(array))
    return bits.view(np.bool_)


def _bytes_of_bits(bitmap: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """Bits ``offset`` to ``offset + length`` of an Arrow bitmap (LSB first), a byte each."""
    raw = np.frombuffer(bitmap, np.uint8)
    return np.unpackbits(raw, count=offset + length, bitorder="little")[offset:]


def validity_bitmap(valid: np.ndarray) -> tuple[pa.Buffer, int]:
    """The Arrow validity bitmap of the boolean mask ``valid`` (bit i = row i, least significant
    bit first) and its null count."""
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int(len(valid) - np.count_nonzero(valid))


def validity_or_none(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """As :func:`validity_bitmap`, but (None, 0) when no row is null (Arrow needs no bitmap then)."""
    if np.count_nonzero(valid) == len(valid):
        return None, 0
    return validity_bitmap(valid)
