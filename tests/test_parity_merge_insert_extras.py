"""``MergeInsertBuilder.execute_uncommitted`` / ``execute_uncommitted_batches`` / ``execute_batches``
/ ``explain_plan`` / ``analyze_plan`` / ``data_storage_version`` against pylance 14: the same code on
both libraries, 12,000 rows in four fragments (past the 4096-row boundary), values in scan order,
schemas, counts, versions and error classes compared. ``execute_uncommitted`` then
``LanceDataset.commit(uri, transaction, read_version=...)`` gives the table ``execute`` gives; the
plan texts share pylance's first line (the merge's configuration), the rest is lance_fw's own."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_fw

ROWS = 12_000
ROWS_PER_FILE = 3500
LIBS = pytest.mark.parametrize("lib", [lance, lance_fw], ids=["pylance", "lance_fw"])
Builder = Callable[[Any], Any]


def _write(lib: ModuleType, path: Path) -> Any:
    table = pa.table(
        {"id": pa.array(range(ROWS), pa.int64()), "v": pa.array([i % 11 for i in range(ROWS)], pa.int64())}
    )
    return lib.write_dataset(table, str(path), max_rows_per_file=ROWS_PER_FILE)


#: source rows: updates spread over every fragment, and new keys
SOURCE = pa.table(
    {
        "id": pa.array([*range(5, ROWS, 997), *range(ROWS + 3, ROWS + 5000, 7)], pa.int64()),
        "v": pa.array(
            [100 + i for i in range(len(range(5, ROWS, 997)) + len(range(ROWS + 3, ROWS + 5000, 7)))],
            pa.int64(),
        ),
    }
)

BUILDERS: dict[str, Builder] = {
    "upsert": lambda ds: ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all(),
    "update_if": lambda ds: ds.merge_insert("id").when_matched_update_all("source.v > target.v + 50"),
    "insert": lambda ds: ds.merge_insert("id").when_not_matched_insert_all(),
    "delete": lambda ds: ds.merge_insert("id").when_matched_delete(),
    "by_source": lambda ds: (
        ds.merge_insert("id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("v > 8")
    ),
    "replace_all": lambda ds: (
        ds.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete()
    ),
}


def _run(lib: ModuleType, path: Path, case: str, how: str) -> dict[str, Any]:
    ds = _write(lib, path)
    builder = BUILDERS[case](ds)
    if how == "execute":
        stats = builder.execute(SOURCE)
    elif how == "execute_batches":
        stats = builder.execute_batches(SOURCE)
    else:
        method = builder.execute_uncommitted if how == "uncommitted" else builder.execute_uncommitted_batches
        transaction, stats = method(SOURCE)
        assert lib.dataset(str(path)).version == 1  # nothing committed yet
        assert transaction.read_version == 1 and isinstance(transaction.uuid, str)
        assert isinstance(transaction.operation, lib.LanceOperation.Update)
        lib.LanceDataset.commit(str(path), transaction, read_version=transaction.read_version)
    after = lib.dataset(str(path))
    return {"stats": stats, "table": after.to_table(), "version": after.version, "rows": after.count_rows()}


@pytest.mark.parametrize("case", list(BUILDERS))
@pytest.mark.parametrize("how", ["execute", "execute_batches", "uncommitted", "uncommitted_batches"])
def test_execute_variants_match_pylance(tmp_path: Path, case: str, how: str) -> None:
    expected = _run(lance, tmp_path / "py", case, how)
    got = _run(lance_fw, tmp_path / "fw", case, how)
    assert got["stats"] == expected["stats"]
    assert got["version"] == expected["version"] == 2
    assert got["table"].schema.equals(expected["table"].schema)
    # pylance's order of the new rows depends on its hash join's partitions: compare by key
    assert got["table"].sort_by("id").equals(expected["table"].sort_by("id"))


@pytest.mark.parametrize("case", ["upsert", "delete"])
def test_uncommitted_equals_execute(tmp_path: Path, case: str) -> None:
    committed = _run(lance_fw, tmp_path / "a", case, "execute")
    staged = _run(lance_fw, tmp_path / "b", case, "uncommitted")
    assert staged["table"].equals(committed["table"]) and staged["stats"] == committed["stats"]


@LIBS
def test_uncommitted_conflicts_with_concurrent_update(tmp_path: Path, lib: ModuleType) -> None:
    ds = _write(lib, tmp_path / "ds")
    first, _ = ds.merge_insert("id").when_matched_update_all().execute_uncommitted(SOURCE)
    second, _ = ds.merge_insert("id").when_matched_update_all().execute_uncommitted(SOURCE)
    lib.LanceDataset.commit(str(tmp_path / "ds"), first, read_version=first.read_version)
    with pytest.raises(OSError):  # pylance's CommitConflictError is an OSError, lance_fw's too
        lib.LanceDataset.commit(str(tmp_path / "ds"), second, read_version=second.read_version)
    assert lib.dataset(str(tmp_path / "ds")).version == 2


def _plan_line(builder: Any, schema: pa.Schema | None = None, verbose: bool = False) -> str:
    """The plan's first line, or the class of the error (by pylance's kinds: OSError, ValueError)."""
    try:
        return builder.explain_plan(schema, verbose=verbose).splitlines()[0]
    except OSError:
        return "OSError"
    except ValueError:
        return "ValueError"


@pytest.mark.parametrize("case", list(BUILDERS))
def test_explain_plan_first_line(tmp_path: Path, case: str) -> None:
    lines = []
    key_only = pa.schema([pa.field("id", pa.int64())])
    for lib, name in ((lance, "py"), (lance_fw, "fw")):
        ds = _write(lib, tmp_path / name)
        lines.append(_plan_line(BUILDERS[case](ds)))
        lines.append(_plan_line(BUILDERS[case](ds), key_only, verbose=True))  # update_if: source.v unknown
        assert lib.dataset(str(tmp_path / name)).version == 1
    assert lines[:2] == lines[2:]


def test_explain_plan_on_two_keys_and_unconfigured(tmp_path: Path) -> None:
    errors = []
    for lib, name in ((lance, "py"), (lance_fw, "fw")):
        ds = _write(lib, tmp_path / name)
        errors.append(ds.merge_insert(["id", "v"]).when_matched_update_all().explain_plan().splitlines()[0])
        with pytest.raises(ValueError) as info:
            ds.merge_insert("id").explain_plan()
        errors.append(isinstance(info.value, ValueError))
    assert errors[:2] == errors[2:]


@pytest.mark.parametrize("case", ["upsert", "delete", "by_source"])
def test_analyze_plan_counts_and_commits_nothing(tmp_path: Path, case: str) -> None:
    counts = []
    for lib, name in ((lance, "py"), (lance_fw, "fw")):
        ds = _write(lib, tmp_path / name)
        text = BUILDERS[case](ds).analyze_plan(SOURCE)
        first = next(line.strip() for line in text.splitlines() if line.strip())
        metrics = first.partition("metrics=[")[2].rstrip("]").split(", ")
        counts.append(
            sorted(m for m in metrics if m.startswith(("num_deleted", "num_inserted", "num_updated")))
        )
        assert first.startswith(("MergeInsert: elapsed=", "DeleteOnlyMergeInsert: elapsed="))
        assert lib.dataset(str(tmp_path / name)).version == 1
    assert counts[0] == counts[1]
    assert len(os.listdir(tmp_path / "fw" / "data")) == 4  # lance_fw removes what it wrote


@LIBS
def test_data_storage_version_of_the_dataset(tmp_path: Path, lib: ModuleType) -> None:
    ds = _write(lib, tmp_path / "ds")
    stats = (
        ds.merge_insert("id")
        .data_storage_version(ds.data_storage_version)
        .when_not_matched_insert_all()
        .execute(SOURCE)
    )
    assert stats["num_inserted_rows"] == len(range(ROWS + 3, ROWS + 5000, 7))
    assert lib.dataset(str(tmp_path / "ds")).data_storage_version == ds.data_storage_version


@LIBS
def test_data_storage_version_unknown(tmp_path: Path, lib: ModuleType) -> None:
    ds = _write(lib, tmp_path / "ds")
    with pytest.raises(ValueError):
        ds.merge_insert("id").data_storage_version("9.9").when_not_matched_insert_all().execute(SOURCE)


def test_lance_fw_refusals(tmp_path: Path) -> None:
    """Another file version than the dataset's, and staging a column patch: typed refusals."""
    ds = _write(lance_fw, tmp_path / "ds")
    builder = ds.merge_insert("id").data_storage_version("2.0").when_not_matched_insert_all()
    with pytest.raises(lance_fw.errors.UnsupportedFeatureError, match="data_storage_version"):
        builder.execute(SOURCE)
    wide = lance_fw.write_dataset(
        pa.table(
            {"id": pa.array(range(ROWS), pa.int64()), "v": pa.array([0] * ROWS, pa.int64()), "w": [1] * ROWS}
        ),
        str(tmp_path / "wide"),
        max_rows_per_file=ROWS_PER_FILE,
    )
    patch = wide.merge_insert("id").when_matched_update_all().write_mode("rewrite_columns")
    with pytest.raises(lance_fw.errors.UnsupportedFeatureError, match="patches columns"):
        patch.execute_uncommitted(SOURCE)
    assert lance_fw.dataset(str(tmp_path / "ds")).version == 1
    assert lance_fw.dataset(str(tmp_path / "wide")).version == 1


@LIBS
def test_transaction_properties_are_committed(tmp_path: Path, lib: ModuleType) -> None:
    ds = _write(lib, tmp_path / "ds")
    transaction, _ = ds.merge_insert("id").when_not_matched_insert_all().execute_uncommitted(SOURCE)
    transaction.transaction_properties = {"job": "nightly"}
    lib.LanceDataset.commit(str(tmp_path / "ds"), transaction, read_version=transaction.read_version)
    read = lance.dataset(str(tmp_path / "ds")).read_transaction(2)
    assert read is not None and (read.transaction_properties or {}).get("job") == "nightly"
