"""``LanceOperation.Project`` and ``LanceOperation.Restore`` committed with
``LanceDataset.commit``, against pylance: same schema, table and version, and each library reads
the other's result."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 5000


def _copies(tmp_path) -> dict:
    base = str(tmp_path / "base.lance")
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("x", pa.float64()), pa.field("s", pa.string())]
    )
    table = pa.table(
        {"id": np.arange(ROWS), "x": np.arange(ROWS) / 3, "s": [f"s{i % 9}" for i in range(ROWS)]}, schema=schema
    )
    lance.write_dataset(table, base, max_rows_per_file=2000)
    lance.write_dataset(table.slice(0, 100), base, mode="append")
    out = {}
    for lib in (lance, lance_fw):
        out[lib] = str(tmp_path / f"{lib.__name__}.lance")
        shutil.copytree(base, out[lib])
    return out


@pytest.mark.parametrize("preserves", [False, True])
def test_project_renaming_a_column_matches_pylance(tmp_path, preserves):
    """A schema from ``LanceSchema.from_pyarrow`` numbers fields in pre-order from 0, which are
    these fields' ids: the Project renames ``x`` to ``y``."""
    paths = _copies(tmp_path)
    results = {}
    for lib, path in paths.items():
        ds = lib.dataset(path)
        renamed = pa.schema([f.with_name("y") if f.name == "x" else f for f in ds.schema])
        schema = _fw_schema(renamed) if lib is lance_fw else _pylance_schema(renamed)
        lib.LanceDataset.commit(
            path, lib.LanceOperation.Project(schema, preserves_nullability=preserves), read_version=ds.version
        )
        results[lib] = lib.dataset(path).to_table()
    assert results[lance_fw].equals(results[lance])
    assert results[lance_fw].schema.equals(results[lance].schema)
    assert lance.dataset(paths[lance_fw]).to_table().equals(results[lance])
    assert lance_fw.dataset(paths[lance]).to_table().equals(results[lance])


def _fw_schema(schema: pa.Schema):
    from lance_fw.api.lance_schema import LanceSchema

    return LanceSchema.from_pyarrow(schema)


def _pylance_schema(schema: pa.Schema):
    from lance.schema import LanceSchema

    return LanceSchema.from_pyarrow(schema)


def test_restore_matches_pylance(tmp_path):
    paths = _copies(tmp_path)
    results = {}
    for lib, path in paths.items():
        ds = lib.dataset(path)
        lib.LanceDataset.commit(path, lib.LanceOperation.Restore(1), read_version=ds.version)
        done = lib.dataset(path)
        results[lib] = (done.version, done.to_table())
    assert results[lance_fw][0] == results[lance][0]
    assert results[lance_fw][1].equals(results[lance][1])
    assert lance.dataset(paths[lance_fw]).to_table().equals(results[lance][1])
