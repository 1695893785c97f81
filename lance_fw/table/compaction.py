"""``ds.optimize.compact_files()``: merge small fragments and drop deleted rows, in one version.

Streaming writers (Spark micro-batches) and many small appends leave many small fragments, and
deletes leave deletion files that every scan applies. The plan is pylance 14's, so the same input
gives the same fragments:

* a fragment is a candidate to compact *itself* when more than ``materialize_deletions_threshold``
  of its rows are deleted, or to compact *with neighbours* when it has fewer physical rows than
  ``target_rows_per_fragment``;
* runs of adjacent candidates form bins; a bin of one neighbour-candidate is left alone;
* a bin is cut, front to back, into groups of at least ``target_rows_per_fragment`` live rows
  (what is left below that joins the last group);
* each group becomes ``max(1, rows // target)`` fragments of balanced sizes, rolled early only by
  ``max_bytes_per_file``; the new fragments follow the untouched ones, group after group, in one
  ``Rewrite`` (so a scan returns the rewritten rows after the rest, as pylance's does).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.scanner import LanceScanner
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import deleted_rows, live_rows
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Rewrite, commit, undo_unless_published
from lance_fw.table.write import delete_fragment_files, plan_write

DEFAULT_TARGET_ROWS = 1024 * 1024
#: New fragments are cut by ``output_sizes``, not by a per-file row cap.
_NO_ROW_LIMIT = 2**62


@dataclass
class CompactionMetrics:
    """pylance's ``CompactionMetrics`` fields (files count data and deletion files)."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0


def _compacts_itself(frag, materialize_deletions: bool, threshold: float) -> bool:
    return bool(
        materialize_deletions and frag.physical_rows and deleted_rows(frag) / frag.physical_rows > threshold
    )


def candidate_bins(fragments, target: int, materialize_deletions: bool, threshold: float) -> list[list]:
    """Runs of adjacent candidates, without the runs that are one fragment with nothing to gain."""
    if threshold >= 1.0:  # nothing can be more than everything deleted
        materialize_deletions = False
    bins, current = [], []
    for frag in fragments:
        if _compacts_itself(frag, materialize_deletions, threshold) or frag.physical_rows < target:
            current.append(frag)
        elif current:
            bins.append(current)
            current = []
    if current:
        bins.append(current)
    return [b for b in bins if len(b) > 1 or _compacts_itself(b[0], materialize_deletions, threshold)]


def split_for_size(fragments: list, target: int) -> list[list]:
    """Cut a bin front to back into groups of at least ``target`` live rows; a remainder too small
    to make a group of its own stays with the last one."""
    groups, rest = [], list(fragments)
    while rest:
        taken, rows = 0, 0
        while rows < target and taken < len(rest):
            rows += live_rows(rest[taken])
            taken += 1
        if sum(live_rows(f) for f in rest[taken:]) >= target:
            groups.append(rest[:taken])
            rest = rest[taken:]
        else:
            groups.append(rest)
            break
    return groups


def plan_groups(fragments, target: int, materialize_deletions: bool, threshold: float) -> list[list]:
    """The groups of fragments one compaction rewrites, each into new fragments of its own."""
    return [
        group
        for found in candidate_bins(fragments, target, materialize_deletions, threshold)
        for group in split_for_size(found, target)
    ]


def output_sizes(rows: int, target: int) -> list[int]:
    """Rows of each new fragment of a group: ``max(1, rows // target)`` fragments, sizes differing
    by at most one row, the larger first."""
    count = max(1, rows // target)
    base, extra = divmod(rows, count)
    return [base + 1] * extra + [base] * (count - extra)


def _cut(batches: Iterator[pa.RecordBatch], sizes: list[int]) -> Iterator[Iterator[pa.RecordBatch]]:
    """The batches of one stream, handed out as consecutive streams of ``sizes`` rows each."""
    pending: list[pa.RecordBatch] = []

    def piece(rows: int) -> Iterator[pa.RecordBatch]:
        while rows:
            batch = pending.pop() if pending else next(batches, None)
            if batch is None:
                return
            if batch.num_rows > rows:
                pending.append(batch.slice(rows))
                batch = batch.slice(0, rows)
            rows -= batch.num_rows
            yield batch

    for size in sizes:
        yield piece(size)


def compact_files(
    snapshot: Snapshot,
    target_rows_per_fragment: int = DEFAULT_TARGET_ROWS,
    materialize_deletions: bool = True,
    materialize_deletions_threshold: float = 0.1,
    max_bytes_per_file: int | None = None,
    batch_size: int | None = None,
) -> tuple[CompactionMetrics, int]:
    """Compact ``snapshot``; returns the metrics and the version committed (its version if none).
    ``batch_size`` is the scan's batch size over the old fragments (where a ``max_bytes_per_file``
    roll can happen)."""
    if target_rows_per_fragment <= 0:
        raise InvalidArgumentError(
            f"target_rows_per_fragment must be positive, got {target_rows_per_fragment}"
        )
    if snapshot.manifest.writer_feature_flags & feature_flags.STABLE_ROW_IDS:
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: compaction with stable row ids (rows keep their ids) is not supported yet"
        )
    if snapshot.index_section is not None and len(snapshot.index_section.indices):
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: compaction of an indexed dataset (indices would need remapping) "
            "is not supported yet"
        )
    if any(f.is_blob_v2 for f in snapshot.lance_schema.walk()):
        raise UnsupportedFeatureError(f"{snapshot.uri}: compaction of blob columns is not supported yet")
    groups_planned = plan_groups(
        snapshot.manifest.fragments,
        target_rows_per_fragment,
        materialize_deletions,
        materialize_deletions_threshold,
    )
    metrics = CompactionMetrics()
    if not groups_planned:
        return metrics, snapshot.version
    plan = plan_write(
        snapshot.uri,
        snapshot.schema,
        "append",
        storage_options=snapshot.storage_options,
        max_rows_per_file=_NO_ROW_LIMIT,
        **({"max_bytes_per_file": max_bytes_per_file} if max_bytes_per_file else {}),
    )
    groups = []
    with undo_unless_published(
        lambda: [delete_fragment_files(snapshot.storage, snapshot.uri, fresh) for _, fresh in groups]
    ):
        for old in groups_planned:
            batches = LanceScanner(
                snapshot, fragments=[f.id for f in old], batch_size=batch_size
            ).to_batches()  # live rows
            fresh: list = []
            groups.append((old, fresh))
            for piece in _cut(
                iter(batches), output_sizes(sum(live_rows(f) for f in old), target_rows_per_fragment)
            ):
                fresh.extend(plan.write(piece))
        version = commit(
            snapshot.storage,
            snapshot.uri,
            Rewrite(groups=groups),
            commit_lock=snapshot.commit_lock,
            read_version=snapshot.version,
        )
    for old, fresh in groups:
        metrics.fragments_removed += len(old)
        metrics.fragments_added += len(fresh)
        metrics.files_removed += sum(len(f.files) + f.HasField("deletion_file") for f in old)
        metrics.files_added += sum(len(f.files) for f in fresh)
    return metrics, version
