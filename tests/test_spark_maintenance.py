"""lance_fw.spark.compact / add_columns: planned on the driver, computed in Spark tasks, one commit.

Differential: the same dataset is copied; pylance compacts (or adds columns to) one copy, lance_fw on
Spark the other, and pylance reads both. Faults are injected into one task on its first attempt
(Spark retries it) or on every attempt (the job fails): the result must be exact, made in one
commit, and no file a failed attempt wrote may stay behind in ``data/``.
"""

import os
import shutil
import time

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from tests.conftest import assert_tables_equal

import lance_fw
import lance_fw.spark
from lance_fw.errors import CommitConflictError, InvalidArgumentError, SchemaError
from lance_fw.spark import maintenance


#: several small fragments (crossing 1024-row blocks), two of them with many deleted rows
APPENDS = 9
ROWS_PER_APPEND = 1300
TARGET = 3000


def _source(path: str) -> None:
    for i in range(APPENDS):
        ids = pa.array(range(i * ROWS_PER_APPEND, (i + 1) * ROWS_PER_APPEND), pa.int64())
        table = pa.table(
            {
                "id": ids,
                "s": pa.array([f"row-{v}" for v in ids.to_pylist()]),
                "f": pc.divide(pc.cast(ids, pa.float64()), 3.0),
            }
        )
        lance.write_dataset(table, path, mode="append" if i else "create")
    ds = lance.dataset(path)
    ds.delete("id % 5 = 1")  # every fragment gets a deletion file
    ds.delete(f"id >= {2 * ROWS_PER_APPEND} AND id < {2 * ROWS_PER_APPEND + 900}")  # one mostly deleted


def _copies(tmp_path, n: int = 2) -> list[str]:
    first = str(tmp_path / "copy0")
    _source(first)
    paths = [first]
    for i in range(1, n):
        paths.append(str(tmp_path / f"copy{i}"))
        shutil.copytree(first, paths[-1])
    return paths


def _referenced(path: str) -> set[str]:
    return {f.path for frag in lance.dataset(path).get_fragments() for f in frag.data_files()}


def _data_files(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, "data")))


def _shape(path: str) -> list[tuple[int, int]]:
    return [(f.count_rows(), f.physical_rows) for f in lance.dataset(path).get_fragments()]


def _flaky(marker: str, partition: int, every_attempt: bool = False):
    """A ``_run`` that wraps each task: ``partition``'s task raises after doing its work (its files
    written and recorded) on its first attempt, or on every attempt."""
    original = maintenance._run

    class Flaky:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, item):
            from pyspark import TaskContext

            result = self.inner(item)
            ctx = TaskContext.get()
            if ctx.partitionId() == partition and (every_attempt or ctx.attemptNumber() == 0):
                open(marker + str(ctx.attemptNumber()), "w").close()
                raise RuntimeError("injected failure after the task wrote its files")
            return result

    return lambda spark, items, task: original(spark, items, Flaky(task))


def _settled(path: str, expected: set[str]) -> set[str]:
    """``data/`` once stragglers of a failed job (cancelled tasks) are gone."""
    deadline = time.monotonic() + 20
    while _data_files(path) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return _data_files(path)


# -- compact -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.spark
def test_compact_matches_pylance_compaction(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    before = lance.dataset(ours)
    expected_metrics = lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=TARGET)
    metrics = lance_fw.spark.compact(spark, ours, target_rows_per_fragment=TARGET, max_rows_per_group=512)
    after = lance.dataset(ours)
    assert after.version == before.version + 2  # ReserveFragments, then the Rewrite, as pylance
    assert after.version == lance.dataset(theirs).version
    assert after.to_table().sort_by("id").equals(before.to_table().sort_by("id"))  # same rows
    assert_tables_equal(lance.dataset(theirs).to_table(), after.to_table())  # same order as pylance's
    assert _shape(ours) == _shape(theirs)
    assert len(_shape(ours)) < len(before.get_fragments())
    for name in ("fragments_removed", "fragments_added", "files_removed", "files_added"):
        assert getattr(metrics, name) == getattr(expected_metrics, name), name
    old_files = {f.path for frag in before.get_fragments() for f in frag.data_files()}
    assert _data_files(ours) == _referenced(ours) | old_files  # nothing unreferenced but the old files


@pytest.mark.slow
@pytest.mark.spark
def test_compact_without_candidates_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "big")
    lance.write_dataset(pa.table({"id": pa.array(range(5000), pa.int64())}), path)
    metrics = lance_fw.spark.compact(spark, path, target_rows_per_fragment=TARGET)
    assert metrics.fragments_removed == 0 and lance.dataset(path).version == 1


@pytest.mark.slow
@pytest.mark.spark
def test_compact_task_failing_once_is_retried_and_leaves_no_garbage(spark, tmp_path, monkeypatch):
    ours, theirs = _copies(tmp_path)
    before = lance.dataset(ours)
    marker = str(tmp_path / "failed-")
    monkeypatch.setattr(maintenance, "_run", _flaky(marker, partition=0))
    lance_fw.spark.compact(spark, ours, target_rows_per_fragment=TARGET)
    assert os.path.exists(marker + "0") and not os.path.exists(marker + "1")  # failed, retried once
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=TARGET)
    assert lance.dataset(ours).version == before.version + 2 == lance.dataset(theirs).version
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _shape(ours) == _shape(theirs)
    old_files = {f.path for frag in before.get_fragments() for f in frag.data_files()}
    assert _data_files(ours) == _referenced(ours) | old_files  # the failed attempt's files are gone


@pytest.mark.slow
@pytest.mark.spark
def test_compact_failed_job_keeps_the_old_version_and_removes_its_files(spark, tmp_path, monkeypatch):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path)
    files = _data_files(path)
    monkeypatch.setattr(maintenance, "_run", _flaky(str(tmp_path / "failed-"), partition=0, every_attempt=True))
    with pytest.raises(Exception, match="injected failure"):
        lance_fw.spark.compact(spark, path, target_rows_per_fragment=TARGET)
    assert lance.dataset(path).version == before.version
    assert lance.dataset(path).to_table().equals(before.to_table())
    assert _settled(path, files) == files


# -- add_columns ---------------------------------------------------------------------------------


def _udf():
    """A UDF defined in a function: Spark pickles it by value (workers cannot import tests/)."""

    def double_and_upper(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch(
            {"twice": pc.multiply(batch.column("id"), 2), "upper": pc.utf8_upper(batch.column("s"))}
        )

    return double_and_upper


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_udf_matches_pylance(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    before = lance.dataset(ours).version
    lance.dataset(theirs).add_columns(_udf(), read_columns=["id", "s"])
    version = lance_fw.spark.add_columns(spark, ours, _udf(), read_columns=["id", "s"])
    ds = lance.dataset(ours)
    assert version == ds.version == before + 1
    assert ds.schema == lance.dataset(theirs).schema
    assert_tables_equal(lance.dataset(theirs).to_table(), ds.to_table())
    assert _data_files(ours) == _referenced(ours)


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_udf_returning_a_dict(spark, tmp_path):
    ours, theirs = _copies(tmp_path)

    def half(batch):
        return {"half": pc.divide(batch.column("f"), 2.0)}

    lance.dataset(theirs).add_columns(lambda b: pa.record_batch(half(b)))
    lance_fw.spark.add_columns(spark, ours, half)
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_sql_matches_pylance(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    transforms = {"plus": "id + 1", "tag": "concat(s, '!')", "c": "'x'"}
    lance.dataset(theirs).add_columns(transforms)
    lance_fw.spark.add_columns(spark, ours, transforms)
    assert lance.dataset(ours).schema == lance.dataset(theirs).schema
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_fields_only_writes_no_data(spark, tmp_path):
    (path,) = _copies(tmp_path, 1)
    files = _data_files(path)
    lance_fw.spark.add_columns(spark, path, pa.field("empty", pa.int32()))
    assert lance.dataset(path).to_table().column("empty").null_count == lance.dataset(path).count_rows()
    assert _data_files(path) == files


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_udf_failing_once_mid_fragment_is_retried(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    marker = str(tmp_path / "udf-failed")
    first_of_third = 2 * ROWS_PER_APPEND  # physical rows are read, deleted ones included

    def flaky(batch):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        ids = batch.column("id")
        # fragment 2's task, first attempt, on a batch after the first: some data already written
        if ctx is not None and ctx.partitionId() == 2 and ctx.attemptNumber() == 0 and pc.min(ids).as_py() > first_of_third:
            open(marker, "w").close()
            raise RuntimeError("injected UDF failure")
        return pa.record_batch({"twice": pc.multiply(ids, 2)})

    before = lance.dataset(ours).version
    lance_fw.spark.add_columns(spark, ours, flaky, read_columns=["id"], batch_size=256)
    assert os.path.exists(marker)
    lance.dataset(theirs).add_columns(
        lambda b: pa.record_batch({"twice": pc.multiply(b.column("id"), 2)}), read_columns=["id"]
    )
    assert lance.dataset(ours).version == before + 1
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _data_files(ours) == _referenced(ours)


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_task_failing_once_after_writing_is_retried(spark, tmp_path, monkeypatch):
    ours, theirs = _copies(tmp_path)
    marker = str(tmp_path / "failed-")
    monkeypatch.setattr(maintenance, "_run", _flaky(marker, partition=1))
    lance_fw.spark.add_columns(spark, ours, _udf(), read_columns=["id", "s"])
    assert os.path.exists(marker + "0")
    lance.dataset(theirs).add_columns(_udf(), read_columns=["id", "s"])
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert _data_files(ours) == _referenced(ours)


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_failed_job_keeps_the_old_version(spark, tmp_path, monkeypatch):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path)
    files = _data_files(path)
    monkeypatch.setattr(maintenance, "_run", _flaky(str(tmp_path / "failed-"), partition=3, every_attempt=True))
    with pytest.raises(Exception, match="injected failure"):
        lance_fw.spark.add_columns(spark, path, _udf(), read_columns=["id", "s"])
    assert lance.dataset(path).version == before.version
    assert lance.dataset(path).schema == before.schema
    assert _settled(path, files) == files


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_refuses_an_existing_name_before_any_task(spark, tmp_path):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path).version
    with pytest.raises(InvalidArgumentError, match="already exist"):
        lance_fw.spark.add_columns(spark, path, lambda b: pa.record_batch({"id": b.column("id")}))
    assert lance.dataset(path).version == before


def _appending_run(path: str):
    """A ``_run`` after which another writer appends to ``path`` (before the driver commits)."""
    original = maintenance._run

    def run(spark, items, task):
        out = original(spark, items, task)
        extra = pa.table({"id": pa.array([10**6, 10**6 + 1], pa.int64()), "s": ["late", "later"], "f": [0.5, 1.5]})
        lance.write_dataset(extra, path, mode="append")
        return out

    return run


@pytest.mark.slow
@pytest.mark.spark
def test_compact_rebases_over_a_concurrent_append(spark, tmp_path, monkeypatch):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path)
    monkeypatch.setattr(maintenance, "_run", _appending_run(path))
    lance_fw.spark.compact(spark, path, target_rows_per_fragment=TARGET)
    after = lance.dataset(path)
    assert after.version == before.version + 3  # the append, then the compaction's two commits
    assert after.to_table().sort_by("id").equals(
        pa.concat_tables([before.to_table(), after.to_table(filter="id >= 1000000")]).sort_by("id")
    )
    assert after.count_rows() == before.count_rows() + 2


@pytest.mark.slow
@pytest.mark.spark
def test_add_columns_conflicting_with_a_concurrent_append_commits_nothing(spark, tmp_path, monkeypatch):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path).version
    monkeypatch.setattr(maintenance, "_run", _appending_run(path))
    with pytest.raises(CommitConflictError):
        lance_fw.spark.add_columns(spark, path, {"plus": "id + 1"})
    assert lance.dataset(path).version == before + 1  # only the append
    assert "plus" not in lance.dataset(path).schema.names
    assert _data_files(path) == _referenced(path)  # the new column files were removed


# -- the single-process add_columns takes the same UDFs (one implementation) ------------------------


def test_single_process_add_columns_udf_matches_pylance(tmp_path):
    ours, theirs = _copies(tmp_path)
    udf = _udf()
    lance.dataset(theirs).add_columns(udf, read_columns=["id", "s"])
    lance_fw.dataset(ours).add_columns(udf, read_columns=["id", "s"], batch_size=300)
    assert lance.dataset(ours).schema == lance.dataset(theirs).schema
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert_tables_equal(lance.dataset(theirs).to_table(), lance_fw.dataset(ours).to_table())


def test_udf_returning_the_wrong_number_of_rows_is_refused(tmp_path):
    (path,) = _copies(tmp_path, 1)
    before = lance.dataset(path).version
    with pytest.raises(InvalidArgumentError, match="rows for a batch of"):
        lance_fw.dataset(path).add_columns(lambda b: pa.record_batch({"x": pa.array([1], pa.int64())}))
    assert lance.dataset(path).version == before
    assert _data_files(path) == _referenced(path)


def test_udf_changing_its_output_schema_is_refused(tmp_path):
    (path,) = _copies(tmp_path, 1)

    def shifty(batch):
        ids = batch.column("id")
        kind = pa.int64() if pc.min(ids).as_py() < 1000 else pa.float64()
        return pa.record_batch({"x": ids.cast(kind)})

    with pytest.raises(SchemaError, match="first batch"):
        lance_fw.dataset(path).add_columns(shifty, read_columns=["id"])
    assert "x" not in lance.dataset(path).schema.names
    assert _data_files(path) == _referenced(path)
