"""Training and writing IVF_PQ indices in pylance 14's layout (see ``index_ivf_pq`` for the layout).

Why numpy k-means of our own: the index must be built without pylance, from the kernel's training
batches. IVF centroids come from Lloyd's k-means (k-means++ seeds: about 5% lower loss than
random seeds, below pylance's, at 0.2 s for 256 x 65536 x 128; dot's spherical k-means keeps random seeds, which gave it better
recall) on a seeded sample of
``num_partitions * sample_rate`` rows (pylance's sample size), PQ codebooks from one k-means of
256 codewords per sub-vector on ``256 * sample_rate`` residuals (k-means++ seeds did not lower
their distortion there); both stop at ``max_iters`` or when the loss stops improving. For ``cosine`` the vectors are normalised first; for ``dot`` the centroids are kept at
unit norm (spherical k-means), as pylance's are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw import interfaces as ix
from lance_fw._proto import vector_index_pb2
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

TYPE_URL = "/lance.index.pb.VectorIndexDetails"
INDEX_FILE = "index.idx"
AUX_FILE = "auxiliary.idx"
#: Schema metadata keys of the two files.
IVF_META_KEY = "lance:ivf"
INDEX_META_KEY = "lance:index"
FLAT_META_KEY = "lance:flat"
STORAGE_META_KEY = "storage_metadata"
DISTANCE_TYPE_KEY = "distance_type"
#: Columns.
ROW_ID_COLUMN = "_rowid"
CODE_COLUMN = "__pq_code"
FLAT_MARKER_COLUMN = "__flat_marker"
#: Global buffers: 1 the IVF message, 2 (auxiliary.idx) the codebook.
IVF_BUFFER = 1
CODEBOOK_BUFFER = 2
#: pylance's defaults.
DEFAULT_NUM_BITS = 8
DEFAULT_SAMPLE_RATE = 256
DEFAULT_MAX_ITERS = 50
#: pylance's shuffle settings, recorded in the details' runtime hints (lance_fw does not shuffle)
SHUFFLE_PARTITION_BATCHES = 10240
SHUFFLE_PARTITION_CONCURRENCY = 2
#: k-means stops when the loss improves by less than this fraction (IVF centroids).
KMEANS_TOLERANCE = 1e-4
#: The same for PQ codebooks: 256 codewords of a few dimensions keep improving by ~0.1% per
#: iteration for dozens of iterations (about 1% of loss in all, no measurable recall), so they
#: stop earlier; this keeps training within a few times pylance's (Rust, SIMD) time.
PQ_TOLERANCE = 1e-3
#: Rows per block when assigning or encoding (bounds the (rows, centroids) distance matrix).
BLOCK_ROWS = 2048
SEED = 42
METRICS = {
    "l2": vector_index_pb2.L2,
    "euclidean": vector_index_pb2.L2,
    "cosine": vector_index_pb2.Cosine,
    "dot": vector_index_pb2.Dot,
}
#: ``create_index`` parameters each type implements; any other one is refused by name.
PARAMS = {
    "IVF_PQ": ("metric", "num_partitions", "num_sub_vectors", "num_bits", "sample_rate", "max_iters"),
    "IVF_FLAT": ("metric", "num_partitions", "sample_rate", "max_iters"),
    "IVF_SQ": ("metric", "num_partitions", "num_bits", "sample_rate", "max_iters"),
}


def metric_of(params: Mapping[str, Any]) -> str:
    name = str(params.get("metric", "l2")).lower()
    if name not in METRICS:
        raise UnsupportedFeatureError(f"vector index: metric {params.get('metric')!r} is not supported")
    return "l2" if name == "euclidean" else name


def _vector_type(vector_field: pa.Field) -> pa.FixedSizeListType:
    kind = vector_field.type
    kind = kind.storage_type if isinstance(kind, pa.ExtensionType) else kind
    if not pa.types.is_fixed_size_list(kind) or kind.value_type != pa.float32():
        raise UnsupportedFeatureError(
            f"vector index: column {vector_field.name!r} of type {vector_field.type} is not a float32 "
            "vector column (lance_fw builds vector indices on float32 vectors only)"
        )
    assert isinstance(kind, pa.FixedSizeListType)
    return kind


def _int(params: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = params.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise InvalidArgumentError(f"vector index: {key} must be a positive integer, got {value!r}")
    return int(value)


def check_params(vector_field: pa.Field, params: Mapping[str, Any], kind: str = "IVF_PQ") -> None:
    """Refuse what ``kind`` does not implement; every given parameter is used."""
    unknown = sorted(k for k, v in params.items() if k not in PARAMS[kind] and v is not None)
    if unknown:
        raise InvalidArgumentError(f"{kind}: parameter(s) {', '.join(unknown)} not supported by lance_fw")
    dim = _vector_type(vector_field).list_size
    metric_of(params)
    if _int(params, "num_bits", DEFAULT_NUM_BITS) != DEFAULT_NUM_BITS:
        raise UnsupportedFeatureError(f"{kind}: only num_bits=8 is supported by lance_fw")
    if kind == "IVF_PQ" and (params.get("num_partitions") is None or params.get("num_sub_vectors") is None):
        raise InvalidArgumentError("num_partitions and num_sub_vectors are required for IVF_PQ")
    if params.get("num_partitions") is None:
        raise InvalidArgumentError(f"num_partitions is required for {kind}")
    m = _int(params, "num_sub_vectors", None)
    if m is not None and dim % m:
        raise InvalidArgumentError(f"IVF_PQ: num_sub_vectors {m} must divide the vector dimension {dim}")
    _int(params, "num_partitions", None)
    _int(params, "sample_rate", DEFAULT_SAMPLE_RATE)
    _int(params, "max_iters", DEFAULT_MAX_ITERS)


def details_bytes(params: Mapping[str, Any], kind: str = "IVF_PQ") -> bytes:
    """``VectorIndexDetails`` as pylance 14 writes it for ``kind`` (with its runtime hints)."""
    details = vector_index_pb2.VectorIndexDetails(metric_type=METRICS[metric_of(params)])
    iters = str(_int(params, "max_iters", DEFAULT_MAX_ITERS))
    rate = str(_int(params, "sample_rate", DEFAULT_SAMPLE_RATE))
    hints = {
        "lance.ivf.max_iters": iters,
        "lance.ivf.sample_rate": rate,
        "lance.ivf.shuffle_partition_batches": str(SHUFFLE_PARTITION_BATCHES),
        "lance.ivf.shuffle_partition_concurrency": str(SHUFFLE_PARTITION_CONCURRENCY),
        "lance.skip_transpose": "false",
    }
    if kind == "IVF_PQ":
        details.pq.num_bits = DEFAULT_NUM_BITS
        details.pq.num_sub_vectors = int(params["num_sub_vectors"])
        hints.update(
            {"lance.pq.kmeans_redos": "1", "lance.pq.sample_rate": rate, "lance.pq.max_iters": iters}
        )
    elif kind == "IVF_SQ":
        details.sq.num_bits = DEFAULT_NUM_BITS
        hints["lance.sq.sample_rate"] = rate
    details.runtime_hints.update(hints)
    return details.SerializeToString()


# -- k-means --------------------------------------------------------------------------------------


def assign(x: np.ndarray, c: np.ndarray, spherical: bool) -> np.ndarray:
    """Each row's nearest centroid (largest dot product for ``spherical``)."""
    return _nearest(x, c, spherical)[0]


def _nearest(x: np.ndarray, c: np.ndarray, spherical: bool) -> tuple[np.ndarray, float]:
    """Each row's nearest centroid and the loss (sum of squared distances, or of ``-x.c`` for
    ``spherical``, as pylance records it), in blocks of rows: ``argmin(|c|^2 - 2 x.c)`` (a row's own ``|x|^2`` does not
    change its argmin; it is added to the loss once)."""
    out = np.empty(len(x), np.int64)
    scaled = (c * np.float32(-1.0 if spherical else -2.0)).T.copy()
    norms = np.zeros(len(c), np.float32) if spherical else np.einsum("ij,ij->i", c, c)
    total = 0.0 if spherical else float(np.einsum("ij,ij->", x, x, dtype=np.float64))
    for lo in range(0, len(x), BLOCK_ROWS):
        score = x[lo : lo + BLOCK_ROWS] @ scaled
        score += norms
        best = np.argmin(score, axis=1)
        out[lo : lo + BLOCK_ROWS] = best
        total += float(np.take_along_axis(score, best[:, None], axis=1).sum(dtype=np.float64))
    return out, total


def kmeans(
    x: np.ndarray,
    k: int,
    max_iters: int,
    rng: np.random.Generator,
    spherical: bool = False,
    tolerance: float = KMEANS_TOLERANCE,
    plus_plus: bool = False,
) -> tuple[np.ndarray, float]:
    """Lloyd's k-means of ``x`` into ``k`` centroids (random rows to start; an emptied cluster is
    re-seeded next to the largest one). Returns the centroids and the loss of the last
    assignment. Stops after ``max_iters`` or when the loss improves by less than
    ``tolerance`` of itself."""
    n, dim = x.shape
    if plus_plus and n > k:
        c = _plus_plus(x, k, rng)
    else:
        c = x[rng.choice(n, size=k, replace=n < k)].astype(np.float32, copy=True)
    if spherical:
        c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), np.float32(1e-12))
    previous = np.inf
    loss = 0.0
    for _ in range(max_iters):
        labels, loss = _nearest(x, c, spherical)
        counts = np.bincount(labels, minlength=k)
        sums = np.empty((k, dim), np.float64)
        for j in range(dim):
            sums[:, j] = np.bincount(labels, weights=x[:, j], minlength=k)
        fresh = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
        for empty in np.flatnonzero(counts == 0):  # re-seed next to the largest cluster
            big = int(np.argmax(counts))
            noise = np.float32(1e-3) * rng.standard_normal(dim, dtype=np.float32)
            fresh[empty] = fresh[big] * (1 + noise)
            counts[big] //= 2
            counts[empty] = counts[big]
        if spherical:
            fresh /= np.maximum(np.linalg.norm(fresh, axis=1, keepdims=True), np.float32(1e-12))
        c = fresh
        if np.isfinite(previous) and previous - loss <= tolerance * abs(previous):
            break
        previous = loss
    return c, loss


def _plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeds: each next centroid a row drawn with probability proportional to its
    squared distance from the nearest centroid so far."""
    norms = np.einsum("ij,ij->i", x, x)
    chosen = [int(rng.integers(len(x)))]
    nearest = np.maximum(norms - 2 * (x @ x[chosen[0]]) + norms[chosen[0]], 0)
    for _ in range(1, k):
        total = float(nearest.sum(dtype=np.float64))
        if total <= 0:
            pick = int(rng.integers(len(x)))
        else:
            cumulative = np.cumsum(nearest, dtype=np.float64)
            pick = min(int(np.searchsorted(cumulative, rng.random() * total)), len(x) - 1)
        chosen.append(pick)
        np.minimum(nearest, np.maximum(norms - 2 * (x @ x[pick]) + norms[pick], 0), out=nearest)
    return x[chosen].astype(np.float32, copy=True)


def train_pq(residuals: np.ndarray, m: int, max_iters: int, rng: np.random.Generator) -> np.ndarray:
    """(m, 256, dim / m) codebooks: one k-means of 256 codewords per sub-vector."""
    sub = residuals.shape[1] // m
    books = [
        kmeans(
            np.ascontiguousarray(residuals[:, i * sub : (i + 1) * sub]),
            1 << DEFAULT_NUM_BITS,
            max_iters,
            rng,
            tolerance=PQ_TOLERANCE,
        )[0]
        for i in range(m)
    ]
    return np.stack(books).astype(np.float32)


def encode(residuals: np.ndarray, books: np.ndarray) -> np.ndarray:
    """(rows, m) uint8 codes: the nearest codeword of each sub-vector."""
    m, _, sub = books.shape
    codes = np.empty((len(residuals), m), np.uint8)
    for i in range(m):
        codes[:, i] = assign(np.ascontiguousarray(residuals[:, i * sub : (i + 1) * sub]), books[i], False)
    return codes


# -- writing --------------------------------------------------------------------------------------


def _tensor(array: np.ndarray, shape: list[int]) -> vector_index_pb2.Tensor:
    return vector_index_pb2.Tensor(
        data_type=vector_index_pb2.Tensor.FLOAT32,
        shape=shape,
        data=np.ascontiguousarray(array, np.float32).tobytes(),
    )


def _gather(batches: Iterable[pa.RecordBatch], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Every non-null vector (float32) and its row address."""
    vectors, ids = [], []
    for batch in batches:
        column = batch.column(0)
        if isinstance(column, pa.ExtensionArray):
            column = column.storage
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        flat = column.values.slice(column.offset * dim, len(column) * dim).to_numpy(zero_copy_only=False)
        vectors.append(flat.reshape(len(column), dim)[valid].astype(np.float32))
        ids.append(batch.column(1).to_numpy(zero_copy_only=False)[valid].astype(np.uint64))
    if not vectors:
        return np.zeros((0, dim), np.float32), np.zeros(0, np.uint64)
    x, row_ids = np.concatenate(vectors), np.concatenate(ids)
    finite = np.isfinite(x).all(axis=1)  # pylance's filter_nan: rows with NaN / inf are not indexed
    return x[finite], row_ids[finite]


@dataclass
class Partitioned:
    """The IVF step's result, rows in partition order (row addresses ascending inside one)."""

    metric: str
    #: the vectors as indexed (normalised for cosine), float32, in partition order
    vectors: np.ndarray
    row_ids: np.ndarray
    #: each row's partition
    labels: np.ndarray
    centroids: np.ndarray
    loss: float
    offsets: np.ndarray
    lengths: np.ndarray
    rng: np.random.Generator


@dataclass
class Storage:
    """What a sub-index adds to ``auxiliary.idx``: columns after ``_rowid``, the one
    ``storage_metadata`` JSON object, global buffers after the IVF one."""

    columns: dict[str, pa.Array]
    metadata: dict[str, Any]
    buffers: list[bytes] = dc_field(default_factory=list)


def partition(
    batches: Iterable[pa.RecordBatch], vector_field: pa.Field, params: Mapping[str, Any], kind: str
) -> Partitioned:
    """Gather every vector, train the IVF centroids and put every row in its partition."""
    dim = _vector_type(vector_field).list_size
    metric = metric_of(params)
    x, row_ids = _gather(batches, dim)
    if metric == "cosine":
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.float32(1e-12))
    parts = int(params["num_partitions"])
    if parts > len(x):
        raise InvalidArgumentError(f"{kind}: num_partitions {parts} exceeds the {len(x)} rows to index")
    rate = _int(params, "sample_rate", DEFAULT_SAMPLE_RATE) or DEFAULT_SAMPLE_RATE
    iters = _int(params, "max_iters", DEFAULT_MAX_ITERS) or DEFAULT_MAX_ITERS
    rng = np.random.default_rng(SEED)
    spherical = metric == "dot"
    sample = x if len(x) <= parts * rate else x[np.sort(rng.choice(len(x), parts * rate, replace=False))]
    centroids, loss = (
        kmeans(sample, parts, iters, rng, spherical, plus_plus=not spherical)
        if parts > 1
        else (_one_centroid(x, spherical), 0.0)
    )
    labels, loss = _nearest(x, centroids, spherical)  # pylance records the loss of every row
    order = np.argsort(labels, kind="stable")
    lengths = np.bincount(labels, minlength=parts).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return Partitioned(
        metric, x[order], row_ids[order], labels[order], centroids, loss, offsets, lengths, rng
    )


def pq_storage(ivf: Partitioned, params: Mapping[str, Any]) -> Storage:
    """PQ codebooks trained on ``256 * sample_rate`` residuals (raw vectors for dot), every row
    encoded, each partition's codes stored transposed."""
    codewords = 1 << DEFAULT_NUM_BITS
    x = ivf.vectors
    if len(x) < codewords:
        raise InvalidArgumentError(
            f"IVF_PQ: not enough rows to train PQ: requires {codewords} rows but only {len(x)} available"
        )
    m = int(params["num_sub_vectors"])
    rate = _int(params, "sample_rate", DEFAULT_SAMPLE_RATE) or DEFAULT_SAMPLE_RATE
    iters = _int(params, "max_iters", DEFAULT_MAX_ITERS) or DEFAULT_MAX_ITERS
    residual = _residual(ivf)
    pick = (
        None
        if len(x) <= codewords * rate
        else np.sort(ivf.rng.choice(len(x), codewords * rate, replace=False))
    )
    books = train_pq(residual if pick is None else residual[pick], m, iters, ivf.rng)
    return pq_encoded(ivf, books)


def _residual(ivf: Partitioned) -> np.ndarray:
    """What PQ encodes: the residual to the partition's centroid (the vector itself for dot)."""
    return ivf.vectors - ivf.centroids[ivf.labels] if ivf.metric != "dot" else ivf.vectors


def pq_encoded(ivf: Partitioned, books: np.ndarray) -> Storage:
    """Every row encoded with ``books`` (m, 256, dim / m), each partition's codes transposed."""
    m, codewords, _ = books.shape
    dim = ivf.vectors.shape[1]
    codes = encode(_residual(ivf), books)
    transposed = np.concatenate(
        [codes[o : o + n].T.ravel() for o, n in zip(ivf.offsets.tolist(), ivf.lengths.tolist(), strict=True)]
    )
    code_type = pa.list_(pa.field("item", pa.uint8()), m)
    return Storage(
        {CODE_COLUMN: pa.FixedSizeListArray.from_arrays(pa.array(transposed, pa.uint8()), type=code_type)},
        {
            "codebook_position": CODEBOOK_BUFFER,
            "nbits": DEFAULT_NUM_BITS,
            "num_sub_vectors": m,
            "dimension": dim,
            "codebook_tensor": [],
            "transposed": True,
        },
        [_tensor(books, [codewords, dim]).SerializeToString()],
    )


def train(
    batches: Iterable[pa.RecordBatch],
    vector_field: pa.Field,
    params: Mapping[str, Any],
    store: ix.IndexFileStore,
    kind: str = "IVF_PQ",
    storage: Callable[[Partitioned, Mapping[str, Any]], Storage] = pq_storage,
) -> None:
    """Train on every vector of ``batches`` and write ``index.idx`` and ``auxiliary.idx``."""
    ivf = partition(batches, vector_field, params, kind)
    write(store, kind, ivf, storage(ivf, params))


def rebuild(
    batches: Iterable[pa.RecordBatch],
    vector_field: pa.Field,
    store: ix.IndexFileStore,
    kind: str,
    metric: str,
    centroids: np.ndarray,
    storage: Callable[[Partitioned], Storage],
) -> None:
    """Index every vector of ``batches`` with existing ``centroids`` (and, through ``storage``,
    the existing codebook or bounds): no training."""
    dim = _vector_type(vector_field).list_size
    x, row_ids = _gather(batches, dim)
    if metric == "cosine":
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.float32(1e-12))
    labels, loss = _nearest(x, centroids, metric == "dot")
    order = np.argsort(labels, kind="stable")
    lengths = np.bincount(labels, minlength=len(centroids)).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ivf = Partitioned(
        metric,
        x[order],
        row_ids[order],
        labels[order],
        centroids,
        loss,
        offsets,
        lengths,
        np.random.default_rng(SEED),
    )
    write(store, kind, ivf, storage(ivf))


def _one_centroid(x: np.ndarray, spherical: bool) -> np.ndarray:
    c = x.mean(axis=0, keepdims=True).astype(np.float32)
    return c / max(float(np.linalg.norm(c)), 1e-12) if spherical else c


def _json(value: Any) -> str:
    """JSON as pylance (serde) writes it: no spaces."""
    return json.dumps(value, separators=(",", ":"))


def write(store: ix.IndexFileStore, kind: str, ivf: Partitioned, storage: Storage) -> None:
    """``auxiliary.idx`` (row ids, the sub-index's columns, the partitions) and ``index.idx``."""
    parts, dim = ivf.centroids.shape
    ivf_parts = vector_index_pb2.IVF(offsets=ivf.offsets.tolist(), lengths=ivf.lengths.tolist())
    aux = pa.table({ROW_ID_COLUMN: pa.array(ivf.row_ids, pa.uint64()), **storage.columns})
    store.write_table(
        AUX_FILE,
        aux,
        {
            IVF_META_KEY: str(IVF_BUFFER),
            DISTANCE_TYPE_KEY: ivf.metric,
            STORAGE_META_KEY: _json([_json(storage.metadata)]),
        },
        [ivf_parts.SerializeToString(), *storage.buffers],
    )
    model = vector_index_pb2.IVF(offsets=[0] * parts, lengths=[0] * parts, loss=ivf.loss)
    model.centroids_tensor.CopyFrom(_tensor(ivf.centroids, [parts, dim]))
    marker = pa.table({FLAT_MARKER_COLUMN: pa.array([], pa.uint64())}).cast(
        pa.schema([pa.field(FLAT_MARKER_COLUMN, pa.uint64(), nullable=False)])
    )
    store.write_table(
        INDEX_FILE,
        marker,
        {
            INDEX_META_KEY: _json({"type": kind, "distance_type": ivf.metric}),
            IVF_META_KEY: str(IVF_BUFFER),
            FLAT_META_KEY: _json([""] * parts),
        },
        [model.SerializeToString()],
    )
