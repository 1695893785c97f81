"""Delta + bit-packing for (mostly) sorted integer pages: the bytes on disk, encode and decode.

Page layout
-----------
The page encoding is a ``google.protobuf.Any`` with ``type_url = "/lance_fw_delta.DeltaBitpacked"``.
Its ``value`` is a fixed 40-byte little-endian header (``struct`` format ``<4sBBBBQQQQ``):

=========  ======  ==================================================================
field      type    meaning
=========  ======  ==================================================================
magic      4s      ``b"LFDB"``
version    u8      layout version, ``1``
value_bits u8      width of the Arrow storage type: 8, 16, 32 or 64
flags      u8      bit 0: values are signed; bit 1: the page has a validity buffer
delta_bits u8      width of each packed delta, 0..64 (0: every delta equals min_delta)
num_values u64     rows in the page (must equal the page's ``length``)
first      u64     the first value, widened to 64 bits, two's complement
min_delta  u64     the smallest delta (as a signed 64-bit number), two's complement
reserved   u64     0
=========  ======  ==================================================================

Buffers of the page, in order:

0. the ``num_values - 1`` residuals ``(v[i+1] - v[i]) - min_delta`` (modulo 2**64), each
   ``delta_bits`` wide, packed LSB-first into a little-endian bit stream of
   ``ceil((num_values - 1) * delta_bits / 8)`` bytes;
1. (only when flag bit 1 is set) the validity bitmap, LSB-first, ``ceil(num_values / 8)`` bytes,
   1 = valid.

Null slots hold the previous valid value (or the first valid one for leading nulls), so they add
zero deltas. Arithmetic is modulo 2**64, which makes any integer sequence round-trip; sorted
sequences merely give small ``delta_bits``.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw.errors import CorruptFileError
from lance_fw.file.encoding import EncodedPage, PageInput

TYPE_URL = "/lance_fw_delta.DeltaBitpacked"
MAGIC = b"LFDB"
LAYOUT_VERSION = 1
HEADER = struct.Struct("<4sBBBBQQQQ")
FLAG_SIGNED = 1
FLAG_VALIDITY = 2

_U64 = np.dtype("<u8")


# --- which Arrow types this encoding stores -----------------------------------------------------

def storage_dtype(t: pa.DataType) -> np.dtype | None:
    """The little-endian numpy dtype of an integer-like Arrow type's value buffer, or None."""
    if pa.types.is_integer(t):
        kind = "i" if pa.types.is_signed_integer(t) else "u"
        return np.dtype(f"<{kind}{t.bit_width // 8}")
    if (pa.types.is_date32(t) or pa.types.is_date64(t) or pa.types.is_timestamp(t)
            or pa.types.is_time32(t) or pa.types.is_time64(t) or pa.types.is_duration(t)):
        return np.dtype(f"<i{t.bit_width // 8}")
    return None


# --- bit packing (vectorised) --------------------------------------------------------------------

def bit_width(values: np.ndarray) -> int:
    """Bits needed for the largest of some uint64 values (0 for none or all zero)."""
    if not len(values):
        return 0
    return int(values.max()).bit_length()


def _positions(n: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Word index and bit shift of each of ``n`` values packed ``width`` bits apart."""
    bit = np.arange(n, dtype=np.int64) * width
    return bit >> 6, (bit & 63).astype(_U64)


def pack(values: np.ndarray, width: int) -> bytes:
    """Pack uint64 ``values`` (each < 2**width) LSB-first at ``width`` bits each.

    Every value lands in 64-bit word ``i*width // 64`` (shifted left) and, if it straddles the
    word boundary, its high bits in the next word. Bits of different values never overlap, so the
    values of one word are combined with one ``bitwise_or.reduceat`` over runs of equal word index.
    (NumPy defines a shift by 64 as 0, so the non-straddling values contribute nothing to the
    next word.)
    """
    n = len(values)
    nbytes = (n * width + 7) // 8
    if width == 0 or n == 0:
        return b""
    values = values.astype(_U64, copy=False)
    word, shift = _positions(n, width)
    starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
    first_word = word[starts]
    out = np.zeros((n * width + 63) // 64 + 1, dtype=_U64)
    out[first_word] = np.bitwise_or.reduceat(values << shift, starts)
    out[first_word + 1] |= np.bitwise_or.reduceat(values >> (np.uint64(64) - shift), starts)
    return out.view(np.uint8)[:nbytes].tobytes()


def unpack(data, n: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack`: ``n`` uint64 values of ``width`` bits from ``data``."""
    if width == 0 or n == 0:
        return np.zeros(n, dtype=_U64)
    nbytes = (n * width + 7) // 8
    words = np.zeros((nbytes + 7) // 8 + 1, dtype=_U64)
    words.view(np.uint8)[:nbytes] = np.frombuffer(data, dtype=np.uint8, count=nbytes)
    word, shift = _positions(n, width)
    out = (words[word] >> shift) | (words[word + 1] << (np.uint64(64) - shift))
    if width < 64:
        out &= np.uint64((1 << width) - 1)
    return out


# --- encoder -------------------------------------------------------------------------------------

def _values_u64(array: pa.Array, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """The array's values widened to 64 bits (viewed as uint64) with nulls filled, and its validity."""
    n = len(array)
    raw = array.buffers()[1]
    if raw is None or n == 0:
        values = np.zeros(n, dtype=dtype)
    else:
        values = np.frombuffer(raw, dtype=dtype, count=n, offset=array.offset * dtype.itemsize)
    wide = values.astype("<i8" if dtype.kind == "i" else "<u8").view(_U64)
    if not array.null_count:
        return wide, None
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if not valid.any():
        return np.zeros(n, dtype=_U64), valid
    # forward-fill null slots with the previous valid value; leading nulls take the first valid one
    idx = np.where(valid, np.arange(n), -1)
    np.maximum.accumulate(idx, out=idx)
    idx[idx < 0] = int(np.argmax(valid))
    return wide[idx], valid


class DeltaBitpackedEncoder:
    """Encodes pages of one integer-like column as first value + bit-packed deltas."""

    #: pylance has no decoder for these pages: lance_fw writes them only under the write option
    #: ``allow_plugin_encodings=True`` and records this plugin in the manifest.
    pylance_readable = False

    def __init__(self, arrow_type: pa.DataType):
        dtype = storage_dtype(arrow_type)
        if dtype is None:
            raise TypeError(f"delta encoding needs an integer-like type, got {arrow_type}")
        self.arrow_type = arrow_type
        self.dtype = dtype

    def __repr__(self) -> str:  # shows up in the LANCE_FW_TRACE=1 hook trace
        return f"DeltaBitpackedEncoder({self.arrow_type})"

    def encode(self, array: pa.Array) -> EncodedPage:
        n = len(array)
        values, valid = _values_u64(array, self.dtype)
        if n > 1:
            deltas = values[1:] - values[:-1]  # modulo 2**64
            min_delta = deltas.view("<i8").min(keepdims=True).view(_U64)[0]  # signed min, as u64
            residuals = deltas - min_delta
        else:
            min_delta = np.uint64(0)
            residuals = np.zeros(0, dtype=_U64)
        width = bit_width(residuals)
        flags = (FLAG_SIGNED if self.dtype.kind == "i" else 0) | (FLAG_VALIDITY if valid is not None else 0)
        first = int(values[0]) if n else 0
        header = HEADER.pack(MAGIC, LAYOUT_VERSION, self.dtype.itemsize * 8, flags, width, n,
                             first, int(min_delta), 0)
        buffers = [pack(residuals, width)]
        if valid is not None:
            buffers.append(np.packbits(valid, bitorder="little").tobytes())
        encoding = any_pb2.Any(type_url=TYPE_URL, value=header)
        return EncodedPage(buffers, encoding, n)


# --- decoder -------------------------------------------------------------------------------------

def decode(encoding, page: PageInput) -> pa.Array:
    """Page decoder for ``/lance_fw_delta.DeltaBitpacked`` (see the module docstring)."""
    where = page.where
    header = bytes(encoding.value)
    if len(header) != HEADER.size:
        raise CorruptFileError(where, f"delta page header holds {len(header)} bytes, expected {HEADER.size}")
    magic, version, value_bits, flags, width, n, first, min_delta, _ = HEADER.unpack(header)
    if magic != MAGIC:
        raise CorruptFileError(where, f"delta page header has magic {magic!r}, expected {MAGIC!r}")
    if version != LAYOUT_VERSION:
        raise CorruptFileError(where, f"delta page layout version {version} is not supported (only {LAYOUT_VERSION})")
    dtype = storage_dtype(page.arrow_type)
    if dtype is None:
        raise CorruptFileError(where, f"delta page cannot hold Arrow type {page.arrow_type}")
    if value_bits != dtype.itemsize * 8:
        raise CorruptFileError(where, f"delta page stores {value_bits}-bit values but the column is "
                                      f"{page.arrow_type} ({dtype.itemsize * 8} bits)")
    if width > 64:
        raise CorruptFileError(where, f"delta page has delta width {width} > 64")
    if n != page.num_rows:
        raise CorruptFileError(where, f"delta page header says {n} rows, the page says {page.num_rows}")
    if bool(flags & FLAG_SIGNED) != (dtype.kind == "i"):
        raise CorruptFileError(where, f"delta page signedness flag does not match the column type {page.arrow_type}")
    has_validity = bool(flags & FLAG_VALIDITY)
    want_buffers = 2 if has_validity else 1
    if len(page.buffers) != want_buffers:
        raise CorruptFileError(where, f"delta page has {len(page.buffers)} buffers, expected {want_buffers}")
    packed = page.buffers[0]
    need = (max(n - 1, 0) * width + 7) // 8
    if len(packed) < need:
        raise CorruptFileError(where, f"delta page residual buffer holds {len(packed)} bytes, needs {need}")
    validity = None
    if has_validity:
        validity = page.buffers[1]
        if len(validity) < (n + 7) // 8:
            raise CorruptFileError(where, f"delta page validity buffer holds {len(validity)} bytes, "
                                          f"needs {(n + 7) // 8}")

    values = np.empty(n, dtype=_U64)
    if n:
        residuals = unpack(packed, n - 1, width)
        values[0] = first
        # modular uint64 arithmetic: the running sum restores every value exactly
        values[1:] = residuals + np.uint64(min_delta)
        np.cumsum(values, out=values)
    wide = values.view("<i8" if dtype.kind == "i" else "<u8")
    out = wide.astype(dtype)
    if dtype.itemsize < 8 and not np.array_equal(out, wide):
        raise CorruptFileError(where, f"delta page decodes values that do not fit {page.arrow_type}")
    bitmap = pa.py_buffer(validity) if validity is not None else None
    return pa.Array.from_buffers(page.arrow_type, n, [bitmap, pa.py_buffer(out)],
                                 null_count=-1 if bitmap is not None else 0)
