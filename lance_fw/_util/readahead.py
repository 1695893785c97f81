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
from typing import Any, TypeVar, cast

from lance_fw._util import pools

T = TypeVar("T")

#: Name of the shared pools readahead runs on, per ``ahead`` (``pools.pool``), and their threads' prefix.
_POOL_PREFIX = "readahead-"
_THREAD_PREFIX = pools.THREAD_NAME_PREFIX + _POOL_PREFIX
#: What a step returns once its item's generator is exhausted.
_DONE = object()


class _Ahead:
    """One item's batches, produced by pool tasks at most ``depth`` ahead of the consumer.

    Invariants (under ``_lock``): ``_pending`` holds the submitted steps oldest first, and a step is
    submitted only once the one before it is done (``Future.done``), so one thread at a time
    advances the generator. "Running" is read off the futures, not kept in a flag a done-callback
    clears: ``Future.result`` wakes the consumer before the callbacks run, and a flag still set
    then made the consumer skip its submit and find the queue empty on its next call.
    """

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        produce: Callable[[Any], Iterator[T]],
        item: Any,
        depth: int,
        batches: Iterator[T] | None = None,
    ) -> None:
        self._pool, self._produce, self._item, self._depth = pool, produce, item, depth
        #: made by the first step, in a worker, unless given (the item's batches under way)
        self._batches: Iterator[T] | None = batches
        self._lock = threading.RLock()  # a step done before add_done_callback calls back at once
        self._pending: deque[Future] = deque()
        self._finished = self._closed = False
        with self._lock:
            self._submit()

    def _running(self) -> bool:
        return bool(self._pending) and not self._pending[-1].done()

    def _submit(self) -> None:
        if self._finished or self._closed or len(self._pending) >= self._depth or self._running():
            return
        try:
            step = self._pool.submit(self._step)
        except RuntimeError:  # the pool or the interpreter is shutting down: the consumer steps itself
            self._closed = True
            return
        self._pending.append(step)
        step.add_done_callback(self._stepped)

    def _step(self) -> Any:
        if self._batches is None:
            self._batches = iter(self._produce(self._item))
        return next(self._batches, _DONE)

    def _stepped(self, step: Future) -> None:
        with self._lock:
            if step.cancelled() or step.exception() is not None or step.result() is _DONE:
                self._finished = True
            if self._closed:
                if not self._running():
                    self._close_batches()
            else:
                self._submit()

    def next(self) -> Any:
        """The item's next batch (``_DONE`` after its last); raises what producing it raised."""
        with self._lock:
            step = self._pending[0] if self._pending else None
        if step is None:  # no worker could be started: produce it here, never end early
            return self._step() if not self._finished else _DONE
        try:
            value = step.result()
        except BaseException:
            with self._lock:
                self._finished = True
                self._pending.popleft()
            raise
        with self._lock:
            self._pending.popleft()
            if value is _DONE:
                self._finished = True
            else:
                self._submit()
        return value

    def close(self) -> None:
        """Submit nothing more and close the generator (now, or when its running step ends)."""
        with self._lock:
            self._closed = True
            for step in self._pending:
                step.cancel()
            if not self._running():
                self._close_batches()

    def _close_batches(self) -> None:
        batches, self._batches = self._batches, None
        _close(batches)


def _close(batches: Iterator[Any] | None) -> None:
    """Close a producer's generator (its ``finally`` releases what it holds)."""
    close = getattr(batches, "close", None)
    if close is not None:
        close()


def readahead(
    items: Sequence[Any],
    produce: Callable[[Any], Iterator[T]],
    ahead: int,
    depth: int = 2,
    first_alone: bool = False,
) -> Iterator[T]:
    """The batches of ``produce(item)`` for each item, in order, with up to ``ahead`` items decoded
    at once by a pool of ``ahead`` worker threads.

    Lazy and bounded, because consumers such as DuckDB stop pulling at a ``LIMIT``: nothing starts
    before the first batch is asked for, an item is started only when the consumer reaches the one
    ``ahead - 1`` before it, and each item holds at most ``depth`` batches not yet taken. Closing
    the generator stops the work and closes every started producer; a producer's error is raised
    in the consumer.

    ``first_alone``: the first batch is produced by itself, on the consumer's thread, and nothing
    more is started before the consumer asks for the next one. Why: DuckDB pulls exactly one
    batch for a ``SELECT ... LIMIT 10``; the first item's second batch and the next items' first
    ones, produced beside it, made it wait for the cores, and ran on into the next query.
    """
    if ahead <= 1 or len(items) <= 1:
        for item in items:
            yield from produce(item)
        return
    head: Iterator[T] | None = None
    if first_alone:
        head = iter(produce(items[0]))
        try:
            first = next(head, _DONE)
            if first is _DONE:  # an item without rows: the next one's first batch goes alone
                yield from readahead(items[1:], produce, ahead, depth, first_alone)
                return
            yield cast(T, first)
        except BaseException:  # closed after its first batch (GeneratorExit), or its error
            _close(head)
            raise
    nested = pools.on_pool_thread(_POOL_PREFIX)
    # a pool of this ``ahead`` kept for later scans (a pool started per scan cost ~0.4 ms, a
    # tenth of a DuckDB point lookup); a producer that itself reads ahead, on one of its threads,
    # gets a pool of its own instead, since its steps would wait on steps of the pool it runs on
    pool = (
        ThreadPoolExecutor(max_workers=min(ahead, len(items)), thread_name_prefix=f"{_THREAD_PREFIX}-nested")
        if nested
        else pools.pool(f"{_POOL_PREFIX}{ahead}", ahead)
    )
    started: dict[int, _Ahead] = {}  # items started and not yet consumed, by position
    begun = 0  # items started so far
    try:
        for i in range(len(items)):
            while begun < min(len(items), i + ahead):
                started[begun] = _Ahead(pool, produce, items[begun], depth, head if begun == 0 else None)
                begun += 1
            current = started[i]
            while (value := current.next()) is not _DONE:
                yield value
            del started[i]
    finally:
        for item in started.values():
            item.close()
        if nested:
            pool.shutdown(wait=False, cancel_futures=True)
