"""Pages of a 2.2 blob v2 column: one descriptor per row, as pylance 14 writes them.

Why its own encoder: a descriptor (``kind u8, position u64, size u64, blob_id u32, blob_uri
string``) holds a variable-width field, so it is not a fixed-width packed struct (mini-block). pylance
stores each row as one full-zip value: the fields side by side, the uri after its u32 length
(``VariablePackedStruct``), the row's bytes after a u32 length of their own. This encoder builds
those row bytes and hands them to the full-zip writer as plain binary values, then names their
encoding. The bytes the descriptors point at are written by ``lance_fw.table.blob_v2_write``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.file.buffer_compression import COMPRESSION_META_KEY
from lance_fw.file.buffers import range_positions
from lance_fw.file.container import parse_message
from lance_fw.file.encoding import ColumnSpec, EncodedPage, pack_any
from lance_fw.schema import BLOB_DESCRIPTOR

from .encode import V21ColumnEncoder, _shred
from .shred import Shredded
from .value_encode import flat

#: Bits of the descriptor's fixed-width fields (kind, position, size, blob_id), in order.
FIXED_FIELD_BITS = (8, 64, 64, 32)
#: Bits of the uri's length prefix inside a row.
URI_LENGTH_BITS = 32
_FIXED_DTYPES = ("<u1", "<u8", "<u8", "<u4")
_FIXED_BYTES = sum(FIXED_FIELD_BITS) // 8


def descriptor_encoding() -> pb.CompressiveEncoding:
    """The ``VariablePackedStruct`` naming a descriptor row's fields."""
    fields = [
        pb.VariablePackedStruct.FieldEncoding(value=flat(bits), bits_per_value=bits)
        for bits in FIXED_FIELD_BITS
    ]
    fields.append(
        pb.VariablePackedStruct.FieldEncoding(
            value=pb.CompressiveEncoding(variable=pb.Variable(offsets=flat(URI_LENGTH_BITS))),
            bits_per_length=URI_LENGTH_BITS,
        )
    )
    return pb.CompressiveEncoding(variable_packed_struct=pb.VariablePackedStruct(fields=fields))


def descriptor_rows(descriptors: pa.StructArray) -> pa.Array:
    """Each descriptor as one binary value of its packed fields (null where it is null)."""
    n = len(descriptors)
    columns = [descriptors.field(i) for i in range(len(BLOB_DESCRIPTOR))]
    uris = columns[-1].cast(pa.large_binary())
    uri_offsets = np.frombuffer(uris.buffers()[1], np.int64)[uris.offset : uris.offset + n + 1]
    uri_lengths = np.diff(uri_offsets)
    uri_data = np.frombuffer(uris.buffers()[2] or b"", np.uint8)
    row_sizes = _FIXED_BYTES + URI_LENGTH_BITS // 8 + uri_lengths
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(row_sizes, out=starts[1:])
    out = np.zeros(int(starts[-1]), np.uint8)
    at = starts[:-1].copy()
    fixed = [c.fill_null(0).to_numpy(zero_copy_only=False).astype(d) for c, d in zip(columns, _FIXED_DTYPES)]
    for values, dtype in zip([*fixed, uri_lengths.astype("<u4")], [*_FIXED_DTYPES, "<u4"]):
        width = np.dtype(dtype).itemsize
        out[(at[:, None] + np.arange(width)[None, :]).reshape(-1)] = values.view(np.uint8)
        at += width
    out[range_positions(at, uri_lengths)] = uri_data[range_positions(uri_offsets[:-1], uri_lengths)]
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [_validity(descriptors), pa.py_buffer(starts.astype(np.int32)), pa.py_buffer(out)],
    )


def _validity(array: pa.Array) -> pa.Buffer | None:
    """The validity bitmap of ``array`` starting at its first row (None when no row is null)."""
    if array.null_count == 0:
        return None
    return pa.array(array.is_valid().to_numpy(zero_copy_only=False)).buffers()[1]


class BlobDescriptorEncoder(V21ColumnEncoder):
    """The encoder of a blob v2 column's descriptors (pages pylance 14 reads)."""

    pylance_readable = True

    def __init__(self, spec: ColumnSpec):
        # row bytes are stored as they are (pylance does not compress descriptors)
        raw = dataclasses.replace(spec, metadata={**spec.metadata, COMPRESSION_META_KEY: "none"})
        super().__init__(raw)

    def encode(self, array: pa.Array) -> EncodedPage:
        page = super().encode(descriptor_rows(array))
        layout = parse_message(pb.PageLayout, page.encoding.value, "blob descriptors", "page layout")
        if layout.WhichOneof("layout") == "full_zip_layout":
            layout.full_zip_layout.value_compression.CopyFrom(descriptor_encoding())
        else:  # an all-null page: levels only, no values to name
            return page
        return EncodedPage(page.buffers, pack_any(layout), page.num_rows)

    def _encode(self, array: pa.Array) -> EncodedPage:
        sh = _shred_rows(array)
        if sh is None:
            return super()._encode(array)
        return self._full_zip(sh, len(array))


def _shred_rows(array: pa.Array) -> Shredded | None:
    """Row values always go full-zip (a take reads one descriptor); None: the parent decides
    (an all-null page is levels only)."""
    if array.null_count == len(array):
        return None
    return _shred(array, ())
