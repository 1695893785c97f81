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

The work is split as pylance's ``Compaction.plan / CompactionTask.execute / Compaction.commit``
(``plan_compaction``, ``rewrite_task``, ``commit_compaction``) so that ``compact_files`` here and
the Spark runner (lance_fw.spark.maintenance) share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.scanner import LanceScanner
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import deleted_rows, live_rows
from lance_fw.table.indices import fragment_bitmap
from lance_fw.table.row_ids import encode_row_ids
from lance_fw.table.rows import ROW_ID
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Operation, Rewrite, next_fragment_id, undo_unless_published
from lance_fw.table.write import (
    DEFAULT_MAX_BYTES_PER_FILE,
    FileProgress,
    WritePlan,
    delete_fragment_files,
    plan_write,
)

DEFAULT_TARGET_ROWS = 1024 * 1024
#: New fragments are cut by ``output_sizes``, not by a per-file row cap.
_NO_ROW_LIMIT = 2**62

Fragment = table_pb2.DataFragment


@dataclass
class CompactionMetrics:
    """pylance's ``CompactionMetrics`` fields (files count data and deletion files)."""

    fragments_removed: int = 0
    """fragments rewritten into new ones"""
    fragments_added: int = 0
    """fragments written"""
    files_removed: int = 0
    """data and deletion files of the removed fragments"""
    files_added: int = 0
    """data files written"""

    def add(self, old: Iterable[Fragment], fresh: Iterable[Fragment]) -> CompactionMetrics:
        """Count one rewrite of ``old`` into ``fresh`` (a deletion file counts as a removed file)."""
        old, fresh = list(old), list(fresh)
        self.fragments_removed += len(old)
        self.fragments_added += len(fresh)
        self.files_removed += sum(len(f.files) + f.HasField("deletion_file") for f in old)
        self.files_added += sum(len(f.files) for f in fresh)
        return self


def _compacts_itself(frag: Fragment, materialize_deletions: bool, threshold: float) -> bool:
    return bool(
        materialize_deletions and frag.physical_rows and deleted_rows(frag) / frag.physical_rows > threshold
    )


def candidate_bins(
    fragments: Iterable[Fragment],
    target: int,
    materialize_deletions: bool,
    threshold: float,
    coverage: Mapping[int, frozenset[str]] | None = None,
) -> list[list[Fragment]]:
    """Runs of adjacent candidates, without the runs that are one fragment with nothing to gain.
    ``coverage``: the indices (uuids) covering each fragment id; as in pylance, a run breaks where
    it changes (fragments indexed differently are never merged, so no index loses coverage it
    had)."""
    if threshold >= 1.0:  # nothing can be more than everything deleted
        materialize_deletions = False
    coverage = coverage or {}
    bins: list[list[Fragment]] = []
    current: list[Fragment] = []
    for frag in fragments:
        if _compacts_itself(frag, materialize_deletions, threshold) or frag.physical_rows < target:
            covered = coverage.get(frag.id, frozenset())
            if current and coverage.get(current[-1].id, frozenset()) != covered:
                bins.append(current)
                current = []
            current.append(frag)
        elif current:
            bins.append(current)
            current = []
    if current:
        bins.append(current)
    return [b for b in bins if len(b) > 1 or _compacts_itself(b[0], materialize_deletions, threshold)]


def split_for_size(fragments: list[Fragment], target: int) -> list[list[Fragment]]:
    """Cut a bin front to back into groups of at least ``target`` live rows; a remainder too small
    to make a group of its own stays with the last one."""
    groups: list[list[Fragment]] = []
    rest = list(fragments)
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


def plan_groups(
    fragments: Iterable[Fragment],
    target: int,
    materialize_deletions: bool,
    threshold: float,
    coverage: Mapping[int, frozenset[str]] | None = None,
) -> list[list[Fragment]]:
    """The groups of fragments one compaction rewrites, each into new fragments of its own."""
    return [
        group
        for found in candidate_bins(fragments, target, materialize_deletions, threshold, coverage)
        for group in split_for_size(found, target)
    ]


def index_coverage(snapshot: Snapshot) -> dict[int, frozenset[str]]:
    """The uuids of the index segments covering each fragment id (fragments no index covers are
    left out)."""
    out: dict[int, set[str]] = {}
    for meta in snapshot.index_section.indices if snapshot.index_section else []:
        uuid = meta.uuid.uuid.hex()
        for frag_id in fragment_bitmap(meta, snapshot.uri):
            out.setdefault(int(frag_id), set()).add(uuid)
    return {k: frozenset(v) for k, v in out.items()}


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


@dataclass(frozen=True)
class CompactionTask:
    """One group of old fragments to rewrite into fragments of ``sizes`` rows: small and picklable
    (fragments travel serialized), so a distributed runner ships tasks to workers as pylance's
    ``CompactionTask`` does."""

    read_version: int
    fragments: tuple[bytes, ...]  # serialized old DataFragments, in dataset order
    sizes: tuple[int, ...]  # rows of each new fragment (``output_sizes``)

    def old_fragments(self) -> list[table_pb2.DataFragment]:
        return [table_pb2.DataFragment.FromString(b) for b in self.fragments]


@dataclass(frozen=True)
class RewriteResult:
    """What one task wrote (pylance's ``RewriteResult``): the old fragments and the new ones, both
    serialized; new fragment ids are assigned at commit."""

    read_version: int
    original_fragments: tuple[bytes, ...]
    new_fragments: tuple[bytes, ...]

    def groups(self) -> tuple[list[table_pb2.DataFragment], list[table_pb2.DataFragment]]:
        return (
            [table_pb2.DataFragment.FromString(b) for b in self.original_fragments],
            [table_pb2.DataFragment.FromString(b) for b in self.new_fragments],
        )


@dataclass(frozen=True)
class CompactionPlan:
    """The tasks of one compaction and the write every task makes (resolved once, on the planner)."""

    read_version: int
    tasks: tuple[CompactionTask, ...]
    write: WritePlan | None  # None when there is nothing to compact


def _check_compactable(snapshot: Snapshot, target_rows_per_fragment: int) -> None:
    if target_rows_per_fragment <= 0:
        raise InvalidArgumentError(
            f"target_rows_per_fragment must be positive, got {target_rows_per_fragment}"
        )
    if any(f.is_blob_v2 for f in snapshot.lance_schema.walk()):
        raise UnsupportedFeatureError(f"{snapshot.uri}: compaction of blob columns is not supported yet")


def plan_compaction(
    snapshot: Snapshot,
    target_rows_per_fragment: int = DEFAULT_TARGET_ROWS,
    materialize_deletions: bool = True,
    materialize_deletions_threshold: float = 0.1,
    max_bytes_per_file: int | None = None,
) -> CompactionPlan:
    """Which fragments to rewrite into what (``plan_groups``), as tasks; writes nothing."""
    _check_compactable(snapshot, target_rows_per_fragment)
    groups = plan_groups(
        snapshot.manifest.fragments,
        target_rows_per_fragment,
        materialize_deletions,
        materialize_deletions_threshold,
        index_coverage(snapshot),
    )
    if not groups:
        return CompactionPlan(snapshot.version, (), None)
    write = compaction_write(snapshot, max_bytes_per_file)
    tasks = tuple(
        CompactionTask(
            snapshot.version,
            tuple(f.SerializeToString() for f in old),
            tuple(output_sizes(sum(live_rows(f) for f in old), target_rows_per_fragment)),
        )
        for old in groups
    )
    return CompactionPlan(snapshot.version, tasks, write)


def compaction_write(snapshot: Snapshot, max_bytes_per_file: int | None = None) -> WritePlan:
    """How every task of a compaction of ``snapshot`` writes its new fragments: the dataset's schema
    and format, files cut by ``max_bytes_per_file`` (rows by the task's ``sizes``)."""
    return plan_write(
        snapshot.uri,
        snapshot.schema,
        "append",
        storage_options=snapshot.storage_options,
        max_rows_per_file=_NO_ROW_LIMIT,
        max_bytes_per_file=max_bytes_per_file or DEFAULT_MAX_BYTES_PER_FILE,
    )


def rewrite_task(
    snapshot: Snapshot,
    write: WritePlan,
    task: CompactionTask,
    batch_size: int | None = None,
    progress: FileProgress | None = None,
) -> RewriteResult:
    """Write one task's live rows into its new fragments. ``snapshot`` is the planned version (the
    old fragments' files are read through it). If this fails, the files it wrote are deleted.
    ``progress`` hears of each new file (see ``FileProgress``)."""
    old = task.old_fragments()
    fresh: list[table_pb2.DataFragment] = []
    stable = feature_flags.has_stable_row_ids(snapshot.manifest)
    try:
        batches = LanceScanner(
            snapshot, fragments=[f.id for f in old], batch_size=batch_size, with_row_id=stable
        ).to_batches()
        for piece in _cut(iter(batches), list(task.sizes)):  # live rows
            if not stable:
                fresh.extend(write.write(piece, progress))
                continue
            ids: list[np.ndarray] = []
            written = write.write(_without_row_ids(piece, ids), progress)
            _keep_row_ids(written, np.concatenate(ids) if ids else np.zeros(0, np.uint64))
            fresh.extend(written)
    except BaseException:
        try:
            delete_fragment_files(snapshot.storage, snapshot.uri, fresh)
        except Exception:
            pass
        raise
    return RewriteResult(task.read_version, task.fragments, tuple(f.SerializeToString() for f in fresh))


def _without_row_ids(batches: Iterator[pa.RecordBatch], ids: list[np.ndarray]) -> Iterator[pa.RecordBatch]:
    """The batches without their ``_rowid`` column, whose values go to ``ids`` as they pass."""
    for batch in batches:
        ids.append(batch.column(ROW_ID).to_numpy(zero_copy_only=False).astype(np.uint64))
        yield batch.drop_columns([ROW_ID])


def _keep_row_ids(fragments: list[table_pb2.DataFragment], ids: np.ndarray) -> None:
    """Give the new fragments the stable ids of the rows they hold (in order): compacted rows
    keep their ids, as pylance's do."""
    at = 0
    for frag in fragments:
        frag.inline_row_ids = encode_row_ids(ids[at : at + frag.physical_rows])
        at += frag.physical_rows
    if at != len(ids):
        raise AssertionError(f"compaction wrote {at} rows for {len(ids)} row ids")


def delete_written(snapshot: Snapshot, results: list[RewriteResult]) -> None:
    """Remove the new files of ``results`` (none of them committed)."""
    for result in results:
        delete_fragment_files(snapshot.storage, snapshot.uri, result.groups()[1])


@dataclass
class ReserveFragments(Operation):
    """Reserve ``num_fragments`` fragment ids (``max_fragment_id`` moves past them) and change nothing
    else: pylance 14 commits one before each compaction's ``Rewrite``, whose new fragments then take
    the reserved ids -- so a compaction makes two versions there, and here too."""

    num_fragments: int = 0
    #: the ids reserved, set by ``apply`` (of the attempt that published)
    reserved: list[int] = field(default_factory=list, init=False, repr=False, compare=False)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        start = next_fragment_id(base)
        self._added = []
        self.reserved = list(range(start, start + self.num_fragments))
        if self.num_fragments:
            new.max_fragment_id = start + self.num_fragments - 1

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.reserve_fragments.num_fragments = self.num_fragments


def commit_compaction(snapshot: Snapshot, results: list[RewriteResult]) -> tuple[CompactionMetrics, int]:
    """One ``Rewrite`` of every result (retried on conflict by ``commit``); returns the metrics and
    the version created (``snapshot``'s own if there is no result). If the commit fails before it is
    published, the results' new files are deleted."""
    metrics = CompactionMetrics()
    if not results:
        return metrics, snapshot.version
    versions = {r.read_version for r in results}
    if len(versions) != 1:
        raise InvalidArgumentError(
            f"compaction results of different versions {sorted(versions)} cannot commit together"
        )
    groups = [r.groups() for r in results]
    read_version = versions.pop()
    reserve = ReserveFragments(num_fragments=sum(len(fresh) for _, fresh in groups))
    undo = partial(delete_written, snapshot, results)
    snapshot.commit(reserve, undo, read_version)
    version = snapshot.commit(Rewrite(groups=groups, fragment_ids=reserve.reserved), undo, read_version)
    for old, fresh in groups:
        metrics.add(old, fresh)
    return metrics, version


def compact_files(
    snapshot: Snapshot, plan: CompactionPlan, batch_size: int | None = None
) -> tuple[CompactionMetrics, int]:
    """Carry out ``plan`` (from ``plan_compaction`` on ``snapshot``) in this process: rewrite each
    task, commit. Returns the metrics and the version committed (its version if nothing was to
    compact). ``batch_size`` is the scan's batch size over the old fragments (where a
    ``max_bytes_per_file`` roll can happen)."""
    if plan.write is None:
        return CompactionMetrics(), snapshot.version
    results: list[RewriteResult] = []
    with undo_unless_published(lambda: delete_written(snapshot, results)):
        for task in plan.tasks:
            results.append(rewrite_task(snapshot, plan.write, task, batch_size))
    return commit_compaction(snapshot, results)
