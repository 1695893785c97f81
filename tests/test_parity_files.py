"""``tracked_files()`` and ``validate()`` against pylance, on datasets either library wrote and grew
(appends, deletes, an index, compaction), and on damaged copies."""

from __future__ import annotations

import glob
import os
import shutil

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import DatasetNotFoundError


def _grow(mod, path: str) -> None:
    table = pa.table({"x": list(range(6000)), "s": [str(i % 13) for i in range(6000)]})
    mod.write_dataset(table, path, max_rows_per_file=2500)
    ds = mod.dataset(path)
    ds.delete("x % 7 = 0 AND x < 3000")
    mod.write_dataset(table.slice(0, 700), path, mode="append")
    mod.dataset(path).create_scalar_index("x", "BTREE")
    mod.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)


def _rows(reader: pa.RecordBatchReader) -> tuple[pa.Schema, list]:
    table = reader.read_all()
    rows = sorted(
        zip(
            table.column("version").to_pylist(),
            table.column("base_uri").to_pylist(),
            table.column("path").to_pylist(),
            table.column("type").to_pylist(),
            strict=True,
        )
    )
    return table.schema, rows


@pytest.mark.parametrize("writer", [lance, lance_fw])
def test_tracked_files_match_pylance(tmp_path, writer):
    path = str(tmp_path / "ds")
    _grow(writer, path)
    ours, theirs = lance_fw.dataset(path), lance.dataset(path)
    assert _rows(ours.tracked_files()) == _rows(theirs.tracked_files())
    assert _rows(ours.tracked_files(min_version=3)) == _rows(theirs.tracked_files(min_version=3))
    calls: dict = {}
    for name, ds in (("ours", ours), ("theirs", theirs)):
        seen: list = []
        ds.tracked_files(progress=lambda done, total, seen=seen: seen.append(done)).read_all()
        calls[name] = seen
    assert calls["ours"] == calls["theirs"]
    assert ours.validate() is None and theirs.validate() is None


@pytest.mark.parametrize("damage", ["deletion file", "data file"])
def test_validate_finds_missing_files_as_pylance(tmp_path, damage):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": list(range(6000))}), path, max_rows_per_file=2500)
    lance.dataset(path).delete("x % 7 = 0")
    pattern = "_deletions/*" if damage == "deletion file" else "data/*"
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    for found in glob.glob(os.path.join(copy, pattern)):
        os.remove(found)
    with pytest.raises(OSError):
        lance.dataset(copy).validate()
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(copy).validate()
