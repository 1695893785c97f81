"""Regression tests for the Spark defects of issue 20: each one was silently wrong before."""

from __future__ import annotations

import datetime as dt
import os
import time

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_fw
from lance_fw.errors import SchemaError

spark_only = [pytest.mark.slow, pytest.mark.spark]


def _ids(path, column="id"):
    return sorted(lance.dataset(path).to_table().column(column).to_pylist())


# -- defect 3: one snapshot per query, safe casts -------------------------------------------------

@pytest.mark.slow
@pytest.mark.spark
def test_dataframe_planned_before_a_type_changing_overwrite_fails_instead_of_truncating(spark, tmp_path):
    path = str(tmp_path / "retyped")
    lance_fw.write_dataset(pa.table({"x": pa.array(range(5), pa.int64())}), path)
    df = spark.read.format("lance").load(path)
    lance_fw.write_dataset(pa.table({"x": [i + 0.9 for i in range(7)]}), path, mode="overwrite")
    # the query reads the latest version, whose x no longer fits the planned bigint: a typed error
    # naming the column, not 0..6 (the doubles truncated to the planned type)
    with pytest.raises(Exception, match="SchemaError.*'x' is double at version 2 but the query expects bigint"):
        df.collect()
    fresh = spark.read.format("lance").load(path)
    assert sorted(r.x for r in fresh.collect()) == [i + 0.9 for i in range(7)]
    assert spark.read.format("lance").option("version", 1).load(path).count() == 5  # the old snapshot
    with pytest.raises(Exception, match="SchemaError.*'x'"):  # a user schema that does not fit: same
        spark.read.format("lance").schema("x bigint").load(path).collect()


def test_relabel_refuses_lossy_casts_but_truncates_nanoseconds():
    from lance_fw.spark.types import relabel

    batch = pa.record_batch({"a": pa.array([2**40], pa.int64())})
    with pytest.raises(pa.ArrowInvalid):
        relabel(batch, pa.schema([pa.field("a", pa.int32())]))
    ns = pa.record_batch({"t": pa.array([1_000_001_999], pa.timestamp("ns"))})
    out = relabel(ns, pa.schema([pa.field("t", pa.timestamp("us"))]))
    assert out.column(0).cast(pa.int64()).to_pylist() == [1_000_001]  # as Spark itself truncates


# -- defect 6: options ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.spark
def test_unknown_options_raise_naming_the_key(spark, tmp_path):
    path = str(tmp_path / "opts")
    spark.range(3).write.format("lance").mode("append").save(path)
    with pytest.raises(Exception, match=r"unknown read option 'batchsize' \(did you mean 'batch_size'\?\).*known"):
        spark.read.format("lance").option("batchsize", 10).load(path).collect()
    with pytest.raises(Exception, match="unknown write option 'maxrowsperfile'"):
        spark.range(3).write.format("lance").mode("append").option("maxRowsPerFile", 2).save(path)
    with pytest.raises(Exception, match="UnsupportedFeatureError.*pushdownfilters"):
        spark.read.format("lance").option("pushDownFilters", "true").load(path).collect()
    with pytest.raises(Exception, match="option 'asof' must be an ISO-8601 timestamp"):
        spark.read.format("lance").option("asof", "yesterday").load(path).collect()
    with pytest.raises(Exception, match="unknown read option 'starting_version'"):
        spark.read.format("lance").option("starting_version", 1).load(path).collect()
    assert spark.read.format("lance").option("pushDownFilters", "false").option("block_size", 4096) \
        .load(path).count() == 3  # what lance_fw does anyway / tuning only
    assert lance.dataset(path).version == 1


@pytest.mark.slow
@pytest.mark.spark
def test_lance_spark_write_option_names_are_aliases(spark, tmp_path):
    path = str(tmp_path / "alias")
    spark.range(0, 50, numPartitions=1).write.format("lance").mode("append") \
        .option("max_row_per_file", 10).option("file_format_version", "2.0").save(path)
    ds = lance.dataset(path)
    assert len(ds.get_fragments()) == 5 and ds.data_storage_version == "2.0"
    with pytest.raises(Exception, match="disagree"):
        spark.range(3).write.format("lance").mode("append").option("max_row_per_file", 10) \
            .option("max_rows_per_file", 20).save(path)


@pytest.mark.slow
@pytest.mark.spark
def test_asof_and_tag_read_the_version_they_name(spark, tmp_path):
    path = str(tmp_path / "travel")
    lance_fw.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}), path)
    time.sleep(0.05)
    between = lance_fw.dataset(path).versions()[0]["timestamp"] + dt.timedelta(milliseconds=25)
    time.sleep(0.05)
    lance_fw.write_dataset(pa.table({"id": pa.array(range(10, 13), pa.int64())}), path, mode="append")
    lance.dataset(path).tags.create("first", 1)
    assert lance.dataset(path, asof=between).count_rows() == 10  # the oracle agrees on the version
    assert spark.read.format("lance").option("asof", between.isoformat()).load(path).count() == 10
    assert spark.read.format("lance").option("tag", "first").load(path).count() == 10
    assert spark.read.format("lance").load(path).count() == 13
    with pytest.raises(Exception, match="give only one"):
        spark.read.format("lance").option("tag", "first").option("version", 2).load(path).collect()


@pytest.mark.slow
@pytest.mark.spark
def test_unknown_data_storage_version_fails_at_planning_not_in_tasks(spark, tmp_path):
    path = str(tmp_path / "nine")
    with pytest.raises(Exception, match="9.9") as caught:
        spark.range(10).write.format("lance").mode("append").option("data_storage_version", "9.9").save(path)
    assert "stage failure" not in str(caught.value) and "Task " not in str(caught.value)
    assert not os.path.exists(path) or not os.listdir(path)


# -- defect 1: streaming sink identity --------------------------------------------------------------

def _add_file(directory, n: int, start: int) -> None:
    pq.write_table(pa.table({"id": pa.array(range(start, start + n), pa.int64())}),
                   os.path.join(directory, f"part-{start:06d}.parquet"))


@pytest.mark.slow
@pytest.mark.spark
def test_sink_with_checkpoint_from_session_conf_does_not_commit_a_replay_twice(spark, tmp_path):
    source, root, path = (str(tmp_path / n) for n in ("in", "ckroot", "out"))
    os.makedirs(source)
    for i in range(3):
        _add_file(source, 100, i * 100)

    def run():
        q = (spark.readStream.schema("id bigint").option("maxFilesPerTrigger", 1).parquet(source)
             .writeStream.format("lance").queryName("h7_conf_ck").trigger(availableNow=True).start(path))
        q.awaitTermination()
        assert q.exception() is None
        return q

    spark.conf.set("spark.sql.streaming.checkpointLocation", root)
    try:
        first = run()
        assert lance.dataset(path).read_transaction(3).transaction_properties["lance_fw.spark.stream_id"] == \
            str(first.id)
        commits = os.path.join(root, "h7_conf_ck", "commits")
        for name in ("2", ".2.crc"):  # crash between the Lance commit and Spark's commit log
            if os.path.exists(os.path.join(commits, name)):
                os.remove(os.path.join(commits, name))
        run()
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    ds = lance.dataset(path)
    assert (ds.version, ds.count_rows()) == (3, 300)
    assert _ids(path) == list(range(300))


# -- defect 2: streaming source and rewrites -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.spark
def test_stream_read_emits_nothing_for_compaction_and_the_new_rows_of_an_update(spark, tmp_path):
    path, checkpoint = str(tmp_path / "src"), str(tmp_path / "ck")
    for start in (0, 100, 200):
        lance_fw.write_dataset(pa.table({"id": pa.array(range(start, start + 100), pa.int64()),
                                         "v": pa.array([0] * 100, pa.int64())}), path, mode="append")
    seen = []

    def collect(batch_df, batch_id):
        seen.extend((r.id, r.v) for r in batch_df.collect())

    def run():
        q = (spark.readStream.format("lance").load(path).writeStream.foreachBatch(collect)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None

    run()
    assert sorted(seen) == [(i, 0) for i in range(300)]
    lance_fw.dataset(path).optimize.compact_files()
    lance.dataset(path).update({"v": "1"}, where="id = 5")
    lance_fw.write_dataset(pa.table({"id": pa.array([300], pa.int64()), "v": pa.array([0], pa.int64())}),
                           path, mode="append")
    run()  # compaction: nothing; update: the updated row again (documented); append: the new row
    assert sorted(seen) == sorted([(i, 0) for i in range(301)] + [(5, 1)])


@pytest.mark.slow
@pytest.mark.spark
def test_stream_read_refuses_a_restore(spark, tmp_path):
    path, checkpoint = str(tmp_path / "src"), str(tmp_path / "ck")
    lance_fw.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}), path)
    lance_fw.write_dataset(pa.table({"id": pa.array(range(10, 20), pa.int64())}), path, mode="overwrite")
    lance.dataset(path, version=1).restore()
    q = (spark.readStream.format("lance").option("starting_version", 2).load(path).writeStream
         .foreachBatch(lambda df, i: df.collect()).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="restore"):
        q.awaitTermination()


def test_stream_read_fails_on_a_type_change_while_running_instead_of_casting(tmp_path):
    pytest.importorskip("pyspark")
    from lance_fw.spark.source import LanceDataSource

    path = str(tmp_path / "src")
    lance_fw.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), path)
    source = LanceDataSource(options={"path": path})
    reader = source.streamReader(source.schema())  # what a running query planned with
    assert sum(p.stop - p.start for p in reader.partitions({"version": 0}, {"version": 1})) == 10
    lance_fw.write_dataset(pa.table({"x": [0.5, 1.5]}), path, mode="overwrite")
    with pytest.raises(SchemaError, match="'x' is double at version 2 but the query expects bigint"):
        reader.partitions({"version": 1}, reader.latestOffset())


# -- defect 4: NOT NULL ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.spark
def test_nulls_into_a_not_null_column_are_refused(spark, tmp_path):
    path = str(tmp_path / "notnull")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    lance.write_dataset(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=schema), path)
    with pytest.raises(Exception, match="SchemaError.*'id' is declared non-nullable"):
        spark.sql("SELECT IF(id = 1, NULL, id) AS id, 'x' AS s FROM range(3)").write.format("lance") \
            .mode("append").save(path)
    ds = lance.dataset(path)
    assert ds.version == 1 and ds.to_table().column("id").to_pylist() == [1, 2]
    spark.sql("SELECT id + 10 AS id, CAST(NULL AS STRING) AS s FROM range(2)").write.format("lance").mode("append").save(path)
    assert _ids(path) == [1, 2, 10, 11]


# -- defect 8: concurrent creates ------------------------------------------------------------------

def test_a_create_that_loses_the_race_commits_as_an_append(tmp_path):
    pytest.importorskip("pyspark")
    from pyspark.sql.types import LongType, StructField, StructType

    from lance_fw.spark.source import LanceDataSource

    path = str(tmp_path / "race")
    source = LanceDataSource(options={"path": path})
    writer = source.writer(StructType([StructField("id", LongType())]), overwrite=False)  # plans a create
    lance_fw.write_dataset(pa.table({"id": pa.array([0], pa.int64())}), path)  # the other application wins
    message = writer.write(iter([pa.record_batch({"id": pa.array([1, 2], pa.int64())})]))
    writer.commit([message])
    ds = lance.dataset(path)
    assert ds.version == 2 and _ids(path) == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.spark
def test_a_failed_job_leaves_no_data_files(spark, tmp_path):
    from pyspark.sql.functions import col, udf

    @udf("long")
    def always_fails_late(x):
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 1 and x % 1000 == 999:
            raise RuntimeError("injected failure after some files were written")
        return x

    path = str(tmp_path / "failed")
    spark.range(5).write.format("lance").mode("append").save(path)
    before = set(os.listdir(os.path.join(path, "data")))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")  # files exist before the failure
    try:
        with pytest.raises(Exception, match="injected failure"):
            spark.range(0, 4000, numPartitions=4).select(always_fails_late(col("id")).alias("id")) \
                .write.format("lance").mode("append").option("max_rows_per_file", 300).save(path)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert lance.dataset(path).version == 1
    assert set(os.listdir(os.path.join(path, "data"))) == before  # no file of any attempt is left


@pytest.mark.spark
def test_spark_writes_take_allow_plugin_encodings(spark, tmp_path):
    """``allow_plugin_encodings`` is a Spark write option, a boolean handed to the write planner as
    write_dataset's is (before: "unknown write option"); a value that is not a boolean is refused."""
    path = str(tmp_path / "ds")
    df = spark.range(0, 5000)
    with pytest.raises(Exception, match="allow_plugin_encodings"):
        df.write.format("lance").mode("append").option("allow_plugin_encodings", "maybe").save(path)
    assert not os.path.exists(os.path.join(path, "_versions"))
    df.write.format("lance").mode("append").option("allow_plugin_encodings", "true").save(path)
    df.write.format("lance").mode("append").option("allow_plugin_encodings", "false").save(path)
    assert _ids(path) == sorted(list(range(5000)) * 2)
