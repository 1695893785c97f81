"""Index rows of ``make bench`` (issue 13): B-tree point lookups with lance_fw's and pylance's own
indices, the same lookup without an index (time travel to the version before it), DuckDB's point
lookup through ``lance_scan`` against ``read_parquet``, and the index build itself.

Each engine queries a copy of its own 2.2 dataset indexed by itself, so a row compares the whole
path (index files written by that engine, planning, lookup, row fetch).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Callable

import datasets


def index_workloads(root: str, paths: dict[str, str], rows: int) -> tuple[dict[str, dict[str, Callable[[], object]]], list[dict]]:
    """(workloads in ``run.py``'s shape, rows measured once here: the index builds)."""
    import duckdb
    import lance
    import pyarrow.parquet as pq

    import lance_fw
    from lance_fw import duckdb as fw_duckdb

    fw_path, pl_path = os.path.join(root, "idx-lance_fw"), os.path.join(root, "idx-pylance")
    shutil.copytree(paths["lance_fw-2.2"], fw_path)
    shutil.copytree(paths["pylance-2.2"], pl_path)
    built = {"workload": "create BTREE index on id"}
    t0 = time.perf_counter()
    lance_fw.dataset(fw_path).create_scalar_index("id", "BTREE")
    built["lance_fw"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    lance.dataset(pl_path).create_scalar_index("id", "BTREE")
    built["pylance"] = time.perf_counter() - t0
    built["parquet"] = None
    key = rows // 7
    indexed, unindexed = lance_fw.dataset(fw_path), lance_fw.dataset(fw_path, version=1)
    pl_indexed = lance.dataset(pl_path)
    lookup = f"id = {key}"
    out: dict[str, dict[str, Callable[[], object]]] = {
        "filter id = const, BTREE index (vs own index)": {
            "lance_fw": lambda: indexed.to_table(filter=lookup),
            "pylance": lambda: pl_indexed.to_table(filter=lookup),
            "parquet": lambda: pq.read_table(paths["parquet"], filters=[("id", "=", key)]),
            "unindexed": lambda: unindexed.to_table(filter=lookup),
        },
    }
    # a NOT the index answers: nearly every row (pylance counts it from the index alone)
    others = f"NOT (id = {key})"
    out["count_rows(NOT id = const), BTREE index"] = {
        "lance_fw": lambda: indexed.count_rows(others),
        "pylance": lambda: pl_indexed.count_rows(others),
        "parquet": lambda: pq.read_table(paths["parquet"], columns=["id"], filters=[("id", "!=", key)]).num_rows,
    }
    out["filter NOT id = const, id col, BTREE index"] = {
        "lance_fw": lambda: indexed.to_table(columns=["id"], filter=others),
        "pylance": lambda: pl_indexed.to_table(columns=["id"], filter=others),
        "parquet": lambda: pq.read_table(paths["parquet"], columns=["id"], filters=[("id", "!=", key)]),
    }
    sql = f"SELECT * FROM {{t}} WHERE id = {key}"
    fw_con = fw_duckdb.connect()
    pl_con = duckdb.connect()
    pl_con.register("pl", pl_indexed)
    pq_con = duckdb.connect()
    out["duckdb point lookup, BTREE index"] = {
        "lance_fw": lambda: datasets.drained(fw_con.sql(sql.format(t=f"lance_scan('{fw_path}')"))),
        "pylance": lambda: datasets.drained(pl_con.sql(sql.format(t="pl"))),
        "parquet": lambda: datasets.drained(pq_con.sql(sql.format(t=f"read_parquet('{paths['parquet']}')"))),
    }
    return out, [built]
