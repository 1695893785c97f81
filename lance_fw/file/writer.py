"""Streaming writer of one Lance data file.

Batches are shredded into columns; each column buffers arrays until it holds ``max_page_bytes``,
then its encoder (picked by the ``lance_select_encoder`` hook) turns them into a page that is
written at once. Memory stays bounded: when the buffered slices pin more than
``max_buffered_bytes`` of input batches, the pending slices are compacted into their own buffers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from google.protobuf import any_pb2, empty_pb2

from lance_fw._proto import encodings_v2_0_pb2, file2_pb2
from lance_fw._util import pools
from lance_fw.errors import (
    EncoderContractError,
    LanceError,
    PluginEncodingNotAllowedError,
    SchemaError,
    UnsupportedFeatureError,
)
from lance_fw.file import structure_v2_0, structure_v2_1
from lance_fw.file.container import ALIGN, PAD_BYTE, write_tail
from lance_fw.file.encoding import (
    PYLANCE_PAGE_TYPE_URLS,
    ColumnSpec,
    encoder_origin,
    is_pylance_readable,
    pack_any,
    select_encoder,
    selecting_plugin,
)
from lance_fw.file.version import SUPPORTED_WRITE, V2_0, footer_version, version_name
from lance_fw.io.storage import Storage
from lance_fw.plugin_manager import ENV_DISABLE
from lance_fw.schema import LanceField, LanceSchema

DEFAULT_MAX_PAGE_BYTES = 8 * 1024 * 1024
#: Write option: write with encoders that do not declare ``pylance_readable`` (see ``check_encoders``).
ALLOW_PLUGIN_ENCODINGS = "allow_plugin_encodings"
#: Write option: the most bytes of one page of a column (``DEFAULT_MAX_PAGE_BYTES`` when unset).
MAX_PAGE_BYTES = "max_page_bytes"
#: Write option: input bytes buffered slices may pin before they are copied out so the input
#: batches can be freed (8 pages when unset; no limit where the caller holds the input anyway).
MAX_BUFFERED_BYTES = "max_buffered_bytes"
#: Pages encoded at once in worker threads (the ``encode`` pool). A column (and an encoder object)
#: has at most one page in flight, so an encoder (a plugin) never runs concurrently with itself and
#: each column's pages keep their order; pages are written in the order they were submitted, so a
#: file's bytes do not depend on thread timing.
ENCODE_WORKERS = pools.workers()
#: Encoder class attribute: ``True`` declares ``encode`` safe to run on several pages of its column
#: at once, once the column's first page is encoded (an encoder may learn from that page, e.g. a
#: compression table), with pages that depend only on that first page and themselves, so the
#: bytes still do not depend on thread timing. A column of one wide text field then spreads over
#: every encode worker instead of one.
CONCURRENT_PAGES = "concurrent_pages"
_ENCODE_POOL = "encode"
#: Pages smaller than this are encoded on the writing thread: the handoff to a worker and the
#: wait for it cost more than encoding them (appending 1000 rows of 3 columns: ~1 ms of 6).
INLINE_ENCODE_BYTES = 64 << 10


#: Field-metadata prefix of encoding hints (what usually makes a plugin claim a column).
ENCODING_HINT_PREFIX = "lance-encoding:"


#: Bytes of page framing (alignment, metadata) allowed on top of pages being encoded when judging
#: whether they could reach a size limit (``LanceFileWriter.written_bytes``).
PENDING_SLACK_BYTES = 64 * 1024


@dataclass
class _Column:
    spec: ColumnSpec
    encoder: Any
    pages: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    pending_bytes: int = 0
    pending_rows: int = 0
    rows_written: int = 0
    rows_received: int = 0
    #: pages of a CONCURRENT_PAGES column held back while its first page is in flight
    backlog: list = field(default_factory=list)


@dataclass
class WrittenFile:
    path: str
    num_rows: int
    size_bytes: int
    fields: list[int]
    column_indices: list[int]
    version: tuple[int, int]


class LanceFileWriter:
    def __init__(
        self,
        storage: Storage,
        path: str,
        schema: LanceSchema,
        version: tuple[int, int],
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if version_name(version) not in SUPPORTED_WRITE:
            raise UnsupportedFeatureError(
                f"lance_fw cannot write data file version {version_name(version)} yet "
                f"(writable: {', '.join(SUPPORTED_WRITE)})"
            )
        if version == V2_0:  # a packed struct of fields pylance cannot pack (or read back) at 2.0
            structure_v2_0.check_packed(schema.fields, path)
        self.path, self.schema, self.version = path, schema, version
        self.options = dict(options or {})
        self.max_page_bytes = int(self.options.get(MAX_PAGE_BYTES) or DEFAULT_MAX_PAGE_BYTES)
        self.max_buffered_bytes = int(self.options.get(MAX_BUFFERED_BYTES) or 8 * self.max_page_bytes)
        self._columns = [
            _Column(spec, select_encoder(spec, self.options)) for spec in column_specs(schema, version)
        ]
        check_encoders(
            path,
            [(c.spec, c.encoder) for c in self._columns],
            self.options,
            bool(self.options.get(ALLOW_PLUGIN_ENCODINGS)),
        )
        self._out = storage.open_output(path)
        #: pages being encoded, in submission (= file) order: (column, page future, rows)
        self._inflight: deque[tuple[_Column, Future[Any], int]] = deque()
        #: the input bytes of each page in ``_inflight`` (same order), and their sum
        self._inflight_sizes: deque[int] = deque()
        self._inflight_bytes = 0
        self._pos = 0
        self._rows = 0
        self._retained = 0

    # -- layout -----------------------------------------------------------------------------
    def _split(self, batch: pa.RecordBatch) -> list[pa.Array]:
        """One array per column: 2.0 shreds fields into their columns, 2.1+ prunes path arrays."""
        out: list[pa.Array] = []
        for f, arr in zip(self.schema.fields, batch.columns):
            if self.version == V2_0:
                out.extend(a for _, _, a in structure_v2_0.shred(f, arr))
            else:
                out.extend(structure_v2_1.prune(arr, chain) for chain in structure_v2_1.leaf_paths(f))
        return out

    # -- writing ----------------------------------------------------------------------------
    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        check_batch_width(self.path, batch, self.schema)
        full = []
        for col, arr in zip(self._columns, self._split(batch)):
            if not len(arr):  # e.g. the items of an all-null list column
                continue
            col.pending.append(arr)
            col.pending_bytes += arr.nbytes if arr.type != pa.null() else 0
            col.pending_rows += len(arr)
            col.rows_received += len(arr)
            if col.pending_bytes >= self.max_page_bytes:
                full.append(col)
        self._flush(full)
        self._rows += batch.num_rows
        self._retained += batch.nbytes
        if self._retained > self.max_buffered_bytes:
            self._compact()

    def _compact(self) -> None:
        """Copy pending slices into fresh buffers so the input batches can be freed."""
        for col in self._columns:
            if len(col.pending) > 0:
                col.pending = [_copy(pa.concat_arrays(col.pending))]
        self._retained = 0

    def _flush(self, cols: Sequence[_Column]) -> None:
        """Cut the pending arrays of ``cols`` into pages and submit them round robin over the
        columns (page 0 of each, then page 1 of each, ...): a column's pages after its first may
        wait for that first page (``CONCURRENT_PAGES``), and other columns' first pages fill the
        encode workers meanwhile, where column after column left one worker idle."""
        queues = [(col, self._cut(col)) for col in cols]
        for i in range(max((len(pages) for _, pages in queues), default=0)):
            for col, pages in queues:
                if i < len(pages):
                    self._submit(col, pages[i])

    def _cut(self, col: _Column) -> list[pa.Array]:
        """The column's pending arrays as pages of at most ``max_page_bytes`` (now not pending)."""
        if not col.pending:
            return []
        array = pa.concat_arrays(col.pending) if len(col.pending) > 1 else col.pending[0]
        col.pending, col.pending_bytes, col.pending_rows = [], 0, 0
        rows_per_page = len(array)
        if array.nbytes > self.max_page_bytes and len(array) > 1:
            rows_per_page = max(1, len(array) * self.max_page_bytes // array.nbytes)
        return [array.slice(start, rows_per_page) for start in range(0, len(array), rows_per_page)]

    def _submit(self, col: _Column, array: pa.Array) -> None:
        """Encode ``array`` as ``col``'s next page in a worker; written in submission order."""
        concurrent = getattr(col.encoder, CONCURRENT_PAGES, False) is True
        if concurrent and not col.pages and (col.backlog or any(c is col for c, _, _ in self._inflight)):
            # its first page is in flight: the next ones wait for it (``_write_next`` submits
            # them) without holding up the pages of other columns
            col.backlog.append(array)
            return
        # one page per column in flight, and one per encoder object (a plugin may share one),
        # unless the encoder declares CONCURRENT_PAGES and its column's first page is written
        if not (concurrent and col.pages):
            while any(c is col or c.encoder is col.encoder for c, _, _ in self._inflight):
                self._write_next()
        if ENCODE_WORKERS > 1 and array.nbytes >= INLINE_ENCODE_BYTES:
            future = pools.pool(_ENCODE_POOL).submit(col.encoder.encode, array)
        else:
            future = Future()
            future.set_result(col.encoder.encode(array))
        self._inflight.append((col, future, len(array)))
        self._inflight_sizes.append(array.nbytes)
        self._inflight_bytes += array.nbytes
        while len(self._inflight) > ENCODE_WORKERS:
            self._write_next()

    def written_bytes(self, limit: int | None = None) -> int:
        """Bytes of pages written to the file so far, counting every page already cut (encoding
        in a worker or held back) once it could take the file to ``limit`` (None: always): the
        count then does not depend on how far the workers have got, so where a writer rolls
        files by size (``max_bytes_per_file``) is the same on every run.

        Returns:
            The file position after the written pages.
        """
        held = sum(a.nbytes for c in self._columns for a in c.backlog)
        pending = self._inflight_bytes + held
        if limit is not None and self._pos + 2 * pending + PENDING_SLACK_BYTES < limit:
            return self._pos  # even encoded at twice their size, the pages cut cannot reach it
        while self._inflight:
            self._write_next()
        return self._pos

    def _write_next(self) -> None:
        col, future, rows = self._inflight.popleft()
        self._inflight_bytes -= self._inflight_sizes.popleft()
        self._write_encoded(col, future.result(), rows)
        if col.backlog:  # its first page is written: the pages held back go now, in order
            held, col.backlog = col.backlog, []
            for array in held:
                self._submit(col, array)

    def _write_page(self, col: _Column, array: pa.Array) -> None:
        self._submit(col, array)
        while self._inflight:
            self._write_next()

    def _write_encoded(self, col: _Column, page: Any, rows: int) -> None:
        datas = self._checked_page(col, page, rows)
        offsets, sizes = [], []
        for data in datas:
            self._align()
            offsets.append(self._pos)
            sizes.append(len(data))
            self._write(data)
        pb = file2_pb2.ColumnMetadata.Page(buffer_offsets=offsets, buffer_sizes=sizes, length=page.num_rows)
        pb.encoding.direct.encoding = page.encoding.SerializeToString()
        # 2.0 pages say 0; from 2.1 on the priority is the page's first row
        pb.priority = 0 if self.version == V2_0 else col.rows_written
        col.rows_written += page.num_rows
        col.pages.append(pb)

    def _checked_page(self, col: _Column, page: Any, rows: int) -> list:
        """The page's buffers as flat byte views, once the page keeps the encoder contract.

        Encoders are plugins, and a page that lies about itself (one row short, a buffer that is
        not bytes, an encoding that is not a protobuf ``Any``) would be written and committed, and
        the file would be unreadable for good. Checking here makes the write fail instead, before
        anything is published (the write path deletes the files of a failed write).
        """

        def fail(detail: str) -> LanceError:
            return EncoderContractError(
                f"{self.path}: the encoder {_encoder_name(col.encoder)} of column "
                f"{self._columns.index(col)} ({col.spec.field.name!r}, {col.spec.arrow_type}) broke the "
                f"encoder contract: {detail}; nothing was committed"
            )

        if not isinstance(getattr(page, "num_rows", None), int) or page.num_rows != rows:
            raise fail(
                f"it was given {rows} rows and returned a page of {getattr(page, 'num_rows', None)!r} rows"
            )
        if not isinstance(getattr(page, "encoding", None), any_pb2.Any):
            raise fail(
                f"the page encoding is a {type(getattr(page, 'encoding', None)).__name__}, "
                "not a google.protobuf.Any"
            )
        pylance_url = PYLANCE_PAGE_TYPE_URLS.get(self.version)
        if is_pylance_readable(col.encoder) and page.encoding.type_url != pylance_url:
            raise fail(
                f"it declares pylance_readable but wrote a page of type URL {page.encoding.type_url!r}; "
                f"pylance decodes only {pylance_url!r} pages at file version {version_name(self.version)}"
            )
        datas: list[bytes | bytearray | memoryview] = []
        for i, buf in enumerate(getattr(page, "buffers", None) or ()):
            if isinstance(buf, (bytes, bytearray)):
                datas.append(buf)
                continue
            try:
                datas.append(memoryview(buf).cast("B"))
            except TypeError as exc:
                raise fail(f"page buffer {i} is a {type(buf).__name__}, not bytes-like ({exc})") from None
        return datas

    def _align(self) -> None:
        pad = -self._pos % ALIGN
        if pad:
            self._write(PAD_BYTE * pad)

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        self._out.write(data)
        self._pos += len(data)

    def finish(self, global_buffers: Sequence[bytes] = ()) -> WrittenFile:
        """Write the remaining pages and the tail. ``global_buffers``: buffers 1, 2, ... of the
        file (buffer 0 is the schema), e.g. an index's extra data named from its schema metadata."""
        self._flush(self._columns)
        while self._inflight:
            self._write_next()
        for col in self._columns:
            if not col.pages:  # e.g. the items of all-empty lists: readers expect one empty page
                self._write_page(col, pa.array([], col.spec.arrow_type))
            if col.rows_written != col.rows_received:  # page checks make this hold; say so if not
                raise EncoderContractError(
                    f"{self.path}: column {self._columns.index(col)} ({col.spec.field.name!r}) holds "
                    f"{col.rows_written} rows in its pages but was given {col.rows_received}"
                )
        descriptor = file2_pb2.FileDescriptor(length=self._rows)
        descriptor.schema.fields.extend(self.schema.to_protos())
        for k, v in self.schema.metadata.items():
            descriptor.schema.metadata[k] = v
        self._align()
        gb0 = (self._pos, 0)
        data = descriptor.SerializeToString()
        self._write(data)
        gb0 = (gb0[0], len(data))
        column_encoding = pack_any(encodings_v2_0_pb2.ColumnEncoding(values=empty_pb2.Empty()))
        metas = []
        for col in self._columns:
            meta = file2_pb2.ColumnMetadata(pages=col.pages)
            meta.encoding.direct.encoding = column_encoding.SerializeToString()
            metas.append(meta)
        buffers = [gb0]
        for extra in global_buffers:
            self._align()
            buffers.append((self._pos, len(extra)))
            self._write(extra)
        self._pos = write_tail(self._out, self._pos, metas, buffers, footer_version(self.version))
        self._out.close()
        ids = [c.spec.field.id for c in self._columns]  # 2.1+: leaves only, parents own no column
        return WrittenFile(self.path, self._rows, self._pos, ids, list(range(len(ids))), self.version)

    def abort(self) -> None:
        """Give up the file: a stream that can ``abort`` (see ``Storage.open_output``) publishes
        nothing; others are closed and the caller deletes what they published."""
        for _, future, _ in self._inflight:
            future.cancel()
        self._inflight.clear()
        try:
            getattr(self._out, "abort", self._out.close)()
        except Exception:
            pass


def check_batch_width(path: str, batch: pa.RecordBatch, schema: LanceSchema) -> None:
    """Refuse a batch with another number of columns than the file's schema (any file format).

    Raises: ``SchemaError`` naming the file."""
    if len(batch.schema) != len(schema.fields):
        raise SchemaError(f"{path}: batch has {len(batch.schema)} columns, schema has {len(schema.fields)}")


def _encoder_name(encoder: Any) -> str:
    """``'Class' of plugin 'name'``, so the message names what to fix or uninstall."""
    origin = encoder_origin(encoder)
    owner = (
        f"plugin {origin.plugin!r}" if origin.plugin is not None else f"module {type(encoder).__module__!r}"
    )
    return f"{type(encoder).__qualname__!r} of {owner}"


def _label(encoder: Any) -> str:
    """The encoder's own repr when it has one, else its class name (not an address)."""
    return repr(encoder) if type(encoder).__repr__ is not object.__repr__ else type(encoder).__qualname__


def column_specs(schema: LanceSchema, version: tuple[int, int]) -> list[ColumnSpec]:
    """What ``lance_select_encoder`` sees for each column of a data file, in column order: 2.0 has a
    column per field (struct and list parents included; a packed struct is one ``leaf`` column of
    its struct type, its fields have none), 2.1+ one per leaf path."""

    def spec(f: LanceField, role: str, arrow_type: pa.DataType, path: tuple) -> ColumnSpec:
        md = {k: v.decode("utf-8", "replace") for k, v in f.metadata.items()}
        return ColumnSpec(f, arrow_type, md, version, role, path)

    if version == V2_0:
        out = []
        for f in structure_v2_0.column_fields(schema.fields):
            if f.is_list:
                out.append(spec(f, "list", pa.int64(), ()))
            elif f.is_struct and not f.is_packed:
                out.append(spec(f, "struct", pa.null(), ()))
            else:
                out.append(spec(f, "leaf", f.arrow_type(), ()))
        return out
    return [
        spec(chain[-1], "leaf", structure_v2_1.path_type(chain, decoded=False), tuple(chain))
        for top in schema.fields
        for chain in structure_v2_1.leaf_paths(top)
    ]


def plugin_encodings(
    where: str, schema: LanceSchema, version: tuple[int, int], options: Mapping[str, Any], allowed: bool
) -> dict[str, str]:
    """The plugins (name -> distribution) whose non-pylance-readable encoders a data file of
    ``schema`` at ``version`` would be written with; raises as ``check_encoders`` unless ``allowed``.
    Encoder selection depends only on the column specs and options, so a write can be checked (and
    refused) when it is planned, before any data is read."""
    specs = column_specs(schema, version)
    return check_encoders(where, [(s, select_encoder(s, options)) for s in specs], options, allowed)


def check_encoders(
    where: str, columns: list[tuple[ColumnSpec, Any]], options: Mapping[str, Any], allowed: bool
) -> dict[str, str]:
    """Refuse (``PluginEncodingNotAllowedError``) an encoder that does not declare
    ``pylance_readable`` unless ``allowed``: lance_fw writes only what pylance 14 reads by default,
    since one such page makes pylance fail on every read of the dataset. Returns the plugins
    (name -> distribution) of the non-readable encoders, for the manifest to record."""
    used: dict[str, str] = {}
    for i, (spec, encoder) in enumerate(columns):
        if is_pylance_readable(encoder):
            continue
        origin = selecting_plugin(spec, options)
        if not allowed:
            column = spec.column_name
            hints = sorted(k for k in spec.metadata if k.startswith(ENCODING_HINT_PREFIX))
            why = f" (selected by its field metadata {hints})" if hints else ""
            raise PluginEncodingNotAllowedError(
                f"{where}: column {i} ({column!r}, {spec.arrow_type}) would be written with {_label(encoder)} of "
                f"{origin.describe()}{why}, an encoding pylance cannot read; lance_fw writes only "
                f"pylance-readable encodings unless the write option {ALLOW_PLUGIN_ENCODINGS}=True is given (the "
                f"dataset then records the plugin and pylance refuses to open it), or the plugin is blocked "
                f"({ENV_DISABLE}={origin.plugin or '<name>'}: the built-in encoding is written); nothing was written"
            )
        if origin.plugin is None:  # cannot happen for an encoder a hook returned; never record a guess
            raise EncoderContractError(
                f"{where}: no loaded plugin answers lance_select_encoder for column "
                f"{i} ({spec.field.name!r}), yet {_label(encoder)} was selected"
            )
        used[origin.plugin] = origin.distribution or ""
    return used


def _copy(array: pa.Array) -> pa.Array:
    """A copy that shares no buffer with its source (concat of one array may be zero-copy)."""
    return pa.concat_arrays([array, array.slice(0, 0)]) if len(array) else array
