"""One index's directory (``_indices/<uuid>/``): the ``IndexFileStore`` the kernel hands index plugins.

Why a kernel object: index files are ordinary Lance files, so the plugin must not need to know how
files are opened, written, cached or where the directory lives (local, ``s3://``, a base path). The
store writes in the file version pylance 14 uses for index files (2.2 whatever the dataset's version:
observed on 2.0, 2.1 and 2.2 datasets), keeps each opened file's tail so repeated lookups read only
pages, and remembers what it wrote so the kernel can list ``IndexMetadata.files``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lance_fw.errors import CorruptFileError, InvalidArgumentError
from lance_fw.file.reader import LanceFileReader
from lance_fw.file.writer import LanceFileWriter
from lance_fw.interfaces import SchemaMeta
from lance_fw.io.storage import Storage, join_uri, unsafe_path_reason
from lance_fw.schema import LanceSchema
from lance_fw.table.paths import INDICES_DIR

#: The data file version of every index file pylance 14 writes.
INDEX_FILE_VERSION = (2, 2)


def index_dir(base_uri: str, uuid: str) -> str:
    """``<dataset>/_indices/<uuid>``: where the files of index ``uuid`` live."""
    return join_uri(base_uri, INDICES_DIR, uuid)


class IndexFiles:
    """``IndexFileStore`` over ``storage`` for the directory ``directory``.

    Thread-safe for readers: an opened file is cached under a lock, and ``LanceFileReader`` is safe to
    share. Writing is single-threaded (one ``train`` call).
    """

    def __init__(self, storage: Storage, directory: str) -> None:
        self.storage = storage
        self.directory = directory
        #: (name, size in bytes) of every file written through this store, in order.
        self.written: list[tuple[str, int]] = []
        self._readers: dict[str, LanceFileReader] = {}
        self._lock = threading.Lock()

    def _path(self, name: str) -> str:
        reason = unsafe_path_reason(name) if "/" not in name else "contains '/'"
        if reason or not name:
            raise InvalidArgumentError(f"index file name {name!r} is not a plain file name ({reason})")
        return join_uri(self.directory, name)

    def _reader(self, name: str) -> LanceFileReader:
        with self._lock:
            reader = self._readers.get(name)
            if reader is None:
                reader = self._readers[name] = LanceFileReader(self.storage, self._path(name))
            return reader

    def write_table(
        self, name: str, table: pa.Table, metadata: SchemaMeta = None, global_buffers: Sequence[bytes] = ()
    ) -> None:
        """Write ``table`` with schema ``metadata`` (and global buffers 1, 2, ...) as the Lance
        file ``name`` (see ``IndexFileStore``)."""
        schema = table.schema.with_metadata(dict(metadata or {}))
        lance_schema = LanceSchema.from_arrow(schema)
        writer = LanceFileWriter(self.storage, self._path(name), lance_schema, INDEX_FILE_VERSION)
        try:
            for batch in table.to_batches():
                if batch.num_rows:
                    writer.write_batch(batch)
            written = writer.finish(global_buffers)
        except BaseException:
            writer.abort()
            raise
        self.written.append((name, written.size_bytes))

    def read_table(self, name: str, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of ``name`` (``columns``: a subset, in that order)."""
        reader = self._reader(name)
        fields = _fields(reader, columns)
        arrays = reader.read_fields(fields, 0, reader.num_rows)
        return pa.Table.from_arrays(arrays, schema=_arrow_schema(reader, fields))

    def read_range(self, name: str, start: int, stop: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows [start, stop) of ``name``, decoding only the pages that hold them."""
        reader = self._reader(name)
        fields = _fields(reader, columns)
        arrays = reader.read_fields(fields, start, stop)
        return pa.Table.from_arrays(arrays, schema=_arrow_schema(reader, fields))

    def take_rows(self, name: str, rows: np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows ``rows`` (sorted positions) of ``name``, decoding only the pages they live in."""
        reader = self._reader(name)
        fields = _fields(reader, columns)
        wanted = np.asarray(rows, dtype=np.int64)
        arrays = [reader.take_field(f, wanted) for f in fields]
        return pa.Table.from_arrays(arrays, schema=_arrow_schema(reader, fields))

    def global_buffer(self, name: str, number: int) -> bytes:
        """Global buffer ``number`` (1, 2, ...) of ``name``.

        Raises: ``CorruptFileError`` when the file has no such buffer."""
        reader = self._reader(name)
        buffers = reader.tail.global_buffers
        if not 1 <= number < len(buffers):
            raise CorruptFileError(reader.path, f"has no global buffer {number} ({len(buffers)} buffers)")
        return bytes(reader.read_global_buffer(number))

    def schema_metadata(self, name: str) -> dict[str, str]:
        """The schema metadata of ``name``, decoded as UTF-8."""
        return {k: v.decode() for k, v in self._reader(name).schema.metadata.items()}

    def num_rows(self, name: str) -> int:
        """Rows in ``name``."""
        return self._reader(name).num_rows

    def exists(self, name: str) -> bool:
        """Whether ``name`` exists in the directory."""
        return self.storage.exists(self._path(name))

    def close(self) -> None:
        """Close every opened file."""
        with self._lock:
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()


def _fields(reader: LanceFileReader, columns: Sequence[str] | None) -> list:
    if columns is None:
        return list(reader.schema.fields)
    return [reader.schema.field(c) for c in columns]


def _arrow_schema(reader: LanceFileReader, fields: list) -> pa.Schema:
    return pa.schema([f.to_arrow() for f in fields])
