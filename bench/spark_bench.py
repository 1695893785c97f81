"""Spark data path: ``format("lance")`` and ``lance_fw.spark.read`` against Spark's native Parquet.

One local session, the same rows in both formats (an id, an int key, a double, a string and a
128-d float vector, as issue 20 measures). Each query runs three ways: Parquet, the plain Lance
data source (``spark.read.format("lance").load(p)`` then Spark's own ``select`` / ``filter``: Python
sources get neither column pruning nor filter pushdown), and the pruned read
(``lance_fw.spark.read(spark, p, columns=..., filter=...)``). Reads end in Spark's ``noop`` sink or a
small aggregate, so no rows travel to the driver. Minimum of ``--repeats`` runs after a warm-up that
starts the Python workers. Prints ratios lance/parquet; writes bench/results/spark-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The vector width issue 20 measures with.
DIM = 128
SQL = """SELECT id, CAST(id % 1000 AS INT) AS x, CAST(id % 7919 AS DOUBLE) / 7.0 AS f,
                concat('s', CAST(id % 9973 AS STRING)) AS s,
                transform(sequence(0, {dim} - 1), i -> CAST((id * 31 + i) % 1000 AS FLOAT) / 1000) AS vec
         FROM range({rows})"""


def timed(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000, help="rows (issue 20 uses 2,000,000)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2, help="Spark partitions of the written data")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import lance_fw.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "3g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lance_fw.spark.register(spark)
    root = Path(tempfile.mkdtemp(prefix="lance_fw_spark_bench_"))
    paths = {fmt: str(root / fmt) for fmt in ("parquet", "lance", "source")}
    source = spark.sql(SQL.format(rows=args.rows, dim=DIM)).withMetadata(
        "vec", {"arrow.fixed-size-list.size": DIM}
    )
    source.repartition(args.partitions).write.mode("overwrite").parquet(paths["source"])
    data = spark.read.parquet(paths["source"]).withMetadata("vec", {"arrow.fixed-size-list.size": DIM})

    def write(fmt: str) -> Callable[[], None]:
        return lambda: data.write.format(fmt).mode("overwrite").save(paths[fmt])

    def parquet() -> Any:
        return spark.read.parquet(paths["parquet"])

    def plain() -> Any:
        return spark.read.format("lance").load(paths["lance"])

    def pruned(columns: list[str] | None = None, filter: str | None = None) -> Any:
        return lance_fw.spark.read(spark, paths["lance"], columns=columns, filter=filter)

    def noop(df: Any) -> None:
        df.write.format("noop").mode("overwrite").save()

    # name -> (parquet run, plain lance run, pruned lance run)
    cases: dict[str, tuple[Callable[[], Any], ...]] = {
        "write": (write("parquet"), write("lance")),
        "count()": (lambda: parquet().count(), lambda: plain().count(), lambda: pruned().count()),
        "group-by x, sum(f)": (
            lambda: parquet().groupBy("x").agg(F.sum("f")).collect(),
            lambda: plain().groupBy("x").agg(F.sum("f")).collect(),
            lambda: pruned(["x", "f"]).groupBy("x").agg(F.sum("f")).collect(),
        ),
        "sum(id)": (
            lambda: parquet().agg(F.sum("id")).collect(),
            lambda: plain().agg(F.sum("id")).collect(),
            lambda: pruned(["id"]).agg(F.sum("id")).collect(),
        ),
        "id < 1000, all columns": (
            lambda: noop(parquet().filter("id < 1000")),
            lambda: noop(plain().filter("id < 1000")),
            lambda: noop(pruned(filter="id < 1000")),
        ),
        "one column (s)": (
            lambda: noop(parquet().select("s")),
            lambda: noop(plain().select("s")),
            lambda: noop(pruned(["s"])),
        ),
    }
    results: dict[str, Any] = {"rows": args.rows, "dim": DIM, "repeats": args.repeats, "cases": {}}
    try:
        write("parquet")()  # warm-up: starts the Python workers, creates both targets
        write("lance")()
        noop(plain())
        print(f"[spark bench] {args.rows:,} rows incl. {DIM}-d vectors, local[2], min of {args.repeats}")
        for name, runs in cases.items():
            base = timed(runs[0], args.repeats)
            row: dict[str, float] = {"parquet_s": base}
            line = f"{name:<24} parquet {base:7.2f} s"
            for label, run in zip(("lance", "pruned"), runs[1:], strict=False):
                took = timed(run, args.repeats)
                row[f"{label}_s"], row[f"{label}_ratio"] = took, took / base
                line += f" | {label} {took:7.2f} s {took / base:6.2f}x"
            results["cases"][name] = row
            print(line, flush=True)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"spark-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
