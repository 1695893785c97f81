"""Writer of legacy Lance v1 data files (file format 0.1), as pylance 14 writes them for
``data_storage_version="legacy"``; the layout is described in ``legacy_v0_1`` and
``legacy_v0_1_decode``.

Rows are cut into batches of ``max_rows_per_group`` (pylance's default 1024); each batch writes
every field in pre-order: list offsets before the list's items, a string's bytes before its
offsets. Nulls are not stored (the format has no validity): a null slot keeps the bytes under it,
as pylance writes them, so pylance and lance_fw read back what they read from pylance's own files.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw._proto import file_pb2, table_pb2
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file.buffers import range_positions, true_bytes
from lance_fw.file.container import MAGIC
from lance_fw.file.legacy_v0_1 import LEGACY_FOOTER, LEGACY_FOOTER_VERSION, LEGACY_VERSION, LENGTH_PREFIX
from lance_fw.file.legacy_v0_1_decode import LIST_OFFSET_BYTES, fixed_width_bits
from lance_fw.file.writer import WrittenFile, check_batch_width
from lance_fw.io.storage import Storage
from lance_fw.schema import LanceField, LanceSchema

#: The option naming the rows of one 0.1 batch (``write_dataset(max_rows_per_group=...)``).
MAX_ROWS_PER_GROUP = "max_rows_per_group"
#: pylance's default batch size of 0.1 files.
DEFAULT_ROWS_PER_GROUP = 1024
#: What ``Manifest.version`` says in the manifest embedded in a data file (as pylance writes it).
EMBEDDED_MANIFEST_VERSION = 1
#: The writer named in the embedded manifest.
WRITER_LIBRARY = "lance_fw"

#: Why dictionary columns are refused at 0.1: pylance reads every file's indices against one
#: dictionary kept in the dataset's manifest file, fixed when the dataset was created (files whose
#: own dictionary differs read wrong or fail in pylance), which a file writer cannot promise.
DICTIONARY_REFUSAL = (
    "lance_fw does not write dictionary columns to 0.1 (legacy) files: pylance reads them against "
    "one dictionary stored in the dataset manifest; write this column as its value type, or use 2.x"
)


class LegacyFileWriter:
    """Write one 0.1 data file: ``write_batch`` any number of times, then ``finish``."""

    def __init__(
        self,
        storage: Storage,
        path: str,
        schema: LanceSchema,
        version: tuple[int, int] = LEGACY_VERSION,
        options: dict[str, Any] | None = None,
    ) -> None:
        if version != LEGACY_VERSION:
            raise UnsupportedFeatureError(f"{path}: LegacyFileWriter writes 0.1 files only, not {version}")
        self.path, self.schema = path, schema
        rows = int((options or {}).get(MAX_ROWS_PER_GROUP) or DEFAULT_ROWS_PER_GROUP)
        if rows <= 0:
            raise UnsupportedFeatureError(f"{path}: max_rows_per_group must be positive, got {rows}")
        self.rows_per_group = rows
        for f in schema.walk():
            _check_writable(f, path)
        self._out = storage.open_output(path)
        self._pos = 0
        self._rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._batch_offsets = [0]
        #: pages per field id, one (position, length) per batch
        self._pages: dict[int, list[tuple[int, int]]] = {f.id: [] for f in schema.walk()}

    # -- the interface ``write_fragments`` uses ------------------------------------------------
    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        check_batch_width(self.path, batch, self.schema)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._rows += batch.num_rows
        if self._pending_rows >= self.rows_per_group:
            self._flush(final=False)

    def written_bytes(self, limit: int | None = None) -> int:
        return self._pos

    def finish(self) -> WrittenFile:
        self._flush(final=True)
        protos = self.schema.to_protos()
        page_table_position = self._pos
        ids = sorted(self._pages)
        n_batches = len(self._batch_offsets) - 1
        table = np.zeros((ids[-1] - ids[0] + 1 if ids else 0, n_batches, 2), "<i8")
        for fid, pages in self._pages.items():
            if pages:
                table[fid - ids[0]] = pages
        self._write(table.tobytes())
        manifest = table_pb2.Manifest(version=EMBEDDED_MANIFEST_VERSION)
        manifest.fields.extend(protos)
        for k, v in self.schema.metadata.items():
            manifest.schema_metadata[k] = v
        manifest.writer_version.library = WRITER_LIBRARY
        manifest.data_format.file_format = "lance"
        manifest.data_format.version = "0.1"
        manifest_position = self._framed(manifest.SerializeToString())
        metadata = file_pb2.Metadata(
            manifest_position=manifest_position,
            batch_offsets=self._batch_offsets,
            page_table_position=page_table_position,
        )
        metadata_position = self._framed(metadata.SerializeToString())
        self._write(LEGACY_FOOTER.pack(metadata_position, *LEGACY_FOOTER_VERSION, MAGIC))
        self._out.close()
        return WrittenFile(self.path, self._rows, self._pos, ids, [], LEGACY_FOOTER_VERSION)

    def abort(self) -> None:
        try:
            getattr(self._out, "abort", self._out.close)()
        except Exception:
            pass

    # -- batches ------------------------------------------------------------------------------
    def _flush(self, final: bool) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending)
        start = 0
        while table.num_rows - start >= self.rows_per_group or (final and start < table.num_rows):
            rows = min(self.rows_per_group, table.num_rows - start)
            group = table.slice(start, rows).combine_chunks()
            for f, column in zip(self.schema.fields, group.columns):
                array = column.chunk(0) if column.num_chunks else pa.array([], f.arrow_type())
                self._field(f, array)
            self._batch_offsets.append(self._batch_offsets[-1] + rows)
            start += rows
        rest = table.slice(start)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _field(self, f: LanceField, array: pa.Array) -> None:
        """Write ``f``'s page(s) of this batch (children after their parent)."""
        pages = self._pages[f.id]
        if f.logical_type == "null":
            pages.append((0, len(array)))
        elif f.is_struct:
            pages.append((0, 0))
            for i, child in enumerate(f.children):
                self._field(child, array.field(i))
        elif f.is_list:
            width = LIST_OFFSET_BYTES[f.logical_type]
            offsets = np.frombuffer(array.buffers()[1], f"<i{width}")[
                array.offset : array.offset + len(array) + 1
            ]
            first = int(offsets[0])
            pages.append((self._pos, len(array) + 1))
            self._write((offsets - first).astype(f"<i{width}").tobytes())
            self._field(f.children[0], array.values.slice(first, int(offsets[-1]) - first))
        elif fixed_width_bits(array.type) is None:
            values, positions = var_binary_bytes(array, self._pos)
            self._write(values)
            pages.append((self._pos, len(array)))
            self._write(positions)
        else:
            pages.append((self._pos, len(array)))
            self._write(plain_bytes(array))

    # -- bytes --------------------------------------------------------------------------------
    def _write(self, data: bytes | memoryview) -> None:
        self._out.write(data)
        self._pos += len(data)

    def _framed(self, message: bytes) -> int:
        position = self._pos
        self._write(LENGTH_PREFIX.pack(len(message)))
        self._write(message)
        return position


def plain_bytes(array: pa.Array) -> bytes:
    """The values of a fixed-width array as a PLAIN page holds them (nulls keep the bytes under
    them; booleans one bit each, LSB first; fixed size lists flattened)."""
    t = array.type
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        return plain_bytes(array.values.slice(array.offset * size, len(array) * size))
    bits = fixed_width_bits(t)
    if bits is None:
        raise UnsupportedFeatureError(f"type {t} has no fixed width: no PLAIN 0.1 page holds it")
    if bits == 1:
        # pylance writes a null boolean as false (numbers keep their bytes)
        return np.packbits(true_bytes(array), bitorder="little").tobytes()
    width = bits // 8
    data = array.buffers()[1]
    return bytes(memoryview(data)[array.offset * width : (array.offset + len(array)) * width])


def var_binary_bytes(array: pa.Array, start: int) -> tuple[bytes, bytes]:
    """A string or binary array as a VAR_BINARY page holds it when its bytes begin at file
    position ``start``: (value bytes, the ``len + 1`` absolute i64 positions written after them).
    A null writes no bytes (a nullable field reads it back as null, as pylance's files do)."""
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offsets = np.frombuffer(array.buffers()[1], "<i8" if large else "<i4")[
        array.offset : array.offset + len(array) + 1
    ].astype(np.int64)
    lengths = np.diff(offsets)
    buf = array.buffers()[2]
    data = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
    if array.null_count:
        lengths = np.where(array.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
        values = data[range_positions(offsets[:-1], lengths)].tobytes()
    else:
        values = data[int(offsets[0]) : int(offsets[-1])].tobytes()
    positions = np.zeros(len(array) + 1, "<i8")
    np.cumsum(lengths, out=positions[1:])
    positions += start
    return values, positions.tobytes()


def _check_writable(f: LanceField, path: str) -> None:
    """Refuse, before writing, a type the 0.1 format cannot hold."""
    t = f.arrow_type()
    if f.is_struct or f.is_list or f.logical_type == "null":
        return
    if pa.types.is_dictionary(t):  # see DICTIONARY_REFUSAL
        raise UnsupportedFeatureError(f"{path}: field {f.name!r} ({t}): {DICTIONARY_REFUSAL}")
    if fixed_width_bits(t) is not None:
        return
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        return
    raise UnsupportedFeatureError(
        f"{path}: field {f.name!r} has type {t}, which lance_fw cannot write to a 0.1 (legacy) file"
    )
