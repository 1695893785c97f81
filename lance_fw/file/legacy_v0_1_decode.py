"""Decoding the pages of a legacy Lance v1 (file format 0.1) data file.

A 0.1 file stores each field, batch by batch, as one "page" located by the page table as
(position, length). What a page holds depends on the field's ``encoding`` and logical type (learnt
from files pylance 14 writes with ``data_storage_version="legacy"``):

- PLAIN fixed width (ints, floats, dates, times, decimals, fixed size binary, fixed size lists of
  those): ``length`` values packed back to back; booleans one bit per value (LSB first).
- VAR_BINARY (string / binary, either offset width): the value bytes, then at ``position``
  ``length + 1`` little-endian i64 offsets that are *absolute file positions* of each value.
- lists (PLAIN encoding, logical type list / large_list / list.struct): ``length = rows + 1``
  offsets (i32, or i64 for large lists) counted from 0 in each batch into the child's page of the
  same batch.
- structs (NONE): no page of their own (page table entry (0, 0)); children hold the values.
- DICTIONARY: PLAIN indices; the dictionary values sit once per file at the field's
  ``dictionary`` (offset, length), VAR_BINARY for strings and binaries, PLAIN otherwise.

The format keeps no validity: pylance writes whatever bytes lie under a null slot (zeros in
practice) and reads them back as values, except that a zero-length string or binary of a
*nullable* field reads as null. A null list reads as an empty list, a null struct as a struct of its
children's values. This decoder returns exactly what pylance returns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lance_fw._proto import file_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.schema import LanceField

#: Bytes of one offset of a VAR_BINARY page (absolute file positions, i64).
VAR_BINARY_OFFSET_BYTES = 8
#: Bytes of one offset of a list page, by logical type.
LIST_OFFSET_BYTES = {"list": 4, "list.struct": 4, "large_list": 8, "large_list.struct": 8}
#: Variable-width types with 32-bit Arrow offsets: their values of one read must stay under this.
MAX_SMALL_OFFSET = 2**31 - 1

#: Reads ``length`` bytes at ``position`` of the file (``what`` names them in errors).
Fetch = Callable[[int, int, str], bytes]
#: The page of a field id in a batch: (position, length).
PageOf = Callable[[int, int], tuple[int, int]]


def fixed_width_bits(t: pa.DataType) -> int | None:
    """Bits per value of a PLAIN page of type ``t`` (fixed size lists flattened), or None."""
    if pa.types.is_fixed_size_list(t):
        inner = fixed_width_bits(t.value_type)
        return None if inner is None or inner == 1 else inner * t.list_size
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t):
        return int(t.byte_width) * 8
    try:
        bits = int(t.bit_width)
    except ValueError:
        return None
    return bits if bits % 8 == 0 or bits == 1 else None


class LegacyPageDecoder:
    """Decodes rows of one field in one batch of a 0.1 file.

    ``fetch`` reads bytes, ``page_of`` looks up the page table, ``file_fields`` are the file's own
    fields by id (their messages carry the encodings and the dictionary locations)."""

    def __init__(self, path: str, fetch: Fetch, page_of: PageOf, file_fields: dict[int, LanceField]):
        self.path, self._fetch, self._page_of, self._fields = path, fetch, page_of, file_fields
        self._dictionaries: dict[int, pa.Array] = {}

    def decode(self, field: LanceField, batch: int, lo: int, hi: int) -> pa.Array:
        """Values [lo, hi) of ``field``'s page in ``batch``, typed ``field.arrow_type()``."""
        t = field.arrow_type()
        if field.logical_type == "null":
            return pa.nulls(hi - lo)
        if field.is_struct:
            return self._struct(field, t, batch, lo, hi)
        if field.is_list:
            return self._list(field, t, batch, lo, hi)
        pb = self._pb(field)
        if pb.encoding == file_pb2.VAR_BINARY:
            pos, _length = self._page(field, batch, hi)
            return self._var_binary(pos, lo, hi, t, self._fields[field.id].nullable, field.name)
        if pb.encoding == file_pb2.DICTIONARY and pa.types.is_dictionary(t):
            pos, _length = self._page(field, batch, hi)
            indices = self._plain(pos, lo, hi, t.index_type, field.name)
            values = self.dictionary(field, pb, t.value_type)
            raw = indices.to_numpy(zero_copy_only=False).astype(np.int64)
            if len(raw) and (raw.min() < 0 or raw.max() >= len(values)):
                raise CorruptFileError(
                    self.path,
                    f"field {field.name!r} batch {batch}: dictionary index out of range "
                    f"(dictionary has {len(values)} values)",
                )
            return pa.DictionaryArray.from_arrays(indices, values).cast(t)
        if pb.encoding == file_pb2.PLAIN:
            pos, _length = self._page(field, batch, hi)
            return self._plain(pos, lo, hi, t, field.name)
        raise UnsupportedFeatureError(
            f"{self.path}: field {field.name!r} ({field.logical_type}) uses the 0.1 encoding "
            f"{file_pb2.Encoding.Name(pb.encoding) if pb.encoding in file_pb2.Encoding.values() else pb.encoding}"
            ", which lance_fw cannot read"
        )

    # -- structure ----------------------------------------------------------------------------
    def _pb(self, field: LanceField) -> file_pb2.Field:
        own = self._fields.get(field.id)
        if own is None or own.pb is None:
            raise CorruptFileError(self.path, f"field {field.name!r} (id {field.id}) is not in this file")
        if own.logical_type != field.logical_type:
            raise CorruptFileError(
                self.path,
                f"field {field.name!r} is {own.logical_type} in the file but {field.logical_type} in the dataset",
            )
        return own.pb

    def _page(self, field: LanceField, batch: int, hi: int) -> tuple[int, int]:
        """The page of ``field`` in ``batch``, checked to hold at least ``hi`` values."""
        pos, length = self._page_of(field.id, batch)
        if hi > length:
            raise CorruptFileError(
                self.path, f"field {field.name!r} batch {batch}: page holds {length} values, need {hi}"
            )
        return pos, length

    def _struct(self, field: LanceField, t: pa.DataType, batch: int, lo: int, hi: int) -> pa.Array:
        self._pb(field)
        if not field.children:
            return pa.array([{}] * (hi - lo), t)
        children = [self.decode(c, batch, lo, hi) for c in field.children]
        return pa.StructArray.from_arrays(children, fields=[c.to_arrow() for c in field.children])

    def _list(self, field: LanceField, t: pa.DataType, batch: int, lo: int, hi: int) -> pa.Array:
        self._pb(field)
        width = LIST_OFFSET_BYTES[field.logical_type]
        pos, _length = self._page(field, batch, hi + 1)
        raw = self._fetch(pos + lo * width, (hi - lo + 1) * width, f"list offsets of {field.name!r}")
        offsets = np.frombuffer(raw, f"<i{width}").astype(np.int64)
        if len(offsets) > 1 and (offsets[0] < 0 or (np.diff(offsets) < 0).any()):
            raise CorruptFileError(self.path, f"field {field.name!r} batch {batch}: list offsets decrease")
        child = field.children[0]
        items = self.decode(child, batch, int(offsets[0]), int(offsets[-1]))
        rebased = pa.array(offsets - offsets[0], pa.int64() if width == 8 else pa.int32())
        cls = pa.LargeListArray if width == 8 else pa.ListArray
        return cls.from_arrays(rebased, items, type=t)

    # -- leaves -------------------------------------------------------------------------------
    def _plain(self, pos: int, lo: int, hi: int, t: pa.DataType, name: str) -> pa.Array:
        bits = fixed_width_bits(t)
        if bits is None:
            raise UnsupportedFeatureError(
                f"{self.path}: field {name!r} has type {t}, which lance_fw cannot read from a 0.1 file"
            )
        n = hi - lo
        if bits == 1:
            first, last = lo // 8, (hi + 7) // 8
            data = self._fetch(pos + first, last - first, f"values of {name!r}")
            return pa.Array.from_buffers(t, n, [None, pa.py_buffer(data)], offset=lo % 8)
        width = bits // 8
        data = self._fetch(pos + lo * width, n * width, f"values of {name!r}")
        return _fixed_array(t, n, pa.py_buffer(data))

    def _var_binary(self, pos: int, lo: int, hi: int, t: pa.DataType, nullable: bool, name: str) -> pa.Array:
        raw = self._fetch(
            pos + lo * VAR_BINARY_OFFSET_BYTES,
            (hi - lo + 1) * VAR_BINARY_OFFSET_BYTES,
            f"value offsets of {name!r}",
        )
        positions = np.frombuffer(raw, "<i8")
        lengths = np.diff(positions)
        if len(lengths) and (lengths < 0).any():
            raise CorruptFileError(self.path, f"field {name!r}: value offsets decrease")
        start, stop = int(positions[0]), int(positions[-1])
        data = self._fetch(start, stop - start, f"values of {name!r}") if stop > start else b""
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        if not large and stop - start > MAX_SMALL_OFFSET:
            raise UnsupportedFeatureError(
                f"{self.path}: field {name!r}: {stop - start} bytes of {t} values in one read "
                "exceed 32-bit offsets"
            )
        offsets = (positions - start).astype(np.int64 if large else np.int32)
        validity = None
        if nullable and len(lengths) and not lengths.all():  # pylance: empty means null when nullable
            validity = pa.array(lengths != 0).buffers()[1]
        n = len(lengths)
        out = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            try:
                out.validate(full=True)
            except pa.ArrowInvalid as exc:
                raise CorruptFileError(self.path, f"field {name!r}: invalid UTF-8 ({exc})") from None
        return out

    def dictionary(self, field: LanceField, pb: file_pb2.Field, value_type: pa.DataType) -> pa.Array:
        """The dictionary values of ``field`` (read once per file): never null, as pylance reads them."""
        found = self._dictionaries.get(field.id)
        if found is not None:
            return found
        offset, length = int(pb.dictionary.offset), int(pb.dictionary.length)
        if offset < 0 or length <= 0:
            raise CorruptFileError(self.path, f"field {field.name!r}: no dictionary values (offset {offset})")
        if fixed_width_bits(value_type) is None:
            values = self._var_binary(offset, 0, length, value_type, False, field.name)
        else:
            values = self._plain(offset, 0, length, value_type, field.name)
        self._dictionaries[field.id] = values
        return values


def _fixed_array(t: pa.DataType, n: int, data: pa.Buffer) -> pa.Array:
    """``n`` values of fixed-width ``t`` (fixed size lists flattened) packed in ``data``."""
    if pa.types.is_fixed_size_list(t):
        inner = _fixed_array(t.value_type, n * t.list_size, data)
        return pa.FixedSizeListArray.from_arrays(inner, type=t)
    return pa.Array.from_buffers(t, n, [None, data])
