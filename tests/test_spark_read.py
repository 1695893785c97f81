"""Pruned Spark reads (issue 20, Speed): ``lance_fw.spark.read(spark, path, columns, filter, version)``,
the ``.schema("a bigint, ...")`` form, ``count()`` from the manifest, and filter pushdown staying off.

Differential: pylance's ``to_table(columns=..., filter=...)`` on the same dataset is the oracle (rows
compared sorted by id, since Spark's row order across partitions is not pylance's).
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.spark
from lance_fw.errors import InvalidArgumentError, LanceError
from lance_fw.spark.reader import LanceReader

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROWS = 5000  # several fragments of 2,000 rows: crosses 1024-value blocks and 4096-value chunks
DIM = 8
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def _table(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    rng = np.random.default_rng(start)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * DIM, dtype=np.float32)), DIM)
    return pa.table(
        {
            "id": ids,
            "x": pa.array([None if i % 11 == 0 else float(i % 97) / 4 for i in ids.tolist()], pa.float64()),
            "s": pa.array([f"s{i % 13}" for i in ids.tolist()]),
            "vec": vectors,
        }
    )


@pytest.fixture
def dataset(uri: str) -> str:
    """ROWS rows in 3 fragments, one of them with a deletion file written by pylance."""
    lance.write_dataset(_table(0, ROWS), uri, max_rows_per_file=2000)
    lance.dataset(uri).delete("id % 7 = 3")
    return uri


def _rows(df) -> list[dict]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def _oracle(uri: str, columns=None, filter=None, version=None) -> list[dict]:
    table = lance.dataset(uri, version=version).to_table(columns=columns, filter=filter)
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize(
    ("columns", "filter"),
    [
        (None, None),
        (["id", "s"], None),
        (["id", "vec"], "id < 1000"),
        (["id", "x"], "x IS NULL OR s = 's3'"),
        (["s", "id"], "id IN (1, 2, 2001, 4999) AND s != 's1'"),
        (["id"], "x > 10.5 AND id >= 2500"),
    ],
)
def test_pruned_read_equals_pylance(spark, dataset, columns, filter):
    df = lance_fw.spark.read(spark, dataset, columns=columns, filter=filter)
    assert df.columns == (columns or ["id", "x", "s", "vec"])
    assert _rows(df) == _oracle(dataset, columns, filter)
    expected_count = lance.dataset(dataset).count_rows(filter=filter)
    assert df.count() == expected_count
    assert df.groupBy().count().collect()[0][0] == expected_count  # Spark's own count agrees


def test_no_columns_still_counts_every_row(spark, dataset):
    """A read of no columns yields row-count-only batches; empty batches made every count 0."""
    below = lance.dataset(dataset).count_rows(filter="id < 1000")
    assert lance_fw.spark.read(spark, dataset, columns=[], filter="id < 1000").count() == below
    assert lance_fw.spark.read(spark, dataset, columns=[]).count() == lance.dataset(dataset).count_rows()
    plain = spark.read.format("lance").option("columns", "[]").option("filter", "id < 1000").load(dataset)
    assert plain.columns == []
    assert plain.count() == below
    assert plain.groupBy().count().collect()[0][0] == below


def test_pruned_read_decodes_only_the_chosen_columns(spark, dataset):
    """What Spark hands the reader is the pruned schema: the executors decode only those columns."""
    df = lance_fw.spark.read(spark, dataset, columns=["id"], filter="x > 3")
    reader = LanceReader({"path": dataset, "columns": '["id"]', "filter": "x > 3"}, df.schema)
    assert reader.columns == ["id"]
    assert [p.fragment_id for p in reader.partitions()] == [
        f.fragment_id for f in lance.dataset(dataset).get_fragments()
    ]


def test_pruned_read_pins_the_version(spark, dataset):
    """Every query on the DataFrame (and its metadata count) reads the version current at read()."""
    df = lance_fw.spark.read(spark, dataset, columns=["id"])
    before = _oracle(dataset, ["id"])
    lance.write_dataset(_table(ROWS, 100), dataset, mode="append")
    assert df.count() == len(before)
    assert _rows(df) == before
    old = lance_fw.spark.read(spark, dataset, columns=["id", "s"], filter="id < 10", version=1)
    assert _rows(old) == _oracle(dataset, ["id", "s"], "id < 10", version=1)
    assert lance_fw.spark.read(spark, dataset).count() == lance.dataset(dataset).count_rows()


def test_count_comes_from_the_manifest(spark, dataset):
    """No Spark job runs for count() of the pruned read; deletions are subtracted as pylance does."""
    assert lance.dataset(dataset).count_rows() < ROWS  # the fixture's deletion file is counted
    df = lance_fw.spark.read(spark, dataset)
    sc = spark.sparkContext
    sc.setJobGroup("lance_fw_metadata_count", "count() of a pruned read")
    try:
        assert df.count() == lance.dataset(dataset).count_rows()
        assert list(sc.statusTracker().getJobIdsForGroup("lance_fw_metadata_count")) == []
        assert df.filter("id < 100").count() == lance.dataset(dataset).count_rows(filter="id < 100")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


def test_user_schema_reads_a_subset_and_refuses_another_type(spark, dataset):
    df = spark.read.format("lance").schema("s string, id bigint").load(dataset)
    assert df.columns == ["s", "id"]
    assert _rows(df) == _oracle(dataset, ["s", "id"])
    with pytest.raises(Exception, match=r"SchemaError.*'id' is bigint .* expects int"):
        spark.read.format("lance").schema("id int").load(dataset).collect()
    with pytest.raises(Exception, match=r"InvalidArgumentError.*no column\(s\) \['nope'\]"):
        spark.read.format("lance").schema("id bigint, nope string").load(dataset).collect()


def test_bad_arguments_raise_typed_errors(spark, dataset):
    with pytest.raises(InvalidArgumentError, match=r"no column\(s\) \['nope'\]"):
        lance_fw.spark.read(spark, dataset, columns=["id", "nope"])
    with pytest.raises(InvalidArgumentError, match="list of column names"):
        lance_fw.spark.read(spark, dataset, columns="id")  # type: ignore[arg-type]
    with pytest.raises(LanceError):
        lance_fw.spark.read(spark, dataset, filter="nope > 1")
    with pytest.raises(LanceError):
        lance_fw.spark.read(spark, dataset, version=99)


@pytest.mark.parametrize("pruned", [True, False])
def test_filter_then_count_on_the_same_dataframe_with_pushdown_enabled(spark, dataset, pruned):
    """Spark 4.3 caches a Python reader's planning result per DataFrame and replaces it only when a
    later query has a filter to push: a reader that applied pushed filters would answer the second
    count with the first query's rows. lance_fw does not push filters, so the sequence stays exact."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        df = lance_fw.spark.read(spark, dataset) if pruned else spark.read.format("lance").load(dataset)
        total = lance.dataset(dataset).count_rows()
        below = lance.dataset(dataset).count_rows(filter="id < 100")
        assert df.filter("id < 100").count() == below
        assert df.count() == total
        assert df.groupBy().count().collect()[0][0] == total
        assert df.filter("id < 100").count() == below
        assert df.select("id").distinct().count() == total
    finally:
        spark.conf.unset(PUSHDOWN_CONF)
