"""``lance_fw.vector``: pylance's ``lance.vector`` -- building vector tables, and the GPU / index
helpers, which lance_fw refuses by name.

``vec_to_table`` is plain pyarrow and behaves as pylance's. The rest need what lance_fw does not
have: a torch accelerator and pylance's torch k-means (``*_on_accelerator``, ``compute_partitions``,
``compute_pq_codes``, whose results depend on that k-means' sampling and training), or the
internals of a Rust vector index (IVF partitions, segment staging, duplicate-pair tiling, hamming
union-find order). Each raises ``UnsupportedFeatureError`` saying which: an approximation would
return other rows, partitions or codes than pylance without saying so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

import numpy as np
import pyarrow as pa

from lance_fw._util.refusals import REFUSED_MARK
from lance_fw.errors import UnsupportedFeatureError

#: Column names of ``vec_to_table``'s table from a dict (ids, vectors) and from a list or array
_DICT_NAMES = ["id", "vector"]
_LIST_NAMES = ["vector"]

#: Why the accelerator helpers are refused
ACCELERATOR = (
    "training and assignment on an accelerator need torch and pylance's torch k-means "
    "(lance.torch), whose sampled, trained models lance_fw cannot reproduce"
)
#: Why the helpers reading a vector index's internals are refused
INDEX_INTERNALS = (
    "it reads the partitions and codes of a native IVF vector index (segments, staging, "
    "union-find order), which lance_fw does not expose"
)

F = TypeVar("F", bound=Callable[..., Any])


def _refused(why: str) -> Callable[[F], F]:
    """Make a function (kept for its pylance signature) raise ``UnsupportedFeatureError``."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def stub(*args: object, **kwargs: object) -> NoReturn:
            raise UnsupportedFeatureError(f"lance.vector.{fn.__name__} is not supported by lance_fw: {why}")

        setattr(stub, REFUSED_MARK, why)
        return stub  # type: ignore[return-value]

    return decorate


def _check_ndim(vectors: Iterable[Sequence[float]], ndim: int | None) -> int | None:
    for vector in vectors:
        if ndim is None:
            ndim = len(vector)
        elif ndim != len(vector):
            raise ValueError(f"Expected {ndim} dimensions but got {len(vector)} for {vector}")
    return ndim


def _fixed_size_list(vectors: Any, ndim: int | None) -> pa.FixedSizeListArray:
    """float32 vectors of ``ndim`` values (the first vector's length when None)."""
    if ndim is None:
        ndim = len(next(iter(vectors)))
    values = np.array(vectors, dtype="float32").ravel()
    return pa.FixedSizeListArray.from_arrays(values, list_size=ndim)


def vec_to_table(
    data: dict[Any, Any] | list[Any] | np.ndarray,
    names: str | list[str] | None = None,
    ndim: int | None = None,
    check_ndim: bool = True,
) -> pa.Table:
    """A table of float32 ``fixed_size_list`` vectors: from a dict, its keys as an ``id`` column
    (names default ``["id", "vector"]``); from a list or 2-d array, one vector per row (name
    default ``"vector"``).

    Raises:
        ValueError: vectors of different lengths (``check_ndim``), or ``ndim`` not their length.
        NotImplementedError: ``data`` of another type (pylance's class).
    """
    if isinstance(data, dict):
        names = list(_DICT_NAMES) if names is None else names
        vectors = list(data.values())
        if check_ndim:
            ndim = _check_ndim(vectors, ndim)
        arrays = [pa.array(data.keys()), _fixed_size_list(vectors, ndim)]
    elif isinstance(data, (list, np.ndarray)):
        names = list(_LIST_NAMES) if names is None else [names] if isinstance(names, str) else names
        if check_ndim:
            ndim = _check_ndim(data, ndim)
        arrays = [_fixed_size_list(data, ndim)]
    else:
        raise NotImplementedError(
            f"data must be dict, list, or ndarray (require numpy installed), got {type(data)} instead"
        )
    return pa.Table.from_arrays(arrays, names=names)


# -- refused: accelerator training and assignment ------------------------------------------------
@_refused(ACCELERATOR)
def train_pq_codebook_on_accelerator(
    dataset: Any,
    metric_type: Any,
    accelerator: Any,
    num_sub_vectors: int,
    batch_size: int = 1024 * 10 * 4,
    dtype: Any = np.float32,
) -> tuple[np.ndarray, list[Any]]:
    raise AssertionError("refused")


@_refused(ACCELERATOR)
def train_ivf_centroids_on_accelerator(
    dataset: Any,
    column: str,
    k: int,
    metric_type: Any,
    accelerator: Any,
    batch_size: int = 1024 * 10 * 4,
    *,
    sample_rate: int = 256,
    max_iters: int = 50,
    filter_nan: bool = True,
) -> tuple[np.ndarray, Any]:
    raise AssertionError("refused")


@_refused(ACCELERATOR)
def compute_pq_codes(
    dataset: Any,
    kmeans_list: list[Any],
    batch_size: int = 1024 * 10 * 4,
    dst_dataset_uri: Any = None,
    allow_cuda_tf32: bool = True,
) -> tuple[Any, list[str]]:
    raise AssertionError("refused")


@_refused(ACCELERATOR)
def compute_partitions(
    dataset: Any,
    column: str,
    kmeans: Any,
    batch_size: int = 1024 * 10 * 4,
    dst_dataset_uri: Any = None,
    allow_cuda_tf32: bool = True,
    num_sub_vectors: int | None = None,
    filter_nan: bool = True,
    sample_size: int | None = None,
) -> str:
    raise AssertionError("refused")


@_refused(ACCELERATOR)
def one_pass_train_ivf_pq_on_accelerator(
    dataset: Any,
    column: str,
    k: int,
    metric_type: Any,
    accelerator: Any,
    num_sub_vectors: int,
    batch_size: int = 1024 * 10 * 4,
    *,
    sample_rate: int = 256,
    max_iters: int = 50,
    filter_nan: bool = True,
) -> Any:
    raise AssertionError("refused")


@_refused(ACCELERATOR)
def one_pass_assign_ivf_pq_on_accelerator(
    dataset: Any,
    column: str,
    metric_type: Any,
    accelerator: Any,
    ivf_kmeans: Any,
    pq_kmeans_list: list[Any],
    dst_dataset_uri: Any = None,
    batch_size: int = 1024 * 10 * 4,
    *,
    filter_nan: bool = True,
    allow_cuda_tf32: bool = True,
) -> Any:
    raise AssertionError("refused")


# -- refused: vector index internals -------------------------------------------------------------
@_refused(INDEX_INTERNALS)
def find_duplicate_pairs(
    dataset: Any,
    column: str,
    distance_threshold: float,
    *,
    memory_limit: int | None = None,
    max_concurrency: int | None = None,
) -> pa.RecordBatchReader:
    raise AssertionError("refused")


@_refused(INDEX_INTERNALS)
def find_duplicate_pairs_in_partition(
    dataset: Any,
    column: str,
    segment_id: Any,
    partition_id: int,
    distance_threshold: float,
    *,
    memory_limit: int | None = None,
    max_concurrency: int | None = None,
) -> pa.RecordBatchReader:
    raise AssertionError("refused")


@_refused(INDEX_INTERNALS)
def hamming_clustering_for_ivf_partition(
    dataset: Any,
    index_name: str,
    partition_id: int,
    hamming_threshold: int,
    *,
    index_segments: Iterable[Any] | None = None,
) -> pa.RecordBatchReader:
    raise AssertionError("refused")


@_refused(INDEX_INTERNALS)
def get_ivf_partition_info(
    dataset: Any, index_name: str, *, index_segments: Iterable[Any] | None = None
) -> list[dict[str, Any]]:
    raise AssertionError("refused")


@_refused("its random sample and its representative choice (native union-find order) cannot be reproduced")
def hamming_clustering_for_sample(
    dataset: Any, column: str, sample_size: int | None = None, hamming_threshold: int = 10
) -> pa.RecordBatchReader:
    raise AssertionError("refused")


@_refused("the representative and output order of its native union-find are not specified")
def hamming_clustering_for_range(
    dataset: Any, column: str, fragment_id: int, start_row: int, num_rows: int, hamming_threshold: int = 10
) -> pa.RecordBatchReader:
    raise AssertionError("refused")


__all__ = [
    "compute_partitions",
    "compute_pq_codes",
    "find_duplicate_pairs",
    "find_duplicate_pairs_in_partition",
    "get_ivf_partition_info",
    "hamming_clustering_for_ivf_partition",
    "hamming_clustering_for_range",
    "hamming_clustering_for_sample",
    "one_pass_assign_ivf_pq_on_accelerator",
    "one_pass_train_ivf_pq_on_accelerator",
    "train_ivf_centroids_on_accelerator",
    "train_pq_codebook_on_accelerator",
    "vec_to_table",
]
