"""The commit contract (issue 19): put-if-absent storage gets safe commits through one generic
handler, no handler claims a store it cannot make safe, pylance's ``commit_lock`` is honoured, a
claim whose manifest never appears is reported truthfully (hook answer type checks and per-key
conflicts are in test_plugin_kernel).

Plugins are REAL distributions built in a temp dir (the ``kernel`` fixture of test_plugin_kernel).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import lance
import lance.commit
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError, StorageError
from lance_fw.io.storage import resolve_storage
from lance_fw.table import transaction
from lance_fw.table.commit import resolve_commit_handler
from tests.conftest import assert_tables_equal
from tests import test_plugin_kernel

kernel = test_plugin_kernel.kernel  # the fixture installing real plugin distributions

ROWS = 5000  # several 1024-value blocks and more than one 4096-value chunk


def _table(start: int = 0, rows: int = ROWS) -> pa.Table:
    return pa.table({"a": pa.array(range(start, start + rows), pa.int64()),
                     "s": [f"v{i}" for i in range(start, start + rows)]})


# --- 1. put_if_absent and the generic handler -----------------------------------------------------

def test_local_put_if_absent_creates_exactly_once(tmp_path):
    storage = resolve_storage(str(tmp_path))
    assert storage.atomic_put_if_absent
    target = str(tmp_path / "sub" / "m.manifest")
    storage.put_if_absent(target, b"first")
    with pytest.raises(CommitConflictError, match="m.manifest"):
        storage.put_if_absent(target, b"second")
    assert storage.read_bytes(target) == b"first"
    assert os.listdir(tmp_path / "sub") == ["m.manifest"]  # no temp file left by either call


def test_local_put_if_absent_races_have_one_winner(tmp_path):
    storage, target, won, lost = resolve_storage(str(tmp_path)), str(tmp_path / "v.manifest"), [], []
    barrier = threading.Barrier(8)

    def put(i: int) -> None:
        barrier.wait(timeout=60)
        try:
            storage.put_if_absent(target, f"writer {i}".encode())
            won.append(i)
        except CommitConflictError:
            lost.append(i)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(won) == 1 and len(lost) == 7
    assert storage.read_bytes(target) == f"writer {won[0]}".encode()


def test_local_commits_go_through_the_generic_handler(tmp_path, uri):
    from lance_fw_plugins.commit_put_if_absent import PutIfAbsentCommitHandler

    storage = resolve_storage(uri)
    assert isinstance(resolve_commit_handler(storage, uri), PutIfAbsentCommitHandler)
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.1")
    lance_fw.write_dataset(_table(ROWS), uri, mode="append")
    assert lance.dataset(uri).version == 2
    assert lance.dataset(uri).to_table().equals(lance_fw.dataset(uri).to_table())
    assert not [n for n in os.listdir(f"{uri}/_versions") if n.startswith(".tmp-")]


#: A third-party storage for ``pia://<local path>`` that implements put_if_absent and NO commit handler.
PIA_STORAGE = """
    import os
    from lance_fw.errors import CommitConflictError
    from lance_fw.io.storage import Storage
    from lance_fw_plugins.storage_local import LocalStorage

    PREFIX = "pia://"
    PUTS = []

    def _local(path):
        return path[len(PREFIX):] if path.startswith(PREFIX) else path

    class PiaStorage(Storage):
        scheme = "pia"
        atomic_put_if_absent = True

        def __init__(self, options):
            self.options = dict(options)
            self._inner = LocalStorage()

        def open_reader(self, path):
            return self._inner.open_reader(_local(path))

        def open_output(self, path):
            return self._inner.open_output(_local(path))

        def list_dir(self, path):
            return self._inner.list_dir(_local(path))

        def exists(self, path):
            return self._inner.exists(_local(path))

        def delete(self, path):
            self._inner.delete(_local(path))

        def mtime(self, path):
            return self._inner.mtime(_local(path))

        def put_if_absent(self, path, data):
            final = _local(path)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            try:
                fd = os.open(final + ".part", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                raise CommitConflictError(path)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            try:
                os.link(final + ".part", final)
            except FileExistsError:
                raise CommitConflictError(path)
            finally:
                os.unlink(final + ".part")
            PUTS.append(path)

    @hookimpl
    def lance_storage(uri, options):
        return PiaStorage(options) if uri.startswith(PREFIX) else None
    """


def test_storage_plugin_with_put_if_absent_needs_no_commit_handler(kernel, tmp_path):
    """Used to fail with "no commit handler for 'pia://...'": a storage had to bring its own handler."""
    kernel.install("pia", PIA_STORAGE)
    kernel.reload()
    uri = f"pia://{tmp_path}/ds"
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    lance_fw.write_dataset(_table(ROWS), uri, mode="append")
    puts = sys.modules["lfw_test_pia"].PUTS
    assert [p.rsplit("/", 2)[-2] for p in puts] == ["_versions", "_versions"]
    assert lance_fw.dataset(uri).to_table().equals(pa.concat_tables([_table(), _table(ROWS)]))
    assert lance.dataset(f"{tmp_path}/ds").count_rows() == 2 * ROWS  # pylance reads what it published


# --- 2. no handler claims a store it cannot make safe -----------------------------------------------

def test_in_process_memory_filesystem_still_commits():
    uri = "memory://lfw-commit-contract/ds"
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    lance_fw.write_dataset(_table(ROWS), uri, mode="append")
    assert lance_fw.dataset(uri).count_rows() == 2 * ROWS


def test_scheme_without_a_safe_commit_is_refused_naming_the_handlers(tmp_path):
    """fsspec's ``local://`` is shared by processes: the in-process lock used to claim it, so two
    processes appending could both publish one version. Now the write is refused before any file is
    written, and the error says what would make it safe."""
    uri = f"local://{tmp_path}/ds"
    with pytest.raises(StorageError) as info:
        lance_fw.write_dataset(_table(), uri)
    message = str(info.value)
    assert "'local'" in message and "put_if_absent" in message and "commit" in message
    assert "commit_put_if_absent" in message and "commit_fsspec" in message  # the installed handlers
    assert not (tmp_path / "ds" / "_versions").exists()


# --- 3. pylance's commit_lock is honoured --------------------------------------------------------

class RecordingLock:
    """pylance's ``CommitLock``: called with the version about to be committed, returns a context
    manager; the manifest is written inside it. Records what it saw."""

    def __init__(self, conflicts: int = 0):
        self.calls: list[tuple] = []
        self.conflicts = conflicts  # refuse this many first calls with pylance's CommitConflictError

    def __call__(self, version: int):
        lock = self

        class _Lease:
            def __enter__(self):
                lock.calls.append(("enter", version))
                if lock.conflicts:
                    lock.conflicts -= 1
                    raise lance.commit.CommitConflictError(f"version {version} is locked")

            def __exit__(self, exc_type, exc, tb):
                lock.calls.append(("exit", version, exc_type is None))
                return True  # pylance ignores it; lance_fw must too (a failed write stays failed)

        return _Lease()


def _lock_session(write, uri) -> list[tuple]:
    lock = RecordingLock()
    write.write_dataset(_table(), uri, commit_lock=lock, data_storage_version="2.0")
    write.write_dataset(_table(ROWS), uri, mode="append", commit_lock=lock)
    write.write_dataset(_table(2 * ROWS), uri, mode="overwrite", commit_lock=lock)
    return lock.calls


def test_commit_lock_is_called_as_pylance_calls_it(tmp_path):
    """Used to raise UnsupportedFeatureError('commit_lock'); now the same lock sees the same calls."""
    theirs = _lock_session(lance, str(tmp_path / "pylance"))
    ours = _lock_session(lance_fw, str(tmp_path / "ours"))
    assert ours == theirs == [("enter", 1), ("exit", 1, True), ("enter", 2), ("exit", 2, True),
                              ("enter", 3), ("exit", 3, True)]
    assert lance.dataset(str(tmp_path / "ours")).to_table().equals(lance.dataset(str(tmp_path / "pylance")).to_table())


def test_commit_lock_makes_an_unsafe_scheme_committable(tmp_path):
    """A scheme with no safe handler (fsspec ``local://``) commits under the caller's lock."""
    uri, lock = f"local://{tmp_path}/ds", RecordingLock()
    lance_fw.write_dataset(_table(), uri, commit_lock=lock, data_storage_version="2.0")
    lance_fw.write_dataset(_table(ROWS), uri, mode="append", commit_lock=lock)
    assert lock.calls == [("enter", 1), ("exit", 1, True), ("enter", 2), ("exit", 2, True)]
    assert lance.dataset(f"{tmp_path}/ds").count_rows() == 2 * ROWS


class FileCommitLock:
    """A commit lock shared by processes: ``flock`` on a file (blocks while another process holds it)."""

    def __init__(self, path: str):
        self.path = path

    def __call__(self, version: int):
        import contextlib
        import fcntl

        @contextlib.contextmanager
        def held():
            with open(self.path, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)

        return held()


LOCKED_APPENDS = 10


def _locked_appender(uri: str, lock_path: str, writer: int, barrier) -> None:
    barrier.wait(timeout=120)
    for i in range(LOCKED_APPENDS):
        lance_fw.write_dataset(pa.table({"writer": [writer], "i": [i]}), uri, mode="append",
                               commit_lock=FileCommitLock(lock_path))


@pytest.mark.slow
def test_commit_lock_makes_two_processes_safe_on_an_unsafe_scheme(tmp_path):
    """fsspec ``local://`` has no atomic create: without a lock it is refused; with a lock shared by
    the processes, every append of both lands and versions are consecutive."""
    import multiprocessing as mp

    uri, lock_path = f"local://{tmp_path}/ds", str(tmp_path / "commit.lock")
    empty = pa.table({"writer": pa.array([], pa.int64()), "i": pa.array([], pa.int64())})
    lance_fw.write_dataset(empty, uri, commit_lock=FileCommitLock(lock_path), data_storage_version="2.0")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_locked_appender, args=(uri, lock_path, w, barrier)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    ds = lance.dataset(f"{tmp_path}/ds")
    assert ds.version == 1 + 2 * LOCKED_APPENDS
    assert sorted((r["writer"], r["i"]) for r in ds.to_table().to_pylist()) == \
        sorted((w, i) for w in (1, 2) for i in range(LOCKED_APPENDS))


def test_commit_lock_conflict_is_retried(tmp_path, uri):
    """pylance's documented contract (lance.commit): CommitConflictError from the lock is a conflict.
    (pylance 14.0.2 itself reports it as an internal error; lance_fw re-reads and retries.)"""
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    lock = RecordingLock(conflicts=1)
    lance_fw.write_dataset(_table(ROWS), uri, mode="append", commit_lock=lock)
    assert lock.calls[0] == ("enter", 2) and lock.calls[-2:] == [("enter", 2), ("exit", 2, True)]
    assert lance_fw.dataset(uri).count_rows() == 2 * ROWS


def test_commit_lock_failure_is_an_os_error_like_pylance(tmp_path):
    def broken(version):
        raise RuntimeError("lock service down")

    for module, uri in ((lance, str(tmp_path / "p")), (lance_fw, str(tmp_path / "f"))):
        with pytest.raises(OSError, match="lock service down"):
            module.write_dataset(_table(), uri, commit_lock=broken)
    versions = tmp_path / "f" / "_versions"
    assert not versions.exists() or not [n for n in os.listdir(versions) if n.endswith(".manifest")]


def test_lance_dataset_commit_takes_a_commit_lock(tmp_path, uri):
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    fragments = lance_fw.fragment.write_fragments(_table(ROWS), uri)
    lock = RecordingLock()
    ds = lance_fw.LanceDataset.commit(uri, lance_fw.LanceOperation.Append(fragments), read_version=1,
                                      commit_lock=lock)
    assert ds.version == 2 and lock.calls == [("enter", 2), ("exit", 2, True)]


# --- 4. a claim whose manifest never appears is reported truthfully --------------------------------

#: A claim-then-write commit handler for local datasets: it creates ``<dataset>/_claims/<manifest
#: name>`` exclusively, then writes the manifest. With LFW_TEST_CRASH_AFTER_CLAIM set, the process
#: dies between the two (a crash); with LFW_TEST_REPAIR set, ``repair`` drops a dead claim.
CLAIMS_HANDLER = """
    import os
    from lance_fw.errors import CommitConflictError
    from lance_fw.table.commit import CommitHandler
    from lance_fw.table.manifest import manifest_name

    LANCE_FW_OVERRIDES = {"lance_commit_handler": ["file"]}
    REPAIRED = []

    def _claim(path):
        versions_dir, name = path.rsplit("/", 1)
        return versions_dir.rsplit("/", 1)[0] + "/_claims/" + name

    class ClaimThenWrite(CommitHandler):
        def commit(self, path, data):
            claim = _claim(path)
            os.makedirs(os.path.dirname(claim), exist_ok=True)
            try:
                os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                raise CommitConflictError(f"{claim} is claimed")
            if os.environ.get("LFW_TEST_CRASH_AFTER_CLAIM"):
                os._exit(17)
            self.storage.write_bytes(path, data)

    class RepairingClaims(ClaimThenWrite):
        def repair(self, base_uri, version):
            REPAIRED.append(version)
            for v2 in (True, False):
                claim = f"{base_uri}/_claims/{manifest_name(version, v2)}"
                if os.path.exists(claim):
                    os.unlink(claim)
            return True

    @hookimpl
    def lance_commit_handler(storage, uri):
        if "://" in uri and not uri.startswith("file://"):
            return None
        return (RepairingClaims if os.environ.get("LFW_TEST_REPAIR") else ClaimThenWrite)(storage)
    """


@pytest.fixture
def crashed_claim(kernel, tmp_path, uri):
    """A dataset at version 1 whose version 2 was claimed by a process that died before writing it."""
    kernel.install("claims", CLAIMS_HANDLER)
    kernel.reload()
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    code = ("import lance_fw, pyarrow as pa; "
            f"lance_fw.write_dataset(pa.table({{'a': pa.array([1], pa.int64()), 's': ['x']}}), {uri!r}, mode='append')")
    env = {**os.environ, "LFW_TEST_CRASH_AFTER_CLAIM": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    crashed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert crashed.returncode == 17, crashed.stderr
    assert os.listdir(f"{uri}/_claims") and lance_fw.dataset(uri).version == 1
    return uri


def test_crashed_claim_is_reported_as_stuck_not_as_conflicts(crashed_claim, monkeypatch):
    """Used to retry 100 times and say 'gave up after 100 conflicting concurrent commits'."""
    monkeypatch.setattr(transaction, "STUCK_AFTER_SECONDS", 0.0)
    with pytest.raises(CommitConflictError) as info:
        lance_fw.write_dataset(_table(ROWS), crashed_claim, mode="append")
    message = str(info.value)
    assert type(info.value).__name__ == "CommitStuckError"
    assert "version 2" in message and "no manifest" in message and "lfw_test_claims.ClaimThenWrite" in message
    assert "gave up" not in message
    assert lance_fw.dataset(crashed_claim).count_rows() == ROWS


def test_stuck_version_reported_truthfully_when_retries_run_out(crashed_claim):
    storage = resolve_storage(crashed_claim)
    with pytest.raises(CommitConflictError, match="refused version 2.*no manifest") as info:
        transaction.commit(storage, crashed_claim, transaction.Append(), max_retries=3)
    assert "gave up after 3 conflicting" not in str(info.value)


def test_handler_repair_unsticks_the_dataset(crashed_claim, monkeypatch):
    monkeypatch.setenv("LFW_TEST_REPAIR", "1")
    lance_fw.write_dataset(_table(ROWS), crashed_claim, mode="append")
    assert sys.modules["lfw_test_claims"].REPAIRED == [2]
    assert lance_fw.dataset(crashed_claim).version == 2
    assert lance.dataset(crashed_claim).count_rows() == 2 * ROWS


def _lock_on_dataset(module, uri) -> list[int]:
    """Every mutating call of a dataset opened with ``commit_lock`` commits under it (pylance keeps
    the lock on the dataset object, and on the one write_dataset returns)."""
    versions: list[int] = []

    class Lease:
        def __init__(self, version):
            versions.append(version)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    ds = module.write_dataset(_table(), uri, commit_lock=Lease, data_storage_version="2.0")
    ds.delete("a < 10")
    ds = module.dataset(uri, commit_lock=Lease)
    ds.delete("a = 100")
    ds.add_columns({"b": "a * 2"})
    ds.update({"a": "a + 1000000"}, where="a = 200")
    ds.merge_insert("a").when_not_matched_insert_all().execute(_table(10 * ROWS, 10).append_column(
        "b", pa.array(range(10), pa.int64())))
    ds.drop_columns(["b"])
    return versions


def test_dataset_commit_lock_is_used_by_every_mutation_as_in_pylance(tmp_path):
    """``dataset(commit_lock=...)`` used to raise UnsupportedFeatureError."""
    theirs = _lock_on_dataset(lance, str(tmp_path / "pylance"))
    ours = _lock_on_dataset(lance_fw, str(tmp_path / "ours"))
    assert ours == theirs == [1, 2, 3, 4, 5, 6, 7]
    assert_tables_equal(lance.dataset(str(tmp_path / "pylance")).to_table().sort_by("a"),
                        lance.dataset(str(tmp_path / "ours")).to_table().sort_by("a"))
