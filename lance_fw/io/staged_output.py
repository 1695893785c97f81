"""An output that is written under a temporary name and published whole on ``close``.

``Storage.open_output`` promises readers never see a partial file. Backends keep that promise the
same way: bytes go to a temp file beside the target, and ``close`` moves it into place with the
backend's atomic rename (``os.replace`` locally, a dict move on fsspec's ``memory://``). Only the
stream, the publish step and the discard step differ, so they are passed in.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from typing import BinaryIO

from lance_fw.errors import StorageError

#: Temp files of outputs in flight start with this. Only a crash leaves one behind; it keeps the
#: target's suffix, so ``cleanup_old_versions`` removes it like any unreferenced file of its kind.
TEMP_PREFIX = ".tmp-"


def temp_name(name: str) -> str:
    """The temporary name, in the same directory, for an output whose final name is ``name``."""
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"


class StagedOutput(io.RawIOBase):
    """A file that appears at ``path`` complete or not at all.

    Args:
        path: the final path, for error messages.
        stream: a writable binary stream on the temp file.
        publish: called after ``stream`` is flushed; it must make the bytes durable where the
            backend needs that (``sync``) and move the temp file over ``path`` atomically.
        discard: removes the temp file (missing is fine).
        sync: called with the flushed, still open stream before it is closed (local: fsync).

    ``close`` publishes; ``abort`` -- and leaving a ``with`` block by an exception, or dropping
    the object unclosed -- discards and publishes nothing. Used by one thread at a time.
    """

    def __init__(
        self,
        path: str,
        stream: BinaryIO,
        publish: Callable[[], None],
        discard: Callable[[], None],
        sync: Callable[[BinaryIO], None] | None = None,
    ) -> None:
        super().__init__()
        self.path = path
        self._stream = stream
        self._publish, self._discard_temp, self._sync = publish, discard, sync

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        return self._stream.write(data)

    def tell(self) -> int:
        return self._stream.tell()

    def flush(self) -> None:
        if not self._stream.closed:
            self._stream.flush()

    def close(self) -> None:
        """Publish the file (a no-op once closed or aborted).

        Raises:
            StorageError: the bytes could not be written or moved into place; nothing is published.
        """
        if self.closed:
            return
        try:
            self._stream.flush()
            if self._sync is not None:
                self._sync(self._stream)
            self._stream.close()
            self._publish()
        except OSError as exc:
            self._discard()
            raise StorageError(f"{self.path}: cannot write the file: {exc}") from exc
        finally:
            super().close()

    def abort(self) -> None:
        """Discard what was written: ``path`` is left as it was and no temp file remains."""
        if not self.closed:
            self._discard()
            super().close()

    def _discard(self) -> None:
        try:
            self._stream.close()
        finally:
            try:
                self._discard_temp()
            except FileNotFoundError:
                pass

    def __del__(self) -> None:  # dropped without close: nothing is published (IOBase would close)
        self.abort()

    def __exit__(self, exc_type: type[BaseException] | None, *_exc_and_traceback: object) -> None:
        if exc_type is not None:  # a failed block publishes nothing
            self.abort()
        else:
            self.close()
