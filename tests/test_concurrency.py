"""Concurrent writers: no append is lost, every version stays readable."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

import lance_fw

APPENDS = 20


def _appender(uri: str, writer: int, barrier) -> None:
    barrier.wait()
    for i in range(APPENDS):
        lance_fw.write_dataset(pa.table({"writer": [writer], "i": [i]}), uri, mode="append")


@pytest.mark.slow
def test_two_processes_append_concurrently(uri):
    lance_fw.write_dataset(pa.table({"writer": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}), uri,
                           data_storage_version="2.0")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_appender, args=(uri, w, barrier)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    ds = lance_fw.dataset(uri)
    assert ds.version == 1 + 2 * APPENDS
    rows = sorted((r["writer"], r["i"]) for r in ds.to_table().to_pylist())
    assert rows == sorted((w, i) for w in (1, 2) for i in range(APPENDS))
    for v in range(1, ds.version + 1):  # every version is readable and holds v - 1 rows
        assert lance_fw.dataset(uri, version=v).count_rows() == v - 1
    assert [f.fragment_id for f in ds.get_fragments()] == list(range(2 * APPENDS))

    import lance

    assert lance.dataset(uri).count_rows() == 2 * APPENDS


def test_threads_append_concurrently(uri):
    """Same guarantee within one process (the commit handler, not a lock in Python, decides)."""
    from concurrent.futures import ThreadPoolExecutor

    lance_fw.write_dataset(pa.table({"x": pa.array([], pa.int64())}), uri, data_storage_version="2.0")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda x: lance_fw.write_dataset(pa.table({"x": [x]}), uri, mode="append"), range(16)))
    assert sorted(lance_fw.dataset(uri).to_table().column("x").to_pylist()) == list(range(16))


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
