"""Local filesystem storage: positional reads with ``os.pread`` (no seek, thread-safe), atomic
outputs (a temp file beside the target, renamed over it on close), and an atomic put-if-absent
(a temp file beside the target, hard-linked to it: ``link`` fails if the target exists), which the
generic commit handler (``commit_put_if_absent``) publishes manifests with."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, BinaryIO, cast

import pyarrow as pa

from lance_fw._util.pools import pool
from lance_fw.errors import CommitConflictError, CorruptFileError, DatasetNotFoundError, StorageError
from lance_fw.hookspecs import hookimpl
from lance_fw.io.staged_output import StagedOutput, temp_name
from lance_fw.io.storage import RangeReader, Storage


def local_path(uri: str) -> str:
    return uri[len("file://") :] if uri.startswith("file://") else uri


def atomic_output(path: str) -> StagedOutput:
    """A file that appears at ``path`` complete or not at all: a temp file in the target's
    directory (same filesystem, so the rename is atomic), fsynced and ``os.replace``-d over
    ``path`` on close, deleted on abort. Its bytes go to disk in the background as it grows
    (``SyncAheadFile``), so the fsync on close waits for the last few MiB only."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, temp_name(name))
    stream = SyncAheadFile(open(tmp, "xb"))
    return StagedOutput(
        path,
        cast(BinaryIO, stream),
        publish=lambda: os.replace(tmp, path),
        discard=lambda: os.unlink(tmp),
        sync=lambda _: stream.sync(),
    )


#: A local output asks the kernel to write its bytes to disk, on a background thread, each time
#: this many more were written: a 50 MB data file's fsync on close took 200-300 ms of a 700 ms write
#: on this project's CI box, all of it after the encoding had finished.
SYNC_AHEAD_BYTES = 8 << 20
#: Threads of the background sync pool (they wait on the disk, not on the CPU).
SYNC_WORKERS = 2


def _datasync_and_close(fd: int) -> None:
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


class SyncAheadFile:
    """A file being written whose bytes are synced to disk while more are written.

    Each ``SYNC_AHEAD_BYTES`` written, the Python buffer is flushed and ``fdatasync`` runs on a
    duplicate of the file descriptor in the ``sync`` pool (it releases the GIL; the duplicate keeps
    the file open however the writer ends), at most one at a time per file. ``sync`` raises the
    error of any background sync, waits for the one in flight and fsyncs the rest. Used by one
    thread at a time, as ``StagedOutput`` is."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._unsynced = 0
        self._pending: Future[None] | None = None
        self._failed: BaseException | None = None  # a background sync's error, raised by ``sync``

    @property
    def closed(self) -> bool:
        return self._file.closed

    def write(self, data: bytes | bytearray | memoryview) -> int:
        written = self._file.write(data)
        self._unsynced += written
        if self._unsynced >= SYNC_AHEAD_BYTES and (self._pending is None or self._pending.done()):
            if self._pending is not None and self._failed is None:  # kept, not lost with its future
                self._failed = self._pending.exception()
            self._file.flush()
            self._pending = pool("sync", SYNC_WORKERS).submit(
                _datasync_and_close, os.dup(self._file.fileno())
            )
            self._unsynced = 0
        return written

    def tell(self) -> int:
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def sync(self) -> None:
        """Make every byte written durable.

        Raises:
            OSError: a background sync or this one failed.
        """
        self._file.flush()
        if self._failed is not None:
            raise self._failed
        if self._pending is not None:
            self._pending.result()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


#: Local ranges further apart than this are read on their own, by ``read_ranges`` and by
#: ``read_into`` alike: a pread costs about a microsecond, copying 64 KiB of page cache between two
#: chunks several (a take of 100 rows read ~2 MB per column); and beside a decoding thread each
#: call more also costs a GIL handoff (tens of microseconds), copying a few KiB a microsecond.
LOCAL_COALESCE_GAP = 4096
#: Reads of at least this many bytes go into pyarrow's memory pool (``LocalReader.read_buffer``).
POOL_READ_BYTES = 1 << 20


#: Buffers one ``os.preadv`` call takes at most (Linux's IOV_MAX).
IOV_MAX = 1024


def _preadv_all(fd: int, views: list[memoryview], offset: int, want: int | None = None) -> int:
    """Read the file from ``offset`` into ``views`` in turn, ``os.preadv`` after ``os.preadv``
    until they are full or the file ends; the bytes read. ``want``: the views' total length,
    where the caller knows it. The first read takes ``views`` as they are; only a short read
    makes the list of what is left (a run of pages reads hundreds of groups, each one call).

    Raises:
        OSError: the read failed."""
    if want is None:
        want = sum(len(view) for view in views)
    done = os.preadv(fd, views, offset) if want else 0
    while 0 < done < want:
        got = os.preadv(fd, _after(views, done), offset + done)
        if got == 0:  # end of file
            break
        done += got
    return done


def _after(views: list[memoryview], skip: int) -> list[memoryview]:
    """``views`` without their first ``skip`` bytes (what a short ``preadv`` left to read)."""
    out = []
    for view in views:
        if skip >= len(view):
            skip -= len(view)
            continue
        out.append(view[skip:])
        skip = 0
    return out


class LocalReader(RangeReader):
    coalesce_gap = LOCAL_COALESCE_GAP
    prefetch_pays = False

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1  # so close() is safe even when open fails
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{path}: no such file") from exc
        except OSError as exc:
            raise StorageError(f"{path}: {exc}") from exc
        info = os.fstat(self._fd)
        if not stat.S_ISREG(info.st_mode):  # os.open accepts a directory; reading it fails later
            self.close()
            raise StorageError(f"{path}: not a regular file")
        self._size = info.st_size
        #: the inode and its change times: a file rewritten or replaced gets new ones (the
        #: shared metadata also compares the bytes it parsed, ``read_support.shared_metadata``)
        self._identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def size(self) -> int:
        return self._size

    def identity(self) -> Hashable:
        return self._identity

    def read(self, offset: int, length: int) -> bytes:
        try:
            return os.pread(self._fd, length, offset)
        except OSError as exc:
            raise StorageError(f"{self.path}: reading {length} bytes at {offset}: {exc}") from exc

    def read_buffer(self, offset: int, length: int) -> memoryview:
        """Large reads land in a buffer of pyarrow's memory pool (``os.preadv``): the pool reuses
        freed pages, where ``os.pread``'s fresh bytes object makes the kernel fault in and zero
        every page first (a 128 MiB page read: ~62 ms as bytes, ~23 ms into the pool, measured)."""
        if length < POOL_READ_BYTES:
            return memoryview(self.read(offset, length))
        view = memoryview(pa.allocate_buffer(length))
        try:
            done = _preadv_all(self._fd, [view], offset)  # short at the end of file, as ``read``
        except OSError as exc:
            raise StorageError(f"{self.path}: reading {length} bytes at {offset}: {exc}") from exc
        return view[:done]

    def read_into(self, ranges: Sequence[tuple[int, int]], out: memoryview, at: Sequence[int]) -> None:
        """One ``os.preadv`` per run of ranges at most ``coalesce_gap`` apart in the file (a page's
        buffers, and pages laid next to each other), each range's bytes landing where ``at``
        says: no copy after the read. The bytes between two ranges of a run are read into a
        scratch buffer and dropped.

        Why one tight loop: a scan's run of pages reads hundreds of ranges, and this Python holds
        the GIL that the other decoding thread waits for (pylance's 8192-row pages, two numeric
        columns: 13 ms for 7 ms of reads with a function call and a size sum per group). Why
        bridge the gaps: every call gives up the GIL and waits to take it back while the other
        thread decodes; pylance pads a page's 32-byte first buffer to 64 bytes, so each page was
        two calls (584 calls a 2-column scan of its 8192-row pages)."""
        group: list[memoryview] = []
        offset = end = -1
        scratch: memoryview | None = None
        for i in sorted(range(len(ranges)), key=ranges.__getitem__):
            start, length = ranges[i]
            if not length:
                continue
            gap = start - end
            if not group or gap < 0 or gap > self.coalesce_gap or len(group) >= IOV_MAX - 1:
                if group:
                    self._read_views(group, offset, end - offset)
                group, offset = [], start
            elif gap:
                if scratch is None:
                    scratch = memoryview(bytearray(self.coalesce_gap))
                group.append(scratch[:gap])
            group.append(out[at[i] : at[i] + length])
            end = start + length
        if group:
            self._read_views(group, offset, end - offset)

    def _read_views(self, views: list[memoryview], offset: int, want: int) -> None:
        """``want`` bytes from ``offset`` into ``views`` (adjacent in the file, at most
        ``IOV_MAX``): one ``os.preadv``, more only after a short read (``_preadv_all``)."""
        try:
            done = _preadv_all(self._fd, views, offset, want)
        except OSError as exc:
            raise StorageError(f"{self.path}: reading {want} bytes at {offset}: {exc}") from exc
        if done < want:
            raise CorruptFileError(
                self.path, f"short read of {want} bytes at {offset}: the file is truncated"
            )

    def close(self, _close: Callable[[int], None] = os.close) -> None:
        # ``_close`` bound at definition: ``__del__`` may run at interpreter exit, after ``os`` is gone
        if self._fd >= 0:
            _close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


class LocalStorage(Storage):
    """Files on the local filesystem (plain paths and ``file://`` URIs).

    Every method is thread-safe and safe against other processes using the same directory; outputs
    and :meth:`put_if_absent` are atomic (see ``Storage``). No ``storage_options`` are read.
    """

    scheme = "file"
    atomic_put_if_absent = True

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    def open_reader(self, path: str) -> RangeReader:
        return LocalReader(local_path(path))

    def open_output(self, path: str) -> BinaryIO:
        path = local_path(path)
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            return atomic_output(path)  # type: ignore[return-value]
        except OSError as exc:  # e.g. a parent is a regular file, or no permission
            raise StorageError(f"{path}: cannot create the file: {exc}") from exc

    def list_dir(self, path: str) -> list[str]:
        try:
            return os.listdir(local_path(path))
        except (FileNotFoundError, NotADirectoryError):  # nothing is listed there: no dataset
            return []
        except OSError as exc:
            raise StorageError(f"{local_path(path)}: cannot list the directory: {exc}") from exc

    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def delete(self, path: str) -> None:
        try:
            os.unlink(local_path(path))
        except (FileNotFoundError, NotADirectoryError):  # already absent
            pass
        except OSError as exc:
            raise StorageError(f"{local_path(path)}: cannot delete: {exc}") from exc

    def mtime(self, path: str) -> float:
        return os.stat(local_path(path)).st_mtime

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` holding ``data`` only if absent (see ``Storage.put_if_absent``).

        The bytes go to a temp file beside the target, are fsynced, then ``os.link``-ed to the
        target: ``link`` fails with EEXIST when the target exists, atomically against every other
        process on the machine (and on NFS v3+), and the target appears whole because its content
        was complete before the name existed. The temp file is removed in every case.

        Raises:
            CommitConflictError: a file already exists at ``path``.
            StorageError: the temp file cannot be written or linked (then ``path`` was not created).
        """
        final = local_path(path)
        directory, name = os.path.split(final)
        tmp = os.path.join(directory, temp_name(name))
        try:
            os.makedirs(directory or ".", exist_ok=True)
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, final)
        except FileExistsError as exc:
            raise CommitConflictError(f"{final} already exists: another writer created it first") from exc
        except OSError as exc:
            raise StorageError(f"{final}: cannot create the file: {exc}") from exc
        finally:
            _remove_quietly(tmp)


def _remove_quietly(path: str) -> None:
    """Drop a temp file; once the target is linked a failure here must not fail the caller
    (``cleanup_old_versions`` removes stray ``.tmp-*`` files)."""
    try:
        os.unlink(path)
    except OSError:
        pass


@hookimpl(trylast=True)
def lance_storage(uri: str, options: Mapping[str, Any]) -> Storage | None:
    if "://" in uri and not uri.startswith("file://"):
        return None
    return LocalStorage(options)
