"""Byte layout of the v2 container: the 40-byte footer, the offset tables and the metadata.

```
pages and global buffers (64-byte aligned) | column metadata | CMO table | GBO table | footer
footer = u64 column_meta_start | u64 cmo_table_pos | u64 gbo_table_pos | u32 num_global_buffers
         | u32 num_columns | u16 major | u16 minor | "LANC"
```
Global buffer 0 is the ``FileDescriptor`` (schema + row count).
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import BinaryIO, TypeVar

import numpy as np
from google.protobuf.message import DecodeError, Message

from lance_fw._proto import file2_pb2
from lance_fw.errors import CorruptFileError
from lance_fw.file.version import from_footer
from lance_fw.io.storage import RangeReader

MAGIC = b"LANC"
FOOTER = struct.Struct("<QQQIIHH4s")
ALIGN = 64
PAD_BYTE = b"H"  # what pylance pads with; readers never look at it
TAIL_PREFETCH = 64 * 1024

MessageT = TypeVar("MessageT", bound=Message)

_TAIL_TOKENS = itertools.count()


@dataclass
class FileTail:
    """Everything in a data file except the page data."""

    version: tuple[int, int]
    columns: list[file2_pb2.ColumnMetadata]
    descriptor: file2_pb2.FileDescriptor
    global_buffers: list[tuple[int, int]]
    #: The first byte of the file the tail was parsed from (column metadata, offset tables, file
    #: descriptor): from there to the end is what an unchanged file still holds (``shared_metadata``).
    metadata_start: int = dataclass_field(compare=False)
    #: Unique per parsed tail (never reused, unlike ``id()``): with a column and page it keys caches
    #: of what decoders derive from that page's bytes (``PageInput.key``), valid as long as this tail.
    token: int = dataclass_field(default_factory=lambda: next(_TAIL_TOKENS), compare=False)

    @property
    def num_rows(self) -> int:
        return self.descriptor.length


def parse_message(cls: type[MessageT], data: bytes, path: str, what: str) -> MessageT:
    """Parse ``data`` as a ``cls`` message; a decode failure is a ``CorruptFileError`` naming ``what``."""
    msg = cls()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise CorruptFileError(path, f"{what} does not parse as {cls.DESCRIPTOR.full_name}: {exc}") from None
    return msg


def read_tail(reader: RangeReader) -> FileTail:
    path, size = reader.path, reader.size()
    if size < FOOTER.size:
        raise CorruptFileError(path, f"file is {size} bytes, smaller than the {FOOTER.size}-byte footer")
    tail = reader.tail(TAIL_PREFETCH)
    if len(tail) != min(size, TAIL_PREFETCH):
        raise CorruptFileError(path, "short read of the file tail")
    start = size - len(tail)

    def grab(pos: int, length: int, what: str) -> bytes:
        if pos < 0 or length < 0 or pos + length > size:
            raise CorruptFileError(
                path, f"{what} at [{pos}, {pos + length}) lies outside the file ({size} bytes)"
            )
        if pos >= start:
            return tail[pos - start : pos - start + length]
        return reader.read_exact(pos, length, what)

    col_start, cmo_pos, gbo_pos, n_gb, n_cols, major, minor, magic = FOOTER.unpack_from(
        tail, len(tail) - FOOTER.size
    )
    if magic != MAGIC:
        raise CorruptFileError(
            path, f"bad magic {magic!r} (expected {MAGIC!r}): not a Lance file or truncated"
        )
    if (major, minor) == (0, 2):  # 0.1 files have their own reader (datasets open them through it)
        raise CorruptFileError(
            path,
            "a legacy Lance v1 (0.1) data file: this reader reads v2 files only, as pylance's "
            "lance.file.LanceFileReader does (datasets read 0.1 files: lance_fw.file.legacy_v0_1)",
        )
    cmo = np.frombuffer(grab(cmo_pos, n_cols * 16, "column metadata offsets"), dtype="<u8").reshape(-1, 2)
    gbo = np.frombuffer(grab(gbo_pos, n_gb * 16, "global buffer offsets"), dtype="<u8").reshape(-1, 2)
    if n_gb < 1:
        raise CorruptFileError(path, "no global buffers: the schema (file descriptor) is missing")
    columns = [
        parse_message(
            file2_pb2.ColumnMetadata,
            grab(int(p), int(n), f"column {i} metadata"),
            path,
            f"column {i} metadata",
        )
        for i, (p, n) in enumerate(cmo)
    ]
    gbs = [(int(p), int(n)) for p, n in gbo]
    descriptor = parse_message(
        file2_pb2.FileDescriptor, grab(*gbs[0], "file descriptor"), path, "file descriptor"
    )
    parsed = [col_start, cmo_pos, gbo_pos, gbs[0][0], *(int(p) for p, _ in cmo)]
    return FileTail(from_footer(major, minor), columns, descriptor, gbs, metadata_start=min(parsed))


def write_tail(
    out: BinaryIO,
    position: int,
    columns: list[file2_pb2.ColumnMetadata],
    global_buffers: list[tuple[int, int]],
    footer_version: tuple[int, int],
) -> int:
    """Write column metadata, offset tables and footer at ``position``; return the new end."""
    col_start = position
    offsets = []
    for col in columns:
        data = col.SerializeToString()
        offsets.append((position, len(data)))
        out.write(data)
        position += len(data)
    cmo_pos = position
    table = np.array(offsets, dtype="<u8").reshape(-1, 2)
    out.write(table.tobytes())
    position += table.nbytes
    gbo_pos = position
    table = np.array(global_buffers, dtype="<u8").reshape(-1, 2)
    out.write(table.tobytes())
    position += table.nbytes
    out.write(
        FOOTER.pack(
            col_start,
            cmo_pos,
            gbo_pos,
            len(global_buffers),
            len(columns),
            footer_version[0],
            footer_version[1],
            MAGIC,
        )
    )
    return position + FOOTER.size
