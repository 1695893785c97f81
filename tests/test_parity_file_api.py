"""``lance_fw.file.LanceFileReader`` / ``LanceFileWriter`` against pylance's ``lance.file``: the same
code on both (issue 16), files written by each read by both, results and error classes compared."""

from __future__ import annotations

from pathlib import Path

import lance.file as pl_file
import numpy as np
import pyarrow as pa
import pytest

import lance_fw.file as fw_file

ROWS = 10_000  # several 4096-row chunks / pages


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "id": np.arange(ROWS, dtype=np.int64),
            "x": pa.array(rng.random(ROWS), mask=rng.random(ROWS) < 0.1),
            "s": [f"row {i % 97}" for i in range(ROWS)],
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 4, dtype=np.float32)), 4),
        }
    )


@pytest.fixture(params=["pylance", "lance_fw"])
def written(request, tmp_path: Path) -> str:
    lib = pl_file if request.param == "pylance" else fw_file
    path = str(tmp_path / "f.lance")
    writer = lib.LanceFileWriter(path)
    for batch in _table().to_batches(max_chunksize=3000):
        writer.write_batch(batch)
    assert writer.add_global_buffer(b"extra bytes") == 1
    writer.add_schema_metadata("origin", request.param)
    assert writer.close() == ROWS
    return path


@pytest.mark.parametrize("lib", [pl_file, fw_file], ids=["pylance", "lance_fw"])
def test_read_what_either_wrote(written: str, lib) -> None:
    reader = lib.LanceFileReader(written)
    oracle = pl_file.LanceFileReader(written)
    assert reader.num_rows() == oracle.num_rows() == ROWS
    assert reader.read_all().to_table().equals(oracle.read_all().to_table())
    assert reader.read_range(4000, 300).to_table().equals(oracle.read_range(4000, 300).to_table())
    rows = [0, 5, 4095, 4096, 9999]
    assert reader.take_rows(rows).to_table().equals(oracle.take_rows(rows).to_table())
    assert [b.num_rows for b in reader.read_all(batch_size=4000).to_batches()] == [4000, 4000, 2000]
    assert reader.read_global_buffer(1) == oracle.read_global_buffer(1) == b"extra bytes"
    ours, theirs = reader.metadata(), oracle.metadata()
    assert (ours.num_rows, ours.major_version, ours.minor_version) == (
        theirs.num_rows, theirs.major_version, theirs.minor_version
    )
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    projected = lib.LanceFileReader(written, columns=["s", "id"]).read_all().to_table()
    assert projected.equals(pl_file.LanceFileReader(written, columns=["s", "id"]).read_all().to_table())


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, p: lib.LanceFileReader(p, columns=["missing"]),
        lambda lib, p: lib.LanceFileReader(p).read_range(9990, 20).to_table(),
        lambda lib, p: lib.LanceFileReader(p).take_rows([5, 2]).to_table(),
        lambda lib, p: lib.LanceFileReader(p).read_global_buffer(7),
    ],
    ids=["unknown column", "range past the end", "unsorted take", "missing buffer"],
)
def test_errors_are_pylances_classes(written: str, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(pl_file, written)
    with pytest.raises(Exception) as ours:
        call(fw_file, written)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_versions_and_empty_files(tmp_path: Path, version: str) -> None:
    for lib in (pl_file, fw_file):
        path = str(tmp_path / f"{lib.__name__}-{version}.lance")
        writer = lib.LanceFileWriter(path, pa.schema([("a", pa.int32())]), version=version)
        assert writer.close() == 0
        meta, ours = pl_file.LanceFileReader(path).metadata(), fw_file.LanceFileReader(path).metadata()
        assert (meta.major_version, meta.minor_version) == (ours.major_version, ours.minor_version)
        assert (meta.major_version, meta.minor_version) == ((0, 3) if version == "2.0" else (2, int(version[-1])))
        assert pl_file.LanceFileReader(path).read_all().to_table().num_rows == 0


def test_writer_as_context_manager_matches_pylance(tmp_path):
    """``with LanceFileWriter(path) as w:`` closes the file at the end of the block, as pylance's."""
    import lance.file as pylance_file
    import pyarrow as pa

    import lance_fw.file as fw_file

    table = pa.table({"a": list(range(5000)), "b": [str(i) for i in range(5000)]})
    for mod, name in ((pylance_file, "pylance.lance"), (fw_file, "lance_fw.lance")):
        with mod.LanceFileWriter(str(tmp_path / name)) as writer:
            writer.write_batch(table)
    for name in ("pylance.lance", "lance_fw.lance"):
        assert pylance_file.LanceFileReader(str(tmp_path / name)).read_all().to_table().equals(table)
        assert fw_file.LanceFileReader(str(tmp_path / name)).read_all().to_table().equals(table)
