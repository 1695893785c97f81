"""cleanup_old_versions on blob v2 datasets, run by pylance and lance_fw on datasets each wrote:
a removed data file's sidecar files go with it and count as removed data files, as pylance's."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_fw

#: inline, packed sidecar (> 64 KiB) and dedicated sidecar (> 4 MiB) values, and a null
VALUES: list[bytes | None] = [b"abc", b"x" * 70_000, b"y" * 5_000_000, None]


def _files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.mark.parametrize("writer", [lance, lance_fw], ids=["pylance-written", "lance_fw-written"])
def test_cleanup_removes_sidecars_as_pylance(tmp_path: Any, writer: Any) -> None:
    original = str(tmp_path / "original")
    table = pa.table({"id": [1, 2, 3, 4], "b": writer.blob_array(VALUES)})
    writer.write_dataset(table, original, data_storage_version="2.2")
    writer.write_dataset(table, original, data_storage_version="2.2", mode="overwrite")
    results = []
    for cleaner in (lance, lance_fw):  # each cleans its own copy of the same files (same byte counts)
        uri = str(tmp_path / f"{cleaner.__name__}")
        shutil.copytree(original, uri)
        before = _files(os.path.join(uri, "data"))
        stats = cleaner.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
        after = _files(os.path.join(uri, "data"))
        results.append(
            (len(before), len(after), stats.data_files_removed, stats.bytes_removed, stats.old_versions)
        )
        assert lance.dataset(uri).to_table().column("id").to_pylist() == [1, 2, 3, 4]
        blobs = lance.dataset(uri).take_blobs("b", indices=[0, 1, 2, 3])
        assert [None if f is None else f.read() for f in blobs] == VALUES
    assert results[1] == results[0]
    assert results[0][2] == 3  # the old data file and its two sidecars
