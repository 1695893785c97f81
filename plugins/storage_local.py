"""Local filesystem storage: positional reads with ``os.pread`` (no seek, thread-safe)."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from lance_fw.errors import DatasetNotFoundError, StorageError
from lance_fw.hookspecs import hookimpl
from lance_fw.io.storage import RangeReader, Storage


def local_path(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


class LocalReader(RangeReader):
    def __init__(self, path: str):
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

    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        try:
            return os.pread(self._fd, length, offset)
        except OSError as exc:
            raise StorageError(f"{self.path}: reading {length} bytes at {offset}: {exc}") from exc

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


class LocalStorage(Storage):
    scheme = "file"

    def open_reader(self, path: str) -> RangeReader:
        return LocalReader(local_path(path))

    def open_output(self, path: str) -> BinaryIO:
        path = local_path(path)
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            return open(path, "wb")
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


@hookimpl(trylast=True)
def lance_storage(uri: str, options) -> Storage | None:
    if "://" in uri and not uri.startswith("file://"):
        return None
    return LocalStorage()
