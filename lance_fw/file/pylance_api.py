"""pylance's ``lance.file``: ``LanceFileReader`` / ``LanceFileWriter`` for one Lance file, with
pylance 14's signatures, results and error classes (``from lance_fw.file import LanceFileReader``).

Why in the file layer: these read and write one file and need nothing above it (storage resolution
and the file reader/writer); the table format never appears. Options pylance has that lance_fw does
not implement are refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw.errors import InvalidArgumentError, InvalidUserInputError, LanceError
from lance_fw.file.container import FOOTER
from lance_fw.file.pylance_metadata import (
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileStatistics,
    column_metadata,
    file_statistics,
)
from lance_fw.file.reader import LanceFileReader as _FileReader
from lance_fw.file.version import footer_version, parse_version
from lance_fw.file.writer import MAX_PAGE_BYTES
from lance_fw.file.writer import LanceFileWriter as _FileWriter
from lance_fw.io.storage import resolve_storage
from lance_fw.options import refuse
from lance_fw.schema import LanceSchema

#: The file version ``LanceFileWriter`` writes when given none (pylance 14's default).
DEFAULT_FILE_VERSION = "2.2"
#: pylance's default batch size of ``read_all`` / ``read_range`` / ``take_rows``.
DEFAULT_BATCH_SIZE = 1024


class ReaderResults:
    """What a read returns: ``to_table()``, ``to_batches()`` (batches of ``batch_size`` rows)."""

    def __init__(self, table: pa.Table, batch_size: int) -> None:
        self._table, self._batch_size = table, batch_size

    def to_table(self) -> pa.Table:
        return self._table

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return iter(self._table.to_batches(max_chunksize=self._batch_size))

    @property
    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self._table.schema, self.to_batches())


@dataclass(frozen=True)
class LanceFileMetadata:
    """pylance's ``LanceFileMetadata`` (how each size is counted: ``file.pylance_metadata``)."""

    num_rows: int
    major_version: int
    minor_version: int
    schema: pa.Schema
    global_buffers: list[LanceBufferDescriptor]
    num_global_buffer_bytes: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    columns: list[LanceColumnMetadata]


class LanceFileReader:
    """One Lance file, read as pylance's ``lance.file.LanceFileReader`` reads it."""

    def __init__(
        self,
        path: str,
        storage_options: dict[str, str] | None = None,
        columns: list[str] | None = None,
        *,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
    ) -> None:
        refuse("LanceFileReader", {"namespace_client": namespace_client, "table_id": table_id})
        self._storage, self._path = resolve_storage(path, storage_options), path
        self._reader = _FileReader(self._storage, path)
        fields = list(self._reader.schema.fields)
        if columns is not None:
            names = [f.name for f in fields]
            missing = [c for c in columns if c not in names]
            if missing:
                raise InvalidUserInputError(f"Field {missing[0]!r} not found. Available fields: {names}")
            fields = [self._reader.schema.field(c) for c in columns]
        self._fields = fields
        metadata = {k.encode(): v for k, v in self._reader.schema.metadata.items()}
        self._schema = pa.schema([f.to_arrow() for f in fields], metadata=metadata or None)

    def num_rows(self) -> int:
        return self._reader.num_rows

    def metadata(self) -> LanceFileMetadata:
        tail = self._reader.tail
        descriptors = [LanceBufferDescriptor(int(p), int(s)) for p, s in tail.global_buffers]
        with self._storage.open_reader(self._path) as reader:
            column_meta_start, _cmo, gbo_position, *_rest = FOOTER.unpack(reader.tail(FOOTER.size))
        global_bytes = sum(d.size for d in descriptors)
        return LanceFileMetadata(
            num_rows=tail.num_rows,
            major_version=footer_version(tail.version)[0],  # as the footer says: 2.0 is 0.3
            minor_version=footer_version(tail.version)[1],
            schema=self._schema,
            global_buffers=descriptors,
            num_global_buffer_bytes=global_bytes,
            num_data_bytes=column_meta_start - global_bytes,
            num_column_metadata_bytes=gbo_position - column_meta_start,
            columns=column_metadata(tail.columns, self._path),
        )

    def read_all(self, *, batch_size: int = DEFAULT_BATCH_SIZE, batch_readahead: int = 16) -> ReaderResults:
        return self.read_range(
            0, self._reader.num_rows, batch_size=batch_size, batch_readahead=batch_readahead
        )

    def read_range(
        self, start: int, num_rows: int, *, batch_size: int = DEFAULT_BATCH_SIZE, batch_readahead: int = 16
    ) -> ReaderResults:
        total = self._reader.num_rows
        if start < 0 or num_rows < 0 or start + num_rows > total:
            raise InvalidUserInputError(
                f"cannot read Range({start}..{start + num_rows}) from columns with {total} rows"
            )
        arrays = self._reader.read_fields(self._fields, start, start + num_rows)
        return ReaderResults(pa.Table.from_arrays(arrays, schema=self._schema), batch_size)

    def take_rows(
        self, indices: Sequence[int], *, batch_size: int = DEFAULT_BATCH_SIZE, batch_readahead: int = 16
    ) -> ReaderResults:
        rows = np.asarray(indices, np.int64)
        if len(rows) > 1 and bool((rows[1:] < rows[:-1]).any()):
            bad = int(np.flatnonzero(rows[1:] < rows[:-1])[0])
            raise InvalidArgumentError(
                f"Indices must be sorted in ascending order for file API, got {rows[bad]} > {rows[bad + 1]}"
            )
        if len(rows) and (rows[0] < 0 or rows[-1] >= self._reader.num_rows):
            raise InvalidUserInputError(
                f"row {int(rows[-1])} is past the file's {self._reader.num_rows} rows"
            )
        arrays = [self._reader.take_field(f, rows) for f in self._fields]
        return ReaderResults(pa.Table.from_arrays(arrays, schema=self._schema), batch_size)

    def read_global_buffer(self, index: int) -> bytes:
        count = len(self._reader.tail.global_buffers)
        if not 0 <= index < count:
            raise InvalidUserInputError(
                f"request for global buffer at index {index} but there were only {count} global buffers in the file"
            )
        return bytes(self._reader.read_global_buffer(index))

    def file_statistics(self) -> LanceFileStatistics:
        return file_statistics(self._reader.tail.columns, self._path)


class LanceFileWriter:
    """One Lance file, written as pylance's ``lance.file.LanceFileWriter`` writes it."""

    def __init__(
        self,
        path: str,
        schema: pa.Schema | None = None,
        *,
        data_cache_bytes: int | None = None,
        version: str | None = None,
        storage_options: dict[str, str] | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        max_page_bytes: int | None = None,
    ) -> None:
        refuse("LanceFileWriter", {"namespace_client": namespace_client, "table_id": table_id})
        del data_cache_bytes  # a read cache size: cannot change what is written
        self._storage = resolve_storage(path, storage_options)
        self._path = path
        self._version = parse_version(version or DEFAULT_FILE_VERSION)
        self._options = {MAX_PAGE_BYTES: max_page_bytes} if max_page_bytes else {}
        self._metadata: dict[str, str] = {}
        self._buffers: list[bytes] = []
        self._writer: _FileWriter | None = None
        self._schema = schema
        if schema is not None:
            self._open(schema)

    def _open(self, schema: pa.Schema) -> _FileWriter:
        if self._writer is None:
            self._writer = _FileWriter(
                self._storage, self._path, LanceSchema.from_arrow(schema), self._version, self._options
            )
            self._schema = schema
        return self._writer

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        writer = self._open(batch.schema)
        for piece in batch.to_batches() if isinstance(batch, pa.Table) else [batch]:
            writer.write_batch(piece)

    def add_schema_metadata(self, key: str, value: str) -> None:
        self._metadata[key] = value

    def add_global_buffer(self, data: bytes) -> int:
        """Keep ``data`` as the file's next global buffer; returns its number (1 for the first)."""
        self._buffers.append(bytes(data))
        return len(self._buffers)

    def __enter__(self) -> LanceFileWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        """Close the file, as pylance's writer does, also when the block failed (the rows written
        so far make the file); a failure of that close gives way to the block's own error."""
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except LanceError:
            pass

    def close(self) -> int | None:
        if self._schema is None:
            raise InvalidArgumentError(f"{self._path}: no schema: give one, or write a batch, before close()")
        writer = self._open(self._schema)
        for key, value in self._metadata.items():
            writer.schema.metadata[key] = value.encode()
        return writer.finish(self._buffers).num_rows
