"""Decoding chosen rows of a 2.0 page, reading only their byte ranges where the encoding allows.

Plain fixed-width values, bitmaps (validity, booleans), fixed-size lists/binaries, offsets-based
strings over plain bytes (FSST codes too, expanded once read), dictionary indices and packed-struct rows are read row by row; anything else (compressed
buffers, a kind replaced by another plugin) returns None and the page is decoded whole.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_0_pb2 as pb
from lance_fw._util import sets
from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import fixed_bits, validity_or_none
from lance_fw.file.encoding import PageInput

from . import decode


def _ours(kind: str) -> bool:
    from lance_fw.plugin_manager import registry

    return registry.kind_decoders.get((decode.FAMILY, kind)) is decode.KIND_DECODERS.get(kind)


def _joined(parts: list[memoryview]) -> np.ndarray:
    """The parts' bytes end to end, as one read-only uint8 array (one copy, however many parts:
    a take of many rows reads one part per row)."""
    if not parts:
        return np.zeros(0, np.uint8)
    return np.frombuffer(parts[0] if len(parts) == 1 else b"".join(parts), np.uint8)


def take(
    enc: pb.ArrayEncoding, page: PageInput, rows: np.ndarray, group: int, arrow_type: pa.DataType
) -> pa.Array | None:
    """Values ``[r * group, (r + 1) * group)`` for each of ``rows``, or None when not possible here."""
    kind = enc.WhichOneof("array_encoding")
    if kind is None or not _ours(kind):
        return None
    msg = getattr(enc, kind)
    n = len(rows) * group
    if kind == "flat":
        return _flat(msg, page, rows, group, arrow_type)
    if kind == "nullable":
        which = msg.WhichOneof("nullability")
        if which == "no_nulls":
            return take(msg.no_nulls.values, page, rows, group, arrow_type)
        if which == "all_nulls":
            return pa.nulls(n, arrow_type)
        if which != "some_nulls":
            return None
        validity = take(msg.some_nulls.validity, page, rows, group, pa.bool_())
        values = take(msg.some_nulls.values, page, rows, group, arrow_type)
        return (
            None
            if validity is None or values is None
            else decode._with_validity(values, validity, page.where)
        )
    if kind == "fixed_size_list":
        if not pa.types.is_fixed_size_list(arrow_type):
            return None
        items = take(msg.items, page, rows, group * msg.dimension, arrow_type.value_type)
        return None if items is None else pa.FixedSizeListArray.from_arrays(items, type=arrow_type)
    if kind == "fixed_size_binary":
        raw = take(msg.bytes, page, rows, group * msg.byte_width, pa.uint8())
        return (
            None
            if raw is None
            else pa.Array.from_buffers(arrow_type, n, [None, raw.buffers()[1]], null_count=0)
        )
    if kind == "constant":
        return decode._constant(msg, page, n, arrow_type)
    if kind == "struct":
        return pa.nulls(n) if pa.types.is_null(arrow_type) else None
    if group != 1:
        return None
    if kind == "packed_struct":
        return decode.take_packed(msg, page, rows, arrow_type)
    if kind == "fsst":
        return _fsst(msg, page, rows, arrow_type)
    if kind == "binary":
        return _binary(msg, page, rows, arrow_type)
    if kind == "dictionary":
        return _dictionary(msg, page, rows, arrow_type)
    return None


def _flat(
    msg: pb.Flat, page: PageInput, rows: np.ndarray, group: int, arrow_type: pa.DataType
) -> pa.Array | None:
    if decode.flat_compression(msg) is not None:
        return None  # compressed: decoded whole
    n = len(rows) * group
    if pa.types.is_null(arrow_type):
        return pa.nulls(n)
    if pa.types.is_fixed_size_list(arrow_type):
        inner = _flat(msg, page, rows, group * arrow_type.list_size, arrow_type.value_type)
        return None if inner is None else pa.FixedSizeListArray.from_arrays(inner, type=arrow_type)
    bits = msg.bits_per_value
    if bits != fixed_bits(arrow_type):
        return None
    index = msg.buffer.buffer_index if msg.HasField("buffer") else 0
    if msg.HasField("buffer") and msg.buffer.buffer_type != pb.Buffer.page:
        return None
    if index >= len(page.buffers):
        raise CorruptFileError(
            page.where, f"encoding names buffer {index} but the page has {len(page.buffers)}"
        )
    if bits % 8 == 0:
        width = bits // 8 * group
        data = _joined(page.read_parts([(index, int(r) * width, width) for r in rows]))
        return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(data)], null_count=0)
    if bits != 1:
        return None
    first_bit = rows * group
    lo, hi = first_bit // 8, (first_bit + group + 7) // 8
    data = _joined(page.read_parts([(index, int(a), int(b - a)) for a, b in zip(lo, hi)]))
    bits_all = np.unpackbits(data, bitorder="little")
    part_start = np.zeros(len(rows), np.int64)
    np.cumsum((hi - lo)[:-1] * 8, out=part_start[1:])
    pick = np.repeat(part_start + first_bit % 8, group) + np.tile(np.arange(group), len(rows))
    packed = np.packbits(bits_all[pick], bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(packed)], null_count=0)


def _end_offsets(
    enc: pb.ArrayEncoding, page: PageInput, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The stored end offsets of the row before and of each of ``rows`` as (len(rows), 2) (0 before
    row 0), and whether each row has a row before it."""
    wanted = sets.unique(np.concatenate([rows - 1, rows]))
    wanted = wanted[wanted >= 0]
    ends = take(enc, page, wanted, 1, pa.uint64())
    if ends is None:
        return None
    values = ends.to_numpy(zero_copy_only=False).astype(np.uint64)
    at = np.searchsorted(wanted, rows)
    before = np.where(rows > 0, values[np.maximum(np.searchsorted(wanted, rows - 1), 0)], np.uint64(0))
    return np.stack([before, values[at]], axis=1), rows > 0


def _binary(msg: pb.Binary, page: PageInput, rows: np.ndarray, arrow_type: pa.DataType) -> pa.Array | None:
    value_type = decode.binary_value_type(arrow_type)
    if value_type is None:
        return None
    if (
        msg.bytes.WhichOneof("array_encoding") != "flat"
        or msg.bytes.flat.bits_per_value != 8
        or decode.flat_compression(msg.bytes.flat) is not None
        or not _ours("flat")
    ):
        return None
    found = _end_offsets(msg.indices, page, rows)
    if found is None:
        return None
    pairs, has_before = found
    adjustment = msg.null_adjustment
    if adjustment:
        valid = pairs[:, 1] < adjustment
        pairs = pairs % np.uint64(adjustment)
    else:
        valid = None
    pairs = pairs.astype(np.int64)
    starts = np.where(has_before, pairs[:, 0], 0)
    lengths = pairs[:, 1] - starts
    if (lengths < 0).any():
        raise CorruptFileError(page.where, "string end offsets are not ascending")
    index = msg.bytes.flat.buffer.buffer_index if msg.bytes.flat.HasField("buffer") else 0
    data = _joined(page.read_parts([(index, int(a), int(b)) for a, b in zip(starts, lengths)]))
    small = value_type in (pa.string(), pa.binary())
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    bitmap, nulls = validity_or_none(valid) if valid is not None else (None, 0)
    offsets_buffer = pa.py_buffer(offsets.astype(np.int32 if small else np.int64))
    return pa.Array.from_buffers(
        value_type, len(rows), [bitmap, offsets_buffer, pa.py_buffer(data)], null_count=nulls
    )


def _fsst(msg: pb.Fsst, page: PageInput, rows: np.ndarray, arrow_type: pa.DataType) -> pa.Array | None:
    """The rows' codes read row by row (as ``_binary`` reads strings), then expanded."""
    value_type = decode.binary_value_type(arrow_type)
    if value_type is None or not msg.HasField("binary"):
        return None  # decoded whole, which raises
    codes = take(msg.binary, page, rows, 1, decode.fsst_codes_type(value_type))
    return None if codes is None else decode.fsst_values(codes, msg.symbol_table, value_type, page.where)


def _dictionary(
    msg: pb.Dictionary, page: PageInput, rows: np.ndarray, arrow_type: pa.DataType
) -> pa.Array | None:
    """Indices row by row; the dictionary items (small) are decoded whole."""
    from lance_fw.file.encoding import decode_kind

    is_dict = pa.types.is_dictionary(arrow_type)
    value_type = arrow_type.value_type if is_dict else arrow_type
    k = msg.num_dictionary_items
    raw = take(msg.indices, page, rows, 1, decode._index_type(msg.indices, page.where))
    if raw is None:
        return None
    items = decode_kind(decode.FAMILY, msg.items, page, k, value_type)
    idx = raw.to_numpy(zero_copy_only=False).astype(np.int64)
    return decode.dictionary_values(idx, items, k, is_dict, arrow_type, page)
