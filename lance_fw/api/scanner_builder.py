"""``ScannerBuilder``: pylance's fluent way to set a scan's options one call at a time.

Why a thin builder: every option it sets is a ``LanceDataset.scanner()`` keyword, so ``to_scanner``
hands the options set to ``ds.scanner(**options)`` and the scan (with what it refuses, such as
``order_by=`` or ``scan_stats_callback=``) is the one ``scanner()`` runs. The builder itself checks
what pylance's checks when a method is called (negative limits, unknown ``blob_handling``, wrong
argument types), so the same mistakes fail at the same call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw.api.dataset_names import ColumnOrdering, VectorSearchQuery
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.query.fts_more import MinHashQuery
from lance_fw.query.fts_queries import FullTextQuery

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset
    from lance_fw.query.scanner import LanceScanner

#: pylance's accepted ``blob_handling`` values
BLOB_HANDLING = ("all_binary", "all_descriptions", "blobs_descriptions")
#: ``nearest`` keywords and the value that means "not given" (left out of the scan's dict)
_NEAREST_DEFAULTS: dict[str, Any] = {
    "k": None,
    "metric": None,
    "nprobes": None,
    "minimum_nprobes": None,
    "maximum_nprobes": None,
    "refine_factor": None,
    "use_index": True,
    "ef": None,
    "query_parallelism": None,
    "approx_mode": "normal",
    "distance_range": None,
    "search_effort": None,
}


def _non_negative(name: str, value: int | None) -> None:
    if value is not None and int(value) < 0:
        raise ValueError(f"{name} must be non-negative")


class ScannerBuilder:
    """Collects scan options for one dataset; ``to_scanner()`` builds the ``LanceScanner``."""

    def __init__(self, ds: LanceDataset) -> None:
        self.ds = ds
        self._options: dict[str, Any] = {}

    def _set(self, key: str, value: Any) -> ScannerBuilder:
        self._options[key] = value
        return self

    def apply_defaults(self, default_opts: dict[str, Any]) -> ScannerBuilder:
        """Call the setter named by each key with its value (a dict value as keywords)."""
        for key, value in default_opts.items():
            setter = getattr(self, key, None)
            if setter is None:
                raise ValueError(f"Unknown option {key}")
            if isinstance(value, dict):
                setter(**value)
            else:
                setter(value)
        return self

    def batch_size(self, batch_size: int) -> ScannerBuilder:
        return self._set("batch_size", batch_size)

    def batch_size_bytes(self, batch_size_bytes: int) -> ScannerBuilder:
        return self._set("batch_size_bytes", batch_size_bytes)

    def io_buffer_size(self, io_buffer_size: int) -> ScannerBuilder:
        return self._set("io_buffer_size", io_buffer_size)

    def batch_readahead(self, nbatches: int | None = None) -> ScannerBuilder:
        if nbatches is not None and int(nbatches) <= 0:
            raise ValueError("batch_readahead must be greater than 0")
        return self._set("batch_readahead", nbatches)

    def fragment_readahead(self, nfragments: int | None = None) -> ScannerBuilder:
        _non_negative("fragment_readahead", nfragments)
        return self._set("fragment_readahead", nfragments)

    def scan_in_order(self, scan_in_order: bool = True) -> ScannerBuilder:
        return self._set("scan_in_order", scan_in_order)

    def limit(self, n: int | None = None) -> ScannerBuilder:
        if n is not None and int(n) < 0:
            raise ValueError("Limit must be non-negative")
        return self._set("limit", n)

    def offset(self, n: int | None = None) -> ScannerBuilder:
        if n is not None and int(n) < 0:
            raise ValueError("Offset must be non-negative")
        return self._set("offset", n)

    def columns(self, cols: list[str] | dict[str, str] | None = None) -> ScannerBuilder:
        if cols is not None and not isinstance(cols, (list, dict)):
            raise TypeError(f"columns must be a list or dict[name, expression], got {type(cols)}")
        return self._set("columns", cols)

    def filter(
        self, filter: str | pa.compute.Expression | FullTextQuery | VectorSearchQuery | dict
    ) -> ScannerBuilder:
        """A SQL string or pyarrow expression filters rows; pylance's search filters (a full-text
        or vector query as a filter) are refused: lance_fw filters with expressions only."""
        if isinstance(filter, (FullTextQuery, VectorSearchQuery)):
            raise UnsupportedFeatureError(
                "ScannerBuilder.filter: a search query as a filter is not supported by lance_fw "
                "(use full_text_search() or nearest())"
            )
        if isinstance(filter, (str, pa.compute.Expression)):
            return self._set("filter", filter)
        expr_filter = filter.get("expr_filter")
        if expr_filter is not None:
            self.filter(expr_filter)
        search_filter = filter.get("search_filter")
        if search_filter is not None:
            self.filter(search_filter)
        return self

    def row_addr_prefilter(
        self, allowlist: bytes | None = None, blocklist: bytes | None = None
    ) -> ScannerBuilder:
        self._set("row_addr_allowlist", allowlist)
        return self._set("row_addr_blocklist", blocklist)

    def prefilter(self, prefilter: bool) -> ScannerBuilder:
        return self._set("prefilter", prefilter)

    def with_row_id(self, with_row_id: bool = True) -> ScannerBuilder:
        return self._set("with_row_id", with_row_id)

    def with_row_address(self, with_row_address: bool = True) -> ScannerBuilder:
        return self._set("with_row_address", with_row_address)

    def late_materialization(self, late_materialization: bool | list[str]) -> ScannerBuilder:
        return self._set("late_materialization", late_materialization)

    def blob_handling(self, blob_handling: str | None) -> ScannerBuilder:
        if blob_handling is not None and blob_handling not in BLOB_HANDLING:
            raise ValueError(
                f"Invalid blob_handling: {blob_handling}. Expected one of: " + ", ".join(BLOB_HANDLING)
            )
        return self._set("blob_handling", blob_handling)

    def use_stats(self, use_stats: bool = True) -> ScannerBuilder:
        return self._set("use_stats", use_stats)

    def use_scalar_index(self, use_scalar_index: bool = True) -> ScannerBuilder:
        return self._set("use_scalar_index", use_scalar_index)

    def with_fragments(self, fragments: Iterable[Any] | None) -> ScannerBuilder:
        """Scan only these fragments (``LanceFragment`` objects, as pylance requires)."""
        from lance_fw.api.dataset import LanceFragment

        chosen = None if fragments is None else list(fragments)
        for f in chosen or ():
            if not isinstance(f, LanceFragment):
                raise TypeError(f"fragments must be an iterable of LanceFragment. Got {type(f)} instead.")
        return self._set("fragments", chosen)

    def with_index_segments(self, index_segments: Iterable[Any] | None) -> ScannerBuilder:
        return self._set("index_segments", None if index_segments is None else list(index_segments))

    def nearest(
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
        distance_range: tuple[float | None, float | None] | None = None,
        search_effort: float | None = None,
    ) -> ScannerBuilder:
        """A vector search: the ``nearest=`` dict of the keywords given (defaults left out)."""
        given = {
            "k": k,
            "metric": metric,
            "nprobes": nprobes,
            "minimum_nprobes": minimum_nprobes,
            "maximum_nprobes": maximum_nprobes,
            "refine_factor": refine_factor,
            "use_index": use_index,
            "ef": ef,
            "query_parallelism": query_parallelism,
            "approx_mode": approx_mode,
            "distance_range": distance_range,
            "search_effort": search_effort,
        }
        nearest = {"column": column, "q": q}
        nearest.update({key: v for key, v in given.items() if v != _NEAREST_DEFAULTS[key]})
        return self._set("nearest", nearest)

    def fast_search(self, flag: bool) -> ScannerBuilder:
        return self._set("fast_search", flag)

    def include_deleted_rows(self, flag: bool) -> ScannerBuilder:
        return self._set("include_deleted_rows", flag)

    def full_text_search(
        self, query: str | FullTextQuery, columns: list[str] | None = None
    ) -> ScannerBuilder:
        if isinstance(query, FullTextQuery):
            return self._set("full_text_query", query)
        return self._set("full_text_query", {"query": query, "columns": columns})

    def minhash_search(self, query: MinHashQuery) -> ScannerBuilder:
        """Refused at ``to_scanner``: lance_fw has no MinHash LSH index (pylance's type check first)."""
        if not isinstance(query, MinHashQuery):
            raise TypeError(f"minhash_search expects a MinHashQuery, got {type(query).__name__}")
        return self._set("minhash_query", query)

    def scan_stats_callback(self, callback: Callable[[Any], None]) -> ScannerBuilder:
        return self._set("scan_stats_callback", callback)

    def strict_batch_size(self, strict_batch_size: bool = False) -> ScannerBuilder:
        return self._set("strict_batch_size", strict_batch_size)

    def order_by(self, orderings: list[ColumnOrdering] | None) -> ScannerBuilder:
        for order in orderings or ():
            if not isinstance(order, ColumnOrdering):
                raise TypeError(f"orderings must be a list of ColumnOrdering. Got {type(order)} instead.")
        return self._set("order_by", None if orderings is None else list(orderings))

    def disable_scoring_autoprojection(self, disable: bool = True) -> ScannerBuilder:
        return self._set("disable_scoring_autoprojection", disable)

    def substrait_aggregate(self, aggregate: bytes) -> ScannerBuilder:
        return self._set("substrait_aggregate", aggregate)

    def to_scanner(self) -> LanceScanner:
        """``ds.scanner(**options)`` with the options set.

        Raises:
            UnsupportedFeatureError: a MinHash search or a Substrait aggregate (lance_fw has neither),
                or an option ``scanner()`` itself refuses.
        """
        options = dict(self._options)
        for key, what in (
            ("minhash_query", "a MinHash search"),
            ("substrait_aggregate", "a Substrait aggregate"),
        ):
            if options.pop(key, None) is not None:
                raise UnsupportedFeatureError(f"ScannerBuilder: {what} is not supported by lance_fw")
        return self.ds.scanner(**options)


__all__ = ["BLOB_HANDLING", "ScannerBuilder"]
