"""What a ``LanceFileReader`` decodes ahead of its reads: the pages the columns of a scan's next
rows need, side by side on a pool, in runs of small pages, balanced over its threads.

Apart from ``reader`` so that each module keeps to one job: ``reader`` opens files and reads row
ranges, this module plans and runs the decoding ahead of those reads (``RowTakes`` answers
takes, ``PageFetches`` reads pages' bytes).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import pyarrow as pa

from lance_fw._util import pools
from lance_fw.schema import LanceField

if TYPE_CHECKING:
    import threading

    from lance_fw.file.container import FileTail

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

#: A decode job: (column, its pages, the Arrow type they decode to, the leaf field).
AheadJob = tuple[int, list[int], pa.DataType, LanceField]


class AheadDecodes:
    """The decode-ahead half of ``LanceFileReader`` (its only user), which provides what is declared here."""

    if TYPE_CHECKING:
        tail: FileTail
        _lock: threading.Lock
        _ahead: dict[tuple[int, int], pa.Array]
        _ahead_columns: dict[tuple[int, ...], list[tuple[int, LanceField, pa.DataType, list[int]]]]
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
        jobs: list[AheadJob] = []
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
        heavy = self._balanced(heavy)

        def decode(job: AheadJob) -> list[pa.Array]:
            col, pages, arrow_type, leaf = job
            return self._decode_pages(col, pages, arrow_type, leaf)

        decoded = list(pools.pool(COLUMN_POOL).map(decode, heavy))
        with self._lock:
            for (col, pages, _, _), arrays in zip(heavy, decoded, strict=True):
                for page, array in zip(pages, arrays, strict=True):
                    self._ahead[(col, page)] = array

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
