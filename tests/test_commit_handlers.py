"""The commit contract (issue 19): put-if-absent storage gets safe commits through one generic
handler, no handler claims a store it cannot make safe, pylance's ``commit_lock`` is honoured, a
claim whose manifest never appears is reported truthfully, and hook answers are type-checked.

Plugins are REAL distributions built in a temp dir (the ``kernel`` fixture of test_plugin_kernel).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError, PluginLoadError, StorageError
from lance_fw.io.storage import resolve_storage
from lance_fw.table import transaction
from lance_fw.table.commit import resolve_commit_handler
from tests.test_plugin_kernel import Kernel, kernel  # noqa: F401 - the fixture

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
