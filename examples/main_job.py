"""The main job (README command 1), until the Spark path lands.

Generates a taxi-trip-like table in Python, writes it as a Lance dataset with lance_fw in several
appends, then reads it back with lance_fw and with the official pylance, and prints DuckDB's answers to analyst queries.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_fw

ROWS_PER_APPEND = 200_000
APPENDS = 5


def trips(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = np.datetime64("2026-01-01T00:00:00") + rng.integers(0, 86400 * 30, n).astype("timedelta64[s]")
    return pa.table({
        "trip_id": pa.array(np.arange(seed * n, (seed + 1) * n, dtype=np.int64)),
        "pickup_at": pa.array(start.astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
        "vendor": pa.array(rng.choice(["CMT", "VTS", "DDS"], n)).dictionary_encode(),
        "passengers": pa.array(rng.integers(1, 7, n).astype(np.int8)),
        "fare": pa.array(np.round(rng.gamma(2.0, 8.0, n), 2)),
        "note": pa.array([None if i % 10 == 0 else f"trip {i}" for i in range(n)]),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
    })


def main() -> int:
    root = tempfile.mkdtemp(prefix="lance_fw_demo_")
    uri = f"{root}/trips.lance"
    try:
        t0 = time.perf_counter()
        for i in range(APPENDS):
            lance_fw.write_dataset(trips(i, ROWS_PER_APPEND), uri, mode="append", data_storage_version="2.0")
            print(f"[write] append {i + 1}/{APPENDS} done ({(i + 1) * ROWS_PER_APPEND:,} rows)", flush=True)
        print(f"[write] {time.perf_counter() - t0:.2f}s")

        ds = lance_fw.dataset(uri)
        t0 = time.perf_counter()
        table = ds.to_table(columns=["vendor", "fare", "passengers", "pickup_at"])
        print(f"[lance_fw] version {ds.version}, {ds.count_rows():,} rows, {len(ds.get_fragments())} fragments, "
              f"read in {time.perf_counter() - t0:.2f}s")
        # DuckDB answers the analyst queries over the Arrow table (lance_scan() arrives with the SQL front end)
        con = duckdb.connect()
        con.register("trips", table)
        print(con.sql("SELECT vendor, count(*) AS trips, round(avg(fare), 2) AS avg_fare, sum(passengers) AS pax "
                      "FROM trips GROUP BY vendor ORDER BY vendor"))
        print(con.sql("SELECT date_trunc('week', pickup_at) AS week, count(*) AS trips FROM trips "
                      "GROUP BY week ORDER BY week LIMIT 5"))

        try:
            import lance  # the official pylance, as an independent reader
        except ImportError:
            print("[pylance] not installed; skipping the cross-check")
        else:
            theirs = lance.dataset(uri).to_table(columns=["fare"])
            ours = pc.sum(table.column("fare")).as_py()
            print(f"[pylance] reads {theirs.num_rows:,} rows; total fare {pc.sum(theirs.column('fare')).as_py():.2f} "
                  f"(lance_fw: {ours:.2f})")
            if theirs.num_rows != ds.count_rows():
                return 1
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
