"""Readers of a dataset committed through an external manifest store finish a claim left half done.

A writer that dies between claiming a version in the store and publishing its manifest leaves the
manifest staged: listing ``_versions/`` shows the version before. A reader given the same
``manifest_store`` option consults the store (through the commit handler's generic ``repair``), so
it opens the newest claimed version, as pylance's store-backed readers resolve the latest version
through the store. pylance (which lists the published manifests) then sees it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.table.manifest import VERSIONS_DIR
from lance_fw.table.manifest_store import MANIFEST_STORE_OPTION

#: Exit status of the writer made to die between its claim and publishing its manifest.
CRASH_EXIT = 23
#: A cold interpreter importing pyarrow (2-core CI machines).
SUBPROCESS_TIMEOUT_S = 300
#: Rows per write: more than one 4096-value chunk.
ROWS = 5000

#: Appends through the store and dies right after claiming version ``die_at``: its manifest is staged,
#: never published (an earlier claim it meets is still finished, as any writer does).
_CRASHING_WRITER = """
import os, sys
import pyarrow as pa
import lance_fw
from lance_fw_plugins.commit_external_store import ExternalStoreCommitHandler

uri, store, start, n, code, die_at = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
publish = ExternalStoreCommitHandler._publish

def publish_or_die(self, base, key, version, *args):
    if version == die_at:
        os._exit(code)
    return publish(self, base, key, version, *args)

ExternalStoreCommitHandler._publish = publish_or_die
lance_fw.write_dataset(pa.table({"id": pa.array(range(start, start + n), pa.int64())}), uri, mode="append",
                       storage_options={"manifest_store": store})
os._exit(0)
"""


def table(start: int, n: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture
def options(tmp_path) -> dict:
    return {MANIFEST_STORE_OPTION: f"sqlite://{tmp_path / 'store' / 'manifests.db'}"}


def crash_after_claim(uri: str, options: dict, start: int, die_at: int, env: dict | None = None) -> None:
    """Another process appends ``ROWS`` rows from ``start`` and dies once it has claimed ``die_at``."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_CRASHING_WRITER), uri,
                           options[MANIFEST_STORE_OPTION], str(start), str(ROWS), str(CRASH_EXIT), str(die_at)],
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S, env={**os.environ, **(env or {})})
    assert proc.returncode == CRASH_EXIT, proc.stderr


def staged_files(uri: str) -> list[str]:
    return [n for n in os.listdir(os.path.join(uri, VERSIONS_DIR)) if ".manifest-" in n]


def ids(ds) -> list[int]:
    return sorted(ds.to_table(columns=["id"]).column("id").to_pylist())


def test_fresh_reader_sees_the_claimed_version(uri, options):
    lance_fw.write_dataset(table(0), uri, storage_options=options)
    crash_after_claim(uri, options, ROWS, 2)
    assert staged_files(uri) and lance.dataset(uri).version == 1  # claimed, not published
    ds = lance_fw.dataset(uri, storage_options=options)
    assert ds.version == 2
    assert ids(ds) == list(range(2 * ROWS))
    assert not staged_files(uri)
    theirs = lance.dataset(uri)  # the repair published it for everybody
    assert theirs.version == 2 and ids(theirs) == ids(ds)


def test_latest_version_and_checkout_latest_of_an_open_dataset(uri, options):
    lance_fw.write_dataset(table(0), uri, storage_options=options)
    ds = lance_fw.dataset(uri, storage_options=options)
    crash_after_claim(uri, options, ROWS, 2)
    assert ds.latest_version == 2
    assert ds.version == 1
    ds.checkout_latest()
    assert ds.version == 2 and ds.count_rows() == 2 * ROWS


def test_checkout_latest_repairs(uri, options):
    lance_fw.write_dataset(table(0), uri, storage_options=options)
    ds = lance_fw.dataset(uri, storage_options=options)
    crash_after_claim(uri, options, ROWS, 2)
    ds.checkout_latest()
    assert ds.version == 2 and lance.dataset(uri).version == 2


def test_a_crashed_create_is_finished_by_a_reader(uri, options):
    """The very first version claimed and never published: no manifest is listed at all."""
    crash_after_claim(uri, options, 0, 1)
    assert lance_fw.dataset(uri, storage_options=options).count_rows() == ROWS
    assert lance.dataset(uri).version == 1


def test_chained_claims_are_all_finished(uri, options):
    """A writer that repaired version 2 on its way, then died after claiming 3: both appear."""
    lance_fw.write_dataset(table(0), uri, storage_options=options)
    crash_after_claim(uri, options, ROWS, 2)
    crash_after_claim(uri, options, 2 * ROWS, 3)  # its claim on 2 conflicts: it repairs 2, claims 3, dies
    assert lance.dataset(uri).version == 2
    ds = lance_fw.dataset(uri, storage_options=options)
    assert ds.version == 3 and ids(ds) == list(range(3 * ROWS))


def test_reader_without_the_store_sees_the_published_version(uri, options):
    lance_fw.write_dataset(table(0), uri, storage_options=options)
    crash_after_claim(uri, options, ROWS, 2)
    assert lance_fw.dataset(uri).version == 1  # it cannot know of the store: like pylance without it
    assert staged_files(uri)


def test_reader_over_s3_sees_the_claimed_version(s3_server, options):
    uri = s3_server.new_bucket() + "/ds"
    opts = {**s3_server.storage_options, **options}
    lance_fw.write_dataset(table(0), uri, storage_options=opts)
    crash_after_claim(uri, options, ROWS, 2, env=s3_server.env)
    assert lance.dataset(uri, storage_options=s3_server.storage_options).version == 1
    ds = lance_fw.dataset(uri, storage_options=opts)
    assert ds.version == 2 and ids(ds) == list(range(2 * ROWS))
    assert lance.dataset(uri, storage_options=s3_server.storage_options).version == 2


def test_a_repair_that_publishes_nothing_ends(uri, options, monkeypatch):
    """``repair`` may answer True for a claim it dropped (no manifest appears): the reader stops there
    instead of asking again forever (it hung test_commit_handlers' dropping handler at first)."""
    from lance_fw_plugins.commit_external_store import ExternalStoreCommitHandler

    lance_fw.write_dataset(table(0), uri, storage_options=options)
    asked: list[int] = []
    monkeypatch.setattr(ExternalStoreCommitHandler, "repair", lambda self, base, version: asked.append(version) or True)
    assert lance_fw.dataset(uri, storage_options=options).version == 1
    assert asked == [2]
