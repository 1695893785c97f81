"""The built-in plugins pass the conformance kit (lance_fw.testing) that third-party plugins run."""

from __future__ import annotations

import uuid

import pytest

from lance_fw.testing import (
    CommitHandlerConformance,
    EncodingConformance,
    StorageConformance,
)

V2_0_URL = "/lance.encodings.ArrayEncoding"
V2_1_URL = "/lance.encodings21.PageLayout"


class TestBuiltinEncodingsV2_0(EncodingConformance):
    """plugins/encodings_v2_0: takes every column of a 2.0 file, no hint needed."""

    file_versions = ("2.0",)
    type_urls = frozenset({V2_0_URL})


class TestBuiltinEncodingsV2_1(EncodingConformance):
    """plugins/encodings_v2_1: every column of 2.1 and 2.2 files."""

    file_versions = ("2.1", "2.2")
    type_urls = frozenset({V2_1_URL})


class TestLocalStorage(StorageConformance):
    """plugins/storage_local: plain paths (the default ``root``)."""


class TestLocalStorageFileUri(StorageConformance):
    """The same backend through ``file://`` URIs (the process race runs in TestLocalStorage)."""

    multiprocess = False

    @pytest.fixture
    def root(self, tmp_path) -> str:
        return f"file://{tmp_path}/storage"


class TestMemoryStorage(StorageConformance):
    """plugins/storage_fsspec on ``memory://``: one store per process, so the process race is
    skipped (``multiprocess = False``); everything else runs."""

    multiprocess = False

    @pytest.fixture
    def root(self) -> str:
        return f"memory://conformance/{uuid.uuid4().hex}"


class TestLocalCommits(CommitHandlerConformance):
    """Local datasets: the generic put-if-absent handler over LocalStorage (os.link)."""


class TestMemoryCommits(CommitHandlerConformance):
    """``memory://`` datasets: the in-process fsspec handler; process-local, so threads only."""

    multiprocess = False

    @pytest.fixture
    def dataset_uri(self) -> str:
        return f"memory://conformance/{uuid.uuid4().hex}/ds"


# --- S3 (plugins/storage_s3 + the generic put-if-absent commit handler) against a real SeaweedFS
# server (tests/s3_server.py, fixture s3_server; it fails rather than skips when it cannot start).

@pytest.mark.slow
class TestS3Storage(StorageConformance):
    """s3:// with a conditional-PUT put_if_absent: the thread and process races run."""

    @pytest.fixture
    def options(self, s3_server) -> dict:
        return s3_server.storage_options

    @pytest.fixture(scope="class")
    @classmethod
    def bucket(cls, s3_server) -> str:
        return s3_server.new_bucket()

    @pytest.fixture
    def root(self, bucket) -> str:
        return f"{bucket}/{uuid.uuid4().hex}"


@pytest.mark.slow
class TestS3Commits(CommitHandlerConformance):
    """Appends to s3:// datasets from 3 processes x 5; pylance reads the result with the same options."""

    @pytest.fixture
    def options(self, s3_server) -> dict:
        return s3_server.storage_options

    @pytest.fixture
    def dataset_uri(self, s3_server) -> str:
        return s3_server.new_bucket() + "/ds"

    def pylance_target(self, uri, options):
        return uri, dict(options)
