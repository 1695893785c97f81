"""Decoders for the 2.1/2.2 compressive encodings (``lance.encodings21.CompressiveEncoding``):
encoded buffers in, ``DecodedValues`` (``decoded_values``) out.

Spec: lance-format.md §5.3-5.5.  Everything here is vectorised with numpy / pyarrow; the
only Python loops run over encoding-tree nodes, FastLanes blocks or full-zip values that
are individually compressed frames.

Contexts
--------
``"miniblock"``
    ``buffers`` are the value buffers of one mini-block chunk, in order (each already cut
    to its exact size from the chunk header).  ``num_values`` is the chunk's value count.
``"block"``
    ``buffers`` is one whole buffer (a dictionary page buffer, a 2.2 rep/def block, a
    constant page value ...).

Buffer formats per encoding (miniblock / block):

==================== ===================================================================
flat                 raw LE values (bools LSB-first bit-packed); ``Flat.data`` = general
                     compression of that buffer
variable             mini-block: ``(n+1)`` u32/u64 offsets relative to the buffer start,
                     then the bytes.  block: ``u32 32 | u32 data_start | offsets | data``
                     or ``u32 64 | u32 0 | u64 data_start | offsets | data``
inline_bitpacking    FastLanes blocks, each a T-bit width word then ``1024*W/T`` words
out_of_line_bp       FastLanes blocks with the fixed width of ``values.flat``
rle                  mini-block: 2 buffers (values, u8 run lengths).  block:
                     ``u64 values_byte_len | values | u8 run lengths``
fsst                 symbol table in the message, strings through ``values`` (Variable)
general              LZ4 (u32 size prefix + block) / ZSTD (frame, optionally u64 size
                     prefix).  mini-block: compresses only the first buffer
fixed_size_list      ``has_validity``: item validity bitmap buffer, then the values
byte_stream_split    byte planes of ``values.flat`` (32/64 bit)
packed_struct        row-major fixed-width rows (``values`` = Flat of the summed width)
constant             no buffers; ``value`` repeated
==================== ===================================================================
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file import buffer_compression, fsst
from lance_fw.file.buffers import UINT_BY_BITS, RawBytes, as_u8, gather_ranges

from . import fastlanes
from .decoded_values import DecodedValues as DecodedValues
from .decoded_values import concat as concat
from .decoded_values import present as present
from .decoded_values import split_packed_struct as split_packed_struct

CONTEXTS = ("miniblock", "block")

LZ4 = pb.COMPRESSION_ALGORITHM_LZ4
ZSTD = pb.COMPRESSION_ALGORITHM_ZSTD
#: General compression's scheme enum as the shared framing (``buffer_compression``) names it.
SCHEME_NAMES = {LZ4: buffer_compression.LZ4, ZSTD: buffer_compression.ZSTD}
#: A block-form variable buffer starts ``u32 bits per offset | u32 data start`` (32-bit offsets)
#: or ``u32 bits | u32 unused | u64 data start`` (64-bit offsets); the offsets follow.
VARIABLE_BLOCK_HEADER_32 = struct.Struct("<II")
VARIABLE_BLOCK_HEADER_64 = struct.Struct("<IIQ")
#: Block-form RLE starts with the u64 byte length of its run values.
RLE_VALUES_LENGTH = struct.Struct("<Q")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


class _Buffers:
    """Hands out the buffers of a chunk in order."""

    def __init__(self, buffers: Sequence[RawBytes], where: str) -> None:
        self.buffers: list[RawBytes] = list(buffers)
        self.pos = 0
        self.where = where

    def take(self, what: str) -> np.ndarray:
        if self.pos >= len(self.buffers):
            raise CorruptFileError(
                self.where, f"{what}: the chunk has only {len(self.buffers)} value buffer(s)"
            )
        b = self.buffers[self.pos]
        self.pos += 1
        return as_u8(b)


def _name(enc: pb.CompressiveEncoding) -> str:
    return enc.WhichOneof("compression") or "<unset>"


def decompress_buffer(data: RawBytes, compression: pb.BufferCompression, where: str) -> np.ndarray:
    """General (LZ4 / ZSTD) decompression of one buffer (``buffer_compression`` frames it)."""
    name = SCHEME_NAMES.get(compression.scheme)
    if name is None:
        raise UnsupportedEncodingError(f"{where}: unknown general compression scheme {compression.scheme}")
    return buffer_compression.decompress_framed(as_u8(data), name, where)


def _fixed(raw: np.ndarray, bits: int, n: int, where: str, what: str = "flat") -> DecodedValues:
    if bits == 1:
        need = (n + 7) // 8
    elif bits % 8 == 0 and bits > 0:
        need = n * (bits // 8)
    else:
        raise UnsupportedEncodingError(f"{where}: {what} with {bits} bits per value")
    if raw.size < need:
        raise CorruptFileError(
            where, f"{what}: {n} values of {bits} bits need {need} bytes, buffer has {raw.size}"
        )
    raw = raw[:need]
    dt = UINT_BY_BITS.get(bits)
    if dt is not None:
        if raw.ctypes.data % dt.itemsize:
            raw = raw.copy()
        return DecodedValues("fixed", n, raw.view(dt), bits)
    return DecodedValues("fixed", n, raw, bits)


def _flat_bits(enc: pb.CompressiveEncoding, where: str, what: str) -> int:
    if _name(enc) != "flat":
        raise UnsupportedEncodingError(f"{where}: {what} must be Flat, not {_name(enc)}")
    return int(enc.flat.bits_per_value)


def _check_offsets(offs: np.ndarray, size: int, where: str, what: str) -> None:
    if offs.size and (offs[0] < 0 or offs[-1] > size or np.any(offs[1:] < offs[:-1])):
        raise CorruptFileError(where, f"{what}: offsets are not monotone within the {size}-byte buffer")


def _variable_offsets_bits(var: pb.Variable, where: str) -> int:
    bits = _flat_bits(var.offsets, where, "Variable offsets") if var.HasField("offsets") else 32
    if bits not in (32, 64):
        raise UnsupportedEncodingError(f"{where}: Variable offsets of {bits} bits")
    return bits


def _variable_miniblock(raw: np.ndarray, bits: int, n: int, where: str) -> DecodedValues:
    w = bits // 8
    if raw.size < (n + 1) * w:
        raise CorruptFileError(
            where, f"variable: {n} values need {(n + 1) * w} offset bytes, buffer has {raw.size}"
        )
    offs = np.frombuffer(raw[: (n + 1) * w].tobytes(), UINT_BY_BITS[bits]).astype(np.int64)
    _check_offsets(offs, raw.size, where, "variable")
    return DecodedValues("variable", n, raw[offs[0] : offs[-1]], offsets=offs - offs[0])


def _variable_block(raw: np.ndarray, n: int, where: str) -> DecodedValues:
    if raw.size < VARIABLE_BLOCK_HEADER_32.size:
        raise CorruptFileError(where, f"variable block of {raw.size} bytes has no header")
    head = raw[: VARIABLE_BLOCK_HEADER_64.size].tobytes()
    bits, start = VARIABLE_BLOCK_HEADER_32.unpack_from(head)
    ostart = VARIABLE_BLOCK_HEADER_32.size
    if bits == 64:
        if raw.size < VARIABLE_BLOCK_HEADER_64.size:
            raise CorruptFileError(where, "variable block (64-bit) header is truncated")
        start, ostart = VARIABLE_BLOCK_HEADER_64.unpack_from(head)[2], VARIABLE_BLOCK_HEADER_64.size
    elif bits != 32:
        raise CorruptFileError(where, f"variable block: bits per offset {bits} is not 32 or 64")
    w = bits // 8
    if start > raw.size or start < ostart + (n + 1) * w:
        raise CorruptFileError(
            where,
            f"variable block: data start {start} does not fit {n + 1} offsets in a {raw.size}-byte buffer",
        )
    offs = np.frombuffer(raw[ostart : ostart + (n + 1) * w].tobytes(), UINT_BY_BITS[bits]).astype(np.int64)
    data = raw[start:]
    _check_offsets(offs, data.size, where, "variable block")
    return DecodedValues("variable", n, data[offs[0] : offs[-1]], offsets=offs - offs[0])


def _rle_expand(vals: DecodedValues, runs: np.ndarray, n: int, where: str) -> DecodedValues:
    nruns = runs.size
    if vals.bits_per_value % 8 or vals.bits_per_value == 0:
        raise UnsupportedEncodingError(f"{where}: RLE values of {vals.bits_per_value} bits")
    total = int(runs.sum(dtype=np.int64))
    if total < n:
        raise CorruptFileError(where, f"rle: run lengths cover {total} values, expected {n}")
    data = present(vals.data, "data")
    if data.ndim == 1 and data.dtype == np.uint8 and vals.bits_per_value > 8:
        data = data.reshape(nruns, -1)
    out = np.repeat(data, runs, axis=0)[:n]
    return DecodedValues("fixed", n, out.reshape(-1) if out.ndim > 1 else out, vals.bits_per_value)


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------


def decode_values(
    enc: pb.CompressiveEncoding,
    buffers: Sequence[RawBytes],
    num_values: int,
    context: str,
    where: str = "compressive encoding",
) -> DecodedValues:
    """Decode ``num_values`` values from ``buffers`` (see the module docstring for contexts)."""
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, not {context!r}")
    if num_values < 0:
        raise CorruptFileError(where, f"negative value count {num_values}")
    if context == "miniblock":
        return _decode_mb(enc, _Buffers(buffers, where), num_values, where)
    if len(buffers) > 1:
        raise ValueError(f"block context takes one buffer, got {len(buffers)}")
    raw = as_u8(buffers[0]) if buffers else np.zeros(0, np.uint8)
    return _decode_block(enc, raw, num_values, where)


def _flat_or_inline(
    enc: pb.CompressiveEncoding, kind: str, raw: np.ndarray, n: int, where: str
) -> DecodedValues:
    """A flat or inline-bitpacked buffer, decompressed first when it says so: the same bytes
    whether it is a mini-block chunk's buffer or a whole block."""
    if kind == "flat":
        if enc.flat.HasField("data"):
            raw = decompress_buffer(raw, enc.flat.data, where)
        return _fixed(raw, int(enc.flat.bits_per_value), n, where)
    ib = enc.inline_bitpacking
    if ib.HasField("values"):
        raw = decompress_buffer(raw, ib.values, where)
    return _inline(raw, int(ib.uncompressed_bits_per_value), n, where)


def _decode_mb(enc: pb.CompressiveEncoding, bufs: _Buffers, n: int, where: str) -> DecodedValues:
    kind = _name(enc)
    if kind == "flat":
        return _flat_or_inline(enc, kind, bufs.take("flat"), n, where)
    if kind == "inline_bitpacking":
        return _flat_or_inline(enc, kind, bufs.take("inline bitpacking"), n, where)
    if kind == "out_of_line_bitpacking":
        return _out_of_line(enc.out_of_line_bitpacking, bufs.take("out-of-line bitpacking"), n, where)
    if kind == "variable":
        var = enc.variable
        raw = bufs.take("variable")
        if var.HasField("values"):
            raise UnsupportedEncodingError(f"{where}: Variable with compressed values in a mini-block")
        return _variable_miniblock(raw, _variable_offsets_bits(var, where), n, where)
    if kind == "fsst":
        inner = _decode_mb(enc.fsst.values, bufs, n, where)
        return _fsst(enc.fsst, inner, where)
    if kind == "rle":
        rle = enc.rle
        vbits = _flat_bits(rle.values, where, "RLE values")
        rbits = _flat_bits(rle.run_lengths, where, "RLE run lengths")
        if rbits != 8:
            raise UnsupportedEncodingError(f"{where}: RLE run lengths of {rbits} bits (only 8)")
        vraw = bufs.take("rle values")
        runs = bufs.take("rle run lengths")
        if vbits % 8 or vbits == 0:
            raise UnsupportedEncodingError(f"{where}: RLE values of {vbits} bits")
        if vraw.size != runs.size * (vbits // 8):
            raise CorruptFileError(
                where, f"rle: {vraw.size} value bytes for {runs.size} runs of {vbits}-bit values"
            )
        vals = _fixed(vraw, vbits, runs.size, where, "rle values")
        return _rle_expand(vals, runs, n, where)
    if kind == "general":
        gen = enc.general
        if not gen.HasField("values"):
            raise CorruptFileError(where, "General without an inner encoding")
        if bufs.pos >= len(bufs.buffers):
            raise CorruptFileError(where, "general: the chunk has no buffer to decompress")
        # only the first buffer of the inner encoding is compressed
        bufs.buffers[bufs.pos] = decompress_buffer(bufs.buffers[bufs.pos], gen.compression, where)
        return _decode_mb(gen.values, bufs, n, where)
    if kind == "fixed_size_list":
        fsl = enc.fixed_size_list
        dim = int(fsl.items_per_value)
        validity = None
        if fsl.has_validity:
            validity = _bitmap(bufs.take("fsl validity"), n * dim, where)
        inner = _decode_mb(fsl.values, bufs, n * dim, where)
        return DecodedValues("fsl", n, dimension=dim, validity=validity, inner=inner)
    if kind == "byte_stream_split":
        return _bss(enc.byte_stream_split, bufs.take("byte stream split"), n, where)
    if kind == "packed_struct":
        return _packed_struct(enc.packed_struct, _decode_mb(enc.packed_struct.values, bufs, n, where), where)
    if kind == "constant":
        return _constant(enc.constant, n, where)
    raise UnsupportedEncodingError(f"{where}: {kind} is not supported in a mini-block chunk")


def _decode_block(enc: pb.CompressiveEncoding, raw: np.ndarray, n: int, where: str) -> DecodedValues:
    kind = _name(enc)
    if kind in ("flat", "inline_bitpacking"):
        return _flat_or_inline(enc, kind, raw, n, where)
    if kind == "out_of_line_bitpacking":
        return _out_of_line(enc.out_of_line_bitpacking, raw, n, where)
    if kind == "variable":
        if enc.variable.HasField("values"):
            raise UnsupportedEncodingError(f"{where}: Variable with compressed values in a block")
        return _variable_block(raw, n, where)
    if kind == "fsst":
        return _fsst(enc.fsst, _decode_block(enc.fsst.values, raw, n, where), where)
    if kind == "rle":
        rle = enc.rle
        vbits = _flat_bits(rle.values, where, "RLE values")
        head = RLE_VALUES_LENGTH.size
        if raw.size < head:
            raise CorruptFileError(where, f"rle block of {raw.size} bytes has no u64 values length")
        vlen = RLE_VALUES_LENGTH.unpack_from(raw[:head].tobytes())[0]
        if vbits % 8 or vbits == 0:
            raise UnsupportedEncodingError(f"{where}: RLE values of {vbits} bits")
        if vlen > raw.size - head or vlen % (vbits // 8):
            raise CorruptFileError(
                where, f"rle block: values length {vlen} does not fit the {raw.size}-byte buffer"
            )
        nruns = vlen // (vbits // 8)
        runs = raw[head + vlen :]
        if runs.size < nruns:
            raise CorruptFileError(where, f"rle block: {nruns} runs but {runs.size} run-length bytes")
        vals = _fixed(raw[head : head + vlen], vbits, nruns, where, "rle values")
        return _rle_expand(vals, runs[:nruns], n, where)
    if kind == "general":
        gen = enc.general
        if not gen.HasField("values"):
            raise CorruptFileError(where, "General without an inner encoding")
        return _decode_block(gen.values, decompress_buffer(raw, gen.compression, where), n, where)
    if kind == "fixed_size_list":
        fsl = enc.fixed_size_list
        if fsl.has_validity:
            raise UnsupportedEncodingError(f"{where}: FixedSizeList with item validity in a block")
        dim = int(fsl.items_per_value)
        return DecodedValues("fsl", n, dimension=dim, inner=_decode_block(fsl.values, raw, n * dim, where))
    if kind == "byte_stream_split":
        return _bss(enc.byte_stream_split, raw, n, where)
    if kind == "packed_struct":
        return _packed_struct(
            enc.packed_struct, _decode_block(enc.packed_struct.values, raw, n, where), where
        )
    if kind == "constant":
        return _constant(enc.constant, n, where)
    raise UnsupportedEncodingError(f"{where}: {kind} is not supported as a block encoding")


def _inline(raw: np.ndarray, t: int, n: int, where: str) -> DecodedValues:
    if t not in UINT_BY_BITS:
        raise UnsupportedEncodingError(f"{where}: inline bitpacking of {t}-bit values")
    if raw.ctypes.data % (t // 8):
        raw = raw.copy()
    return DecodedValues("fixed", n, fastlanes.unpack_inline(raw, t, n, where), t)


def _out_of_line(ob: pb.OutOfLineBitpacking, raw: np.ndarray, n: int, where: str) -> DecodedValues:
    t = int(ob.uncompressed_bits_per_value)
    if t not in UINT_BY_BITS:
        raise UnsupportedEncodingError(f"{where}: out-of-line bitpacking of {t}-bit values")
    w = _flat_bits(ob.values, where, "OutOfLineBitpacking values")
    if raw.ctypes.data % (t // 8):
        raw = raw.copy()
    return DecodedValues("fixed", n, fastlanes.unpack(raw, w, t, n, where), t)


def _fsst(
    msg: pb.Fsst,
    inner: DecodedValues,
    where: str,
    needed: np.ndarray | None = None,
    offsets_checked: bool = False,
) -> DecodedValues:
    """FSST-decompress ``inner``'s strings; with ``needed`` (value indices) only those, the others
    coming back empty (random access decompresses a few strings of a chunk, not all).
    ``offsets_checked``: ``inner``'s offsets are known never to go down (``fsst.decompress``)."""
    if inner.kind != "variable":
        raise CorruptFileError(where, f"FSST values decoded to {inner.kind}, expected variable")
    offsets, data = present(inner.offsets, "offsets"), present(inner.data, "data")
    if needed is not None:
        keep = np.zeros(inner.num_values, bool)
        keep[needed] = True
        lengths = np.where(keep, np.diff(offsets), 0)
        data = gather_ranges(np.asarray(data, np.uint8), offsets[:-1][keep], lengths[keep])
        offsets = np.zeros(inner.num_values + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
    offs, out = fsst.decompress(msg.symbol_table, offsets, data, where, offsets_checked and needed is None)
    return DecodedValues("variable", inner.num_values, out, offsets=offs)


def _bitmap(raw: np.ndarray, nbits: int, where: str) -> np.ndarray:
    need = (nbits + 7) // 8
    if raw.size < need:
        raise CorruptFileError(
            where, f"validity bitmap of {nbits} bits needs {need} bytes, buffer has {raw.size}"
        )
    return np.unpackbits(raw[:need], count=nbits, bitorder="little").astype(bool)


def _bss(msg: pb.ByteStreamSplit, raw: np.ndarray, n: int, where: str) -> DecodedValues:
    bits = _flat_bits(msg.values, where, "ByteStreamSplit values")
    if bits not in (16, 32, 64):
        raise UnsupportedEncodingError(f"{where}: ByteStreamSplit of {bits}-bit values")
    b = bits // 8
    if raw.size < n * b:
        raise CorruptFileError(
            where, f"byte stream split: {n} values need {n * b} bytes, buffer has {raw.size}"
        )
    planes = raw[: n * b].reshape(b, n)
    return DecodedValues(
        "fixed", n, np.ascontiguousarray(planes.T).reshape(-1).view(UINT_BY_BITS[bits]), bits
    )


def _packed_struct(msg: pb.PackedStruct, inner: DecodedValues, where: str) -> DecodedValues:
    widths = tuple(int(x) for x in msg.bits_per_value)
    if inner.kind != "fixed" or sum(widths) != inner.bits_per_value:
        raise CorruptFileError(
            where,
            f"packed struct fields {widths} do not add up to the "
            f"{inner.bits_per_value}-bit {inner.kind} rows",
        )
    inner.packed_struct_bits = widths
    return inner


def _constant(msg: pb.Constant, n: int, where: str) -> DecodedValues:
    if not msg.HasField("value"):  # every value is null (e.g. the items of an all-null vector)
        return DecodedValues("null", n)
    v = np.frombuffer(msg.value, np.uint8)
    bits = v.size * 8
    if bits in UINT_BY_BITS:
        return DecodedValues("fixed", n, np.full(n, v.view(UINT_BY_BITS[bits])[0], UINT_BY_BITS[bits]), bits)
    return DecodedValues("fixed", n, np.tile(v, n), bits)


# ---------------------------------------------------------------------------
# rep / def levels
# ---------------------------------------------------------------------------

#: the densest level encoding is RLE: one u8 run length of up to 255 levels per byte
MAX_LEVELS_PER_BYTE = 255


def _most_levels(enc: pb.CompressiveEncoding, kind: str, nbytes: int) -> int | None:
    """The most levels ``nbytes`` of ``kind`` can hold (None: no bound). Otherwise RLE is the
    densest, except inline bit-packed zeros: pylance writes a block of 1024 of them as its width
    word alone."""
    if kind == "general":
        return None
    if kind == "inline_bitpacking":
        return fastlanes.BLOCK * (nbytes // max(1, enc.inline_bitpacking.uncompressed_bits_per_value // 8))
    return MAX_LEVELS_PER_BYTE * nbytes


def decode_levels(
    enc: pb.CompressiveEncoding,
    buffer: RawBytes,
    num_levels: int,
    context: str = "miniblock",
    where: str = "rep/def levels",
) -> np.ndarray:
    """Decode ``num_levels`` u16 rep or def levels from one buffer.

    Handles ``flat{16}``, ``out_of_line_bitpacking{16}``, ``inline_bitpacking{16}``,
    ``rle`` (block form ``u64 values_len | values | u8 runs``, which is what a level
    buffer holds in either context) and ``general`` around any of them.
    """
    raw = as_u8(buffer)
    kind = _name(enc)
    most = _most_levels(enc, kind, raw.size)
    if most is not None and num_levels > most:  # before allocating them
        raise CorruptFileError(where, f"{num_levels} levels cannot come from {raw.size} bytes")
    if kind == "rle":
        dv = _decode_block(enc, raw, num_levels, where)
    elif kind == "general":
        inner = decompress_buffer(raw, enc.general.compression, where)
        return decode_levels(enc.general.values, inner, num_levels, context, where)
    elif kind == "variable":
        raise CorruptFileError(where, "levels cannot use a Variable encoding")
    else:
        dv = _decode_block(enc, raw, num_levels, where)
    if dv.kind != "fixed" or dv.bits_per_value not in (8, 16, 32, 64):
        raise CorruptFileError(where, f"levels decoded to {dv.kind} of {dv.bits_per_value} bits")
    out = present(dv.data, "data")
    if out.dtype != np.uint16:
        if out.size and int(out.max()) > 0xFFFF:
            raise CorruptFileError(where, "level value does not fit in u16")
        out = out.astype(np.uint16)
    return out
