"""Full-zip values: per-value variable-width data located by the layout's offsets (strings,
binary, 2.2 blob descriptors as variable packed structs) and fixed-width value grids.

Split from ``compressive`` (the per-buffer codecs it builds on) because full-zip pages hand values
over already located, so these decoders take offsets rather than buffers.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file import buffer_compression, fsst
from lance_fw.file.buffers import ARROW_UINT_BY_BITS, RawBytes, as_u8, gather_ranges, gather_rows

from .compressive import SCHEME_NAMES, _check_offsets, _decode_block, _name
from .decoded_values import DecodedValues


def decode_fullzip_variable(
    enc: pb.CompressiveEncoding, offsets: np.ndarray, data: RawBytes, where: str = "full-zip values"
) -> DecodedValues:
    """Decode the per-value payloads of a variable-width FullZip page.

    ``offsets`` (n+1) locate each value's stored bytes (the length prefixes already
    stripped) in ``data``.  ``variable`` passes through, ``fsst`` decompresses with the
    symbol table, ``general`` decompresses each value (one zstd/LZ4 frame per value).
    """
    raw = as_u8(data)
    offs = np.asarray(offsets, np.int64)
    _check_offsets(offs, raw.size, where, "full-zip")
    n = offs.size - 1
    kind = _name(enc)
    if kind == "variable":
        return DecodedValues("variable", n, raw[offs[0] : offs[-1]], offsets=offs - offs[0])
    if kind == "fsst":
        o, d = fsst.decompress(enc.fsst.symbol_table, offs, raw, where)
        return DecodedValues("variable", n, d, offsets=o)
    if kind == "variable_packed_struct":
        return _variable_packed_struct(enc.variable_packed_struct, offs, raw, where)
    if kind == "general":
        scheme = SCHEME_NAMES.get(enc.general.compression.scheme)
        if scheme is None:
            raise UnsupportedEncodingError(
                f"{where}: unknown general compression scheme {enc.general.compression.scheme}"
            )
        out_offs, out = buffer_compression.decompress_each(raw, offs, scheme, where)
        return DecodedValues("variable", n, out, offsets=out_offs)
    raise UnsupportedEncodingError(f"{where}: {kind} is not supported for full-zip variable values")


def _variable_packed_struct(
    msg: pb.VariablePackedStruct, offs: np.ndarray, raw: np.ndarray, where: str
) -> DecodedValues:
    """Rows of fixed-width fields and length-prefixed variable fields, one row per value (the 2.2
    blob descriptor). Decoded column by column over all rows at once."""
    n = offs.size - 1
    pos = offs[:-1].copy()
    children = []
    for i, f in enumerate(msg.fields):
        layout = f.WhichOneof("layout")
        if layout == "bits_per_value":
            width = f.bits_per_value // 8
            t = ARROW_UINT_BY_BITS.get(f.bits_per_value)
            if t is None or f.bits_per_value % 8:
                raise UnsupportedEncodingError(f"{where}: packed struct field of {f.bits_per_value} bits")
            if n and (pos + width > offs[1:]).any():
                raise CorruptFileError(where, f"packed struct field {i} overruns its row")
            cols = gather_rows(raw, pos, width)
            data = np.ascontiguousarray(cols).reshape(-1)
            children.append(pa.Array.from_buffers(t, n, [None, pa.py_buffer(data)], null_count=0))
            pos = pos + width
        elif layout == "bits_per_length":
            if f.bits_per_length not in (32, 64):
                raise CorruptFileError(where, f"packed struct field {i}: lengths of {f.bits_per_length} bits")
            width = f.bits_per_length // 8
            if n and (pos + width > offs[1:]).any():
                raise CorruptFileError(where, f"packed struct field {i} overruns its row")
            lens = gather_rows(raw, pos, width)
            lengths = (
                np.ascontiguousarray(lens).view("<u4" if width == 4 else "<u8").reshape(-1).astype(np.int64)
            )
            starts = pos + width
            if n and ((lengths < 0).any() or (starts + lengths > offs[1:]).any()):
                raise CorruptFileError(where, f"packed struct field {i} overruns its row")
            out_offs = np.zeros(n + 1, np.int64)
            np.cumsum(lengths, out=out_offs[1:])
            body = gather_ranges(raw, starts, lengths)
            children.append(
                pa.Array.from_buffers(
                    pa.large_binary(), n, [None, pa.py_buffer(out_offs), pa.py_buffer(body)], null_count=0
                )
            )
            pos = starts + lengths
        else:
            raise CorruptFileError(where, f"packed struct field {i} has no layout")
    array = pa.StructArray.from_arrays(children, names=[f"f{i}" for i in range(len(children))])
    return DecodedValues("arrow", n, array=array)


def decode_fullzip_fixed(
    enc: pb.CompressiveEncoding, data: RawBytes, num_values: int, where: str = "full-zip values"
) -> DecodedValues:
    """Decode the concatenated fixed-width values of a FullZip page (flat / fixed_size_list)."""
    return _decode_block(enc, as_u8(data), num_values, where)
