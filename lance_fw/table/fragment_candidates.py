"""A fragment's filtered read over an index's candidate rows (``CandidateReads``, a part of
``FragmentReader``): few candidates are taken row by row, many read as the spans holding them.

Apart from ``fragment`` so that each module keeps to one job: ``fragment`` reads rows and filters
them, this module decides how an index's answer is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lance_fw._util import sets
from lance_fw.table.matched import matched_batches, window_slices
from lance_fw.table.matcher import DENSE_SHARE
from lance_fw.table.rows import probe_schema

if TYPE_CHECKING:
    from lance_fw.schema import LanceField
    from lance_fw.table.matcher import Matcher
    from lance_fw.table.rows import Rows

#: An index's candidates are read row by row up to this share of a fragment's rows; more are read
#: as ranges (whole pages then cost less than many row lookups).
CANDIDATE_SHARE = 1 / 8
#: Beyond that share, candidates further apart than this many rows are read as separate spans (a
#: zone map's or bloom filter's zones), the rows between them skipped.
SPAN_GAP = 4096
#: Output batches of exact candidates read per range (``_exact_span_batches``), at least this
#: many rows a read: each read of a range costs ~0.1-0.2 ms a column to plan and slice.
EXACT_READ_ROWS = 262144


class CandidateReads:
    """The candidate half of ``FragmentReader`` (its only user), which provides what is declared here."""

    if TYPE_CHECKING:

        @property
        def physical_rows(self) -> int: ...

        def _span(self, start: int, stop: int | None) -> tuple[int, int]: ...
        @property
        def deleted(self) -> np.ndarray: ...

        def live_among(self, offsets: np.ndarray) -> np.ndarray: ...
        def read_range(
            self,
            fields: list[LanceField],
            start: int,
            stop: int,
            until: int | None = None,
            alone: bool = False,
        ) -> list[pa.Array]: ...
        def take_physical(self, fields: list[LanceField], offsets: np.ndarray) -> list[pa.Array]: ...
        def _row_columns(self, offsets: np.ndarray | range) -> tuple[pa.Array, pa.Array]: ...
        def _asked_row_columns(self, offsets: np.ndarray | range, rows: Rows) -> list[pa.Array]: ...
        def _fetch_matches(
            self, fields: list[LanceField], hits: np.ndarray, start: int, stop: int, alone: bool = False
        ) -> list[pa.Array]: ...
        def filtered_batches(
            self,
            rows: Rows,
            filter_fields: list[LanceField],
            matcher: Matcher,
            ranks_of: Callable[[np.ndarray], np.ndarray] | None = None,
        ) -> Iterator[pa.RecordBatch]: ...

    def candidate_batches(
        self,
        rows: Rows,
        filter_fields: list[LanceField],
        matcher: Matcher,
        candidates: np.ndarray,
        exact: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """``filtered_batches`` over only the physical rows ``candidates`` (sorted; an index's
        answer, deleted rows included): live candidates are taken, the filter re-checks them, and
        the other columns are taken for the matches. Many candidates are read as the spans of rows
        holding them (``SPAN_GAP``), filtered as a scan would, skipping the rows between spans.
        ``exact``: the candidates are the filter's matches (``IndexPlan.exact``), so they are
        read without the re-check: a few taken in one pass, many by ranges (``_exact_span_batches``)."""
        first, last = self._span(rows.start, rows.stop)
        offsets = np.asarray(candidates, np.int64)
        offsets = self.live_among(_within(offsets, first, last))  # (sorted: no pass over a million)
        if exact and rows.most is not None:  # (the consumer uses no more: a limit's rows)
            offsets = offsets[: rows.most]
        many = len(offsets) > CANDIDATE_SHARE * max(last - first, 1)
        if exact and many:  # as a span and the rows between candidates
            start, stop = int(offsets[0]), int(offsets[-1]) + 1
            between = sets.range_without(start, stop, offsets) if stop - start > len(offsets) else offsets[:0]
            yield from self._exact_span_batches(rows, start, stop, between)
            return
        rank_of_candidate = _candidate_ranks(offsets)
        if many:  # scan the spans holding them
            cuts = np.flatnonzero(np.diff(offsets) > SPAN_GAP) + 1
            for lo, hi in zip(offsets[np.r_[0, cuts]], offsets[np.r_[cuts - 1, len(offsets) - 1]]):
                span = replace(rows, start=int(lo), stop=int(hi) + 1)
                yield from self.filtered_batches(span, filter_fields, matcher, rank_of_candidate)
            return
        if not len(offsets):
            return
        if exact:  # every candidate is a match, in order: its columns are the batch
            fetched = self.take_physical(rows.fields, offsets) + self._asked_row_columns(offsets, rows)
            out = pa.RecordBatch.from_arrays(fetched, schema=rows.schema())
            yield from window_slices(out, rank_of_candidate(offsets), rows.batch_size)
            return
        row_id, address = self._row_columns(offsets)
        filter_ids = [f.id for f in filter_fields]
        probe = pa.RecordBatch.from_arrays(
            self.take_physical(filter_fields, offsets) + [row_id, address],
            schema=probe_schema(filter_fields),
        )
        hits = np.asarray(matcher(probe), np.int64)
        if not len(hits):
            return
        others = [f for f in rows.fields if f.id not in filter_ids]
        fetched = self.take_physical(others, offsets[hits]) if others else []
        ranks = rank_of_candidate(offsets[hits])
        yield from matched_batches(
            rows.fields, filter_ids, probe, hits, fetched, rows.schema(), ranks, rows.batch_size
        )

    def exact_batches_except(self, rows: Rows, excluded: np.ndarray) -> Iterator[pa.RecordBatch]:
        """``candidate_batches`` of exact candidates held as the fragment's rows less ``excluded``
        (sorted offsets; ``IndexPlan.excluded``: an index's ``NOT``), never listed: the rows
        read are ``rows``' span less those and the deleted ones (``_exact_span_batches``)."""
        first, last = self._span(rows.start, rows.stop)
        holes = sets.union(
            _within(np.asarray(excluded, np.int64), first, last), _within(self.deleted, first, last)
        )
        if rows.most is not None:  # (the consumer uses no more: a limit's rows)
            last = min(last, int(sets.nth_without(first, holes, np.array([rows.most]))[0]))
            holes = _within(holes, first, last)
        if last - first > len(holes):
            yield from self._exact_span_batches(rows, first, last, holes)

    def _exact_span_batches(
        self, rows: Rows, first: int, last: int, holes: np.ndarray
    ) -> Iterator[pa.RecordBatch]:
        """Batches of exact candidates, the physical rows [first, last) less ``holes`` (sorted
        int64 within the span: rows that are not candidates, or deleted), many of the
        fragment's rows: each group of whole output batches (a candidate's batch is its rank
        over ``batch_size``, pylance's batches of an index's answer) read as the range of rows
        from its first candidate to its last, its holes dropped by a mask where they are few
        (``DENSE_SHARE``), else its candidates taken. No filter runs: a ``NOT`` an index answers
        (``id != k``) read its filter's column and evaluated it on every row again."""
        group = max(1, EXACT_READ_ROWS // rows.batch_size) * rows.batch_size
        schema = rows.schema()
        count = last - first - len(holes)
        for at in range(0, count, group):
            ends = sets.nth_without(first, holes, np.array([at, min(count, at + group) - 1]))
            start, stop = int(ends[0]), int(ends[1]) + 1
            inside = _within(holes, start, stop)
            chosen: np.ndarray | range = range(start, stop)
            if len(inside) <= (1 - DENSE_SHARE) * (stop - start):  # the range read, its holes dropped
                fetched = self.read_range(rows.fields, start, stop, last)
                if len(inside):
                    keep = np.ones(stop - start, dtype=bool)
                    keep[inside - start] = False
                    mask = pa.array(keep)
                    fetched = [column.filter(mask) for column in fetched]
                    chosen = np.flatnonzero(keep) + start  # (the mask's rows: one mask, not two)
            else:
                chosen = sets.range_without(start, stop, inside)
                fetched = self._fetch_matches(rows.fields, chosen - start, start, stop)
            out = pa.RecordBatch.from_arrays(fetched + self._asked_row_columns(chosen, rows), schema=schema)
            for lo in range(0, out.num_rows, rows.batch_size):
                yield out.slice(lo, rows.batch_size)


def _within(values: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The sorted ``values`` in [start, stop), as int64."""
    lo, hi = np.searchsorted(values, [start, stop])
    return np.asarray(values[lo:hi], np.int64)


def _candidate_ranks(offsets: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Each found offset's rank among the live candidates ``offsets`` (sorted): pylance reads an
    index's live candidates in batches of ``batch_size`` and filters each, so a match's batch is
    its candidate's rank over ``batch_size``. Where most rows between the first candidate and the
    last are candidates, the rank is the distance from the first less the non-candidates before
    it, searched among those few (searching 1M candidates for 1M matches cost ~12 ms)."""
    if not len(offsets):
        return lambda found: found
    first = int(offsets[0])
    span = int(offsets[-1]) - first + 1
    if span == len(offsets):  # no gap (a range's rows, as written)
        return lambda found: found - first
    if span - len(offsets) >= len(offsets):
        return lambda found: np.searchsorted(offsets, found)
    keep = np.ones(span, dtype=bool)
    keep[offsets - first] = False
    holes = np.flatnonzero(keep) + first
    return lambda found: found - first - np.searchsorted(holes, found)
