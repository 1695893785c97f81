"""Nearest-neighbour search through a vector index: ``scanner(nearest={...})`` when the column has
one (pylance's ``ANNSubIndex`` / ``ANNIvfPartition`` path).

What pylance 14 does, and this module with it:

* The index is used when ``use_index`` is true (the default) and the query's metric is the
  index's (a query without ``metric`` takes the index's); another metric means a flat search.
* Each index segment answers with approximate candidates from the partitions it probes
  (``nprobes`` sets both bounds; ``minimum_nprobes`` / ``maximum_nprobes`` one each; none: the
  index's own adaptive policy). Deleted rows, rows of fragments gone from the version and, with
  ``prefilter=True``, rows failing the filter are never candidates (the index keeps probing while
  it has fewer than ``k``).
* ``refine_factor=r``: ``k * r`` candidates are re-ranked by their exact distance, read from the
  data (the distances returned are then exact); without it the PQ estimates are returned.
* Fragments no segment covers (appended after the index was built) are searched flat, and the
  two are merged by distance (ties by row id); the index's candidates are then re-measured
  exactly first, as with ``refine_factor=1`` (pylance's plan computes the distance of the union).

Row ids: an index stores ``_rowid``, the row address without stable row ids; with them, the
stable id, which is mapped to the live row's address (``table/stable_rows.StableRows``).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from lance_fw._proto import table_pb2, vector_index_pb2
from lance_fw._util import sets
from lance_fw._util.linalg import distances
from lance_fw.errors import IndexContractError, UnsupportedFeatureError
from lance_fw.interfaces import VectorIndexReader, VectorIndexType, VectorQuery, VectorSearchResult
from lance_fw.query.vector_search import (
    NearestQuery,
    PlanRequest,
    SearchScope,
    TopK,
    flat_search,
    vectors_of,
)
from lance_fw.schema import LanceField
from lance_fw.table import flags as feature_flags
from lance_fw.table.indices import fragment_bitmap, open_index
from lance_fw.table.row_ids import row_addresses
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.stable_rows import StableRows
from lance_fw.table.take import take
from lance_fw.table.vector_indices import vector_index_types, vector_kind_name

if TYPE_CHECKING:
    from lance_fw.query.filter_plan import FilterPlan

#: ``VectorMetricType`` -> the metric names of ``nearest``.
METRIC_NAMES = {vector_index_pb2.L2: "l2", vector_index_pb2.Cosine: "cosine", vector_index_pb2.Dot: "dot"}
#: A row address is ``fragment_id << 32 | offset``.
FRAGMENT_SHIFT = 32


@dataclass(frozen=True)
class VectorHandle:
    """One vector index segment of a version: metadata, plugin, column, metric, covered fragments."""

    meta: table_pb2.IndexMetadata
    kind: VectorIndexType
    field: LanceField
    metric: str
    fragments: frozenset[int]

    @property
    def uuid(self) -> str:
        return str(uuidlib.UUID(bytes=self.meta.uuid.uuid))


def vector_index_plan(
    snapshot: Snapshot, query: NearestQuery, metric_given: bool
) -> list[VectorHandle] | None:
    """The segments of the vector index a search of ``query`` uses, or None for a flat search.

    Raises: ``UnsupportedFeatureError`` when pylance would search an index lance_fw cannot (no
    plugin for its type, stable row ids): the answer would differ, so it is refused, with the
    advice to pass ``use_index=False``.
    """
    section = snapshot.index_section
    if not query.use_index or section is None:
        return None
    field = snapshot.lance_schema.field(query.column)
    metas = [m for m in section.indices if list(m.fields) == [field.id] and _is_vector(m)]
    if not metas:
        return None
    name = metas[0].name
    metas = [m for m in metas if m.name == name]
    details = vector_index_pb2.VectorIndexDetails()
    details.ParseFromString(metas[0].index_details.value)
    metric = METRIC_NAMES.get(details.metric_type, "")
    if metric_given and query.metric != metric:
        return None  # pylance: an index of another metric is not used
    kind_name = vector_kind_name(metas[0])
    kind = vector_index_types().get(kind_name or "")
    if kind is None:
        why = f"of type {kind_name or 'unknown (no details)'}"
        raise UnsupportedFeatureError(
            f"nearest: column {query.column!r} has the vector index {name!r} {why}, which pylance would "
            "search (approximate results) and lance_fw cannot. Pass use_index=False for the exact "
            "flat search"
        )
    live = {f.id for f in snapshot.fragments}
    return [
        VectorHandle(
            m, kind, field, metric, frozenset(int(i) for i in fragment_bitmap(m, snapshot.uri)) & live
        )
        for m in metas
    ]


def _is_vector(meta: table_pb2.IndexMetadata) -> bool:
    url = meta.index_details.type_url if meta.HasField("index_details") else ""
    return url in ("/lance.index.pb.VectorIndexDetails", "")


def open_vector_index(snapshot: Snapshot, handle: VectorHandle) -> VectorIndexReader:
    """The opened segment (the kernel's index cache, per dataset and uuid)."""
    reader: VectorIndexReader = open_index(snapshot, handle)
    return reader


def _allowed(
    snapshot: Snapshot, handle: VectorHandle, passing: np.ndarray | None, chosen: set[int]
) -> Callable[[np.ndarray], np.ndarray] | None:
    """Row ids -> whether the row may be returned: in a fragment the segment covers in this
    version, not deleted, and (``passing``, sorted addresses) passing the prefilter. None when
    every indexed row may be (nothing deleted or filtered, every indexed fragment still there)."""
    usable = handle.fragments & chosen
    covered = np.array(sorted(usable), np.uint64)
    deleted = [
        row_addresses(f.id, snapshot.fragment_reader(f).deleted)
        for f in snapshot.fragments
        if f.id in usable and f.HasField("deletion_file")
    ]
    gone = np.sort(np.concatenate(deleted)).astype(np.uint64) if deleted else None
    indexed = frozenset(int(i) for i in fragment_bitmap(handle.meta, snapshot.uri))
    if gone is None and passing is None and indexed <= usable:
        return None

    def allowed(ids: np.ndarray) -> np.ndarray:
        keep = sets.isin(ids >> np.uint64(FRAGMENT_SHIFT), covered)
        if gone is not None:
            keep &= ~sets.isin(ids, gone)
        if passing is not None:
            keep &= sets.isin(ids, passing)
        return keep

    return allowed


def _passing(
    snapshot: Snapshot,
    fragments: Sequence[table_pb2.DataFragment],
    plan: FilterPlan,
    batch: int,
    stable: bool,
) -> np.ndarray:
    """Sorted addresses (stable row ids with ``stable``) of the rows of ``fragments`` that pass
    the prefilter."""
    column = "_rowid" if stable else "_rowaddr"
    found = [
        b.column(column).to_numpy(zero_copy_only=False).astype(np.uint64)
        for f in fragments
        for b in snapshot.read_fragment(f, [], plan, batch, with_row_address=not stable, with_row_id=stable)
    ]
    return np.sort(np.concatenate(found)) if found else np.zeros(0, np.uint64)


def _probes(query: NearestQuery) -> tuple[int | None, int | None]:
    tuning = query.tuning
    if tuning.get("nprobes") is not None:
        n = int(tuning["nprobes"])  # type: ignore[call-overload]
        return n, n
    low, high = tuning.get("minimum_nprobes"), tuning.get("maximum_nprobes")
    return (
        int(low) if low else None,  # type: ignore[call-overload]
        int(high) if high else None,  # type: ignore[call-overload]
    )


def _checked(result: object, handle: VectorHandle, want: int) -> VectorSearchResult:
    """The plugin's answer, or ``IndexContractError`` naming the index when it breaks the contract."""
    if not isinstance(result, VectorSearchResult):
        raise IndexContractError(
            f"vector index {handle.meta.name!r}: search returned {type(result).__name__}"
        )
    ids, dist = result.row_ids, result.distances
    if (
        not isinstance(ids, np.ndarray)
        or not isinstance(dist, np.ndarray)
        or ids.dtype != np.uint64
        or ids.shape != dist.shape
        or len(ids) > want
    ):
        raise IndexContractError(
            f"vector index {handle.meta.name!r}: search must return at most k uint64 row ids with one "
            "distance each"
        )
    return result


def index_search(scope: SearchScope, query: NearestQuery, *, handles: list[VectorHandle]) -> list[TopK]:
    """Each query's ``k`` nearest rows of the scope's fragments: index candidates (refined when
    asked) merged with a flat search of the fragments no segment covers (both in the index's
    metric, which a query without ``metric`` takes)."""
    snapshot, fragments, plan = scope.snapshot, scope.fragments, scope.plan
    query = replace(query, metric=handles[0].metric)
    chosen = {f.id for f in fragments}
    covered = set().union(*(h.fragments for h in handles)) & chosen
    uncovered = [f for f in fragments if f.id not in covered]
    tops = (
        flat_search(replace(scope, fragments=uncovered), query)
        if uncovered
        else [TopK(query.k) for _ in range(len(query.queries))]
    )
    if not covered:
        return tops
    stable = feature_flags.has_stable_row_ids(snapshot.manifest)
    passing = (
        _passing(snapshot, [f for f in fragments if f.id in covered], plan, scope.batch_size, stable)
        if plan is not None
        else None
    )
    low, high = _probes(query)
    refine = query.tuning.get("refine_factor")
    want = query.k * int(refine) if refine else query.k  # type: ignore[call-overload]
    rows = StableRows.of(snapshot, covered) if stable else None
    readers = [
        (
            h,
            open_vector_index(snapshot, h),
            StableRows.of(snapshot, set(h.fragments & chosen)).allowed(passing)
            if stable
            else _allowed(snapshot, h, passing, chosen),
        )
        for h in handles
        if h.fragments & chosen
    ]
    dim = query.queries.shape[1]
    for top, q in zip(tops, query.queries, strict=True):
        vector = q.astype(np.float32)
        ids_parts, dist_parts = [], []
        for handle, reader, allowed in readers:
            found = _checked(reader.search(VectorQuery(vector, want, low, high, allowed)), handle, want)
            ids_parts.append(found.row_ids)
            dist_parts.append(found.distances.astype(np.float32))
        ids, dist = np.concatenate(ids_parts), np.concatenate(dist_parts)
        if len(ids) > want:  # several segments: the best ``want`` of all
            best = np.lexsort((ids, dist))[:want]
            ids, dist = ids[best], dist[best]
        addresses = rows.address_of(ids) if rows is not None else ids
        if (refine or uncovered) and len(ids):  # pylance re-measures before merging with flat rows
            taken = take(snapshot, addresses, [query.column], by_address=True).column(0)
            vectors, valid = vectors_of(taken, dim)
            exact = distances(query.metric, vectors, q)
            ids, dist, addresses = ids[valid], exact[valid], addresses[valid]
        top.push(dist, ids, addresses)
    return tops


# -- explain_plan ---------------------------------------------------------------------------------

#: ``VectorMetricType`` names pylance's ``ANNSubIndex`` line prints
_PLAN_METRICS = {"l2": "L2", "cosine": "Cosine", "dot": "Dot"}
_ORDER = "ASC NULLS LAST"
#: one plan line and the plans below it
PlanNode = tuple[str, list[Any]]


def _top(k: int, row: list[str]) -> str:
    return (
        f"SortExec: TopK(fetch={k}), expr=[_distance@{row.index('_distance')} {_ORDER}, "
        f"_rowid@{row.index('_rowid')} {_ORDER}], preserve_partitioning=[false]"
    )


def _render(node: PlanNode, depth: int = 0) -> list[str]:
    line, children = node
    return ["  " * depth + line] + [text for child in children for text in _render(child, depth + 1)]


def index_plan_text(
    request: PlanRequest, handles: list[VectorHandle], fragments: Sequence[table_pb2.DataFragment]
) -> list[str]:
    """pylance's plan of an index search (``explain_plan``), top line first: the ``ANNSubIndex`` /
    ``ANNIvfPartition`` pair (with the prefilter's scan as a second input), a re-measure of the
    candidates (``KNNVectorDistance``) with ``refine_factor`` and when fragments are unindexed
    (then a union with their flat top-k), the takes and the post-filter, as in ``plan_text``."""
    query, uri, names, read, filter_text, prefilter = request
    query = replace(query, metric=handles[0].metric)
    chosen = {f.id for f in fragments}
    uncovered = [f for f in fragments if f.id not in set().union(*(h.fragments for h in handles))]
    refine = query.tuning.get("refine_factor")
    want = query.k * int(refine) if refine else query.k  # type: ignore[call-overload]
    low, high = _probes(query)
    deltas = len(handles)
    partition: PlanNode = (
        f"ANNIvfPartition: uuid={handles[0].uuid}, minimum_nprobes={low if low is not None else 1}, "
        f"maximum_nprobes={f'Some({high})' if high is not None else 'None'}, deltas={deltas}",
        [],
    )
    inputs: list[PlanNode] = [partition]
    if prefilter and filter_text:
        inputs.append(
            (
                f"LanceRead: uri={uri}/data, projection=[], num_fragments={len(chosen)}, range_before=None, "
                f"range_after=None, row_id=true, row_addr=false, full_filter={filter_text}, "
                f"refine_filter={filter_text}",
                [],
            )
        )
    ann = (
        f"ANNSubIndex: name={handles[0].meta.name}, k={want}, deltas={deltas}, metric={_PLAN_METRICS[query.metric]}",
        inputs,
    )
    row = ["_distance", "_rowid"]
    node = (_top(want, row), [ann])
    take_vector = f"LanceRead: uri={uri}/data, projection=[{query.column}], source=stream(_rowid)"

    def measured(below: PlanNode, k: int) -> PlanNode:
        """Distances recomputed from the vectors, top ``k``, nulls dropped (row: _rowid, vec, _distance)."""
        after = ["_rowid", query.column, "_distance"]
        sort = (_top(k, after), [(f"KNNVectorDistance: metric={query.metric}", [below])])
        return (f"FilterExec: _distance@{after.index('_distance')} IS NOT NULL", [sort])

    if refine:
        node, row = measured((take_vector, [node]), query.k), ["_rowid", query.column, "_distance"]
    elif uncovered:
        node, row = (take_vector, [node]), ["_distance", "_rowid", query.column]
    if uncovered:
        scanned = [query.column, "_rowid", "_distance"]
        flat: PlanNode = (
            f"ProjectionExec: expr=[{', '.join(f'{c}@{scanned.index(c)} as {c}' for c in row)}]",
            [
                (
                    f"FilterExec: _distance@{scanned.index('_distance')} IS NOT NULL",
                    [
                        (
                            _top(query.k, scanned),
                            [
                                (
                                    f"KNNVectorDistance: metric={query.metric}",
                                    [
                                        (
                                            f"LanceScan: uri={uri}/data, projection=[{query.column}], row_id=true, "
                                            "row_addr=false, ordered=false, range=None",
                                            [],
                                        )
                                    ],
                                )
                            ],
                        )
                    ],
                )
            ],
        )
        union = ("CoalescePartitionsExec", [("UnionExec", [flat, node])])
        node, row = measured(union, query.k), ["_rowid", query.column, "_distance"]

    def take(columns: list[str], below: PlanNode) -> PlanNode:
        fresh = [c for c in columns if c not in row]
        if not fresh:
            return below
        row.extend(fresh)
        return (f"LanceRead: uri={uri}/data, projection=[{', '.join(fresh)}], source=stream(_rowid)", [below])

    if filter_text and not prefilter:
        node = (f"FilterExec: {filter_text}", [take(read, node)])
    node = take(names, node)
    exprs = ", ".join(f"{n}@{row.index(n)} as {n}" for n in [*names, "_distance"])
    return _render((f"ProjectionExec: expr=[{exprs}]", [node]))
