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

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw._util.refusals import refused_function

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

#: The module name pylance users import these helpers from
_MODULE = "lance.vector"


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
train_pq_codebook_on_accelerator = refused_function(_MODULE, "train_pq_codebook_on_accelerator", ACCELERATOR)
train_ivf_centroids_on_accelerator = refused_function(
    _MODULE, "train_ivf_centroids_on_accelerator", ACCELERATOR
)
compute_pq_codes = refused_function(_MODULE, "compute_pq_codes", ACCELERATOR)
compute_partitions = refused_function(_MODULE, "compute_partitions", ACCELERATOR)
one_pass_train_ivf_pq_on_accelerator = refused_function(
    _MODULE, "one_pass_train_ivf_pq_on_accelerator", ACCELERATOR
)
one_pass_assign_ivf_pq_on_accelerator = refused_function(
    _MODULE, "one_pass_assign_ivf_pq_on_accelerator", ACCELERATOR
)

# -- refused: vector index internals -------------------------------------------------------------
find_duplicate_pairs = refused_function(_MODULE, "find_duplicate_pairs", INDEX_INTERNALS)
find_duplicate_pairs_in_partition = refused_function(
    _MODULE, "find_duplicate_pairs_in_partition", INDEX_INTERNALS
)
hamming_clustering_for_ivf_partition = refused_function(
    _MODULE, "hamming_clustering_for_ivf_partition", INDEX_INTERNALS
)
get_ivf_partition_info = refused_function(_MODULE, "get_ivf_partition_info", INDEX_INTERNALS)
hamming_clustering_for_sample = refused_function(
    _MODULE,
    "hamming_clustering_for_sample",
    "its random sample and its representative choice (native union-find order) cannot be reproduced",
)
hamming_clustering_for_range = refused_function(
    _MODULE,
    "hamming_clustering_for_range",
    "the representative and output order of its native union-find are not specified",
)


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
