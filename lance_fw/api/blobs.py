"""pylance's ``take_blobs``: blob column values as file-like ``BlobFile`` objects.

Why a file-like object: pylance hands blobs out as ``BlobFile`` handles (``read``, ``seek``,
``tell``, ``size``, ``read_range``) so that code streams them; code written against it must work
unchanged. lance_fw reads each blob's bytes in one ranged read (``table.blobs``) and serves the
handle from memory: the same calls, the same bytes, no lazy reading.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from lance_fw._util.refusals import NotImplementedInPylanceError
from lance_fw.api.row_columns import live_positions
from lance_fw.errors import InvalidArgumentError
from lance_fw.table import blobs as table_blobs
from lance_fw.table import flags as feature_flags
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.take import addresses_of, live_addresses

#: pylance's default read buffer of a ``BlobFile`` (accepted; lance_fw holds the whole blob)
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


class BlobFile(io.BytesIO):
    """One blob's bytes as a read-only binary file (pylance's ``BlobFile`` calls)."""

    def size(self) -> int:
        """The blob's length in bytes."""
        return len(self.getbuffer())

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset``; the read position does not move."""
        if offset < 0 or length < 0 or offset + length > self.size():
            raise InvalidArgumentError(
                f"read_range: [{offset}, {offset + length}) is outside a {self.size()}-byte blob"
            )
        return bytes(self.getbuffer()[offset : offset + length])

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """``read_range`` for each ``(offset, length)``, in the order given."""
        return [self.read_range(offset, length) for offset, length in ranges]

    def writable(self) -> bool:
        return False

    def write(self, data: Any) -> int:
        raise io.UnsupportedOperation("a BlobFile is read-only")

    def __repr__(self) -> str:
        return f"<BlobFile size={self.size()}>"


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
    given = [s for s in (ids, addresses, indices) if s is not None]
    if len(given) != 1:
        raise InvalidArgumentError("take_blobs: exactly one of ids, indices, or addresses must be specified")
    if buffer_size <= 0:
        raise InvalidArgumentError(f"take_blobs: buffer_size must be positive, got {buffer_size}")
    selection: Any = given[0]
    wanted = np.asarray(selection.to_pylist() if hasattr(selection, "to_pylist") else selection)
    if indices is None:
        asked = wanted.astype(np.uint64)
        stable = snapshot.manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS
        live = (
            addresses_of(snapshot, asked) if ids is not None and stable else live_addresses(snapshot, asked)
        )
        if len(live) != len(asked):  # as pylance: no None stands in for a deleted row
            raise NotImplementedInPylanceError(
                "take_blobs: ids or addresses of deleted rows are not supported"
            )
        wanted = live_positions(snapshot, live)
    values = table_blobs.take_blobs(snapshot, column, wanted.astype(np.int64))
    return [None if v is None else BlobFile(v) for v in values]


__all__ = ["DEFAULT_BLOB_BUFFER_SIZE", "BlobFile", "take_blobs"]
