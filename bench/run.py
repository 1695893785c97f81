"""``make bench``: lance_fw against pylance and pyarrow Parquet, in the same run.

Generates its tables (fixed seeds), writes them with every engine, runs each workload several
times and prints medians and ratios (lance_fw / peer); results also go to bench/results/*.json.
Targets are in bench/README.md. Usage: ``python bench/run.py [--rows N] [--repeat K] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(__file__))
import datasets  # noqa: E402
import index_bench  # noqa: E402

RESULTS = os.path.join(os.path.dirname(__file__), "results")


#: A timed sample lasts at least this long: a call of a millisecond (a point lookup) is timed as
#: the mean of a loop of calls, where one call's time is mostly timer and scheduler noise.
MIN_SAMPLE_SECONDS = 0.1


def _first_call(fn: Callable[[], object]) -> int | None:
    """Calls per timed sample for ``fn``, from one warm-up call; None if the engine cannot do it."""
    try:
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
    except NotImplementedError:
        return None
    return max(1, min(1000, int(MIN_SAMPLE_SECONDS / max(first, 1e-6))))


def timed(engines: dict[str, Callable[[], object]], repeat: int) -> dict[str, float | None]:
    """Median seconds per call of each engine over ``repeat`` samples (at least 5 for calls
    short enough to loop) after one warm-up each; None for an engine that cannot do it.

    The engines take their samples in turns, round r starting with a different engine, rather
    than one engine's samples after the other's: this box has slow spells lasting seconds (one
    run measured a DuckDB point lookup at 1.93x that measured 0.95x alone right after), and in
    turns such a spell falls on every engine of a row instead of on whichever ran then."""
    calls = {name: _first_call(fn) for name, fn in engines.items()}
    rounds = {name: max(repeat, 5) if n > 1 else repeat for name, n in calls.items() if n}
    runs: dict[str, list[float]] = {name: [] for name in rounds}
    order = list(rounds)
    for r in range(max(rounds.values(), default=0)):
        for name in order[r % len(order):] + order[: r % len(order)]:
            if len(runs[name]) >= rounds[name]:
                continue
            fn, n = engines[name], calls[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            runs[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(runs[name]) if name in runs else None for name in engines}


def machine() -> dict:
    """What the numbers were measured on, and how fast it ran Python and small numpy calls then:
    the same code has measured 2-3x slower on one day's box than another's, and Python-bound
    paths (a take of 100 rows) slow down more than pylance's, so a ratio is read with these."""
    import platform
    import timeit

    model = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        model = names[0] if names else model
    small = np.arange(100)
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python_sum_range_1e6_ms": min(timeit.repeat("sum(range(1_000_000))", number=1, repeat=5)) * 1e3,
        "numpy_add_100_us": min(timeit.repeat(lambda: small + 1, number=10_000, repeat=5)) / 10_000 * 1e6,
    }


def workloads(paths: dict[str, str], rows: int, indices: np.ndarray):
    import lance

    import lance_fw

    def fw(key):
        return lance_fw.dataset(paths[key])

    def pl(key):
        return lance.dataset(paths[key])

    parquet = paths["parquet"]
    idx = indices.tolist()
    selective = rows // 3

    def lance_fw_filter(ds, text, expr):
        try:
            return ds.to_table(filter=text)
        except Exception:  # noqa: BLE001 - older lance_fw: expressions only
            return ds.to_table(filter=expr)

    def need(obj, name):
        if not hasattr(obj, name):
            raise NotImplementedError(name)
        return getattr(obj, name)

    out = {}
    for key in ("pylance-2.2", "pylance-2.2-batched", "lance_fw-2.0", "lance_fw-2.2"):
        out[f"scan 2 numeric cols [{key}]"] = {
            "lance_fw": lambda k=key: fw(k).to_table(columns=["id", "value"]),
            "pylance": lambda k=key: pl(k).to_table(columns=["id", "value"]),
            "parquet": lambda: pq.read_table(parquet, columns=["id", "value"]),
        }
        out[f"scan all cols [{key}]"] = {
            "lance_fw": lambda k=key: fw(k).to_table(),
            "pylance": lambda k=key: pl(k).to_table(),
            "parquet": lambda: pq.read_table(parquet),
        }
        out[f"scan string col [{key}]"] = {
            "lance_fw": lambda k=key: fw(k).to_table(columns=["name"]),
            "pylance": lambda k=key: pl(k).to_table(columns=["name"]),
            "parquet": lambda: pq.read_table(parquet, columns=["name"]),
        }
        out[f"take 100 rows, all cols [{key}]"] = {
            "lance_fw": lambda k=key: need(fw(k), "take")(idx),
            "pylance": lambda k=key: pl(k).take(idx),
            "parquet": lambda: pads.dataset(parquet).take(pa.array(idx)),
        }
        out[f"take 100 rows, one col [{key}]"] = {
            "lance_fw": lambda k=key: need(fw(k), "take")(idx, columns=["value"]),
            "pylance": lambda k=key: pl(k).take(idx, columns=["value"]),
            "parquet": lambda: pads.dataset(parquet).take(pa.array(idx), columns=["value"]),
        }
        out[f"filter id = const (selective) [{key}]"] = {
            "lance_fw": lambda k=key: lance_fw_filter(fw(k), f"id = {selective}", pc.field("id") == selective),
            "pylance": lambda k=key: pl(k).to_table(filter=f"id = {selective}"),
            "parquet": lambda: pq.read_table(parquet, filters=[("id", "=", selective)]),
        }
        out[f"first 10 rows (limit) [{key}]"] = {
            "lance_fw": lambda k=key: fw(k).to_table(limit=10),
            "pylance": lambda k=key: pl(k).to_table(limit=10),
            "parquet": lambda: pads.dataset(parquet).head(10),
        }
        out[f"filter category = 7, limit 10 [{key}]"] = {
            "lance_fw": lambda k=key: fw(k).to_table(filter="category = 7", limit=10),
            "pylance": lambda k=key: pl(k).to_table(filter="category = 7", limit=10),
            "parquet": lambda: pads.dataset(parquet).head(10, filter=pc.field("category") == 7),
        }
        out[f"filter category < 5 (10%) [{key}]"] = {
            "lance_fw": lambda k=key: lance_fw_filter(fw(k), "category < 5", pc.field("category") < 5),
            "pylance": lambda k=key: pl(k).to_table(filter="category < 5"),
            "parquet": lambda: pq.read_table(parquet, filters=[("category", "<", 5)]),
        }
    # everyday calls beyond plain scans (session 26's survey), on pylance's table in one piece
    key = "pylance-2.2"
    out[f"filter category != 7 (98%), 2 cols [{key}]"] = {
        "lance_fw": lambda: fw(key).to_table(columns=["id", "value"], filter="category != 7"),
        "pylance": lambda: pl(key).to_table(columns=["id", "value"], filter="category != 7"),
        "parquet": lambda: pq.read_table(parquet, columns=["id", "value"], filters=[("category", "!=", 7)]),
    }
    out[f"count_rows(filter category < 5) [{key}]"] = {
        "lance_fw": lambda: fw(key).count_rows(filter="category < 5"),
        "pylance": lambda: pl(key).count_rows(filter="category < 5"),
        "parquet": lambda: pq.read_table(parquet, columns=["category"], filters=[("category", "<", 5)]).num_rows,
    }
    out[f"filter category = 7, offset 3000, limit 10 [{key}]"] = {
        "lance_fw": lambda: fw(key).to_table(filter="category = 7", offset=3000, limit=10),
        "pylance": lambda: pl(key).to_table(filter="category = 7", offset=3000, limit=10),
        "parquet": lambda: pads.dataset(parquet).to_table(filter=pc.field("category") == 7).slice(3000, 10),
    }
    out[f"order_by value, limit 10, all cols [{key}]"] = {
        "lance_fw": lambda: fw(key).to_table(order_by=["value"], limit=10),
        "pylance": lambda: pl(key).scanner(order_by=["value"], limit=10).to_table(),
        "parquet": lambda: pq.read_table(parquet).sort_by("value").slice(0, 10),
    }
    return out


def duckdb_workloads(paths: dict[str, str], rows: int):
    """DuckDB's queries per engine, each engine on one connection opened (and for pylance, with its
    dataset registered) once, as an analyst's session runs them: a fresh ``duckdb.connect()`` is
    ~13 ms, the same for all three, which hid the engines' differences in every ratio."""
    import duckdb
    import lance

    queries = {
        "group-by aggregate": "SELECT category, count(*), avg(value) FROM {t} GROUP BY category",
        "selective filter": f"SELECT id, value FROM {{t}} WHERE id = {rows // 2}",
        "point lookup": f"SELECT * FROM {{t}} WHERE id = {rows // 7}",
        "top-N": "SELECT id, value FROM {t} ORDER BY value DESC LIMIT 10",
        # an analyst's first look: any 10 rows, any 10 matching rows (no ORDER BY)
        "LIMIT 10": "SELECT * FROM {t} LIMIT 10",
        "filtered LIMIT 10": "SELECT * FROM {t} WHERE category = 7 LIMIT 10",
    }
    try:
        from lance_fw import duckdb as fw_duckdb  # the lance_scan front end
    except ImportError:
        fw_duckdb = None
    fw_con = fw_duckdb.connect() if fw_duckdb is not None else None
    pl_con = duckdb.connect()
    pl_con.register("pl", lance.dataset(paths["pylance-2.2"]))
    pq_con = duckdb.connect()
    out = {}
    for name, sql in queries.items():
        def run_lance_fw(sql=sql):
            if fw_con is None:
                raise NotImplementedError("lance_scan")
            return datasets.drained(fw_con.sql(sql.format(t=f"lance_scan('{paths['lance_fw-2.2']}')")))

        def run_pylance(sql=sql):
            return datasets.drained(pl_con.sql(sql.format(t="pl")))

        def run_parquet(sql=sql):
            return datasets.drained(pq_con.sql(sql.format(t=f"read_parquet('{paths['parquet']}')")))
        out[f"duckdb {name}"] = {"lance_fw": run_lance_fw, "pylance": run_pylance, "parquet": run_parquet}
    # plain aggregates over pylance's pages cut small (a streamed write), where a scan's per-page
    # cost shows (DuckDB asks for `id` to count)
    pl_con.register("pl_batched", lance.dataset(paths["pylance-2.2-batched"]))
    batched = {
        "count(*)": "SELECT count(*) FROM {t}",
        "min / max": "SELECT min(id), max(value) FROM {t}",
    }
    for name, sql in batched.items():
        out[f"duckdb {name} [pylance-2.2-batched]"] = {
            "lance_fw": lambda sql=sql: datasets.drained(
                fw_con.sql(sql.format(t=f"lance_scan('{paths['pylance-2.2-batched']}')"))
            ),
            "pylance": lambda sql=sql: datasets.drained(pl_con.sql(sql.format(t="pl_batched"))),
            "parquet": lambda sql=sql: datasets.drained(pq_con.sql(sql.format(t=f"read_parquet('{paths['parquet']}')"))),
        }
    return out


_PEAK_SNIPPET = r"""
import sys, numpy as np, pyarrow as pa
engine, job, path, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if job == "scan":
    if engine == "lance_fw":
        import lance_fw; n = sum(b.num_rows for b in lance_fw.dataset(path).to_batches())
    elif engine == "pylance":
        import lance; n = sum(b.num_rows for b in lance.dataset(path).to_batches())
    else:
        import pyarrow.parquet as pq; n = sum(b.num_rows for b in pq.ParquetFile(path).iter_batches())
else:
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64())])
    def batches():
        for i in range(0, rows, 65536):
            k = min(65536, rows - i)
            yield pa.record_batch([pa.array(np.arange(i, i + k)), pa.array(np.random.rand(k))], schema=schema)
    reader = pa.RecordBatchReader.from_batches(schema, batches())
    if engine == "lance_fw":
        import lance_fw; lance_fw.write_dataset(reader, path)
    elif engine == "pylance":
        import lance; lance.write_dataset(reader, path)
    else:
        import pyarrow.parquet as pq
        with pq.ParquetWriter(path, schema) as w:
            for b in reader: w.write_batch(b)
# VmHWM belongs to this process's own memory map (ru_maxrss would include the parent's at exec)
print(next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")))
"""


def peak_memory(engine: str, job: str, path: str, rows: int) -> int:
    out = subprocess.run([sys.executable, "-c", _PEAK_SNIPPET, engine, job, path, str(rows)],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--text-rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200k rows, 1 repeat (smoke test)")
    parser.add_argument("--only", default="", help="comma-separated substrings: run only the workloads "
                                                   "whose names contain one (skips writes and peak memory)")
    args = parser.parse_args()
    only = [o.strip() for o in args.only.split(",") if o.strip()]

    def chosen(name: str) -> bool:
        return not only or any(o in name for o in only)
    if args.quick:
        args.rows, args.text_rows, args.repeat = 200_000, 50_000, 1
    os.makedirs(RESULTS, exist_ok=True)
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="lance_fw_bench_") as root:
        table = datasets.numeric_table(args.rows)
        text = datasets.text_table(args.text_rows)
        print(f"[bench] {args.rows:,}-row numeric table, {args.text_rows:,}-row text table, "
              f"{args.repeat} repeats", flush=True)
        box = machine()
        print(f"[bench] machine: {box}", flush=True)
        if not only:
            results += write_results(root, "numeric", table, args.repeat)
            results += write_results(root, "text", text, args.repeat)
        paths = datasets.write_all(root, table, "numeric")
        text_paths = datasets.write_all(root, text, "text")
        # the tables just written sit dirty in the page cache: flushed now, not by the kernel's
        # writeback in the middle of the first read rows (a 2-column scan of the batched table
        # measured 163 ms in the bench and 71 ms alone right after)
        os.sync()
        rng = np.random.default_rng(datasets.SEED)
        indices = np.sort(rng.choice(args.rows, 100, replace=False))
        suites = {**workloads(paths, args.rows, indices), **duckdb_workloads(paths, args.rows)}
        index_suites, index_rows = index_bench.index_workloads(root, paths, args.rows)
        suites.update(index_suites)
        for row in index_rows:
            if chosen(row["workload"]):
                results.append(row)
                print(_fmt(row), flush=True)
        suites["scan text table [lance_fw-2.2 vs pylance-2.2]"] = {
            "lance_fw": lambda: __import__("lance_fw").dataset(text_paths["lance_fw-2.2"]).to_table(),
            "pylance": lambda: __import__("lance").dataset(text_paths["pylance-2.2"]).to_table(),
            "parquet": lambda: pq.read_table(text_paths["parquet"]),
        }
        # The datasets just written (pylance's and Parquet's unsynced, GBs with the index copies)
        # would otherwise reach the disk during the timed reads: kernel writeback taking one of
        # this box's two cores at random moments. Flushed once here, before any read is timed.
        os.sync()
        for name, engines in suites.items():
            if not chosen(name):
                continue
            row = {"workload": name, **timed(engines, args.repeat)}
            results.append(row)
            print(_fmt(row), flush=True)
        for job, rows in (("scan", args.rows), ("write", args.rows)):
            if only:
                break
            row = {"workload": f"peak RSS bytes: {job}", "unit": "bytes"}
            for engine in ("lance_fw", "pylance", "parquet"):
                target = {"lance_fw": paths["lance_fw-2.2"], "pylance": paths["pylance-2.2"],
                          "parquet": paths["parquet"]}[engine] if job == "scan" \
                    else os.path.join(root, f"peak-{engine}" + (".parquet" if engine == "parquet" else ".lance"))
                row[engine] = peak_memory(engine, job, target, rows)
            results.append(row)
            print(_fmt(row), flush=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(RESULTS, f"bench-{stamp}.json"), "w") as f:
        json.dump({"rows": args.rows, "repeat": args.repeat, "machine": box, "results": results}, f, indent=2)
    print(f"[bench] wrote bench/results/bench-{stamp}.json")
    return 0


def write_results(root: str, name: str, table: pa.Table, repeat: int) -> list[dict]:
    import lance

    import lance_fw

    out = []
    paths = {e: os.path.join(root, f"w-{name}-{e}") for e in ("lance_fw", "pylance", "parquet")}

    def write(engine):
        path = paths[engine]
        import shutil
        shutil.rmtree(path, ignore_errors=True)
        if os.path.isfile(path):
            os.remove(path)
        if engine == "lance_fw":
            lance_fw.write_dataset(table, path)
        elif engine == "pylance":
            lance.write_dataset(table, path)
        else:
            pq.write_table(table, path)
    def write_synced(engine):
        write(engine)
        sync_tree(paths[engine])

    row = {"workload": f"write {name} table (2.2)"}
    size = {"workload": f"size on disk, {name} table", "unit": "bytes"}
    row.update(timed({e: (lambda e=e: write(e)) for e in paths}, repeat))
    for engine in paths:
        size[engine] = datasets.size_on_disk(paths[engine])
    synced = {"workload": f"write {name} table (2.2), synced to disk"}
    synced.update(timed({e: (lambda e=e: write_synced(e)) for e in paths}, repeat))
    for r in (row, synced, size):
        print(_fmt(r), flush=True)
        out.append(r)
    return out


def sync_tree(path: str) -> None:
    """fsync every file and directory under ``path`` (or the file ``path``). lance_fw syncs the
    files it writes before it commits (a manifest must not outlive its data files in a crash);
    pylance and ``pq.write_table`` leave them in the page cache, so the plain write rows compare
    a durable write with a cached one. This row makes every engine's write durable."""
    targets = [path] if os.path.isfile(path) else [
        os.path.join(d, n) for d, dirs, files in os.walk(path) for n in [*files, *dirs]
    ] + [path]
    for target in targets:
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fmt(row: dict) -> str:
    unit = row.get("unit", "s")

    def show(v):
        if v is None:
            return "n/a"
        return f"{v / 2**20:.1f} MiB" if unit == "bytes" else f"{v * 1000:.1f} ms"

    def ratio(peer):
        a, b = row.get("lance_fw"), row.get(peer)
        return f"{a / b:.2f}x" if a is not None and b else "n/a"
    extra = f"  vs unindexed {ratio('unindexed'):>7}" if "unindexed" in row else ""
    return (f"{row['workload']:<52} lance_fw {show(row.get('lance_fw')):>11}  pylance {show(row.get('pylance')):>11}"
            f"  parquet {show(row.get('parquet')):>11}  | vs pylance {ratio('pylance'):>7}  vs parquet "
            f"{ratio('parquet'):>7}{extra}")


if __name__ == "__main__":
    sys.exit(main())
