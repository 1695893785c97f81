"""``LanceDataset.scanner(...)``: pylance's scan options over one table ``Snapshot``'s batch stream.

Lazy: batches are produced on demand, so ``limit`` stops reading fragments early. With
``fragment_readahead=n`` up to n fragments are decoded at once in worker threads (``readahead``).

Batches follow pylance: per fragment, the rows a scan keeps (live rows, after ``offset`` and
``limit``, after the filter) are cut into batches of ``batch_size`` rows, the last one of each
fragment shorter; a scan of no columns yields batches that carry only their row count.

With ``nearest=`` the scan is a flat vector search (``NearestSearch``, query/vector_search.py):
its k rows per query come back as one batch, as in pylance.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw._util.readahead import readahead
from lance_fw._util.refusals import NotImplementedInPylanceError, refusing
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.options import Columns, Filter, Unsupported, refuse
from lance_fw.query import ordering
from lance_fw.query.batch_boundaries import coalesce, materialised_late, rechunk
from lance_fw.query.column_paths import as_projection, has_nested_paths
from lance_fw.query.filter_plan import filter_plan
from lance_fw.query.projection import Projection
from lance_fw.query.scan_searches import FullTextSearch, NearestSearch
from lance_fw.query.vector_index_search import index_plan_text
from lance_fw.query.vector_search import (
    PlanRequest,
    plan_text,
)
from lance_fw.schema import LanceField
from lance_fw.table.deletion import live_rows
from lance_fw.table.fragment import PROBE_ROWS
from lance_fw.table.rows import DEFAULT_BATCH_SIZE, Skip, with_row_columns
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.take import take as take_rows

if TYPE_CHECKING:
    import pandas as pd

#: pylance's plan node for ``count_rows`` (``analyze_plan(count_rows=True)``).
COUNT_PLAN_LINE = "AggregateExec: mode=Single, gby=[], aggr=[count(Int32(1))]"
#: Why the pyarrow ``Scanner`` constructors and methods pylance leaves unimplemented stay so.
_NOT_IN_PYLANCE = "pylance does not implement it either (a pyarrow Scanner method)"

#: The hidden column read when a scan asks for no column at all: batches then still know their rows.
_COUNT_COLUMN = "_rowaddr"


@refusing(
    {
        "pylance's own scan_batches raises StopIteration after the last batch; use to_batches()": (
            "scan_batches",
        )
    }
)
@refusing(
    {_NOT_IN_PYLANCE: ("from_batches", "from_dataset", "from_fragment", "take")},
    error=NotImplementedInPylanceError,
)
class LanceScanner:
    """One scan's options, checked once; ``to_batches`` / ``to_table`` / ``to_reader`` run it.

    Options that only tune performance (``batch_readahead``, ``scan_in_order``, ``use_stats``,
    ``io_buffer_size``, ``late_materialization``, ``use_scalar_index``) cannot change the result
    and are accepted; the others lance_fw lacks are refused by name. ``prefilter`` and
    ``disable_scoring_autoprojection`` matter only with ``nearest``.

    It scans a ``Snapshot`` (table/snapshot.py), which ``LanceDataset.scanner`` hands it, never the
    ``LanceDataset`` itself: the scan engine sits below the façade."""

    def __init__(
        self,
        snapshot: Snapshot,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: Mapping[str, Any] | None = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        fragments: Iterable[Any] | None = None,
        index_segments: Unsupported = None,
        full_text_query: Any = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: Unsupported = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        scan_stats_callback: Unsupported = None,
        strict_batch_size: bool | None = None,
        order_by: Sequence[Any] | None = None,
        disable_scoring_autoprojection: bool | None = None,
        row_addr_allowlist: bytes | None = None,
        row_addr_blocklist: bytes | None = None,
    ) -> None:
        refuse(
            "scanner",
            {
                "batch_size_bytes": batch_size_bytes,
                "index_segments": index_segments,
                "fast_search": fast_search,
                "blob_handling": blob_handling,
                "include_deleted_rows": include_deleted_rows,
                "scan_stats_callback": scan_stats_callback,
                "strict_batch_size": strict_batch_size,
                "row_addr_allowlist": row_addr_allowlist,
                "row_addr_blocklist": row_addr_blocklist,
            },
            {"fast_search": False, "include_deleted_rows": False, "strict_batch_size": False},
        )
        _check_count("limit", limit, 0)
        _check_count("offset", offset, 0)
        _check_count("batch_size", batch_size, 1)
        _check_count("fragment_readahead", fragment_readahead, 0)
        _check_count("batch_readahead", batch_readahead, 1)
        _check_count("io_buffer_size", io_buffer_size, 0)
        schema = snapshot.schema
        self.search: NearestSearch | None = None
        #: full_text_query= (query/fts_search.py): a BM25 search instead of a scan
        self.fts: FullTextSearch | None = None
        if full_text_query is not None:
            self.fts = FullTextSearch(snapshot, full_text_query, filter, prefilter, nearest, columns)
            columns = self.fts.data_columns(columns)
        if nearest is not None:
            self.search = NearestSearch(snapshot, nearest, columns, filter, prefilter, fragments)
            self.search.check_options(with_row_id, with_row_address, disable_scoring_autoprojection)
            columns = self.search.data_columns
        if columns is not None and not isinstance(columns, Mapping) and has_nested_paths(columns, schema):
            columns = as_projection(columns, schema)  # "p.a": a flat column named "p.a", as in pylance
        # {name: SQL} (any mapping, not only a dict: a mapping read as a list of names would scan its
        # keys and drop the expressions silently)
        self.projection = Projection(dict(columns), schema) if isinstance(columns, Mapping) else None
        self._names = None if isinstance(columns, Mapping) else columns
        self._snapshot, self.columns, self.filter = snapshot, columns, filter
        self.limit, self.offset = limit, offset or 0
        self._offset_given = offset is not None  # (pylance refuses a count with offset=0 too)
        self.with_row_id, self.with_row_address = bool(with_row_id), bool(with_row_address)
        self.batch_size, self.fragments = batch_size or DEFAULT_BATCH_SIZE, fragments
        self.fragment_readahead = (
            snapshot.storage.default_readahead if fragment_readahead is None else fragment_readahead
        )
        self._fields = snapshot.fields(self._read_columns)  # unknown columns fail here, before any read
        self._plan = filter_plan(snapshot, filter, use_scalar_index is not False)
        self.order_by = None if order_by is None else ordering.checked_orderings(order_by, schema)
        if self.order_by and (self.search is not None or self.fts is not None):
            raise UnsupportedFeatureError(
                "scanner: order_by with a vector or full-text search is not supported"
            )

    @property
    def _read_columns(self) -> Sequence[str] | None:
        return self.projection.columns if self.projection is not None else self._names

    @property
    def snapshot(self) -> Snapshot:
        """The version this scan reads."""
        return self._snapshot

    @property
    def read_fields(self) -> list[LanceField]:
        """The schema fields the scan decodes (before a ``{name: SQL}`` projection)."""
        return self._fields

    @property
    def projected_schema(self) -> pa.Schema:
        if self.fts is not None:
            return self.fts.run(self, empty=True).schema
        if self.search is not None:
            return self.search.schema(self)
        projected = self.projection.schema if self.projection is not None else None  # set once built
        fields = list(projected) if projected is not None else [f.to_arrow() for f in self._fields]
        return with_row_columns(pa.schema(fields), self.with_row_id, self.with_row_address)

    def _chosen(self) -> list:
        """The fragments to scan: all, or those of ``fragments=`` (LanceFragments or ids), in that order."""
        if self.fragments is None:
            return list(self._snapshot.fragments)
        by_id = {f.id: f for f in self._snapshot.fragments}
        out = []
        for f in self.fragments:
            # a LanceFragment's metadata: pylance's FragmentMetadata, around the manifest's message
            metadata = getattr(f, "metadata", None)
            metadata = getattr(metadata, "message", metadata)
            if metadata is None:
                if f not in by_id:
                    raise InvalidArgumentError(
                        f"scanner: fragment {f!r} is not in version {self._snapshot.version}"
                    )
                metadata = by_id[f]
            out.append(metadata)
        return out

    def _windows(self, fragments: list) -> list[tuple[Any, int, int]]:
        """Without a filter, ``offset``/``limit`` pick live rows [lo, hi) of each fragment up front,
        so skipped fragments are never opened."""
        skip, left, out = self.offset, self.limit, []
        for frag in fragments:
            if left is not None and left <= 0:
                break
            live = live_rows(frag)
            if skip >= live:
                skip -= live
                continue
            hi = live if left is None else min(live, skip + left)
            out.append((frag, skip, hi))
            left = None if left is None else left - (hi - skip)
            skip = 0
        return out

    def _pieces(
        self, whole: bool = False, first_batch: int | None = None
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """(fragment id, batch) in scan order, ``offset``/``limit`` applied. ``whole``: the caller
        takes every batch (``to_table``; ``rows.Rows.whole``); ``first_batch``: the first
        fragment's first batch (or filter probe) that short and read alone, and produced alone
        (``readahead``'s ``first_alone``), for a consumer that may stop there (``stream``, a
        filtered scan with a ``limit``: 26-51 ms against pylance's 10-14 for ``limit=10``). The
        other fragments' batches are full: once the consumer asks for more it reads on, and a
        short first batch of each cost a take besides its pages (DuckDB's group-by: ~2 ms a
        fragment). For the same reason their reads plan for every batch (``whole``): planned
        as a stream's start, each later fragment's first read waited for its own pages before
        the pool got the next ones, a worker idle ~4 ms a fragment (DuckDB's ``min`` / ``max``
        over pylance's 8192-row pages: 51.2 -> 49.6 and 52.2 -> 50.3 ms median, top-N 53.1
        -> 50.4 and 54.8 -> 51.9, interleaved A/B)."""
        snapshot, plan = self._snapshot, self._plan
        bare = not self._fields and not self.with_row_id and not self.with_row_address
        first_alone = first_batch is not None  # the consumer may stop after the first batch
        with_address = self.with_row_address or bare
        items: Sequence[tuple[table_pb2.DataFragment, int, int | None]] = (
            self._windows(self._chosen()) if plan is None else [(f, 0, None) for f in self._chosen()]
        )

        def produce(
            item: tuple[table_pb2.DataFragment, int, int | None],
        ) -> Iterator[tuple[int, pa.RecordBatch]]:
            frag, lo, hi = item
            live = (lo, hi) if hi is not None and (lo > 0 or hi < live_rows(frag)) else None
            for batch in snapshot.read_fragment(
                frag,
                self._fields,
                plan,
                self.batch_size,
                with_address,
                self.with_row_id,
                live=live,
                whole=whole or (first_alone and item is not items[0]),
                first_batch=first_batch if item is items[0] else None,
                most=None if self.limit is None else self.offset + self.limit,
                skip=skip if item is items[0] else None,
            ):
                yield frag.id, (batch.drop_columns([_COUNT_COLUMN]) if bare else batch)

        # the offset's rows still to drop: the first fragment's filtered read drops its first
        # matches itself, before fetching their columns (``Rows.skip``), and the loop below the
        # rest; a read drops none after handing on a batch, so the count is right for each batch
        skip = Skip(self.offset)
        if plan is None:
            yield from readahead(items, produce, self.fragment_readahead, first_alone=first_alone)
            return
        left = self.limit
        if left == 0:
            return
        ahead = self.fragment_readahead
        if snapshot.storage.default_readahead == 0 and self._index_decides():
            # each local fragment's read is a take of its index matches: handing it to a worker
            # thread costs more than the take (a DuckDB point lookup through a B-tree: ~1 ms more)
            ahead = 1
        for frag_id, batch in readahead(items, produce, ahead, first_alone=first_alone):
            if skip.rows:
                cut = min(skip.rows, batch.num_rows)
                batch = batch.slice(cut)
                skip.rows -= cut
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield frag_id, batch
            if left == 0:
                return  # stop reading: the generator chain is closed here

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return self._to_batches(whole=False)

    def stream(self, first_batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The scan's rows in order for a consumer that may stop after any batch and needs no
        pylance batch boundaries (DuckDB, which pulls exactly one batch for a ``LIMIT 10``): a
        plain scan hands its first ``first_batch_rows`` rows out as a batch of their own, read
        alone, then batches of up to ``batch_size``; a filtered scan probes its first
        ``first_batch_rows`` rows alone, then hands on every probe's matches as they come.
        Nothing else is read before the consumer asks for a second batch (``_pieces``)."""
        return self._to_batches(whole=False, first_batch=first_batch_rows)

    def _to_batches(self, whole: bool, first_batch: int | None = None) -> Iterator[pa.RecordBatch]:
        """``to_batches``; ``whole``: the caller takes every batch (``to_table``), so the reads
        decode for the whole scan rather than to hand out the first batch soon; ``first_batch``:
        see ``stream``."""
        if self.order_by:  # pylance sorts every matching row, then applies offset / limit
            yield from ordering.ordered_batches(self._ordered_table(), self.batch_size)
            return
        if self.fts is not None:  # like a vector search: the result rows as one batch
            yield from self.fts.run(self).combine_chunks().to_batches()
            return
        if self.search is not None:  # pylance returns a search's rows as one batch
            yield from self.search.run(self).combine_chunks().to_batches()
            return
        extra = [n for n, on in (("_rowid", self.with_row_id), ("_rowaddr", self.with_row_address)) if on]
        for batch in self._batches(whole, first_batch):
            if self.projection is not None:
                tail = [batch.column(n) for n in extra]
                projected = self.projection.apply(batch.drop_columns(extra))
                fields = list(projected.schema) + [batch.schema.field(n) for n in extra]  # keeps "not null"
                batch = pa.RecordBatch.from_arrays(
                    [c.combine_chunks() for c in projected.columns] + tail, schema=pa.schema(fields)
                )
            yield batch

    def _batches(self, whole: bool = False, first_batch: int | None = None) -> Iterator[pa.RecordBatch]:
        """pylance's batch boundaries. A plain scan: ``batch_size`` rows per fragment. A filtered
        scan: what each batch it reads keeps (``batch_size`` live rows, or index candidates),
        ``offset``/``limit`` cut from those; when pylance materialises some projected column late
        (after the filter: any but fixed-width values of at most 8 bytes), it then joins those
        batches, across fragments, until each holds ``batch_size`` rows or more. A ``stream``
        (``first_batch`` given) keeps none of these boundaries: its consumer may stop after any
        batch, and joining a filter's matches up to ``batch_size`` read on until they filled it
        (DuckDB's ``SELECT * ... WHERE category = 7 LIMIT 10`` read the whole table). ``whole``
        (``to_table``) keeps none either: a table's chunks are no batches a caller sees, and
        joining 98% of a 2M-row table's 32-float vectors into batches copied 256 MB once more."""
        if first_batch is not None:
            return (batch for _, batch in self._pieces(whole, first_batch))
        if whole and self._plan is None:  # (a table: its chunks are no batches anybody sees)
            return (batch for _, batch in self._pieces(whole))
        if self._plan is None:
            return rechunk(self._pieces(whole), self.batch_size)
        # with a limit, the first probe is the first batch's rows: the scan may end there
        kept = (
            batch for _, batch in self._pieces(whole, self.batch_size if self.limit is not None else None)
        )
        if self._index_decides():  # per fragment, its matches in batches of batch_size, then cut
            return kept
        filter_ids = {f.id for f in self._plan.fields}
        late = any(materialised_late(f) for f in self._fields if f.id not in filter_ids)
        if late and not whole:  # (joining a table's matches copied every late column once more)
            return coalesce(kept, self.batch_size)
        return kept

    def _index_decides(self) -> bool:
        """Whether exact scalar indices answer the whole filter for every fragment scanned: pylance
        then takes each fragment's matches in ``batch_size`` batches (``offset`` / ``limit`` cut
        from those) and joins nothing (its plan has no filter left to run); the fragment reads
        give exactly those batches (``FragmentReader.candidate_batches``). Runs the index search
        (once per scan)."""
        index = self._plan.scalar_index if self._plan is not None else None
        chosen = [frag.id for frag in self._chosen()]
        if index is None or not chosen or not index.coverage.issuperset(chosen):
            return False
        return bool(index.exact)

    def index_rows(self) -> int | None:
        """When exact scalar indices answer the whole filter (``_index_decides``): how many rows they
        found, at most what the scan yields (deleted rows are among them); else None. Runs the
        index search (once per scan)."""
        if self.order_by or self.fts is not None or self.search is not None or not self._index_decides():
            return None
        index = self._plan.scalar_index if self._plan is not None else None
        assert index is not None
        return sum(index.count(frag.id) for frag in self._chosen())

    def _live_index_rows(self) -> int:
        """The rows exact scalar indices found (``_index_decides``), less those deleted since: what
        the scan would yield, counted without reading a row, as pylance counts its plan's rows
        (a B-tree range of 200k rows: 15-18 ms read, 2 counted)."""
        index = self._plan.scalar_index if self._plan is not None else None
        assert index is not None
        total = 0
        for frag in self._chosen():
            if not frag.HasField("deletion_file"):
                total += index.count(frag.id)
                continue
            excluded = index.excluded(frag.id)  # (most rows: counted as the rest, never listed)
            reader = self._snapshot.fragment_reader(frag)
            try:
                if excluded is None:
                    total += len(reader.live_among(np.asarray(index.candidates(frag.id), np.int64)))
                else:
                    live = reader.physical_rows - len(reader.deleted)
                    total += live - len(reader.live_among(np.asarray(excluded, np.int64)))
            finally:
                reader.close()
        return total

    def _ordered_table(self) -> pa.Table:
        """Every row the scan yields without ``offset`` / ``limit``, sorted by ``order_by``, then
        cut by them. pylance sorts on output columns: a sort column left out of ``columns=`` is
        its planning error without a filter (with one it sorts on the filter's read; not here)."""
        assert self.order_by is not None
        unordered = copy.copy(self)
        unordered.order_by, unordered.offset, unordered.limit = None, 0, None
        late = self._top_rows_late(unordered)
        if late is not None:
            return late
        table = unordered.to_table()
        missing = [o.column_name for o in self.order_by if o.column_name not in table.column_names]
        if missing and self.filter is None:
            raise InvalidArgumentError(
                f"order_by: column(s) {missing} are not in the scan's output columns (as in pylance, "
                "which cannot plan that sort)"
            )
        if missing:
            raise UnsupportedFeatureError(
                f"order_by on column(s) {missing} left out of columns= is not supported by lance_fw"
            )
        return ordering.order_table(table, self.order_by, self.offset, self.limit)

    def _read_keys_only(self, names: set[str]) -> None:
        """Scan only the fields ``names`` and the rows' addresses (a copy's, ``_top_rows_late``)."""
        self._fields = [f for f in self._fields if f.name in names]
        self.with_row_address = True

    def _top_rows_late(self, unordered: LanceScanner) -> pa.Table | None:
        """A sort with a small ``limit`` (``offset + limit`` up to ``LATE_TOP_ROWS``): only the sort
        columns are scanned, with the rows' addresses; the top rows' other columns are then taken.
        None where that does not apply (a projection, row columns asked for, a sort column not
        among the columns): the caller scans every column.

        Why: pylance's top-k reads each row once; sorting the scan of every projected column
        read the whole table for ten rows (all columns of a 2M-row table ordered by one: 201 ms,
        pylance 240; ``columns=["id", "value"]``: 53 ms against 18)."""
        assert self.order_by is not None
        wanted = None if self.limit is None else self.offset + self.limit
        names = [f.name for f in self._fields]
        sort_names = [o.column_name for o in self.order_by]
        if (
            wanted is None
            or wanted > LATE_TOP_ROWS
            or self.projection is not None
            or self.with_row_id
            or self.with_row_address
            or not set(sort_names) <= set(names)
            or set(sort_names) == set(names)
        ):
            return None
        unordered._read_keys_only(set(sort_names))
        keys = unordered.to_table()
        order = ordering.sort_indices(keys, self.order_by, wanted)[self.offset : wanted]
        addresses = keys.column("_rowaddr").take(pa.array(order, pa.int64()))
        wanted_rows = np.asarray(addresses.to_numpy(zero_copy_only=False), np.uint64)
        return take_rows(self._snapshot, wanted_rows, names, by_address=True)

    def to_reader(self) -> pa.RecordBatchReader:
        if self.search is not None or self.fts is not None:
            return self.to_table().to_reader()
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        if self.fts is not None:
            return self.fts.run(self)
        if self.search is not None:
            return self.search.run(self)
        return pa.Table.from_batches(list(self._to_batches(whole=True)), schema=self.projected_schema)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows of the scan's result (pylance: ``to_table()[:num_rows]``)."""
        return self.to_table()[:num_rows]

    def to_pandas(self, *, blob_mode: str = "lazy", **kwargs: Any) -> pd.DataFrame:
        """``to_table().to_pandas(**kwargs)``: ``kwargs`` are pyarrow's ``to_pandas`` options, which
        pyarrow checks (an unknown one is its TypeError); ``blob_mode`` other than lazy is refused."""
        refuse("to_pandas", {"blob_mode": blob_mode}, {"blob_mode": "lazy"})
        return self.to_table().to_pandas(**kwargs)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The dataset's schema, which fragments are read with (before the projection)."""
        return self._snapshot.schema

    def explain_plan(self, verbose: bool = False) -> str:
        """pylance's plan text for this scan: the ``LanceRead`` line and, when scalar indices
        answer part of the filter, the ``ScalarIndexQuery`` they answer (``verbose`` adds nothing)."""
        return "\n".join(self._plan_lines()) + "\n"

    def analyze_plan(self, count_rows: bool = False) -> str:
        """``explain_plan`` after running the scan, with the rows it read and returned;
        ``count_rows=True`` puts pylance's ``COUNT(*)`` aggregate (what ``count_rows()`` runs) on top."""
        rows = self._count()
        index = self._plan.scalar_index if self._plan is not None and self.search is None else None
        lines = self._plan_lines()
        lines[0] += f", metrics=[output_rows={rows}]"
        if index is not None:
            covered = sum(index.count(f.id) for f in self._chosen())
            lines[1] += f", metrics=[index_candidates={covered}, fragments_covered={len(index.coverage)}]"
        if count_rows:
            lines = [f"{COUNT_PLAN_LINE}, metrics=[output_rows=1]", *("  " + line for line in lines)]
        return "\n".join(lines) + "\n"

    def _plan_lines(self) -> list[str]:
        if self.search is not None:
            return self._search_plan_lines(self.search)
        index = self._plan.scalar_index if self._plan is not None else None
        names = [f.name for f in self._fields]
        text = (
            self.filter
            if isinstance(self.filter, str)
            else (str(self.filter) if self.filter is not None else "--")
        )
        lines = [
            f"LanceRead: uri={self._snapshot.uri}/data, projection=[{', '.join(names)}], "
            f"num_fragments={len(self._chosen())}, row_id={str(self.with_row_id).lower()}, "
            f"row_addr={str(self.with_row_address).lower()}, full_filter={text}, "
            f"refine_filter={text if self.filter is not None else '--'}"
        ]
        if index is not None:
            lines.append(f"  ScalarIndexQuery: query={index.describe()}")
        return lines

    def _search_plan_lines(self, search: NearestSearch) -> list[str]:
        text = self.filter if isinstance(self.filter, str) or self.filter is None else str(self.filter)
        read = [f.name for f in self._plan.fields] if self._plan is not None else []
        names = [f.name for f in self._fields]
        request = PlanRequest(search.query, self._snapshot.uri, names, read, text, search.prefilter)
        if search.index is not None:
            return index_plan_text(request, search.index, self._chosen())
        return plan_text(request, len(self._chosen()))

    def count_rows(self) -> int:
        """The number of rows the scan returns; refused, as in pylance, with ``offset`` or
        ``limit`` (a count is an aggregate: pylance asks for the limit to go on its result)."""
        if self.limit is not None or self._offset_given:
            raise InvalidArgumentError(
                "Cannot use limit/offset with aggregate. Apply limit to the result instead."
            )
        return self._count()

    def _count(self) -> int:
        """The number of rows the scan returns, ``offset`` and ``limit`` applied.

        Counted from the fragments' reads in windows of at least ``PROBE_ROWS`` rows, whatever
        ``batch_size`` says: the count does not depend on where batches end, and a filtered scan
        hands on a batch per window of ``batch_size`` rows it passes (~20 us each; 245 for a
        2M-row count at the default size)."""
        if self.order_by or self.fts is not None or self.search is not None or self.projection is not None:
            return sum(b.num_rows for b in self.to_batches())
        if self.offset == 0 and self.limit is None and self.index_rows() is not None:
            return self._live_index_rows()
        counting = copy.copy(self)
        counting.batch_size = max(self.batch_size, PROBE_ROWS)
        return sum(b.num_rows for _, b in counting._pieces())


#: ``offset + limit`` up to which a sorted scan reads its sort columns first and takes the top
#: rows' other columns (``_top_rows_late``): a take costs ~10-20 us a row a column.
LATE_TOP_ROWS = 1024


def _check_count(name: str, value: object, least: int) -> None:
    """pylance's checks of integer options: an integer (bools pass, as there) of at least ``least``."""
    if value is None:
        return
    if not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise InvalidArgumentError(f"{name} must be at least {least}, got {value}")
