"""Spark data path: ``format("lance")`` against Spark's native Parquet, in one local session.

Measures write, full read + aggregate, and a one-column aggregate (Python sources get no column
pruning, so the ``columns`` option is measured too). Minimum of ``--repeats`` runs after a warm-up
that starts the Python workers. Prints ratios lance/parquet; writes bench/results/spark-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

SQL = """SELECT id, CAST(id % 1000 AS INT) AS x, rand(1) AS f, concat('s', CAST(id % 9973 AS STRING)) AS s,
                timestamp_seconds(1767225600 + id) AS ts FROM range({rows})"""


def timed(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_fw.spark

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lance_fw.spark.register(spark)
    root = Path(tempfile.mkdtemp(prefix="lance_fw_spark_bench_"))
    df = spark.sql(SQL.format(rows=args.rows)).repartition(2).cache()
    df.count()
    results = {}
    try:
        def write(fmt):
            def run():
                target = root / fmt
                shutil.rmtree(target, ignore_errors=True)
                df.write.format(fmt).mode("overwrite").save(str(target))
            return run

        def query(fmt, aggregate, **options):
            def run():
                aggregate(spark.read.format(fmt).options(**options).load(str(root / fmt))).collect()
            return run

        def read_all(fmt, **options):
            return query(fmt, lambda d: d.groupBy("x").agg({"f": "sum", "s": "max"}), **options)

        def sum_x(fmt, **options):
            return query(fmt, lambda d: d.groupBy().sum("x"), **options)

        for fmt in ("parquet", "lance"):
            write(fmt)()  # warm-up: starts workers, creates the target
            read_all(fmt)()
        cases = {
            "write": (write("lance"), write("parquet")),
            "read all + group-by": (read_all("lance"), read_all("parquet")),
            "sum(x), full schema": (sum_x("lance"), sum_x("parquet")),
            "sum(x), columns=x": (sum_x("lance", columns="x"), sum_x("parquet")),
        }
        print(f"[spark bench] {args.rows:,} rows, local[2], min of {args.repeats}")
        for name, (lance_run, parquet_run) in cases.items():
            ours, theirs = timed(lance_run, args.repeats), timed(parquet_run, args.repeats)
            results[name] = {"lance_s": ours, "parquet_s": theirs, "ratio": ours / theirs}
            print(f"{name:<24} lance {ours:7.2f} s  parquet {theirs:7.2f} s  | lance/parquet {ours / theirs:5.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"spark-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
