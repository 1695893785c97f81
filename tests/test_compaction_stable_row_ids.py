"""Compaction of datasets with stable row ids, and compaction plans around indices, against
pylance 14. Before, lance_fw refused to compact a dataset with stable row ids, and merged
fragments that different indices covered (pylance keeps them apart, so no index loses coverage).

Twin datasets (pylance writes both: deletes, an update that moves rows to a new fragment, indices)
are compacted one by each library: the same fragments come out (ids, row counts), every row keeps
its ``_rowid``, ``_take_rows`` by id and indexed filters answer alike in both libraries, and rows
appended afterwards get the same new ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw

ROWS = 15_000
FRAGMENT_ROWS = 5_000
TARGET = 6_000
LIBS = {"lance_fw": lance_fw, "pylance": lance}
FILTERS = ["cat = 3", "cat = 104", "id = 7001", "id < 40", "id BETWEEN 4990 AND 5010"]


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({"id": ids, "cat": (ids % 10).astype(np.int32), "x": np.sin(ids.astype(np.float64))})


def _layout(uri: str) -> list[tuple[int, int]]:
    return [(f.fragment_id, f.count_rows()) for f in lance.dataset(uri).get_fragments()]


def _twins(tmp_path: Path, stable: bool, indices: list[tuple[str, str]]) -> dict[str, str]:
    base = str(tmp_path / "base")
    lance.write_dataset(_table(ROWS), base, max_rows_per_file=FRAGMENT_ROWS, enable_stable_row_ids=stable)
    ds = lance.dataset(base)
    for column, kind in indices:
        ds.create_scalar_index(column, kind)
    ds.delete("id % 3 = 0")
    ds.update({"cat": "cat + 100"}, where="id % 7 = 1")  # moves rows to a new, unindexed fragment
    uris = {}
    for name in LIBS:
        uris[name] = str(tmp_path / name)
        shutil.copytree(base, uris[name])
    return uris


@pytest.mark.parametrize("indices", [[], [("cat", "BITMAP"), ("id", "BTREE")]], ids=["no index", "indexed"])
def test_compaction_keeps_stable_row_ids(tmp_path: Path, indices: list[tuple[str, str]]) -> None:
    uris = _twins(tmp_path, True, indices)
    before = lance.dataset(uris["pylance"]).to_table(with_row_id=True).sort_by("id")
    for name, uri in uris.items():
        LIBS[name].dataset(uri).optimize.compact_files(target_rows_per_fragment=TARGET)
    assert _layout(uris["lance_fw"]) == _layout(uris["pylance"])
    ids = before.column("_rowid").to_numpy()[[0, 1, 2000, 4000, -1]].tolist()
    for uri in uris.values():
        for lib in LIBS.values():
            assert lib.dataset(uri).to_table(with_row_id=True).sort_by("id").equals(before)
            assert lib.dataset(uri)._take_rows(ids).equals(lance.dataset(uris["pylance"])._take_rows(ids))
            for f in FILTERS:
                got = lib.dataset(uri).to_table(filter=f, with_row_id=True).sort_by("id")
                assert got.equals(before.filter(pa.compute.field("_rowid").isin(got.column("_rowid")))), f
                assert got.equals(lance.dataset(uris["pylance"]).to_table(filter=f, with_row_id=True).sort_by("id")), f
    for name, uri in uris.items():
        LIBS[name].write_dataset(_table(100, ROWS), uri, mode="append")
    new_ids = [lance.dataset(uri).to_table(filter=f"id >= {ROWS}", with_row_id=True).column("_rowid") for uri in uris.values()]
    assert new_ids[0].equals(new_ids[1])


@pytest.mark.parametrize("stable", [False, True])
def test_plan_keeps_differently_indexed_fragments_apart(tmp_path: Path, stable: bool) -> None:
    """The updated rows' fragment is not indexed, the others are: pylance compacts them apart."""
    uris = _twins(tmp_path, stable, [("cat", "BITMAP")])
    for name, uri in uris.items():
        LIBS[name].dataset(uri).optimize.compact_files(target_rows_per_fragment=ROWS)
    assert _layout(uris["lance_fw"]) == _layout(uris["pylance"])
    assert len(_layout(uris["pylance"])) == 2  # the rule made a difference: one run would be one
