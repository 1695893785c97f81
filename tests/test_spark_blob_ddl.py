"""Issue 20, defects 5 and 7: lance-spark's column metadata (blob, float16, large strings) and
catalog DDL (CREATE TABLE ... USING lance, ALTER TABLE) through the Python data source.

Each of these was silently wrong: a blob column made a dataset pylance cannot read, float16 and
large-string columns were stored as float32 / string, and CREATE TABLE / ALTER TABLE reported success
while the table could not be read or the dataset was unchanged."""

from __future__ import annotations

import os
import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError

BLOB = {"lance-encoding:blob": "true"}
spark_test = [pytest.mark.slow, pytest.mark.spark]


def _blob_table(n: int = 3) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata=BLOB)])
    return pa.table(
        {"id": range(n), "b": pa.array([bytes([i % 256]) * (i * 1000) for i in range(n)], pa.large_binary())},
        schema=schema,
    )


# -- defect 5: blob columns are refused, never written as something pylance cannot read -----------


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_write_dataset_refuses_blob_columns(tmp_path, version):
    path = str(tmp_path / "blob")
    # pylance writes a blob column (a blob layout on 2.1, descriptors plus sidecar files on 2.2),
    # which lance_fw cannot encode: it used to write plain binary under the blob metadata, and
    # pylance then failed to read the dataset ("more fields in the schema than column infos")
    with pytest.raises(UnsupportedFeatureError, match="'b'.*blob"):
        lance_fw.write_dataset(_blob_table(), path, data_storage_version=version)
    assert not os.path.exists(os.path.join(path, "_versions"))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_append_to_a_pylance_blob_dataset_is_refused_and_leaves_it_readable(tmp_path, version):
    path = str(tmp_path / "blob")
    lance.write_dataset(_blob_table(), path, data_storage_version=version)
    more = pa.table({"id": [7], "b": pa.array([b"xyz"], pa.large_binary())}, schema=_blob_table().schema)
    with pytest.raises(UnsupportedFeatureError, match="'b'.*blob"):
        lance_fw.write_dataset(more, path, mode="append")
    ds = lance.dataset(path)
    assert ds.version == 1 and ds.count_rows() == 3
    assert [f.read() for f in ds.take_blobs("b", indices=[1, 2])] == [b"\x01" * 1000, b"\x02" * 2000]


@pytest.mark.slow
@pytest.mark.spark
def test_spark_blob_column_is_refused_before_any_task(spark, tmp_path):
    path = str(tmp_path / "blob")
    df = spark.createDataFrame([(1, bytearray(b"abc")), (2, bytearray(b"de"))], "id bigint, b binary")
    df = df.withMetadata("b", BLOB)  # what lance-spark's 'b.lance.encoding' = 'blob' sets
    with pytest.raises(Exception, match="UnsupportedFeatureError.*'b'.*blob"):
        df.write.format("lance").mode("append").save(path)
    assert not os.path.exists(os.path.join(path, "_versions"))
    assert not os.path.exists(os.path.join(path, "data")) or not os.listdir(os.path.join(path, "data"))


# -- defect 5: lance-spark's float16 and large-string column properties ---------------------------


@pytest.mark.slow
@pytest.mark.spark
def test_spark_float16_vectors_and_large_strings_are_written_as_pylance_types(spark, tmp_path):
    path = str(tmp_path / "f16")
    rng = np.random.default_rng(5)
    n, dim = 5000, 8  # several 1024-value blocks per column
    vectors = rng.standard_normal((n, dim)).astype(np.float32) * 100
    rows = [(i, vectors[i].tolist(), f"text {i} " * (i % 7)) for i in range(n)]
    df = spark.createDataFrame(rows, "id bigint, v array<float>, s string").repartition(2)
    df = df.withMetadata("v", {"arrow.fixed-size-list.size": dim, "arrow.float16": "true"})
    df = df.withMetadata("s", {"arrow:large-var-char": "true"})
    df.write.format("lance").mode("append").save(path)

    ds = lance.dataset(path)  # the oracle reads the types lance-spark writes
    assert ds.schema.field("v").type == pa.list_(pa.field("item", pa.float16()), dim)
    assert ds.schema.field("s").type == pa.large_string()
    table = ds.to_table().sort_by("id")
    expected_v = vectors.astype(np.float16)
    got_v = np.stack(table.column("v").to_numpy(zero_copy_only=False))
    assert got_v.dtype == np.float16 and np.array_equal(got_v, expected_v)
    assert table.column("s").to_pylist() == [r[2] for r in rows]
    # reading back through Spark widens float16 to float exactly
    back = spark.read.format("lance").load(path).orderBy("id").select("v").collect()
    assert np.array_equal(np.array([r.v for r in back], dtype=np.float32), expected_v.astype(np.float32))
    # an append keeps the dataset's types
    df.limit(10).write.format("lance").mode("append").save(path)
    assert lance.dataset(path).schema.field("v").type.value_type == pa.float16()


@pytest.mark.slow
@pytest.mark.spark
def test_spark_float16_overflow_and_misplaced_properties_fail(spark, tmp_path):
    path = str(tmp_path / "bad")
    big = spark.createDataFrame([(1, [1e6, 0.5])], "id bigint, v array<float>")
    big = big.withMetadata("v", {"arrow.fixed-size-list.size": 2, "arrow.float16": "true"})
    with pytest.raises(Exception, match="SchemaError.*'v'.*float16"):  # not silently +inf
        big.write.format("lance").mode("append").save(path)
    wrong = spark.createDataFrame([(1, "a")], "id bigint, s string").withMetadata("s", {"arrow.float16": "true"})
    with pytest.raises(Exception, match="SchemaError.*'s'.*arrow.float16"):
        wrong.write.format("lance").mode("append").save(path)
    wrong = spark.createDataFrame([(1, 2)], "id bigint, s bigint").withMetadata("s", {"arrow:large-var-char": "true"})
    with pytest.raises(Exception, match="SchemaError.*'s'.*arrow:large-var-char"):
        wrong.write.format("lance").mode("append").save(path)
    assert not os.path.exists(os.path.join(path, "_versions"))


# -- defect 7: catalog tables ----------------------------------------------------------------------


def _name() -> str:
    return "t_" + uuid.uuid4().hex[:10]


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("clause", ["LOCATION '{path}'", "OPTIONS (path '{path}')"])
def test_create_table_using_lance_reads_and_inserts(spark, tmp_path, clause):
    path = str(tmp_path / "tbl")
    lance_fw.write_dataset(pa.table({"id": pa.array(range(3000), pa.int64()), "s": [f"r{i}" for i in range(3000)]}),
                           path, max_rows_per_file=1000)
    name = _name()
    spark.sql(f"CREATE TABLE {name} USING lance {clause.format(path=path)}")
    try:
        got = spark.sql(f"SELECT id, s FROM {name}").toPandas().sort_values("id")
        expected = lance.dataset(path).to_table().to_pandas()
        assert got["id"].tolist() == expected["id"].tolist() and got["s"].tolist() == expected["s"].tolist()
        spark.sql(f"INSERT INTO {name} VALUES (5000, 'x'), (5001, 'y')")
        ds = lance.dataset(path)
        assert ds.version == 2 and ds.count_rows() == 3002
        assert spark.sql(f"SELECT count(*) AS n FROM {name} WHERE id >= 5000").first().n == 2
        # per-query options reach the reader: time travel through WITH
        assert spark.sql(f"SELECT * FROM {name} WITH ('version' = '1')").count() == 3000
        spark.sql(f"INSERT OVERWRITE {name} VALUES (1, 'only')")
        assert lance.dataset(path).to_table().to_pylist() == [{"id": 1, "s": "only"}]
    finally:
        spark.sql(f"DROP TABLE {name}")
    assert lance.dataset(path).count_rows() == 1  # DROP TABLE drops the catalog entry only


@pytest.mark.slow
@pytest.mark.spark
def test_alter_table_columns_fails_loudly_naming_the_lance_fw_call(spark, tmp_path):
    path = str(tmp_path / "alter")
    lance_fw.write_dataset(pa.table({"id": [1, 2], "s": ["a", "b"]}), path)
    for statement, call in [
        ("ADD COLUMNS (z int)", "add_columns"),
        ("DROP COLUMNS (s)", "drop_columns"),
        ("RENAME COLUMN s TO s2", "alter_columns"),
    ]:
        name = _name()
        spark.sql(f"CREATE TABLE {name} USING lance LOCATION '{path}'")
        try:
            spark.sql(f"ALTER TABLE {name} {statement}")  # Spark alone changes its catalog
            with pytest.raises(Exception, match=rf"InvalidArgumentError.*ALTER TABLE.*{call}"):
                spark.sql(f"SELECT * FROM {name}").collect()
            with pytest.raises(Exception, match=rf"InvalidArgumentError.*ALTER TABLE.*{call}"):
                spark.sql(f"INSERT INTO {name} SELECT * FROM {name}")
        finally:
            spark.sql(f"DROP TABLE {name}")
    ds = lance.dataset(path)
    assert ds.version == 1 and ds.schema.names == ["id", "s"]


@pytest.mark.slow
@pytest.mark.spark
def test_tables_spark_cannot_hand_a_location_fail_loudly(spark, tmp_path):
    path = str(tmp_path / "typed")
    name = _name()
    # a column list means Spark never asks the data source for a schema, so the location is lost
    spark.sql(f"CREATE TABLE {name} (a int) USING lance LOCATION '{path}'")
    try:
        with pytest.raises(Exception, match="InvalidArgumentError.*catalog table.*LOCATION"):
            spark.sql(f"INSERT INTO {name} VALUES (1)")
        with pytest.raises(Exception, match="InvalidArgumentError.*catalog table.*LOCATION"):
            spark.sql(f"SELECT * FROM {name}").collect()
    finally:
        spark.sql(f"DROP TABLE {name}")
    with pytest.raises(Exception, match="InvalidArgumentError.*catalog table.*LOCATION"):
        spark.sql(f"CREATE TABLE {_name()} USING lance LOCATION '{path}' AS SELECT 1 AS a")
    assert not os.path.exists(os.path.join(path, "_versions"))
    with pytest.raises(Exception, match="DatasetNotFoundError"):  # no dataset there to describe
        spark.sql(f"CREATE TABLE {_name()} USING lance LOCATION '{path}'")
    # TBLPROPERTIES reach the data source as options: lance-spark's dataset-creation properties
    # cannot apply to an existing dataset, so they are refused, not ignored
    with pytest.raises(Exception, match="unknown read option 'v.arrow.fixed-size-list.size'"):
        spark.sql(f"CREATE TABLE {_name()} USING lance LOCATION '{path}' "
                  "TBLPROPERTIES ('v.arrow.fixed-size-list.size' = '8')")


@pytest.mark.slow
@pytest.mark.spark
def test_inserts_that_lose_the_table_metadata_fail_loudly(spark, tmp_path):
    path = str(tmp_path / "ins")
    lance_fw.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}), path)
    name, view = _name(), _name()
    spark.sql(f"CREATE TABLE {name} USING lance LOCATION '{path}'")
    spark.range(10, 12).selectExpr("id", "'z' AS s").createOrReplaceTempView(view)
    try:
        # columns Spark must compute or cast carry the table's column metadata (and so its location)
        spark.sql(f"INSERT INTO {name} SELECT id + 100, upper(s) FROM {view}")
        assert lance.dataset(path).count_rows() == 4
        # columns that already have the table's names and types reach the writer with the source's
        # schema, without the location: refused, never written elsewhere
        for write in (
            lambda: spark.sql(f"INSERT INTO {name} SELECT * FROM {view}"),
            lambda: spark.table(view).write.insertInto(name),
            lambda: spark.table(view).writeTo(name).append(),
        ):
            with pytest.raises(Exception, match="InvalidArgumentError.*catalog table.*LOCATION"):
                write()
        assert lance.dataset(path).count_rows() == 4 and lance.dataset(path).version == 2
    finally:
        spark.sql(f"DROP TABLE {name}")
        spark.catalog.dropTempView(view)
