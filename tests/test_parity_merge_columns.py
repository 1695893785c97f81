"""``LanceFragment.merge_columns`` + ``LanceOperation.Merge`` (pylance's distributed
``add_columns``) against pylance: the same code on both libraries gives the same table, schema
and row order, each library reads the other's result, and refusals match pylance's."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 10_000  # four fragments, pages of more than one 4096-value chunk


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    return pa.table({"id": np.arange(ROWS), "x": rng.random(ROWS), "s": [f"s{i % 13}" for i in range(ROWS)]})


def _double(batch: pa.RecordBatch) -> pa.RecordBatch:
    import pyarrow.compute as pc

    return pa.record_batch([pc.multiply(batch.column("x"), 2)], names=["x2"])


def _merged(lib, path: str, value_func, columns=None) -> pa.Table:
    ds = lib.dataset(path)
    fragments, schema = [], None
    for fragment in ds.get_fragments():
        meta, schema = fragment.merge_columns(value_func, columns=columns, batch_size=1000)
        fragments.append(meta)
    lib.LanceDataset.commit(path, lib.LanceOperation.Merge(fragments, schema), read_version=ds.version)
    return lib.dataset(path).to_table()


@pytest.mark.parametrize(
    ("value_func", "columns"), [({"y": "x * 2", "t": "concat(s, '!')"}, None), (_double, ["x"])], ids=["sql", "udf"]
)
def test_merge_columns_then_merge_matches_pylance(tmp_path, value_func, columns):
    base = str(tmp_path / "base.lance")
    lance.write_dataset(_table(), base, max_rows_per_file=3000)
    lance.dataset(base).delete("id % 97 = 0")
    paths = {}
    for lib in (lance, lance_fw):
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        shutil.copytree(base, paths[lib])
    want = _merged(lance, paths[lance], value_func, columns)
    got = _merged(lance_fw, paths[lance_fw], value_func, columns)
    assert got.equals(want)
    assert lance.dataset(paths[lance_fw]).to_table().equals(want)  # pylance reads lance_fw's commit
    assert lance_fw.dataset(paths[lance]).to_table().equals(want)
    fw_fields = [list(d.fields) for f in lance.dataset(paths[lance_fw]).get_fragments() for d in f.data_files()]
    pl_fields = [list(d.fields) for f in lance.dataset(paths[lance]).get_fragments() for d in f.data_files()]
    assert fw_fields == pl_fields


@pytest.mark.parametrize("value_func", [{"x": "x + 1"}, {"y": "nope + 1"}, 42], ids=["exists", "unknown", "int"])
def test_merge_columns_refuses_what_pylance_refuses(tmp_path, value_func):
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_table(), path)
    classes = []
    for lib in (lance, lance_fw):
        fragment = lib.dataset(path).get_fragments()[0]
        with pytest.raises(Exception) as info:
            fragment.merge_columns(value_func)
        classes.append(next(c for c in (TypeError, ValueError, OSError) if isinstance(info.value, c)))
    assert classes[0] is classes[1]
