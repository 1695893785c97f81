"""lance_fw against pylance over the same S3 server (SeaweedFS on loopback), in one run.

Starts SeaweedFS the way the tests do (``tests/s3_server.py``), writes one table with pylance and
with lance_fw (several fragments) into buckets on it, and times the same workloads with both
engines on both datasets: full scan, 2-column scan, take 100 random rows, filtered scans. Prints
medians and the lance_fw / pylance ratio, the same ratio for the pylance-written table on local disk
(timed in the same loop: the part of the gap that is decoding, not I/O), and the HTTP requests
lance_fw's S3 client sent per workload; writes JSON to bench/results/.

Each engine opens its dataset once and repeats the workload on it, as an application would (both
engines may then reuse what they cached about the files).

Usage: ``python bench/s3_bench.py [--rows N] [--fragments F] [--repeat K] [--only scan,take]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import datasets  # noqa: E402
from s3_server import running_s3_server  # noqa: E402

RESULTS = os.path.join(HERE, "results")
#: Ratio gates of issue 11 (lance_fw / pylance over the same S3 server).
GATES = {"take": 2.0, "scan": 1.5, "filter": 1.5}


class RequestCounter:
    """Counts the HTTP requests lance_fw's S3 client sends (by method) and the bytes its range
    GETs ask for, at aiobotocore's HTTP session (botocore calls and presigned GETs both pass)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.bytes = 0

    def install(self) -> None:
        from aiobotocore.httpsession import AIOHTTPSession

        original = AIOHTTPSession.send
        counter = self

        async def counted(session: Any, request: Any) -> Any:
            counter.calls[request.method] += 1
            span = dict(request.headers.items()).get("Range", "")
            span = span.decode() if isinstance(span, bytes) else str(span)  # botocore sends bytes
            if span.startswith("bytes=") and not span[6:].startswith("-"):
                lo, hi = span[6:].split("-")
                counter.bytes += int(hi) - int(lo) + 1
            return await original(session, request)

        AIOHTTPSession.send = counted

    def snapshot(self) -> tuple[dict[str, int], int]:
        return dict(self.calls), self.bytes


def timed_pair(engines: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of ``repeat`` runs per engine after one warm-up each, the engines'
    runs interleaved so that load from other processes falls on both alike."""
    runs: dict[str, list[float]] = {name: [] for name in engines}
    for fn in engines.values():
        fn()
    for _ in range(repeat):
        for name, fn in engines.items():
            t0 = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - t0)
    return {name: statistics.median(r) for name, r in runs.items()}


def counted(counter: RequestCounter, fn: Callable[[], object]) -> dict[str, Any]:
    """The requests one run of ``fn`` makes."""
    before, before_bytes = counter.snapshot()
    fn()
    after, after_bytes = counter.snapshot()
    calls = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
    return {"requests": calls, "range_bytes": after_bytes - before_bytes}


def workloads(fw: Any, pl: Any, rows: int, indices: list[int]) -> dict[str, dict[str, Callable]]:
    category_filter = "category < 5"
    return {
        "scan all cols": {"lance_fw": lambda: fw.to_table(), "pylance": lambda: pl.to_table()},
        "scan 2 cols (id, value)": {
            "lance_fw": lambda: fw.to_table(columns=["id", "value"]),
            "pylance": lambda: pl.to_table(columns=["id", "value"]),
        },
        "take 100 rows, all cols": {
            "lance_fw": lambda: fw.take(indices),
            "pylance": lambda: pl.take(indices),
        },
        "filter category < 5 (10%)": {
            "lance_fw": lambda: fw.to_table(filter=category_filter),
            "pylance": lambda: pl.to_table(filter=category_filter),
        },
        "filter id = const": {
            "lance_fw": lambda: fw.to_table(filter=f"id = {rows // 3}"),
            "pylance": lambda: pl.to_table(filter=f"id = {rows // 3}"),
        },
        "scan first 10 rows (limit)": {
            "lance_fw": lambda: fw.to_table(limit=10),
            "pylance": lambda: pl.to_table(limit=10),
        },
        "filter category = 7, limit 10": {
            "lance_fw": lambda: fw.to_table(filter="category = 7", limit=10),
            "pylance": lambda: pl.to_table(filter="category = 7", limit=10),
        },
    }


def gate_of(name: str) -> float:
    return next(g for k, g in GATES.items() if name.startswith(k))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--fragments", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated words; run workloads naming one")
    parser.add_argument("--profile", default="", help="cProfile lance_fw on this workload, print top")
    args = parser.parse_args()

    import lance

    import lance_fw

    table = datasets.numeric_table(args.rows)
    per_file = -(-args.rows // args.fragments)
    indices = sorted(np.random.default_rng(datasets.SEED).choice(args.rows, 100, replace=False).tolist())
    counter = RequestCounter()
    counter.install()
    results: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="lance_fw-s3bench-") as tmp,
        running_s3_server(Path(tmp)) as server,
    ):
        opts = server.storage_options
        uris = {
            "pylance-2.2": server.new_bucket() + "/t.lance",
            "lance_fw-2.2": server.new_bucket() + "/t.lance",
        }
        lance.write_dataset(table, uris["pylance-2.2"], max_rows_per_file=per_file, storage_options=opts)
        lance_fw.write_dataset(
            table,
            uris["lance_fw-2.2"],
            max_rows_per_file=per_file,
            data_storage_version="2.2",
            storage_options=opts,
        )
        local = os.path.join(tmp, "local.lance")  # the pylance-written table on local disk
        lance.write_dataset(table, local, max_rows_per_file=per_file)
        local_runs = workloads(lance_fw.dataset(local), lance.dataset(local), args.rows, indices)
        for writer, uri in uris.items():
            fw = lance_fw.dataset(uri, storage_options=opts)
            pl = lance.dataset(uri, storage_options=opts)
            for name, engines in workloads(fw, pl, args.rows, indices).items():
                if args.only and not any(w in name for w in args.only.split(",")):
                    continue
                check = engines["lance_fw"]()
                expect = engines["pylance"]()
                if not check.equals(expect):
                    raise SystemExit(f"{name} [{writer}]: lance_fw and pylance disagree")
                if args.profile and args.profile in name:
                    import cProfile
                    import pstats

                    prof = cProfile.Profile()
                    prof.enable()
                    engines["lance_fw"]()
                    prof.disable()
                    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
                row: dict[str, Any] = {"workload": name, "writer": writer, "gate": gate_of(name)}
                both = dict(engines)
                if writer == "pylance-2.2":  # the same files on local disk: what decoding alone costs
                    both.update({f"local {k}": fn for k, fn in local_runs[name].items()})
                medians = timed_pair(both, args.repeat)
                row["pylance_s"], row["lance_fw_s"] = medians["pylance"], medians["lance_fw"]
                row["ratio"] = row["lance_fw_s"] / row["pylance_s"]
                if "local lance_fw" in medians:
                    row["local_ratio"] = medians["local lance_fw"] / medians["local pylance"]
                row.update(counted(counter, engines["lance_fw"]))
                results.append(row)
                print(_fmt(row), flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    out = os.path.join(RESULTS, f"s3-bench-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(out, "w") as f:
        json.dump(
            {"rows": args.rows, "fragments": args.fragments, "repeat": args.repeat, "results": results},
            f,
            indent=1,
        )
    print(f"\nwrote {out}")
    return 0


def _fmt(row: dict[str, Any]) -> str:
    ok = "ok " if row["ratio"] <= row["gate"] else "OVER"
    reqs = ",".join(f"{k}={v}" for k, v in sorted(row["requests"].items()))
    local = f"{row['local_ratio']:5.2f}x" if "local_ratio" in row else "  -   "
    return (
        f"{row['workload']:<28} [{row['writer']:<12}] lance_fw {row['lance_fw_s'] * 1e3:8.1f} ms  "
        f"pylance {row['pylance_s'] * 1e3:8.1f} ms  ratio {row['ratio']:5.2f}x (gate {row['gate']}x {ok}; "
        f"local disk {local})  "
        f"lance_fw requests: {reqs} ({row['range_bytes'] / 2**20:.1f} MiB ranged)"
    )


if __name__ == "__main__":
    pa.set_cpu_count(pa.cpu_count())
    sys.exit(main())
