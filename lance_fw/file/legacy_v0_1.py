"""Reader of legacy Lance v1 data files (file format 0.1, what pylance writes with
``data_storage_version="legacy"``), with the row-range and take API of ``LanceFileReader`` so that a
fragment reads them like any other data file.

```
pages (field by field within each batch) | dictionary values | page table | statistics
| manifest (u32 length + lance.table.Manifest: the file's schema) | u32 length + lance.file.Metadata
| footer = u64 metadata position | u16 major (0) | u16 minor (2) | "LANC"
```
``Metadata.batch_offsets`` holds the first row of each batch (and the row count last); the page
table holds, for every field id from the file's smallest to its largest and every batch (field
major), the (i64 position, i64 length) of that field's page. Pages are decoded in
``legacy_v0_1_decode``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from lance_fw._proto import file_pb2, table_pb2
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError, LanceError, SchemaError
from lance_fw.file.container import MAGIC, parse_message
from lance_fw.file.encoding import check_decoded
from lance_fw.file.legacy_v0_1_decode import LegacyPageDecoder
from lance_fw.file.read_support import DECODE_FAILURES, FileMetadata, concat_pages
from lance_fw.file.reader import LanceFileReader
from lance_fw.io.storage import RangeReader, Storage
from lance_fw.schema import LanceField, LanceSchema

#: The 16-byte footer of a 0.1 file: metadata position, major, minor, magic.
LEGACY_FOOTER = struct.Struct("<QHH4s")
#: What a 0.1 file's footer says as (major, minor).
LEGACY_FOOTER_VERSION = (0, 2)
#: The data file version of such files, as users name it (``data_storage_version="0.1"``).
LEGACY_VERSION = (0, 1)
#: Protobuf messages in a 0.1 file are framed by this length prefix.
LENGTH_PREFIX = struct.Struct("<I")
#: One page table entry: i64 position, i64 length.
PAGE_ENTRY_BYTES = 16
#: Bytes read from the end of the file at once: footer, metadata, usually manifest and page table.
TAIL_PREFETCH = 64 * 1024


def is_legacy_footer(tail: bytes) -> bool:
    """Whether ``tail`` (a file's last bytes) ends in the footer of a 0.1 file."""
    if len(tail) < LEGACY_FOOTER.size:
        return False
    _pos, major, minor, magic = LEGACY_FOOTER.unpack_from(tail, len(tail) - LEGACY_FOOTER.size)
    return magic == MAGIC and (major, minor) == LEGACY_FOOTER_VERSION


@dataclass(frozen=True)
class LegacyTail:
    """What opening a 0.1 file parses (the counterpart of a v2 file's ``FileTail``)."""

    metadata: file_pb2.Metadata
    manifest: table_pb2.Manifest
    batch_offsets: np.ndarray
    page_table: np.ndarray  # (field id - first id, batch) -> (position, length)
    first_field_id: int
    version: tuple[int, int] = LEGACY_VERSION

    @property
    def num_rows(self) -> int:
        return int(self.batch_offsets[-1]) if len(self.batch_offsets) else 0


class LegacyFileReader:
    """One 0.1 data file: open once (reads the tail), then read any row range or rows of a field.

    Every read returns what pylance 14 returns for the same file (see ``legacy_v0_1_decode`` on
    nulls); anything this reader does not understand raises a ``LanceError`` naming the file."""

    def __init__(self, reader: RangeReader) -> None:
        self.path = reader.path
        self._reader = reader
        self.tail = read_legacy_tail(reader)
        try:
            self.schema = LanceSchema.from_protos(
                self.tail.manifest.fields, self.tail.manifest.schema_metadata
            )
            self.schema.to_arrow()
        except (SchemaError, ValueError, KeyError) as exc:
            raise CorruptFileError(self.path, f"bad schema in the 0.1 file manifest: {exc}") from None
        self._decoder = LegacyPageDecoder(
            self.path, reader.read_exact, self._page_of, {f.id: f for f in self.schema.walk()}
        )

    @property
    def num_rows(self) -> int:
        return self.tail.num_rows

    def close(self) -> None:
        self._reader.close()

    # The v2 reader's read-ahead hooks: a 0.1 page is read when decoded, nothing to do ahead.
    def prefetch(self, fields: list[LanceField], start: int, stop: int) -> None:
        """Nothing: each 0.1 page read fetches exactly the bytes of the rows asked for."""

    def decode_ahead(self, fields: list[LanceField], start: int, stop: int, until: int | None = None) -> None:
        """Nothing: 0.1 pages are plain copies, not worth a thread."""

    def prefetch_small_buffers(self, fields: list[LanceField], rows: np.ndarray) -> None:
        """Nothing: a 0.1 take reads its byte ranges directly."""

    # -- reads --------------------------------------------------------------------------------
    def read_field(self, field: LanceField, start: int, stop: int) -> pa.Array:
        """Rows [start, stop) of ``field``."""
        t = field.arrow_type()
        stop = min(stop, self.num_rows)
        if stop <= start:
            return pa.array([], t)
        offsets = self.tail.batch_offsets
        first = int(np.searchsorted(offsets, start, side="right")) - 1
        last = int(np.searchsorted(offsets, stop, side="left")) - 1
        pieces = []
        for b in range(first, last + 1):
            lo = max(start, int(offsets[b])) - int(offsets[b])
            hi = min(stop, int(offsets[b + 1])) - int(offsets[b])
            pieces.append(self._decode(field, b, lo, hi))
        return _concat(pieces, t)

    def take_field(self, field: LanceField, rows: np.ndarray) -> pa.Array:
        """Rows ``rows`` (sorted, distinct) of ``field``: per batch, the span from the first to
        the last row asked for is decoded and the rows taken from it."""
        t = field.arrow_type()
        rows = np.asarray(rows, np.int64)
        if not len(rows):
            return pa.array([], t)
        if rows[0] < 0 or rows[-1] >= self.num_rows:
            raise CorruptFileError(
                self.path, f"row {int(rows[-1])} asked of a file with {self.num_rows} rows"
            )
        offsets = self.tail.batch_offsets
        batch_of = np.searchsorted(offsets, rows, side="right") - 1
        cuts = (np.flatnonzero(batch_of[1:] != batch_of[:-1]) + 1).tolist()
        pieces = []
        for lo, hi in zip([0, *cuts], [*cuts, len(rows)]):
            b = int(batch_of[lo])
            local = rows[lo:hi] - int(offsets[b])
            first, last = int(local[0]), int(local[-1]) + 1
            span = self._decode(field, b, first, last)
            pieces.append(span if last - first == len(local) else span.take(pa.array(local - first)))
        return _concat(pieces, t)

    def _decode(self, field: LanceField, batch: int, lo: int, hi: int) -> pa.Array:
        where = f"{self.path}: field {field.name!r}, batch {batch}"
        try:
            out = self._decoder.decode(field, batch, lo, hi)
        except LanceError:
            raise
        except DECODE_FAILURES as exc:
            raise CorruptFileError(
                where, f"the 0.1 page does not decode ({type(exc).__name__}: {exc})"
            ) from exc
        return check_decoded(out, where, field.arrow_type(), hi - lo)

    def _page_of(self, field_id: int, batch: int) -> tuple[int, int]:
        table = self.tail.page_table
        index = field_id - self.tail.first_field_id
        if not 0 <= index < table.shape[0] or not 0 <= batch < table.shape[1]:
            raise CorruptFileError(self.path, f"no page for field id {field_id} in batch {batch}")
        pos, length = (int(v) for v in table[index, batch])
        if pos < 0 or length < 0 or pos > self._reader.size():
            raise CorruptFileError(
                self.path, f"page of field id {field_id} batch {batch} at {pos} lies outside the file"
            )
        return pos, length


def _concat(pieces: list[pa.Array], t: pa.DataType) -> pa.Array:
    """Join decoded pieces of one field. A 0.1 dictionary column has one dictionary per file, and
    pylance hands it out whole: the pieces' indices are joined under it, not re-encoded."""
    if len(pieces) > 1 and pa.types.is_dictionary(t):
        first = pieces[0].dictionary
        if all(p.dictionary is first or p.dictionary.equals(first) for p in pieces[1:]):
            indices = pa.concat_arrays([p.indices for p in pieces])
            return pa.DictionaryArray.from_arrays(indices, first).cast(t)
    return concat_pages(pieces, t)


def _framed(reader: RangeReader, position: int, what: str) -> bytes:
    """The message framed (u32 length prefix) at ``position``."""
    (length,) = LENGTH_PREFIX.unpack(reader.read_exact(position, LENGTH_PREFIX.size, f"{what} length"))
    return reader.read_exact(position + LENGTH_PREFIX.size, length, what)


def read_legacy_tail(reader: RangeReader) -> LegacyTail:
    """Footer, metadata, embedded manifest and page table of a 0.1 file.

    Raises:
        CorruptFileError: not a 0.1 file, or its tail is damaged.
    """
    path, size = reader.path, reader.size()
    if size < LEGACY_FOOTER.size:
        raise CorruptFileError(path, f"file is {size} bytes, smaller than the 0.1 footer")
    position, major, minor, magic = LEGACY_FOOTER.unpack(
        reader.read_exact(size - LEGACY_FOOTER.size, LEGACY_FOOTER.size, "footer")
    )
    if magic != MAGIC or (major, minor) != LEGACY_FOOTER_VERSION:
        raise CorruptFileError(path, f"not a 0.1 Lance file (footer {major}.{minor} {magic!r})")
    metadata = parse_message(file_pb2.Metadata, _framed(reader, position, "metadata"), path, "metadata")
    if not metadata.manifest_position:
        raise CorruptFileError(path, "the 0.1 file carries no schema (manifest position 0)")
    try:
        manifest = parse_message(
            table_pb2.Manifest, _framed(reader, metadata.manifest_position, "manifest"), path, "manifest"
        )
    except DecodeError as exc:  # pragma: no cover - parse_message converts these
        raise CorruptFileError(path, f"manifest: {exc}") from None
    offsets = np.asarray(metadata.batch_offsets, np.int64)
    if len(offsets) and (offsets[0] != 0 or (np.diff(offsets) < 0).any()):
        raise CorruptFileError(path, f"batch offsets {offsets.tolist()[:8]}... do not start at 0 and grow")
    ids = [f.id for f in manifest.fields]
    first = min(ids, default=0)
    n_fields = (max(ids) - first + 1) if ids else 0
    n_batches = max(len(offsets) - 1, 0)
    raw = (
        reader.read_exact(metadata.page_table_position, n_fields * n_batches * PAGE_ENTRY_BYTES, "page table")
        if n_fields * n_batches
        else b""
    )
    table = np.frombuffer(raw, "<i8").reshape(n_fields, n_batches, 2)
    return LegacyTail(metadata, manifest, offsets, table, first)


#: The data file readers a fragment holds: a v2 file's or a 0.1 file's.
DataFileReader = LanceFileReader | LegacyFileReader


def open_data_file(
    storage: Storage,
    path: str,
    column_of_field: dict[int, int] | None,
    file_major_version: int,
    metadata_cache: LruCache[str, FileMetadata] | None = None,
) -> DataFileReader:
    """Open a data file of a fragment with the reader of its format.

    ``file_major_version`` is what the fragment's ``DataFile`` records: 2 and above are v2 files
    (opened as before, no extra read); 0 (0.1 files, and files of old datasets that did not record a
    version) is settled by the footer, so that a 0.1 file opens as one and anything else as v2."""
    if file_major_version >= 2:
        return LanceFileReader(storage, path, column_of_field, metadata_cache=metadata_cache)
    reader = storage.open_reader(path)
    if is_legacy_footer(reader.tail(LEGACY_FOOTER.size)):
        return LegacyFileReader(reader)
    return LanceFileReader(storage, path, column_of_field, reader=reader, metadata_cache=metadata_cache)
