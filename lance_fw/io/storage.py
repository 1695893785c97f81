"""What a storage backend must provide, and the helpers every backend shares.

A backend is chosen per URI through the ``lance_storage`` hook (see ``hookspecs``). Paths passed to
a ``Storage`` are full URIs/paths; datasets join them with :func:`join_uri`.
"""

from __future__ import annotations

import abc
import re
import types
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, BinaryIO

from lance_fw.errors import CorruptFileError, InvalidArgumentError, StorageError, UnsupportedFeatureError

#: Ranges closer than this are read in one request (a gap this small costs less than a round trip).
COALESCE_GAP = 64 * 1024


#: A URI scheme (``s3:``, ``file:``) or a Windows drive (``C:``) at the start of a stored path.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def unsafe_path_reason(part: str) -> str | None:
    """Why the relative path ``part`` could name something outside the directory it is joined to
    (None when it cannot). Manifests and callers store file paths relative to the dataset; one
    crafted path must never make a read, write or delete leave the dataset root."""
    if part.startswith("/") or "\\" in part:
        return "is absolute (or uses backslashes)"
    if _SCHEME.match(part):
        return "names a URI scheme or drive"
    if ".." in part.split("/"):
        return "climbs out with '..'"
    if "\x00" in part:
        return "contains a NUL byte"
    return None


def join_uri(base: str, *parts: str) -> str:
    """``base`` joined with relative ``parts``; a part that could leave ``base`` is refused here,
    the one place every dataset path is built, as a ``CorruptFileError`` naming it (stored paths
    come from manifests; paths from callers are checked earlier, as bad arguments)."""
    out = base.rstrip("/")
    for p in parts:
        reason = unsafe_path_reason(p)
        if reason is not None:
            raise CorruptFileError(
                out, f"stored path {p!r} {reason}: it points outside the dataset, refusing to use it"
            )
        out = f"{out}/{p.strip('/')}"
    return out


def coalesce_ranges(
    ranges: Sequence[tuple[int, int]], gap: int = COALESCE_GAP
) -> list[tuple[int, int, list[int]]]:
    """Merge (offset, length) ranges that are within ``gap`` bytes of each other.

    Returns (start, length, indices of the input ranges it covers) per merged request, in offset
    order; each request's indices are in offset order too (ties in input order). One pass over the
    ranges sorted by offset, growing each request's index list in place: a take of many rows asks
    for tens of thousands of ranges, and copying the list per range made the merge quadratic.
    (Plain Python: a take of a few rows merges a handful of ranges, where numpy's setup costs more
    than the whole merge.)
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    starts: list[int] = []
    ends: list[int] = []
    members: list[list[int]] = []
    for i in order:
        off, length = ranges[i]
        if members and off <= ends[-1] + gap:
            members[-1].append(i)
            if off + length > ends[-1]:
                ends[-1] = off + length
        else:
            starts.append(off)
            ends.append(off + length)
            members.append([i])
    return [(s, e - s, m) for s, e, m in zip(starts, ends, members)]


class RangeReader(abc.ABC):
    """Positional reads from one file. Implementations must be safe to call from several threads."""

    path: str
    #: Ranges closer than this are read as one request (``coalesce_ranges``). A request to an object
    #: store costs a round trip, so reading the gap between two ranges is cheaper; a backend whose
    #: reads are cheap (local files: one syscall) sets it lower, as copying the gap costs more.
    coalesce_gap: int = COALESCE_GAP
    #: Whether fetching the pages of a scan's next rows ahead, in one call for all its columns
    #: (``LanceFileReader.prefetch``), pays: on an object store it saves a round trip per page.
    #: A backend whose reads are copies from memory (local files: the page cache) says no: the
    #: pool threads that decode the pages then read them, side by side, where the reading thread
    #: read them one after the other first (2M rows of every column: 220-265 ms -> 182-196 ms).
    prefetch_pays: bool = True

    @abc.abstractmethod
    def size(self) -> int: ...

    @abc.abstractmethod
    def read(self, offset: int, length: int) -> bytes: ...

    def read_buffer(self, offset: int, length: int) -> memoryview:
        """``read`` as a buffer for decoders (numpy views it without a copy). A backend that can
        read straight into memory it chooses overrides this: pages are tens of MiB, and where the
        bytes land (fresh pages the kernel must fault in, or a pool's reused ones) costs more than
        the read itself.

        Returns:
            At most ``length`` bytes from ``offset`` (fewer only at the end of the file).
        Raises:
            StorageError: the backend failed.
        """
        return memoryview(self.read(offset, length))

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Read many ranges, coalescing nearby ones into single requests (``read_buffer``)."""
        out: list[memoryview | None] = [None] * len(ranges)
        for start, length, idx in coalesce_ranges(ranges, self.coalesce_gap):
            blob = self.read_buffer(start, length)
            for i in idx:
                off, ln = ranges[i]
                out[i] = blob[off - start : off - start + ln]
        return out  # type: ignore[return-value]

    def read_into(self, ranges: Sequence[tuple[int, int]], out: memoryview, at: Sequence[int]) -> None:
        """Read range ``i`` into ``out[at[i] : at[i] + length]``: the pages of a run laid out as
        their decoder joins them, so that it need not copy them together (``take.joined_bytes``).
        A backend that can read into memory it is given overrides this (the default reads, then
        copies). Not atomic: on an error ``out`` holds some of the bytes.

        Raises:
            CorruptFileError: a range reaches past the end of the file.
            StorageError: the backend failed.
        """
        for (off, length), blob, where in zip(ranges, self.read_ranges(ranges), at, strict=True):
            if len(blob) != length:
                raise CorruptFileError(
                    self.path, f"short read of {length} bytes at {off}: the file is truncated"
                )
            out[where : where + length] = memoryview(blob).cast("B")  # (pyarrow's buffers are 'b')

    def identity(self) -> Hashable | None:
        """What tells this file's bytes apart from any other bytes ever at its path, known
        without a request: a file whose identity is unchanged still holds the bytes it held. The
        readers of one data file in a process then share what they parsed of it across opens of
        a dataset (``read_support.shared_metadata``).

        Returns:
            A hashable value, or None (the default) where the backend cannot tell; nothing is
            then shared beyond one table version's cache.
        """
        return None

    def tail(self, length: int) -> bytes:
        """The file's last ``min(length, size)`` bytes (a Lance file's footer and metadata).

        A backend whose open already fetched them (an object store answers a suffix-range GET
        with the size) returns them without another request."""
        start = max(0, self.size() - length)
        return self.read_exact(start, self.size() - start, "file tail")

    def read_exact(self, offset: int, length: int, what: str) -> bytes:
        """Read and check the length, so truncation becomes a CorruptFileError naming the file."""
        if offset < 0 or length < 0 or offset + length > self.size():
            raise CorruptFileError(
                self.path,
                f"{what} at [{offset}, {offset + length}) lies outside the "
                f"file ({self.size()} bytes); the file is truncated or corrupt",
            )
        data = self.read(offset, length)
        if len(data) != length:
            raise CorruptFileError(self.path, f"short read of {what}")
        return data

    def close(self) -> None:  # noqa: B027 - optional hook: most readers hold nothing to release
        pass

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Storage(abc.ABC):
    """A filesystem-like backend for one URI scheme, chosen by the ``lance_storage`` hook.

    Paths are full URIs/paths as :func:`join_uri` builds them. Failures the caller cannot fix by
    changing arguments are raised as ``StorageError`` (an ``OSError``) naming the path; a missing
    file is ``DatasetNotFoundError`` where the method says so.

    Thread-safety: one ``Storage`` is shared by every thread of a dataset (scans, ``take``, writes
    of several files), so every method must be safe to call concurrently. Streams and readers it
    returns are used by one thread at a time, except ``RangeReader.read`` (see there).

    Atomicity is what a backend must get right for the table format to be safe: a file published
    by ``open_output`` is seen by every reader either whole or not at all. Publishing a manifest
    exactly once needs "create if absent": a backend that can do it atomically sets
    ``atomic_put_if_absent`` and implements :meth:`put_if_absent`, and the built-in generic commit
    handler then makes its commits safe with no handler of its own. Otherwise the scheme needs a
    commit handler plugin (``lance_commit_handler``).
    """

    scheme: str = ""
    #: Whether :meth:`put_if_absent` is atomic against other processes and machines.
    atomic_put_if_absent: bool = False
    #: Fragments a scan reads at once when its caller does not say (``fragment_readahead``). On an
    #: object store every fragment's first read waits a round trip, which reading the next
    #: fragments meanwhile hides; local files answer at once, so the default there stays 0 (one
    #: fragment at a time, no worker threads).
    default_readahead: int = 0
    #: The ``storage_options`` this storage was opened with; commit handlers receive them too.
    options: Mapping[str, Any] = types.MappingProxyType({})

    @abc.abstractmethod
    def open_reader(self, path: str) -> RangeReader:
        """Open ``path`` for positional reads.

        Args:
            path: the file's full path or URI.
        Returns:
            A ``RangeReader`` whose ``size`` is fixed when it opens (a file replaced later is not
            seen half old, half new by it).
        Raises:
            DatasetNotFoundError: ``path`` does not exist.
            StorageError: it exists but cannot be read (not a regular file, no permission, ...).
        """

    @abc.abstractmethod
    def open_output(self, path: str) -> BinaryIO:
        """Open a new file at ``path`` for writing, creating missing parent directories.

        Args:
            path: the file's full path or URI; an existing file there is replaced on close.
        Returns:
            A writable binary stream (``write``, ``close``, context manager). Atomic: until
            ``close`` returns, readers of ``path`` see no file (or the one it replaces), never a
            partial one; after it returns, the whole file. A stream that also has ``abort()``
            publishes nothing when aborted or when its ``with`` block exits by an exception (the
            local backend does this); callers of a stream without ``abort`` delete the file.
        Raises:
            StorageError: the file cannot be created, written or published.
        """

    @abc.abstractmethod
    def list_dir(self, path: str) -> list[str]:
        """List a directory.

        Args:
            path: the directory's full path or URI.
        Returns:
            Names (not paths) of its entries, in no particular order; empty when it does not exist.
            Outputs not yet closed may show up under temporary names (local: ``.tmp-*``), never
            under their final name.
        Raises:
            StorageError: it exists but cannot be listed.
        """

    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists now (a closed output exists, an open one does not).

        Raises:
            StorageError: the store cannot answer.
        """

    @abc.abstractmethod
    def delete(self, path: str) -> None:
        """Delete one file; deleting a missing file is not an error (deletes are retried).

        Raises:
            StorageError: it exists and cannot be deleted.
        """

    @abc.abstractmethod
    def mtime(self, path: str) -> float | None:
        """Last modification, seconds since the epoch; None when the store does not report one
        (callers treat an unknown age as new: ``cleanup_old_versions`` never deletes by it).

        Raises:
            OSError: ``path`` does not exist (``FileNotFoundError``) or cannot be examined.
        """

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` holding exactly ``data``, only if no file is there.

        Args:
            path: the file's full path or URI (a manifest, for commits).
            data: the whole content.
        Returns:
            None once the file is published whole (readers never see part of it).
        Raises:
            CommitConflictError: a file already exists at ``path`` (another writer got there first);
                nothing was changed.
            UnsupportedFeatureError: this backend cannot create atomically (the default); check
                ``atomic_put_if_absent`` first.
            StorageError: the store failed; the file may or may not exist afterwards, and the caller
                must look (``exists`` + ``read_bytes``) before assuming either.

        Atomicity: when ``atomic_put_if_absent`` is true, of several concurrent calls for one path,
        from any process or machine, exactly one succeeds.
        """
        raise UnsupportedFeatureError(
            f"{type(self).__name__} ({self.scheme or 'local'}) has no atomic "
            f"put-if-absent; {path} cannot be created exactly once by it"
        )

    def read_bytes(self, path: str) -> bytes:
        """The whole file at ``path``; raises as ``open_reader`` does."""
        with self.open_reader(path) as r:
            return r.read(0, r.size())

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` as the whole file at ``path``, atomically as ``open_output`` promises."""
        with self.open_output(path) as f:
            f.write(data)


def resolve_storage(uri: str, storage_options: dict | None = None) -> Storage:
    """Ask the storage plugins for a backend that handles ``uri``."""
    from lance_fw.plugin_manager import get_plugin_manager

    options = dict(storage_options or {})
    check_storage_options(options)
    storage = get_plugin_manager().hook.lance_storage(uri=uri, options=options)
    if storage is None:
        raise StorageError(f"no storage plugin handles {uri!r}; installed: {_names()}")
    return storage


def check_storage_options(options: Mapping[str, Any]) -> None:
    """Refuse a ``storage_options`` key that no plugin declares (``lance_storage_options``): an
    option nobody reads would be silently ignored.

    Raises:
        InvalidArgumentError: naming the unknown keys and listing the known ones.
    """
    from lance_fw.plugin_manager import registry

    if not options:
        return
    known = registry.storage_options
    unknown = sorted(str(k) for k in options if k not in known)
    if unknown:
        raise InvalidArgumentError(
            f"unknown storage_options {unknown}; the installed plugins read {sorted(known) or 'none'}"
        )


def _names() -> list[str]:
    from lance_fw.plugin_manager import plugins

    return [p["name"] for p in plugins() if "lance_storage" in p["hooks"]]
