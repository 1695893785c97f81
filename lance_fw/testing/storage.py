"""``StorageConformance``: the contract of ``lance_fw.io.storage.Storage`` as tests.

A storage plugin's suite subclasses it and provides a fresh, empty URI prefix per test, and the
options (a class attribute, or the ``options`` fixture when they come from another fixture)::

    class TestMyStorage(StorageConformance):
        @pytest.fixture
        def options(self, my_server):
            return {"my_endpoint": my_server.endpoint}

        @pytest.fixture
        def root(self, my_server):
            return f"my://bucket/{uuid.uuid4().hex}"

The tests check what the table format relies on: outputs appear whole or not at all, listing,
range reads (coalesced, and truncation as ``CorruptFileError``), idempotent deletes, ``mtime``, the
options the storage was opened with, and -- for a backend that declares ``atomic_put_if_absent``
-- that of several racing ``put_if_absent`` calls, from threads and from processes, exactly one wins.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lance_fw.errors import CommitConflictError, CorruptFileError, DatasetNotFoundError
from lance_fw.testing._plugin import StoreUnderTest

if TYPE_CHECKING:
    from lance_fw.io.storage import Storage

#: Size of the file the range-read tests write: several coalescing gaps (64 KiB) long.
RANGE_FILE_BYTES = 300_000
#: Racers in the put-if-absent races.
RACERS = 4
#: Seconds a racer waits for the others at the start line, and the parent for a process.
RACE_TIMEOUT_S = 120


def _payload(n: int, salt: int = 0) -> bytes:
    """``n`` bytes where every position holds a different-looking value (a misplaced range shows)."""
    return bytes((i * 31 + salt + (i >> 8)) & 0xFF for i in range(n))


def race_put_if_absent(
    uri: str,
    options: Mapping[str, Any],
    path: str,
    racer: int,
    barrier: multiprocessing.synchronize.Barrier,
    results: multiprocessing.queues.Queue,
) -> None:
    """One racing process: open the storage, wait at ``barrier``, try ``put_if_absent``; report
    ``(racer, "won" | "conflict" | repr(other error))`` on ``results``. Module level so that
    ``spawn`` can import it in the child (the plugin must be installed there: an entry point)."""
    from lance_fw.io.storage import resolve_storage

    try:
        storage = resolve_storage(uri, dict(options))
        barrier.wait(RACE_TIMEOUT_S)
        storage.put_if_absent(path, f"racer {racer}".encode())
        results.put((racer, "won"))
    except CommitConflictError:
        results.put((racer, "conflict"))
    except BaseException as exc:
        results.put((racer, repr(exc)))


class StorageConformance(StoreUnderTest):
    """Base class of a storage plugin's conformance tests (override ``root``)."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        """A fresh, empty URI prefix for one test (default: a local temp directory)."""
        return str(tmp_path / "storage")

    @pytest.fixture
    def storage(self, root: str, options: Mapping[str, Any]) -> Storage:
        from lance_fw.io.storage import resolve_storage

        return resolve_storage(root, dict(options))

    # -- whole files ----------------------------------------------------------------------------

    def test_write_then_read(self, storage: Storage, root: str) -> None:
        path = f"{root}/dir/file.bin"
        storage.write_bytes(path, b"hello lance")
        assert storage.exists(path)
        assert storage.read_bytes(path) == b"hello lance"
        with storage.open_reader(path) as reader:
            assert reader.size() == len(b"hello lance")
        storage.write_bytes(path, b"replaced")  # a second write replaces the file whole
        assert storage.read_bytes(path) == b"replaced"

    def test_empty_file(self, storage: Storage, root: str) -> None:
        path = f"{root}/empty"
        storage.write_bytes(path, b"")
        assert storage.exists(path)
        assert storage.read_bytes(path) == b""

    def test_options_are_kept(self, storage: Storage, options: Mapping[str, Any]) -> None:
        assert dict(storage.options) == dict(options), (
            "Storage.options must be the storage_options it was opened with (commit handlers receive them)"
        )

    def test_missing_file(self, storage: Storage, root: str) -> None:
        path = f"{root}/missing"
        assert not storage.exists(path)
        with pytest.raises(DatasetNotFoundError):
            storage.open_reader(path)
        with pytest.raises(OSError):
            storage.mtime(path)

    # -- atomic outputs -------------------------------------------------------------------------

    def test_output_appears_only_when_closed(self, storage: Storage, root: str) -> None:
        path = f"{root}/out/manifest"
        data = _payload(100_000)
        out = storage.open_output(path)
        try:
            out.write(data[:50_000])
            if hasattr(out, "flush"):
                out.flush()
            assert not storage.exists(path), "a half-written output is visible under its final name"
            assert "manifest" not in storage.list_dir(f"{root}/out"), "a half-written output is listed"
            out.write(data[50_000:])
        finally:
            out.close()
        assert storage.exists(path)
        with storage.open_reader(path) as reader:
            assert reader.size() == len(data)
        assert storage.read_bytes(path) == data

    def test_replacing_output_keeps_the_old_file_until_closed(self, storage: Storage, root: str) -> None:
        path = f"{root}/replace"
        storage.write_bytes(path, b"old contents")
        out = storage.open_output(path)
        try:
            out.write(b"new contents, longer than the old")
            assert storage.read_bytes(path) == b"old contents", "readers saw a partial replacement"
        finally:
            out.close()
        assert storage.read_bytes(path) == b"new contents, longer than the old"

    def test_reader_keeps_its_snapshot(self, storage: Storage, root: str) -> None:
        """A reader opened before the file is replaced reads the old bytes or fails with a typed
        error; never half old, half new (``open_reader``: the size is fixed when it opens)."""
        from lance_fw.errors import LanceError

        path = f"{root}/snapshot"
        old, new = _payload(10_000, salt=1), _payload(10_000, salt=2)
        storage.write_bytes(path, old)
        with storage.open_reader(path) as reader:
            first = bytes(reader.read(0, 5_000))
            storage.write_bytes(path, new)
            try:
                rest = bytes(reader.read(5_000, 5_000))
            except (LanceError, OSError):
                return
            assert first + rest == old, "a reader opened before a replacement read part of the new file"

    def test_aborted_output_publishes_nothing(self, storage: Storage, root: str) -> None:
        path = f"{root}/aborted"
        out = storage.open_output(path)
        if not hasattr(out, "abort"):
            out.close()
            pytest.skip("the output stream has no abort(): callers delete the file instead")
        out.write(b"never published")
        out.abort()
        assert not storage.exists(path)
        with pytest.raises(RuntimeError), storage.open_output(path) as failing:
            failing.write(b"partial")
            raise RuntimeError("the writer fails in the middle")
        assert not storage.exists(path), "an output left by an exception was published"

    # -- listing and deleting -------------------------------------------------------------------

    def test_list_dir(self, storage: Storage, root: str) -> None:
        for name in ("a.bin", "b.bin", "sub/c.bin"):
            storage.write_bytes(f"{root}/d/{name}", name.encode())
        assert sorted(storage.list_dir(f"{root}/d")) == ["a.bin", "b.bin", "sub"]
        assert storage.list_dir(f"{root}/d/sub") == ["c.bin"]
        assert storage.list_dir(f"{root}/nowhere") == []

    def test_delete(self, storage: Storage, root: str) -> None:
        path = f"{root}/gone"
        storage.write_bytes(path, b"x")
        storage.delete(path)
        assert not storage.exists(path)
        storage.delete(path)  # deleting a missing file is fine (deletes are retried)
        storage.delete(f"{root}/never/existed")

    def test_mtime(self, storage: Storage, root: str) -> None:
        path = f"{root}/timed"
        storage.write_bytes(path, b"x")
        mtime = storage.mtime(path)
        assert mtime is None or isinstance(mtime, float), f"mtime must be a float or None, got {type(mtime)}"
        if mtime is not None:
            assert mtime > 1e9, f"mtime {mtime} is not seconds since the epoch"

    # -- range reads ----------------------------------------------------------------------------

    def test_range_reads(self, storage: Storage, root: str) -> None:
        path = f"{root}/ranges"
        data = _payload(RANGE_FILE_BYTES)
        storage.write_bytes(path, data)
        with storage.open_reader(path) as reader:
            assert reader.size() == len(data)
            for offset, length in [(0, 1), (0, 0), (17, 4096), (len(data) - 5, 5), (123_456, 70_000)]:
                assert bytes(reader.read(offset, length)) == data[offset : offset + length], (offset, length)
            ranges = [(250_000, 10), (0, 100), (90, 20), (100, 0), (150_000, 3), (299_990, 10), (5, 1)]
            got = reader.read_ranges(ranges)  # unsorted, overlapping, adjacent, empty, far apart
            assert [bytes(b) for b in got] == [data[o : o + n] for o, n in ranges]
            assert bytes(reader.read_exact(10, 20, "a block")) == data[10:30]

    def test_read_into(self, storage: Storage, root: str) -> None:
        """``read_into``: each range's bytes where ``at`` says (a run of pages laid out buffer by
        buffer), ranges unsorted, adjacent in the file or not, empty."""
        path = f"{root}/into"
        data = _payload(RANGE_FILE_BYTES, salt=3)
        storage.write_bytes(path, data)
        ranges = [(250_000, 10), (0, 100), (100, 50), (100, 0), (299_990, 10)]
        at = [160, 10, 110, 0, 170]
        out = bytearray(200)
        with storage.open_reader(path) as reader:
            reader.read_into(ranges, memoryview(out), at)
        for (offset, length), place in zip(ranges, at):
            assert bytes(out[place : place + length]) == data[offset : offset + length], (offset, length)
        assert bytes(out[:10]) == bytes(10) and bytes(out[180:]) == bytes(20)

    def test_read_past_the_end_is_corrupt_file_error(self, storage: Storage, root: str) -> None:
        path = f"{root}/short"
        storage.write_bytes(path, b"0123456789")
        with storage.open_reader(path) as reader:
            for offset, length in [(5, 6), (10, 1), (100, 1), (-1, 2)]:
                with pytest.raises(CorruptFileError):
                    reader.read_exact(offset, length, "the footer")
            with pytest.raises(CorruptFileError):
                reader.read_into([(5, 6)], memoryview(bytearray(6)), [0])

    def test_concurrent_range_reads(self, storage: Storage, root: str) -> None:
        path = f"{root}/shared"
        data = _payload(RANGE_FILE_BYTES, salt=7)
        storage.write_bytes(path, data)
        errors: list[BaseException] = []
        with storage.open_reader(path) as reader:

            def read(k: int) -> None:
                try:
                    for i in range(20):
                        offset = (k * 7919 + i * 104_729) % (len(data) - 1000)
                        assert bytes(reader.read(offset, 1000)) == data[offset : offset + 1000]
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(RACE_TIMEOUT_S)
        assert not errors, errors

    # -- put if absent --------------------------------------------------------------------------

    def _needs_put_if_absent(self, storage: Storage) -> None:
        if not storage.atomic_put_if_absent:
            pytest.skip(f"{type(storage).__name__} does not declare atomic_put_if_absent")

    def test_put_if_absent(self, storage: Storage, root: str) -> None:
        self._needs_put_if_absent(storage)
        path = f"{root}/_versions/1.manifest"
        storage.put_if_absent(path, b"first")
        with pytest.raises(CommitConflictError):
            storage.put_if_absent(path, b"second")
        assert storage.read_bytes(path) == b"first"

    def test_put_if_absent_race_between_threads(self, storage: Storage, root: str) -> None:
        self._needs_put_if_absent(storage)
        path = f"{root}/_versions/2.manifest"
        barrier, outcomes, lock = threading.Barrier(RACERS), {}, threading.Lock()

        def race(racer: int) -> None:
            barrier.wait(RACE_TIMEOUT_S)
            try:
                storage.put_if_absent(path, f"racer {racer}".encode())
                outcome = "won"
            except CommitConflictError:
                outcome = "conflict"
            except BaseException as exc:
                outcome = repr(exc)
            with lock:
                outcomes[racer] = outcome

        threads = [threading.Thread(target=race, args=(r,)) for r in range(RACERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(RACE_TIMEOUT_S)
        self._one_winner(storage, path, outcomes)

    def test_put_if_absent_race_between_processes(
        self, storage: Storage, root: str, options: Mapping[str, Any]
    ) -> None:
        self._needs_put_if_absent(storage)
        if not self.multiprocess:
            pytest.skip("multiprocess = False: the process race does not run for this class")
        path = f"{root}/_versions/3.manifest"
        ctx = multiprocessing.get_context("spawn")
        barrier, results = ctx.Barrier(RACERS), ctx.Queue()
        procs = [
            ctx.Process(target=race_put_if_absent, args=(root, dict(options), path, r, barrier, results))
            for r in range(RACERS)
        ]
        for p in procs:
            p.start()
        try:
            outcomes = dict(results.get(timeout=RACE_TIMEOUT_S) for _ in procs)
        finally:
            for p in procs:
                p.join(RACE_TIMEOUT_S)
        self._one_winner(storage, path, outcomes)

    @staticmethod
    def _one_winner(storage: Storage, path: str, outcomes: dict[int, str]) -> None:
        assert len(outcomes) == RACERS, outcomes
        winners = [r for r, outcome in outcomes.items() if outcome == "won"]
        others = {r: o for r, o in outcomes.items() if o not in ("won", "conflict")}
        assert not others, f"racers failed with errors other than CommitConflictError: {others}"
        assert len(winners) == 1, f"exactly one put_if_absent must win, got {outcomes}"
        assert storage.read_bytes(path) == f"racer {winners[0]}".encode()
