"""The IVF_PQ vector index (pylance's ``create_index(col, "IVF_PQ", ...)``), byte-compatible with
pylance 14.0.2 both ways.

Layout (observed on pylance 14 files, ``index_file_version`` V3; ``../shared/spec`` §8.4):

* ``index.idx``: one empty ``__flat_marker`` u64 column; schema metadata ``lance:index`` =
  ``{"type":"IVF_PQ","distance_type":...}``, ``lance:flat`` (one ``""`` per partition) and
  ``lance:ivf`` = the global buffer holding a ``lance.index.pb.IVF`` message whose
  ``centroids_tensor`` is the (partitions, dim) centroid matrix (offsets/lengths all zero).
* ``auxiliary.idx``: ``_rowid`` u64 and ``__pq_code`` FSL<uint8, num_sub_vectors>, grouped by
  partition (row ids ascending inside one); ``lance:ivf`` = global buffer with the partitions'
  ``offsets`` / ``lengths``; ``storage_metadata`` = a JSON list holding one JSON object
  (``codebook_position``: the global buffer of the codebook ``Tensor``, ``nbits``,
  ``num_sub_vectors``, ``dimension``, ``transposed``); ``distance_type``.
* The codebook tensor says shape ``[256, dim]`` but its floats are sub-vector major:
  ``(num_sub_vectors, 256, dim / num_sub_vectors)``. With ``transposed`` a partition's codes are
  stored column-major: the ``l * m`` code bytes of its ``l`` rows are ``m`` runs of ``l``.

How pylance encodes and measures (checked against its distances to the last bit on small data):

* ``l2``: a row's partition is its nearest centroid; PQ encodes the residual ``x - c``; a query's
  distance is the sum over sub-vectors of ``|r_m - codeword|^2`` with ``r = q - c`` (squared L2).
* ``cosine``: vectors (and the query) are normalised first, then exactly as ``l2`` (the reported
  distance is the squared L2 of the normalised vectors, ``2 * (1 - cos)`` in expectation).
* ``dot``: unit-norm centroids, the partition of largest ``x . c``; PQ encodes ``x`` itself; the
  distance is ``sum_m (1 - q_m . codeword) - (m - 1)``.
* Every table entry is summed in lance-linalg's kernel order and the entries of a row added
  sub-vector by sub-vector in float32 (``linalg.table_distances``); a cosine query is normalised
  with a plain ordered sum (``linalg.query_norm``). The probed partitions feed one top-k heap in
  probe order (``index_ivf_heap``), which decides the rows tied at the k-th distance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw import interfaces as ix
from lance_fw._proto import vector_index_pb2
from lance_fw._util.linalg import query_norm, table_distances
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.hookspecs import hookimpl
from lance_fw_plugins import index_ivf_pq_train as train_mod
from lance_fw_plugins.index_ivf_heap import ProbeHeap
from lance_fw_plugins.index_ivf_pq_train import (
    AUX_FILE,
    CODE_COLUMN,
    INDEX_FILE,
    INDEX_META_KEY,
    IVF_META_KEY,
    ROW_ID_COLUMN,
    STORAGE_META_KEY,
    TYPE_URL,
    Partitioned,
    Storage,
    check_params,
    details_bytes,
)

#: ``IndexMetadata.index_version`` pylance 14 writes for IVF_PQ.
IVF_PQ_INDEX_VERSION = 1
#: The only code width lance_fw reads and writes (pylance also has 4-bit codes).
SUPPORTED_NBITS = 8
#: ``Tensor.DataType`` -> numpy dtype of the tensors this module reads.
_TENSOR_DTYPES = {
    vector_index_pb2.Tensor.FLOAT16: np.float16,
    vector_index_pb2.Tensor.FLOAT32: np.float32,
    vector_index_pb2.Tensor.FLOAT64: np.float64,
}
#: Auto probing (no ``nprobes``) searches at least ``partitions ** this`` partitions (pylance's
#: default ``search_effort`` 0.5 interpolates geometrically between one and all), then goes on
#: while a partition may hold a row nearer than the k-th found (l2, cosine: the distance from the
#: query to the bisecting hyperplane with the nearest centroid bounds it). With dot no such bound
#: exists and pylance searches every partition; so does this.
AUTO_EFFORT_EXPONENT = 0.5
#: distance-table floats computed in one kernel call: the temporaries (sub_dim floats per entry)
#: stay in cache, and memory stays bounded however many partitions are probed
TABLE_FLOATS = 1 << 18


def tensor_array(tensor: vector_index_pb2.Tensor, where: str) -> np.ndarray:
    """A ``Tensor`` message's data as a float32 numpy array of its shape."""
    dtype = _TENSOR_DTYPES.get(tensor.data_type)
    if dtype is None:
        raise UnsupportedFeatureError(f"{where}: tensor of data type {tensor.data_type} is not supported")
    flat = np.frombuffer(tensor.data, dtype)
    shape = [int(s) for s in tensor.shape]
    if int(np.prod(shape)) != len(flat):
        raise CorruptFileError(where, f"tensor of shape {shape} holds {len(flat)} values")
    return flat.astype(np.float32).reshape(shape)


def _ivf(store: ix.IndexFileStore, name: str, where: str) -> vector_index_pb2.IVF:
    meta = store.schema_metadata(name)
    try:
        position = int(meta[IVF_META_KEY])
    except (KeyError, ValueError) as exc:
        raise CorruptFileError(where, f"{name} has no {IVF_META_KEY!r} global buffer number") from exc
    ivf = vector_index_pb2.IVF()
    try:
        ivf.ParseFromString(store.global_buffer(name, position))
    except Exception as exc:  # a protobuf DecodeError: not an IVF message
        raise CorruptFileError(where, f"{name}: global buffer {position} is not an IVF message") from exc
    return ivf


def _fsl_values(column: pa.ChunkedArray | pa.Array, width: int) -> np.ndarray:
    """A fixed-size-list column's values as an (rows, width) numpy matrix."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = array.values.to_numpy(zero_copy_only=False)
    return values[array.offset * width : (array.offset + len(array)) * width].reshape(len(array), width)


def unit_query(v: np.ndarray) -> np.ndarray:
    """The query of a cosine index search, divided by its norm as pylance sums it."""
    norm = query_norm(v)
    return v / norm if norm > 0 else v


class IvfReader:
    """What every IVF index of pylance 14 shares: ``index.idx`` (type, metric, centroids), the
    partitions of ``auxiliary.idx`` and its ``_rowid`` column, and the probing loop. A subclass
    reads its own storage columns (``_load``) and measures one partition (``_distances``)."""

    #: the ``lance:index`` type this reader opens
    kind_name = ""

    def __init__(self, store: ix.IndexFileStore, field: pa.Field) -> None:
        where = f"{self.kind_name} index {getattr(store, 'directory', '')}"
        try:
            kind = json.loads(store.schema_metadata(INDEX_FILE)[INDEX_META_KEY])
        except (KeyError, ValueError) as exc:
            raise CorruptFileError(where, f"{INDEX_FILE} has no {INDEX_META_KEY!r} metadata") from exc
        if kind.get("type") != self.kind_name:
            raise CorruptFileError(
                where, f"{INDEX_FILE} holds a {kind.get('type')!r} index, not {self.kind_name}"
            )
        self.metric = str(kind.get("distance_type", "l2")).lower()
        if self.metric not in ("l2", "cosine", "dot"):
            raise UnsupportedFeatureError(f"{where}: distance type {self.metric!r} is not supported")
        ivf = _ivf(store, INDEX_FILE, where)
        self.centroids = tensor_array(ivf.centroids_tensor, where)
        if self.centroids.ndim != 2:
            raise CorruptFileError(where, f"{INDEX_FILE}: centroids of shape {self.centroids.shape}")
        self.loss = ivf.loss if ivf.HasField("loss") else None
        self.dimension = int(self.centroids.shape[1])
        try:
            storage = json.loads(json.loads(store.schema_metadata(AUX_FILE)[STORAGE_META_KEY])[0])
        except (KeyError, ValueError, IndexError, TypeError) as exc:
            raise CorruptFileError(where, f"{AUX_FILE}: bad {STORAGE_META_KEY!r} metadata") from exc
        parts = _ivf(store, AUX_FILE, where)
        self.offsets = np.array(parts.offsets, np.int64)
        self.lengths = np.array(parts.lengths, np.int64)
        if len(self.offsets) != len(self.centroids) or len(self.lengths) != len(self.centroids):
            raise CorruptFileError(where, f"{AUX_FILE}: partitions do not match the centroids")
        rows = store.num_rows(AUX_FILE)
        ends = self.offsets + self.lengths
        if int(self.lengths.sum()) != rows or (len(ends) and int(ends.max()) > rows):
            raise CorruptFileError(where, f"{AUX_FILE}: partitions cover {self.lengths.sum()} of {rows} rows")
        table = store.read_table(AUX_FILE)
        self.row_ids = table.column(ROW_ID_COLUMN).to_numpy(zero_copy_only=False).astype(np.uint64)
        try:
            self._load(store, storage, table, where)
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptFileError(where, f"{AUX_FILE}: bad storage ({type(exc).__name__}: {exc})") from exc

    def _load(self, store: ix.IndexFileStore, storage: dict[str, Any], table: pa.Table, where: str) -> None:
        raise NotImplementedError

    def _prepare(self, v: np.ndarray, parts: np.ndarray) -> Any:
        """Whatever ``_distances`` needs for several partitions, computed at once (PQ: tables)."""
        return None

    def _distances(self, v: np.ndarray, p: int, prepared: Any) -> np.ndarray:
        """float32 distance of the query to every row of partition ``p``."""
        raise NotImplementedError

    def _sub_index(self) -> dict[str, Any]:
        raise NotImplementedError

    # -- search --------------------------------------------------------------------------------

    def _partition_order(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.metric == "dot":
            score = np.float32(1.0) - self.centroids @ v
        else:
            delta = self.centroids - v
            score = np.einsum("pd,pd->p", delta, delta)
        order = np.argsort(score, kind="stable")
        return order, score

    def search(self, query: ix.VectorQuery) -> ix.VectorSearchResult:
        v = np.asarray(query.vector, np.float32).reshape(-1)
        if self.metric == "cosine":
            v = unit_query(v)
        order, score = self._partition_order(v)
        total = len(order)
        auto = query.minimum_nprobes is None and query.maximum_nprobes is None
        least = max(1, min(total, query.minimum_nprobes or 1))
        most = min(total, query.maximum_nprobes or total)
        least = min(least, most)
        if auto:  # pylance's default effort starts between 1 and all partitions, geometrically
            least = (
                most
                if self.metric == "dot"
                else min(most, max(least, math.ceil(total**AUTO_EFFORT_EXPONENT)))
            )
        heap = ProbeHeap(query.k)
        searched = 0
        prepared = self._prepare(v, order[:least])  # the partitions searched in any case, at once
        for rank in range(most):
            p = int(order[rank])
            if rank >= least and heap.full:
                if not auto or self.metric == "dot":
                    break
                gap = float(np.linalg.norm(self.centroids[p] - self.centroids[order[0]]))
                bound = (float(score[p]) - float(score[order[0]])) / (2 * gap) if gap > 0 else 0.0
                if bound > 0 and bound * bound > heap.kth:
                    break
            searched += 1
            if not self.lengths[p]:
                continue
            dist = self._distances(v, p, prepared[rank] if rank < least and prepared is not None else None)
            ids = self.row_ids[self.offsets[p] : self.offsets[p] + self.lengths[p]]
            keep = ~np.isnan(dist)
            if query.allowed is not None:
                keep &= query.allowed(ids)
            if not keep.all():
                dist, ids = dist[keep], ids[keep]
            heap.feed(dist, ids)
        ids, dist = heap.result()
        return ix.VectorSearchResult(ids, dist, searched)

    def statistics(self) -> dict[str, Any]:
        return {
            "index_type": self.kind_name,
            "metric_type": self.metric,
            "num_partitions": len(self.centroids),
            "sub_index": self._sub_index(),
            "partitions": [{"size": int(n)} for n in self.lengths],
            "centroids": self.centroids.tolist(),
            "loss": self.loss,
            "index_file_version": "V3",
        }


class IvfPqReader(IvfReader):
    """An opened IVF_PQ segment: centroids, codebook, and every row's id and code, held in memory
    (the codes are ``num_sub_vectors`` bytes per row, the row ids 8)."""

    kind_name = "IVF_PQ"

    def _load(self, store: ix.IndexFileStore, storage: dict[str, Any], table: pa.Table, where: str) -> None:
        nbits, m = int(storage["nbits"]), int(storage["num_sub_vectors"])
        dim, position = int(storage["dimension"]), int(storage["codebook_position"])
        transposed = bool(storage.get("transposed", False))
        if nbits != SUPPORTED_NBITS:
            raise UnsupportedFeatureError(f"{where}: {nbits}-bit PQ codes are not supported (8 only)")
        if dim != self.dimension or dim % m:
            raise CorruptFileError(where, f"dimension {dim} does not fit {m} sub-vectors / the centroids")
        book = vector_index_pb2.Tensor()
        book.ParseFromString(store.global_buffer(AUX_FILE, position))
        centroids_per_book = 1 << nbits
        self.codebook = tensor_array(book, where).reshape(m, centroids_per_book, dim // m)
        self.num_sub_vectors, self.nbits = m, nbits
        flat = _fsl_values(table.column(CODE_COLUMN), m).ravel()
        #: per partition, an (m, length) matrix of indices into the flattened (m, 256) distance table
        self._codes: list[np.ndarray] = []
        shift = (np.arange(m, dtype=np.int32) * centroids_per_book)[:, None]
        for offset, length in zip(self.offsets.tolist(), self.lengths.tolist(), strict=True):
            block = flat[offset * m : (offset + length) * m]
            block = block.reshape(m, length) if transposed else block.reshape(length, m).T
            self._codes.append(block.astype(np.int32) + shift)

    def _prepare(self, v: np.ndarray, parts: np.ndarray) -> np.ndarray:
        """(len(parts), m * 256) tables of sub-vector distances to every codeword, one per
        partition, as pylance's kernels round them (``linalg.table_distances``): squared L2 from
        the residual ``v - centroid``'s sub-vectors, or for dot ``1 - v_m . codeword`` (one table
        for all partitions)."""
        m, book = self.num_sub_vectors, self.codebook.astype(np.float32, copy=False)
        if self.metric == "dot":
            one = table_distances("dot", v.reshape(m, -1), book).ravel()
            return np.broadcast_to(one, (len(parts), one.size))
        tables = np.empty((len(parts), book.shape[0] * book.shape[1]), np.float32)
        step = max(1, TABLE_FLOATS // book.size)  # bounds the kernel's temporaries
        for first in range(0, len(parts), step):
            group = parts[first : first + step]
            residual = (v - self.centroids[group]).astype(np.float32).reshape(len(group), m, -1)
            tables[first : first + len(group)] = table_distances("l2", residual, book).reshape(len(group), -1)
        return tables

    def _distances(self, v: np.ndarray, p: int, prepared: Any) -> np.ndarray:
        """The sum of each row's table entries, sub-vector by sub-vector as pylance adds them;
        for dot ``m - 1`` is then taken off (each entry holds a ``1 - ...``)."""
        table = prepared if prepared is not None else self._prepare(v, np.array([p]))[0]
        dist = table[self._codes[p]].sum(axis=0, dtype=np.float32)
        if self.metric == "dot":
            dist -= np.float32(self.num_sub_vectors - 1)
        return dist

    def _sub_index(self) -> dict[str, Any]:
        return {
            "metric_type": "l2" if self.metric == "cosine" else self.metric,  # PQ of normalised vectors
            "nbits": self.nbits,
            "num_sub_vectors": self.num_sub_vectors,
            "dimension": self.dimension,
            "index_type": "PQ",
            "transposed": True,
        }


class IvfType:
    """What every IVF index type shares (``VectorIndexType``): ``index_ivf_pq_train`` partitions
    the vectors for each; a subclass names its reader and how the partitioned rows are stored,
    trained (``storage``) or with an existing index's codebook or bounds (``kept_storage``)."""

    name = display_name = ""
    type_url = TYPE_URL
    index_version = IVF_PQ_INDEX_VERSION
    reader: type[IvfReader] = IvfReader

    def holds_row_ids(self, index_version: int) -> bool:
        return True  # on a dataset with stable row ids, as pylance 14's

    def details(self, params: ix.Params) -> bytes:
        return details_bytes(params, self.name)

    def check(self, field: pa.Field, params: ix.Params) -> None:
        check_params(field, params, self.name)

    def train(
        self, batches: ix.Batches, field: pa.Field, params: ix.Params, store: ix.IndexFileStore
    ) -> None:
        train_mod.train(batches, field, params, store, self.name, self.storage)

    def rebuild(
        self, batches: ix.Batches, field: pa.Field, old: ix.IndexFileStore, store: ix.IndexFileStore
    ) -> None:
        model = self.reader(old, field)
        storage = self.kept_storage(model)
        train_mod.rebuild(batches, field, store, self.name, model.metric, model.centroids, storage)

    def load(self, store: ix.IndexFileStore, field: pa.Field) -> IvfReader:
        return self.reader(store, field)

    def storage(self, ivf: Partitioned, params: Mapping[str, Any]) -> Storage:
        """The stored rows of a freshly trained index."""
        raise NotImplementedError

    def kept_storage(self, model: IvfReader) -> Callable[[Partitioned], Storage]:
        """The stored rows of a rebuilt index, with ``model``'s codebook or bounds."""
        raise NotImplementedError


class IvfPqType(IvfType):
    """The IVF_PQ index type (``VectorIndexType``)."""

    name = display_name = "IVF_PQ"
    reader = IvfPqReader

    def storage(self, ivf: Partitioned, params: Mapping[str, Any]) -> Storage:
        return train_mod.pq_storage(ivf, params)

    def kept_storage(self, model: IvfReader) -> Callable[[Partitioned], Storage]:
        assert isinstance(model, IvfPqReader)  # ``reader`` above
        return lambda ivf: train_mod.pq_encoded(ivf, model.codebook)


@hookimpl(trylast=True)
def lance_vector_index_types() -> dict[str, Any]:
    from lance_fw_plugins.index_ivf_pq_variants import IvfFlatType, IvfSqType  # they import this module

    return {"IVF_PQ": IvfPqType(), "IVF_FLAT": IvfFlatType(), "IVF_SQ": IvfSqType()}
