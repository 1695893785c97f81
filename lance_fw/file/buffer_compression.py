"""Lance's general buffer compression (zstd, LZ4) as it frames a compressed buffer on disk.

One framing serves both encoding families: 2.0's ``Flat.compression`` (a scheme named by string)
and 2.1+'s ``General`` / ``BufferCompression`` (a scheme enum). As pylance writes it (observed on
pylance 14): an LZ4 buffer is a u32 LE uncompressed size then one LZ4 block; a zstd buffer is a
u64 LE uncompressed size then one zstd frame (a bare frame is read too). The field metadata
``lance-encoding:compression`` (and ``-level``) asks a writer for it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from lance_fw.errors import CorruptFileError, InvalidUserInputError, UnsupportedEncodingError

#: Scheme names as the field metadata and 2.0's ``Flat.compression.scheme`` spell them.
ZSTD = "zstd"
LZ4 = "lz4"
#: Field metadata asking for a column's compression, and its zstd level.
COMPRESSION_META_KEY = "lance-encoding:compression"
COMPRESSION_LEVEL_META_KEY = "lance-encoding:compression-level"
#: What ``lance-encoding:compression`` may name (pylance refuses anything else): no compression,
#: FSST (strings), or general compression of the values' buffers.
NO_COMPRESSION = "none"
FSST = "fsst"
COMPRESSION_NAMES = (NO_COMPRESSION, FSST, ZSTD, LZ4)
#: The size prefixes: u32 before an LZ4 block, u64 before a zstd frame.
LZ4_SIZE_PREFIX = struct.Struct("<I")
ZSTD_SIZE_PREFIX = struct.Struct("<Q")
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Bit 3 of a zstd frame header's descriptor byte is reserved (always 0): a buffer starting with
#: the magic and this bit set is a size prefix that happens to start like a frame.
_ZSTD_UNUSED_BIT = 0x10
#: Most expansion a size prefix may claim (beyond 1 MiB): more means garbled data, not a buffer.
MAX_RATIO = 1 << 16


def compression_hint(metadata: Mapping[str, str], where: str) -> tuple[str | None, int | None]:
    """The compression (one of ``COMPRESSION_NAMES``, or None when unset) and zstd level (or
    None) a field's metadata asks for.

    Raises:
        InvalidUserInputError: the metadata names another compression, or a level that is not an
            integer (pylance refuses both: "Invalid user input").
    """
    name = metadata.get(COMPRESSION_META_KEY)
    if name is not None and name not in COMPRESSION_NAMES:
        raise InvalidUserInputError(
            f"{where}: unknown compression scheme {name!r} in field metadata {COMPRESSION_META_KEY} "
            f"(one of {', '.join(COMPRESSION_NAMES)})"
        )
    level_text = metadata.get(COMPRESSION_LEVEL_META_KEY)
    if level_text is None:
        return name, None
    try:
        return name, int(level_text)
    except ValueError:
        raise InvalidUserInputError(
            f"{where}: {COMPRESSION_LEVEL_META_KEY} must be an integer, not {level_text!r}"
        ) from None


def compress_framed(raw: bytes | memoryview | np.ndarray, scheme: str, level: int | None = None) -> bytes:
    """``raw`` compressed and framed as pylance frames it (``level``: zstd's; LZ4 has none)."""
    data = pa.py_buffer(raw)
    if scheme == ZSTD:
        codec = pa.Codec("zstd") if level is None else pa.Codec("zstd", compression_level=level)
        return ZSTD_SIZE_PREFIX.pack(data.size) + codec.compress(data).to_pybytes()
    if scheme == LZ4:
        return LZ4_SIZE_PREFIX.pack(data.size) + pa.Codec("lz4_raw").compress(data).to_pybytes()
    raise ValueError(f"no general compression scheme {scheme!r}")


def decompress_framed(raw: np.ndarray, scheme: str, where: str) -> np.ndarray:
    """A framed buffer (uint8) decompressed (uint8).

    Raises:
        CorruptFileError: the framing or the compressed data is damaged.
        UnsupportedEncodingError: ``scheme`` is neither zstd nor LZ4.
    """
    try:
        if scheme == LZ4:
            if raw.size < LZ4_SIZE_PREFIX.size:
                raise CorruptFileError(where, f"LZ4 buffer of {raw.size} bytes has no u32 size prefix")
            size = LZ4_SIZE_PREFIX.unpack(raw[: LZ4_SIZE_PREFIX.size].tobytes())[0]
            if size == 0:
                return np.zeros(0, np.uint8)
            _check_size(size, raw.size, where, "LZ4")
            out = pa.Codec("lz4_raw").decompress(
                pa.py_buffer(raw[LZ4_SIZE_PREFIX.size :]), decompressed_size=size
            )
            return np.frombuffer(out, np.uint8)
        if scheme == ZSTD:
            if raw.size == 0:
                return raw
            if (
                raw.size >= 8
                and raw[:4].tobytes() == _ZSTD_MAGIC
                and not (raw[len(_ZSTD_MAGIC)] & _ZSTD_UNUSED_BIT)
            ):
                frame, size = raw, None
            else:  # u64 LE uncompressed length, then the frame
                if raw.size < ZSTD_SIZE_PREFIX.size:
                    raise CorruptFileError(where, f"ZSTD buffer of {raw.size} bytes is truncated")
                size = ZSTD_SIZE_PREFIX.unpack(raw[: ZSTD_SIZE_PREFIX.size].tobytes())[0]
                frame = raw[ZSTD_SIZE_PREFIX.size :]
            if size is not None:
                _check_size(size, frame.size, where, "ZSTD")
                out = pa.Codec("zstd").decompress(pa.py_buffer(frame), decompressed_size=size)
            else:
                with pa.CompressedInputStream(pa.BufferReader(pa.py_buffer(frame)), "zstd") as stream:
                    out = stream.read()
            return np.frombuffer(out, np.uint8)
    except (pa.ArrowException, OSError, ValueError, OverflowError, MemoryError) as exc:
        if isinstance(exc, CorruptFileError):
            raise
        raise CorruptFileError(where, f"{scheme} decompression failed: {exc}") from None
    raise UnsupportedEncodingError(f"{where}: unknown general compression scheme {scheme!r}")


def _check_size(size: int, compressed: int, where: str, what: str) -> None:
    if size > compressed * MAX_RATIO + (1 << 20):
        raise CorruptFileError(
            where, f"{what}: size prefix {size} is implausible for {compressed} compressed bytes"
        )
