"""Named, bounded worker pools shared by the layers that decode or encode in threads.

Why named pools and not one: a task of one pool may wait on tasks of another (a readahead worker
reads a batch whose columns are decoded on the column pool; a writer waits on page encodes), but
never on its own pool's tasks, so no pool can deadlock by filling itself with waiters. numpy,
pyarrow and zstd release the GIL in their kernels, which is where these tasks spend their time.
"""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

#: Workers per pool: the machine's cores, at most this many.
MAX_WORKERS = 4

#: What a pool's thread names start with, before the pool's name (``pool``): how a task can tell
#: which pool it runs on (``readahead`` must not wait on its own pool from inside it).
THREAD_NAME_PREFIX = "lance_fw-"


def on_pool_thread(prefix: str = "") -> bool:
    """Whether the calling thread is a worker of a pool whose name starts with ``prefix`` (of
    any of lance_fw's pools by default), told by its thread name (``THREAD_NAME_PREFIX``)."""
    return threading.current_thread().name.startswith(THREAD_NAME_PREFIX + prefix)


_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def _forget_pools_in_child() -> None:
    """A forked child has none of its parent's pool threads: a pool it inherited would queue tasks
    no thread ever runs (a multiprocessing worker forked after a scan would hang)."""
    global _LOCK
    _POOLS.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools_in_child)


@functools.cache
def workers() -> int:
    """Threads a pool runs: ``min(MAX_WORKERS, cores)`` (asked once: ``os.cpu_count`` reads
    ``/sys`` on every call, which a point lookup paid per query)."""
    return min(MAX_WORKERS, os.cpu_count() or 1)


def pool(name: str, size: int | None = None) -> ThreadPoolExecutor:
    """The process-wide pool ``name`` (created on first use, threads named ``lance_fw-<name>``),
    of ``size`` threads (default :func:`workers`; a name is always asked with one size).

    Tasks submitted to it must never wait on other tasks of the same pool."""
    with _LOCK:
        found = _POOLS.get(name)
        if found is None:
            found = _POOLS[name] = ThreadPoolExecutor(
                size or workers(), thread_name_prefix=f"{THREAD_NAME_PREFIX}{name}"
            )
        return found
