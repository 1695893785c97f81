"""Decode throughput per encoding (issue: vectorised decoders) and file size vs pylance.

For each case a 1M-value column is written by pylance 2.2 (so the page uses the encoding pylance
picks) and by lance_fw 2.2; lance_fw's full read of each is timed (best of 3) and reported as MB/s
of decoded Arrow data. Usage: ``python bench/decode_throughput.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(__file__))
from datasets import size_on_disk  # noqa: E402


def cases(n: int) -> dict[str, pa.Array]:
    rng = np.random.default_rng(7)
    return {
        "inline bitpacking (sequential int32)": pa.array(np.arange(n, dtype=np.int32)),
        "dictionary (int64 0..999)": pa.array(rng.integers(0, 1000, n)),
        "flat (random int64)": pa.array(rng.integers(-2**62, 2**62, n)),
        "RLE (runs of 1000)": pa.array(np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)),
        "bitpacked floats (f64)": pa.array(rng.random(n)),
        "def levels (int32, 10% nulls)": pa.array(np.arange(n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "dictionary strings (4 values)": pa.array(rng.choice(["red", "green", "blue", "cyan"], n)),
        "FSST (hex strings)": pa.array([f"{x:016x}" for x in rng.integers(0, 2**62, n)]),
        "rep/def (list<int32>)": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "FSL<f32,8>": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        "full-zip FSL<f32,128> (n/8 rows)": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(n // 8 * 128, dtype=np.float32)), 128),
        "bool": pa.array(rng.random(n) > 0.5),
    }


def main() -> int:
    import lance

    import lance_fw

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="lance_fw_decode_")
    print(f"{'encoding':<38} {'MB':>7} {'pylance file':>14} {'lance_fw file':>14} {'size ratio':>10}")
    try:
        for name, array in cases(args.rows).items():
            table = pa.table({"c": array})
            paths = {w: os.path.join(root, f"{w}-{abs(hash(name))}") for w in ("pylance", "lance_fw")}
            lance.write_dataset(table, paths["pylance"])
            lance_fw.write_dataset(table, paths["lance_fw"])
            speeds = {}
            for writer, path in paths.items():
                ds = lance_fw.dataset(path)
                best = min(_timed(ds.to_table) for _ in range(3))
                speeds[writer] = table.nbytes / 2**20 / best
            a, b = size_on_disk(paths["lance_fw"]), size_on_disk(paths["pylance"])
            print(f"{name:<38} {table.nbytes / 2**20:7.1f} {speeds['pylance']:10.0f} MB/s {speeds['lance_fw']:10.0f} MB/s"
                  f" {a / b:10.2f}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
