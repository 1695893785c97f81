"""How far decoding gains from a second thread on this machine, against a second process.

Issue 12's scans of pylance's streamed files (8192-row pages) decode on a pool of threads; this
measures the ceiling that pool has. The work: every data file's ``id`` and ``value`` columns of
the benchmark's numeric table as pylance streams it (``datasets.STREAM_BATCH_ROWS``), one job a
column and file, read whole with ``LanceFileReader.read_field`` (no scan queue, no DuckDB). The
jobs run one after another, split over N threads, and split over N forked processes. Two
controls tell the machine apart from our code: SHA-256 of 64 MiB a worker (C code that releases
the GIL: do the cores scale?) and copying 64 MiB a worker (memory bandwidth).

Usage: ``python bench/thread_scaling.py [--rows N] [--workers N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(__file__))
import datasets

#: Bytes each worker hashes or copies in the controls.
CONTROL_BYTES = 64 << 20
COLUMNS = ("id", "value")


def decode_jobs(path: str) -> list[Callable[[], object]]:
    """One job per data file and column of ``COLUMNS``: the column read whole."""
    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import resolve_storage

    files = sorted(glob.glob(os.path.join(path, "data", "*.lance")))
    storage = resolve_storage(files[0])
    jobs: list[Callable[[], object]] = []
    for name in files:
        reader = LanceFileReader(storage, name)
        for field in (f for f in reader.schema.fields if f.name in COLUMNS):
            jobs.append(functools.partial(reader.read_field, field, 0, reader.num_rows))
    return jobs


def in_threads(parts: list[list[Callable[[], object]]]) -> float:
    """Seconds for threads running one list of jobs each, side by side."""
    threads = [threading.Thread(target=lambda p=p: [job() for job in p]) for p in parts]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def in_processes(
    make_parts: Callable[[], list[list[Callable[[], object]]]], workers: int, repeat: int
) -> float:
    """Median seconds for ``workers`` forked processes running one list of jobs each, started
    together ``repeat`` times (each child warms up first; forked before this process decodes)."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(workers + 1)

    def child(k: int) -> None:
        part = make_parts()[k]
        for job in part:
            job()
        for _ in range(repeat):
            barrier.wait()
            for job in part:
                job()
            barrier.wait()

    procs = [ctx.Process(target=child, args=(k,)) for k in range(workers)]
    for p in procs:
        p.start()
    times = []
    for _ in range(repeat):
        barrier.wait()
        t0 = time.perf_counter()
        barrier.wait()
        times.append(time.perf_counter() - t0)
    for p in procs:
        p.join()
    return statistics.median(times)


def control(make_work: Callable[[], Callable[[], object]], workers: int) -> tuple[float, float]:
    """Seconds for one worker's work alone, and for ``workers`` threads each running its own
    (``make_work`` gives each its own buffers)."""
    works = [make_work() for _ in range(workers)]
    for work in works:
        work()
    t0 = time.perf_counter()
    works[0]()
    alone = time.perf_counter() - t0
    return alone, in_threads([[work] for work in works])


def hashing() -> Callable[[], object]:
    data = b"x" * CONTROL_BYTES
    return lambda: hashlib.sha256(data).digest()


def copying() -> Callable[[], object]:
    source, target = np.ones(CONTROL_BYTES // 8), np.empty(CONTROL_BYTES // 8)
    return lambda: np.copyto(target, source)


def write_streamed(path: str, rows: int) -> None:
    """pylance writes the table streamed (run in a spawned process: pylance is not fork-safe, and
    this process forks the decoding ones)."""
    import lance

    table = datasets.numeric_table(rows).select(list(COLUMNS))
    batches = table.to_batches(max_chunksize=datasets.STREAM_BATCH_ROWS)
    lance.write_dataset(pa.RecordBatchReader.from_batches(table.schema, batches), path)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="lance_fw_threads_")
    try:
        path = os.path.join(root, "streamed.lance")
        writer = multiprocessing.get_context("spawn").Process(target=write_streamed, args=(path, args.rows))
        writer.start()
        writer.join()
        if writer.exitcode:
            raise SystemExit(f"writing the streamed table failed (exit code {writer.exitcode})")
        n = args.workers

        def parts() -> list[list[Callable[[], object]]]:
            jobs = decode_jobs(path)
            return [jobs[k::n] for k in range(n)]

        forked = in_processes(parts, n, args.repeat)  # before this process starts any pool
        split = parts()
        alone = [[job for part in split for job in part]]
        in_threads(alone)
        serial = statistics.median(in_threads(alone) for _ in range(args.repeat))
        threaded = statistics.median(in_threads(split) for _ in range(args.repeat))
        print(f"decode {', '.join(COLUMNS)} of {args.rows:,} rows in {datasets.STREAM_BATCH_ROWS}-row pages:")
        print(f"  one thread        {serial * 1e3:7.1f} ms")
        print(f"  {n} threads         {threaded * 1e3:7.1f} ms  ({serial / threaded:.2f}x)")
        print(f"  {n} processes       {forked * 1e3:7.1f} ms  ({serial / forked:.2f}x)")
        for name, make_work in (("SHA-256 of 64 MiB", hashing), ("copy of 64 MiB", copying)):
            one, both = control(make_work, n)
            print(
                f"  control: {name:18s} alone {one * 1e3:6.1f} ms, {n} threads each {both * 1e3:6.1f} ms "
                f"({n * one / both:.2f}x)"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
