"""pylance's ``ds.optimize`` namespace: compaction and index optimisation of a ``LanceDataset``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from lance_fw._util.refusals import Refused
from lance_fw.api.indices import optimize_indices
from lance_fw.options import refuse

#: The manifest config keys that make pylance's commits clean up old versions
AUTO_CLEANUP_KEYS = ("lance.auto_cleanup.interval", "lance.auto_cleanup.older_than")

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset
    from lance_fw.table.compaction import CompactionMetrics, CompactionPlan


class DatasetOptimizer:
    """pylance's ``ds.optimize`` namespace."""

    def __init__(self, ds: LanceDataset) -> None:
        self._ds = ds

    def optimize_indices(
        self,
        *,
        index_names: list[str] | None = None,
        num_indices_to_merge: int | None = None,
        retrain: bool | None = None,
    ) -> None:
        """Bring every scalar index (or those in ``index_names``) up to the fragments added since it
        was built (one new segment each); ``num_indices_to_merge`` / ``retrain`` are refused unless
        at pylance's defaults."""
        optimize_indices(self._ds, index_names, num_indices_to_merge, retrain)

    def disable_auto_cleanup(self) -> None:
        """Delete the auto-cleanup config keys (a new version), as pylance; lance_fw's own commits
        never clean up, with or without them."""
        self._ds.delete_config_keys(list(AUTO_CLEANUP_KEYS))

    enable_auto_cleanup = Refused(
        "lance_fw's commits never clean up old versions; call cleanup_old_versions() instead"
    )

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int | None = None,
        max_rows_per_group: int | None = None,
        max_bytes_per_file: int | None = None,
        materialize_deletions: bool | None = None,
        materialize_deletions_threshold: float | None = None,
        defer_index_remap: bool | None = None,
        num_threads: int | None = None,
        batch_size: int | None = None,
        compaction_mode: str | None = None,
        binary_copy_read_batch_bytes: int | None = None,
        max_source_fragments: int | None = None,
        max_source_rows: int | None = None,
        max_source_bytes: int | None = None,
        excluded_fragment_ids: list[int] | None = None,
        data_storage_version: str | None = None,
    ) -> CompactionMetrics:
        """Merge small fragments and drop deleted rows in one new version; returns the metrics and
        moves this dataset object to that version. Options the compaction planner takes are passed
        on; thread counts, read batch sizes, row groups and index-remap deferral (lance_fw has no
        indices to remap) cannot change the result; the rest are refused by name."""
        from lance_fw.table.compaction import compact_files

        given = {k: v for k, v in locals().items() if k not in ("self", "compact_files") and v is not None}
        plan, batch_size = plan_from_options(self._ds, given)
        metrics, version = compact_files(self._ds._snapshot, plan, batch_size)
        self._ds._move_to(version)
        return metrics


#: Options that tune how a compaction runs (threads, read batches, row groups, index-remap deferral:
#: lance_fw has no indices to remap) and cannot change the fragments it writes.
_TUNING_OPTIONS = (
    "max_rows_per_group",
    "defer_index_remap",
    "num_threads",
    "batch_size",
    "io_buffer_size",
    "binary_copy_read_batch_bytes",
)


def plan_from_options(ds: LanceDataset, given: dict[str, Any]) -> tuple[CompactionPlan, int | None]:
    """The compaction plan of ``ds``'s version for pylance's compaction options ``given`` (those not
    None) and the batch size its tasks scan with. The planner's options are passed on, tuning ones
    accepted, the rest refused by name (``compaction_mode`` only as ``reencode``).

    Raises:
        UnsupportedFeatureError: an option lance_fw does not implement, naming it.
    """
    from lance_fw.table.compaction import plan_compaction

    plan = plan_compaction(ds._snapshot, **check_compaction_options(given))
    return plan, compaction_batch_size(ds, given)


def check_compaction_options(given: dict[str, Any]) -> dict[str, Any]:
    """The planner's share of pylance's compaction options ``given``; tuning ones are accepted, the
    rest refused by name (``compaction_mode`` only as ``reencode``).

    Raises:
        UnsupportedFeatureError: an option lance_fw does not implement, naming it.
    """
    from lance_fw.table.compaction import plan_compaction

    planner = inspect.signature(plan_compaction).parameters
    refuse(
        "compact_files",
        {k: v for k, v in given.items() if k not in planner and k not in _TUNING_OPTIONS},
        {"compaction_mode": "reencode"},
    )
    return {k: v for k, v in given.items() if k in planner}


def compaction_batch_size(ds: LanceDataset, given: dict[str, Any]) -> int | None:
    """The batch size a compaction's tasks scan with: the option, else ``ds``'s scan default."""
    return given.get("batch_size", ds._default_scan_options.get("batch_size"))


__all__ = ["DatasetOptimizer", "check_compaction_options", "compaction_batch_size", "plan_from_options"]
