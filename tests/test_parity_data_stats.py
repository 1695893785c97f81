"""``ds.stats.data_stats()`` against pylance: bytes on disk per field (nested fields included) of
datasets written by either library in each file version, read by both, equal to the byte."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 5000  # crosses a 4096-row chunk; max_rows_per_file makes two fragments
LIBS = (lance, lance_fw)
_IDS = np.arange(ROWS)

TABLES = {
    "flat": lambda: pa.table({"a": _IDS, "b": [f"v{i}" for i in _IDS]}),
    "struct": lambda: pa.table(
        {"a": _IDS, "s": pa.StructArray.from_arrays([_IDS * 2, [str(i % 7) for i in _IDS]], names=["x", "y"])}
    ),
    "list": lambda: pa.table(
        {"a": _IDS, "l": pa.array([[i, i + 1] if i % 3 else None for i in _IDS], pa.list_(pa.int32()))}
    ),
    "list_of_struct": lambda: pa.table(
        {
            "l": pa.array(
                [[{"p": i, "q": str(i)}] for i in _IDS],
                pa.list_(pa.struct([("p", pa.int64()), ("q", pa.string())])),
            )
        }
    ),
    "fixed_size_list": lambda: pa.table(
        {
            "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(ROWS * 4, dtype=np.float32)), 4),
            "a": _IDS,
        }
    ),
    "struct_in_struct": lambda: pa.table(
        {
            "s": pa.StructArray.from_arrays(
                [pa.StructArray.from_arrays([_IDS], names=["z"]), _IDS], names=["inner", "w"]
            ),
            "b": _IDS,
        }
    ),
}


def _stats(lib, path: str, version: int | None = None) -> list[tuple[int, int]]:
    result = lib.dataset(path, version=version).stats.data_stats()
    assert type(result).__name__ == "DataStatistics"
    return [(f.id, f.bytes_on_disk) for f in result.fields]


def _pre_order(fields: list) -> list[int]:
    return [i for f in fields for i in (f.id(), *_pre_order(f.children()))]


@pytest.mark.parametrize("writer", LIBS, ids=lambda lib: lib.__name__)
@pytest.mark.parametrize("storage_version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("shape", sorted(TABLES))
def test_data_stats_match_pylance(tmp_path, writer, storage_version, shape):
    path = str(tmp_path / "ds")
    writer.write_dataset(TABLES[shape](), path, max_rows_per_file=3000, data_storage_version=storage_version)
    expected = _stats(lance, path)
    assert _stats(lance_fw, path) == expected
    assert [i for i, _ in expected] == _pre_order(lance.dataset(path).lance_schema.fields())
    assert sum(size for _, size in expected) > 0


@pytest.mark.parametrize("writer", LIBS, ids=lambda lib: lib.__name__)
@pytest.mark.parametrize("storage_version", ["2.0", "2.2"])
def test_data_stats_through_schema_changes(tmp_path, writer, storage_version):
    """Added columns (a second data file per fragment), dropped ones (their columns count for
    nothing), deleted rows (still on disk), appends, and an older version checked out."""
    path = str(tmp_path / "ds")
    ds = writer.write_dataset(
        TABLES["struct"](), path, max_rows_per_file=3000, data_storage_version=storage_version
    )
    ds.add_columns({"c": "a * 2"})
    ds.drop_columns(["a"])
    ds.delete("c < 100")
    ds = writer.dataset(path)
    ds.insert(writer.dataset(path).to_table().slice(0, 10))
    for version in range(1, writer.dataset(path).version + 1):
        assert _stats(lance_fw, path, version) == _stats(lance, path, version), f"version {version}"


def test_legacy_and_empty_datasets(tmp_path):
    """pylance counts nothing for legacy (0.1) files; an empty dataset has fields and no bytes."""
    legacy, empty = str(tmp_path / "legacy"), str(tmp_path / "empty")
    lance.write_dataset(TABLES["struct"](), legacy, data_storage_version="legacy")
    lance.write_dataset(TABLES["struct"]().slice(0, 0), empty)
    for path in (legacy, empty):
        assert _stats(lance_fw, path) == _stats(lance, path) == [(i, 0) for i in range(4)]


def test_exported_names():
    import sys

    for name in ("DataStatistics", "FieldStatistics"):
        assert hasattr(lance_fw, name) and hasattr(sys.modules["lance_fw.dataset"], name)
    stats = lance_fw.DataStatistics([lance_fw.FieldStatistics(id=0, bytes_on_disk=3)])
    assert stats == lance_fw.DataStatistics(fields=[lance_fw.FieldStatistics(0, 3)])
