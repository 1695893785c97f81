"""pylance's scalar-index calls: argument checks, then ``table/indices.py``.

Why a module of its own: ``LanceDataset`` only forwards to these functions, so ``api/dataset.py``
stays small and the checks of pylance's index arguments live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lance_fw.errors import IndexNotFoundError, InvalidArgumentError
from lance_fw.options import refuse
from lance_fw.table import indices as table_indices
from lance_fw.table import vector_indices

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


def create_scalar_index(
    ds: LanceDataset,
    column: str | list[str],
    index_type: str,
    name: str | None,
    replace: bool,
    train: bool,
    fragment_ids: list[int] | None,
    index_uuid: str | None,
    progress_callback: Any,
    format_version: int | str | None,
    params: Mapping[str, Any],
) -> None:
    """Build and commit the index; ``ds`` moves to the version created."""
    refuse(
        "create_scalar_index",
        {
            "fragment_ids": fragment_ids,
            "index_uuid": index_uuid,
            "progress_callback": progress_callback,
            "format_version": format_version,
        },
        {},
    )
    for option, value in (("replace", replace), ("train", train)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{option} must be a bool, got {value!r}")
    version = table_indices.create_scalar_index(
        ds._snapshot, table_indices.IndexRequest(column, index_type, name, replace, dict(params), train)
    )
    ds._move_to(version)


def create_index(
    ds: LanceDataset,
    column: str | list[str],
    index_type: str,
    name: str | None,
    metric: str,
    replace: bool,
    num_partitions: int | None,
    num_sub_vectors: int | None,
    refused: dict[str, Any],
    params: Mapping[str, Any],
) -> None:
    """pylance's ``create_index``: a vector index type through ``table/indices.py``'s vector path
    (a scalar type name goes to ``create_scalar_index``, as in pylance)."""
    refuse("create_index", refused, {"filter_nan": True, "train": True, "skip_transpose": False})
    if not isinstance(replace, bool):
        raise InvalidArgumentError(f"replace must be a bool, got {replace!r}")
    if isinstance(index_type, str) and index_type.upper() in table_indices.index_types():
        create_scalar_index(ds, column, index_type, name, replace, True, None, None, None, None, params)
        return
    given = {"metric": str(metric).lower(), **dict(params)}
    given.update(
        {k: v for k, v in (("num_partitions", num_partitions), ("num_sub_vectors", num_sub_vectors))}
    )
    version = vector_indices.create_vector_index(
        ds._snapshot, table_indices.IndexRequest(column, index_type, name, replace, given)
    )
    ds._move_to(version)


def drop_index(ds: LanceDataset, name: str) -> None:
    """Remove every segment of index ``name``; ``ds`` moves to the version created."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"name must be a string, got {name!r}")
    ds._move_to(table_indices.drop_index(ds._snapshot, name))


def optimize_indices(
    ds: LanceDataset, names: list[str] | None, num_indices_to_merge: int | None, retrain: bool | None
) -> None:
    """``ds.optimize.optimize_indices(index_names=[...])``: bring each index up to every fragment."""
    refuse("optimize_indices", {"num_indices_to_merge": num_indices_to_merge}, {"num_indices_to_merge": 1})
    if retrain is not None and not isinstance(retrain, bool):
        raise InvalidArgumentError(f"retrain must be a bool, got {retrain!r}")
    if names is not None and (isinstance(names, str) or not isinstance(names, Iterable)):
        raise InvalidArgumentError(f"index_names must be a list of names, got {names!r}")
    version = table_indices.optimize_indices(
        ds._snapshot, None if names is None else list(names), retrain=bool(retrain)
    )
    if version is not None:
        ds._move_to(version)


def index_statistics(ds: LanceDataset, name: str) -> dict[str, Any]:
    """pylance's ``ds.stats.index_stats(name)``."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"index name must be a string, got {name!r}")
    return table_indices.index_statistics(ds._snapshot, name)


def prewarm_index(ds: LanceDataset, name: str, with_position: bool, index_segments: Any) -> None:
    """Open (and cache) every segment of index ``name``: the first query then reads no index metadata."""
    refuse(
        "prewarm_index",
        {"with_position": with_position, "index_segments": index_segments},
        {"with_position": False},
    )
    handles = [h for h in table_indices.usable_indices(ds._snapshot) if h.name == name]
    if not handles:
        raise IndexNotFoundError(f"Index not found: {name!r}")
    for handle in handles:
        table_indices.open_index(ds._snapshot, handle)


class DatasetStats:
    """pylance's ``ds.stats`` namespace (index statistics)."""

    def __init__(self, ds: LanceDataset) -> None:
        self._ds = ds

    def index_stats(self, index_name: str) -> dict[str, Any]:
        """Statistics of one index (see ``index_statistics``)."""
        return index_statistics(self._ds, index_name)


class IndexMethods:
    """``LanceDataset``'s index methods (pylance's names and signatures), kept out of ``dataset.py``."""

    _snapshot: Any

    def _move_to(self, version: int | None) -> None:  # provided by LanceDataset
        raise NotImplementedError

    def create_scalar_index(
        self,
        column: str,
        index_type: str,
        name: str | None = None,
        *,
        replace: bool = True,
        train: bool = True,
        fragment_ids: list[int] | None = None,
        index_uuid: str | None = None,
        progress_callback: Any = None,
        format_version: int | str | None = None,
        **params: Any,
    ) -> None:
        """Build a scalar index (``BTREE``, ``BITMAP``, ``LABEL_LIST``, ``ZONEMAP`` or a plugin's type)
        on ``column`` and commit it. ``params`` are the index type's parameters; each type refuses
        any it does not implement (``InvalidArgumentError``), so none is ignored."""
        create_scalar_index(
            self,  # type: ignore[arg-type]
            column,
            index_type,
            name,
            replace,
            train,
            fragment_ids,
            index_uuid,
            progress_callback,
            format_version,
            params,
        )

    def create_index(
        self,
        column: str | list[str],
        index_type: str,
        name: str | None = None,
        metric: str = "L2",
        replace: bool = False,
        num_partitions: int | None = None,
        ivf_centroids: Any = None,
        pq_codebook: Any = None,
        num_sub_vectors: int | None = None,
        accelerator: Any = None,
        index_cache_size: int | None = None,
        shuffle_partition_batches: int | None = None,
        shuffle_partition_concurrency: int | None = None,
        ivf_centroids_file: str | None = None,
        precomputed_partition_dataset: str | None = None,
        storage_options: dict[str, str] | None = None,
        filter_nan: bool = True,
        train: bool = True,
        fragment_ids: list[int] | None = None,
        index_uuid: str | None = None,
        *,
        target_partition_size: int | None = None,
        streaming_sample_rate: int | None = None,
        streaming_coreset_rate: int | None = None,
        streaming_refine_passes: int | None = None,
        skip_transpose: bool = False,
        progress_callback: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Build a vector index (``IVF_PQ``; other vector types are refused by name) on ``column``
        and commit it; returns the dataset, as pylance. ``kwargs``: ``num_bits``, ``sample_rate``,
        ``max_iters`` (any other is refused, none ignored). Options lance_fw lacks (given
        centroids or codebooks, accelerators, fragment subsets ...) raise UnsupportedFeatureError."""
        refused = {
            "ivf_centroids": ivf_centroids,
            "pq_codebook": pq_codebook,
            "accelerator": accelerator,
            "index_cache_size": index_cache_size,
            "shuffle_partition_batches": shuffle_partition_batches,
            "shuffle_partition_concurrency": shuffle_partition_concurrency,
            "ivf_centroids_file": ivf_centroids_file,
            "precomputed_partition_dataset": precomputed_partition_dataset,
            "storage_options": storage_options,
            "filter_nan": filter_nan,
            "train": train,
            "fragment_ids": fragment_ids,
            "index_uuid": index_uuid,
            "target_partition_size": target_partition_size,
            "streaming_sample_rate": streaming_sample_rate,
            "streaming_coreset_rate": streaming_coreset_rate,
            "streaming_refine_passes": streaming_refine_passes,
            "skip_transpose": skip_transpose,
            "progress_callback": progress_callback,
        }
        create_index(
            self,  # type: ignore[arg-type]
            column,
            index_type,
            name,
            metric,
            replace,
            num_partitions,
            num_sub_vectors,
            refused,
            kwargs,
        )
        return self

    def drop_index(self, name: str) -> None:
        """Remove the index ``name`` (a new version; its files stay for ``cleanup_old_versions``)."""
        drop_index(self, name)  # type: ignore[arg-type]

    def prewarm_index(self, name: str, *, with_position: bool = False, index_segments: Any = None) -> None:
        """Open index ``name`` now, so the first query using it reads no index metadata."""
        prewarm_index(self, name, with_position, index_segments)  # type: ignore[arg-type]

    def index_statistics(self, index_name: str) -> dict[str, Any]:
        """Statistics of one index, as ``ds.stats.index_stats(index_name)``."""
        return index_statistics(self, index_name)  # type: ignore[arg-type]

    @property
    def stats(self) -> DatasetStats:
        """pylance's ``ds.stats`` (``index_stats(name)``)."""
        return DatasetStats(self)  # type: ignore[arg-type]
