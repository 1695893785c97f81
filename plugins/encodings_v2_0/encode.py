"""The 2.0 column encoder: writes the same encoding trees pylance 14 writes at 2.0.

* fixed width: ``nullable{no_nulls|some_nulls|all_nulls}`` around ``flat{W}``
* string/binary: ``binary{indices=u64 end offsets, bytes, null_adjustment = total + 1}``; under
  ``lance-encoding:compression=fsst``, ``fsst{binary = that tree over the FSST codes, symbol_table}``
* list parents: ``list{offsets=u64 end offsets, null_offset_adjustment = items + 1, num_items}``
* fixed_size_list: ``nullable{... fixed_size_list{dimension, items}}``
* a ``string`` page of few distinct values (pylance's rule, ``_wants_dictionary``):
  ``dictionary{1-based u8 indices (0 = null), items = the values' binary tree, num_dictionary_items}``
* Arrow dictionary: ``dictionary{0-based indices (a null points at a null item), items, num_dictionary_items}``
* struct parents: ``struct{}`` with no buffers
* packed structs: ``packed_struct{inner = each child's tree over buffer 0, buffer}``, the children's
  values side by side, row after row, in the page's one buffer
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._proto import encodings_v2_0_pb2 as pb
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file import buffer_compression, fsst_encode
from lance_fw.file.buffers import (
    ARROW_UINT_BY_BITS,
    fixed_bits,
    is_variable_bytes,
    offsets_and_data,
    validity_bitmap,
)
from lance_fw.file.encoding import ColumnSpec, EncodedPage, pack_any


class _Buffers:
    """Collects a page's buffers and hands out their indices."""

    def __init__(self) -> None:
        self.items: list = []

    def add(self, data: bytes | memoryview | pa.Buffer) -> pb.Buffer:
        self.items.append(data)
        return pb.Buffer(buffer_index=len(self.items) - 1, buffer_type=pb.Buffer.page)


def _bitmap(mask: pa.Array) -> bytes:
    """LSB-first bitmap of a boolean array (offset-free)."""
    return np.packbits(mask.to_numpy(zero_copy_only=False), bitorder="little").tobytes()


def _bit_width(t: pa.DataType) -> int:
    """Bits per value of a flat buffer: a fixed-size list's values are stored as one wide value."""
    if pa.types.is_fixed_size_list(t):
        return _bit_width(t.value_type) * t.list_size
    bits = fixed_bits(t)
    if bits is None:
        raise ValueError(f"{t} has no fixed width")
    return bits


def _flat_values(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    """Raw value bytes of a fixed-width array, honouring its offset."""
    t = array.type
    if pa.types.is_boolean(t):
        data = _bitmap(pc.fill_null(array, False))
    else:
        width = t.bit_width // 8
        raw = array.buffers()[1]
        data = raw[array.offset * width : (array.offset + len(array)) * width] if raw is not None else b""
    return pb.ArrayEncoding(flat=pb.Flat(bits_per_value=_bit_width(t), buffer=buffers.add(data)))


def _nullable(
    array: pa.Array, buffers: _Buffers, values_fn: Callable[[pa.Array, _Buffers], pb.ArrayEncoding]
) -> pb.ArrayEncoding:
    n, nulls = len(array), array.null_count
    if n and nulls == n:
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    if nulls:
        validity = pb.ArrayEncoding(
            flat=pb.Flat(bits_per_value=1, buffer=buffers.add(_bitmap(array.is_valid())))
        )
        values = values_fn(array, buffers)
        return pb.ArrayEncoding(
            nullable=pb.Nullable(some_nulls=pb.Nullable.SomeNull(validity=validity, values=values))
        )
    return pb.ArrayEncoding(
        nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=values_fn(array, buffers)))
    )


def _end_offsets(
    lengths: np.ndarray, valid: np.ndarray | None, buffers: _Buffers
) -> tuple[pb.ArrayEncoding, int, int]:
    """2.0 end offsets: no leading 0; a null row stores ``prev_end + adjustment``."""
    ends = np.cumsum(lengths, dtype=np.uint64)
    total = int(ends[-1]) if len(ends) else 0
    adjustment = total + 1
    if valid is not None and not valid.all():
        ends = ends + np.where(valid, 0, adjustment).astype(np.uint64)
    flat = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=buffers.add(ends.tobytes())))
    offsets = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=flat)))
    return offsets, adjustment, total


def _valid_np(array: pa.Array) -> np.ndarray | None:
    return array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else None


#: A column's ``lance-encoding:compression`` and zstd level (``buffer_compression.compression_hint``).
Compression = tuple[str | None, int | None]
_UNCOMPRESSED: Compression = (None, None)


def _binary(array: pa.Array, buffers: _Buffers, compression: Compression = _UNCOMPRESSED) -> pb.ArrayEncoding:
    """As pylance writes strings and binaries at 2.0; their bytes compressed as a whole where the
    field asks (zstd or LZ4, framed as ``buffer_compression`` frames it; "none" recorded so)."""
    offsets, data = offsets_and_data(array)
    valid = _valid_np(array)
    lengths = np.diff(offsets)
    if valid is not None and lengths[~valid].any():
        # null slots backed by bytes: ``take`` rebuilds the array with empty null slots
        return _binary(array.take(pa.array(np.arange(len(array)))), buffers, compression)
    scheme, level = compression
    if scheme == buffer_compression.FSST:
        return _fsst(array, buffers)
    indices, adjustment, _ = _end_offsets(lengths, valid, buffers)
    raw = data[int(offsets[0]) : int(offsets[-1])].data
    if scheme in (buffer_compression.ZSTD, buffer_compression.LZ4):
        framed = buffer_compression.compress_framed(raw, scheme, level)
        flat = pb.Flat(
            bits_per_value=8,
            buffer=buffers.add(framed),
            compression=pb.Compression(scheme=scheme, level=level),
        )
    elif scheme == buffer_compression.NO_COMPRESSION:
        flat = pb.Flat(bits_per_value=8, buffer=buffers.add(raw), compression=pb.Compression(scheme=scheme))
    else:
        flat = pb.Flat(bits_per_value=8, buffer=buffers.add(raw))
    bytes_enc = pb.ArrayEncoding(flat=flat)
    return pb.ArrayEncoding(binary=pb.Binary(indices=indices, bytes=bytes_enc, null_adjustment=adjustment))


def _fsst(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    """pylance's 2.0 tree under ``lance-encoding:compression=fsst``: the strings' FSST codes as a
    ``binary`` encoding (nulls as there), and the page's symbol table; a page under
    ``fsst_encode.MIN_INPUT_BYTES`` stores its strings as they are, as pylance's does."""
    offsets, data = offsets_and_data(array)
    table, code_offsets, codes = fsst_encode.compress_or_store(offsets, data)
    if int(code_offsets[-1]) >= 2**31:  # a page is far smaller; a single huge value is not
        raise UnsupportedFeatureError(f"{int(code_offsets[-1])} bytes of FSST codes in one 2.0 page")
    valid = _valid_np(array)
    bitmap, nulls = validity_bitmap(valid) if valid is not None else (None, 0)
    coded = pa.Array.from_buffers(
        pa.binary(),
        len(array),
        [bitmap, pa.py_buffer(code_offsets.astype(np.int32)), pa.py_buffer(codes)],
        null_count=nulls,
    )
    return pb.ArrayEncoding(fsst=pb.Fsst(binary=_binary(coded, buffers), symbol_table=table))


def _is_large(t: pa.DataType) -> bool:
    return pa.types.is_large_string(t) or pa.types.is_large_binary(t)


def _fixed_size_list(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    t = array.type
    dim = t.list_size
    items = array.values.slice(array.offset * dim, len(array) * dim)
    inner = _leaf(items, buffers)
    return pb.ArrayEncoding(fixed_size_list=pb.FixedSizeList(dimension=dim, items=inner))


def _dictionary(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    """Arrow dictionary columns, as pylance writes them: 0-based indices; nulls point at a null item."""
    dictionary = array.dictionary
    indices = array.indices
    if indices.null_count:
        dictionary = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
        indices = pc.fill_null(indices, len(dictionary) - 1)
    flat = _flat_values(indices.cast(ARROW_UINT_BY_BITS[indices.type.bit_width]), buffers)
    enc_indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=flat)))
    items = _leaf(dictionary, buffers)
    return pb.ArrayEncoding(
        dictionary=pb.Dictionary(indices=enc_indices, items=items, num_dictionary_items=len(dictionary))
    )


#: pylance 14 dictionary-encodes a 2.0 page of ``string`` values (not large strings or binaries)
#: of at least DICTIONARY_MIN_ROWS rows (nulls count) holding fewer distinct values than
#: DICTIONARY_MAX_DISTINCT (by its HyperLogLog estimate; lance_fw counts them). Measured: 20,000
#: rows of 99 distinct values are a dictionary, of 100 not; 99 rows of 2 values not, 100 rows are.
DICTIONARY_MAX_DISTINCT = 100
DICTIONARY_MIN_ROWS = 100


def _wants_dictionary(array: pa.Array) -> bool:
    return (
        array.type == pa.string()
        and len(array) >= DICTIONARY_MIN_ROWS
        and pc.count_distinct(array, mode="only_valid").as_py() < DICTIONARY_MAX_DISTINCT
    )


def _string_dictionary(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    """A page of few distinct strings as pylance writes it: 1-based u8 indices (0: null), then
    the distinct values in order of first appearance as a ``binary`` tree (a page of nulls only
    gets one empty item, as pylance's: pylance cannot read the empty offsets buffer of none)."""
    encoded = pc.dictionary_encode(array)
    stored = pc.add(pc.fill_null(encoded.indices, -1), 1).cast(pa.uint8())
    indices = pb.ArrayEncoding(
        nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=_flat_values(stored, buffers)))
    )
    dictionary = encoded.dictionary if len(encoded.dictionary) else pa.array([""], pa.string())
    items = _binary(dictionary, buffers)
    return pb.ArrayEncoding(
        dictionary=pb.Dictionary(indices=indices, items=items, num_dictionary_items=len(dictionary))
    )


def _packed_struct(array: pa.Array, buffers: _Buffers) -> pb.ArrayEncoding:
    """As pylance 14 packs a 2.0 struct: each child is encoded alone (its tree over its one buffer,
    index 0), then the children's bytes are interleaved row by row into the page's buffer. The
    writer has checked the children are null-free fixed-width types (``structure_v2_0.shred``)."""
    n = len(array)
    inner: list[pb.ArrayEncoding] = []
    columns: list[np.ndarray] = []
    for i in range(array.type.num_fields):
        own = _Buffers()
        inner.append(_leaf(array.field(i), own))
        if len(own.items) != 1:  # a null-free fixed-width child is one flat buffer
            raise ValueError(
                f"packed struct child {array.type.field(i).name!r} encoded to {len(own.items)} buffers"
            )
        raw = np.frombuffer(own.items[0], np.uint8)
        columns.append(raw.reshape(n, len(raw) // n) if n else raw)
    rows = np.concatenate(columns, axis=1).tobytes() if n and columns else b""
    return pb.ArrayEncoding(packed_struct=pb.PackedStruct(inner=inner, buffer=buffers.add(rows)))


def _leaf(array: pa.Array, buffers: _Buffers, compression: Compression = _UNCOMPRESSED) -> pb.ArrayEncoding:
    t = array.type
    if pa.types.is_struct(t):
        return _packed_struct(array, buffers)
    if is_variable_bytes(t):
        if _wants_dictionary(array):
            return _string_dictionary(array, buffers)
        return _binary(array, buffers, compression)
    if pa.types.is_dictionary(t):
        return _dictionary(array, buffers)
    if pa.types.is_fixed_size_list(t):
        return _nullable(array, buffers, _fixed_size_list)
    if pa.types.is_null(t):
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    return _nullable(array, buffers, _flat_values)


class V20ColumnEncoder:
    """Encodes one column at file version 2.0 (see the module docstring for the trees)."""

    pylance_readable = True  # pages are the trees pylance 14 decodes at this version

    def __init__(self, spec: ColumnSpec) -> None:
        self.spec = spec
        column = spec.column_name
        #: ``lance-encoding:compression`` / ``-level``, checked before any page is encoded
        self.compression: Compression = buffer_compression.compression_hint(
            spec.metadata, f"column {column!r}"
        )
        if self.compression[0] == buffer_compression.FSST and _is_large(spec.arrow_type):
            # pylance 14 panics there (its 2.0 FSST pages hold 32-bit offsets)
            raise UnsupportedFeatureError(
                f"column {column!r}: {buffer_compression.COMPRESSION_META_KEY}=fsst on a "
                f"{spec.arrow_type} column at file version 2.0 (FSST pages there hold 32-bit "
                "offsets); use string/binary, or file version 2.1+"
            )

    def encode(self, array: pa.Array) -> EncodedPage:
        buffers = _Buffers()
        role = self.spec.role
        if role == "struct":
            enc = pb.ArrayEncoding(struct=pb.SimpleStruct())
        elif role == "list":
            valid = _valid_np(array)
            lengths = pc.fill_null(array, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            offsets, adjustment, total = _end_offsets(lengths, valid, buffers)
            enc = pb.ArrayEncoding(
                list=pb.List(offsets=offsets, null_offset_adjustment=adjustment, num_items=total)
            )
        else:
            enc = _leaf(array, buffers, self.compression)
        return EncodedPage(buffers.items, pack_any(enc), len(array))
