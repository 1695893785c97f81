"""Decoders for the 2.0 ``ArrayEncoding`` kinds pylance writes (and ``constant``/``fixed_size_binary``).

Every decoder is vectorised: buffers become Arrow arrays through ``pa.Array.from_buffers`` and numpy,
never a Python loop over values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import any_pb2

from lance_fw._proto import encodings_v2_0_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file import buffer_compression, fsst
from lance_fw.file.buffers import ARROW_UINT_BY_BITS, fixed_bits, offsets_and_data, validity_bitmap
from lance_fw.file.container import parse_message
from lance_fw.file.encoding import KindDecoder, PageInput, check_decoded, decode_kind
from lance_fw.file.structure_v2_0 import LIST_PAGE_TYPE, list_page_rows

FAMILY = "lance.encodings.ArrayEncoding"
TYPE_URL = "/" + FAMILY


class ArrayPageDecoder:
    """The family's page decoder; ``decode_rows`` reads only the requested rows where it can."""

    def __call__(self, encoding: any_pb2.Any, page: PageInput) -> pa.Array:
        enc = parse_message(pb.ArrayEncoding, encoding.value, page.where, "page encoding")
        return decode_kind(FAMILY, enc, page, page.num_rows, page.arrow_type)

    def decode_rows(self, encoding: any_pb2.Any, page: PageInput, rows: np.ndarray) -> pa.Array:
        from .take import take

        enc = parse_message(pb.ArrayEncoding, encoding.value, page.where, "page encoding")
        out = take(enc, page, np.asarray(rows, np.int64), 1, page.arrow_type)
        if out is not None:
            return out
        # a kind replaced by a plugin: the whole page, validated before ``take`` indexes into it
        return check_decoded(self(encoding, page), page.where, page.arrow_type, page.num_rows).take(
            pa.array(rows)
        )


decode_array_page = ArrayPageDecoder()


def _buffer(msg_buffer: pb.Buffer, page: PageInput, has_field: bool) -> memoryview:
    if has_field and msg_buffer.buffer_type != pb.Buffer.page:
        raise CorruptFileError(page.where, "only page buffers are supported in 2.0 encodings")
    index = msg_buffer.buffer_index if has_field else 0
    if index >= len(page.buffers):
        raise CorruptFileError(
            page.where, f"encoding names buffer {index} but the page has {len(page.buffers)}"
        )
    return page.buffers[index]


def _need(buf: memoryview, nbytes: int, page: PageInput, what: str) -> None:
    if len(buf) < nbytes:
        raise CorruptFileError(page.where, f"{what} buffer holds {len(buf)} bytes, needs {nbytes}")


# --- leaves -------------------------------------------------------------------------------------


def flat_compression(msg: pb.Flat) -> str | None:
    """The scheme compressing a flat buffer, None when it is stored as it is. pylance compresses a
    string column's bytes this way when its field metadata asks (``lance-encoding:compression``;
    "none" it records as such): the whole buffer, framed as 2.1's general compression."""
    scheme = msg.compression.scheme if msg.HasField("compression") else ""
    return scheme if scheme not in ("", buffer_compression.NO_COMPRESSION) else None


def _flat(msg: pb.Flat, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    buf = _buffer(msg.buffer, page, msg.HasField("buffer"))
    scheme = flat_compression(msg)
    if scheme is not None:
        if scheme not in (buffer_compression.ZSTD, buffer_compression.LZ4):
            raise UnsupportedEncodingError(f"{page.where}: flat compression {scheme!r} is not supported")
        buf = buffer_compression.decompress_framed(np.frombuffer(buf, np.uint8), scheme, page.where).data
    bits = msg.bits_per_value
    _need(buf, (n * bits + 7) // 8, page, "flat values")
    if pa.types.is_null(arrow_type):
        return pa.nulls(n)
    if pa.types.is_dictionary(arrow_type):
        raise CorruptFileError(page.where, f"flat values cannot be a {arrow_type} column")
    if pa.types.is_fixed_size_list(arrow_type):  # pylance never nests this, but be total
        return pa.FixedSizeListArray.from_arrays(
            _flat(msg, page, n * arrow_type.list_size, arrow_type.value_type), arrow_type.list_size
        )
    if bits != fixed_bits(arrow_type):
        raise CorruptFileError(page.where, f"flat values of {bits} bits cannot be a {arrow_type} column")
    return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(buf)], null_count=0)


def _constant(msg: pb.Constant, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    bits = fixed_bits(arrow_type)
    if bits is None or pa.types.is_dictionary(arrow_type) or len(msg.value) * 8 < bits:
        raise CorruptFileError(
            page.where, f"a constant of {len(msg.value)} bytes cannot be a {arrow_type} column"
        )
    one = pa.Array.from_buffers(arrow_type, 1, [None, pa.py_buffer(msg.value)], null_count=0)
    return pa.repeat(one[0], n) if n else pa.array([], arrow_type)


def _with_validity(values: pa.Array, validity: pa.Array, where: str) -> pa.Array:
    """Attach a boolean validity array to ``values`` (same length)."""
    n = len(values)
    t = values.type
    if len(validity) != n or validity.type != pa.bool_():
        raise CorruptFileError(where, f"{len(validity)} validity bits ({validity.type}) for {n} values")
    if pa.types.is_null(t):
        return values
    if not (
        pa.types.is_primitive(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_dictionary(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_large_binary(t)
    ):
        raise CorruptFileError(where, f"a nullable encoding cannot wrap a {t} column")
    validity = pc.fill_null(validity, False)
    bitmap, nulls = validity_bitmap(validity.to_numpy(zero_copy_only=False))
    if values.offset:
        values = pa.concat_arrays([values, values.slice(0, 0)])
    if pa.types.is_fixed_size_list(t):
        return pa.Array.from_buffers(t, n, [bitmap], null_count=nulls, children=[values.values])
    if pa.types.is_dictionary(t):
        indices = _with_validity(values.indices, validity, where)
        return pa.DictionaryArray.from_arrays(indices, values.dictionary)
    return pa.Array.from_buffers(t, n, [bitmap] + values.buffers()[1:], null_count=nulls)


def _nullable(msg: pb.Nullable, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    kind = msg.WhichOneof("nullability")
    if kind == "no_nulls":
        return decode_kind(FAMILY, msg.no_nulls.values, page, n, arrow_type)
    if kind == "all_nulls":
        return pa.nulls(n, arrow_type)
    if kind == "some_nulls":
        validity = decode_kind(FAMILY, msg.some_nulls.validity, page, n, pa.bool_())
        values = decode_kind(FAMILY, msg.some_nulls.values, page, n, arrow_type)
        return _with_validity(values, validity, page.where)
    raise CorruptFileError(page.where, "nullable encoding without a nullability kind")


def _fixed_size_list(msg: pb.FixedSizeList, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    if not pa.types.is_fixed_size_list(arrow_type):
        raise CorruptFileError(page.where, f"fixed_size_list encoding for a {arrow_type} column")
    dim = msg.dimension
    if dim != arrow_type.list_size:
        raise CorruptFileError(page.where, f"fixed_size_list of dimension {dim} for a {arrow_type} column")
    items = decode_kind(FAMILY, msg.items, page, n * dim, arrow_type.value_type)
    return pa.FixedSizeListArray.from_arrays(items, type=arrow_type)


def _fixed_size_binary(msg: pb.FixedSizeBinary, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    if not pa.types.is_fixed_size_binary(arrow_type) or msg.byte_width != arrow_type.byte_width:
        raise CorruptFileError(
            page.where, f"fixed_size_binary of width {msg.byte_width} for a {arrow_type} column"
        )
    raw = decode_kind(FAMILY, msg.bytes, page, n * msg.byte_width, pa.uint8())
    return pa.Array.from_buffers(arrow_type, n, [None, raw.buffers()[1]], null_count=0, offset=0)


# --- offsets-based kinds -------------------------------------------------------------------------


def _end_offsets(
    enc: pb.ArrayEncoding,
    page: PageInput,
    n: int,
    adjustment: int,
    limit: int | None = None,
    what: str = "offsets",
) -> tuple[np.ndarray, np.ndarray | None]:
    """Decode 2.0 end offsets: returns (n+1 start offsets, validity or None).

    A null row stores its end plus ``adjustment``. The offsets are checked (ascending, and within
    ``limit`` when given) so that a damaged page raises instead of building invalid Arrow.
    """
    ends = decode_kind(FAMILY, enc, page, n, pa.uint64()).to_numpy(zero_copy_only=False)
    offsets = np.zeros(n + 1, dtype=np.int64)
    valid = None
    highest = int(ends.max()) if n else 0
    if adjustment:
        if highest >= 2 * adjustment:
            raise CorruptFileError(
                page.where, f"{what}: an end offset exceeds twice the null adjustment {adjustment}"
            )
        is_valid = ends < adjustment
        if not is_valid.all():  # null rows store their end plus the adjustment
            valid = is_valid
            ends = np.where(is_valid, ends, ends - np.uint64(adjustment))
            highest = int(ends.max())
    if highest >= 2**62:
        raise CorruptFileError(page.where, f"{what}: end offset {highest} is out of range")
    offsets[1:] = ends  # below 2**62: the cast to int64 keeps every value
    if n and np.less(offsets[1:], offsets[:-1]).any():
        raise CorruptFileError(page.where, f"{what} are not ascending")
    if limit is not None and offsets[-1] > limit:
        raise CorruptFileError(page.where, f"{what} reach {int(offsets[-1])}, past the {limit} values stored")
    return offsets, valid


def binary_value_type(arrow_type: pa.DataType) -> pa.DataType | None:
    """The string/binary type a ``binary`` encoding holds for a column of ``arrow_type`` (its
    dictionary's value type for a dictionary column), or None when the column cannot hold one."""
    value_type = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if (
        pa.types.is_string(value_type)
        or pa.types.is_binary(value_type)
        or pa.types.is_large_string(value_type)
        or pa.types.is_large_binary(value_type)
    ):
        return value_type
    return None


def _binary(msg: pb.Binary, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    value_type = binary_value_type(arrow_type)
    if value_type is None:
        raise CorruptFileError(page.where, f"binary encoding for a {arrow_type} column")
    offsets, valid = _end_offsets(msg.indices, page, n, msg.null_adjustment)
    total = int(offsets[-1])
    data = (
        decode_kind(FAMILY, msg.bytes, page, total, pa.uint8()).buffers()[1] if total else pa.py_buffer(b"")
    )
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    small = arrow_type in (pa.string(), pa.binary())
    if small and total >= 2**31:
        raise CorruptFileError(page.where, f"{total} bytes in one page exceed the {arrow_type} offset range")
    offs = pa.py_buffer(offsets.astype(np.int32 if small else np.int64))
    bitmap, nulls = validity_bitmap(valid) if valid is not None else (None, 0)
    return pa.Array.from_buffers(arrow_type, n, [bitmap, offs, data], null_count=nulls)


def fsst_codes_type(value_type: pa.DataType) -> pa.DataType:
    """The binary type an ``Fsst`` encoding's inner ``binary`` decodes to for a column of
    ``value_type``: the codes are bytes, not text, with the column's offset width."""
    return pa.large_binary() if value_type in (pa.large_string(), pa.large_binary()) else pa.binary()


def fsst_values(codes: pa.Array, symbol_table: bytes, value_type: pa.DataType, where: str) -> pa.Array:
    """The strings (of ``value_type``) that ``codes``, each row's FSST codes, expand to with
    ``symbol_table``; a null row stays null (its codes are empty)."""
    offsets, data = offsets_and_data(codes)
    out_offsets, out_data = fsst.decompress(symbol_table, offsets, data, where)
    small = value_type in (pa.string(), pa.binary())
    if small and int(out_offsets[-1]) >= 2**31:
        raise CorruptFileError(
            where, f"{int(out_offsets[-1])} decompressed bytes exceed the {value_type} offset range"
        )
    bitmap = codes.buffers()[0] if codes.null_count else None
    if bitmap is not None and codes.offset:  # validity of a sliced array: rebuilt from its rows
        bitmap, _ = validity_bitmap(codes.is_valid().to_numpy(zero_copy_only=False))
    return pa.Array.from_buffers(
        value_type,
        len(codes),
        [bitmap, pa.py_buffer(out_offsets.astype(np.int32 if small else np.int64)), pa.py_buffer(out_data)],
        null_count=codes.null_count,
    )


def _fsst(msg: pb.Fsst, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    """pylance's 2.0 string pages under ``lance-encoding:compression=fsst``: the strings' FSST
    codes as a ``binary`` encoding, and the page's symbol table (a table with its encoder switch
    off, as pylance writes for a small page, stores the strings as they are)."""
    value_type = binary_value_type(arrow_type)
    if value_type is None:
        raise CorruptFileError(page.where, f"fsst encoding for a {arrow_type} column")
    if not msg.HasField("binary"):
        raise CorruptFileError(page.where, "fsst encoding without its codes")
    codes = decode_kind(FAMILY, msg.binary, page, n, fsst_codes_type(value_type))
    return fsst_values(codes, msg.symbol_table, value_type, page.where)


def _list(msg: pb.List, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    """A 2.0 list page decodes to per-row item counts with the list validity (``LIST_PAGE_TYPE``);
    the items come from the next column."""
    if arrow_type != LIST_PAGE_TYPE:
        raise CorruptFileError(page.where, f"list encoding for a {arrow_type} column")
    offsets, valid = _end_offsets(msg.offsets, page, n, msg.null_offset_adjustment, what="list offsets")
    if int(offsets[-1]) != msg.num_items:
        raise CorruptFileError(
            page.where, f"list offsets end at {int(offsets[-1])}, the page says it has {msg.num_items} items"
        )
    return list_page_rows(np.diff(offsets), valid)


def _dictionary(msg: pb.Dictionary, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    """Two forms, told apart by the column's type (as pylance does).

    * Arrow dictionary columns: 0-based indices; a null value is an index of a null item.
    * plain columns pylance chose to dictionary-encode: 1-based indices, 0 = null.
    """
    is_dict = pa.types.is_dictionary(arrow_type)
    value_type = arrow_type.value_type if is_dict else arrow_type
    k = msg.num_dictionary_items
    items = decode_kind(FAMILY, msg.items, page, k, value_type)
    idx = decode_kind(FAMILY, msg.indices, page, n, _index_type(msg.indices, page.where)).to_numpy(
        zero_copy_only=False
    )
    return dictionary_values(idx.astype(np.int64), items, k, is_dict, arrow_type, page)


def dictionary_values(
    idx: np.ndarray, items: pa.Array, k: int, is_dict: bool, arrow_type: pa.DataType, page: PageInput
) -> pa.Array:
    """Stored dictionary indices (either form) and the items -> the column's values."""
    if not is_dict:
        idx = idx - 1
    if idx.size and (idx.max() >= k or idx.min() < -1):
        raise CorruptFileError(page.where, f"dictionary index out of range for {k} items")
    valid = idx >= 0
    if is_dict and items.null_count:
        valid &= items.is_valid().to_numpy(zero_copy_only=False)[np.maximum(idx, 0)]
    indices = pa.array(np.where(valid, idx, 0), mask=None if valid.all() else ~valid)
    if is_dict:
        if k > 1 and k - 1 > np.iinfo(arrow_type.index_type.to_pandas_dtype()).max:
            raise CorruptFileError(
                page.where, f"{k} dictionary items overflow {arrow_type.index_type} indices"
            )
        return pa.DictionaryArray.from_arrays(indices.cast(arrow_type.index_type), items)
    return items.take(indices)


def _index_type(enc: pb.ArrayEncoding, where: str) -> pa.DataType:
    """The unsigned type matching the innermost flat width of an index encoding."""
    while True:
        kind = enc.WhichOneof("array_encoding")
        if kind == "flat":
            width = enc.flat.bits_per_value
            if width not in ARROW_UINT_BY_BITS:
                raise CorruptFileError(where, f"dictionary indices of {width} bits")
            return ARROW_UINT_BY_BITS[width]
        if kind == "nullable":
            inner = enc.nullable
            enc = inner.no_nulls.values if inner.HasField("no_nulls") else inner.some_nulls.values
        else:
            return pa.uint32()


def _struct(msg: pb.SimpleStruct, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    """A 2.0 struct column holds no data, only its row count."""
    if not pa.types.is_null(arrow_type):
        raise CorruptFileError(page.where, f"struct encoding for a {arrow_type} column")
    return pa.nulls(n)


def _packed_width(t: pa.DataType, where: str) -> int:
    """Bytes one value of a packed-struct child of type ``t`` takes in a row."""
    if pa.types.is_fixed_size_list(t):
        return t.list_size * _packed_width(t.value_type, where)
    bits = fixed_bits(t)
    if bits is None or bits % 8 or pa.types.is_boolean(t) or pa.types.is_dictionary(t):
        raise CorruptFileError(where, f"a packed struct cannot hold a {t} field")
    return bits // 8


def _packed_layout(msg: pb.PackedStruct, arrow_type: pa.DataType, where: str) -> list[int]:
    """Byte width of each child in a packed row, once the page's children match the column's."""
    if not pa.types.is_struct(arrow_type) or arrow_type.num_fields != len(msg.inner) or not msg.inner:
        raise CorruptFileError(where, f"packed struct of {len(msg.inner)} fields for a {arrow_type} column")
    return [_packed_width(f.type, where) for f in arrow_type]


def unpack_rows(
    msg: pb.PackedStruct, raw: np.ndarray, n: int, arrow_type: pa.DataType, page: PageInput
) -> pa.Array:
    """``n`` packed rows (``raw``: their bytes end to end) -> the struct array. Each child's bytes
    are cut out of the rows and decoded by its own tree, which reads them as its buffer 0."""
    widths = _packed_layout(msg, arrow_type, page.where)
    row = sum(widths)
    if len(raw) < n * row:
        raise CorruptFileError(page.where, f"packed struct buffer holds {len(raw)} bytes, needs {n * row}")
    table = raw[: n * row].reshape(n, row)
    children, at = [], 0
    for f, width, inner in zip(arrow_type, widths, msg.inner):
        part = np.ascontiguousarray(table[:, at : at + width]).reshape(-1)
        at += width
        sub = PageInput([part.data], n, f.type, f"{page.where}, packed field {f.name!r}")
        children.append(decode_kind(FAMILY, inner, sub, n, f.type))
    return pa.StructArray.from_arrays(children, fields=list(arrow_type))


def _packed_struct(msg: pb.PackedStruct, page: PageInput, n: int, arrow_type: pa.DataType) -> pa.Array:
    """A 2.0 packed struct: one buffer of whole rows, each the children's values side by side."""
    buf = _buffer(msg.buffer, page, msg.HasField("buffer"))
    return unpack_rows(msg, np.frombuffer(buf, np.uint8), n, arrow_type, page)


def take_packed(msg: pb.PackedStruct, page: PageInput, rows: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """Rows ``rows`` of a packed-struct page: only their bytes are read (a row is contiguous)."""
    row = sum(_packed_layout(msg, arrow_type, page.where))
    if msg.HasField("buffer") and msg.buffer.buffer_type != pb.Buffer.page:
        raise CorruptFileError(page.where, "only page buffers are supported in 2.0 encodings")
    index = msg.buffer.buffer_index
    parts = page.read_parts([(index, int(r) * row, row) for r in rows])
    raw = np.frombuffer(b"".join(parts), np.uint8)
    return unpack_rows(msg, raw, len(rows), arrow_type, page)


KIND_DECODERS: dict[str, KindDecoder] = {
    "flat": _flat,
    "constant": _constant,
    "nullable": _nullable,
    "fixed_size_list": _fixed_size_list,
    "fixed_size_binary": _fixed_size_binary,
    "binary": _binary,
    "fsst": _fsst,
    "list": _list,
    "dictionary": _dictionary,
    "struct": _struct,
    "packed_struct": _packed_struct,
}
