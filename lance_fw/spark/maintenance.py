"""Distributed maintenance on Spark: compaction and column backfill planned on the driver, computed
in tasks, committed once.

Why: rewriting a large dataset's fragments, or running a UDF over every row, outgrows the driver.
The single-process code already works in three pieces (``table.compaction``: plan / rewrite one
task / commit; ``table.schema_evolution``: plan / one fragment's new columns / commit), so here the
planned pieces travel to Spark tasks as small picklable values (serialized fragments, the uri, the
version), each task opens the *planned* version itself, and the driver commits what ``collect()``
returned as one version (a ``Rewrite`` or a ``Merge``) with the same conflict-retrying commit loop.

Garbage: a task that fails deletes what it wrote before it raises; Spark then retries it. Files of
attempts the driver never hears of (a straggler, an attempt of a failed job) are found through the
same ``JobLedger`` the batch writer uses: every task notes each file before it creates it, and the
driver, once it has committed or failed, deletes every noted file the commit does not reference.
A failed job commits nothing, so the dataset stays at its old version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.io.storage import resolve_storage
from lance_fw.spark.ledger import JobLedger, TaskLedger
from lance_fw.table.compaction import (
    DEFAULT_TARGET_ROWS,
    CompactionMetrics,
    CompactionPlan,
    CompactionTask,
    RewriteResult,
    commit_compaction,
    plan_compaction,
    rewrite_task,
)
from lance_fw.table.schema_evolution import (
    ColumnsPlan,
    commit_columns,
    plan_add_columns,
    write_fragment_columns,
)
from lance_fw.table.schema_evolution import (
    add_columns as add_columns_here,
)
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import latest_manifest, may_be_published

__all__ = ["add_columns", "compact"]

PlanT = TypeVar("PlanT")
R = TypeVar("R")


def _open(uri: str, version: int | None, storage_options: dict | None) -> Snapshot:
    """The dataset at ``uri`` as of ``version`` (latest for None): what the driver plans on and
    what every task reads (tasks pin the planned version, whatever was committed since)."""
    uri = str(uri).rstrip("/")
    storage = resolve_storage(uri, storage_options)
    manifest, index_section = latest_manifest(storage, uri, version)
    return Snapshot(uri, storage, manifest, index_section, storage_options=storage_options)


def _task_identity() -> tuple[int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0)


def _new_file_names(fragments: list[table_pb2.DataFragment], before: dict[int, int]) -> list[str]:
    """The data files of ``fragments`` beyond the first ``before[id]`` (names in ``data/``)."""
    return [d.path for f in fragments for d in f.files[before.get(f.id, 0) :]]


def _run(spark: Any, items: list, task: Callable[[Any], Any]) -> list:
    """``task`` over ``items``, one Spark task each, results in ``items`` order."""
    if not items:
        return []
    rdd = spark.sparkContext.parallelize(list(enumerate(items)), len(items))
    return [
        r for _, r in sorted(rdd.map(lambda pair: (pair[0], task(pair[1]))).collect(), key=lambda p: p[0])
    ]


@contextmanager
def _keep_if_published(keep: set[str]) -> Iterator[None]:
    """Around the commit: on a failure known to precede publication, nothing is kept (``keep`` is
    emptied); one after which the manifest is or may be in place keeps every committed file."""
    try:
        yield
    except BaseException as exc:
        if not may_be_published(exc):
            keep.clear()
        raise


def _close(snapshot: Snapshot, ledger: JobLedger, keep: set[str]) -> None:
    try:
        ledger.close(snapshot.storage, keep)
    except Exception:  # best effort: what a record names but nothing references, cleanup finds
        pass


class _Task(Generic[PlanT]):
    """One planned piece of a job on an executor (picklable: the uri, options, plan, ledger); each
    records the files it wrote in the ledger before it returns them."""

    def __init__(
        self,
        uri: str,
        storage_options: dict | None,
        plan: PlanT,
        ledger: JobLedger,
        batch_size: int | None,
    ):
        self.uri, self.storage_options, self.plan = uri, storage_options, plan
        self.ledger, self.batch_size = ledger, batch_size

    def __call__(self, item: Any) -> Any:
        """The piece's result, None when its job was closed before it could be recorded."""
        raise NotImplementedError

    def _tracked(self, snapshot: Snapshot, work: Callable[[TaskLedger], R]) -> R | None:
        """``work``'s result, its files noted in the ledger as they are created; None when the job
        was closed meanwhile (the ledger then removed the files, and the result must not be
        returned)."""
        partition, attempt = _task_identity()
        return self.ledger.run_task(snapshot.storage, partition, attempt, work)


class _Rewrite(_Task[CompactionPlan]):
    """One compaction task."""

    def __call__(self, task: CompactionTask) -> RewriteResult | None:
        snapshot = _open(self.uri, task.read_version, self.storage_options)
        write = self.plan.write
        assert write is not None
        return self._tracked(
            snapshot, lambda progress: rewrite_task(snapshot, write, task, self.batch_size, progress)
        )


def _run_job(
    spark: Any,
    snapshot: Snapshot,
    items: list,
    task: Callable[[JobLedger], _Task[Any]],
    kept: Callable[[list], set[str]],
    commit: Callable[[list], R],
    what: str,
) -> R:
    """Run ``task(ledger)`` over ``items`` in Spark tasks and ``commit`` their results once on the
    driver; then every file the tasks recorded that the commit does not reference (``kept``) goes.
    ``what`` names the job in the (cannot happen) error of a task that ends after its job."""
    ledger = JobLedger(snapshot.uri)
    keep: set[str] = set()
    try:
        results = _run(spark, items, task(ledger))
        if any(r is None for r in results):
            raise RuntimeError(f"{what} task finished after its job was closed")  # cannot happen
        keep = kept(results)
        with _keep_if_published(keep):
            return commit(results)
    finally:
        _close(snapshot, ledger, keep)


def compact(
    spark: Any,
    path: str,
    *,
    target_rows_per_fragment: int = DEFAULT_TARGET_ROWS,
    max_rows_per_group: int | None = None,
    max_bytes_per_file: int | None = None,
    materialize_deletions: bool = True,
    materialize_deletions_threshold: float = 0.1,
    batch_size: int | None = None,
    storage_options: dict | None = None,
) -> CompactionMetrics:
    """``ds.optimize.compact_files`` with the rewrites in Spark tasks: the plan (which fragments
    become what) is the single-process one, made on the driver; one task per group; one ``Rewrite``
    commit. ``max_rows_per_group`` is accepted as pylance's is and, as there, cannot change the
    result. Returns pylance's ``CompactionMetrics`` fields."""
    del max_rows_per_group  # lance v2 files have no row groups
    snapshot = _open(path, None, storage_options)
    plan = plan_compaction(
        snapshot,
        target_rows_per_fragment=target_rows_per_fragment,
        materialize_deletions=materialize_deletions,
        materialize_deletions_threshold=materialize_deletions_threshold,
        max_bytes_per_file=max_bytes_per_file,
    )
    if not plan.tasks:
        return CompactionMetrics()
    return _run_job(
        spark,
        snapshot,
        list(plan.tasks),
        lambda ledger: _Rewrite(snapshot.uri, storage_options, plan, ledger, batch_size),
        lambda results: {name for r in results for name in _new_file_names(r.groups()[1], {})},
        lambda results: commit_compaction(snapshot, results)[0],
        "a compaction",
    )


class _Backfill(_Task[ColumnsPlan]):
    """One fragment's new columns."""

    def __call__(self, fragment: bytes) -> bytes | None:
        snapshot = _open(self.uri, self.plan.read_version, self.storage_options)
        frag = table_pb2.DataFragment.FromString(fragment)
        needed = [snapshot.lance_schema.field(n) for n in self.plan.needed]
        updated = self._tracked(
            snapshot,
            lambda progress: write_fragment_columns(
                snapshot,
                frag,
                needed,
                self.plan.added_schema(),
                self.plan.compute(snapshot),
                self.batch_size,
                progress=progress,
            ),
        )
        return None if updated is None else updated.SerializeToString()


def add_columns(
    spark: Any,
    path: str,
    transform: Any,
    *,
    read_columns: list[str] | None = None,
    batch_size: int | None = None,
    storage_options: dict | None = None,
) -> int:
    """``ds.add_columns`` with the new columns computed in Spark tasks, one per fragment, and one
    ``Merge`` commit. ``transform``: ``{name: SQL expression}`` or a function of a RecordBatch
    returning the new columns (a RecordBatch, Table, dict of arrays or DataFrame; its output schema
    is its result's on the first row, as pylance infers it). Pyarrow fields (all-null columns) write
    no data and commit from the driver. Returns the new version."""
    snapshot = _open(path, None, storage_options)
    if isinstance(transform, (pa.Field, pa.Schema, list)):
        return add_columns_here(snapshot, transform)
    plan = plan_add_columns(snapshot, transform, read_columns)
    before = {f.id: len(f.files) for f in snapshot.manifest.fragments}

    def parsed(returned: list) -> list[table_pb2.DataFragment]:
        return [table_pb2.DataFragment.FromString(r) for r in returned]

    return _run_job(
        spark,
        snapshot,
        [f.SerializeToString() for f in snapshot.manifest.fragments],
        lambda ledger: _Backfill(snapshot.uri, storage_options, plan, ledger, batch_size),
        lambda returned: set(_new_file_names(parsed(returned), before)),
        lambda returned: commit_columns(snapshot, parsed(returned), plan.fields()),
        "an add_columns",
    )
