"""Batch and streaming writes: tasks write data files, the driver commits one version.

Each task conforms Spark's Arrow batches to the stored schema and writes its own data files
(uuid names, so a retried attempt never collides with a failed one) and returns their fragment
metadata. ``commit`` runs once, in a driver-side worker, and commits the fragments of the messages
it received (one per partition) as one Append or Overwrite with lance_fw's conflict-retrying
commit loop; files of a failed attempt are never referenced. A streaming sink records
``(stream id, batch id)`` in the transaction properties and skips a batch already committed, so a
query restarted from its checkpoint does not add a replayed batch twice.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from lance_fw._proto import table_pb2
from lance_fw.table.write import WritePlan, delete_fragment_files
from lance_fw.io.storage import join_uri, resolve_storage
from lance_fw.schema import conform
from lance_fw.table.manifest import data_files_since, list_versions, read_transaction

STREAM_ID = "lance_fw.spark.stream_id"
BATCH_ID = "lance_fw.spark.batch_id"
#: How many recent versions a streaming commit searches for its own batch (as lance-spark does).
STREAM_LOOKBACK = 100


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """What one task wrote: serialized ``DataFragment`` messages (ids are assigned at commit)."""

    partition_id: int
    attempt: int
    fragments: list[bytes] = field(default_factory=list)
    rows: int = 0


def _task_identity() -> tuple[int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0)


def write_task(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
    partition_id, attempt = _task_identity()
    rows = 0

    def counted():
        nonlocal rows
        for batch in batches:
            batch = conform(batch, plan.arrow_schema, "spark write")  # UTC timestamps, vectors, ...
            rows += batch.num_rows
            yield batch

    fragments = plan.write(counted())
    return LanceCommitMessage(partition_id, attempt, [f.SerializeToString() for f in fragments], rows)


def received_fragments(plan: WritePlan, messages) -> list[table_pb2.DataFragment]:
    """Fragments of the delivered messages, one message per partition; the files of any extra
    attempt for the same partition are deleted, never committed."""
    chosen: dict[int, LanceCommitMessage] = {}
    extra: list[LanceCommitMessage] = []
    for message in messages:
        if not isinstance(message, LanceCommitMessage):
            continue
        if message.partition_id in chosen:
            extra.append(message)
        else:
            chosen[message.partition_id] = message
    storage = plan.storage()
    for message in extra:
        delete_fragment_files(storage, plan.uri, _decode(message))
    return [frag for pid in sorted(chosen) for frag in _decode(chosen[pid])]


def _decode(message: LanceCommitMessage) -> list[table_pb2.DataFragment]:
    return [table_pb2.DataFragment.FromString(raw) for raw in message.fragments]


def abort_messages(plan: WritePlan, messages) -> None:
    """Best-effort cleanup: Spark passes None for most tasks, so orphans can remain (invisible).
    Spark also aborts after a commit that failed once its version may be published: files a
    newer version references are kept."""
    storage = plan.storage()
    published = data_files_since(storage, plan.uri, plan.read_version)
    for message in messages:
        if isinstance(message, LanceCommitMessage):
            delete_fragment_files(storage, plan.uri, [f for f in _decode(message)
                                                      if not any(d.path in published for d in f.files)])


class LanceArrowWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan, properties: dict):
        self.plan, self.properties = plan, properties

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        return write_task(self.plan, iterator)

    def commit(self, messages) -> None:
        fragments = received_fragments(self.plan, messages)
        rows = sum(m.rows for m in messages if isinstance(m, LanceCommitMessage))
        self.plan.commit(fragments, {**self.properties, "lance_fw.spark.rows": str(rows)})

    def abort(self, messages) -> None:
        abort_messages(self.plan, messages)


class LanceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, plan: WritePlan, properties: dict, stream_id: str):
        self.plan, self.properties, self.stream_id = plan, properties, stream_id

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        return write_task(self.plan, iterator)

    def commit(self, messages, batchId: int) -> None:
        fragments = received_fragments(self.plan, messages)
        storage = self.plan.storage()
        if batch_committed(self.plan, self.stream_id, batchId):
            delete_fragment_files(storage, self.plan.uri, fragments)  # a replay: the data is already there
            return
        plan = self.plan
        if plan.mode == "create" and list_versions(storage, plan.uri):
            plan = replace(plan, mode="append")  # an earlier batch of this stream created the dataset
        plan.commit(fragments, {**self.properties, STREAM_ID: self.stream_id, BATCH_ID: str(batchId)})

    def abort(self, messages, batchId: int) -> None:
        abort_messages(self.plan, messages)


def batch_committed(plan: WritePlan, stream_id: str, batch_id: int) -> bool:
    """Whether one of the last ``STREAM_LOOKBACK`` versions committed this stream's batch."""
    storage = plan.storage()
    for entry in reversed(list_versions(storage, plan.uri)[-STREAM_LOOKBACK:]):
        txn = read_transaction(storage, plan.uri, entry.path)
        if txn is not None and txn.transaction_properties.get(STREAM_ID) == stream_id \
                and txn.transaction_properties.get(BATCH_ID) == str(batch_id):
            return True
    return False


def stream_identity(options) -> str:
    """A name for the stream that survives restarts: ``stream_id`` if given, else the query id Spark
    keeps in ``<checkpointLocation>/metadata``, else the checkpoint path itself."""
    if options.get("stream_id"):
        return options["stream_id"]
    checkpoint = options.get("checkpointLocation")
    if not checkpoint:
        return str(uuid.uuid4())  # no checkpoint: the query cannot restart, so no replay to detect
    checkpoint = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
    try:
        metadata = resolve_storage(checkpoint).read_bytes(join_uri(checkpoint, "metadata"))
        return json.loads(metadata)["id"]
    except Exception:  # not written yet, or unreadable: the path still names the stream
        return checkpoint
