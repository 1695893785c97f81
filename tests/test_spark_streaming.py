"""``writeStream.format("lance")``: exactly-once commits across a restart from the checkpoint."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _add_file(directory, n: int, start: int) -> None:
    pq.write_table(pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                             "g": pa.array([i % 3 for i in range(start, start + n)], pa.int64())}),
                   os.path.join(directory, f"part-{start:06d}.parquet"))


def _run(spark, source, checkpoint, path, mode="append", query=None):
    stream = spark.readStream.schema("id bigint, g bigint").option("maxFilesPerTrigger", 1).parquet(source)
    if query is not None:
        stream = query(stream)
    q = (stream.writeStream.format("lance").outputMode(mode).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start(path))
    q.awaitTermination()
    assert q.exception() is None
    return q


def test_restarted_query_does_not_commit_a_batch_twice(spark, tmp_path):
    source, checkpoint, path = (str(tmp_path / n) for n in ("in", "ck", "out"))
    os.makedirs(source)
    for i in range(3):
        _add_file(source, 100, i * 100)
    first = _run(spark, source, checkpoint, path)
    ds = lance.dataset(path)
    assert (ds.version, ds.count_rows()) == (3, 300)
    assert ds.read_transaction(3).transaction_properties["lance_fw.spark.stream_id"] == str(first.id)

    # Crash between the Lance commit and Spark's own commit log: batch 2 is replayed on restart.
    for name in ("2", ".2.crc"):
        if os.path.exists(os.path.join(checkpoint, "commits", name)):
            os.remove(os.path.join(checkpoint, "commits", name))
    _run(spark, source, checkpoint, path)
    ds = lance.dataset(path)
    assert (ds.version, ds.count_rows()) == (3, 300)  # no duplicate rows, no new version
    referenced = {f.path for frag in ds.get_fragments() for f in frag.data_files()}
    assert set(os.listdir(os.path.join(path, "data"))) == referenced  # the replay's files were removed

    _add_file(source, 50, 300)  # new data after the restart is committed once
    _run(spark, source, checkpoint, path)
    ids = sorted(lance.dataset(path).to_table().column("id").to_pylist())
    assert ids == list(range(350))


def test_complete_mode_overwrites_each_batch(spark, tmp_path):
    source, checkpoint, path = (str(tmp_path / n) for n in ("in", "ck", "out"))
    os.makedirs(source)
    for i in range(2):
        _add_file(source, 30, i * 30)
    _run(spark, source, checkpoint, path, mode="complete", query=lambda s: s.groupBy("g").count())
    table = lance.dataset(path).to_table().sort_by("g")
    assert table.to_pydict() == {"g": [0, 1, 2], "count": [20, 20, 20]}


def test_stream_read_emits_each_append_once(spark, tmp_path):
    import lance_fw

    path, checkpoint = str(tmp_path / "src"), str(tmp_path / "ck")
    lance_fw.write_dataset(pa.table({"id": pa.array(range(0, 10), pa.int64())}), path)
    lance_fw.write_dataset(pa.table({"id": pa.array(range(10, 15), pa.int64())}), path, mode="append")
    seen = []

    def collect(batch_df, batch_id):
        seen.extend(r.id for r in batch_df.collect())

    def run():
        q = (spark.readStream.format("lance").option("filter", "id != 3").load(path).writeStream
             .foreachBatch(collect).option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        q.awaitTermination()
        assert q.exception() is None

    run()
    assert sorted(seen) == [i for i in range(15) if i != 3]
    lance_fw.write_dataset(pa.table({"id": pa.array(range(15, 18), pa.int64())}), path, mode="append")
    lance_fw.dataset(path).delete("id = 0")  # a delete emits nothing new
    run()  # restarted from the checkpoint: only the new append
    assert sorted(seen) == [i for i in range(18) if i != 3]
