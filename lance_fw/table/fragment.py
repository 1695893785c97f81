"""Reading one fragment: its data files (one reader each), minus its deletion vector."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw._util import pools, sets
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.file import structure_v2_1
from lance_fw.file.buffers import is_variable_bytes
from lance_fw.file.legacy_v0_1 import DataFileReader, open_data_file
from lance_fw.file.reader import LanceFileReader
from lance_fw.io.storage import Storage, join_uri
from lance_fw.schema import LanceField, LanceSchema
from lance_fw.table.deletion import deletion_path, read_deleted_offsets
from lance_fw.table.fragment_candidates import CandidateReads
from lance_fw.table.matched import dense_matched_batches, matched_batches
from lance_fw.table.matcher import DenseMatches, Matcher
from lance_fw.table.paths import DATA_DIR
from lance_fw.table.row_ids import fragment_row_ids, row_addresses
from lance_fw.table.rows import DEFAULT_BATCH_SIZE, Rows, filter_schema, probe_schema
from lance_fw.table.version_cache import VersionCache

#: In a filtered scan, the other columns of a batch are fetched row by row (``take``) when at most
#: this share of its rows match, else read as a range.
TAKE_SHARE = 1 / 64
#: The same for string and binary columns and vectors (``FragmentReader._fetch_matches``).
VARIABLE_TAKE_SHARE = 1 / 4
#: Matches from which a filtered read takes its columns side by side on ``TAKE_POOL`` (a thread
#: handoff costs ~0.1 ms; a column's take of this many rows, milliseconds).
PARALLEL_TAKE_ROWS = 4096
TAKE_POOL = "take-columns"
#: Rows of a probe most of which match from which its columns are filtered side by side on
#: ``TAKE_POOL`` (``_dense_batches``; a filter of 262144 8-byte values takes ~0.3 ms).
PARALLEL_FILTER_ROWS = 16384
#: The pool of takes from an object store, and its threads: they wait on round trips, not cores.
TAKE_IO_POOL, TAKE_IO_THREADS = "take-fetches", 8


#: A filtered scan evaluates its filter over this many rows at a time (at least one batch): each
#: evaluation costs ~0.15 ms to set up (an Acero plan) besides ~2 ns a row.
PROBE_ROWS = 262144
#: Mean page size of a scan's widest column from which its reads end at its page boundaries.
WIDE_PAGE_BYTES = 1 << 20
#: A plain scan reads this many rows at a time and slices its batches out of them (``batches``).
SCAN_READ_ROWS = 65536
#: A read of at most ``FEW_ROWS`` rows and 1 / ``FEW_ROWS_SHARE`` of its fragment is read alone
#: (``read_range``): ``to_table(limit=10)`` decoded 8 MiB runs of pages (33-81 ms against
#: pylance's 2; taken, ~2 ms); from 2.0 files (whose takes read a byte range a value) up to
#: ``FEW_ROWS_V2_0`` rows (5 columns: 10 rows 1.5 ms against 12.8, 1000 rows 10.5 against 9.3).
FEW_ROWS, FEW_ROWS_SHARE, FEW_ROWS_V2_0 = DEFAULT_BATCH_SIZE, 8, 256


class FragmentReader(CandidateReads):
    def __init__(
        self,
        storage: Storage,
        base_uri: str,
        fragment: table_pb2.DataFragment,
        schema: LanceSchema,
        cache: VersionCache | None = None,
    ) -> None:
        self.storage, self.base_uri, self.fragment, self.schema = storage, base_uri, fragment, schema
        self.cache = cache

    @property
    def physical_rows(self) -> int:
        return self.fragment.physical_rows

    @cached_property
    def deleted(self) -> np.ndarray:
        """Deleted physical offsets (sorted, read-only; empty without a deletion file)."""
        if not self.fragment.HasField("deletion_file"):
            return np.zeros(0, dtype=np.uint32)
        dfile = self.fragment.deletion_file
        path = deletion_path(self.base_uri, self.fragment.id, dfile.read_version, dfile.id, dfile.file_type)

        def load() -> np.ndarray:
            offsets = read_deleted_offsets(self.storage, self.base_uri, self.fragment.id, dfile)
            if len(offsets) and int(offsets.max()) >= self.physical_rows:
                raise CorruptFileError(
                    path, f"deletes row {int(offsets.max())} of a fragment with {self.physical_rows} rows"
                )
            offsets.setflags(write=False)
            return offsets

        return load() if self.cache is None else self.cache.deletions.get_or_load(path, load)

    @cached_property
    def _readers(self) -> list[tuple[set[int], DataFileReader]]:
        out = []
        for data_file in self.fragment.files:
            if data_file.base_id:
                raise UnsupportedFeatureError(
                    f"{self.base_uri}: data file {data_file.path} lives under base path "
                    f"{data_file.base_id}; multi-base datasets are not supported yet"
                )
            mapping = {fid: col for fid, col in zip(data_file.fields, data_file.column_indices) if col >= 0}
            reader = open_data_file(
                self.storage,
                join_uri(self.base_uri, DATA_DIR, data_file.path),
                mapping,
                data_file.file_major_version,
                metadata_cache=self.cache.files if self.cache is not None else None,
            )
            out.append((set(data_file.fields), reader))
            if reader.num_rows != self.physical_rows:  # the manifest's count drives scans, takes and counts
                for _, opened in out:
                    opened.close()
                raise CorruptFileError(
                    reader.path,
                    f"holds {reader.num_rows} rows, but the manifest says fragment "
                    f"{self.fragment.id} has {self.physical_rows}",
                )
        return out

    def open_files(self) -> None:
        """Open the data files now: callers about to read from several threads open them once."""
        _ = self._readers

    def prefetch_small_buffers(self, fields: list[LanceField], offsets: np.ndarray) -> None:
        """Each data file fetches at once the small buffers a take of ``offsets`` (sorted,
        distinct) will read first (``LanceFileReader.prefetch_small_buffers``)."""
        for _, reader in self._readers:
            reader.prefetch_small_buffers([f for f in fields if self._reader_for(f) is reader], offsets)

    def _reader_for(self, field: LanceField) -> DataFileReader | None:
        for ids, reader in self._readers:
            if field.id in ids or any(c.id in ids for c in field.walk()):
                return reader
        return None

    def _without_column(self, f: LanceField, rows: int, read: Callable) -> pa.Array:
        """A field no data file has a column for: inside a packed struct it is read with the
        struct's column; otherwise it was added after these files were written (null)."""
        owner = structure_v2_1.packed_owner(self.schema.fields, f)
        reader = self._reader_for(owner) if owner is not None else None
        if reader is None or owner is None:
            return pa.nulls(rows, f.arrow_type())
        return structure_v2_1.packed_field(read(reader, owner), owner, f)

    def read_range(
        self, fields: list[LanceField], start: int, stop: int, until: int | None = None, alone: bool = False
    ) -> list[pa.Array]:
        """Physical rows [start, stop) of each field (deleted rows still included). Each data
        file first fetches the pages all its fields need at once (``LanceFileReader.prefetch``).
        ``until``: the caller reads on, range after range, up to that row (a scan), which lets
        the files decode ahead of it (``decode_ahead``). ``alone``: these few rows are read by
        themselves (a streamed scan's first batch, a ``limit``'s rows): in 2.1+ files they are
        taken, which decodes only the chunks holding them, not their whole pages (8192 rows of
        lance_fw's 1M-row pages: 6 ms against 45; of pylance's pages cut small, 6 against 15)."""
        if alone and (taken := self._take_alone(fields, start, stop)) is not None:
            return taken
        for _, reader in self._readers:
            own = [f for f in fields if self._reader_for(f) is reader]
            reader.prefetch(own, start, stop)
            reader.decode_ahead(own, start, stop, until)
        out = []
        for f in fields:
            found = self._reader_for(f)
            out.append(
                found.read_field(f, start, stop)
                if found
                else self._without_column(f, stop - start, lambda r, g: r.read_field(g, start, stop))
            )
        return out

    def _take_alone(self, fields: list[LanceField], start: int, stop: int) -> list[pa.Array] | None:
        """Rows [start, stop) read alone, taken where that pays (else None: ``FEW_ROWS``), the
        columns side by side from an object store (one after the other, 10 rows of 5 columns
        over S3 took 30-35 ms; side by side 17-21)."""
        files = [r for _, r in self._readers if isinstance(r, LanceFileReader)]
        if len(files) < len(self._readers) or (
            stop - start > FEW_ROWS_V2_0 and any(r.tail.version == (2, 0) for r in files)
        ):
            return None
        offsets = np.arange(start, stop)
        if len(fields) < 2 or not any(r.fetches_pay for r in files):
            return self.take_physical(fields, offsets)
        self.prefetch_small_buffers(fields, offsets)
        futures = self._submit_takes(fields, offsets, pools.pool(TAKE_IO_POOL, TAKE_IO_THREADS))
        return [future.result()[0] for future in futures.values()]

    def take_physical(self, fields: list[LanceField], offsets: np.ndarray) -> list[pa.Array]:
        """Rows at physical ``offsets`` of each field (any order, repeats allowed). Only the pages,
        chunks and byte ranges holding those rows are read (``LanceFileReader.take_field``)."""
        offsets = np.asarray(offsets, np.int64)
        if len(offsets) and offsets.max() >= self.physical_rows:
            raise CorruptFileError(
                self.base_uri,
                f"fragment {self.fragment.id}: row {int(offsets.max())} asked of {self.physical_rows}",
            )
        distinct = len(offsets) < 2 or bool((np.diff(offsets) > 0).all())
        unique, inverse = (offsets, None) if distinct else np.unique(offsets, return_inverse=True)
        out = []
        for f in fields:
            reader = self._reader_for(f)
            array = (
                reader.take_field(f, unique)
                if reader
                else self._without_column(f, len(unique), lambda r, g: r.take_field(g, unique))
            )
            out.append(array if inverse is None else array.take(pa.array(inverse)))
        return out

    def _live_ranks(self, offsets: np.ndarray) -> np.ndarray:
        """For live physical ``offsets`` (sorted), each one's rank among the fragment's live rows."""
        if not len(self.deleted):
            return offsets
        return offsets - np.searchsorted(self.deleted.astype(np.int64), offsets)

    def physical_of_live(self, positions: np.ndarray) -> np.ndarray:
        """Physical offsets of the live rows at ``positions`` (0-based among live rows).

        No array of all live rows is built (``sets.nth_without``)."""
        return sets.nth_without(0, self.deleted, positions)

    def live_offsets(self) -> np.ndarray:
        """Physical offsets of the live rows, in order."""
        return sets.range_without(0, self.physical_rows, self.deleted.astype(np.int64))

    def live_among(self, offsets: np.ndarray) -> np.ndarray:
        """Those of physical ``offsets`` (int64) not deleted."""
        if not len(self.deleted):
            return offsets
        return offsets[~sets.isin(offsets, self.deleted.astype(np.int64))]

    def live_mask(self, start: int, stop: int) -> np.ndarray | None:
        """Boolean mask of live rows in [start, stop), or None when nothing there is deleted."""
        deleted = self.deleted
        if not len(deleted):
            return None
        lo, hi = np.searchsorted(deleted, [start, stop])
        if lo == hi:
            return None
        mask = np.ones(stop - start, dtype=bool)
        mask[deleted[lo:hi].astype(np.int64) - start] = False
        return mask

    @cached_property
    def row_ids(self) -> np.ndarray | None:
        """Stable row id of every physical row, or None (then row ids are row addresses)."""
        return fragment_row_ids(self.storage, self.base_uri, self.fragment)

    def _row_columns(self, offsets: np.ndarray | range) -> tuple[pa.Array, pa.Array]:
        """``_rowid`` and ``_rowaddr`` of physical rows ``offsets`` (an array, or a range)."""
        address = pa.array(row_addresses(self.fragment.id, offsets))
        ids = self.row_ids
        if ids is None:
            return address, address
        return pa.array(
            ids[offsets.start : offsets.stop] if isinstance(offsets, range) else ids[offsets]
        ), address

    def _asked_row_columns(self, offsets: np.ndarray | range, rows: Rows) -> list[pa.Array]:
        """The row columns ``rows`` asks for (``_rowid`` first), of physical rows ``offsets``."""
        if not (rows.with_row_id or rows.with_row_address):
            return []
        row_id, address = self._row_columns(offsets)
        return ([row_id] if rows.with_row_id else []) + ([address] if rows.with_row_address else [])

    def _span(self, start: int, stop: int | None) -> tuple[int, int]:
        """Physical rows [start, stop) clipped to the fragment (a Spark task reads one such slice)."""
        return max(start, 0), self.physical_rows if stop is None else min(stop, self.physical_rows)

    def batches(self, rows: Rows) -> Iterator[pa.RecordBatch]:
        """Live rows of ``rows`` in batches of ``batch_size`` physical rows (fewer where rows are
        deleted), as pylance's scan cuts them. Rows are read from one run of pages the files
        decode ahead to the next (``_scan_runs``), else ``SCAN_READ_ROWS`` at a time, and each
        batch sliced out of them: a read costs ~50-200 us of bookkeeping per call whatever its
        length (pages, prefetch, decode ahead), a slice ~2 us. ``Rows.first_batch``: a short
        first batch, read alone. A few rows of a large fragment (``head``, a ``limit``, an
        ``offset``'s window; ``FEW_ROWS``) are read alone too."""
        schema = rows.schema()
        first, last = self._span(rows.start, rows.stop)
        if 0 < last - first <= min(FEW_ROWS, self.physical_rows // FEW_ROWS_SHARE):
            yield from self._span_batches(rows, schema, first, last, last, alone=True)
            return
        step = max(rows.batch_size, SCAN_READ_ROWS // rows.batch_size * rows.batch_size)
        # a stream's first batch is read alone (taken): the reads after it, once its consumer
        # asked for more, are a whole scan's (cut evenly, decoding ahead from the start)
        first_stop = None if rows.whole or rows.first_batch else min(first + rows.batch_size, last)
        page_starts = self._scan_runs(rows.fields, first, last, first_stop)
        if page_starts:  # reads from run to run (``scan_runs``), however long
            step = max(step, last - first)
        else:
            page_starts = self._widest_page_starts(rows.fields)
        span_start = first
        if rows.first_batch and first < last:  # a (short) first batch, read alone
            span_start = min(first + rows.first_batch, first + rows.batch_size, last)
            yield from self._span_batches(rows, schema, first, span_start, last, alone=True)
        while span_start < last:
            span_stop = min(span_start + step, last)
            # a read spanning two pages (runs) of the widest column copies both into one array:
            # the read ends at the last batch before the page's end, and the batch across it is
            # read alone (batches stay batch_size rows from ``first``)
            after = bisect.bisect_right(page_starts, span_start)
            if after < len(page_starts) and page_starts[after] < span_stop:
                whole = (page_starts[after] - span_start) // rows.batch_size * rows.batch_size
                span_stop = min(span_start + max(whole, rows.batch_size), last)
            yield from self._span_batches(rows, schema, span_start, span_stop, last)
            span_start = span_stop

    def _span_batches(
        self, rows: Rows, schema: pa.Schema, span_start: int, span_stop: int, last: int, alone: bool = False
    ) -> Iterator[pa.RecordBatch]:
        """Rows [span_start, span_stop) read at once (the scan reads on up to ``last``; ``alone``:
        see ``read_range``), cut into batches of ``batch_size`` physical rows, the deleted ones left out."""
        arrays = self.read_range(rows.fields, span_start, span_stop, last, alone)
        arrays += self._asked_row_columns(range(span_start, span_stop), rows)
        span = pa.RecordBatch.from_arrays(arrays, schema=schema)
        for start in range(span_start, span_stop, rows.batch_size):
            stop = min(start + rows.batch_size, span_stop)
            batch = span.slice(start - span_start, stop - start)
            mask = self.live_mask(start, stop)
            if mask is not None:
                batch = batch.filter(pa.array(mask))
            if batch.num_rows:
                yield batch

    def _scan_runs(
        self, fields: list[LanceField], first: int, last: int, first_stop: int | None
    ) -> list[int]:
        """Where the runs of pages a scan of rows [first, last) decodes begin, over every data
        file holding ``fields`` (``LanceFileReader.scan_runs``; ``first_stop``: the first
        batch's end, None where every batch is taken); none where a file of them decodes read
        by read."""
        runs: set[int] = set()
        for _, reader in self._readers:
            own = [f for f in fields if self._reader_for(f) is reader]
            if not own:
                continue
            if not isinstance(reader, LanceFileReader):
                return []
            found = reader.scan_runs(own, first, last, first_stop)
            if not found:
                return []
            runs.update(found)
        return sorted(runs)

    def _widest_page_starts(self, fields: list[LanceField]) -> list[int]:
        """First row of each page of the column with the most bytes among ``fields``' where its
        pages hold ``WIDE_PAGE_BYTES`` or more on average (narrower pages cost little to join;
        ``LanceFileReader.widest_page_starts``); else none."""
        found = [
            reader.widest_page_starts([f for f in fields if self._reader_for(f) is reader], WIDE_PAGE_BYTES)
            for _, reader in self._readers
            if isinstance(reader, LanceFileReader)
        ]
        return max(found, default=(0, []), key=lambda best: best[0])[1]

    def filtered_batches(
        self,
        rows: Rows,
        filter_fields: list[LanceField],
        matcher: Matcher,
        ranks_of: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Late materialisation: per batch the filter's columns are read and ``matcher`` run first;
        the other projected columns are read only for batches with matches (a few matching rows
        through ``take_physical``, many as a range). Rows stay in physical order. The filter also
        sees ``_rowid`` and ``_rowaddr``. The matches come out in one batch per window of
        ``batch_size`` rows, ranked by ``ranks_of`` from their physical offsets (default: among the
        fragment's live rows, pylance's read batches)."""
        schema = rows.schema()
        filter_ids = [f.id for f in filter_fields]
        probe_shape = probe_schema(filter_fields)
        others = [f for f in rows.fields if f.id not in filter_ids]
        # one filter call per many rows, whole windows of batch_size (the output batches) each
        step = max(rows.batch_size, PROBE_ROWS // rows.batch_size * rows.batch_size)
        first, last = self._span(rows.start, rows.stop)
        row_columns_first = getattr(matcher, "uses_row_columns", True)
        filter_shape = filter_schema(filter_fields)

        def full_probe(columns: list[pa.Array], start: int, stop: int) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays(
                columns + list(self._row_columns(range(start, stop))), schema=probe_shape
            )

        # probes end where windows of ``step`` live rows end: one across a window's end split its
        # matches into two batches where pylance hands on one (rows deleted: physical multiples
        # of ``step`` are not window ends). The first probe of a read whose consumer may stop
        # early (``Rows.first_batch``: a stream, a limit) is its first batch's live rows, alone.
        # most rows of a probe matching: the matches kept as the filter's mask (``DenseMatches``),
        # where no limit, candidate ranks or row columns need their offsets
        dense_of = getattr(matcher, "dense", None)
        if ranks_of is not None or rows.most is not None or rows.with_row_id or rows.with_row_address:
            dense_of = None
        head = [rows.first_batch] if rows.first_batch and first == 0 and rows.first_batch < step else []
        ends = self.physical_of_live(np.array([*head, *range(step, self.physical_rows, step)], np.int64))
        starts = [first, *(int(end) for end in ends if first < end < last)]
        handed = 0  # matches handed on (``Rows.most``)
        for start, stop in zip(starts, [*starts[1:], last], strict=True):
            alone = bool(head) and start == first and stop - start <= FEW_ROWS
            columns = self.read_range(filter_fields, start, stop, alone=alone)
            # a filter naming no row column gets them only for probes with matches
            probe = (
                full_probe(columns, start, stop)
                if row_columns_first
                else pa.RecordBatch.from_arrays(columns, schema=filter_shape)
            )
            mask = self.live_mask(start, stop)
            found = (
                dense_of(probe) if dense_of and mask is None and not (rows.skip and rows.skip.rows) else None
            )
            if isinstance(found, DenseMatches):
                yield from self._dense_batches(
                    rows, filter_ids, probe, found, others, schema, (start, stop, last), alone
                )
                continue
            hits = np.asarray(matcher(probe) if found is None else found, np.int64)
            if mask is not None:
                hits = hits[mask[hits]]
            if rows.most is not None:  # (``offset=3000, limit=5``: 3005 rows, not a probe's 5000)
                hits = hits[: rows.most - handed]
                handed += len(hits)
            if rows.skip is not None and rows.skip.rows:  # (and then 5 fetched, not 3005)
                dropped = min(rows.skip.rows, len(hits))
                hits = hits[dropped:]
                rows.skip.rows -= dropped
            if not len(hits):
                if alone:  # (``readahead``'s ``first_alone``: the other reads start on this value)
                    yield pa.RecordBatch.from_pylist([], schema=schema)
                continue
            fetched = self._fetch_matches(others, hits, start, stop, alone)
            found = hits + start
            if not row_columns_first:  # the row columns asked for, of the matches alone
                every = len(hits) == stop - start  # (a range: its addresses in one pass)
                fetched += self._asked_row_columns(range(start, stop) if every else found, rows)
            ranks = ranks_of(found) if ranks_of else self._live_ranks(found)
            yield from matched_batches(
                rows.fields, filter_ids, probe, hits, fetched, schema, ranks, rows.batch_size
            )
            if rows.most is not None and handed >= rows.most:
                return

    def _dense_batches(
        self,
        rows: Rows,
        filter_ids: list[int],
        probe: pa.RecordBatch,
        found: DenseMatches,
        others: list[LanceField],
        schema: pa.Schema,
        span: tuple[int, int, int],
        alone: bool,
    ) -> Iterator[pa.RecordBatch]:
        """``filtered_batches``' batches of a probe of physical rows [start, stop), none of them
        deleted, most of which match (``span``: start, stop and the row the read goes on to): the
        other columns read as a range and every column asked for filtered by the mask.

        Why read the other columns as a scan (up to the read's last row): a filter most rows pass
        reads them all, and the scan's queue decodes the next probe's pages while this thread
        filters (read probe by probe, the decoding threads idled meanwhile). Why filter side by
        side: Arrow's ``filter`` releases the GIL, and one after another they were a third of the
        reading thread's time. A 2-column ``category != 7`` scan of pylance's 8192-row pages:
        81 -> 69 ms median (interleaved A/B)."""
        start, stop, last = span
        read = self.read_range(others, start, stop, until=last, alone=alone)
        kept = [probe.column(filter_ids.index(f.id)) for f in rows.fields if f.id in filter_ids]
        columns = read + kept
        mask = found.mask
        if len(columns) > 1 and len(mask) >= PARALLEL_FILTER_ROWS:
            filtered = list(pools.pool(TAKE_POOL).map(lambda column: column.filter(mask), columns))
        else:
            filtered = [column.filter(mask) for column in columns]
        first_rank = int(self._live_ranks(np.array([start], np.int64))[0])
        yield from dense_matched_batches(
            rows.fields,
            filter_ids,
            filtered[len(read) :],
            mask,
            filtered[: len(read)],
            schema,
            first_rank,
            rows.batch_size,
        )

    def _submit_takes(
        self, fields: list[LanceField], offsets: np.ndarray, pool: ThreadPoolExecutor
    ) -> dict[int, Future[list[pa.Array]]]:
        """Each field's take of ``offsets`` on ``pool``, by field id (the files opened first, once,
        rather than by tasks racing to)."""
        self.open_files()
        return {f.id: pool.submit(self.take_physical, [f], offsets) for f in fields}

    def _takes_values(self, field: LanceField) -> bool:
        """Whether a take of ``field`` costs less than its page for a share of its rows: strings,
        binaries and fixed-size lists (vectors) of 2.1+ files, where a take decodes and copies only
        the taken values, a range read every value (a 10% take of 1M 128-byte vectors: 37 ms,
        reading them all 42 ms before the take; narrow numbers unpack faster whole). A 2.0 take
        reads each value's own byte range, slower than one read of the page."""
        reader = self._reader_for(field)
        t = field.arrow_type()
        wide = is_variable_bytes(t) or pa.types.is_fixed_size_list(t)
        return wide and reader is not None and reader.tail.version != (2, 0)

    def _fetch_matches(
        self, fields: list[LanceField], hits: np.ndarray, start: int, stop: int, alone: bool = False
    ) -> list[pa.Array]:
        """``fields`` at the matches ``hits`` (offsets from ``start``) of physical rows [start, stop):
        each column taken row by row (``take_physical``) when few enough rows match for its kind,
        else read as a range and taken from. Strings and binaries of 2.1+ files are taken up to
        ``VARIABLE_TAKE_SHARE``: decoding only the matching values (FSST, offsets) costs far less
        than a whole page (10% of a 1M-string FSST page: ~23 ms against ~90), where fixed-width
        values decode as cheaply in bulk. ``alone``: see ``read_range``."""
        if not fields:
            return []
        share = len(hits) / max(stop - start, 1)
        by_take = [
            f for f in fields if share <= (VARIABLE_TAKE_SHARE if self._takes_values(f) else TAKE_SHARE)
        ]
        ranged = [f for f in fields if f not in by_take]
        at = hits + start
        futures: dict[int, Future[list[pa.Array]]] = {}
        out: dict[int, pa.Array] = {}
        if len(hits) >= PARALLEL_TAKE_ROWS and len(by_take) + bool(ranged) > 1:
            futures = self._submit_takes(by_take, at, pools.pool(TAKE_POOL))  # beside the ranged read
        elif by_take:
            out.update(zip((f.id for f in by_take), self.take_physical(by_take, at)))
        if ranged:
            read = self.read_range(ranged, start, stop, alone=alone)
            if len(hits) < stop - start:  # (every row matching: the read as it is)
                chosen = pa.array(hits)
                read = [a.take(chosen) for a in read]
            out.update(zip((f.id for f in ranged), read))
        out.update((fid, future.result()[0]) for fid, future in futures.items())
        return [out[f.id] for f in fields]

    def close(self) -> None:
        if "_readers" in self.__dict__:
            for _, reader in self._readers:
                reader.close()
