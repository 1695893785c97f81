"""pylance's ``take_blobs``: blob column values as file-like ``BlobFile`` objects.

Why a file-like object: pylance hands blobs out as ``BlobFile`` handles (``read``, ``seek``,
``tell``, ``size``, ``read_range``) so that code streams them; code written against it must work
unchanged. A ``BlobFile`` reads its bytes lazily, range by range, from the file they lie in (the
data file or a sidecar, see ``table.blobs``), ``buffer_size`` bytes ahead for sequential reads, so
a multi-gigabyte blob is never held whole. Calls, results and error classes follow pylance 14's.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw._util.refusals import NotImplementedInPylanceError
from lance_fw.api.row_columns import _locate, live_positions
from lance_fw.errors import InvalidArgumentError, InvalidArgumentTypeError
from lance_fw.io.storage import RangeReader, Storage
from lance_fw.table import blobs as table_blobs
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import live_rows
from lance_fw.table.row_ids import ADDRESS_FRAGMENT_SHIFT, ADDRESS_OFFSET_MASK
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.take import addresses_of, live_addresses

#: pylance's default sequential read-ahead of a ``BlobFile`` (bytes).
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


class ReaderPool:
    """Open readers of the files the blobs of one call lie in, shared by its ``BlobFile``s: a take
    of many blobs opens each file once, and at most ``MAX_OPEN`` stay open (least recently used
    closed first, once no read is using them), so thousands of handles never exhaust descriptors."""

    #: Files kept open at once.
    MAX_OPEN = 32

    def __init__(self, storage: Storage):
        self.storage = storage
        self._lock = threading.Lock()
        #: path -> [reader, reads in progress, evicted]
        self._open: OrderedDict[str, list[Any]] = OrderedDict()

    def read(self, path: str, offset: int, length: int) -> bytes:
        with self._lock:
            entry = self._open.get(path)
            if entry is None:
                entry = self._open[path] = [self.storage.open_reader(path), 0, False]
            self._open.move_to_end(path)
            entry[1] += 1
            self._evict(self.MAX_OPEN)
        try:
            data: bytes = entry[0].read_exact(offset, length, f"blob bytes at {offset}")
            return data
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[2] and not entry[1]:
                    entry[0].close()

    def _evict(self, keep: int) -> None:
        """Close (or mark, while a read uses them) the least recently used beyond ``keep``."""
        while len(self._open) > keep:
            _, entry = self._open.popitem(last=False)
            entry[2] = True
            if not entry[1]:
                entry[0].close()

    def close(self) -> None:
        with self._lock:
            self._evict(0)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class BlobSource:
    """Where one blob's bytes are: ``size`` bytes at ``position`` of the file at ``path``, read
    through ``pool``, or bytes held in memory."""

    def __init__(self, pool: ReaderPool | None, path: str, position: int, size: int, data: bytes = b""):
        self.pool, self.path, self.position, self.size = pool, path, position, size
        self._data = data

    @classmethod
    def of_bytes(cls, data: bytes) -> BlobSource:
        return cls(None, "", 0, len(data), bytes(data))

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from blob offset ``offset`` (the caller keeps within the blob)."""
        if length <= 0:
            return b""
        if self.pool is None:
            return self._data[offset : offset + length]
        return self.pool.read(self.path, self.position + offset, length)

    def close(self) -> None:
        """Nothing to release: the pool's readers are shared with the call's other blobs."""


def _validate_buffer_size(buffer_size: Any) -> int:
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise InvalidArgumentTypeError(f"buffer_size must be an int, got {type(buffer_size).__name__}")
    if buffer_size < 0:
        raise InvalidArgumentError("buffer_size must be non-negative")
    return buffer_size


def _closed_error() -> InvalidArgumentError:
    return InvalidArgumentError("Invalid user input: Blob file is already closed")


class BlobFile(io.BufferedIOBase):
    """One blob as a read-only, seekable binary file (pylance's ``BlobFile`` calls).

    ``read_range`` and ``read_ranges`` neither use the read-ahead buffer nor move the cursor."""

    def __init__(self, source: BlobSource | bytes, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE):
        super().__init__()
        self._source = source if isinstance(source, BlobSource) else BlobSource.of_bytes(source)
        self._buffer_size = _validate_buffer_size(buffer_size)
        self._pos = 0
        self._ahead = b""  # bytes read ahead, starting at blob offset _ahead_at
        self._ahead_at = 0
        self._closed = False

    # -- state ------------------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._ahead = b""
            self._source.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        """The blob's length in bytes (also once closed)."""
        return self._source.size

    def tell(self) -> int:
        if self._closed:
            raise _closed_error()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self.tell() + offset
        elif whence == io.SEEK_END:
            position = self.size() + offset
        else:
            raise InvalidArgumentError(f"Invalid whence: {whence}")
        if position < 0:
            raise InvalidArgumentError(f"negative seek value {position}")
        if self._closed:
            raise _closed_error()
        self._pos = position
        return position

    # -- sequential reads -------------------------------------------------------------------
    def _read_up_to(self, n: int) -> bytes:
        """At most ``n`` bytes at the cursor, from the read-ahead buffer (refilled when the
        cursor has left it); advances the cursor."""
        if self._closed:
            raise _closed_error()
        n = min(n, self.size() - self._pos)
        if n <= 0:
            return b""
        start = self._pos - self._ahead_at
        if not 0 <= start < len(self._ahead):
            fetch = min(max(n, self._buffer_size), self.size() - self._pos)
            self._ahead, self._ahead_at, start = self._source.read(self._pos, fetch), self._pos, 0
        out = self._ahead[start : start + n]
        self._pos += len(out)
        return out

    def read(self, size: int | None = -1) -> bytes:
        if self._closed:
            raise ValueError("read of closed file")
        if size is None or size < 0:
            return self.readall()
        parts, want = [], size
        while want > 0:
            part = self._read_up_to(want)
            if not part:
                break
            parts.append(part)
            want -= len(part)
        return b"".join(parts)

    def read1(self, size: int = -1) -> bytes:
        if self._closed:
            raise ValueError("read of closed file")
        return self._read_up_to(io.DEFAULT_BUFFER_SIZE if size is None or size < 0 else size)

    def readall(self) -> bytes:
        if self._closed:
            raise ValueError("read of closed file")
        rest = max(0, self.size() - self._pos)
        out = self._source.read(self._pos, rest)
        self._pos += len(out)
        return out

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        if view.readonly:
            raise InvalidArgumentTypeError(
                f"readinto() argument must be read-write bytes-like object, not {type(b).__name__}"
            )
        if self._closed:
            raise ValueError("readinto of closed file")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    # -- ranged reads -----------------------------------------------------------------------
    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from blob offset ``offset``; the cursor does not move."""
        if self._closed:
            raise _closed_error()
        if offset < 0 or length < 0:
            raise OverflowError("can't convert negative int to unsigned")
        if offset + length > self.size():
            raise InvalidArgumentError(
                f"Invalid user input: Blob range end {offset + length} exceeds blob size {self.size()}"
            )
        return self._source.read(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """``read_range`` of each ``(offset, length)``, in the order given."""
        return [self.read_range(offset, length) for offset, length in ranges]

    def __repr__(self) -> str:
        return f"<BlobFile size={self.size()}>"


def _resolve(
    snapshot: Snapshot,
    ids: Any,
    addresses: Any,
    indices: Any,
    what: str,
) -> tuple[np.ndarray, np.ndarray]:
    """(positions over the live rows, row addresses) of exactly one of: stable row ids, row
    addresses, or positions. Rows that do not exist are refused (``InvalidArgumentError``), ids and
    addresses of deleted rows as pylance refuses them (``NotImplementedError``)."""
    given = [s for s in (ids, addresses, indices) if s is not None]
    if len(given) != 1:
        raise InvalidArgumentError(f"{what}: Exactly one of ids, indices, or addresses must be specified")
    selection: Any = given[0]
    wanted = np.asarray(selection.to_pylist() if hasattr(selection, "to_pylist") else selection, np.int64)
    if indices is not None:
        count = sum(live_rows(f) for f in snapshot.fragments)
        bad = wanted[(wanted < 0) | (wanted >= count)]
        if len(bad):
            raise InvalidArgumentError(f"{what}: row index {int(bad[0])} is out of range ({count} rows)")
        return wanted, _locate(snapshot, wanted, by_address=False)["_rowaddr"]
    asked = wanted.astype(np.uint64)
    if addresses is not None or not snapshot.manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS:
        sizes = {f.id: f.physical_rows for f in snapshot.fragments}
        for address in asked.tolist():
            frag, offset = address >> ADDRESS_FRAGMENT_SHIFT, address & ADDRESS_OFFSET_MASK
            if offset >= sizes.get(frag, 0):
                raise InvalidArgumentError(f"{what}: row address {address} names no row (fragment {frag})")
        live = live_addresses(snapshot, asked)
    else:
        live = addresses_of(snapshot, asked)
    if len(live) != len(asked):  # as pylance: no None stands in for a deleted row
        raise NotImplementedInPylanceError(f"{what}: ids or addresses of deleted rows are not supported")
    return live_positions(snapshot, live), live


def take_blobs(
    snapshot: Snapshot,
    column: str,
    ids: Sequence[int] | None,
    addresses: Sequence[int] | None,
    indices: Sequence[int] | None,
    buffer_size: int,
) -> list[BlobFile | None]:
    """The blobs of ``column`` at exactly one of: stable row ids, row addresses, or positions over
    the live rows; None for a null blob. Ids and addresses of deleted rows are refused, as pylance."""
    _validate_buffer_size(buffer_size)
    positions, _ = _resolve(snapshot, ids, addresses, indices, "take_blobs")
    where = table_blobs.take_locations(snapshot, column, positions)
    pool = ReaderPool(snapshot.storage)
    return [None if w is None else BlobFile(BlobSource(pool, *w), buffer_size) for w in where]


def _io_buffer_size(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(f"io_buffer_size must be an int, got {type(value).__name__}")
    if value <= 0:
        raise InvalidArgumentError("io_buffer_size must be greater than 0")


def _read(
    snapshot: Snapshot, column: str, positions: np.ndarray, spans: list[tuple[int, int]] | None
) -> list:
    """The bytes of each position's blob (``spans``: an ``(offset, length)`` of each instead)."""
    readers: dict[str, RangeReader] = {}
    out: list[bytes | None] = []
    try:
        for i, w in enumerate(table_blobs.take_locations(snapshot, column, positions)):
            if w is None:
                out.append(None)
                continue
            path, position, size = w
            offset, length = spans[i] if spans is not None else (0, size)
            if offset + length > size:
                raise InvalidArgumentError(
                    f"Invalid user input: Blob range request {i} is invalid: Blob range end "
                    f"{offset + length} exceeds blob size {size}"
                )
            if length == 0:
                out.append(b"")
                continue
            if path not in readers:
                readers[path] = snapshot.storage.open_reader(path)
            out.append(
                readers[path].read_exact(position + offset, length, f"blob bytes at {position + offset}")
            )
    finally:
        for reader in readers.values():
            reader.close()
    return out


def read_blobs(
    snapshot: Snapshot,
    column: str,
    ids: Sequence[int] | None,
    addresses: Sequence[int] | None,
    indices: Sequence[int] | None,
    io_buffer_size: int | None = None,
    preserve_order: bool | None = None,
) -> list[tuple[int, bytes | None]]:
    """pylance's ``read_blobs``: ``(row address, bytes)`` of each selected row, in the order asked
    (``preserve_order=False`` lets pylance reorder; the order asked is one it may give)."""
    positions, found = _resolve(snapshot, ids, addresses, indices, "read_blobs")
    _io_buffer_size(io_buffer_size)
    values = _read(snapshot, column, positions, None)
    return list(zip((int(a) for a in found), values))


def scanned_blob_bytes(snapshot: Snapshot, column: str, descriptors: Any, addresses: Any) -> pa.Array:
    """A scanned blob column's descriptors as its bytes (``large_binary``), given each row's
    address: what pylance's ``blob_handling="all_binary"`` and ``to_pandas(blob_mode="bytes")``
    return. For the scanner to call with the rows' ``_rowaddr``."""
    values = _read_at(snapshot, table_blobs.locate(snapshot, column, _pylist(descriptors), addresses))
    return pa.array(values, pa.large_binary())


def scanned_blob_files(
    snapshot: Snapshot,
    column: str,
    descriptors: Any,
    addresses: Any,
    buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE,
) -> list[BlobFile | None]:
    """A scanned blob column's descriptors as ``BlobFile`` handles (pylance's ``to_pandas()``
    default, ``blob_mode="lazy"``), given each row's address."""
    where = table_blobs.locate(snapshot, column, _pylist(descriptors), addresses)
    pool = ReaderPool(snapshot.storage)
    return [None if w is None else BlobFile(BlobSource(pool, *w), buffer_size) for w in where]


def _pylist(values: Any) -> list:
    return values.to_pylist() if hasattr(values, "to_pylist") else list(values)


def _read_at(snapshot: Snapshot, where: list[tuple[str, int, int] | None]) -> list[bytes | None]:
    """The bytes at each location (None stays None); a file is opened once."""
    readers: dict[str, RangeReader] = {}
    out: list[bytes | None] = []
    try:
        for w in where:
            if w is None or w[2] == 0:
                out.append(None if w is None else b"")
                continue
            path, position, size = w
            if path not in readers:
                readers[path] = snapshot.storage.open_reader(path)
            out.append(readers[path].read_exact(position, size, f"blob bytes at {position}"))
    finally:
        for reader in readers.values():
            reader.close()
    return out


#: The selectors ``read_blob_ranges`` takes, as pylance spells them.
SELECTORS = ("ids", "addresses", "indices")


def read_blob_ranges(
    snapshot: Snapshot,
    column: str,
    requests: Sequence[tuple[int, int, int]],
    selector: str,
    io_buffer_size: int | None = None,
    preserve_order: bool | None = None,
) -> list[tuple[int, int, bytes | None]]:
    """pylance's ``read_blob_ranges``: for each ``(row, offset, length)`` request, ``(request
    index, row address, bytes)``; None for a null blob, whatever the range."""
    if selector not in SELECTORS:
        raise InvalidArgumentError(
            f"selector must be one of 'ids', 'addresses', or 'indices', got {selector!r}"
        )
    rows = [r for r, _, _ in requests]
    spans = [(offset, length) for _, offset, length in requests]
    if any(offset < 0 or length < 0 for offset, length in spans):
        raise OverflowError("can't convert negative int to unsigned")
    _io_buffer_size(io_buffer_size)
    chosen = {name: (rows if name == selector else None) for name in SELECTORS}
    positions, found = _resolve(
        snapshot, chosen["ids"], chosen["addresses"], chosen["indices"], "read_blob_ranges"
    )
    values = _read(snapshot, column, positions, spans)
    return [(i, int(a), v) for i, (a, v) in enumerate(zip(found, values))]


__all__ = [
    "DEFAULT_BLOB_BUFFER_SIZE",
    "BlobFile",
    "BlobSource",
    "read_blob_ranges",
    "read_blobs",
    "take_blobs",
]
