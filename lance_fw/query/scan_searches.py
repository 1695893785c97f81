"""The two searches a scan can be instead of a plain read: ``nearest=`` (``NearestSearch``: flat
or through a vector index, query/vector_search.py and vector_index_search.py) and
``full_text_query=`` (``FullTextSearch``: BM25 over an INVERTED index, query/fts_search.py).

Why apart from ``LanceScanner``: each holds its checked query and runs it with the scan's options
(columns, filter, limit/offset, row columns), so the scanner only chooses which run applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.options import Columns, Filter
from lance_fw.query import fts_search
from lance_fw.query.fts_search import SCORE_COLUMN
from lance_fw.query.vector_index_search import index_search, vector_index_plan
from lance_fw.query.vector_search import (
    DISTANCE_COLUMN,
    DISTANCE_FIELD,
    QUERY_INDEX_FIELD,
    SearchScope,
    flat_search,
    parse_nearest,
)
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.take import take

if TYPE_CHECKING:
    from lance_fw.query.scanner import LanceScanner

#: columns a vector search adds, which ``columns=`` may name to place them
_SEARCH_COLUMNS = (DISTANCE_COLUMN, "_rowid", "_rowaddr")


class NearestSearch:
    """A scan's ``nearest=``: the checked query, where its extra columns go, and its run.

    With a vector index on the column (and ``use_index``), the index is searched as pylance does
    (query/vector_index_search.py); an index lance_fw cannot search is refused unless
    ``use_index=False``."""

    def __init__(
        self,
        snapshot: Snapshot,
        nearest: Mapping[str, Any],
        columns: Columns | None,
        filter: Filter | None,
        prefilter: bool | None,
        fragments: Iterable[Any] | None = None,
    ) -> None:
        self.query = parse_nearest(nearest, snapshot)
        #: the vector index segments searched (query/vector_index_search.py), None: a flat search
        self.index = vector_index_plan(snapshot, self.query, nearest.get("metric") is not None)
        if fragments is not None:  # pylance: ValueError "not supported for fragment scan"
            raise InvalidArgumentError("nearest: not supported for a fragment scan (fragments=)")
        self.prefilter = bool(prefilter) and filter is not None
        self.postfilter = not prefilter and filter is not None
        self.layout: list[str] | None = None
        self.data_columns: Columns | None = columns
        if isinstance(columns, Mapping):
            if any(DISTANCE_COLUMN in str(sql) for sql in columns.values()):
                raise UnsupportedFeatureError(
                    f"scanner: a projection reading {DISTANCE_COLUMN} is not supported"
                )
        elif columns is not None:
            self.layout = list(columns)
            self.data_columns = [c for c in self.layout if c not in _SEARCH_COLUMNS]
        self.with_row_id = self.with_row_address = self.no_distance = False

    def check_options(
        self, with_row_id: bool | None, with_row_address: bool | None, no_distance: bool | None
    ) -> None:
        self.with_row_id, self.with_row_address = bool(with_row_id), bool(with_row_address)
        self.no_distance = bool(no_distance)

    def run(self, scan: LanceScanner) -> pa.Table:
        """Top-k per query, the winners' columns taken by address, the post-filter, offset/limit."""
        snapshot = scan.snapshot
        plan = scan._plan if self.prefilter else None
        search = flat_search if self.index is None else partial(index_search, handles=self.index)
        scope = SearchScope(snapshot, scan._chosen(), plan, scan.batch_size, scan.fragment_readahead)
        tops = search(scope, self.query)
        found = [top.result() for top in tops]
        distance, row_id, address = (np.concatenate([f[i] for f in found]) for i in range(3))
        query_index = np.repeat(np.arange(len(found), dtype=np.int32), [len(f[0]) for f in found])
        names = [f.name for f in scan.read_fields]
        extra = (
            [f.name for f in scan._plan.fields if f.name not in names]
            if self.postfilter and scan._plan
            else []
        )
        taken = take(snapshot, address, names + extra, by_address=True) if names or extra else None
        if self.postfilter and scan._plan is not None:
            keep = scan._plan.matcher(_with_row_columns(taken, row_id, address))
            distance, row_id, address, query_index = (
                distance[keep],
                row_id[keep],
                address[keep],
                query_index[keep],
            )
            taken = taken.take(pa.array(keep)) if taken is not None else None
        out = self._assemble(scan, taken, distance, row_id, address, query_index)
        return out.slice(scan.offset, scan.limit) if scan.offset or scan.limit is not None else out

    def schema(self, scan: LanceScanner) -> pa.Schema:
        empty = (
            pa.schema([f.to_arrow() for f in scan.read_fields]).empty_table() if scan.read_fields else None
        )
        nothing = np.zeros(0, np.uint64)
        return self._assemble(
            scan, empty, np.zeros(0, np.float32), nothing, nothing, np.zeros(0, np.int32)
        ).schema

    def _assemble(
        self,
        scan: LanceScanner,
        taken: pa.Table | None,
        distance: np.ndarray,
        row_id: np.ndarray,
        address: np.ndarray,
        query_index: np.ndarray,
    ) -> pa.Table:
        """pylance's column order: query_index (a batch of queries), the columns asked for (the
        search columns where ``columns=`` names them), then _distance, _rowid, _rowaddr."""
        names = [f.name for f in scan.read_fields]
        data = None if taken is None else taken.select(names)
        if scan.projection is not None and taken is not None:
            data = scan.projection.apply(taken.select(scan.projection.columns))
        extra = {
            DISTANCE_COLUMN: (DISTANCE_FIELD, pa.array(distance, pa.float32())),
            "_rowid": (pa.field("_rowid", pa.uint64()), pa.array(row_id, pa.uint64())),
            "_rowaddr": (pa.field("_rowaddr", pa.uint64()), pa.array(address, pa.uint64())),
        }
        fields: list[pa.Field] = []
        arrays: list[pa.Array | pa.ChunkedArray] = []

        def add(name: str) -> None:
            if name in extra:
                fields.append(extra[name][0])
                arrays.append(extra[name][1])
            elif data is not None:
                fields.append(data.schema.field(name))
                arrays.append(data.column(name))

        if self.query.batched:
            fields.append(QUERY_INDEX_FIELD)
            arrays.append(pa.array(query_index, pa.int32()))
        listed = self.layout if self.layout is not None else (data.schema.names if data is not None else [])
        for name in listed:
            add(name)
        wanted = [
            (DISTANCE_COLUMN, not self.no_distance),
            ("_rowid", self.with_row_id),
            ("_rowaddr", self.with_row_address),
        ]
        for name, on in wanted:
            if on and name not in listed:
                add(name)
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class FullTextSearch:
    """A scan's ``full_text_query=``: the checked query and its run (query/fts_search.py)."""

    def __init__(
        self,
        snapshot: Snapshot,
        query: Any,
        filter: Filter | None,
        prefilter: bool | None,
        nearest: Any,
        columns: Columns | None,
    ) -> None:
        if nearest is not None:
            raise UnsupportedFeatureError(
                "scanner: nearest= with full_text_query= is not supported by lance_fw"
            )
        self.filter, self.prefilter = filter, bool(prefilter)
        if isinstance(columns, Mapping):
            raise UnsupportedFeatureError("scanner: a {name: SQL} projection with full_text_query=")
        self.query = fts_search.parse_full_text_query(snapshot, query)

    @staticmethod
    def data_columns(columns: Columns | None) -> Columns | None:
        """``columns=`` without ``_score``, which a search adds after the data columns anyway
        (pylance accepts it named there); anywhere else it would need reordering, so it is refused."""
        if columns is None or isinstance(columns, Mapping) or SCORE_COLUMN not in columns:
            return columns
        names = list(columns)
        if names.count(SCORE_COLUMN) > 1 or names[-1] != SCORE_COLUMN:
            raise UnsupportedFeatureError(f"scanner: {SCORE_COLUMN} in columns= other than last")
        return names[:-1]

    def run(self, scan: LanceScanner, empty: bool = False) -> pa.Table:
        names = [f.name for f in scan.read_fields]
        passing = None
        if self.filter is not None and not empty:  # the rows passing the filter, by a plain scan
            rows = type(scan)(scan.snapshot, columns=[], filter=self.filter, with_row_address=True)
            passing = np.sort(rows.to_table().column("_rowaddr").to_numpy())
        return fts_search.run(
            scan.snapshot,
            self.query,
            names,
            0 if empty else scan.limit,
            scan.offset,
            scan.with_row_id,
            scan.with_row_address,
            scan.batch_size,
            passing,
            self.prefilter,
        )


def _with_row_columns(taken: pa.Table | None, row_id: np.ndarray, address: np.ndarray) -> pa.RecordBatch:
    """The taken rows as one batch with _rowid / _rowaddr, for the filter's matcher."""
    columns = [] if taken is None else [c.combine_chunks() for c in taken.columns]
    names = [] if taken is None else list(taken.schema.names)
    return pa.RecordBatch.from_arrays(
        [*columns, pa.array(row_id, pa.uint64()), pa.array(address, pa.uint64())],
        names=[*names, "_rowid", "_rowaddr"],
    )
