"""Filtered scans most of whose probes match (``FragmentReader._dense_batches``) over pylance's
many small pages, where the other columns are read through the scan's decode queue ahead of the
probes and filtered side by side: rows, order and batch lengths must be pylance's, with probes
whose matches are few (taken) between those most rows pass, and with deleted rows."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.table.fragment as fragment_module

ROWS = 600_000
#: pylance cuts a column's pages as batches of this many rows come
STREAM_ROWS = 8192
#: rows of each region whose filter matches most rows, or few
REGION_ROWS = 100_000


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """Regions of ``REGION_ROWS`` rows alternate: ``c <> 3`` keeps 99% of one and 0.5% of the next."""
    out = str(tmp_path_factory.mktemp("dense") / "t.lance")
    rng = np.random.default_rng(31)
    dense_region = (np.arange(ROWS) // REGION_ROWS) % 2 == 0
    is_three = np.where(dense_region, rng.random(ROWS) < 0.01, rng.random(ROWS) < 0.995)
    c = np.where(is_three, 3, rng.integers(4, 100, ROWS)).astype(np.int32)
    table = pa.table(
        {
            "x": np.arange(ROWS, dtype=np.int64),
            "v": rng.random(ROWS),
            "c": c,
            "s": pa.array([f"s{i % 997}" for i in range(ROWS)]),
        }
    )
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=STREAM_ROWS))
    lance.write_dataset(reader, out, max_rows_per_file=350_000)
    return out


@pytest.fixture(scope="module")
def deleted_path(path, tmp_path_factory):
    """The same rows with some deleted in the middle of dense and sparse regions."""
    out = str(tmp_path_factory.mktemp("dense-deleted") / "t.lance")
    table = lance.dataset(path).to_table()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=STREAM_ROWS))
    lance.write_dataset(reader, out, max_rows_per_file=350_000)
    lance.dataset(out).delete("(x >= 100000 AND x < 100500) OR (x >= 445000 AND x < 452000) OR x = 590001")
    return out


@pytest.mark.parametrize("probe_rows", [65536, 16384])
@pytest.mark.parametrize("columns", [["x", "v"], ["x", "v", "c"], None], ids=str)
@pytest.mark.parametrize("where", ["c <> 3", "c <> 3 AND x % 5 <> 1"])
@pytest.mark.parametrize("table", ["path", "deleted_path"])
def test_dense_probes_match_pylance(request, monkeypatch, table, where, columns, probe_rows):
    monkeypatch.setattr(fragment_module, "PROBE_ROWS", probe_rows)
    at = request.getfixturevalue(table)
    ours = list(lance_fw.dataset(at).to_batches(columns=columns, filter=where))
    theirs = list(lance.dataset(at).to_batches(columns=columns, filter=where))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    whole = pa.Table.from_batches(ours)
    assert whole.num_rows > ROWS // 3
    assert whole.equals(pa.Table.from_batches(theirs).cast(whole.schema))
    assert lance_fw.dataset(at).to_table(columns=columns, filter=where).equals(whole)
