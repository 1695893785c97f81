"""``LanceFragment.delete`` + ``LanceOperation.Delete`` (pylance's distributed delete) against
pylance: same table and row order, each library reads the other's commit; a fragment losing every
row comes back as None and is listed as deleted."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 10_000


def _deleted(lib, path: str, predicate: str) -> pa.Table:
    ds = lib.dataset(path)
    updated, removed = [], []
    for fragment in ds.get_fragments():
        out = fragment.delete(predicate)
        if out is None:
            removed.append(fragment.fragment_id)
        else:
            updated.append(out)
    lib.LanceDataset.commit(path, lib.LanceOperation.Delete(updated, removed, predicate), read_version=ds.version)
    return lib.dataset(path).to_table()


@pytest.mark.parametrize("predicate", ["id % 7 = 0", "id < 3000", "x > 2", "id >= 100 AND id < 5000 OR id % 11 = 3"])
def test_fragment_delete_then_commit_matches_pylance(tmp_path, predicate):
    base = str(tmp_path / "base.lance")
    lance.write_dataset(pa.table({"id": np.arange(ROWS), "x": np.random.default_rng(2).random(ROWS)}), base,
                        max_rows_per_file=3000)
    lance.dataset(base).delete("id % 13 = 0")  # fragments that already have a deletion file
    paths = {}
    for lib in (lance, lance_fw):
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        shutil.copytree(base, paths[lib])
    want = _deleted(lance, paths[lance], predicate)
    got = _deleted(lance_fw, paths[lance_fw], predicate)
    assert got.equals(want)
    assert lance.dataset(paths[lance_fw]).to_table().equals(want)
    assert lance_fw.dataset(paths[lance]).to_table().equals(want)
    assert len(lance.dataset(paths[lance_fw]).get_fragments()) == len(lance.dataset(paths[lance]).get_fragments())
