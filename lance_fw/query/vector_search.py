"""Flat (exact) nearest-neighbour search: ``scanner(nearest={...})`` without a vector index.

pylance's flat path computes one float32 distance per row with lance-linalg's kernels, keeps the
``k`` smallest per query (ties by ``_rowid``), drops rows whose distance is null or NaN (a null
vector, a NaN element), and then reads the other columns of the winners. This module does the
same with whole-array numpy over each scanned batch, so memory stays at one batch plus ``k`` rows
per query.

The distances are those pylance prints, bit for bit where it matters (float32 columns): its
kernels sum in 16 float32 lanes (L2, dot: lane sums added in order; cosine: fused multiply-adds,
lanes reduced as a tree), and a plain ``numpy`` sum rounds differently, which reorders rows at
near-ties. :func:`distances` reproduces those summation orders. float16 and float64 columns follow
the same formulas at float32 / float64 with the last bit not guaranteed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw._util.linalg import distances
from lance_fw._util.readahead import readahead
from lance_fw.errors import InvalidArgumentError, InvalidArgumentTypeError, UnsupportedFeatureError
from lance_fw.table.index_list import VECTOR_TYPE_URL
from lance_fw.table.snapshot import Snapshot

if TYPE_CHECKING:
    from lance_fw.query.filter_plan import FilterPlan

#: ``k`` when ``nearest`` gives none (pylance's default)
DEFAULT_K = 10
#: the output columns a vector search adds
DISTANCE_COLUMN = "_distance"
QUERY_INDEX_COLUMN = "query_index"
DISTANCE_FIELD = pa.field(DISTANCE_COLUMN, pa.float32())
QUERY_INDEX_FIELD = pa.field(QUERY_INDEX_COLUMN, pa.int32(), nullable=False)

#: metric spellings pylance accepts (case-insensitive) and the metric each names
METRIC_NAMES = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot", "hamming": "hamming"}
#: vector element types each metric supports (pylance: "Distance type X does not support T vectors")
_FLOAT_TYPES = (pa.float16(), pa.float32(), pa.float64())
_METRIC_TYPES = {
    "l2": _FLOAT_TYPES,
    "cosine": _FLOAT_TYPES,
    "dot": _FLOAT_TYPES,
    "hamming": (pa.uint8(),),
}
#: Arrow type -> the name pylance's messages give it
_TYPE_NAMES = {pa.float16(): "Float16", pa.float32(): "Float32", pa.float64(): "Float64", pa.uint8(): "UInt8"}
#: ``nearest`` keys that tune an index search only; a flat search accepts and ignores them
_INDEX_TUNING = (
    "nprobes",
    "minimum_nprobes",
    "maximum_nprobes",
    "refine_factor",
    "ef",
    "query_parallelism",
    "approx_mode",
    "search_effort",
)
_KEYS = ("column", "q", "k", "metric", "use_index", "distance_range", *_INDEX_TUNING)


@dataclass(frozen=True)
class NearestQuery:
    """One checked ``nearest=`` argument."""

    column: str
    queries: np.ndarray  # (number of queries, dim), in the column's element type
    batched: bool  # ``q`` was 2-D: a ``query_index`` column leads the output
    k: int
    metric: str
    use_index: bool
    tuning: dict[str, object] = field(default_factory=dict)


def parse_nearest(nearest: Mapping[str, object], snapshot: Snapshot) -> NearestQuery:
    """Check ``nearest`` as pylance's ``ScannerBuilder.nearest`` and the Rust planner do, raising
    their error classes (``TypeError`` for a bad key or a non-vector column, ``ValueError`` else)."""
    if not isinstance(nearest, Mapping):
        raise InvalidArgumentTypeError(f"nearest must be a dict, got {type(nearest).__name__}")
    for key in nearest:
        if key not in _KEYS:
            raise InvalidArgumentTypeError(f"nearest() got an unexpected keyword argument {key!r}")
    for key in ("column", "q"):
        if key not in nearest:
            raise InvalidArgumentTypeError(f"nearest() missing 1 required positional argument: {key!r}")
    if nearest.get("distance_range") is not None:
        raise UnsupportedFeatureError("nearest: option distance_range is not supported")
    name = str(nearest["column"])
    column = next((f for f in snapshot.schema if f.name == name), None)  # exact, as the Rust side
    if column is None:
        raise InvalidArgumentError(f"Embedding column {name} is not in the dataset")
    vector_type = column.type.storage_type if isinstance(column.type, pa.ExtensionType) else column.type
    if not pa.types.is_fixed_size_list(vector_type):
        if pa.types.is_list(vector_type) and pa.types.is_fixed_size_list(vector_type.value_type):
            raise UnsupportedFeatureError(f"nearest: multivector column {name} is not supported")
        raise InvalidArgumentTypeError(f"Query column {name} must be a vector. Got {column.type}.")
    dim, element = vector_type.list_size, vector_type.value_type
    queries, batched = _query_matrix(nearest["q"])
    if queries.shape[1] != dim:
        raise InvalidArgumentError(
            f"Query vector size {queries.shape[1]} does not match index column size {dim}"
        )
    if batched and QUERY_INDEX_COLUMN in snapshot.schema.names:
        raise InvalidArgumentError(
            f"batch search cannot be used on a dataset with a {QUERY_INDEX_COLUMN} column"
        )
    k = nearest.get("k")
    k = DEFAULT_K if k is None else _integer("k", k)
    if k <= 0:
        raise InvalidArgumentError(f"Nearest-K must be > 0 but got {k}")
    _check_tuning(nearest)
    metric = _metric(nearest.get("metric"), element)
    if element not in _METRIC_TYPES[metric]:
        if element in _TYPE_NAMES:
            raise InvalidArgumentError(
                f"Invalid user input: Distance type {metric} does not support {_TYPE_NAMES[element]} vectors"
            )
        raise InvalidArgumentError(
            f"Invalid user input: Column {name} has element type {element} and the query vector is Float32"
        )
    tuning = {key: nearest[key] for key in _INDEX_TUNING if nearest.get(key) is not None}
    use_index = nearest.get("use_index", True)
    return NearestQuery(
        column.name, _as_element(queries, element), batched, k, metric, bool(use_index), tuning
    )


def _query_matrix(q: object) -> tuple[np.ndarray, bool]:
    """``q`` as a (queries, dim) matrix and whether it was a batch. Lists and numpy arrays become
    float32 as in pylance (through float64); an Arrow float array keeps its type."""
    if isinstance(q, pa.Scalar) and isinstance(q.type, pa.FixedSizeListType):
        q = q.values
    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        if not (pa.types.is_floating(q.type) or pa.types.is_integer(q.type)):
            raise InvalidArgumentTypeError(
                f"query vector must be list-like or pa.FloatingPointArray but received {q.type}"
            )
        values = q.to_numpy(zero_copy_only=False)
        return (values if pa.types.is_floating(q.type) else values.astype(np.float32))[None, :], False
    try:
        matrix = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(
            f"Query vectors should be an array of floats, got {type(q)} which we cannot coerce to a float array"
        ) from error
    if matrix.ndim == 1:
        return matrix.astype(np.float32)[None, :], False
    if matrix.ndim == 2 and matrix.shape[0] > 0:
        return matrix.astype(np.float32), True
    raise InvalidArgumentError(
        f"nearest: q must be one vector or a 2-D batch of vectors, got shape {matrix.shape}"
    )


def _as_element(queries: np.ndarray, element: pa.DataType) -> np.ndarray:
    """The query cast to the column's element type as Arrow's cast does: to uint8 a value is
    truncated, and one out of range (or NaN) becomes null, which the kernel reads as 0."""
    if pa.types.is_uint8(element):
        whole = np.trunc(np.nan_to_num(queries, nan=-1.0))
        return np.where((whole >= 0) & (whole <= np.iinfo(np.uint8).max), whole, 0).astype(np.uint8)
    return queries.astype(element.to_pandas_dtype())


def _integer(name: str, value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(f"nearest: {name} must be an integer, got {value!r}") from error


def _check_tuning(nearest: Mapping[str, object]) -> None:
    """pylance's range checks of the index options (a flat search then ignores them)."""
    least = {"nprobes": 1, "minimum_nprobes": 0, "maximum_nprobes": 0, "refine_factor": 1, "ef": 1}
    for key, low in least.items():
        value = nearest.get(key)
        if value is not None and _integer(key, value) < low:
            raise InvalidArgumentError(f"nearest: {key} must be at least {low}, got {value}")
    approx = nearest.get("approx_mode", "normal")
    if approx not in ("fast", "normal", "accurate"):
        raise InvalidArgumentError(
            f"approx_mode must be one of 'fast', 'normal', or 'accurate', got {approx!r}"
        )


def _metric(metric: object, element: pa.DataType) -> str:
    """The metric's canonical name; without one, hamming for uint8 vectors and l2 otherwise."""
    if metric is None:
        return "hamming" if pa.types.is_uint8(element) else "l2"
    name = METRIC_NAMES.get(str(metric).lower())
    if name is None:
        raise InvalidArgumentError(f"Invalid argument error: Metric type '{metric}' is not supported")
    return name


# -- distances ------------------------------------------------------------------------------------


def vectors_of(column: pa.Array | pa.ChunkedArray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-size-list column as an (n, dim) matrix (null rows hold garbage) and its valid mask."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):
        column = column.storage
    assert isinstance(column, pa.FixedSizeListArray)
    values = column.flatten() if column.offset == 0 and column.null_count == 0 else None
    if values is None:  # flatten() skips null rows; take the child slice the rows span instead
        values = column.values.slice(column.offset * dim, len(column) * dim)
    flat = values.to_numpy(zero_copy_only=False)
    if values.null_count:  # a null element: its buffer value, as pylance's kernels read it
        flat = np.frombuffer(values.buffers()[1], values.type.to_pandas_dtype())[
            values.offset : values.offset + len(values)
        ]
    valid = (
        np.ones(len(column), bool)
        if column.null_count == 0
        else column.is_valid().to_numpy(zero_copy_only=False)
    )
    return flat.reshape(len(column), dim), valid


# -- top-k ----------------------------------------------------------------------------------------


class TopK:
    """The ``k`` smallest (distance, row id) seen so far, with each row's address: candidates are
    merged batch by batch (``np.partition`` then an exact sort of the few at the boundary)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.distance = np.zeros(0, np.float32)
        self.row_id = np.zeros(0, np.uint64)
        self.address = np.zeros(0, np.uint64)

    def push(self, distance: np.ndarray, row_id: np.ndarray, address: np.ndarray) -> None:
        keep = ~np.isnan(distance)
        distance = np.concatenate([self.distance, distance[keep]])
        row_id = np.concatenate([self.row_id, row_id[keep]])
        address = np.concatenate([self.address, address[keep]])
        if len(distance) > self.k:
            bound = np.partition(distance, self.k - 1)[self.k - 1]
            near = np.flatnonzero(distance <= bound)
            order = near[np.lexsort((row_id[near], distance[near]))][: self.k]
            distance, row_id, address = distance[order], row_id[order], address[order]
        self.distance, self.row_id, self.address = distance, row_id, address

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distance, row id, address), nearest first, ties by row id."""
        order = np.lexsort((self.row_id, self.distance))
        return self.distance[order], self.row_id[order], self.address[order]


# -- the search -----------------------------------------------------------------------------------


def vector_index_on(snapshot: Snapshot, column: str) -> str | None:
    """The name of a vector index on ``column`` (details of a vector index, or none as older
    vector indices have): pylance would search it, approximately."""
    section = snapshot.index_section
    if section is None:
        return None
    field_id = snapshot.lance_schema.field(column).id
    for meta in section.indices:
        type_url = meta.index_details.type_url if meta.HasField("index_details") else ""
        if field_id in meta.fields and type_url in (VECTOR_TYPE_URL, ""):
            return str(meta.name)
    return None


@dataclass(frozen=True)
class SearchScope:
    """Where a nearest-neighbour search looks: ``fragments`` of ``snapshot``, the rows passing
    ``plan``'s filter when given (prefilter), read ``batch_size`` rows at a time with ``ahead``
    fragments read ahead."""

    snapshot: Snapshot
    fragments: Sequence[table_pb2.DataFragment]
    plan: FilterPlan | None
    batch_size: int
    ahead: int


def flat_search(scope: SearchScope, query: NearestQuery) -> list[TopK]:
    """Each query's ``k`` nearest live rows of the scope's fragments, reading only the vector column
    (and the filter's)."""
    vector = scope.snapshot.fields([query.column])
    dim = query.queries.shape[1]
    tops = [TopK(query.k) for _ in range(len(query.queries))]

    def produce(frag: table_pb2.DataFragment) -> Iterator[pa.RecordBatch]:
        return scope.snapshot.read_fragment(frag, vector, scope.plan, scope.batch_size, True, True)

    for batch in readahead(list(scope.fragments), produce, scope.ahead):
        if not batch.num_rows:
            continue
        vectors, valid = vectors_of(batch.column(query.column), dim)
        row_id = batch.column("_rowid").to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        address = batch.column("_rowaddr").to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        if not valid.all():
            vectors, row_id, address = vectors[valid], row_id[valid], address[valid]
        for top, q in zip(tops, query.queries, strict=True):
            top.push(distances(query.metric, vectors, q), row_id, address)
    return tops


class PlanRequest(NamedTuple):
    """What a search's ``explain_plan`` shows: the query, the dataset, the columns returned and
    read (the filter's), the filter's text and whether it is a prefilter."""

    query: NearestQuery
    uri: str
    names: list[str]
    read: list[str]
    filter_text: str | None
    prefilter: bool


def plan_text(request: PlanRequest, fragments: int) -> list[str]:
    """pylance's plan for a flat search (``explain_plan``), top line first: a ProjectionExec over
    takes by row id (``LanceRead ... source=stream(_rowid)``: the filter's columns then a
    post-filter, then the other columns) of the top-k of ``KNNVectorDistance`` over a scan of the
    vector column (with a prefilter: the filter's columns too, filtered first). Column indices
    are positions in the plan's row (read columns, _rowid, _distance, then each take's)."""
    query, uri, names, read, filter_text, prefilter = request
    pre = bool(filter_text) and prefilter
    inner = [*(c for c in read if c != query.column), query.column] if pre else [query.column]
    row = [*inner, "_rowid", DISTANCE_COLUMN]
    at = {name: i for i, name in enumerate(row)}
    shown = filter_text if pre else "--"
    scan = (
        f"LanceRead: uri={uri}/data, projection=[{', '.join(inner)}], num_fragments={fragments}, "
        f"range_before=None, range_after=None, row_id=true, row_addr=false, "
        f"full_filter={shown}, refine_filter={shown}"
    )
    below = [scan, f"FilterExec: {filter_text}"] if pre else [scan]
    below += [
        f"KNNVectorDistance: metric={query.metric}",
        f"SortExec: TopK(fetch={query.k}), expr=[{DISTANCE_COLUMN}@{at[DISTANCE_COLUMN]} ASC NULLS LAST, "
        f"_rowid@{at['_rowid']} ASC NULLS LAST], preserve_partitioning=[false]",
        f"FilterExec: {DISTANCE_COLUMN}@{at[DISTANCE_COLUMN]} IS NOT NULL",
    ]

    def take(columns: list[str]) -> None:
        fresh = [c for c in columns if c not in row]
        if fresh:
            row.extend(fresh)
            below.append(f"LanceRead: uri={uri}/data, projection=[{', '.join(fresh)}], source=stream(_rowid)")

    if filter_text and not prefilter:
        take(read)
        below.append(f"FilterExec: {filter_text}")
    take(names)
    exprs = ", ".join(f"{n}@{row.index(n)} as {n}" for n in [*names, DISTANCE_COLUMN])
    lines = [f"ProjectionExec: expr=[{exprs}]", *reversed(below)]
    return ["  " * depth + line for depth, line in enumerate(lines)]
