"""pylance's ``lance.dataset`` records and helpers beyond the dataset classes themselves:
``ColumnOrdering``, ``serialize_row_addrs``, ``VectorSearchQuery``, the ``TypedDict`` shapes
(``IndexInformation``, ``BulkCommitResult``, ``Branch``), and the features lance_fw refuses by
name (branches, version deltas, SQL queries, vector index readers).

Why records work while their features may not: a record only holds what the user gives it, so it
behaves as pylance's; what consumes it (a scanner's ``order_by=``, ``row_addr_allowlist=``, a
search filter) says for itself when lance_fw cannot honour it.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import pyarrow as pa
import pyroaring

from lance_fw._util.refusals import BRANCHES, refused_function

#: The module pylance users import these from
_MODULE = "lance.dataset"
#: ``serialize_row_addrs``: a row address is the fragment id (high 32 bits) and the row offset
ROW_OFFSET_BITS = 32
_ROW_OFFSET_MASK = (1 << ROW_OFFSET_BITS) - 1
#: Lance's row-address tree map serialization: a u32 count of fragments, then per fragment (ascending
#: ids) its u32 id, the u32 byte length of its roaring bitmap and the bitmap (portable format)
_COUNT = struct.Struct("<I")
_ENTRY = struct.Struct("<II")
#: ``VectorSearchQuery``'s approximation modes (pylance's literal)
APPROX_MODES = ("fast", "normal", "accurate")


@dataclass
class ColumnOrdering:
    """One sort key of a scan's ``order_by=`` (pylance's record): column, direction, nulls."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


def serialize_row_addrs(addrs: Iterable[int]) -> bytes:
    """Row addresses as the serialized roaring tree map pylance's ``row_addr_allowlist`` /
    ``row_addr_blocklist`` take (byte for byte pylance's ``serialize_row_addrs``, which never
    run-compresses a container): addresses are
    grouped by fragment id, each fragment's row offsets one 32-bit roaring bitmap.

    Raises:
        ValueError: an address that is negative or does not fit 64 bits.
    """
    by_fragment: dict[int, list[int]] = {}
    for addr in addrs:
        value = int(addr)
        if value < 0 or value >> 64:
            raise ValueError(f"row address {value} is not an unsigned 64-bit integer")
        by_fragment.setdefault(value >> ROW_OFFSET_BITS, []).append(value & _ROW_OFFSET_MASK)
    out = [_COUNT.pack(len(by_fragment))]
    for fragment_id in sorted(by_fragment):
        bitmap = pyroaring.BitMap(by_fragment[fragment_id], optimize=False).serialize()
        out.append(_ENTRY.pack(fragment_id, len(bitmap)))
        out.append(bitmap)
    return b"".join(out)


def _query_vector(q: Any) -> pa.Array:
    """``q`` as pylance's search query holds it: a float array (lists and numpy through float64 to
    float32, integer arrays cast to float32), or a list<float32> array for several vectors.

    Raises:
        TypeError: a value that is no float vector; ValueError: vectors of unequal lengths.
    """
    if hasattr(q, "__getitem__") and not isinstance(q, (str, bytes, pa.Array)) and len(q) > 0:
        if isinstance(q[0], (list, tuple, np.ndarray, pa.Array)):
            dim = len(q[0])
            vectors = []
            for vector in q:
                if len(vector) != dim:
                    raise ValueError(
                        f"All query vectors must have the same length, but got {dim} and {len(vector)}"
                    )
                vectors.append(_query_vector(vector))
            return pa.array(vectors, type=pa.list_(pa.float32()))
    if isinstance(q, pa.Scalar) and isinstance(q.type, pa.FixedSizeListType):
        q = q.values
    elif isinstance(q, (list, tuple, np.ndarray)):
        q = pa.array(np.asarray(q, dtype=np.float64).astype(np.float32))
    elif not isinstance(q, pa.Array):
        try:
            q = pa.array(q)
        except (TypeError, ValueError, pa.ArrowException) as error:
            raise TypeError(
                f"Query vectors should be an array of floats, got {type(q)} which we cannot coerce to a float array"
            ) from error
    if pa.types.is_integer(q.type):
        return q.cast(pa.float32())
    if not pa.types.is_floating(q.type):
        raise TypeError(f"query vector must be list-like or pa.FloatingPointArray but received {q.type}")
    return q


def _check_search(options: dict[str, Any]) -> None:
    """pylance's checks of a vector search's numbers (``ValueError`` as pylance raises them)."""
    given: dict[str, Any] = {key: value for key, value in options.items() if value is not None}
    if "k" in given and int(given["k"]) <= 0:
        raise ValueError(f"Nearest-K must be > 0 but got {given['k']}")
    if "search_effort" not in given and "nprobes" in given and int(given["nprobes"]) <= 0:
        raise ValueError(f"Nprobes must be > 0 but got {given['nprobes']}")
    for key, label in (("minimum_nprobes", "Minimum nprobes"), ("maximum_nprobes", "Maximum nprobes")):
        if key in given and int(given[key]) < 0:
            raise ValueError(f"{label} must be >= 0 but got {given[key]}")
    if "minimum_nprobes" in given and "maximum_nprobes" in given:
        if given["minimum_nprobes"] > given["maximum_nprobes"]:
            raise ValueError("minimum_nprobes must be <= maximum_nprobes")
    if "refine_factor" in given and int(given["refine_factor"]) < 1:
        raise ValueError(f"Refine factor must be 1 or more got {given['refine_factor']}")
    if "ef" in given and int(given["ef"]) <= 0:
        raise ValueError(f"ef must be > 0 but got {given['ef']}")
    if "query_parallelism" in given and given["query_parallelism"] < -1:
        raise ValueError("query_parallelism must be >= -1")
    if options.get("approx_mode") not in APPROX_MODES:
        raise ValueError(
            f"approx_mode must be one of 'fast', 'normal', or 'accurate', got {options.get('approx_mode')!r}"
        )


class VectorSearchQuery:
    """Vector search parameters as a record (pylance's ``VectorSearchQuery``): ``inner()`` gives
    them as pylance's dict, checked and with the query as pylance coerces it. Used as a search
    *filter* (``ScannerBuilder.filter``) it is refused there; pass ``nearest=`` for a search."""

    _inner: dict[str, Any]

    def __init__(
        self,
        column: str,
        q: Any,
        k: int | None = None,
        metric: str | None = None,
        nprobes: int | None = None,
        minimum_nprobes: int | None = None,
        maximum_nprobes: int | None = None,
        refine_factor: int | None = None,
        use_index: bool = True,
        ef: int | None = None,
        query_parallelism: int | None = None,
        approx_mode: str = "normal",
        search_effort: float | None = None,
    ) -> None:
        vector = _query_vector(q)
        self._inner = {
            "column": column,
            "q": vector,
            "k": k,
            "metric": metric,
            "nprobes": nprobes,
            "minimum_nprobes": minimum_nprobes,
            "maximum_nprobes": maximum_nprobes,
            "refine_factor": refine_factor,
            "use_index": use_index,
            "ef": ef,
            "query_parallelism": None if query_parallelism is None else operator.index(query_parallelism),
            "approx_mode": approx_mode,
            "search_effort": search_effort,
            "distance_range": None,
        }
        _check_search(self._inner)

    def inner(self) -> dict[str, Any]:
        return self._inner


class IndexInformation(TypedDict):
    """One index segment as pylance's ``list_indices`` describes it (a dict shape)."""

    name: str
    type: str
    uuid: str
    fields: list[str]
    version: int
    fragment_ids: Any
    base_id: int | None


class BulkCommitResult(TypedDict):
    """What pylance's ``commit_batch`` returns (a dict shape; ``commit_batch`` is refused)."""

    dataset: Any
    merged: Any


class Branch(TypedDict):
    """One branch as pylance's ``Branches.list`` describes it (a dict shape; branches are refused)."""

    parent_branch: str | None
    branch_identifier: list[tuple[int, str]]
    parent_version: int
    create_at: int
    manifest_size: int
    metadata: dict[str, str]


#: Why SQL queries are refused
SQL = "SQL queries over a dataset are not implemented (see lance_fw.duckdb)"
#: Why version deltas are refused
DELTA = "version deltas are not implemented"
#: Why the vector index reader is refused
VECTOR_INDEX_READER = (
    "it reads the partitions, centroids and codes of a native IVF vector index, which lance_fw "
    "does not expose"
)

Branches = refused_function(_MODULE, "Branches", BRANCHES)
DatasetDelta = refused_function(_MODULE, "DatasetDelta", DELTA)
SqlQuery = refused_function(_MODULE, "SqlQuery", SQL)
SqlQueryBuilder = refused_function(_MODULE, "SqlQueryBuilder", SQL)
VectorIndexReader = refused_function(_MODULE, "VectorIndexReader", VECTOR_INDEX_READER)

__all__ = [
    "Branch",
    "Branches",
    "BulkCommitResult",
    "ColumnOrdering",
    "DatasetDelta",
    "IndexInformation",
    "SqlQuery",
    "SqlQueryBuilder",
    "VectorIndexReader",
    "VectorSearchQuery",
    "serialize_row_addrs",
]
