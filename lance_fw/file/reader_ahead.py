"""What a ``LanceFileReader`` decodes ahead of its reads: the pages the columns of a scan's next
rows need, side by side on a pool, in runs of small pages, balanced over its threads.

Apart from ``reader`` so that each module keeps to one job: ``reader`` opens files and reads row
ranges, this module plans and runs the decoding ahead of those reads (``RowTakes`` answers
takes, ``PageFetches`` reads pages' bytes).
"""

from __future__ import annotations

import bisect
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from lance_fw._util import pools
from lance_fw.schema import LanceField

if TYPE_CHECKING:
    import threading

    from lance_fw.file.container import FileTail
    from lance_fw.io.storage import RangeReader

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

#: Encoded bytes of the jobs a scan's queue (``_scan_ahead``) keeps submitted past the rows it
#: reads: what is decoded ahead of the reads, at most (decoded, a few times this).
SCAN_AHEAD_BYTES = 16 << 20
#: Encoded bytes of consecutive small pages (each under ``RUN_PAGE_BYTES``) one job of a scan's
#: queue decodes together.
SCAN_JOB_BYTES = SMALL_PAGES_RUN_BYTES
#: A narrower column's job spans cuts of the widest (``_scan_cuts``) until it holds this much,
#: over at most ``SCAN_JOB_SPANS`` of them: a job per cut of a column of small pages (ids beside
#: 1 MB vector pages: a job every 4 of its pages) costs more in setup than in decoding.
SCAN_MIN_JOB_BYTES = 1 << 20
SCAN_JOB_SPANS = 8
#: Cuts of a scan's rows per worker (each cut a job per column), at least, while they hold
#: ``NEXT_RUN_MIN_BYTES``: each job costs ~0.4 ms of Python setup, which holds the GIL the other
#: workers' Python waits for. Two a worker (every column of a cut one job): a 2-column scan of
#: pylance's 8192-row pages, 7 jobs a file, took 47.3 ms median; at one a worker (4 jobs a
#: file, the two columns of a cut decoded side by side) 39.5 ms (interleaved A/B).
SCAN_JOBS_PER_WORKER_SPAN = 1
#: The first cut of a scan comes after this share of a cut's bytes: its first read waits only for
#: these jobs (DuckDB's ``LIMIT 10`` waited for half a file's decoding at one cut a worker).
SCAN_FIRST_CUT_SHARE = 1 / 8
#: Jobs of a scan's queue running or waiting on the pool, at most, per worker.
SCAN_JOBS_PER_WORKER = 2

#: A column a read takes: (column, leaf field, the Arrow type its pages decode to, its page starts).
ColumnPages = tuple[int, LanceField, pa.DataType, list[int]]
#: A decode job: (column, its pages, the Arrow type they decode to, the leaf field).
AheadJob = tuple[int, list[int], pa.DataType, LanceField]


#: A job of a scan's queue: (first row, encoded bytes, the job).
QueuedJob = tuple[int, int, AheadJob]
#: A job under way, as ``_pending`` holds it for each of its pages: its future and its pages.
PendingJob = tuple[Future[list[pa.Array]], list[int]]


@dataclass
class ScanQueue:
    """A scan's decode jobs over its rows from ``start`` (``AheadDecodes._scan_ahead``), in the
    order of their first rows; ``next``: the first not submitted yet; ``running``: those
    submitted whose pages the reads have not passed, with their ``_pending`` entries;
    ``reads``: the reads served so far; ``streamed``: its consumer may stop after any batch
    (nothing is decoded ahead of its first read)."""

    start: int
    jobs: list[QueuedJob]
    streamed: bool
    next: int = 0
    reads: int = 0
    running: list[tuple[QueuedJob, PendingJob]] = field(default_factory=list)


class AheadDecodes:
    """The decode-ahead half of ``LanceFileReader`` (its only user), which provides what is declared here."""

    if TYPE_CHECKING:
        tail: FileTail
        _lock: threading.Lock
        _ahead: dict[tuple[int, int], pa.Array]
        _ahead_columns: dict[tuple[int, ...], list[ColumnPages]]
        _pending: dict[tuple[int, int], PendingJob]
        _scans: dict[tuple[tuple[int, ...], int], ScanQueue]
        _reader: RangeReader
        _page_bytes: dict[int, list[int]]

        @property
        def num_rows(self) -> int: ...

        def _cached(self, col: int, page: int) -> pa.Array | None: ...
        def _starts(self, col: int, field: LanceField) -> list[int]: ...
        def _row_column_types(
            self, fields: list[LanceField]
        ) -> list[tuple[int, LanceField, pa.DataType]]: ...

        def _decode_pages(
            self, col: int, pages: list[int], arrow_type: pa.DataType, field: LanceField
        ) -> list[pa.Array]: ...

    def decode_ahead(self, fields: list[LanceField], start: int, stop: int, until: int | None = None) -> None:
        """Decode side by side, on the column pool, the pages the columns of ``fields`` need for
        rows [start, stop) that are not decoded yet, so that the reads of those rows only slice.
        ``until``: the reads go on, range after range, up to that row (a scan): the jobs then
        come from the scan's queue (``_scan_ahead``) where it applies.

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
        key, columns = self._columns_of(fields)
        if until is not None and self._scan_ahead(key, columns, start, stop, min(until, self.num_rows)):
            return
        jobs: list[AheadJob] = []
        firsts: dict[int, int] = {}  # column -> first page the rows need
        for col, leaf, arrow_type, starts in columns:
            first = firsts[col] = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_left(starts, stop) - 1
            todo = [p for p in range(first, last + 1) if not self._known(col, p)]
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
        heavy = self._balanced(heavy)

        def decode(job: AheadJob) -> list[pa.Array]:
            col, pages, arrow_type, leaf = job
            return self._decode_pages(col, pages, arrow_type, leaf)

        decoded = list(pools.pool(COLUMN_POOL).map(decode, heavy))
        with self._lock:
            for (col, pages, _, _), arrays in zip(heavy, decoded, strict=True):
                for page, array in zip(pages, arrays, strict=True):
                    self._ahead[(col, page)] = array

    def _columns_of(self, fields: list[LanceField]) -> tuple[tuple[int, ...], list[ColumnPages]]:
        """The key of ``fields`` read together, and (column, leaf, decoded type, page starts) of
        each column holding their values row for row (worked out once per key)."""
        key = tuple(f.id for f in fields)
        columns = self._ahead_columns.get(key)
        if columns is None:
            columns = self._ahead_columns[key] = [
                (col, leaf, arrow_type, self._starts(col, leaf))
                for col, leaf, arrow_type in self._row_column_types(fields)
            ]
        return key, columns

    def _balanced(self, jobs: list[AheadJob]) -> list[AheadJob]:
        """The jobs, largest first, its runs halved (``_halves``) while the largest holds more than
        one worker's share of them all.

        Why: the read waits for all its jobs, so the largest sets its time. A scan of lance_fw's
        text table began with a run of four body pages (6.7 MB, 79 ms) beside a title page and
        the ids (3.3 MB): one thread idled for 47 ms of it."""
        sized = [(self._pages_bytes(job[0], job[1]), job) for job in jobs]
        share = sum(size for size, _ in sized) / pools.workers()
        while True:
            sized.sort(key=lambda size_job: -size_job[0])
            largest, job = sized[0]
            halves = self._halves(job) if largest > share else []
            if len(halves) < 2:
                return [job for _, job in sized]
            sized[:1] = [(self._pages_bytes(half[0], half[1]), half) for half in halves]

    def _halves(self, job: AheadJob) -> list[AheadJob]:
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
                return [] if self._known(col, following) else [following]
        q = pages[-1] + 1
        if q >= n_pages or self._known(col, q):
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
            if not self._in_runs(col, p) or self._known(col, p):
                break
            if total + size > limit:
                # the column's last pages, worth no pool task of their own, go along: left
                # behind, they were decoded by the reading thread alone (pylance's 8192-row
                # pages, ids of each file: 2-3 ms of a 2-column scan's 80)
                rest = range(p, len(before) - 1)
                if before[-1] - before[p] < NEXT_RUN_MIN_BYTES and all(
                    self._in_runs(col, q) and not self._known(col, q) for q in rest
                ):
                    extra.extend(rest)
                break
            total += size
            extra.append(p)
        return extra

    # -- a scan's queue ------------------------------------------------------------------------
    def _scan_ahead(
        self,
        key: tuple[int, ...],
        columns: list[ColumnPages],
        start: int,
        stop: int,
        until: int,
    ) -> bool:
        """Submit the scan's jobs that rows [start, stop) need, and those after them while fewer
        than ``SCAN_AHEAD_BYTES`` of them and ``SCAN_JOBS_PER_WORKER`` jobs a worker are under
        way; the reads wait for their pages (``_settle``). False where the queue does not apply
        (2.0 files, whose pages decode one by one; files read through fetches ahead, whose jobs
        would each wait on the store; one worker, which decoding ahead only races the reads for
        the core; scans of any column but fixed-width primitives): ``decode_ahead`` then plans
        the read's own jobs.

        Why: planned read by read, a scan decoded in rounds (plan, wait for every job, slice the
        next reads, plan again), and a worker idled whenever a round's jobs were uneven and
        between rounds (a 2-column scan of pylance's 8192-row pages: ~91 ms of decoding on two
        workers took 60-65 ms). A queue ahead of the reads keeps each worker a job ahead.

        Why primitives only: their pages decode cheaply per byte (unpacking, copies), so the
        rounds' idle time was what the queue wins back (that scan 61.5 -> 57.9 ms median, 59.2
        -> 49.5 ms first quartile, interleaved A/B); strings and vectors decode at a high CPU
        cost per byte, which the rounds already balance, and decoding them ahead kept more
        decoded pages alive (page faults), their decode CPU up 6% (strings) and 15% (every
        column), their scans 5-10% slower."""
        if until <= stop:
            return False
        queue = self._scan_queue(key, columns, start, until, stop)
        if queue is None:
            return False  # a few large pages: decoded read by read (a lone one in parts, page_parts)
        firsts = {col: bisect.bisect_right(starts, start) - 1 for col, _, _, starts in columns}
        for job, entry in queue.running:  # file what has finished (the pages stay pending else)
            if entry[0].done():
                self._file(job[2][0], entry, entry[0].result())
        queue.running = [(job, entry) for job, entry in queue.running if job[2][1][-1] >= firsts[job[2][0]]]
        limit = SCAN_JOBS_PER_WORKER * pools.workers()
        busy = sum(not entry[0].done() for _, entry in queue.running)
        ahead = sum(job[1] for job, _ in queue.running if job[0] >= stop)
        pool = pools.pool(COLUMN_POOL)
        queue.reads += 1
        while queue.next < len(queue.jobs):
            queued = queue.jobs[queue.next]
            row, size, (col, pages, arrow_type, leaf) = queued
            # nothing ahead of a streamed scan's first read: its consumer may stop after the first
            # batch (DuckDB's LIMIT 10), and jobs left running then slowed the next query
            early = queue.streamed and queue.reads < 2
            if row >= stop and (early or ahead + size > SCAN_AHEAD_BYTES or busy >= limit):
                break
            queue.next += 1
            if pages[-1] < firsts[col] or any(self._known(col, p) for p in pages):
                continue  # passed by the reads, or decoded another way meanwhile
            future = pool.submit(self._decode_pages, col, pages, arrow_type, leaf)
            entry = (future, pages)  # one per job: ``_file`` files the job's pages at once
            with self._lock:
                for page in pages:
                    self._pending[(col, page)] = entry
            queue.running.append((queued, entry))
            busy += 1
            ahead += size if row >= stop else 0
        return True

    def _scan_queue(
        self,
        key: tuple[int, ...],
        columns: list[ColumnPages],
        start: int,
        until: int,
        first_stop: int | None,
    ) -> ScanQueue | None:
        """The queue of a scan of ``columns`` from ``start`` up to ``until`` (made on the scan's
        first call; ``first_stop``: where its first batch ends, None for a scan whose every batch
        is taken, ``_scan_cuts``), or None where a queue does not apply (see ``_scan_ahead``), or where it
        would hold fewer than ``SCAN_JOBS_PER_WORKER_SPAN`` jobs a worker (a few large pages,
        decoded read by read, a lone one in parts)."""
        if (
            self.tail.version == (2, 0)
            or self._reader.prefetch_pays
            or pools.workers() < 2
            or not all(pa.types.is_primitive(arrow_type) for _, _, arrow_type, _ in columns)
        ):
            return None
        queue = self._scans.get((key, until))
        if queue is None or (start <= queue.start and queue.next):  # a new scan of the rows
            queue = self._scans[(key, until)] = ScanQueue(
                start, self._scan_jobs(columns, start, until, first_stop), first_stop is not None
            )
        if len(queue.jobs) < SCAN_JOBS_PER_WORKER_SPAN * pools.workers():
            return None
        return queue

    def scan_runs(
        self, fields: list[LanceField], start: int, until: int, first_stop: int | None
    ) -> list[int]:
        """The rows where the runs of pages a scan of ``fields`` over rows [start, until) decodes
        begin (its queue's jobs, ``_scan_ahead``), in order; none where no queue applies.
        ``first_stop``: where a streamed scan's first batch ends; None where every batch is
        taken (``_scan_cuts``).

        Why: a read within one decoded run slices it, a read across two copies both pieces into
        one array; and every read pays its bookkeeping (~0.2 ms: the queue, each column's
        pages) on the reading thread, while the decoding threads wait for the GIL it holds. A
        scan reading from run start to run start (``FragmentReader.batches``) copies nothing
        and reads a few times a fragment rather than every ``SCAN_READ_ROWS``."""
        until = min(until, self.num_rows)
        if until <= start:
            return []
        key, columns = self._columns_of(fields)
        queue = self._scan_queue(key, columns, start, until, first_stop)
        return [] if queue is None else sorted({row for row, _, _ in queue.jobs})

    def _scan_jobs(
        self,
        columns: list[ColumnPages],
        start: int,
        until: int,
        first_stop: int | None,
    ) -> list[QueuedJob]:
        """The jobs decoding the pages of rows [start, until) of ``columns`` not decoded yet, in
        the order of their first rows: the rows cut where the column of the most bytes has
        gathered ``SCAN_JOB_BYTES`` (``_scan_cuts``), each column's pages in each cut one job (a
        page of ``RUN_PAGE_BYTES`` or more alone).

        Why cut every column at the same rows: cut by its own bytes, a narrow column's first
        job held 97 of its pages (800k rows), and the scan's first read waited for all of them."""
        cuts = self._scan_cuts(columns, start, until, first_stop)
        out: list[QueuedJob] = []
        for col, leaf, arrow_type, starts in columns:
            before = self.bytes_before(col)
            runs: list[list[int]] = []
            at, opened = 0, None  # the cut interval the last run opened in
            for p in range(bisect.bisect_right(starts, start) - 1, bisect.bisect_left(starts, until)):
                while at < len(cuts) and cuts[at] <= starts[p]:
                    at += 1
                if self._known(col, p):
                    opened = None
                elif not self._in_runs(col, p):
                    runs.append([p])
                    opened = None
                elif opened is not None and (
                    opened == at  # a narrow column's run spans cut intervals up to SCAN_MIN_JOB_BYTES
                    or (
                        opened > 0  # (not the first: the scan's first read waits for it)
                        and at - opened < SCAN_JOB_SPANS
                        and before[p] - before[runs[-1][0]] < SCAN_MIN_JOB_BYTES
                    )
                ):
                    runs[-1].append(p)
                else:
                    runs.append([p])
                    opened = at
            out += [
                (starts[run[0]], before[run[-1] + 1] - before[run[0]], (col, run, arrow_type, leaf))
                for run in runs
            ]
        out.sort(key=lambda queued: (queued[0], queued[2][0]))
        return out

    def _scan_cuts(
        self,
        columns: list[ColumnPages],
        start: int,
        until: int,
        first_stop: int | None,
    ) -> list[int]:
        """Rows where the column of the most bytes in [start, until) has gathered
        ``SCAN_JOB_BYTES`` since the last cut (at its page starts), or less where that would make
        fewer than ``SCAN_JOBS_PER_WORKER_SPAN`` cuts a worker.

        A streamed scan (``first_stop`` given: where its first batch ends) is cut first after
        ``SCAN_FIRST_CUT_SHARE`` of that, at or past ``first_stop``: its first read waits only
        for those jobs (a read across a cut waits for the jobs on both sides: DuckDB's 256Ki-row
        batches waited for half a file before a ``LIMIT 10`` could stop). A scan whose every
        batch is taken (``to_table``) is cut evenly: small first jobs made the 2-column scan of
        pylance's 8192-row pages 9% slower (44.9 against 40.7 ms median, interleaved A/B)."""
        widest, most = None, -1
        for col, _, _, starts in columns:
            before = self.bytes_before(col)
            size = before[bisect.bisect_left(starts, until)] - before[bisect.bisect_right(starts, start) - 1]
            if size > most:
                widest, most = (col, starts, before), size
        if widest is None:
            return []
        col, starts, before = widest
        # at least SCAN_JOBS_PER_WORKER_SPAN jobs a worker: two jobs of a fragment's strings
        # (72 and 15 pages) left a worker idle for 20 of a scan's 110 ms
        size = max(
            NEXT_RUN_MIN_BYTES, min(SCAN_JOB_BYTES, most // (SCAN_JOBS_PER_WORKER_SPAN * pools.workers()))
        )
        cuts: list[int] = []
        since = before[bisect.bisect_right(starts, start) - 1]
        gather = size if first_stop is None else max(NEXT_RUN_MIN_BYTES, int(size * SCAN_FIRST_CUT_SHARE))
        for p in range(bisect.bisect_right(starts, start), bisect.bisect_left(starts, until)):
            if before[p] - since >= gather and (cuts or first_stop is None or starts[p] >= first_stop):
                cuts.append(starts[p])
                since, gather = before[p], size
        return cuts

    def _known(self, col: int, page: int) -> bool:
        """Whether the page is decoded (``_cached``) or being decoded ahead (``_pending``)."""
        return (col, page) in self._pending or self._cached(col, page) is not None

    def _settle(self, col: int, first: int, last: int) -> None:
        """Wait for the jobs decoding pages ``first..last`` of column ``col`` ahead, and file
        their pages in ``_ahead``. Never called holding ``_lock`` (the jobs take it)."""
        for page in range(first, last + 1):
            entry = self._pending.get((col, page))
            if entry is not None:
                self._file(col, entry, entry[0].result())

    def _file(self, col: int, entry: PendingJob, arrays: list[pa.Array]) -> None:
        """A finished job's pages into ``_ahead``, those still waited for (filing it again, or
        after ``drop_pending``, does nothing)."""
        with self._lock:
            for page, array in zip(entry[1], arrays, strict=True):
                if self._pending.get((col, page)) is entry:
                    del self._pending[(col, page)]
                    self._ahead[(col, page)] = array

    def drop_pending(self) -> list[Future[list[pa.Array]]]:
        """Forget the jobs decoding ahead: those not started are cancelled; those running are
        returned (they read this reader's file, which must stay open until they end)."""
        with self._lock:
            futures = {id(e[0]): e[0] for e in self._pending.values()}
            self._pending.clear()
            self._scans.clear()
        return [future for future in futures.values() if not future.cancel()]
