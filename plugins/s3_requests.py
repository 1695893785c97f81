"""The S3 requests of ``storage_s3``, one job: issue a request on s3fs's event loop and say what
came back. GETs are retried as s3fs retries its own reads and copied into the caller's buffer as
they arrive; a failed conditional PUT is told apart from other failures (``is_conflict``).

``storage_s3`` decides what to ask (ranges, conditions, presigned fast path); these only ask.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # s3fs is imported when an s3:// URI is opened (it ships no type hints)
    from s3fs import S3FileSystem

T = TypeVar("T")

#: S3 error codes meaning "an object already exists / a concurrent conditional write won".
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})
_CONFLICT_STATUSES = frozenset({412, 409})


def client_errors() -> tuple[type[BaseException], ...]:
    """What a failed request raises: s3fs turns S3 error responses into ``OSError``s, but botocore's
    own failures (no credentials found, endpoint unreachable, bad configuration) come through as
    ``BotoCoreError``s; both become ``StorageError`` naming the path. (botocore is imported once
    s3fs is, so this costs a dict lookup.)"""
    from botocore.exceptions import BotoCoreError

    return (OSError, BotoCoreError)


@functools.lru_cache(maxsize=1)
def botocore_sends_if_none_match() -> bool:
    """Whether this botocore knows PutObject's ``IfNoneMatch`` (added in 1.35, August 2024).

    It must be checked, not assumed: s3fs drops request arguments the installed botocore does not
    know, so with an older botocore a conditional PUT would silently become a plain PUT, and two
    racing commits would both "succeed"."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("s3")
    return "IfNoneMatch" in model.operation_model("PutObject").input_shape.members


async def s3fs_retrying(call: Callable[[], Awaitable[T]], retries: int) -> T:
    """``call()`` with s3fs's retry policy for throttling and dropped connections; its ClientErrors
    come out as s3fs's ``OSError``s (with the botocore error as ``__cause__``), like every other
    s3fs call."""
    from s3fs.core import _error_wrapper

    return await _error_wrapper(call, retries=retries)


async def get_object_meta(fs: S3FileSystem, bucket: str, key: str, span: str) -> tuple[bytes, dict[str, Any]]:
    """One ranged GET's body and response fields (``ContentRange``, ``ETag``), retried as s3fs
    retries its own reads."""

    async def call_and_read() -> tuple[bytes, dict[str, Any]]:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=span)
        try:
            return await response["Body"].read(), response
        finally:
            response["Body"].close()

    return await s3fs_retrying(call_and_read, retries=fs.retries)


async def get_object(fs: S3FileSystem, bucket: str, key: str, **request: str) -> bytes:
    """The body of one GET (``request``: Range, IfMatch), retried as s3fs retries its own reads."""

    async def call_and_read() -> bytes:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **request)
        try:
            return await response["Body"].read()
        finally:
            response["Body"].close()

    return await s3fs_retrying(call_and_read, retries=fs.retries)


async def fill_from(content: Any, out: memoryview) -> int:
    """Copy an aiohttp body stream into ``out`` chunk by chunk; returns the bytes that came (past
    ``len(out)`` it stops and returns more than ``len(out)``: the caller's length check fails)."""
    filled = 0
    while True:
        chunk, end_of_http_chunk = await content.readchunk()
        if not chunk:
            if end_of_http_chunk:
                continue
            return filled
        end = filled + len(chunk)
        if end > len(out):
            return end
        out[filled:end] = chunk
        filled = end


async def get_object_into(fs: S3FileSystem, bucket: str, key: str, out: memoryview, **request: str) -> int:
    """One GET's body written into ``out``; returns how many bytes came (more than ``len(out)``
    raises ``CorruptFileError`` through the caller's length check: it counts, never overflows).

    The body is copied chunk by chunk as it arrives, straight into the caller's buffer: reading
    it whole first (``Body.read()``) joins the chunks into a new object, and a scan's megabytes
    then cost two extra copies, which on a loaded machine took longer than the transfer."""

    async def call_and_fill() -> int:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **request)
        body = response["Body"]
        try:
            content = getattr(getattr(body, "raw_stream", None), "content", None)
            if content is None or not hasattr(content, "readchunk"):  # another HTTP backend
                data = await body.read()
                out[: min(len(data), len(out))] = data[: len(out)]
                return len(data)
            return await fill_from(content, out)
        finally:
            body.close()

    return await s3fs_retrying(call_and_fill, retries=fs.retries)


def is_conflict(exc: BaseException) -> bool:
    """Whether a failed conditional PUT lost the race (rather than failing for another reason).

    s3fs turns a 412 into ``FileExistsError`` only when the server names the condition (AWS does,
    SeaweedFS does not); the botocore error it chains says it either way."""
    if isinstance(exc, FileExistsError):
        return True
    cause = exc.__cause__
    response = getattr(cause, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in _CONFLICT_CODES or status in _CONFLICT_STATUSES
