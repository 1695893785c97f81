"""Storage for ``s3://`` (and ``s3a://``) over s3fs, configured as pylance users configure it.

Why a plugin of its own instead of the generic fsspec one:

* **Configuration.** pylance users pass object_store's keys (``aws_access_key_id``, ``aws_endpoint``,
  ``allow_http`` ...) and set the standard ``AWS_*`` environment. s3fs takes different keyword
  arguments, so each key is translated here (:mod:`lance_fw_plugins.s3_options`); keys pylance knows
  but lance_fw cannot honour raise instead of being ignored.
* **Freshness.** s3fs caches directory listings by default, so a dataset re-opened in a long-lived
  process would stay on an old version. The filesystem is opened with no listing cache: every
  ``list_dir``/``exists``/``info`` asks the server, and other processes' commits are seen.
* **Safe commits.** ``put_if_absent`` is a conditional PUT (``If-None-Match: *``): the server
  creates the object only if no object has that key, atomically against every other client. AWS S3
  and SeaweedFS enforce it (412 Precondition Failed to the loser), so ``atomic_put_if_absent`` is
  true and the generic put-if-absent commit handler makes commits safe across machines.
* **Speed.** Range reads are coalesced (nearby ranges become one GET) and fetched concurrently on
  s3fs's event loop, a bounded number at a time.

s3fs is imported only when an ``s3://`` URI is opened; without it a ``StorageError`` names the
extra to install (``pip install lance_fw[s3]``). The requests themselves (retried GETs into the
caller's buffer, telling a lost conditional PUT from a failure) are :mod:`lance_fw_plugins.s3_requests`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from lance_fw.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    StorageError,
    UnsupportedFeatureError,
)
from lance_fw.hookspecs import hookimpl
from lance_fw.io.storage import RangeReader, Storage, coalesce_ranges
from lance_fw_plugins.fsspec_cloud import ObjectOutput
from lance_fw_plugins.s3_options import OPTION_DESCRIPTIONS, s3fs_kwargs
from lance_fw_plugins.s3_requests import (
    botocore_sends_if_none_match,
    client_errors,
    fill_from,
    get_object,
    get_object_into,
    get_object_meta,
    is_conflict,
)

if TYPE_CHECKING:  # s3fs is imported when an s3:// URI is opened (it ships no type hints)
    from s3fs import S3FileSystem

#: URI schemes this plugin answers (s3a is Hadoop's spelling; s3fs and pylance accept both).
SCHEMES = ("s3", "s3a")
#: Coalesced range GETs in flight at once per ``read_ranges`` call (the connection pool matches it).
MAX_PARALLEL_RANGES = 32
#: Ranges closer than this become one GET. The GETs of one ``read_ranges`` run concurrently, so a
#: few more requests cost no more latency, while every gap byte is streamed through Python: with
#: object_store's 1 MiB a take of 100 rows pulled 33 MiB to use 1.7 MiB, and took longer (wall
#: 524 -> 278 ms, loopback SeaweedFS, bench/s3_bench.py). Local files use the smaller COALESCE_GAP.
S3_COALESCE_GAP = 256 * 1024
#: A coalesced range longer than this is fetched as several GETs in parallel: one connection
#: streams far below what the store serves to several.
PART_BYTES = 4 * 1024 * 1024
#: Bytes of an object's end read when it is opened (a Lance file's footer, offset tables and
#: column metadata live there; the file reader reads the same amount, TAIL_PREFETCH).
OPEN_TAIL_BYTES = 64 * 1024
#: Objects whose opening (size, ETag, tail) an ``S3Storage`` remembers, so re-reading a dataset's
#: files (every scan and take opens them) costs no request.
OPENED_CACHE_ENTRIES = 512
#: Lifetime of the presigned URLs ranged GETs use, and how long one is reused before a new one.
PRESIGN_EXPIRES_S = 900
PRESIGN_REUSE_S = 300
HTTP_PARTIAL_CONTENT = 206
#: Fragments a scan of an ``s3://`` dataset reads at once by default (pylance reads several too).
SCAN_READAHEAD = 4
#: Where s3fs reports an object's modification time.
_MTIME_KEY = "LastModified"


def _import_s3fs() -> ModuleType:
    try:
        import s3fs
    except ImportError as exc:
        raise StorageError("s3:// URIs need s3fs, which is not installed: pip install lance_fw[s3]") from exc
    return s3fs


@dataclass(frozen=True)
class OpenedObject:
    """What opening an object learnt: its size, its ETag (None when the store sends none) and its
    last ``len(tail)`` bytes. Enough to open it again without a request (``S3Storage`` keeps these
    per path): Lance data files are written once under unique names, and every later GET carries
    ``If-Match`` on this ETag, so a replaced object fails the read instead of mixing two objects."""

    size: int
    etag: str | None
    tail: bytes


def _total_size(content_range: str | None, body: bytes) -> int | None:
    """The object size from a ranged GET's ``Content-Range: bytes a-b/total`` (None if absent)."""
    if not content_range or "/" not in content_range:
        return None
    total = content_range.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


class S3Reader(RangeReader):
    """Positional reads of one object, as it was when the reader opened.

    The open is one suffix-range GET of the object's last OPEN_TAIL_BYTES (no HEAD): its
    ``Content-Range`` gives the size, its ETag fixes the version, and the bytes (where a Lance file
    keeps its footer and metadata) are kept for ``tail``, so reading the file's metadata costs no
    further request. (``read``/``read_ranges`` always ask the server, conditionally.)
    Every later GET carries ``If-Match: <etag>``, so an object replaced while the reader is open
    (``open_output`` on the same key) fails the read with a ``StorageError`` instead of returning
    the new object's bytes at the old object's offsets (the kernel's snapshot promise; S3 has no
    file handles to keep the old bytes).
    """

    def __init__(
        self,
        fs: S3FileSystem,
        path: str,
        opened: OpenedObject | None = None,
        on_replaced: Callable[[str], None] | None = None,
    ) -> None:
        self.fs, self.path = fs, path
        self._bucket, self._key, _ = fs.split_path(path)
        self._on_replaced = on_replaced
        self.opened = opened if opened is not None else self._open()
        self._size = self.opened.size
        self._url: tuple[str, float] | None = None  # presigned GET URL, when it was made
        self._http: Any = None
        self._condition = {"IfMatch": self.opened.etag} if self.opened.etag else {}

    def _open(self) -> OpenedObject:
        from fsspec.asyn import sync

        try:
            body, meta = sync(
                self.fs.loop, get_object_meta, self.fs, self._bucket, self._key, f"bytes=-{OPEN_TAIL_BYTES}"
            )
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{self.path}: no such object") from exc
        except client_errors():
            return self._open_by_head()  # e.g. 416 for an empty object: HEAD says what it is
        size = _total_size(meta.get("ContentRange"), body)
        if size is None:  # a whole-object answer (some stores ignore a suffix range on small objects)
            size = len(body)
        if len(body) > size:
            raise CorruptFileError(self.path, f"the store sent {len(body)} bytes of a {size}-byte object")
        return OpenedObject(size, meta.get("ETag"), bytes(body))

    def _open_by_head(self) -> OpenedObject:
        try:
            info = self.fs.info(self.path)
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{self.path}: no such object") from exc
        except client_errors() as exc:
            raise StorageError(f"{self.path}: {exc}") from exc
        if info.get("type") != "file":
            raise StorageError(f"{self.path}: not an object (a prefix)")
        return OpenedObject(int(info["size"]), info.get("ETag"), b"")

    def size(self) -> int:
        return self._size

    def tail(self, length: int) -> bytes:
        """The object's last ``length`` bytes, from what the open kept when it holds them."""
        length = min(length, self._size)
        if length <= len(self.opened.tail):
            return self.opened.tail[len(self.opened.tail) - length :]
        return super().tail(length)

    def read(self, offset: int, length: int) -> bytes:
        if length == 0:
            return b""
        return self._run(self._get_all, [(offset, length)], f"{length} bytes at {offset}")[0]

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Coalesce nearby ranges, split long ones into parts, then GET them all concurrently (at
        most MAX_PARALLEL_RANGES in flight): one round trip's latency instead of one per range, and
        a large read streams over several connections."""
        merged = [m for m in coalesce_ranges(ranges, S3_COALESCE_GAP) if m[1] > 0]
        if not merged:
            return [memoryview(b"")] * len(ranges)
        buffers = [memoryview(bytearray(n)) for _, n, _ in merged]
        jobs = [
            (part_start, buffer[part_start - start : part_start - start + part_length])
            for (start, length, _), buffer in zip(merged, buffers)
            for part_start, part_length in _split(start, length)
        ]
        self._run(self._fill_all, jobs, f"{len(jobs)} ranges")
        return self._slices(ranges, merged, buffers)

    def _run(self, coroutine_function: Callable[[Any], Awaitable[Any]], spans: list[Any], what: str) -> Any:
        """Run the GETs on s3fs's event loop (thread-safe: any thread may call in)."""
        from fsspec.asyn import sync

        try:
            return sync(self.fs.loop, coroutine_function, spans)
        except client_errors() as exc:
            if is_conflict(exc):
                if self._on_replaced is not None:
                    self._on_replaced(self.path)
                raise StorageError(
                    f"{self.path} was replaced after it was opened (its ETag changed); "
                    "reopen it to read the new object"
                ) from exc
            raise StorageError(f"{self.path}: reading {what}: {exc}") from exc

    async def _get_all(self, spans: list[tuple[int, int]]) -> list[bytes]:
        limit = asyncio.Semaphore(MAX_PARALLEL_RANGES)

        async def one(start: int, length: int) -> bytes:
            async with limit:
                return await self._get(start, start + length)

        return list(await asyncio.gather(*(one(s, n) for s, n in spans)))

    async def _presigned_url(self) -> str | None:
        """A presigned GET URL of the object (None when the client cannot make one), made anew
        once it is PRESIGN_REUSE_S old. Signing it is botocore's; it is the same signature a
        ``get_object`` call would carry, moved into the query string."""
        now = time.monotonic()
        if self._url is not None and now - self._url[1] < PRESIGN_REUSE_S:
            return self._url[0]
        try:
            await self.fs.set_session()
            client = await self.fs.get_s3(self._bucket)
            url = await client.generate_presigned_url(
                "get_object", Params={"Bucket": self._bucket, "Key": self._key}, ExpiresIn=PRESIGN_EXPIRES_S
            )
            http = client._endpoint.http_session
        except Exception:
            self._url = None
            return None
        self._url, self._http = (url, now), http
        return url

    async def _fast_fill(self, span: str, out: memoryview) -> int | None:
        """One ranged GET of the presigned URL through the client's own HTTP session (its pool,
        TLS and proxy settings), filling ``out``; None unless the server answered 206 with it.

        A ``get_object`` call spends milliseconds of Python in botocore's request pipeline (event
        hooks, parameter validation, signing, response parsing); a take issues dozens, one event
        loop runs them all, and that loop was the bottleneck. Anything but a plain 206 (a 412 for
        a replaced object, 403, 404, a dropped connection, a server ignoring the range) returns
        None, and the caller repeats the GET through ``get_object``, whose errors, retries and
        messages are the ones every other request has."""
        url = await self._presigned_url()
        if url is None:
            return None
        from botocore.awsrequest import AWSPreparedRequest

        headers = {"Range": span}
        if self.opened.etag:
            headers["If-Match"] = self.opened.etag
        try:
            response = await self._http.send(AWSPreparedRequest("GET", url, headers, None, True))
        except Exception:
            return None
        raw = response.raw
        try:
            if response.status_code != HTTP_PARTIAL_CONTENT:
                return None
            return await fill_from(raw.content, out)
        except Exception:
            return None
        finally:
            raw.release()

    async def _fill_all(self, jobs: list[tuple[int, memoryview]]) -> None:
        """Fill each ``(offset, view)`` with the object's bytes at ``offset`` (ranged, conditional
        GETs, at most MAX_PARALLEL_RANGES in flight); a short or long answer means the object is
        not as long as the ranges asked of it: truncated or not what the manifest says it is."""
        limit = asyncio.Semaphore(MAX_PARALLEL_RANGES)

        async def one(start: int, view: memoryview) -> None:
            async with limit:
                span = f"bytes={start}-{start + len(view) - 1}"
                got = await self._fast_fill(span, view)
                if got is None:
                    got = await get_object_into(
                        self.fs, self._bucket, self._key, view, Range=span, **self._condition
                    )
            if got != len(view):
                raise CorruptFileError(
                    self.path,
                    f"{got} bytes at [{start}, {start + len(view)}) where "
                    f"{len(view)} were asked for; the object is truncated",
                )

        await asyncio.gather(*(one(start, view) for start, view in jobs))

    async def _get(self, start: int, end: int) -> bytes:
        """One ranged, conditional GET."""
        return await get_object(
            self.fs, self._bucket, self._key, Range=f"bytes={start}-{end - 1}", **self._condition
        )

    @staticmethod
    def _slices(
        ranges: Sequence[tuple[int, int]], merged: list[tuple[int, int, list[int]]], buffers: list[memoryview]
    ) -> list[memoryview]:
        """Each requested range as a view into the merged buffer that covers it (empty ranges,
        dropped from the requests, are empty views)."""
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        for (start, _, idx), view in zip(merged, buffers):
            for i in idx:
                off, ln = ranges[i]
                out[i] = view[off - start : off - start + ln]
        return out


def _split(start: int, length: int) -> list[tuple[int, int]]:
    """``[start, start + length)`` as GETs of at most PART_BYTES each."""
    return [(s, min(PART_BYTES, start + length - s)) for s in range(start, start + length, PART_BYTES)]


class S3Storage(Storage):
    """Objects in S3-compatible stores. Thread-safe: s3fs runs every request on its own event loop."""

    scheme = "s3"
    default_readahead = SCAN_READAHEAD

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)
        kwargs = s3fs_kwargs(self.options)
        s3fs = _import_s3fs()
        #: False only with a botocore too old to send If-None-Match: then no commit handler takes
        #: this storage and commits fail (``StorageError``) instead of racing.
        self.atomic_put_if_absent = botocore_sends_if_none_match()
        self._opened: OrderedDict[str, OpenedObject] = OrderedDict()
        self._lock = threading.Lock()
        try:
            # fsspec shares one instance per distinct kwargs (and per process); with no listing
            # cache a shared instance holds no state that could go stale.
            self.fs = s3fs.S3FileSystem(**kwargs)
        except (TypeError, ValueError) as exc:
            raise StorageError(f"s3fs refused the S3 configuration: {exc}") from exc

    def open_reader(self, path: str) -> RangeReader:
        """A reader of ``path``; a path opened before reuses what that open learnt (no request
        until a page is read, and that read is conditional on the remembered ETag)."""
        with self._lock:
            opened = self._opened.get(path)
            if opened is not None:
                self._opened.move_to_end(path)
        reader = S3Reader(self.fs, path, opened, on_replaced=self._forget)
        if opened is None and reader.opened.tail:
            with self._lock:
                self._opened[path] = reader.opened
                while len(self._opened) > OPENED_CACHE_ENTRIES:
                    self._opened.popitem(last=False)
        return reader

    def _forget(self, path: str) -> None:
        """Drop what an open of ``path`` learnt (the object was replaced: the next open asks again)."""
        with self._lock:
            self._opened.pop(path, None)

    def open_output(self, path: str) -> BinaryIO:
        """No directories to create on S3: a key's "parents" exist once it does."""
        self._forget(path)
        try:
            # the part of BinaryIO the writers use (write, tell, close, abort, with);
            # S3 publishes the object whole at close (one PUT, or a multipart upload completed then)
            return ObjectOutput(self.fs.open(path, "wb"), path, client_errors())
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot create the object: {exc}") from exc

    def list_dir(self, path: str) -> list[str]:
        try:
            entries = self.fs.ls(path, detail=False, refresh=True)
        except FileNotFoundError:
            return []
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot list: {exc}") from exc
        prefix = self.fs._strip_protocol(path).rstrip("/") + "/"
        return [e.rstrip("/")[len(prefix) :] for e in entries if e.startswith(prefix)]

    def exists(self, path: str) -> bool:
        try:
            return self.fs.exists(path)
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot check whether it exists: {exc}") from exc

    def delete(self, path: str) -> None:
        self._forget(path)
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot delete: {exc}") from exc

    def mtime(self, path: str) -> float | None:
        try:
            value = self.fs.info(path).get(_MTIME_KEY)
        except FileNotFoundError:
            raise
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot read its modification time: {exc}") from exc
        return value.timestamp() if hasattr(value, "timestamp") else None

    def read_bytes(self, path: str) -> bytes:
        """One GET for the whole object (manifests, transactions, deletion files), without the
        HEAD an ``open_reader`` makes: a round trip less per small file read."""
        from fsspec.asyn import sync

        bucket, key, _ = self.fs.split_path(path)
        try:
            return sync(self.fs.loop, get_object, self.fs, bucket, key)
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{path}: no such object") from exc
        except client_errors() as exc:
            raise StorageError(f"{path}: cannot read: {exc}") from exc

    def put_if_absent(self, path: str, data: bytes) -> None:
        """One conditional PUT (``If-None-Match: *``): the server creates the object whole, or
        answers 412 because an object with that key exists (``CommitConflictError``). Issued
        directly, not through s3fs's ``mode="create"``, which older s3fs releases lack (and would
        drop without a word).

        A 412 where the object already holds exactly ``data`` is this call's own success: the
        client retries a PUT whose response was lost (timeout, dropped connection), and the retry
        finds the object the first attempt created. Reporting a conflict then would make the
        committer rebase and commit its transaction a second time. (Another writer cannot have
        written the same bytes: a manifest names its own transaction.)"""
        if not self.atomic_put_if_absent:
            raise UnsupportedFeatureError(
                f"{path}: the installed botocore cannot send If-None-Match, so S3 "
                "objects cannot be created exactly once; upgrade it "
                "(pip install -U 'botocore>=1.35' s3fs)"
            )
        bucket, key, _ = self.fs.split_path(path)
        try:
            self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except client_errors() as exc:
            if is_conflict(exc):
                if self._holds(path, data):
                    return
                raise CommitConflictError(f"{path} already exists: another writer created it first") from exc
            raise StorageError(f"{path}: conditional create failed: {exc}") from exc

    def _holds(self, path: str, data: bytes) -> bool:
        """Whether the object at ``path`` is exactly ``data`` (False when it cannot be read)."""
        try:
            return self.read_bytes(path) == data
        except (StorageError, DatasetNotFoundError):
            return False


@hookimpl
def lance_storage(uri: str, options: Mapping[str, Any]) -> Storage | None:
    if uri.split("://", 1)[0].lower() not in SCHEMES or "://" not in uri:
        return None
    return S3Storage(options)


@hookimpl
def lance_storage_options() -> Mapping[str, str]:
    return OPTION_DESCRIPTIONS
