"""Producing several items' batches ahead of a consumer on a bounded thread pool.

The scanner decodes ``fragment_readahead`` fragments at once this way. Each item's generator is
advanced one batch per pool task, and a task is only submitted while the item has fewer than
``depth`` batches waiting, so no worker ever blocks on a full buffer: nothing polls, closing the
consumer only stops submitting, and a pool with no queued work lets the interpreter exit even
when a consumer was abandoned without being closed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: What a step returns once its item's generator is exhausted.
_DONE = object()


class _Ahead:
    """One item's batches, produced by pool tasks at most ``depth`` ahead of the consumer.

    Invariants (under ``_lock``): ``_pending`` holds the submitted steps oldest first, at most one of
    them not yet done (``_running``); once the generator ends or fails, its last step stays in
    ``_pending`` until the consumer takes it, so the consumer never waits on an empty queue.
    """

    def __init__(
        self, pool: ThreadPoolExecutor, produce: Callable[[Any], Iterator[T]], item: Any, depth: int
    ) -> None:
        self._pool, self._produce, self._item, self._depth = pool, produce, item, depth
        self._batches: Iterator[T] | None = None  # made by the first step, in a worker
        self._lock = threading.RLock()  # a step done before add_done_callback calls back at once
        self._pending: deque[Future] = deque()
        self._running = self._finished = self._closed = False
        with self._lock:
            self._submit()

    def _submit(self) -> None:
        if self._running or self._finished or self._closed or len(self._pending) >= self._depth:
            return
        try:
            step = self._pool.submit(self._step)
        except RuntimeError:  # the pool or the interpreter is shutting down: produce no more
            self._closed = True
            return
        self._running = True
        self._pending.append(step)
        step.add_done_callback(self._stepped)

    def _step(self) -> Any:
        if self._batches is None:
            self._batches = iter(self._produce(self._item))
        return next(self._batches, _DONE)

    def _stepped(self, step: Future) -> None:
        with self._lock:
            self._running = False
            if step.cancelled() or step.exception() is not None or step.result() is _DONE:
                self._finished = True
            if self._closed:
                self._close_batches()
            else:
                self._submit()

    def next(self) -> Any:
        """The item's next batch (``_DONE`` after its last); raises what producing it raised."""
        with self._lock:
            step = self._pending[0]
        value = step.result()
        with self._lock:
            self._pending.popleft()
            self._submit()
        return value

    def close(self) -> None:
        """Submit nothing more and close the generator (now, or when its running step ends)."""
        with self._lock:
            self._closed = True
            for step in self._pending:
                step.cancel()
            if not self._running:
                self._close_batches()

    def _close_batches(self) -> None:
        batches, self._batches = self._batches, None
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def readahead(
    items: Sequence[Any], produce: Callable[[Any], Iterator[T]], ahead: int, depth: int = 2
) -> Iterator[T]:
    """The batches of ``produce(item)`` for each item, in order, with up to ``ahead`` items decoded
    at once by a pool of ``ahead`` worker threads.

    Lazy and bounded, because consumers such as DuckDB stop pulling at a ``LIMIT``: nothing starts
    before the first batch is asked for, an item is started only when the consumer reaches the one
    ``ahead - 1`` before it, and each item holds at most ``depth`` batches not yet taken. Closing
    the generator stops the work and closes every started producer; a producer's error is raised
    in the consumer.
    """
    if ahead <= 1 or len(items) <= 1:
        for item in items:
            yield from produce(item)
        return
    pool = ThreadPoolExecutor(max_workers=min(ahead, len(items)), thread_name_prefix="lance_fw-readahead")
    started: dict[int, _Ahead] = {}  # items started and not yet consumed, by position
    begun = 0  # items started so far
    try:
        for i in range(len(items)):
            while begun < min(len(items), i + ahead):
                started[begun] = _Ahead(pool, produce, items[begun], depth)
                begun += 1
            current = started[i]
            while (value := current.next()) is not _DONE:
                yield value
            del started[i]
    finally:
        for item in started.values():
            item.close()
        pool.shutdown(wait=False, cancel_futures=True)
