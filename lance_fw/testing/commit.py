"""``CommitHandlerConformance``: concurrent appends through a commit handler lose nothing.

A commit-handler (or storage) plugin's suite subclasses it and provides a fresh dataset URI, and
the options as for ``StorageConformance`` (here the class attribute; the ``options`` fixture when
they come from another fixture)::

    class TestMyCommits(CommitHandlerConformance):
        storage_options = {"my_commit_table": "lance-commits"}

        @pytest.fixture
        def dataset_uri(self):
            return f"my://bucket/{uuid.uuid4().hex}/ds"

``processes`` writers (spawned interpreters, so the handler's guarantee must hold across processes,
not only within one) each append ``appends`` one-row batches through ``lance_fw.write_dataset``,
starting together. Afterwards every acknowledged append must be in the dataset exactly once, in
the version its writer was told, and the versions must run 1, 2, ... without a gap. A threads
variant runs the same inside one process. Where pylance can open the URI it must read the final
version identically.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from lance_fw.testing._plugin import StoreUnderTest
from lance_fw.testing.data import assert_identical

#: Seconds a writer waits at the start line, and the parent for each writer's report.
WRITER_TIMEOUT_S = 300
#: The schema of the datasets the kit appends to: which writer, which of its appends.
SCHEMA = pa.schema([pa.field("writer", pa.int64()), pa.field("append", pa.int64())])


@dataclass(frozen=True)
class Appends:
    """What every writer of one race does: ``count`` one-row appends to ``uri``, each writer
    starting when ``barrier`` lets them all go (picklable: a spawned process receives it)."""

    uri: str
    options: Mapping[str, Any]
    count: int
    barrier: threading.Barrier | multiprocessing.synchronize.Barrier | None


def append_rows(job: Appends, writer: int) -> list[tuple[int, int]]:
    """``job``'s appends as ``writer``; returns (append, version it committed) for each."""
    import lance_fw

    committed = []
    if job.barrier is not None:
        job.barrier.wait(WRITER_TIMEOUT_S)
    for i in range(job.count):
        table = pa.table({"writer": [writer], "append": [i]}, schema=SCHEMA)
        ds = lance_fw.write_dataset(table, job.uri, mode="append", storage_options=dict(job.options) or None)
        committed.append((i, ds.version))
    return committed


def appender_process(job: Appends, writer: int, results: multiprocessing.queues.Queue) -> None:
    """One writer process: report ``(writer, [(append, version), ...], error or None)``. Module
    level so that ``spawn`` can import it (the plugin must be installed there: an entry point)."""
    try:
        results.put((writer, append_rows(job, writer), None))
    except BaseException as exc:
        results.put((writer, [], repr(exc)))


class CommitHandlerConformance(StoreUnderTest):
    """Base class of a commit handler's conformance tests (override ``dataset_uri``)."""

    #: Concurrent writers and one-row appends each.
    processes: ClassVar[int] = 3
    appends: ClassVar[int] = 5
    #: Threads and appends each for the in-process variant.
    threads: ClassVar[int] = 3
    thread_appends: ClassVar[int] = 4
    #: Data file version of the dataset the appends go to.
    data_storage_version: ClassVar[str] = "2.0"

    @pytest.fixture
    def dataset_uri(self, tmp_path: Path) -> str:
        """A fresh URI where no dataset exists yet (default: a local temp directory)."""
        return str(tmp_path / "ds")

    def pylance_target(self, uri: str, options: Mapping[str, Any]) -> tuple[str, dict | None] | None:
        """(URI, pylance storage_options) for pylance to read the dataset, or None when pylance
        cannot open it (the check is skipped). Default: local paths only; override it for a store
        pylance reaches too (e.g. ``return uri, dict(options)`` for S3)."""
        if "://" in uri and not uri.startswith("file://"):
            return None
        return uri.removeprefix("file://"), None

    # -- the tests ------------------------------------------------------------------------------

    def test_appends_from_processes(self, dataset_uri: str, options: Mapping[str, Any]) -> None:
        if not self.multiprocess:
            pytest.skip("the dataset is process-local (multiprocess = False): only the threads variant runs")
        self._create(dataset_uri, options)
        ctx = multiprocessing.get_context("spawn")
        barrier, results = ctx.Barrier(self.processes), ctx.Queue()
        job = Appends(dataset_uri, dict(options), self.appends, barrier)
        procs = [ctx.Process(target=appender_process, args=(job, w, results)) for w in range(self.processes)]
        for p in procs:
            p.start()
        try:
            reports = [results.get(timeout=WRITER_TIMEOUT_S) for _ in procs]
        finally:
            for p in procs:
                p.join(WRITER_TIMEOUT_S)
        errors = {w: error for w, _, error in reports if error is not None}
        assert not errors, f"writers failed: {errors}"
        self._check(dataset_uri, options, {w: committed for w, committed, _ in reports}, self.appends)

    def test_appends_from_threads(self, dataset_uri: str, options: Mapping[str, Any]) -> None:
        self._create(dataset_uri, options)
        barrier, reports, errors = threading.Barrier(self.threads), {}, {}
        job = Appends(dataset_uri, options, self.thread_appends, barrier)

        def run(writer: int) -> None:
            try:
                reports[writer] = append_rows(job, writer)
            except BaseException as exc:
                errors[writer] = exc

        threads = [threading.Thread(target=run, args=(w,)) for w in range(self.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WRITER_TIMEOUT_S)
        assert not errors, f"writers failed: {errors}"
        self._check(dataset_uri, options, reports, self.thread_appends)

    # -- helpers --------------------------------------------------------------------------------

    def _create(self, uri: str, options: Mapping[str, Any]) -> None:
        import lance_fw

        lance_fw.write_dataset(
            SCHEMA.empty_table(),
            uri,
            data_storage_version=self.data_storage_version,
            storage_options=dict(options) or None,
        )

    def _check(
        self, uri: str, options: Mapping[str, Any], reports: dict[int, list[tuple[int, int]]], appends: int
    ) -> None:
        """Every acknowledged append is present once, in the version it was acknowledged with, and
        the versions are 1..N without gaps."""
        import lance_fw

        opts = dict(options) or None
        writers = len(reports)
        assert sorted(reports) == list(range(writers))
        acknowledged = {(w, i): v for w, committed in reports.items() for i, v in committed}
        assert len(acknowledged) == writers * appends, f"missing acknowledgements: {reports}"
        versions = sorted(acknowledged.values())
        assert versions == list(range(2, 2 + writers * appends)), (
            f"acknowledged versions are not 2..{1 + writers * appends}, each once: {versions}"
        )

        ds = lance_fw.dataset(uri, storage_options=opts)
        assert ds.version == 1 + writers * appends
        assert [v["version"] for v in ds.versions()] == list(range(1, ds.version + 1)), "versions have gaps"
        rows = [(r["writer"], r["append"]) for r in ds.to_table().to_pylist()]
        assert sorted(rows) == sorted(acknowledged), "appends were lost or duplicated"
        for (w, i), version in acknowledged.items():  # each append first appears in its version
            before = lance_fw.dataset(uri, version=version - 1, storage_options=opts)
            after = lance_fw.dataset(uri, version=version, storage_options=opts)
            assert after.count_rows() == before.count_rows() + 1 == version - 1
            assert before.count_rows(filter=f"writer = {w} AND append = {i}") == 0
            assert after.count_rows(filter=f"writer = {w} AND append = {i}") == 1, (
                f"writer {w}'s append {i} was acknowledged as version {version}, which does not hold it"
            )
        self._check_pylance(uri, options, ds.to_table())

    def _check_pylance(self, uri: str, options: Mapping[str, Any], expected: pa.Table) -> None:
        try:
            import lance
        except ImportError:
            return  # a plugin's suite may not have pylance; lance_fw's own CI does
        target = self.pylance_target(uri, options)
        if target is None:
            return
        path, pylance_options = target
        ds = lance.dataset(path, storage_options=pylance_options)
        assert ds.version == 1 + expected.num_rows
        assert_identical(expected, ds.to_table(), "pylance reading the final version")
