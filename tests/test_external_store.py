"""Commits through an external manifest store (the ``manifest_store`` storage option, SQLite built in).

The store, not the storage, decides which writer gets a version; a writer that dies between its
claim and publishing its manifest leaves a staged manifest that the next writer publishes. Checked
against pylance: it opens every version written this way, and never lists a staged manifest.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sqlite3

import lance
import pyarrow as pa
import pytest
from lance_fw_plugins.commit_external_store import ExternalStoreCommitHandler, store_key

import lance_fw
from lance_fw.errors import (
    CommitConflictError,
    CorruptFileError,
    InvalidArgumentError,
    StorageError,
)
from lance_fw.io.storage import resolve_storage
from lance_fw.table.commit import resolve_commit_handler
from lance_fw.table.manifest import VERSIONS_DIR, list_versions
from lance_fw.table.manifest_store import (
    MANIFEST_STORE_OPTION,
    SQLiteManifestStore,
    check_entry,
    final_name_of,
    open_manifest_store,
    staging_name,
)
from lance_fw.testing import CommitHandlerConformance

#: Exit status of a writer made to die between its claim and publishing its manifest.
CRASH_EXIT = 17
WRITERS, APPENDS = 3, 8
#: Each writer deletes its own rows with i % DELETE_EVERY == DELETE_EVERY - 1 after appending them.
DELETE_EVERY = 4


@pytest.fixture
def store_url(tmp_path) -> str:
    return f"sqlite://{tmp_path / 'store' / 'manifests.db'}"


def _options(store_url: str) -> dict:
    return {MANIFEST_STORE_OPTION: store_url}


def _table(writer: int, lo: int, hi: int) -> pa.Table:
    return pa.table({"writer": pa.array([writer] * (hi - lo), pa.int64()), "i": pa.array(range(lo, hi), pa.int64())})


def _entries(store_url: str, uri: str) -> list[tuple[int, str]]:
    store = open_manifest_store(store_url)
    assert isinstance(store, SQLiteManifestStore)
    return list(store.entries(store_key(uri)))


def _version_files(uri: str) -> list[str]:
    """The manifests and staged manifests in ``_versions/`` (not the version hint)."""
    return sorted(n for n in os.listdir(os.path.join(uri, VERSIONS_DIR)) if ".manifest" in n)


# -- the store --------------------------------------------------------------------------------------

def test_sqlite_store_contract(tmp_path):
    store = SQLiteManifestStore(str(tmp_path / "s.db"))
    assert store.get("file:///d", 1) is None and store.get_latest("file:///d") is None
    store.put_if_absent("file:///d", 1, "_versions/a")
    with pytest.raises(CommitConflictError):
        store.put_if_absent("file:///d", 1, "_versions/b")
    assert store.get("file:///d", 1) == "_versions/a"  # the loser changed nothing
    store.put_if_absent("file:///d", 2, "_versions/c")
    store.put_if_absent("file:///other", 7, "_versions/x")
    store.put_if_exists("file:///d", 2, "_versions/d")
    assert store.get_latest("file:///d") == (2, "_versions/d")
    with pytest.raises(StorageError, match="no entry"):
        store.put_if_exists("file:///d", 3, "_versions/e")
    store.delete("file:///d")
    assert store.get_latest("file:///d") is None and store.get("file:///other", 7) == "_versions/x"
    mode = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with pytest.raises(InvalidArgumentError):
        store.get("file:///d", 0)


@pytest.mark.parametrize("url", ["sqlite://relative/store.db", "dynamodb://table", 42])
def test_store_url_is_checked(uri, url):
    with pytest.raises(InvalidArgumentError, match=MANIFEST_STORE_OPTION):
        lance_fw.write_dataset(_table(0, 0, 3), uri, storage_options={MANIFEST_STORE_OPTION: url})
    assert not os.path.exists(os.path.join(uri, VERSIONS_DIR))


def test_staging_names():
    final = "18446744073709551614.manifest"
    staged = staging_name(final)
    assert staged.startswith(final + "-") and final_name_of(staged) == final
    assert final_name_of(final) is None and final_name_of(final + "-not-a-uuid") is None
    assert check_entry("store", 1, f"{VERSIONS_DIR}/{staged}") == (final, True)
    assert check_entry("store", 3, f"{VERSIONS_DIR}/3.manifest") == ("3.manifest", False)  # V1 names too
    v1_staged = staging_name("3.manifest")
    assert check_entry("store", 3, f"{VERSIONS_DIR}/{v1_staged}") == ("3.manifest", True)


@pytest.mark.parametrize("entry", ["_versions/4.manifest", "data/3.manifest", "../3.manifest", "_versions/../3.manifest",
                                   "/abs/_versions/3.manifest", "_versions/3.manifest-x", "_versions/3.txt", ""])
def test_store_entries_naming_anything_else_are_refused(entry):
    """An entry is shared state others write: it is never followed outside this version's manifest."""
    with pytest.raises(CorruptFileError, match="not a manifest"):
        check_entry("store", 3, entry)


# -- the handler ------------------------------------------------------------------------------------

def test_handler_answers_only_with_the_option(uri, store_url):
    plain = resolve_storage(uri)
    assert not isinstance(resolve_commit_handler(plain, uri), ExternalStoreCommitHandler)
    with_store = resolve_storage(uri, _options(store_url))
    assert isinstance(resolve_commit_handler(with_store, uri), ExternalStoreCommitHandler)


def test_round_trip_and_pylance_interop(uri, store_url):
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 5000), uri, storage_options=opts, max_rows_per_file=4096)
    ds = lance_fw.write_dataset(_table(1, 0, 1500), uri, mode="append", storage_options=opts)
    ds.delete("i % 7 = 0")
    assert ds.version == 3
    # one entry per version, each naming the published manifest; no staged file left behind
    entries = _entries(store_url, uri)
    assert [v for v, _ in entries] == [1, 2, 3]
    assert [p for _, p in entries] == [f"{VERSIONS_DIR}/{os.path.basename(e.path)}"
                                       for e in list_versions(resolve_storage(uri), uri)]
    assert all(name.endswith(".manifest") for name in _version_files(uri))
    theirs = lance.dataset(uri)
    assert theirs.version == 3 and [v["version"] for v in theirs.versions()] == [1, 2, 3]
    for v in (1, 2, 3):
        assert lance_fw.dataset(uri, version=v).to_table() == theirs.checkout_version(v).to_table()
    # a dataset written by pylance takes store commits on top (the store starts at its next version)
    lance.write_dataset(_table(2, 0, 10), uri, mode="append")
    lance_fw.write_dataset(_table(3, 0, 10), uri, mode="append", storage_options=opts)
    assert [v for v, _ in _entries(store_url, uri)] == [1, 2, 3, 5]
    assert lance.dataset(uri).count_rows() == lance_fw.dataset(uri).count_rows() == 5000 + 1500 - len(range(0, 5000, 7)) - len(range(0, 1500, 7)) + 20


def test_store_key_is_one_spelling_per_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = store_key("ds")
    assert here == store_key(str(tmp_path / "ds")) == store_key(f"file://{tmp_path}/ds/")
    assert store_key("s3://bucket/ds/") == "s3://bucket/ds"


def test_staged_manifests_are_never_versions(uri, store_url):
    """A staged manifest (a claim not yet published) is invisible to both readers."""
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=_options(store_url))
    lance_fw.write_dataset(_table(0, 10, 20), uri, mode="append", storage_options=_options(store_url))
    directory = os.path.join(uri, VERSIONS_DIR)
    newest = next(n for n in _version_files(uri) if n.endswith(".manifest"))  # V2 names: newest sorts first
    shutil.copy(os.path.join(directory, newest), os.path.join(directory, staging_name(newest)))
    os.remove(os.path.join(directory, newest))
    assert [e.version for e in list_versions(resolve_storage(uri), uri)] == [1]
    assert lance_fw.dataset(uri).version == 1
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1]
    assert lance.dataset(uri).count_rows() == 10


# -- a writer that dies after its claim ------------------------------------------------------------

def _crashing_append(uri: str, store_url: str, step: str) -> None:
    """Append through the store, dying (no cleanup, no exception handlers) at ``step``."""
    from lance_fw.table import manifest_store

    def die(*args, **kwargs):
        os._exit(CRASH_EXIT)

    if step == "publish":  # claimed, nothing published
        ExternalStoreCommitHandler._place = die
    else:  # published, not yet marked committed in the store
        manifest_store.SQLiteManifestStore.put_if_exists = die
    lance_fw.write_dataset(_table(9, 100, 110), uri, mode="append", storage_options=_options(store_url))


def _run_crashing_writer(uri: str, store_url: str, step: str) -> None:
    proc = mp.get_context("spawn").Process(target=_crashing_append, args=(uri, store_url, step))
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == CRASH_EXIT


@pytest.mark.parametrize("repair_first", [False, True], ids=["by-next-writer", "by-reader"])
def test_crash_between_claim_and_publish_is_repaired(uri, store_url, repair_first):
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)
    _run_crashing_writer(uri, store_url, "publish")
    # the claim holds version 2 with a staged manifest; readers still see version 1
    (entry,) = [p for v, p in _entries(store_url, uri) if v == 2]
    assert final_name_of(entry.rsplit("/", 1)[1]) is not None
    assert lance_fw.dataset(uri).version == 1 and lance.dataset(uri).version == 1
    if repair_first:  # what a reader that consults the store does before listing versions
        handler = resolve_commit_handler(resolve_storage(uri, opts), uri)
        assert handler.repair_latest(uri) is True and handler.repair_latest(uri) is False
        assert lance.dataset(uri).version == 2
    # the next writer meets the claim, publishes it, and commits on top of it
    ds = lance_fw.write_dataset(_table(1, 0, 10), uri, mode="append", storage_options=opts)
    assert ds.version == 3
    assert [p.endswith(".manifest") for _, p in _entries(store_url, uri)] == [True, True, True]
    assert all(name.endswith(".manifest") for name in _version_files(uri))  # the staged file is gone
    rows = sorted(map(tuple, (r.values() for r in lance.dataset(uri).to_table().to_pylist())))
    assert rows == sorted([(0, i) for i in range(10)] + [(9, i) for i in range(100, 110)] + [(1, i) for i in range(10)])
    assert lance.dataset(uri, version=2).count_rows() == 20


def test_crash_after_publish_before_mark(uri, store_url):
    """The manifest is published (readers see it); the store entry still names the staged file.
    Later commits go on, and ``repair`` finishes the entry."""
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)
    _run_crashing_writer(uri, store_url, "mark")
    assert lance.dataset(uri).version == 2 and lance_fw.dataset(uri).count_rows() == 20
    storage = resolve_storage(uri, opts)
    handler = resolve_commit_handler(storage, uri)
    assert handler.repair(uri, 2) is True
    assert handler.repair(uri, 2) is False  # nothing left to do
    assert all(p.endswith(".manifest") for _, p in _entries(store_url, uri))
    assert all(name.endswith(".manifest") for name in _version_files(uri))
    assert lance_fw.write_dataset(_table(1, 0, 1), uri, mode="append", storage_options=opts).version == 3


def test_failure_after_claim_keeps_the_files_for_the_repair(uri, store_url, monkeypatch):
    """Publishing fails after the claim: the claim stands and the next writer will publish the
    staged manifest, so the error is flagged maybe-published and the data files stay."""
    from lance_fw.table.transaction import may_be_published

    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)

    def fail(self, final, data):
        raise StorageError(f"{final}: injected failure while publishing")

    with monkeypatch.context() as patch:
        patch.setattr(ExternalStoreCommitHandler, "_place", fail)
        with pytest.raises(StorageError, match="injected") as caught:
            lance_fw.write_dataset(_table(1, 0, 10), uri, mode="append", storage_options=opts)
    assert may_be_published(caught.value)
    assert lance_fw.write_dataset(_table(2, 0, 10), uri, mode="append", storage_options=opts).version == 3
    theirs = lance.dataset(uri)
    assert theirs.checkout_version(2).count_rows(filter="writer = 1") == 10
    assert theirs.count_rows() == lance_fw.dataset(uri).count_rows() == 30
    # the repaired version's transaction reads (it is framed into the manifest), as does the one
    # that conflicted with the claim and was rebased on the repaired version
    assert [t.read_version for t in theirs.get_transactions(3)] == [1, 1, 0]


def test_lost_staged_manifest_is_reported_not_retried(uri, store_url):
    """A claim whose staged file was deleted cannot be finished: the commit says so (it used to
    be reported as 'gave up after 100 conflicting concurrent commits')."""
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)
    _run_crashing_writer(uri, store_url, "publish")
    for name in _version_files(uri):
        if final_name_of(name):
            os.remove(os.path.join(uri, VERSIONS_DIR, name))
    with pytest.raises(CorruptFileError, match="staged manifest is gone"):
        lance_fw.write_dataset(_table(1, 0, 10), uri, mode="append", storage_options=opts)
    assert lance.dataset(uri).version == 1


def test_dropped_dataset_with_stale_store_is_reported(uri, store_url):
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)
    shutil.rmtree(uri)  # dropped behind the store's back
    with pytest.raises(StorageError, match=r"ManifestStore\.delete"):
        lance_fw.write_dataset(_table(1, 0, 10), uri, storage_options=opts)
    open_manifest_store(store_url).delete(store_key(uri))
    assert lance_fw.write_dataset(_table(1, 0, 10), uri, storage_options=opts).version == 1


# -- concurrency ------------------------------------------------------------------------------------

def _writer(uri: str, opts: dict, storage_class: tuple[str, str], writer: int, barrier, results) -> None:
    """Append APPENDS single-batch commits (deleting some of its own rows as it goes); report every
    commit that returned successfully as (version, kind, i).

    The storage (``storage_class``: module, class) is told it has no atomic put-if-absent, as on the
    object stores this protocol is for: the store alone must then keep two writers from publishing
    one version."""
    import importlib

    getattr(importlib.import_module(storage_class[0]), storage_class[1]).atomic_put_if_absent = False
    reported, error = [], None
    try:
        barrier.wait(timeout=300)
        for i in range(APPENDS):
            ds = lance_fw.write_dataset(_table(writer, i, i + 1), uri, mode="append", storage_options=opts)
            reported.append((ds.version, "append", i))
            if i % DELETE_EVERY == DELETE_EVERY - 1:
                ds = lance_fw.dataset(uri, storage_options=opts)
                ds.delete(f"writer = {writer} AND i = {i}")
                reported.append((ds.version, "delete", i))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent with what was committed
        error = repr(exc)
    results.put((writer, reported, error))


def _concurrent_writers(uri: str, opts: dict, storage_class: tuple[str, str]) -> None:
    lance_fw.write_dataset(_table(0, 0, 0), uri, storage_options=opts)
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(uri, opts, storage_class, w, barrier, results)) for w in range(1, WRITERS + 1)]
    for p in procs:
        p.start()
    reports = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [(w, error) for w, _, error in reports if error] == []
    commits = [c for _, reported, _ in reports for c in reported]
    versions = sorted(v for v, _, _ in commits)
    assert versions == list(range(2, 2 + len(commits)))  # each reported commit is its own version, no gaps
    assert lance_fw.dataset(uri, storage_options=opts).version == 1 + len(commits)
    deleted = {(w, i) for w in range(1, WRITERS + 1) for i in range(APPENDS) if i % DELETE_EVERY == DELETE_EVERY - 1}
    expect = sorted({(w, i) for w in range(1, WRITERS + 1) for i in range(APPENDS)} - deleted)
    for reader in (lance_fw.dataset(uri, storage_options=opts), lance.dataset(uri, storage_options=_pylance(opts))):
        got = sorted((r["writer"], r["i"]) for r in reader.to_table().to_pylist())
        assert got == expect  # every append present exactly once, every delete applied
    theirs = lance.dataset(uri, storage_options=_pylance(opts))
    for w, reported, _ in reports:  # every reported append is in its version, as pylance reads it
        for version, kind, i in reported:
            rows = theirs.checkout_version(version).to_table(filter=f"writer = {w} AND i = {i}").num_rows
            assert rows == (1 if kind == "append" else 0), (w, version, kind, i)
    transactions = theirs.get_transactions(theirs.version)  # newest first
    rebased = [t for n, t in enumerate(transactions) if t.read_version < theirs.version - n - 1]
    assert rebased  # the writers met at the barrier: some lost a race and committed on a newer version


def _pylance(opts: dict) -> dict:
    return {k: v for k, v in opts.items() if k != MANIFEST_STORE_OPTION}


@pytest.mark.slow
def test_concurrent_writers_through_sqlite_store(uri, store_url):
    _concurrent_writers(uri, _options(store_url), ("lance_fw_plugins.storage_local", "LocalStorage"))
    entries = _entries(store_url, uri)
    assert [v for v, _ in entries] == list(range(1, len(entries) + 1))
    assert [p for _, p in entries] == [f"{VERSIONS_DIR}/{os.path.basename(e.path)}"
                                       for e in list_versions(resolve_storage(uri), uri)]


@pytest.mark.slow
def test_concurrent_writers_through_sqlite_store_on_s3(s3_server, store_url):
    uri = s3_server.new_bucket() + "/ds"
    opts = {**s3_server.storage_options, **_options(store_url)}
    _concurrent_writers(uri, opts, ("lance_fw_plugins.storage_s3", "S3Storage"))
    entries = _entries(store_url, uri)
    storage = resolve_storage(uri, s3_server.storage_options)
    assert [p for _, p in entries] == [f"{VERSIONS_DIR}/{e.path.rsplit('/', 1)[1]}" for e in list_versions(storage, uri)]
    assert not [n for n in storage.list_dir(f"{uri}/{VERSIONS_DIR}") if final_name_of(n)]  # no staged file left


def test_round_trip_on_fsspec_memory(store_url):
    """Over an fsspec store with no put-if-absent at all, commits go through the store."""
    uri = f"memory://external-store-{os.getpid()}/ds"
    opts = _options(store_url)
    lance_fw.write_dataset(_table(0, 0, 10), uri, storage_options=opts)
    ds = lance_fw.write_dataset(_table(1, 0, 10), uri, mode="append", storage_options=opts)
    ds.delete("i < 3")
    assert ds.version == 3 and ds.count_rows() == 14
    assert [v for v, _ in _entries(store_url, uri)] == [1, 2, 3]
    assert all(p.endswith(".manifest") for _, p in _entries(store_url, uri))


class TestExternalStoreCommitsConform(CommitHandlerConformance):
    """The plugin-author conformance kit, run against the external store handler on local storage."""

    @pytest.fixture
    def dataset_uri(self, tmp_path) -> str:
        self.storage_options = _options(f"sqlite://{tmp_path / 'kit-store.db'}")
        return str(tmp_path / "ds")
