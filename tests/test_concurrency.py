"""Concurrent writers: no append is lost, every version stays readable, and a conflict really happened.

The writers meet at a barrier just before their first commit: each has read the same latest version
and built its manifest on it, so all but one must lose that race, get a ``CommitConflictError`` from
the commit handler and retry on the new latest version. The tests count those conflicts through a
commit-handler plugin wrapping the real one, and read pylance's view of the transactions to see that
some commit was rebased (its read version is older than the version before it). Without the retry
loop the losers fail; without the rebase their rows would be lost or the versions would clash.
"""

from __future__ import annotations

import multiprocessing as mp
import threading

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError
from lance_fw.hookspecs import hookimpl
from lance_fw.plugin_manager import get_plugin_manager, register, unregister
from lance_fw.table.commit import CommitHandler

APPENDS = 20
PLUGIN = "test-concurrency-meeting-point"


class _MeetingPointHandler(CommitHandler):
    """The real handler, but each writer's first commit waits for the others, and conflicts are counted."""

    def __init__(self, inner: CommitHandler, plugin: "_MeetingPoint"):
        super().__init__(inner.storage)
        self.inner, self.plugin = inner, plugin

    def commit(self, path: str, data: bytes) -> None:
        if not getattr(self.plugin.local, "met", False):
            self.plugin.local.met = True
            self.plugin.barrier.wait(timeout=120)
        try:
            self.inner.commit(path, data)
        except CommitConflictError:
            with self.plugin.lock:
                self.plugin.conflicts += 1
            raise


class _MeetingPoint:
    """Plugin: wraps whichever commit handler would otherwise be chosen."""

    def __init__(self, barrier):
        self.barrier, self.local, self.lock, self.conflicts = barrier, threading.local(), threading.Lock(), 0

    @hookimpl(tryfirst=True)
    def lance_commit_handler(self, storage, uri: str, options):
        others = get_plugin_manager().subset_hook_caller("lance_commit_handler", remove_plugins=[self])
        return _MeetingPointHandler(others(storage=storage, uri=uri, options=options), self)


def _rebased(uri: str) -> list[int]:
    """Versions whose transaction (as pylance reads it) was built on an older version than the previous one."""
    ds = lance.dataset(uri)
    transactions = ds.get_transactions(ds.version)  # newest first
    return [ds.version - i for i, t in enumerate(transactions) if t.read_version < ds.version - i - 1]


def _appender(uri: str, writer: int, barrier, results) -> None:
    """Append APPENDS rows; report (conflicts seen, error or None) even when failing."""
    plugin, error = _MeetingPoint(barrier), None
    register(plugin, name=PLUGIN)
    try:
        for i in range(APPENDS):
            lance_fw.write_dataset(pa.table({"writer": [writer], "i": [i]}), uri, mode="append")
    except BaseException as exc:
        error = repr(exc)
        raise
    finally:
        results.put((plugin.conflicts, error))


@pytest.mark.slow
def test_two_processes_append_concurrently(uri):
    lance_fw.write_dataset(pa.table({"writer": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}), uri,
                           data_storage_version="2.0")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(uri, w, barrier, results)) for w in (1, 2)]
    for p in procs:
        p.start()
    reports = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=300)
    assert [error for _, error in reports] == [None, None]
    assert [p.exitcode for p in procs] == [0, 0]
    assert sum(count for count, _ in reports) >= 1  # both built version 2 on version 1: one lost and retried
    ds = lance_fw.dataset(uri)
    assert ds.version == 1 + 2 * APPENDS
    rows = sorted((r["writer"], r["i"]) for r in ds.to_table().to_pylist())
    assert rows == sorted((w, i) for w in (1, 2) for i in range(APPENDS))
    for v in range(1, ds.version + 1):  # every version is readable and holds v - 1 rows
        assert lance_fw.dataset(uri, version=v).count_rows() == v - 1
    assert [f.fragment_id for f in ds.get_fragments()] == list(range(2 * APPENDS))
    assert len(_rebased(uri)) >= 1  # the loser of the first race committed a later version on version 1
    assert lance.dataset(uri).count_rows() == 2 * APPENDS


def test_threads_append_concurrently(uri):
    """Same guarantee within one process (the commit handler, not a lock in Python, decides)."""
    writers, appends = 4, 4
    lance_fw.write_dataset(pa.table({"x": pa.array([], pa.int64())}), uri, data_storage_version="2.0")
    plugin = _MeetingPoint(threading.Barrier(writers))
    register(plugin, name=PLUGIN)
    errors = []

    def append(w: int) -> None:
        try:
            for i in range(appends):
                lance_fw.write_dataset(pa.table({"x": [w * appends + i]}), uri, mode="append")
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    try:
        threads = [threading.Thread(target=append, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        unregister(PLUGIN)
    assert not errors, errors
    assert plugin.conflicts >= writers - 1  # all built version 2 on version 1: three lost, then retried
    assert sorted(lance_fw.dataset(uri).to_table().column("x").to_pylist()) == list(range(writers * appends))
    assert lance_fw.dataset(uri).version == 1 + writers * appends
    assert len(_rebased(uri)) >= writers - 1  # each loser committed a later version on version 1


def test_failed_write_leaves_no_trace(uri, tmp_path):
    import os

    lance_fw.write_dataset(pa.table({"x": [1, 2]}), uri, data_storage_version="2.0")
    before = sorted(os.listdir(f"{uri}/data"))

    def batches():
        yield pa.record_batch({"x": pa.array([3], pa.int64())})
        raise RuntimeError("source failed mid-stream")

    with pytest.raises(RuntimeError):
        lance_fw.write_dataset(batches(), uri, mode="append", schema=pa.schema([("x", pa.int64())]))
    assert sorted(os.listdir(f"{uri}/data")) == before
    assert lance_fw.dataset(uri).to_table().column("x").to_pylist() == [1, 2]
    assert lance_fw.dataset(uri).version == 1
