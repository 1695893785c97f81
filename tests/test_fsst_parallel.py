"""FSST pages above ``PARALLEL_PART_BYTES`` are decoded as several runs of whole strings in
parallel threads: the strings read back exactly as pylance reads them (escapes, empty strings and
nulls included), whichever library wrote them."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.file import fsst


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


@pytest.mark.parametrize("writer", [lance, lance_fw])
@pytest.mark.parametrize("threads", [1, 2])
def test_long_strings_decode_in_pairs_as_pylance_reads_them(tmp_path, writer, threads, monkeypatch):
    """Pages of long strings are decoded two codes at a time (``PAIR_MIN_CODES_PER_STRING``), in
    parts too: the same strings as pylance reads, escapes, empty strings and nulls included."""
    rng = np.random.default_rng(5)
    words = ["lance", "ÿÿ\xff", "", "columnar", "format\x00", "vector", "p", "index"]
    picks = rng.integers(0, len(words), (40_000, 40))
    values = [" ".join(words[k] for k in row[: i % 41]) for i, row in enumerate(picks)]
    table = pa.table({"s": pa.array([None if i % 89 == 0 else v for i, v in enumerate(values)])})
    path = str(tmp_path / "ds")
    writer.write_dataset(table, path, data_storage_version="2.2")
    monkeypatch.setattr(fsst.pools, "workers", lambda: threads)
    monkeypatch.setattr(fsst, "PARALLEL_PART_BYTES", 64 * 1024)
    paired = []
    decode_pairs = fsst._decompress_pairs
    monkeypatch.setattr(fsst, "_decompress_pairs", lambda *a: paired.append(1) or decode_pairs(*a))
    ours = lance_fw.dataset(path).to_table()
    assert paired  # the path under test ran
    assert ours.equals(lance.dataset(path).to_table())
    assert ours.equals(table)
