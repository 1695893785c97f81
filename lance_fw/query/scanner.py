"""``LanceDataset.scanner(...)``: pylance's scan options over the dataset's batch stream.

Lazy: batches are produced on demand, so ``limit`` stops reading fragments early. With
``fragment_readahead=n`` up to n fragments are decoded at once in worker threads (``readahead``).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from lance_fw.errors import InvalidArgumentError
from lance_fw.query.projection import Projection
from lance_fw.table.fragment import with_row_columns


class LanceScanner:
    def __init__(self, ds, columns=None, filter=None, limit: int | None = None, offset: int | None = None,
                 with_row_id: bool = False, with_row_address: bool = False, batch_size: int | None = None,
                 fragments=None, fragment_readahead: int | None = None, **_ignored):
        self.projection = Projection(columns, ds.schema) if isinstance(columns, dict) else None
        if (limit is not None and limit < 0) or (offset is not None and offset < 0):
            raise InvalidArgumentError("limit and offset must not be negative")
        self._ds, self.columns, self.filter = ds, columns, filter
        self.limit, self.offset = limit, offset or 0
        self.with_row_id, self.with_row_address = with_row_id, with_row_address
        self.batch_size, self.fragments = batch_size, fragments
        self.fragment_readahead = fragment_readahead or 0

    @property
    def _read_columns(self) -> list[str] | None:
        return self.projection.columns if self.projection is not None else self.columns

    @property
    def projected_schema(self) -> pa.Schema:
        fields = list(self.projection.schema) if self.projection is not None else \
            [f.to_arrow() for f in self._ds._fields(self.columns)]
        return with_row_columns(pa.schema(fields), self.with_row_id, self.with_row_address)

    def _raw(self) -> Iterator[pa.RecordBatch]:
        ids = None if self.fragments is None else {getattr(f, "fragment_id", f) for f in self.fragments}
        extra = [n for n, on in (("_rowid", self.with_row_id), ("_rowaddr", self.with_row_address)) if on]
        for batch in self._ds.to_batches(self._read_columns, self.filter, self.batch_size, self.with_row_address,
                                         fragment_ids=ids, with_row_id=self.with_row_id,
                                         fragment_readahead=self.fragment_readahead):
            if self.projection is not None:
                tail = [batch.column(n) for n in extra]
                projected = self.projection.apply(batch.drop_columns(extra))
                batch = pa.RecordBatch.from_arrays([c.combine_chunks() for c in projected.columns] + tail,
                                                   names=projected.column_names + extra)
            yield batch

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        skip, left = self.offset, self.limit
        for batch in self._raw():
            if skip:
                cut = min(skip, batch.num_rows)
                batch, skip = batch.slice(cut), skip - cut
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield batch
            if left == 0:
                return  # stop reading: the generator chain is closed here

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self.to_batches())


_DONE = object()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def readahead(items: Sequence[Any], produce: Callable[[Any], Iterator[pa.RecordBatch]], ahead: int,
              depth: int = 2) -> Iterator[pa.RecordBatch]:
    """The batches of ``produce(item)`` for each item, in order, with up to ``ahead`` items decoded
    at once by worker threads (a bounded pool: one thread per item in flight).

    Lazy and bounded, because consumers such as DuckDB stop pulling at a ``LIMIT``: nothing starts
    before the first batch is asked for, an item is started only when the consumer reaches the one
    ``ahead - 1`` before it, and each item buffers at most ``depth`` batches. Closing the generator
    stops the workers; a worker's error is raised in the consumer. Workers are daemon threads, so
    a reader abandoned without being closed cannot keep the interpreter from exiting.
    """
    if ahead <= 1 or len(items) <= 1:
        for item in items:
            yield from produce(item)
        return
    stop = threading.Event()
    queues: dict[int, queue.Queue] = {}

    def put(q: queue.Queue, value) -> bool:
        while not stop.is_set():
            try:
                q.put(value, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work(item, q: queue.Queue) -> None:
        batches = produce(item)
        try:
            for batch in batches:
                if not put(q, batch):
                    return
            put(q, _DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(q, _Failed(exc))
        finally:
            batches.close()

    started = 0
    try:
        for i in range(len(items)):
            while started < min(len(items), i + ahead):
                queues[started] = queue.Queue(maxsize=depth)
                threading.Thread(target=work, args=(items[started], queues[started]), daemon=True,
                                 name=f"lance_fw-readahead-{started}").start()
                started += 1
            q = queues.pop(i)
            while True:
                value = q.get()
                if value is _DONE:
                    break
                if isinstance(value, _Failed):
                    raise value.error
                yield value
    finally:
        stop.set()
