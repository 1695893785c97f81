"""Reader of one Lance data file: row ranges of fields, decoded through the encoding plugins."""

from __future__ import annotations

import bisect
import threading
from functools import partial

import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw._proto import encodings_v2_0_pb2, file2_pb2
from lance_fw._util import pools
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
from lance_fw.file.reader_fetch import PageFetches
from lance_fw.file.reader_takes import RowTakes
from lance_fw.io.storage import RangeReader, Storage
from lance_fw.plugin_manager import registry
from lance_fw.schema import LanceField

#: The pool the pages of one batch's columns are decoded on together (``decode_ahead``).
COLUMN_POOL = "column-decode"
#: Pages smaller than this are decoded by the read itself, not ahead on the pool.
DECODE_AHEAD_BYTES = 1 << 20
#: Pages after a lone heavy page among which the next heavy one is decoded beside it: a small page
#: between two large ones (a column's last page of a write batch) otherwise left the second to be
#: decoded alone, on one core (2M names, lance_fw-written: the second fragment's three pages took
#: 28 ms one after another; the whole scan went from 58.9 to 54.7 ms).
DECODE_AHEAD_LOOK_PAGES = 4
#: Pages smaller than this are decoded in runs with the pages after them (``_small_pages_after``).
#: Above ``DECODE_AHEAD_BYTES``: pylance writing a stream of 8192-row batches cuts a 32-float
#: vector column into pages of 1.05 MB, and each decoded alone paid its setup, read and Arrow
#: build (2M rows: 245 pages, each ~1 ms on the pool and 1.5 ms on the reading thread).
RUN_PAGE_BYTES = 2 << 20
#: Encoded bytes of consecutive small pages (each under ``RUN_PAGE_BYTES``) a read decodes
#: in one run, the pages past its rows kept for the next reads (``_small_pages_after``).
#: Each run is a round of the scan (the reading thread waits for the pool, then slices): at
#: 4 MiB pylance's 1 MB vector pages (8192 rows) came 4 to a run, and a scan of that column
#: took 205 ms; at 8 MiB 156-165 ms, at 12-16 MiB 190-195 (every column: 475 -> 420 ms).
SMALL_PAGES_RUN_BYTES = 8 << 20
#: The least a column's next page or run must hold to be decoded beside the one a read needs
#: when no other column of the read is worth a pool task (``_next_run``): a thread handoff costs
#: tens of microseconds, decoding this much a few milliseconds.
NEXT_RUN_MIN_BYTES = 256 << 10
#: Runs of pages decoded together that a reader keeps per column (``_runs``).
RUNS_KEPT = 4
#: Pages whose setup (checks, parsed encoding, where) ``_page_setup`` keeps, by (file tail token,
#: column, page): a few hundred bytes each. Enough for every page of a scan of a few files cut
#: into pages of 8192 rows (pylance writing a stream: 5 columns of 2M rows hold 1,225 pages).
PAGE_SETUPS_CACHED = 8192
_PAGE_SETUPS: LruCache[tuple[int, int, int], PageSetup] = LruCache(PAGE_SETUPS_CACHED)


class LanceFileReader(RowTakes, PageFetches):
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
        self._reader.close()

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

    def decode_ahead(self, fields: list[LanceField], start: int, stop: int) -> None:
        """Decode side by side, on the column pool, the pages the columns of ``fields`` need for
        rows [start, stop) that are not decoded yet, so that the reads of those rows only slice.

        Why: a scan decodes a column's page on the first batch that touches it, column after
        column (and a range over several pages of a column, page after page), while the later
        batches only slice decoded pages; decoding those pages at once uses every core on the
        expensive batch (numpy, pyarrow and zstd release the GIL).

        A pool task is a page or a run of pages under ``RUN_PAGE_BYTES`` each (the range's and
        those after it, ``_small_pages_after``) holding ``DECODE_AHEAD_BYTES`` or more. Nothing
        happens unless two tasks are found: two columns', one column's and its next one
        (``_next_run``), or one run's two halves (``_halves``); otherwise the reads decode as
        usual. With two, the lighter runs of the other columns go along. Pages decoded here
        wait in ``_ahead`` until they are read.
        """
        stop = min(stop, self.num_rows)
        if stop <= start:
            return
        key = tuple(f.id for f in fields)
        columns = self._ahead_columns.get(key)
        if columns is None:
            columns = self._ahead_columns[key] = [
                (col, leaf, arrow_type, self._starts(col, leaf))
                for col, leaf, arrow_type in self._row_column_types(fields)
            ]
        jobs: list[tuple[int, list[int], pa.DataType, LanceField]] = []
        firsts: dict[int, int] = {}  # column -> first page the rows need
        for col, leaf, arrow_type, starts in columns:
            first = firsts[col] = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_left(starts, stop) - 1
            todo = [p for p in range(first, last + 1) if self._cached(col, p) is None]
            run = todo + self._small_pages_after(col, todo, last)
            if len(run) > len(todo) or (todo and all(self._in_runs(col, p) for p in todo)):
                jobs.append((col, run, arrow_type, leaf))  # pages under RUN_PAGE_BYTES: one run
            else:
                jobs += [(col, [p], arrow_type, leaf) for p in todo]

        heavy = [j for j in jobs if self._pages_bytes(j[0], j[1]) >= DECODE_AHEAD_BYTES]
        if len(heavy) == 1 and stop < self.num_rows:  # one wide column: its next heavy page or run
            col, pages, arrow_type, leaf = heavy[0]  # of small pages beside it, waiting in
            following = self._next_run(col, pages)  # ``_ahead`` for the reads reaching it
            if following:
                # pages decoded ahead before the rows' first page: the reads jumped past them.
                # (Not before ``pages[0]``: the rows' first pages may be decoded ahead already,
                # waiting for this very read; they were dropped and decoded again.)
                with self._lock:
                    for behind in [k for k in self._ahead if k[0] == col and k[1] < firsts[col]]:
                        del self._ahead[behind]
                heavy.append((col, following, arrow_type, leaf))
        if len(heavy) == 1:  # nothing to decode beside it: its run, if it is one, in two halves
            heavy = self._halves(heavy[0])
        elif not heavy and jobs:  # the same for the largest run of lighter pages
            heavy = self._halves(max(jobs, key=lambda j: self._pages_bytes(j[0], j[1])))
        if len(heavy) < 2:  # a thread handoff costs more than decoding a small page here
            return
        # the lighter runs worth a task go along: the reading thread waits for the pool meanwhile,
        # then decoded them one after the other (batched: 90 of a 490 ms scan of every column)
        taken = {(job[0], job[1][0]) for job in heavy}
        heavy += [
            j
            for j in jobs
            if (j[0], j[1][0]) not in taken and self._pages_bytes(j[0], j[1]) >= NEXT_RUN_MIN_BYTES
        ]
        heavy.sort(key=lambda j: -self._pages_bytes(j[0], j[1]))  # the largest first: even ends

        def decode(job: tuple[int, list[int], pa.DataType, LanceField]) -> list[pa.Array]:
            col, pages, arrow_type, leaf = job
            return self._decode_pages(col, pages, arrow_type, leaf)

        decoded = list(pools.pool(COLUMN_POOL).map(decode, heavy))
        with self._lock:
            for (col, pages, _, _), arrays in zip(heavy, decoded, strict=True):
                for page, array in zip(pages, arrays, strict=True):
                    self._ahead[(col, page)] = array

    def _halves(
        self, job: tuple[int, list[int], pa.DataType, LanceField]
    ) -> list[tuple[int, list[int], pa.DataType, LanceField]]:
        """A run of pages cut at its middle byte into two runs to decode side by side, where each
        holds ``NEXT_RUN_MIN_BYTES`` or more; else the job alone.

        Why: a column's last run of a file, with no next run to decode beside it, was decoded on
        the reading thread alone (2M ids of pylance's 8192-row pages: 6 of the scan's 40 ms)."""
        col, pages, arrow_type, leaf = job
        if len(pages) < 2 or pages[-1] - pages[0] != len(pages) - 1:
            return [job]
        before = self.bytes_before(col)
        middle = (before[pages[0]] + before[pages[-1] + 1]) // 2
        cut = min(max(bisect.bisect_left(before, middle, pages[0] + 1, pages[-1]), pages[0] + 1), pages[-1])
        head, tail = pages[: cut - pages[0]], pages[cut - pages[0] :]
        if min(self._pages_bytes(col, head), self._pages_bytes(col, tail)) < NEXT_RUN_MIN_BYTES:
            return [job]
        return [(col, head, arrow_type, leaf), (col, tail, arrow_type, leaf)]

    def _next_run(self, col: int, pages: list[int]) -> list[int]:
        """What to decode beside ``pages`` of a column (a heavy page, or a run of small pages
        worth a pool task) when no other column of the read is worth one: after a heavy page
        not decoded in runs, the next heavy page within ``DECODE_AHEAD_LOOK_PAGES``, else the
        page or run right after it; after a run, the next run. None where that is decoded
        already or holds under ``NEXT_RUN_MIN_BYTES`` (a column of one heavy page and a smaller
        last one decoded them one after the other, on one core)."""
        n_pages = len(self.tail.columns[col].pages)
        if len(pages) == 1 and self._is_heavy(col, pages[0]) and not self._in_runs(col, pages[0]):
            after = range(pages[0] + 1, min(n_pages, pages[0] + 1 + DECODE_AHEAD_LOOK_PAGES))
            following = next((p for p in after if self._is_heavy(col, p)), None)
            if following is not None:
                return [following] if self._cached(col, following) is None else []
        q = pages[-1] + 1
        if q >= n_pages or self._cached(col, q) is not None:
            return []
        run = [q] + self._small_pages_after(col, [q], q, SMALL_PAGES_RUN_BYTES)
        return run if self._pages_bytes(col, run) >= NEXT_RUN_MIN_BYTES else []

    def _is_heavy(self, col: int, page: int) -> bool:
        """Whether the page holds ``DECODE_AHEAD_BYTES`` or more: worth a pool task of its own."""
        return self._pages_bytes(col, [page]) >= DECODE_AHEAD_BYTES

    def _in_runs(self, col: int, page: int) -> bool:
        """Whether the page is decoded in runs with its neighbours (under ``RUN_PAGE_BYTES``)."""
        return self._pages_bytes(col, [page]) < RUN_PAGE_BYTES

    def bytes_before(self, col: int) -> list[int]:
        """Encoded bytes of the pages of column ``col`` before each page, and of all at the end."""
        found = self._page_bytes.get(col)
        if found is None:
            found = [0]
            for meta in self.tail.columns[col].pages:
                found.append(found[-1] + sum(meta.buffer_sizes))
            self._page_bytes[col] = found
        return found

    def _pages_bytes(self, col: int, pages: list[int]) -> int:
        """Encoded bytes of pages ``pages`` of column ``col`` (all their buffers)."""
        before = self.bytes_before(col)
        if pages and pages[-1] - pages[0] == len(pages) - 1:
            return before[pages[-1] + 1] - before[pages[0]]
        return sum(before[p + 1] - before[p] for p in pages)

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

    def _small_pages_after(self, col: int, todo: list[int], last: int, limit: int | None = None) -> list[int]:
        """Pages after ``last`` to decode along with ``todo`` (all to decode now, the last of
        them ``last``), in one run: while every page is under ``RUN_PAGE_BYTES`` and the run
        holds at most ``limit`` bytes (2.1+ files, whose page decoders can decode consecutive
        pages together; none for a read that decodes nothing).

        ``limit`` defaults to half of the column's bytes from ``todo[0]`` on, between
        ``DECODE_AHEAD_BYTES`` and ``SMALL_PAGES_RUN_BYTES``: a column of 2.4 MB of small pages
        then makes two runs, which ``decode_ahead`` decodes side by side, rather than one run
        decoded on one core."""
        if not todo or todo[-1] != last or self.tail.version == (2, 0):
            return []
        if not all(self._in_runs(col, p) for p in todo):
            return []
        before = self.bytes_before(col)
        if limit is None:
            limit = min(
                SMALL_PAGES_RUN_BYTES, max(DECODE_AHEAD_BYTES, (before[-1] - before[todo[0]] + 1) // 2)
            )
        total = self._pages_bytes(col, todo)
        extra: list[int] = []
        for p in range(last + 1, len(before) - 1):
            size = before[p + 1] - before[p]
            if not self._in_runs(col, p) or self._cached(col, p) is not None:
                break
            if total + size > limit:
                # the column's last pages, worth no pool task of their own, go along: left
                # behind, they were decoded by the reading thread alone (pylance's 8192-row
                # pages, ids of each file: 2-3 ms of a 2-column scan's 80)
                rest = range(p, len(before) - 1)
                if before[-1] - before[p] < NEXT_RUN_MIN_BYTES and all(
                    self._in_runs(col, q) and self._cached(col, q) is None for q in rest
                ):
                    extra.extend(rest)
                break
            total += size
            extra.append(p)
        return extra

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
