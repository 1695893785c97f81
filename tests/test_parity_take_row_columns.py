"""``_rowid`` / ``_rowaddr`` / ``_rowoffset`` named in ``take`` / ``_take_rows`` ``columns=``: the same
rows, values, column order and types as pylance, on datasets pylance wrote (with and without stable
row ids, after deletions and a compaction) read by both libraries."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 20_000
ROWS_PER_FILE = 6000
TABLE = pa.table({"a": pa.array(np.arange(ROWS), pa.int64()), "s": pa.array([f"r{i}" for i in range(ROWS)])})


@pytest.fixture(scope="module", params=[False, True], ids=["addresses", "stable row ids"])
def path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("rowcols") / "d")
    ds = lance.write_dataset(TABLE, out, max_rows_per_file=ROWS_PER_FILE, enable_stable_row_ids=request.param)
    ds.delete("a % 901 = 3 OR (a >= 4090 AND a < 4200)")
    if request.param:  # ids no longer equal addresses once rows move
        ds.optimize.compact_files(target_rows_per_fragment=9000)
        ds.delete("a % 1999 = 5")
    return out


COLUMNS = [
    ["_rowid"],
    ["_rowoffset", "a"],
    ["s", "_rowaddr", "_rowid", "a", "_rowoffset"],
]


def _both(path: str, call: Any) -> tuple[pa.Table, pa.Table]:
    return call(lance.dataset(path)), call(lance_fw.dataset(path))


@pytest.mark.parametrize("columns", COLUMNS)
def test_take(path: str, columns: list[str]) -> None:
    count = lance.dataset(path).count_rows()
    positions = [0, 4095, 4096, 7, count - 1, 12_001, 4095]
    theirs, ours = _both(path, lambda ds: ds.take(positions, columns=columns))
    assert ours.schema == theirs.schema
    assert ours.to_pydict() == theirs.to_pydict()


@pytest.mark.parametrize("columns", COLUMNS)
def test_take_rows(path: str, columns: list[str]) -> None:
    """Rows by id: the ids of live rows a scan returns, in a shuffled order."""
    ids = lance.dataset(path).to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    wanted = np.random.default_rng(7).permutation(ids)[:3000].tolist()
    theirs, ours = _both(path, lambda ds: ds._take_rows(wanted, columns=columns))
    assert ours.schema == theirs.schema
    assert ours.to_pydict() == theirs.to_pydict()
