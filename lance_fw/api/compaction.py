"""pylance's ``lance.optimize`` distributed compaction: ``Compaction.plan`` on one process, each
``CompactionTask.execute`` anywhere (tasks and results pickle and round-trip through JSON), then
``Compaction.commit`` of the results on one process.

Why a thin layer: the plan, the rewrite of one task and the commit are the kernel's
(``table/compaction.py``), the same three steps ``ds.optimize.compact_files`` and the Spark runner
use; this module gives them pylance's names and objects. The JSON form is lance_fw's own (pylance
documents its form as unstable): the fragments' protobuf messages in their JSON mapping.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from google.protobuf import json_format

from lance_fw._proto import table_pb2
from lance_fw.api.distributed import FragmentMetadata
from lance_fw.api.optimizer import check_compaction_options, compaction_batch_size, plan_from_options
from lance_fw.errors import InvalidArgumentError
from lance_fw.table import compaction as kernel
from lance_fw.table.compaction import CompactionMetrics

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


class CompactionOptions(TypedDict, total=False):
    """pylance's compaction options (``ds.optimize.compact_files``' keywords, as a dict)."""

    target_rows_per_fragment: int | None
    max_rows_per_group: int | None
    max_bytes_per_file: int | None
    materialize_deletions: bool | None
    materialize_deletions_threshold: float | None
    num_threads: int | None
    batch_size: int | None
    io_buffer_size: int | None
    compaction_mode: str | None
    binary_copy_read_batch_bytes: int | None
    defer_index_remap: bool | None
    max_source_fragments: int | None
    max_source_rows: int | None
    max_source_bytes: int | None
    excluded_fragment_ids: list[int] | None
    data_storage_version: str | None


def _checked_options(options: CompactionOptions | dict[str, Any] | None) -> dict[str, Any]:
    """``options`` without the ``None`` values; a key pylance's ``CompactionOptions`` lacks is an
    error (a dict key is never ignored)."""
    given = dict(options or {})
    unknown = sorted(set(given) - set(CompactionOptions.__annotations__))
    if unknown:
        raise InvalidArgumentError(f"compaction options: unknown option(s) {', '.join(unknown)}")
    return {k: v for k, v in given.items() if v is not None}


def _fragments(raw: Sequence[bytes]) -> list[FragmentMetadata]:
    return [FragmentMetadata(table_pb2.DataFragment.FromString(r)) for r in raw]


def _fragments_json(raw: Sequence[bytes]) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(table_pb2.DataFragment.FromString(r)) for r in raw]


def _fragments_from_json(items: Sequence[dict[str, Any]]) -> tuple[bytes, ...]:
    return tuple(json_format.ParseDict(item, table_pb2.DataFragment()).SerializeToString() for item in items)


def _loads(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what}.from_json: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{what}.from_json: expected a JSON object")
    return data


@dataclass(frozen=True)
class RewriteResult:
    """One executed task: the fragments it replaces and the ones it wrote (not yet committed)."""

    result: kernel.RewriteResult
    metrics: CompactionMetrics

    @property
    def read_version(self) -> int:
        return self.result.read_version

    @property
    def original_fragments(self) -> list[FragmentMetadata]:
        return _fragments(self.result.original_fragments)

    @property
    def new_fragments(self) -> list[FragmentMetadata]:
        return _fragments(self.result.new_fragments)

    def json(self) -> str:
        return json.dumps(
            {
                "read_version": self.read_version,
                "original_fragments": _fragments_json(self.result.original_fragments),
                "new_fragments": _fragments_json(self.result.new_fragments),
                "metrics": vars(self.metrics),
            }
        )

    @staticmethod
    def from_json(text: str) -> RewriteResult:
        data = _loads(text, "RewriteResult")
        result = kernel.RewriteResult(
            int(data["read_version"]),
            _fragments_from_json(data["original_fragments"]),
            _fragments_from_json(data["new_fragments"]),
        )
        return RewriteResult(result, CompactionMetrics(**data["metrics"]))


@dataclass(frozen=True)
class CompactionTask:
    """One group of fragments to rewrite, with the options it was planned with."""

    task: kernel.CompactionTask
    options: dict[str, Any]

    @property
    def read_version(self) -> int:
        return self.task.read_version

    @property
    def fragments(self) -> list[FragmentMetadata]:
        return _fragments(self.task.fragments)

    def execute(self, dataset: LanceDataset) -> RewriteResult:
        """Write this task's live rows into new fragments of ``dataset`` (read at the planned
        version); nothing is committed until ``Compaction.commit``."""
        planned = (
            dataset if dataset.version == self.read_version else dataset.checkout_version(self.read_version)
        )
        write = kernel.compaction_write(planned._snapshot, self.options.get("max_bytes_per_file"))
        batch_size = compaction_batch_size(planned, self.options)
        result = kernel.rewrite_task(planned._snapshot, write, self.task, batch_size)
        metrics = CompactionMetrics().add(*result.groups())
        return RewriteResult(result, metrics)

    def json(self) -> str:
        return json.dumps(
            {
                "read_version": self.read_version,
                "fragments": _fragments_json(self.task.fragments),
                "sizes": list(self.task.sizes),
                "options": self.options,
            }
        )

    @staticmethod
    def from_json(text: str) -> CompactionTask:
        data = _loads(text, "CompactionTask")
        task = kernel.CompactionTask(
            int(data["read_version"]), _fragments_from_json(data["fragments"]), tuple(data["sizes"])
        )
        return CompactionTask(task, _checked_options(data["options"]))


@dataclass(frozen=True)
class CompactionPlan:
    """The tasks of one compaction, planned at ``read_version``."""

    read_version: int
    tasks: list[CompactionTask]

    def num_tasks(self) -> int:
        return len(self.tasks)

    def json(self) -> str:
        return json.dumps(
            {"read_version": self.read_version, "tasks": [json.loads(t.json()) for t in self.tasks]}
        )

    @staticmethod
    def from_json(text: str) -> CompactionPlan:
        data = _loads(text, "CompactionPlan")
        tasks = [CompactionTask.from_json(json.dumps(t)) for t in data["tasks"]]
        return CompactionPlan(int(data["read_version"]), tasks)


class Compaction:
    """pylance's ``lance.optimize.Compaction``: ``execute`` on one process, or ``plan`` /
    ``CompactionTask.execute`` / ``commit`` spread over several."""

    @staticmethod
    def execute(dataset: LanceDataset, options: CompactionOptions | dict[str, Any]) -> CompactionMetrics:
        """``dataset.optimize.compact_files(**options)``: plan, rewrite and commit here."""
        return dataset.optimize.compact_files(**_checked_options(options))

    @staticmethod
    def plan(dataset: LanceDataset, options: CompactionOptions | dict[str, Any]) -> CompactionPlan:
        """The tasks that compacting ``dataset``'s version with ``options`` runs; writes nothing."""
        given = _checked_options(options)
        plan, _ = plan_from_options(dataset, given)
        return CompactionPlan(plan.read_version, [CompactionTask(t, given) for t in plan.tasks])

    @staticmethod
    def commit(
        dataset: LanceDataset,
        rewrites: Sequence[RewriteResult],
        options: CompactionOptions | dict[str, Any] | None = None,
    ) -> CompactionMetrics:
        """Commit the executed tasks ``rewrites`` (any subset of a plan's) as one compaction and move
        ``dataset`` to the new version. ``options`` are checked as the plan's are."""
        check_compaction_options(_checked_options(options))
        metrics, version = kernel.commit_compaction(dataset._snapshot, [r.result for r in rewrites])
        dataset._move_to(version)
        return metrics
