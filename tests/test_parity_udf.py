"""``lance_fw.batch_udf`` / ``lance_fw.udf`` against pylance 14's ``lance.batch_udf`` / ``lance.udf``:
``add_columns`` with a ``BatchUDF`` (output schema given or inferred, pandas results, read
columns), and the checkpoint's resume: a UDF that fails part way through, then runs again with the
same ``checkpoint_file``, is called only for the batches not saved, in both libraries, and the
file is gone once the columns are committed. Same code on both, values, schemas, call counts and
error classes compared; 10,000 rows in four fragments, crossing the 4096-row boundary."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
import lance_fw.udf as fw_udf

ROWS = 10_000
ROWS_PER_FILE = 3000
BATCH = 1000
LIBS = pytest.mark.parametrize("lib", [lance, lance_fw], ids=["pylance", "lance_fw"])
OUT = pa.schema([pa.field("b", pa.int64())])


def _write(lib: ModuleType, path: Path) -> Any:
    table = pa.table({"a": pa.array(range(ROWS), pa.int64()), "s": [f"v{i % 7}" for i in range(ROWS)]})
    return lib.write_dataset(table, str(path), max_rows_per_file=ROWS_PER_FILE)


def _double(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch([pc.multiply(batch.column("a"), 2)], names=["b"])


def test_names_exist() -> None:
    assert callable(lance_fw.batch_udf)
    for name in ("BatchUDF", "BatchUDFCheckpoint", "batch_udf", "normalize_transform"):
        assert hasattr(fw_udf, name), name
    assert fw_udf.BatchUDFCheckpoint.BatchInfo(1, 2) == lance.udf.BatchUDFCheckpoint.BatchInfo(1, 2)


@LIBS
def test_batch_udf_is_the_function(lib: ModuleType) -> None:
    wrapped = lib.batch_udf(output_schema=OUT)(_double)
    batch = pa.record_batch([pa.array([1, 2], pa.int64())], names=["a"])
    assert wrapped(batch).equals(_double(batch))
    assert wrapped.output_schema == OUT and wrapped.cache is None and wrapped.func is _double


def _add(lib: ModuleType, path: Path, transform: Callable[[ModuleType], Any], **kwargs: Any) -> pa.Table:
    ds = _write(lib, path)
    ds.add_columns(transform(lib), **kwargs)
    return lib.dataset(str(path)).to_table()


@pytest.mark.parametrize(
    "case",
    ["given", "inferred", "pandas", "read_columns", "two_columns"],
)
def test_add_columns_batch_udf(tmp_path: Path, case: str) -> None:
    def transform(lib: ModuleType) -> Any:
        if case == "given":
            return lib.batch_udf(output_schema=OUT)(_double)
        if case == "inferred":
            return lib.batch_udf()(_double)
        if case == "pandas":
            return lib.batch_udf()(lambda b: b.to_pandas()[["a"]].rename(columns={"a": "c"}) * 3)
        if case == "read_columns":
            return lib.batch_udf()(lambda b: pa.record_batch([pc.utf8_upper(b.column("s"))], names=["u"]))
        return lib.batch_udf(
            output_schema=pa.schema([pa.field("x", pa.float64()), pa.field("y", pa.string())])
        )(lambda b: pa.record_batch([pc.cast(b.column("a"), pa.float64()), b.column("s")], names=["x", "y"]))

    kwargs: dict[str, Any] = {"read_columns": ["s"]} if case == "read_columns" else {}
    expected = _add(lance, tmp_path / "py", transform, batch_size=BATCH, **kwargs)
    got = _add(lance_fw, tmp_path / "fw", transform, batch_size=BATCH, **kwargs)
    assert got.schema.equals(expected.schema)
    assert got.equals(expected)


def _resume(
    lib: ModuleType, path: Path, checkpoint: Path, fail_from: int, given: bool = True
) -> dict[str, Any]:
    """Run a checkpointed UDF that fails at row ``fail_from``, then again without failing
    (``given``: with its output schema, else inferred from a first call on one row)."""
    calls: list[int] = []
    failing = [True]

    @lib.batch_udf(output_schema=OUT if given else None, checkpoint_file=str(checkpoint))
    def double(batch: pa.RecordBatch) -> pa.RecordBatch:
        first = batch.column("a")[0].as_py()
        calls.append(first)
        if failing[0] and first >= fail_from:
            raise RuntimeError("boom")
        return _double(batch)

    ds = _write(lib, path)
    with pytest.raises(Exception) as info:
        ds.add_columns(double, batch_size=BATCH)
    first_run = list(calls)
    with sqlite3.connect(checkpoint) as conn:
        saved_fragments = sorted(r[0] for r in conn.execute("SELECT fragment_id FROM fragments"))
        saved_batches = sorted(conn.execute("SELECT fragment_id, batch_index FROM batches").fetchall())
    calls.clear()
    failing[0] = False
    ds = lib.dataset(str(path))
    ds.add_columns(double, batch_size=BATCH)
    return {
        "error": isinstance(info.value, OSError),
        "first_run": first_run,
        "saved_fragments": saved_fragments,
        "saved_batches": saved_batches,
        "second_run": list(calls),
        "checkpoint_left": checkpoint.exists(),
        "table": lib.dataset(str(path)).to_table(),
        "version": lib.dataset(str(path)).version,
    }


@pytest.mark.parametrize("given", [True, False], ids=["schema_given", "schema_inferred"])
@pytest.mark.parametrize("fail_from", [0, 4000, 7000, 9000])
def test_checkpoint_resume_calls(tmp_path: Path, fail_from: int, given: bool) -> None:
    expected = _resume(lance, tmp_path / "py", tmp_path / "py.sqlite", fail_from, given)
    got = _resume(lance_fw, tmp_path / "fw", tmp_path / "fw.sqlite", fail_from, given)
    assert got["table"].equals(expected["table"])
    assert got["table"].column("b").to_pylist() == [2 * i for i in range(ROWS)]
    for key in (
        "error",
        "first_run",
        "saved_fragments",
        "saved_batches",
        "second_run",
        "checkpoint_left",
        "version",
    ):
        assert got[key] == expected[key], key
    assert not got["checkpoint_left"]


@LIBS
def test_checkpoint_removed_after_success(tmp_path: Path, lib: ModuleType) -> None:
    checkpoint = tmp_path / "ck.sqlite"
    ds = _write(lib, tmp_path / "ds")
    ds.add_columns(lib.batch_udf(output_schema=OUT, checkpoint_file=str(checkpoint))(_double))
    assert not checkpoint.exists()
    assert lib.dataset(str(tmp_path / "ds")).to_table().column("b").to_pylist() == [
        2 * i for i in range(ROWS)
    ]


def test_wrong_output_schema_same_error_class(tmp_path: Path) -> None:
    wrong = pa.schema([pa.field("b", pa.int32())])
    errors = []
    for lib, name in ((lance, "py"), (lance_fw, "fw")):
        ds = _write(lib, tmp_path / name)
        with pytest.raises(Exception) as info:
            ds.add_columns(lib.batch_udf(output_schema=wrong)(_double))
        errors.append(isinstance(info.value, OSError))
        assert lib.dataset(str(tmp_path / name)).schema.names == ["a", "s"]
    assert errors == [True, True]


def test_resume_with_another_batch_size_is_refused(tmp_path: Path) -> None:
    """pylance does not check; lance_fw refuses rather than put saved results on the wrong rows."""
    checkpoint = tmp_path / "ck.sqlite"
    failing = [True]

    @lance_fw.batch_udf(output_schema=OUT, checkpoint_file=str(checkpoint))
    def double(batch: pa.RecordBatch) -> pa.RecordBatch:
        if failing[0] and batch.column("a")[0].as_py() >= 1000:
            raise RuntimeError("boom")
        return _double(batch)

    ds = _write(lance_fw, tmp_path / "ds")
    with pytest.raises(lance_fw.LanceError):
        ds.add_columns(double, batch_size=BATCH)
    failing[0] = False
    with pytest.raises(lance_fw.errors.InvalidUserInputError, match="batch_size"):
        lance_fw.dataset(str(tmp_path / "ds")).add_columns(double, batch_size=500)


@pytest.mark.parametrize("lib,udf", [(lance, lance.udf), (lance_fw, fw_udf)], ids=["pylance", "lance_fw"])
def test_normalize_transform(tmp_path: Path, lib: ModuleType, udf: ModuleType) -> None:
    ds = _write(lib, tmp_path / "ds")
    assert udf.normalize_transform({"c": "a + 1"}, ds) == {"c": "a + 1"}
    with pytest.raises(TypeError):
        udf.normalize_transform({"c": 1}, ds)
    wrapped = udf.normalize_transform(_double, ds)
    assert isinstance(wrapped, udf.BatchUDF) and wrapped.output_schema == OUT
    inferred = udf.normalize_transform(udf.batch_udf()(_double), ds, read_columns=["a"])
    assert inferred.output_schema == OUT
    with pytest.raises(TypeError):
        udf.normalize_transform(lambda b: b.column("nope"), ds)


def test_checkpoint_of_another_udf_is_refused(tmp_path: Path) -> None:
    """A saved fragment holds the columns of the run that saved it: another UDF (same field id,
    another name and type) resuming from it is refused rather than given those files."""
    checkpoint = tmp_path / "ck.sqlite"

    @lance_fw.batch_udf(output_schema=OUT, checkpoint_file=str(checkpoint))
    def failing(batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.column("a")[0].as_py() >= ROWS_PER_FILE:
            raise RuntimeError("boom")
        return _double(batch)

    ds = _write(lance_fw, tmp_path / "ds")
    with pytest.raises(lance_fw.LanceError):
        ds.add_columns(failing, batch_size=BATCH)
    other = lance_fw.batch_udf(
        output_schema=pa.schema([pa.field("c", pa.string())]), checkpoint_file=str(checkpoint)
    )(lambda b: pa.record_batch([pc.cast(b.column("a"), pa.string())], names=["c"]))
    with pytest.raises(lance_fw.errors.InvalidUserInputError, match="another run"):
        lance_fw.dataset(str(tmp_path / "ds")).add_columns(other, batch_size=BATCH)
    assert lance_fw.dataset(str(tmp_path / "ds")).schema.names == ["a", "s"]
