"""Pages encode in parallel threads (several pages of one column at once, FSST reusing the first
page's symbol table): the bytes a write produces must not depend on thread timing. Writing the same
data several times gives byte-identical data files, and pylance reads them as the data."""

from __future__ import annotations

import glob
import os

import lance
import numpy as np
import pyarrow as pa

import lance_fw


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(9)
    words = np.array(["lance", "format", "columnar", "python", "arrow", "page", "chunk"])
    text = [" ".join(words[rng.integers(0, len(words), 1 + i % 9)]) for i in range(rows)]
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "x": rng.normal(size=rows),
            "text": text,
            "maybe": pa.array([None if i % 7 == 0 else f"v{i % 101}" for i in range(rows)]),
        }
    )


def test_repeated_writes_are_byte_identical(tmp_path):
    table = _table(60_000)
    contents = []
    for run in range(3):
        path = str(tmp_path / f"run{run}")
        lance_fw.write_dataset(table, path, max_page_bytes=64 * 1024)  # many pages per column
        files = sorted(glob.glob(os.path.join(path, "data", "*.lance")))
        contents.append([open(f, "rb").read() for f in files])
        assert lance.dataset(path).to_table().equals(table)
    assert contents[0] == contents[1] == contents[2]
