"""Answering queries from a BTREE index's files (pylance 14's layout, see ``index_btree``).

Why pages: ``page_data.lance`` holds every (value, row address) pair sorted by value, nulls first,
in pages of ``batch_size`` rows; ``page_lookup.lance`` holds each page's min, max and null count.
The lookup (a few hundred rows for a million values) is read once and kept; a query picks the pages
whose [min, max] meet it and reads only those rows of ``page_data.lance``. A page that lies wholly
inside a range needs only its ``ids``; only the pages at the ends of a range (or holding a point)
need their values too.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw import interfaces as ix
from lance_fw._util import sets
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw_plugins.index_btree_keys import Bounds, BytesDomain, KeyDomain, NotComparable, domain_for
from lance_fw_plugins.index_btree_stats import format_stat

PAGES_FILE = "page_data.lance"
LOOKUP_FILE = "page_lookup.lance"
VALUES_COLUMN = "values"
IDS_COLUMN = "ids"
MIN_COLUMN = "min"
MAX_COLUMN = "max"
NULL_COUNT_COLUMN = "null_count"
PAGE_IDX_COLUMN = "page_idx"
BATCH_SIZE_KEY = "batch_size"
RANGE_PARTITIONED_KEY = "range_partitioned"
#: pylance's default rows per page (``zone_size``); written as ``batch_size``.
DEFAULT_BATCH_SIZE = 4096
_EMPTY = np.zeros(0, dtype=np.uint64)
#: Pages of ``page_data.lance`` (each ``batch_size`` rows of one or two columns) an opened index
#: keeps, least recently used dropped first: 64 pages of 4096 int64 pairs are 4 MiB.
BTREE_PAGE_CACHE_ENTRIES = 64


class BTreeReader:
    """An opened BTREE index (``ScalarIndexReader``); keeps the page lookup in memory."""

    def __init__(self, store: ix.IndexFileStore, field: pa.Field) -> None:
        self.store = store
        self.field = field
        self._pages_cache: LruCache[tuple[Any, ...], pa.Table] = LruCache(BTREE_PAGE_CACHE_ENTRIES)
        self.domain: KeyDomain | None = domain_for(field.type)
        for name in (PAGES_FILE, LOOKUP_FILE):
            if not store.exists(name):
                raise CorruptFileError(name, "a BTREE index needs page_data.lance and page_lookup.lance")
        meta = store.schema_metadata(LOOKUP_FILE)
        if meta.get(RANGE_PARTITIONED_KEY, "false") != "false":
            raise UnsupportedFeatureError(
                f"{LOOKUP_FILE}: range-partitioned BTREE indices ({RANGE_PARTITIONED_KEY}="
                f"{meta[RANGE_PARTITIONED_KEY]}) are not supported"
            )
        try:
            self.batch_size = int(meta.get(BATCH_SIZE_KEY, DEFAULT_BATCH_SIZE))
        except ValueError:
            raise CorruptFileError(
                LOOKUP_FILE, f"batch_size {meta[BATCH_SIZE_KEY]!r} is not an integer"
            ) from None
        lookup = store.read_table(LOOKUP_FILE)
        wanted = {MIN_COLUMN, MAX_COLUMN, NULL_COUNT_COLUMN, PAGE_IDX_COLUMN}
        if not wanted <= set(lookup.column_names) or self.batch_size <= 0:
            raise CorruptFileError(LOOKUP_FILE, f"not a BTREE page lookup (columns {lookup.column_names})")
        self.num_rows = store.num_rows(PAGES_FILE)
        self.lookup = lookup
        self.num_pages = lookup.num_rows
        if self.num_pages != -(-self.num_rows // self.batch_size):
            raise CorruptFileError(
                LOOKUP_FILE,
                f"{self.num_pages} pages for {self.num_rows} rows of {self.batch_size} in {PAGES_FILE}",
            )
        self.page_idx: list[int] = lookup.column(PAGE_IDX_COLUMN).to_pylist()
        self.null_counts: list[int] = lookup.column(NULL_COUNT_COLUMN).to_pylist()
        # pages holding a non-null value (all-null pages come first): their max and min keys
        self.value_pages: list[int] = []
        self.his: list[Any] = []
        self.los: list[Any] = []
        if self.domain is not None:
            mins = self.domain.key_list(lookup.column(MIN_COLUMN).combine_chunks())
            maxs = self.domain.key_list(lookup.column(MAX_COLUMN).combine_chunks())
            for i, (lo, hi) in enumerate(zip(mins, maxs, strict=True)):
                if hi is not None:
                    self.value_pages.append(i)
                    self.his.append(hi)
                    self.los.append(lo)

    # --- the ScalarIndexReader protocol -----------------------------------------------------------

    def supports(self, query: ix.ScalarQuery) -> bool:
        """Equality, IN, ranges, IS NULL and (string columns) prefixes, when the literals compare
        with the column's type (a string against an int column is left to a scan)."""
        if isinstance(query, ix.IsNullQuery):
            return True
        if self.domain is None:
            return False
        try:
            if isinstance(query, ix.EqualsQuery):
                self.domain.point(query.value)
            elif isinstance(query, ix.InQuery):
                for v in query.values:
                    self.domain.point(v)
            elif isinstance(query, ix.RangeQuery):
                self.domain.bounds(query.lower, query.lower_inclusive, query.upper, query.upper_inclusive)
            elif isinstance(query, ix.PrefixQuery):
                return isinstance(self.domain, BytesDomain) and self.domain.is_string
            else:
                return False
        except NotComparable:
            return False
        return True

    def search(self, query: ix.ScalarQuery) -> ix.IndexSearchResult:
        """Exact row addresses of ``query`` (see ``supports``)."""
        if not self.supports(query):
            raise UnsupportedFeatureError(f"the BTREE index on {self.field.name!r} cannot answer {query!r}")
        if isinstance(query, ix.IsNullQuery):
            return self._result(self._null_ids())
        domain = self.domain
        assert domain is not None
        if isinstance(query, ix.EqualsQuery):
            return self._result(self._points(domain, [query.value]))
        if isinstance(query, ix.InQuery):
            return self._result(self._points(domain, list(query.values)))
        if isinstance(query, ix.RangeQuery):
            b = domain.bounds(query.lower, query.lower_inclusive, query.upper, query.upper_inclusive)
            return self._result(self._range(domain, b))
        assert isinstance(query, ix.PrefixQuery) and isinstance(domain, BytesDomain)
        return self._result(self._prefix(domain, query.prefix))

    def statistics(self) -> dict[str, Any]:
        """pylance's ``index_stats(...)['indices'][0]`` for a BTREE: min (of the first page),
        max (of the last), num_pages; ``{}`` when empty and ``N/A`` when every value is null."""

        if self.num_pages == 0:
            return {}
        last_max = self.lookup.column(MAX_COLUMN)[self.num_pages - 1]
        if not last_max.is_valid:
            return {"min": "N/A", "max": "N/A", "num_pages": self.num_pages}
        first_min = self.lookup.column(MIN_COLUMN)[0]
        return {"min": format_stat(first_min), "max": format_stat(last_max), "num_pages": self.num_pages}

    # --- page selection ---------------------------------------------------------------------------

    def _page_rows(self, page: int) -> tuple[int, int]:
        start = self.page_idx[page] * self.batch_size
        return start, min(start + self.batch_size, self.num_rows)

    def _pages(self, b: Bounds) -> list[tuple[int, bool]]:
        """(page, wholly inside ``b``) for every page whose non-null values may meet ``b``."""
        if b.lo is None:
            first = 0
        elif b.lo_inclusive:
            first = bisect.bisect_left(self.his, b.lo)
        else:
            first = bisect.bisect_right(self.his, b.lo)
        out = []
        for j in range(first, len(self.value_pages)):
            lo = self.los[j]
            if lo is not None and not b.below_hi(lo):
                break
            inside = lo is not None and b.above_lo(lo) and b.below_hi(self.his[j])
            out.append((self.value_pages[j], inside))
        return out

    def _read(self, pages: Iterable[int], columns: list[str]) -> pa.Table:
        """Columns ``columns`` of pages ``pages`` (in page order). Pages read before come from
        the reader's page cache, as pylance's index cache keeps them: a point lookup reads the
        same few pages query after query. The rest are read as runs of neighbouring pages."""
        wanted = sorted(set(pages))
        found = {p: self._pages_cache.get((p, *columns)) for p in wanted}
        spans: list[list[int]] = []  # [first page, last page + 1] of each run not cached
        for p in (p for p in wanted if found[p] is None):
            if spans and spans[-1][1] == p:
                spans[-1][1] = p + 1
            else:
                spans.append([p, p + 1])
        for first, end in spans:
            start, stop = self._page_rows(first)[0], self._page_rows(end - 1)[1]
            run = self.store.read_range(PAGES_FILE, start, stop, columns)
            for p in range(first, end):
                lo, hi = self._page_rows(p)
                found[p] = run.slice(lo - start, hi - lo)
                self._pages_cache.put((p, *columns), found[p])
        tables = [found[p] for p in wanted]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _ids_where(self, partial: list[int], mask_of: Any) -> list[np.ndarray]:
        """``ids`` of the rows of pages ``partial`` whose values ``mask_of`` accepts."""
        if not partial:
            return []
        table = self._read(partial, [VALUES_COLUMN, IDS_COLUMN])
        values = table.column(VALUES_COLUMN).combine_chunks()
        ids = _u64(table.column(IDS_COLUMN))
        return [ids[mask_of(values)]]

    def _whole(self, pages: list[int]) -> list[np.ndarray]:
        if not pages:
            return []
        return [_u64(self._read(pages, [IDS_COLUMN]).column(IDS_COLUMN))]

    # --- queries ----------------------------------------------------------------------------------

    def _null_ids(self) -> np.ndarray:
        counts = np.asarray(self.null_counts, np.int64)
        pages = np.flatnonzero(counts)
        if not len(pages):
            return _EMPTY
        # each page's nulls are its first rows: ranges from the pages' starts, as one array
        starts = np.asarray(self.page_idx, np.int64)[pages] * self.batch_size
        lengths = counts[pages]
        rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        table = self.store.take_rows(PAGES_FILE, rows, [IDS_COLUMN])
        return _u64(table.column(IDS_COLUMN))

    def _range(self, domain: KeyDomain, b: Bounds | None) -> np.ndarray:
        if b is None:
            return _EMPTY
        parts: list[np.ndarray] = []
        # runs of pages wholly inside ``b`` or not, in page order: the ids come out in value
        # order, so ids rising with the values (a key column) need no sort after (2M: ~20 ms)
        for inside, run in itertools.groupby(self._pages(b), key=lambda page: page[1]):
            pages = [p for p, _ in run]
            parts += self._whole(pages) if inside else self._ids_where(pages, lambda v: domain.mask(v, b))
        return np.concatenate(parts) if parts else _EMPTY

    def _points(self, domain: KeyDomain, values: list[Any]) -> np.ndarray:
        """Rows equal to one of ``values``; a page holding only one of them (a run of duplicates)
        needs only its ids."""
        keys = sorted({k for k in (domain.point(v) for v in values) if k is not None})
        whole: set[int] = set()
        partial: set[int] = set()
        for k in keys:
            for page, inside in self._pages(Bounds(k, True, k, True)):
                (whole if inside else partial).add(page)
        partial -= whole
        parts = self._whole(sorted(whole)) + self._ids_where(
            sorted(partial), lambda v: domain.mask_in(v, keys)
        )
        return np.concatenate(parts) if parts else _EMPTY

    def _prefix(self, domain: BytesDomain, prefix: str) -> np.ndarray:
        pages = [p for p, _ in self._pages(domain.prefix_bounds(prefix))]
        parts = self._ids_where(pages, lambda v: domain.mask_prefix(v, prefix))
        return np.concatenate(parts) if parts else _EMPTY

    @staticmethod
    def _result(ids: np.ndarray) -> ix.IndexSearchResult:
        return ix.IndexSearchResult(sets.unique(np.asarray(ids, dtype=np.uint64)), exact=True)


def _u64(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint64)
