"""Reader of one Lance data file: row ranges of fields, decoded through the encoding plugins."""

from __future__ import annotations

import bisect
import itertools
import threading
from functools import partial

import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw._proto import encodings_v2_0_pb2, file2_pb2
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError
from lance_fw.file import structure_v2_0, structure_v2_1
from lance_fw.file.container import FileTail, parse_message
from lance_fw.file.encoding import PageInput, decode_page
from lance_fw.file.read_support import (
    FileMetadata,
    HeldFirst,
    PageSetup,
    checked_page,
    concat_pages,
    guarded,
    shared_metadata,
)
from lance_fw.file.reader_ahead import AheadDecodes, PendingJob, ScanQueue
from lance_fw.file.reader_fetch import PageFetches
from lance_fw.file.reader_takes import RowTakes
from lance_fw.io.storage import RangeReader, Storage
from lance_fw.plugin_manager import registry
from lance_fw.schema import LanceField

#: Runs of pages decoded together that a reader keeps per column (``_runs``).
RUNS_KEPT = 4
#: Pages whose setup (checks, parsed encoding, where) ``_page_setup`` keeps, by (file tail token,
#: column, page): a few hundred bytes each. Enough for every page of a scan of a few files cut
#: into pages of 8192 rows (pylance writing a stream: 5 columns of 2M rows hold 1,225 pages).
PAGE_SETUPS_CACHED = 8192
_PAGE_SETUPS: LruCache[tuple[int, int, int], PageSetup] = LruCache(PAGE_SETUPS_CACHED)


class LanceFileReader(RowTakes, PageFetches, AheadDecodes):
    """Open once (reads the tail), then read any row range of any field."""

    def __init__(
        self,
        storage: Storage,
        path: str,
        column_of_field: dict[int, int] | None = None,
        reader: RangeReader | None = None,
        metadata_cache: LruCache[str, FileMetadata] | None = None,
    ):
        """Open ``path`` (or use ``reader``) and read its metadata, or take it from
        ``metadata_cache`` (by path: a cache for one version of a table, whose data files are
        immutable). ``column_of_field``: the column of each field id (None: the schema's order).

        Raises:
            CorruptFileError: a damaged tail or schema. UnsupportedFeatureError: a file version
            this lance_fw cannot read.
        """
        self.path = path
        self._reader = reader or storage.open_reader(path)
        if metadata_cache is None:
            metadata = shared_metadata(self._reader)
        else:
            metadata = metadata_cache.get_or_load(path, lambda: shared_metadata(self._reader))
        self.tail: FileTail = metadata.tail
        self.schema = metadata.schema
        if column_of_field is None:  # a bare file: columns follow the schema's pre-order
            owners = (
                list(structure_v2_0.column_fields(self.schema.fields))
                if self.tail.version == (2, 0)
                else [f for f in self.schema.walk() if structure_v2_1.is_leaf(f)]
            )
            column_of_field = {f.id: i for i, f in enumerate(owners)}
        self.column_of_field = column_of_field
        self._top_level = {f.id for f in self.schema.fields}
        self._parent = {child.id: f for f in self.schema.walk() for child in f.children}
        #: first row of each page, per column (``_starts``): shared through the metadata cache
        self._page_starts = metadata.page_starts
        self._page_bytes = metadata.page_bytes
        #: per tuple of field ids read together: (column, leaf, decoded type, page starts) for decode_ahead
        self._ahead_columns: dict[tuple[int, ...], list[tuple[int, LanceField, pa.DataType, list[int]]]] = {}
        self._cache: dict[int, tuple[int, pa.Array]] = {}
        #: Pages decoded together (``_decode_together``), per column: (first page, last page,
        #: their array); a read within one run slices it rather than joining its pages' slices.
        self._runs: dict[int, list[tuple[int, int, pa.Array]]] = {}
        #: Pages ``decode_ahead`` decoded for a range not read yet, by (column, page).
        self._ahead: dict[tuple[int, int], pa.Array] = {}
        #: Pages a scan's queue is decoding on the pool, by (column, page): the job's future and
        #: its pages (filed in ``_ahead`` by ``_settle`` or ``_scan_ahead``).
        self._pending: dict[tuple[int, int], PendingJob] = {}
        #: Scans' decode queues, by (field ids, the row the scan reads up to).
        self._scans: dict[tuple[tuple[int, ...], int], ScanQueue] = {}
        #: Buffers of pages fetched ahead (``prefetch``), by (column, page); taken when decoded.
        self._prefetched: dict[tuple[int, int], list[memoryview]] = {}
        #: Small page buffers fetched ahead for a take (``prefetch_small_buffers``), by offset.
        self._small: dict[int, memoryview] = {}
        #: One reader over them for every page (``_row_page``): pages read through one reader
        #: have their pieces fetched together (``interfaces.read_pages_parts``).
        self._held_first = HeldFirst(self._reader, self._small)
        self._lock = threading.Lock()

    @property
    def num_rows(self) -> int:
        return self.tail.num_rows

    def close(self) -> None:
        """Close the file, once the jobs decoding its pages ahead that have started end (those
        not started are dropped). Why not wait for them: a scan closed early (DuckDB's
        ``LIMIT 10``) waited for every job its queue had under way."""
        running = self.drop_pending()
        if not running:
            self._reader.close()
            return
        left = [len(running)]
        lock = threading.Lock()

        def ended(_: object) -> None:
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                self._reader.close()

        for future in running:
            future.add_done_callback(ended)

    def read_global_buffer(self, number: int) -> bytes:
        """The bytes of global buffer ``number`` (0 is the file descriptor)."""
        position, size = self.tail.global_buffers[number]
        return self._reader.read_exact(position, size, f"global buffer {number}")

    # -- public -----------------------------------------------------------------------------
    def read_fields(
        self, fields: list[LanceField], start: int = 0, stop: int | None = None
    ) -> list[pa.Array]:
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        return [self.read_field(f, start, stop) for f in fields]

    def _row_column_types(self, fields: list[LanceField]) -> list[tuple[int, LanceField, pa.DataType]]:
        """(column, field, Arrow type its pages decode to) of each column holding ``fields``'
        values row for row."""
        out: list[tuple[int, LanceField, pa.DataType]] = []
        for field in fields:
            if self.tail.version != (2, 0):
                out += [
                    (self._column(chain[-1]), chain[-1], structure_v2_1.path_type(chain))
                    for chain in structure_v2_1.leaf_paths(field)
                ]
            elif field.is_struct and not field.is_packed:  # a packed struct is one column
                out += self._row_column_types(field.children)
            elif not field.is_list:
                out.append((self._column(field), field, field.arrow_type()))
        return out

    def _row_columns(self, fields: list[LanceField]) -> list[tuple[int, LanceField]]:
        """(column, field) of each column holding ``fields``' values row for row."""
        return [(col, leaf) for col, leaf, _ in self._row_column_types(fields)]

    def read_field(self, field: LanceField, start: int, stop: int) -> pa.Array:
        if self.tail.version != (2, 0):
            chains = structure_v2_1.leaf_paths(field)
            arrays = [
                self._read_column(
                    self._column(chain[-1]), start, stop, structure_v2_1.path_type(chain), chain[-1]
                )
                for chain in chains
            ]
            return structure_v2_1.merge(field, arrays, self.path)
        col = self._column(field)
        if field.is_struct and not field.is_packed:  # a packed struct's column holds whole rows
            children = [self.read_field(c, start, stop) for c in field.children]
            return (
                pa.StructArray.from_arrays(children, fields=[c.to_arrow() for c in field.children])
                if children
                else pa.nulls(stop - start, field.arrow_type())
            )
        if field.is_list:
            rows = self._read_column(col, start, stop, structure_v2_0.LIST_PAGE_TYPE, field)
            counts, valid = structure_v2_0.item_counts(rows)
            first = self._items_before(col, start, field)
            items = self.read_field(field.children[0], first, first + int(counts.sum()))
            return structure_v2_0.lengths_to_list(
                field.arrow_type(), counts, valid, items, self.path, field.name
            )
        return self._read_column(col, start, stop, field.arrow_type(), field)

    # -- columns and pages ------------------------------------------------------------------
    def _column(self, field: LanceField) -> int:
        try:
            return self.column_of_field[field.id]
        except KeyError:
            raise CorruptFileError(
                self.path, f"field {field.name!r} (id {field.id}) has no column in this file"
            ) from None

    def widest_page_starts(self, fields: list[LanceField], min_page_bytes: int) -> tuple[int, list[int]]:
        """(bytes, first row of each page) of the column with the most bytes among ``fields``'
        (one-column fields) whose pages hold ``min_page_bytes`` or more on average; (0, []) where
        none does. The mean leaves the last page out: a file's last page is often short
        (pylance's 1 MiB vector pages ending in a page of 1,152 rows fell under the mean)."""
        best: tuple[int, list[int]] = (0, [])
        for f in fields:
            col = self.column_of_field.get(f.id)
            if col is None or col >= len(self.tail.columns):
                continue
            pages, before = self.tail.columns[col].pages, self.bytes_before(col)
            rest = before[-2] if len(pages) > 1 else before[-1]
            if before[-1] > best[0] and rest >= min_page_bytes * max(len(pages) - 1, 1):
                best = (before[-1], list(itertools.accumulate((page.length for page in pages), initial=0)))
        return best

    def _starts(self, col: int, field: LanceField) -> list[int]:
        """First row of each page of column ``col`` (and the total at the end).

        The total is checked against the rows the column must hold, so that a damaged page length
        cannot make a decoder allocate for rows that do not exist.
        """
        starts = self._page_starts.get(col)
        if starts is None:
            if col >= len(self.tail.columns):
                raise CorruptFileError(
                    self.path, f"column {col} does not exist ({len(self.tail.columns)} columns)"
                )
            starts = [0]
            for page in self.tail.columns[col].pages:
                starts.append(starts[-1] + page.length)
            expected = self._rows_of(field)
            if expected is not None and starts[-1] != expected:
                raise CorruptFileError(
                    self.path,
                    f"column {col} ({field.name!r}): its pages hold {starts[-1]} "
                    f"rows, the column must have {expected}",
                )
            self._page_starts[col] = starts
        return starts

    def _rows_of(self, field: LanceField) -> int | None:
        """Rows the column of ``field`` holds: the file's rows, except under a 2.0 list (the list
        pages' ``num_items``); None where the file's schema does not place the field."""
        if self.tail.version != (2, 0):
            return self.num_rows  # 2.1+: every page counts top-level rows
        if field.id in self._top_level:
            return self.num_rows
        parent = self._parent.get(field.id)
        if parent is None:
            return None
        if parent.is_list:
            col = self._column(parent)
            return sum(self._num_items(col, p) for p in range(len(self.tail.columns[col].pages)))
        return self._rows_of(parent)

    def _read_column(
        self, col: int, start: int, stop: int, arrow_type: pa.DataType, field: LanceField
    ) -> pa.Array:
        starts = self._starts(col, field)
        if stop <= start:
            return pa.array([], arrow_type)
        if stop > starts[-1]:
            raise CorruptFileError(
                self.path, f"column {col} ({field.name!r}) has {starts[-1]} rows, need {stop}"
            )
        first = bisect.bisect_right(starts, start) - 1
        last = bisect.bisect_left(starts, stop) - 1
        self._settle(col, first, last)
        todo = [p for p in range(first, last + 1) if self._cached(col, p) is None]
        extra = self._small_pages_after(col, todo, last)
        decoded = (
            dict(zip(todo + extra, self._decode_pages(col, todo + extra, arrow_type, field))) if todo else {}
        )
        with self._lock:
            runs = self._runs.get(col, [])
            # pages decoded as one run: a slice of it, no copy (and no slice of each page first)
            run = next((r for r in runs if r[0] <= first and last <= r[1]), None) if first != last else None
            pages = (
                []
                if run is not None
                else [decoded[p] if p in decoded else self._cached(col, p) for p in range(first, last + 1)]
            )
            if todo or (col, last) in self._ahead:
                self._cache[col] = (last, decoded[last] if last in decoded else self._cached(col, last))
            for p in range(first, last + 1):  # read now: the last one is the column's cached page
                self._ahead.pop((col, p), None)
            for p in extra:  # decoded with the pages read now: waiting for the reads reaching them
                self._ahead[(col, p)] = decoded[p]
            self._runs[col] = [r for r in runs if r[1] >= last]  # the reads have passed the others
        if run is not None:
            piece = run[2].slice(start - starts[run[0]], stop - start)
            if len(piece) != stop - start:  # a slice past the end is silently short: never hand it out
                raise AssertionError(f"{self.path}: column {col} run of pages {run[0]}-{run[1]} is short")
            return piece
        pieces = []
        for p, page in enumerate(pages, first):
            if page is None:  # neither decoded now nor the cached page: a bookkeeping bug
                raise AssertionError(f"{self.path}: column {col} page {p} was neither decoded nor cached")
            lo = max(start, starts[p]) - starts[p]
            hi = min(stop, starts[p + 1]) - starts[p]
            pieces.append(page.slice(lo, hi - lo))
        return concat_pages(pieces, arrow_type)

    def _cached(self, col: int, page: int) -> pa.Array | None:
        hit = self._cache.get(col)
        return hit[1] if hit is not None and hit[0] == page else self._ahead.get((col, page))

    def _decode_pages(
        self, col: int, pages: list[int], arrow_type: pa.DataType, field: LanceField
    ) -> list[pa.Array]:
        setups = [self._page_setup(col, p, field) for p in pages]
        with self._lock:
            ahead = {p: self._prefetched.pop((col, p)) for p in pages if (col, p) in self._prefetched}
        if len(pages) > 1 and not ahead:
            read = self._read_run(setups)
        else:
            ranges = [
                (off, size)
                for p, setup in zip(pages, setups)
                if p not in ahead
                for off, size in zip(setup.offsets, setup.sizes)
            ]
            blobs = iter(self._reader.read_ranges(ranges) if ranges else ())
            read = [
                [next(blobs) for _ in setup.offsets] if p not in ahead else []
                for p, setup in zip(pages, setups)
            ]
        inputs: list[tuple[any_pb2.Any, PageInput]] = []
        token = self.tail.token
        for p, setup, own in zip(pages, setups, read):
            buffers = ahead[p] if p in ahead else own
            page = PageInput(buffers, setup.meta.length, arrow_type, setup.where, (token, col, p))
            inputs.append((setup.encoding, page))
        together = self._decode_together(col, pages, inputs, arrow_type) if len(inputs) > 1 else None
        if together is not None:
            return together
        return [
            checked_page(
                partial(decode_page, encoding, page), page.where, arrow_type, page.num_rows, encoding
            )
            for encoding, page in inputs
        ]

    def _decode_together(
        self, col: int, pages: list[int], inputs: list[tuple[any_pb2.Any, PageInput]], arrow_type: pa.DataType
    ) -> list[pa.Array] | None:
        """Consecutive pages of one column decoded in one call of their page decoder's
        ``decode_pages`` (``PageRowDecoder``), checked as one page, then cut back into pages; None
        where the decoder has no such call or declines (the pages are then decoded one by one).

        Why: a writer that cuts pages as its input batches come (pylance) leaves tens of pages of
        a few hundred KiB per column, and each page decoded alone pays its Python setup and Arrow's
        build and checks (a scan of two numeric columns of such a file took 7x pylance's time)."""
        first_encoding, first = inputs[0]
        decoder = registry.page_decoders.get(first_encoding.type_url)
        batch = getattr(decoder, "decode_pages", None)
        if batch is None or any(encoding.type_url != first_encoding.type_url for encoding, _ in inputs):
            return None
        where = f"{first.where} and the {len(inputs) - 1} pages after it"
        total = sum(page.num_rows for _, page in inputs)
        out = guarded(lambda: batch(inputs), where, first_encoding)
        if out is None:
            return None
        whole = checked_page(lambda: out, where, arrow_type, total, first_encoding)
        pieces, at = [], 0
        for _, page in inputs:
            pieces.append(whole.slice(at, page.num_rows))
            at += page.num_rows
        if pages[-1] - pages[0] == len(pages) - 1:  # consecutive (pages cached apart are not decoded)
            with self._lock:  # the latest runs of the column, for reads spanning their pages
                self._runs[col] = [*self._runs.get(col, [])[-(RUNS_KEPT - 1) :], (pages[0], pages[-1], whole)]
        return pieces

    def _check_page(self, col: int, p: int, meta: file2_pb2.ColumnMetadata.Page) -> None:
        if len(meta.buffer_offsets) != len(meta.buffer_sizes):
            raise CorruptFileError(
                self.path,
                f"column {col} page {p} lists {len(meta.buffer_offsets)} buffer "
                f"offsets but {len(meta.buffer_sizes)} sizes",
            )
        for off, size in zip(meta.buffer_offsets, meta.buffer_sizes):
            if off + size > self._reader.size():
                raise CorruptFileError(
                    self.path,
                    f"column {col} page buffer [{off}, {off + size}) lies past "
                    f"the end of the file ({self._reader.size()} bytes)",
                )

    def _page_setup(self, col: int, p: int, field: LanceField) -> PageSetup:
        """Page ``p`` of column ``col``, checked (``PageSetup``). Kept per page (``_PAGE_SETUPS``):
        a scan of a file cut into many small pages parsed every page's encoding again on every
        open, and a point lookup reads the same pages query after query."""
        key = (self.tail.token, col, p)
        found = _PAGE_SETUPS.get(key)
        if found is None or found.field_name != field.name:
            meta = self.tail.columns[col].pages[p]
            self._check_page(col, p, meta)
            where = f"{self.path}: column {col} (field {field.name!r}), page {p}"
            encoding = self._page_encoding(meta, where)
            found = PageSetup(
                field.name, where, encoding, meta, tuple(meta.buffer_offsets), tuple(meta.buffer_sizes)
            )
            _PAGE_SETUPS.put(key, found)
        return found

    def _page_encoding(self, meta: file2_pb2.ColumnMetadata.Page, where: str) -> any_pb2.Any:
        if meta.encoding.WhichOneof("location") != "direct":
            raise CorruptFileError(self.path, f"{where}: only direct page encodings are supported")
        return parse_message(any_pb2.Any, meta.encoding.direct.encoding, self.path, f"{where} encoding")

    def _items_before(self, col: int, row: int, field: LanceField) -> int:
        """Number of list items referenced by the rows before ``row`` of a 2.0 list column.

        Whole pages answer from their encoding's ``num_items``; only the page holding ``row``
        is decoded.
        """
        starts = self._starts(col, field)
        page = bisect.bisect_right(starts, row) - 1
        total = sum(self._num_items(col, p) for p in range(min(page, len(starts) - 1)))
        if row > starts[page] and page < len(starts) - 1:
            rows = self._read_column(col, starts[page], row, structure_v2_0.LIST_PAGE_TYPE, field)
            total += int(structure_v2_0.item_counts(rows)[0].sum())
        return total

    def _num_items(self, col: int, page: int) -> int:
        meta = self.tail.columns[col].pages[page]
        where = f"{self.path}: column {col}, page {page}"
        enc = parse_message(
            encodings_v2_0_pb2.ArrayEncoding, self._page_encoding(meta, where).value, self.path, where
        )
        if enc.WhichOneof("array_encoding") != "list":
            raise CorruptFileError(
                self.path, f"{where}: expected a list page, found {enc.WhichOneof('array_encoding')}"
            )
        return enc.list.num_items
