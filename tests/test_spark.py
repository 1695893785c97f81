"""The ``lance`` PySpark data source against a real local SparkSession, with pylance as the oracle."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.spark
from tests.conftest import assert_tables_equal

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ALL_TYPES_SQL = """
SELECT id,
       CAST(id % 100 AS TINYINT) AS b, CAST(id AS SMALLINT) AS sh, CAST(id AS INT) AS i,
       IF(id % 5 = 0, NULL, id * 3) AS l, CAST(id / 3 AS FLOAT) AS f, IF(id % 7 = 0, NULL, id / 7) AS d,
       CAST(id / 8 AS DECIMAL(12, 3)) AS dec, IF(id % 4 = 0, NULL, concat('s', id)) AS s,
       CAST(concat('b', id) AS BINARY) AS bin, id % 2 = 0 AS flag,
       date_add(DATE'2024-01-01', CAST(id AS INT)) AS day,
       TIMESTAMP'2024-03-10 01:30:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0) AS ts,
       CAST(TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id AS INT), 0) AS TIMESTAMP_NTZ) AS ntz,
       IF(id % 6 = 0, array(), array(id, id + 1, NULL)) AS arr,
       IF(id % 9 = 0, NULL, named_struct('x', id, 'y', concat('y', id), 'z', array(1.5D, NULL))) AS st,
       map('a', id, 'b', IF(id % 3 = 0, NULL, id)) AS m,
       array(named_struct('k', id)) AS arr_of_struct
FROM range(0, 3000)
"""


def _sorted(rows):
    return sorted(rows, key=lambda r: r["id"])


def test_write_then_read_equals_input_for_all_spark_types(spark, tmp_path):
    path = str(tmp_path / "all")
    df = spark.sql(ALL_TYPES_SQL)
    df.repartition(3).write.format("lance").mode("append").option("max_rows_per_file", 700).save(path)
    back = spark.read.format("lance").load(path)
    assert back.schema == df.schema
    assert _sorted(back.collect()) == _sorted(df.collect())
    # pylance reads what Spark wrote, and sees what lance_fw (which Spark just read through) sees
    # (df.toArrow() itself fails on null structs with non-null children, so it is no oracle here)
    actual = lance.dataset(path).to_table().sort_by("id")
    assert actual.num_rows == 3000
    assert actual.schema.field("ts").type == pa.timestamp("us", "UTC")  # stored in UTC, not the session zone
    assert_tables_equal(lance_fw.dataset(path).to_table().sort_by("id"), actual)
    assert actual.column("arr").to_pylist()[:2] == [[], [1, 2, None]]


def test_session_time_zone_is_normalised_to_utc(spark, tmp_path):
    path = str(tmp_path / "tz")
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        spark.sql("SELECT 1 AS id, TIMESTAMP'2024-01-01 00:00:00' AS ts").write.format("lance") \
            .mode("append").save(path)
        spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
        spark.sql("SELECT 2 AS id, TIMESTAMP'2024-01-01 00:00:00' AS ts").write.format("lance") \
            .mode("append").save(path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    table = lance.dataset(path).to_table().sort_by("id")
    assert table.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert table.column("ts").to_pylist() == [dt.datetime(2024, 1, 1, 5, tzinfo=dt.timezone.utc),
                                              dt.datetime(2023, 12, 31, 15, tzinfo=dt.timezone.utc)]


def test_vectors_are_written_as_fixed_size_lists(spark, tmp_path):
    path = str(tmp_path / "vec")
    df = spark.sql("SELECT id, array(CAST(id AS FLOAT), 1.0F, 2.0F) AS emb FROM range(10)") \
        .withMetadata("emb", {"arrow.fixed-size-list.size": 3})
    df.write.format("lance").mode("append").save(path)
    stored = lance.dataset(path).schema.field("emb").type
    assert pa.types.is_fixed_size_list(stored) and stored.list_size == 3 and stored.value_type == pa.float32()
    # appending plain arrays reuses the dataset's dimension; Spark reads them back as arrays
    spark.sql("SELECT 10L AS id, array(10.0F, 1.0F, 2.0F) AS emb").write.format("lance").mode("append").save(path)
    back = spark.read.format("lance").load(path)
    assert back.schema["emb"].metadata == {"arrow.fixed-size-list.size": 3}
    assert sorted(r.emb[0] for r in back.collect()) == [float(i) for i in range(11)]
    assert lance.dataset(path).count_rows() == 11


def test_append_and_overwrite_modes(spark, tmp_path):
    path = str(tmp_path / "modes")
    spark.range(100).write.format("lance").mode("append").save(path)
    spark.range(100, 150).write.format("lance").mode("append").save(path)
    ds = lance.dataset(path)
    assert (ds.version, ds.count_rows()) == (2, 150)
    spark.range(7).write.format("lance").mode("overwrite").save(path)
    ds = lance.dataset(path)
    assert (ds.version, ds.count_rows()) == (3, 7)
    assert lance.dataset(path, version=2).count_rows() == 150  # history kept
    assert spark.read.format("lance").option("version", 2).load(path).count() == 150


def test_append_with_another_schema_fails_clearly(spark, tmp_path):
    path = str(tmp_path / "schema")
    spark.range(10).write.format("lance").mode("append").save(path)
    with pytest.raises(Exception, match="column 'id' is bigint in the dataset but string"):
        spark.sql("SELECT CAST(id AS STRING) AS id FROM range(3)").write.format("lance").mode("append").save(path)
    with pytest.raises(Exception, match="dataset has columns"):
        spark.sql("SELECT id, id AS other FROM range(3)").write.format("lance").mode("append").save(path)
    assert lance.dataset(path).count_rows() == 10 and lance.dataset(path).version == 1


def test_a_task_that_fails_once_is_retried_without_duplicates(spark, tmp_path):
    from pyspark.sql.functions import col, udf

    marker = str(tmp_path / "failed-once")

    @udf("long")
    def flaky(x):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and x % 1000 == 999:
            open(marker, "w").close()
            raise RuntimeError("injected failure after some rows were written")
        return x

    path = str(tmp_path / "retry")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")  # files are written before the failure
    try:
        spark.range(0, 4000, numPartitions=4).select(flaky(col("id")).alias("id")) \
            .write.format("lance").mode("append").option("max_rows_per_file", 300).save(path)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert os.path.exists(marker)  # the failure really happened, and the retry succeeded
    ids = sorted(lance.dataset(path).to_table().column("id").to_pylist())
    assert ids == list(range(4000))
    referenced = {f.path() if callable(getattr(f, "path", None)) else f.path
                  for frag in lance.dataset(path).get_fragments() for f in frag.data_files()}
    on_disk = set(os.listdir(os.path.join(path, "data")))
    assert on_disk == referenced  # the failed attempt's files were removed, not committed


def test_reads_types_spark_lacks(spark, tmp_path):
    path = str(tmp_path / "wide")
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "u8": pa.array([0, 200, 255], pa.uint8()),
        "u32": pa.array([0, 2**31, 2**32 - 1], pa.uint32()),
        "u64": pa.array([0, 2**63, 2**64 - 1], pa.uint64()),
        "h": pa.array([0.5, None, -2.0], pa.float16()),
        "vec": pa.array([[1, 2], [3, 4], None], pa.list_(pa.float32(), 2)),
        "ls": pa.array(["a", None, "c"], pa.large_string()),
        "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
        "ns": pa.array([1_000_001_999, None, 0], pa.timestamp("ns")),
        "sh": pa.array([dt.datetime(2024, 1, 1, 8)] * 3, pa.timestamp("ms", "Asia/Shanghai")),
        "fsb": pa.array([b"ab", b"cd", b"ef"], pa.binary(2)),
    })
    lance.write_dataset(table, path)
    df = spark.read.format("lance").load(path)
    assert df.schema.simpleString() == ("struct<id:bigint,u8:smallint,u32:bigint,u64:decimal(20,0),h:float,"
                                        "vec:array<float>,ls:string,cat:string,ns:timestamp_ntz,sh:timestamp,"
                                        "fsb:binary>")
    rows = {r.id: r for r in df.collect()}
    assert [rows[i].u32 for i in (1, 2, 3)] == [0, 2**31, 2**32 - 1]
    assert rows[3].u64 == decimal.Decimal(2**64 - 1)
    assert rows[1].vec == [1.0, 2.0] and rows[3].vec is None
    assert rows[1].ns == dt.datetime(1970, 1, 1, 0, 0, 1, 1)  # ns truncated to us
    assert rows[2].cat == "y" and rows[1].fsb == bytearray(b"ab") and rows[2].h is None


def test_read_options_filter_columns_row_address(spark, tmp_path):
    path = str(tmp_path / "opts")
    table = pa.table({"id": pa.array(range(5000), pa.int64()), "g": pa.array([i % 10 for i in range(5000)]),
                      "s": [f"v{i}" for i in range(5000)],
                      "st": pa.array([{"a": i % 3} for i in range(5000)])})
    lance_fw.write_dataset(table, path, max_rows_per_file=1500)
    lance_fw.dataset(path).delete("id < 50")
    reader = spark.read.format("lance").option("filter", "g = 3 AND st.a = 1").option("columns", "id,s")
    df = reader.option("rows_per_partition", 400).option("batch_size", 128).load(path)
    assert df.columns == ["id", "s"]
    expected = lance.dataset(path).to_table(columns=["id", "s"], filter="g = 3 AND st.a = 1")
    assert sorted(r.id for r in df.collect()) == sorted(expected.column("id").to_pylist())
    assert df.rdd.getNumPartitions() == sum(-(-f.physical_rows // 400) for f in lance.dataset(path).get_fragments())
    with_address = spark.read.format("lance").option("with_row_address", "true").option("columns", "id") \
        .load(path).collect()
    assert len(with_address) == 5000 - 50
    assert all(r._rowaddr == ((r.id // 1500) << 32 | r.id % 1500) for r in with_address)
    # a user schema is a projection (Spark's Python sources have no column pruning)
    assert spark.read.format("lance").schema("g bigint").load(path).groupBy().sum("g").collect()[0][0] == \
        sum(i % 10 for i in range(50, 5000))


def test_bad_options_fail_with_the_option_named(spark, tmp_path):
    path = str(tmp_path / "bad")
    spark.range(3).write.format("lance").mode("append").save(path)
    with pytest.raises(Exception, match="option 'version' must be an integer"):
        spark.read.format("lance").option("version", "latest").load(path).collect()
    with pytest.raises(Exception, match="no column"):
        spark.read.format("lance").option("columns", "nope").load(path).collect()
    with pytest.raises(Exception, match="FilterError|cannot parse filter"):
        spark.read.format("lance").option("filter", "id >").load(path).collect()


def test_empty_dataframe_creates_an_empty_dataset(spark, tmp_path):
    path = str(tmp_path / "empty")
    spark.sql("SELECT id, CAST(id AS STRING) AS s FROM range(0)").write.format("lance").mode("append").save(path)
    assert lance.dataset(path).count_rows() == 0
    assert spark.read.format("lance").load(path).count() == 0


def test_temporary_view_select_and_insert(spark, tmp_path):
    path = str(tmp_path / "view")
    spark.range(5).write.format("lance").mode("append").save(path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW lance_view USING lance OPTIONS (path 'file:{path}')")
    assert spark.sql("SELECT sum(id) FROM lance_view").collect()[0][0] == 10
    spark.sql("INSERT INTO lance_view SELECT id + 5 FROM range(3)")
    assert lance.dataset(path).count_rows() == 8 and lance.dataset(path).version == 2


def test_concurrent_spark_appends_both_commit(spark, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    path = str(tmp_path / "concurrent")
    spark.range(1).write.format("lance").mode("append").save(path)

    def append(start):
        lance_fw.spark.activate(spark)  # writes from a new thread need the session active there
        spark.range(start, start + 500, numPartitions=2).write.format("lance").mode("append").save(path)

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(append, [1000, 2000, 3000]))
    ds = lance.dataset(path)
    assert ds.version == 4  # each job committed once; losers of the race rebased and retried
    assert sorted(ds.to_table().column("id").to_pylist()) == [0] + [i for s in (1000, 2000, 3000)
                                                                    for i in range(s, s + 500)]


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_data_storage_version_and_commit_message_reach_the_dataset(spark, tmp_path, version):
    path = str(tmp_path / f"v{version}")
    df = spark.sql("SELECT id, IF(id % 3 = 0, NULL, concat('s', id)) AS s FROM range(0, 5000)")
    df.repartition(2).write.format("lance").mode("append").option("data_storage_version", version) \
        .option("commit_message", "nightly load").save(path)
    oracle = lance.dataset(path)
    assert oracle.data_storage_version == version
    assert lance_fw.dataset(path).data_storage_version == version
    assert_tables_equal(oracle.to_table().sort_by("id"), lance_fw.dataset(path).to_table().sort_by("id"))
    assert oracle.to_table().num_rows == 5000
    # pylance shows the message under its own key, as for its own write_dataset(commit_message=)
    assert oracle.get_transactions()[0].transaction_properties.get("__lance_commit_message") == "nightly load"


def test_unknown_data_storage_version_is_refused_before_writing(spark, tmp_path):
    path = str(tmp_path / "badversion")
    with pytest.raises(Exception, match="3.7"):
        spark.range(10).write.format("lance").mode("append").option("data_storage_version", "3.7").save(path)
    assert not os.path.exists(path) or not os.listdir(path)
