"""Local outputs sync to disk while they are written, and stay all-or-nothing.

``storage_local.SyncAheadFile`` hands ``fdatasync`` of each further 8 MiB to a background thread
so that the fsync on close (durability pylance does not give: it never syncs data files) waits for
the tail only. These tests check what that must not change: the bytes, the atomic publish, the
discard on abort with a sync in flight, and the shared pools across ``fork``.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import wait

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw
from lance_fw._util import pools
from lance_fw.io.staged_output import TEMP_PREFIX
from lance_fw.io.storage import resolve_storage
from lance_fw_plugins.storage_local import SYNC_AHEAD_BYTES

PIECE = 1 << 20


def _pieces(count: int) -> list[bytes]:
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, PIECE, dtype=np.uint8).tobytes() for _ in range(count)]


def test_a_large_output_appears_whole_with_its_bytes(tmp_path):
    pieces = _pieces(3 * SYNC_AHEAD_BYTES // PIECE + 3)
    target = str(tmp_path / "big.bin")
    storage = resolve_storage(str(tmp_path))
    with storage.open_output(target) as out:
        for piece in pieces:
            out.write(piece)
            assert not os.path.exists(target)  # never seen half written
        assert "sync" in pools._POOLS  # syncs ran in the background while it grew
    with open(target, "rb") as f:
        assert f.read() == b"".join(pieces)
    assert os.listdir(tmp_path) == ["big.bin"]


def test_an_aborted_output_leaves_nothing_with_a_sync_in_flight(tmp_path):
    target = str(tmp_path / "big.bin")
    storage = resolve_storage(str(tmp_path))
    out = storage.open_output(target)
    for piece in _pieces(SYNC_AHEAD_BYTES // PIECE + 1):  # one background sync started
        out.write(piece)
    out.abort()
    assert os.listdir(tmp_path) == []


def test_a_data_file_past_several_syncs_reads_in_pylance(tmp_path):
    """A 3M-row file (about 32 MB: three background syncs) written by lance_fw, read by pylance."""
    rows = 3_000_000
    table = pa.table({"id": np.arange(rows, dtype=np.int64), "x": np.random.default_rng(1).random(rows)})
    path = str(tmp_path / "ds")
    lance_fw.write_dataset(table, path, max_rows_per_file=rows)
    (name,) = os.listdir(os.path.join(path, "data"))
    assert not name.startswith(TEMP_PREFIX)
    assert os.path.getsize(os.path.join(path, "data", name)) > 3 * SYNC_AHEAD_BYTES
    assert lance.dataset(path).to_table().equals(table)


def _child_uses_pool(queue) -> None:  # runs in a forked child
    queue.put(pools.pool("test-fork").submit(lambda: 42).result(timeout=20))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_working_pools():
    """A child forked after a pool ran has none of its threads; before, its tasks queued forever."""
    assert pools.pool("test-fork").submit(lambda: 1).result() == 1
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_uses_pool, args=(queue,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 42


def test_a_failed_background_sync_fails_the_close(tmp_path, monkeypatch):
    """An I/O error of an earlier background sync (cannot be caused for real here: ``fdatasync``
    fails once) is raised on close, which publishes nothing, even after later syncs succeeded."""
    from lance_fw.errors import StorageError

    real, calls = os.fdatasync, []

    def first_fails(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fdatasync", first_fails)
    target = str(tmp_path / "big.bin")
    out = resolve_storage(str(tmp_path)).open_output(target)
    for piece in _pieces(3 * SYNC_AHEAD_BYTES // PIECE + 1):
        out.write(piece)
        pending = out._stream._pending  # let each background sync end before the next write
        if pending is not None:
            wait([pending])
    assert len(calls) >= 2  # the failed sync's future was followed by another
    with pytest.raises(StorageError, match="Input/output error"):
        out.close()
    assert os.listdir(tmp_path) == []
