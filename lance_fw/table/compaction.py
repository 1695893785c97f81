"""``ds.optimize.compact_files()``: merge small fragments and drop deleted rows, in one version.

Streaming writers (Spark micro-batches) and many small appends leave many small fragments, and
deletes leave deletion files that every scan applies. Compaction rewrites runs of adjacent
*candidate* fragments (fewer rows than ``target_rows_per_fragment``, or more than
``materialize_deletions_threshold`` of their rows deleted) into new fragments of at most
``target_rows_per_fragment`` live rows, committed as one ``Rewrite`` that keeps fragment order.
A lone small fragment without deletions is left alone (rewriting it gains nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from lance_fw.api.write import delete_fragment_files, plan_write
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import deleted_rows, live_rows
from lance_fw.table.transaction import Rewrite, commit, undo_unless_published

DEFAULT_TARGET_ROWS = 1024 * 1024


@dataclass
class CompactionMetrics:
    """pylance's ``CompactionMetrics`` fields (files count data and deletion files)."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0


def candidate_runs(fragments, target: int, materialize_deletions: bool, threshold: float) -> list[list]:
    """Maximal runs of adjacent candidate fragments worth rewriting."""
    runs, run = [], []
    for frag in fragments:
        many_deleted = materialize_deletions and frag.physical_rows and deleted_rows(frag) / frag.physical_rows > threshold
        if live_rows(frag) < target or many_deleted:
            run.append(frag)
            continue
        runs.append(run)
        run = []
    runs.append(run)
    return [r for r in runs if len(r) > 1 or (len(r) == 1 and deleted_rows(r[0]))]


def compact_files(ds, target_rows_per_fragment: int = DEFAULT_TARGET_ROWS, materialize_deletions: bool = True,
                  materialize_deletions_threshold: float = 0.1) -> tuple[CompactionMetrics, int]:
    """Compact ``ds``; returns the metrics and the version committed (``ds.version`` if none)."""
    if target_rows_per_fragment <= 0:
        raise InvalidArgumentError(f"target_rows_per_fragment must be positive, got {target_rows_per_fragment}")
    if ds._manifest.writer_feature_flags & feature_flags.STABLE_ROW_IDS:
        raise UnsupportedFeatureError(f"{ds.uri}: compaction with stable row ids (rows keep their ids) is not "
                                      "supported yet")
    if ds._index_section is not None and len(ds._index_section.indices):
        raise UnsupportedFeatureError(f"{ds.uri}: compaction of an indexed dataset (indices would need remapping) "
                                      "is not supported yet")
    if any(f.is_blob_v2 for f in ds.lance_schema.walk()):
        raise UnsupportedFeatureError(f"{ds.uri}: compaction of blob columns is not supported yet")
    runs = candidate_runs(ds._manifest.fragments, target_rows_per_fragment, materialize_deletions,
                          materialize_deletions_threshold)
    metrics = CompactionMetrics()
    if not runs:
        return metrics, ds.version
    plan = plan_write(ds.uri, ds.schema, "append", storage_options=ds._storage_options,
                      max_rows_per_file=target_rows_per_fragment)
    groups = []
    with undo_unless_published(lambda: [delete_fragment_files(ds._storage, ds.uri, fresh) for _, fresh in groups]):
        for run in runs:
            batches = ds.scanner(fragments=[f.id for f in run]).to_batches()  # live rows, in fragment order
            groups.append((run, plan.write(batches)))
        version = commit(ds._storage, ds.uri, Rewrite(groups=groups), read_version=ds.version)
    for run, fresh in groups:
        metrics.fragments_removed += len(run)
        metrics.fragments_added += len(fresh)
        metrics.files_removed += sum(len(f.files) + f.HasField("deletion_file") for f in run)
        metrics.files_added += sum(len(f.files) for f in fresh)
    return metrics, version
