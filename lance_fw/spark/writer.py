"""Batch and streaming writes: tasks write data files, the driver commits one version.

Each task conforms Spark's Arrow batches to the stored schema and writes its own data files
(uuid names, so a retried attempt never collides with a failed one) and returns their fragment
metadata. ``commit`` runs once, in a driver-side worker, and commits the fragments of the messages
it received (one per partition) as one Append or Overwrite with lance_fw's conflict-retrying
commit loop; files of a failed attempt are never referenced. A streaming sink records
``(stream id, batch id)`` in the transaction properties and skips a batch already committed, so a
query restarted from its checkpoint does not add a replayed batch twice. The stream id must survive
restarts: it is the ``stream_id`` option, else Spark's query id (kept in the checkpoint, and handed
to every task as the local property ``sql.streaming.queryId``, so it is found whether the checkpoint
came from the option or from ``spark.sql.streaming.checkpointLocation``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from lance_fw._proto import table_pb2
from lance_fw.errors import (
    CommitConflictError,
    DatasetExistsError,
    InvalidArgumentError,
)
from lance_fw.file.version import version_name
from lance_fw.io.storage import join_uri, resolve_storage
from lance_fw.schema import conform
from lance_fw.spark.ledger import JobLedger
from lance_fw.spark.options import (
    CHECKPOINT_LOCATION,
    MAX_RECOVERY_LOOKBACK,
    int_option,
)
from lance_fw.spark.options import STREAM_ID as STREAM_ID_OPTION
from lance_fw.spark.types import check_float16_range
from lance_fw.table.manifest import (
    data_files_since,
    list_versions,
    read_manifest,
    read_transaction,
)
from lance_fw.table.write import FileProgress, WritePlan, delete_fragment_files

STREAM_ID = "lance_fw.spark.stream_id"
BATCH_ID = "lance_fw.spark.batch_id"
#: How many recent versions a streaming commit searches for its own batch (as lance-spark does).
STREAM_LOOKBACK = 100
#: The TaskContext local property in which Spark hands every task of a streaming query its id.
QUERY_ID_PROPERTY = "sql.streaming.queryId"

#: What Spark hands ``commit`` / ``abort``: one message per task, None for a task it did not hear from.
Messages = Sequence[WriterCommitMessage | None]


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """What one task wrote: serialized ``DataFragment`` messages (ids are assigned at commit)."""

    partition_id: int
    attempt: int
    fragments: list[bytes] = field(default_factory=list)
    rows: int = 0
    query_id: str | None = None  # the streaming query's id, as the task saw it


def _task_identity() -> tuple[int, int, str | None]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0, None
    return ctx.partitionId(), ctx.attemptNumber(), ctx.getLocalProperty(QUERY_ID_PROPERTY)


def write_task(
    plan: WritePlan, batches: Iterator[pa.RecordBatch], progress: FileProgress | None = None
) -> LanceCommitMessage:
    """Write one task's batches into data files (``progress`` hears of each, see ``FileProgress``)."""
    partition_id, attempt, query_id = _task_identity()
    rows = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for batch in batches:
            check_float16_range(batch, plan.arrow_schema)
            batch = conform(batch, plan.arrow_schema, "spark write")  # UTC timestamps, vectors, ...
            rows += batch.num_rows
            yield batch

    fragments = plan.write(counted(), progress)
    return LanceCommitMessage(
        partition_id, attempt, [f.SerializeToString() for f in fragments], rows, query_id
    )


def received_fragments(plan: WritePlan, messages: Messages) -> list[table_pb2.DataFragment]:
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


def abort_messages(plan: WritePlan, messages: Messages) -> set[str]:
    """Delete the files of the delivered messages (Spark passes None for tasks it did not hear
    from: batch writes find those through their ``JobLedger``). Spark also aborts after a commit
    that failed once its version may be published: files a newer version references are kept.
    Returns those files' names."""
    storage = plan.storage()
    published = data_files_since(storage, plan.uri, plan.read_version)
    for message in messages:
        if isinstance(message, LanceCommitMessage):
            delete_fragment_files(
                storage,
                plan.uri,
                [f for f in _decode(message) if not any(d.path in published for d in f.files)],
            )
    return published


class LanceArrowWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan, properties: dict[str, str]) -> None:
        self.plan, self.properties = plan, properties
        self.ledger = JobLedger(plan.uri)  # one per job: the tasks and the commit share this object

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        partition_id, attempt, query_id = _task_identity()
        message = self.ledger.run_task(
            self.plan.storage(), partition_id, attempt, lambda task: write_task(self.plan, iterator, task)
        )
        if message is None:  # the job closed before this task ended: nothing of it counts
            return LanceCommitMessage(partition_id, attempt, query_id=query_id)
        return message

    def commit(self, messages: Messages) -> None:
        fragments = received_fragments(self.plan, messages)
        rows = sum(m.rows for m in messages if isinstance(m, LanceCommitMessage))
        commit_planned(self.plan, fragments, {**self.properties, "lance_fw.spark.rows": str(rows)})
        self.ledger.close(self.plan.storage(), {d.path for frag in fragments for d in frag.files})

    def abort(self, messages: Messages) -> None:
        self.ledger.close(self.plan.storage(), abort_messages(self.plan, messages))


class LanceStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, plan: WritePlan, properties: dict[str, str], identity: StreamIdentity) -> None:
        self.plan, self.properties, self.identity = plan, properties, identity

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        return write_task(self.plan, iterator)

    def commit(self, messages: Messages, batchId: int) -> None:
        fragments = received_fragments(self.plan, messages)
        storage = self.plan.storage()
        stream_id = self.identity.resolve(messages)
        if stream_id is None and fragments:
            delete_fragment_files(storage, self.plan.uri, fragments)
            raise InvalidArgumentError(
                "cannot tell which streaming query wrote this batch, so a replay after a "
                "restart could be committed twice: set .option('stream_id', ...)"
            )
        if stream_id is not None and batch_committed(self.plan, stream_id, batchId, self.identity.lookback):
            delete_fragment_files(storage, self.plan.uri, fragments)  # a replay: the data is already there
            return
        properties = {**self.properties, BATCH_ID: str(batchId)}
        if stream_id is not None:  # None: an empty batch no task ran for; a replay of it adds no row
            properties[STREAM_ID] = stream_id
        commit_planned(self.plan, fragments, properties)

    def abort(self, messages: Messages, batchId: int) -> None:
        abort_messages(self.plan, messages)


def commit_planned(
    plan: WritePlan, fragments: list[table_pb2.DataFragment], properties: dict[str, str]
) -> int:
    """Commit a Spark write. Spark's append mode creates a missing dataset; if it exists by commit
    time (another application, or an earlier batch of this stream, created it while the tasks
    ran), the write commits as an append instead of failing with "use mode='append'". The append
    checks that the dataset has the schema the files were written with; the file format version
    is checked here."""
    storage = plan.storage()
    versions = list_versions(storage, plan.uri) if plan.mode == "create" else []
    if versions:
        theirs = read_manifest(storage, versions[-1].path)[0].data_format.version
        if theirs and theirs != version_name(plan.version):
            delete_fragment_files(storage, plan.uri, fragments)
            raise CommitConflictError(
                f"{plan.uri} was created meanwhile with file format {theirs}; this job wrote "
                f"{version_name(plan.version)} files and committed nothing: re-run it"
            )
        plan = replace(plan, mode="append")
    try:
        return plan.commit(fragments, properties)
    except DatasetExistsError:
        if plan.mode != "create":
            raise
        raise CommitConflictError(
            f"{plan.uri} was created by another writer while this job committed; it "
            "committed nothing: re-run it (it will append)"
        ) from None


def batch_committed(plan: WritePlan, stream_id: str, batch_id: int, lookback: int = STREAM_LOOKBACK) -> bool:
    """Whether one of the last ``lookback`` versions committed this stream's batch."""
    storage = plan.storage()
    for entry in reversed(list_versions(storage, plan.uri)[-lookback:]):
        txn = read_transaction(storage, plan.uri, entry.path)
        if (
            txn is not None
            and txn.transaction_properties.get(STREAM_ID) == stream_id
            and txn.transaction_properties.get(BATCH_ID) == str(batch_id)
        ):
            return True
    return False


@dataclass
class StreamIdentity:
    """What names a streaming query across restarts, resolved when a batch commits.

    A fresh uuid per micro-batch (what the sink used when the checkpoint came from the session
    conf) never matches a replay, so a batch replayed after a crash was committed twice."""

    option: str | None = None  # the stream_id option
    checkpoint: str | None = None  # the checkpointLocation option
    lookback: int = STREAM_LOOKBACK

    @classmethod
    def from_options(cls, options: dict[str, str]) -> StreamIdentity:
        lookback = int_option(options, MAX_RECOVERY_LOOKBACK, STREAM_LOOKBACK) or STREAM_LOOKBACK
        return cls(options.get(STREAM_ID_OPTION) or None, options.get(CHECKPOINT_LOCATION) or None, lookback)

    def resolve(self, messages: Messages) -> str | None:
        """``stream_id`` if given, else the query id the tasks saw, else the one Spark keeps in
        ``<checkpointLocation>/metadata``; None if none is known (no task reported)."""
        if self.option:
            return self.option
        ids = {m.query_id for m in messages if isinstance(m, LanceCommitMessage) and m.query_id}
        if len(ids) > 1:
            raise InvalidArgumentError(
                f"the tasks of one micro-batch report different query ids {sorted(ids)}"
            )
        if ids:
            return ids.pop()
        if self.checkpoint:
            checkpoint = self.checkpoint.removeprefix("file:")
            try:
                return json.loads(resolve_storage(checkpoint).read_bytes(join_uri(checkpoint, "metadata")))[
                    "id"
                ]
            except Exception:
                return None
        return None
