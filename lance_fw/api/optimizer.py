"""pylance's ``ds.optimize`` namespace: compaction and index optimisation of a ``LanceDataset``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from lance_fw.api.indices import optimize_indices
from lance_fw._util.refusals import Refused
from lance_fw.options import refuse

#: The manifest config keys that make pylance's commits clean up old versions
AUTO_CLEANUP_KEYS = ("lance.auto_cleanup.interval", "lance.auto_cleanup.older_than")

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset
    from lance_fw.table.compaction import CompactionMetrics


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
        from lance_fw.table.compaction import compact_files, plan_compaction

        given = {
            k: v
            for k, v in locals().items()
            if k not in ("self", "compact_files", "plan_compaction") and v is not None
        }
        planner = inspect.signature(plan_compaction).parameters
        tuning = (
            "max_rows_per_group",
            "defer_index_remap",
            "num_threads",
            "batch_size",
            "binary_copy_read_batch_bytes",
        )
        refuse(
            "compact_files",
            {k: v for k, v in given.items() if k not in planner and k not in tuning},
            {"compaction_mode": "reencode"},
        )
        if "batch_size" not in given and "batch_size" in self._ds._default_scan_options:
            given["batch_size"] = self._ds._default_scan_options["batch_size"]  # as ds.scanner() would
        snapshot = self._ds._snapshot
        plan = plan_compaction(snapshot, **{k: v for k, v in given.items() if k in planner})
        metrics, version = compact_files(snapshot, plan, given.get("batch_size"))
        self._ds._move_to(version)
        return metrics


__all__ = ["DatasetOptimizer"]
