"""The ``lance`` Spark data source on S3 (real SeaweedFS, ``s3_server``), configured as lance-spark jobs
configure it: each pylance storage option is a Spark option of its own (``.option("aws_endpoint", …)``);
the JSON ``storage_options`` option still works, and both together must agree. pylance reads the result.
"""

from __future__ import annotations

import json

import lance
import pyarrow as pa
import pytest

from conftest import assert_tables_equal
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.spark.options import READ_OPTIONS, check_options, storage_options

pytestmark = [pytest.mark.slow, pytest.mark.spark]

#: Rows written: several files (max_rows_per_file) over the two Spark partitions.
ROWS = 6000


def with_options(builder, options: dict):
    for key, value in options.items():
        builder = builder.option(key, value)
    return builder


def frame(spark, start: int = 0):
    return spark.range(start, start + ROWS, numPartitions=2).selectExpr("id", "concat('r', id % 97) AS name")


def test_write_and_read_with_individual_storage_options(spark, s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    with_options(frame(spark).write.format("lance").mode("append").option("max_rows_per_file", "2500"), opts).save(uri)
    with_options(frame(spark, ROWS).write.format("lance").mode("append"), opts).save(uri)
    theirs = lance.dataset(uri, storage_options=opts)
    assert theirs.version == 2 and theirs.count_rows() == 2 * ROWS
    ours = with_options(spark.read.format("lance"), opts).load(uri)
    rows = pa.Table.from_pylist([r.asDict() for r in ours.orderBy("id").collect()], schema=theirs.schema)
    assert_tables_equal(theirs.to_table().sort_by("id"), rows)


def test_object_store_aliases_and_json_together(spark, s3_server):
    """object_store's short spellings, part of the configuration as JSON: pylance takes both forms."""
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    individual = {"access_key_id": opts["aws_access_key_id"], "secret_access_key": opts["aws_secret_access_key"],
                  "region": opts["aws_region"]}
    as_json = json.dumps({"aws_endpoint": opts["aws_endpoint"], "allow_http": "true"})
    writer = with_options(frame(spark).write.format("lance").mode("append"), individual).option("storage_options", as_json)
    writer.save(uri)
    assert lance.dataset(uri, storage_options=opts).count_rows() == ROWS
    reader = with_options(spark.read.format("lance"), individual).option("storage_options", as_json)
    assert reader.load(uri).filter("id % 1000 = 0").count() == ROWS // 1000


def test_storage_option_keys_are_collected_and_checked():
    opts = check_options({"path": "s3://b/ds", "AWS_Endpoint": "http://h:1", "allow_http": "true",
                          "storage_options": json.dumps({"aws_region": "eu-west-1"})}, READ_OPTIONS, "read")
    assert storage_options(opts) == {"aws_endpoint": "http://h:1", "allow_http": "true", "aws_region": "eu-west-1"}
    assert storage_options(check_options({"path": "/tmp/x"}, READ_OPTIONS, "read")) is None
    with pytest.raises(InvalidArgumentError, match="aws_region"):  # two values for one key
        storage_options(check_options({"aws_region": "a", "storage_options": json.dumps({"aws_region": "b"})},
                                      READ_OPTIONS, "read"))
    with pytest.raises(InvalidArgumentError, match="aws_endpoint_urll"):  # still refused: nobody reads it
        check_options({"aws_endpoint_urll": "x"}, READ_OPTIONS, "read")


def test_unsupported_pylance_storage_option_is_refused_by_name(spark, s3_server):
    uri = s3_server.new_bucket() + "/ds"
    writer = with_options(frame(spark).write.format("lance").mode("append"), {**s3_server.storage_options,
                                                                "aws_server_side_encryption": "aws:kms"})
    with pytest.raises(Exception, match="aws_server_side_encryption") as info:
        writer.save(uri)
    assert "UnsupportedFeatureError" in str(info.value) or isinstance(info.value, UnsupportedFeatureError)
