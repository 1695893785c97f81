"""Storage for every other URI scheme through fsspec (``memory://`` for tests); ``s3://`` has its own plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

import fsspec
from fsspec.implementations.memory import MemoryFileSystem

from lance_fw.errors import DatasetNotFoundError, StorageError
from lance_fw.hookspecs import hookimpl
from lance_fw.io.staged_output import StagedOutput, temp_name
from lance_fw.io.storage import RangeReader, Storage

# Where fsspec backends report a file's modification time (memory: created; local: mtime; s3: LastModified)
_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "created")


class FsspecReader(RangeReader):
    def __init__(self, fs: fsspec.AbstractFileSystem, path: str) -> None:
        self.fs, self.path = fs, path
        try:
            self._size = fs.size(path)
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{path}: no such file") from exc
        except OSError as exc:
            raise StorageError(f"{path}: {exc}") from exc
        if self._size is None or fs.isdir(path):
            raise StorageError(f"{path}: not a regular file")

    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if length == 0:
            return b""
        try:
            return self.fs.cat_file(self.path, start=offset, end=offset + length)
        except OSError as exc:
            raise StorageError(f"{self.path}: reading {length} bytes at {offset}: {exc}") from exc


class _MemorySnapshot(FsspecReader):
    """A ``memory://`` file as it was at open: the bytes are in memory anyway, and holding them
    keeps a replaced file from being read half old, half new (``RangeReader``'s promise)."""

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str) -> None:
        super().__init__(fs, path)
        self._data = fs.cat_file(path)
        self._size = len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]


class FsspecStorage(Storage):
    """Any fsspec filesystem (``memory://`` in tests). ``options`` are kept (commit handlers read
    them) but not passed to fsspec: every key in them was declared by some plugin for its own use
    (unknown keys never get here), and none is an fsspec argument; passing, say, pylance's
    ``aws_endpoint`` on made fsspec backends fail with "unexpected keyword argument"."""

    def __init__(self, scheme: str, options: dict) -> None:
        self.scheme = scheme
        self.options = dict(options)
        try:
            self.fs = fsspec.filesystem(scheme)
        except (ImportError, ValueError) as exc:
            raise StorageError(f"fsspec cannot open scheme {scheme!r}: {exc}") from exc

    def open_reader(self, path: str) -> RangeReader:
        if isinstance(self.fs, MemoryFileSystem):
            return _MemorySnapshot(self.fs, path)
        return FsspecReader(self.fs, path)

    def open_output(self, path: str) -> BinaryIO:
        """A temp file beside ``path``, moved over it on close: fsspec's own "wb" files are
        visible while written on some backends (``memory://`` stores the file when opened), so a
        reader would see a partial file. The move is atomic on memory:// and local backends."""
        parent, name = path.rsplit("/", 1)
        tmp = f"{parent}/{temp_name(name)}"
        try:
            self.fs.makedirs(parent, exist_ok=True)
            stream = self.fs.open(tmp, "wb")
        except OSError as exc:
            raise StorageError(f"{path}: cannot create the file: {exc}") from exc
        return StagedOutput(
            path,
            stream,
            publish=lambda: self.fs.mv(tmp, path),  # type: ignore[return-value]
            discard=lambda: self.fs.rm_file(tmp),
        )

    def list_dir(self, path: str) -> list[str]:
        try:
            entries = self.fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return [e.rstrip("/").rsplit("/", 1)[-1] for e in entries]

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def delete(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            pass

    def mtime(self, path: str) -> float | None:
        """The modification time under whichever key the backend uses, or None if it reports none.

        Never a made-up value: 0.0 would make a file of a write still in flight look years old, and
        ``cleanup_old_versions`` would delete it.
        """
        info = self.fs.info(path)
        for key in _MTIME_KEYS:
            value = info.get(key)
            if value is None:
                continue
            if hasattr(value, "timestamp"):
                return value.timestamp()
            try:
                return float(value)
            except (TypeError, ValueError):
                continue
        return None


#: Schemes a dedicated plugin serves with the configuration, freshness and atomic commits it needs
#: (storage_s3, storage_gcs, storage_azure); answering them here too would make the answer depend
#: on hook order.
_SERVED_ELSEWHERE = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


@hookimpl(trylast=True)
def lance_storage(uri: str, options: Mapping[str, Any]) -> Storage | None:
    if "://" not in uri or uri.startswith("file://"):
        return None
    if uri.split("://", 1)[0].lower() in _SERVED_ELSEWHERE:
        return None
    return FsspecStorage(uri.split("://", 1)[0], dict(options))
