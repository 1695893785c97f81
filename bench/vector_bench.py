"""IVF_PQ index build, query latency and recall@10, lance_fw against pylance 14 (issue 14).

``python bench/vector_bench.py [--rows 100000] [--dim 128] [--partitions 256] [--sub-vectors 16]
[--queries 50] [--nprobes 20] [--clustered]``

One dataset (fixed seed; gaussian, or 256 gaussian clusters with ``--clustered``) is written by
pylance and copied; pylance indexes one copy, lance_fw the other with the same parameters. Recall
is measured against the exact (flat) answer for every pairing: each library searching each
library's index, at ``--nprobes`` and at the libraries' default probing. Latency is the median of
single k=10 queries (``columns=["id"]``) per library on its own index. Gates (issue 14): build <=
3x pylance, query <= 2x, each recall >= pylance's on its own index - 0.05.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

import lance_fw
from lance_fw.api.indices import IndexMethods

SEED = 20261128
K = 10


def _data(rows: int, dim: int, clustered: bool, rng: np.random.Generator) -> np.ndarray:
    if not clustered:
        return rng.standard_normal((rows, dim)).astype(np.float32)
    centres = rng.standard_normal((256, dim)).astype(np.float32) * 2
    return (centres[rng.integers(0, 256, rows)] + rng.standard_normal((rows, dim))).astype(np.float32)


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _latency(ds: Any, queries: np.ndarray, nprobes: int) -> float:
    """Median seconds of one k=10 query (the index opened and cached by a first query)."""
    nearest = {"column": "vec", "k": K, "nprobes": nprobes}
    ds.to_table(nearest={**nearest, "q": queries[0]}, columns=["id"])
    times = []
    for q in queries:
        start = time.perf_counter()
        ds.to_table(nearest={**nearest, "q": q}, columns=["id"])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--partitions", type=int, default=256)
    parser.add_argument("--sub-vectors", type=int, default=16)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--nprobes", type=int, default=20)
    parser.add_argument("--metric", default="l2")
    parser.add_argument("--clustered", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    values = _data(args.rows, args.dim, args.clustered, rng)
    queries = _data(args.queries, args.dim, args.clustered, rng)
    table = pa.table(
        {
            "id": np.arange(args.rows),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), args.dim),
        }
    )
    root = Path(tempfile.mkdtemp(prefix="vector_bench_"))
    try:
        paths = {who: str(root / who) for who in ("pylance", "lance_fw")}
        lance.write_dataset(table, paths["pylance"])
        shutil.copytree(paths["pylance"], paths["lance_fw"])
        params: dict[str, Any] = {
            "num_partitions": args.partitions,
            "num_sub_vectors": args.sub_vectors,
            "metric": args.metric,
        }
        build = {
            "pylance": _timed(
                lambda: lance.dataset(paths["pylance"]).create_index("vec", "IVF_PQ", **params)
            ),
            "lance_fw": _timed(
                lambda: IndexMethods.create_index(
                    lance_fw.dataset(paths["lance_fw"]), "vec", "IVF_PQ", **params
                )
            ),
        }
        print(
            f"build  pylance {build['pylance']:.2f}s  lance_fw {build['lance_fw']:.2f}s  "
            f"ratio {build['lance_fw'] / build['pylance']:.2f}"
        )
        exact = lance.dataset(paths["pylance"])
        truth = [
            set(
                exact.to_table(
                    nearest={"column": "vec", "q": q, "k": K, "use_index": False, "metric": args.metric},
                    columns=["id"],
                )["id"].to_pylist()
            )
            for q in queries
        ]
        libraries: dict[str, Callable[[str], Any]] = {"pylance": lance.dataset, "lance_fw": lance_fw.dataset}
        probings: list[dict[str, Any]] = [
            {"nprobes": args.nprobes},
            {"nprobes": args.nprobes, "refine_factor": 10},
            {},
        ]
        for probing in probings:
            label = ",".join(f"{k}={v}" for k, v in probing.items()) or "default probing"
            for searcher, open_ in libraries.items():
                for owner in ("pylance", "lance_fw"):
                    ds = open_(paths[owner])
                    hits = [
                        len(
                            set(
                                ds.to_table(
                                    nearest={"column": "vec", "q": q, "k": K, **probing}, columns=["id"]
                                )["id"].to_pylist()
                            )
                            & t
                        )
                        for q, t in zip(queries, truth, strict=True)
                    ]
                    print(
                        f"recall@10 {label:28s} {searcher:8s} searching {owner:8s} index: "
                        f"{sum(hits) / (K * len(queries)):.3f}"
                    )
        latency = {
            "pylance": _latency(lance.dataset(paths["pylance"]), queries, args.nprobes),
            "lance_fw": _latency(lance_fw.dataset(paths["lance_fw"]), queries, args.nprobes),
        }
        print(
            f"query k=10 nprobes={args.nprobes} median  pylance {latency['pylance'] * 1000:.2f}ms  "
            f"lance_fw {latency['lance_fw'] * 1000:.2f}ms  ratio {latency['lance_fw'] / latency['pylance']:.2f}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
