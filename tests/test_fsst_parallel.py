"""FSST pages above ``PARALLEL_PART_BYTES`` are decoded as several runs of whole strings in
parallel threads: the strings read back exactly as pylance reads them (escapes, empty strings and
nulls included), whichever library wrote them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw_plugins.encodings_v2_1 import fsst


def _strings(rows: int) -> pa.Array:
    rng = np.random.default_rng(21)
    words = ["lance", "columnar", "ÿÿ\xff", "format", "", "pythonic", "vector", "index\x00"]
    picks = rng.integers(0, len(words), (rows, 12))
    values = [" ".join(words[k] for k in row[: 1 + i % 12]) for i, row in enumerate(picks)]
    return pa.array([None if i % 97 == 0 else v for i, v in enumerate(values)], pa.string())


@pytest.mark.parametrize("writer", [lance, lance_fw])
def test_parallel_fsst_decode_matches_pylance(tmp_path, writer, monkeypatch):
    monkeypatch.setattr(fsst, "PARALLEL_PART_BYTES", 64 * 1024)  # several parts per page
    monkeypatch.setattr(fsst.pools, "workers", lambda: 5)  # more parts than threads
    table = pa.table({"s": _strings(120_000)})
    path = str(tmp_path / "ds")
    writer.write_dataset(table, path, data_storage_version="2.2")
    ours = lance_fw.dataset(path).to_table()
    assert ours.equals(lance.dataset(path).to_table())
    assert ours.equals(table)
