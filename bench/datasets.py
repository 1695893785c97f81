"""Reproducible benchmark tables (fixed seeds) and the datasets written from them."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20261122


def numeric_table(rows: int) -> pa.Table:
    """{int64 id, float64, int32 low-cardinality, string, FSL<f32,32>} as the issue asks."""
    rng = np.random.default_rng(SEED)
    words = np.array([f"item-{i:05d}" for i in range(5000)])
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(rng.normal(100.0, 15.0, rows)),
        "category": pa.array(rng.integers(0, 50, rows).astype(np.int32)),
        "name": pa.array(words[rng.integers(0, len(words), rows)]),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 32, dtype=np.float32)), 32),
    })


def text_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(SEED + 1)
    vocab = np.array(["lance", "columnar", "format", "python", "duckdb", "spark", "vector", "index",
                      "arrow", "fragment", "manifest", "page", "chunk", "encoding", "query", "scan"])
    lengths = rng.integers(5, 60, rows)
    words = vocab[rng.integers(0, len(vocab), int(lengths.sum()))]
    splits = np.cumsum(lengths)[:-1]
    docs = [" ".join(w) for w in np.split(words, splits)]
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "body": pa.array(docs),
                     "title": pa.array([d[:40] for d in docs])})


#: Rows per batch of the streamed copy (``pylance-2.2-batched``).
STREAM_BATCH_ROWS = 8192


def write_all(root: str, table: pa.Table, name: str) -> dict[str, str]:
    """The same table as a pylance 2.2 dataset, lance_fw 2.0 and 2.2 datasets, and Parquet."""
    import lance

    import lance_fw

    paths = {
        "pylance-2.2": os.path.join(root, f"{name}-pylance-2.2.lance"),
        "pylance-2.2-batched": os.path.join(root, f"{name}-pylance-2.2-batched.lance"),
        "lance_fw-2.0": os.path.join(root, f"{name}-lance_fw-2.0.lance"),
        "lance_fw-2.2": os.path.join(root, f"{name}-lance_fw-2.2.lance"),
        "parquet": os.path.join(root, f"{name}.parquet"),
    }
    for path in paths.values():
        shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else None
    lance.write_dataset(table, paths["pylance-2.2"])
    # the same rows streamed in batches, as a pipeline writes them: pylance cuts a column's pages
    # as the batches come (tens to a hundred pages a column, each FSST page with its own table)
    batches = table.to_batches(max_chunksize=STREAM_BATCH_ROWS)
    lance.write_dataset(pa.RecordBatchReader.from_batches(table.schema, batches), paths["pylance-2.2-batched"])
    lance_fw.write_dataset(table, paths["lance_fw-2.0"], data_storage_version="2.0")
    lance_fw.write_dataset(table, paths["lance_fw-2.2"], data_storage_version="2.2")
    pq.write_table(table, paths["parquet"])
    return paths


def size_on_disk(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def drained(relation) -> pa.Table:
    """Every row of a DuckDB relation. DuckDB 2.0's ``relation.arrow()`` returns a lazy
    ``RecordBatchReader``: timing only that call timed the query up to its first batch."""
    result = relation.arrow()
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
