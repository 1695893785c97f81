"""The conformance kit itself: it fails plugins that break their contract, naming what broke.

Each test writes a small third-party test module with a deliberately broken plugin (an encoding
that forgets nulls, a storage whose outputs and put-if-absent are not atomic, a commit handler that
overwrites) and runs pytest on it in a fresh interpreter (pytester); the kit's tests for the broken
behaviour must fail and the others pass. A kit that passes everything would pass these plugins too.
"""

from __future__ import annotations

from xml.etree import ElementTree

pytest_plugins = ["pytester"]

BROKEN_ENCODING = '''
import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw.file.encoding import EncodedPage
from lance_fw.hookspecs import hookimpl
from lance_fw.testing import EncodingConformance

URL = "/kit_selftest.Raw"
HINT = "lance-encoding:kit-selftest-raw"


class RawEncoder:
    """Stores the int64 values, and forgets which ones are null: the bug the kit must catch."""
    pylance_readable = False

    def encode(self, array):
        values = array.fill_null(0).to_numpy(zero_copy_only=False).astype("<i8")
        return EncodedPage([values.tobytes()], any_pb2.Any(type_url=URL), len(array))


def decode(encoding, page):
    return pa.array(np.frombuffer(page.buffers[0], dtype="<i8", count=page.num_rows), pa.int64())


class Plugin:
    @hookimpl
    def lance_select_encoder(self, column, options):
        if column.role == "leaf" and column.metadata.get(HINT) == "true" and column.arrow_type == pa.int64():
            return RawEncoder()
        return None

    @hookimpl
    def lance_page_decoders(self):
        return {URL: decode}


class TestRaw(EncodingConformance):
    plugin = Plugin()
    field_metadata = {HINT: "true"}
    arrow_types = (pa.int64(),)
    file_versions = ("2.0",)
    type_urls = {URL}
    pylance_readable = False
    write_options = {"allow_plugin_encodings": True}
'''

BROKEN_STORAGE = '''
import os
import threading
import time

import pyarrow as pa
import pytest

from lance_fw.errors import CommitConflictError
from lance_fw.hookspecs import hookimpl
from lance_fw.table.commit import CommitHandler
from lance_fw.testing import CommitHandlerConformance, StorageConformance
from lance_fw_plugins.storage_local import LocalStorage

SCHEME = "kitbroken://"


def local(path):
    return path[len(SCHEME):] if path.startswith(SCHEME) else path


class NaiveStorage(LocalStorage):
    """Plain open(): a reader sees half-written files; put_if_absent is check-then-write."""
    scheme = "kitbroken"
    atomic_put_if_absent = True  # claimed, not true

    def open_reader(self, path):
        return super().open_reader(local(path))

    def open_output(self, path):
        os.makedirs(os.path.dirname(local(path)), exist_ok=True)
        return open(local(path), "wb")

    def list_dir(self, path):
        return super().list_dir(local(path))

    def exists(self, path):
        return super().exists(local(path))

    def delete(self, path):
        super().delete(local(path))

    def mtime(self, path):
        return super().mtime(local(path))

    def put_if_absent(self, path, data):
        if self.exists(path):
            raise CommitConflictError(f"{path} exists")
        time.sleep(0.2)  # every racer passes the check before anyone writes
        self.write_bytes(path, data)


class OverwritingHandler(CommitHandler):
    """Publishes the manifest whole (atomic local write), but even when the version exists:
    concurrent commits of one version all "succeed" and all but the last are lost."""

    def commit(self, path, data):
        time.sleep(0.2)  # every writer of the version gets here before anyone publishes
        LocalStorage().write_bytes(local(path), data)


class Plugin:
    @hookimpl(tryfirst=True)
    def lance_storage(self, uri, options):
        return NaiveStorage() if uri.startswith(SCHEME) else None

    @hookimpl(tryfirst=True)
    def lance_commit_handler(self, storage, uri, options):
        return OverwritingHandler(storage) if isinstance(storage, NaiveStorage) else None


PLUGIN = Plugin()


class TestNaiveStorage(StorageConformance):
    plugin = PLUGIN
    multiprocess = False  # registered at run time: spawned processes would not have it

    @pytest.fixture
    def root(self, tmp_path):
        return f"{SCHEME}{tmp_path}/storage"


class TestOverwritingCommits(CommitHandlerConformance):
    plugin = PLUGIN
    multiprocess = False
    threads = 4
    thread_appends = 2

    @pytest.fixture
    def dataset_uri(self, tmp_path):
        return f"{SCHEME}{tmp_path}/ds"
'''


def _run(pytester, source: str) -> tuple[dict[str, str], str]:
    """Run a test module in a fresh interpreter (plugins registered there cannot leak into this
    one): (test name without parameters -> "passed" / "skipped" / "failed", the failures' text)."""
    pytester.makepyfile(test_plugin_under_test=source)
    report = pytester.path / "report.xml"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={report}")
    outcomes: dict[str, set[str]] = {}
    failures = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "failed", "skipped": "skipped"}[problems[0].tag] if problems \
            else "passed"
        outcomes.setdefault(case.get("name").split("[")[0], set()).add(outcome)
        failures += [f"{p.get('message')}\n{p.text}" for p in problems if p.tag != "skipped"]
    return {name: "/".join(sorted(o)) for name, o in outcomes.items()}, "\n".join(failures)


def test_kit_fails_an_encoding_that_loses_nulls(pytester):
    outcomes, failures = _run(pytester, BROKEN_ENCODING)
    for name in ("test_full_scan", "test_slices_across_pages_and_fragments", "test_take", "test_filtered_scans",
                 "test_duckdb_lance_scan"):
        assert outcomes.get(name) == "failed", (name, outcomes)
    assert outcomes["test_pages_use_the_encoding"] == "passed"  # the plugin did take the column
    assert outcomes["test_pylance_reads_it"] == "skipped"
    assert "column 'v' differs first at row 0: expected None, got 0" in failures


def test_kit_fails_a_storage_and_commit_handler_that_are_not_atomic(pytester):
    outcomes, failures = _run(pytester, BROKEN_STORAGE)
    for name in ("test_output_appears_only_when_closed", "test_replacing_output_keeps_the_old_file_until_closed",
                 "test_put_if_absent_race_between_threads",
                 "test_appends_from_threads"):
        assert outcomes.get(name) == "failed", (name, outcomes)
    assert outcomes["test_aborted_output_publishes_nothing"] == "skipped"  # a plain file has no abort()
    for name in ("test_write_then_read", "test_list_dir", "test_range_reads", "test_delete", "test_put_if_absent",
                 "test_read_past_the_end_is_corrupt_file_error"):
        assert outcomes.get(name) == "passed", (name, outcomes)
    assert "a half-written output is visible under its final name" in failures
    assert "exactly one put_if_absent must win" in failures
    assert "acknowledged versions are not" in failures  # several writers were told "version 2"
