# ruff: noqa: F811 - test arguments named like the imported emulator fixtures
"""gs:// and az:// storages pass the conformance kits third-party plugins run (lance_fw.testing):
whole outputs, listing, coalesced range reads, readers keeping their snapshot, deletes, mtime, and
put-if-absent races from threads and processes; then appends to one dataset from processes and
threads. On fake-gcs-server and Azurite (tests/cloud_emulators.py); pylance reads the Azure result.
"""

from __future__ import annotations

import uuid

import pytest

# The emulator fixtures, imported so pytest finds them here (tests take them as arguments).
from cloud_emulators import azurite, gcs_server  # noqa: F401

from lance_fw.testing import CommitHandlerConformance, StorageConformance

pytest.importorskip("gcsfs")
pytest.importorskip("adlfs")


@pytest.mark.slow
class TestGcsStorageConformance(StorageConformance):
    """gs:// on fake-gcs-server: whole outputs, listing, ranges, deletes, mtime, and the thread and
    process put-if-absent races (ifGenerationMatch=0)."""

    @pytest.fixture
    def options(self, gcs_server) -> dict:
        return {"google_base_url": gcs_server, "google_skip_signature": "true", "allow_http": "true"}

    @pytest.fixture
    def root(self, gcs_server) -> str:
        return f"gs://bkt/{uuid.uuid4().hex}"


@pytest.mark.slow
class TestGcsCommits(CommitHandlerConformance):
    """Appends to a gs:// dataset from processes and threads (pylance cannot list fake-gcs-server)."""

    @pytest.fixture
    def options(self, gcs_server) -> dict:
        return {"google_base_url": gcs_server, "google_skip_signature": "true", "allow_http": "true"}

    @pytest.fixture
    def dataset_uri(self, gcs_server) -> str:
        return f"gs://bkt/{uuid.uuid4().hex}/ds"


@pytest.mark.slow
class TestAzureStorageConformance(StorageConformance):
    """az:// on Azurite, the races included (If-None-Match: *)."""

    @pytest.fixture
    def options(self, azurite) -> dict:
        return dict(azurite)

    @pytest.fixture
    def root(self, azurite) -> str:
        return f"az://cont/{uuid.uuid4().hex}"


@pytest.mark.slow
class TestAzureCommits(CommitHandlerConformance):
    """Appends to an az:// dataset from processes and threads; pylance reads the result."""

    @pytest.fixture
    def options(self, azurite) -> dict:
        return dict(azurite)

    @pytest.fixture
    def dataset_uri(self, azurite) -> str:
        return f"az://cont/{uuid.uuid4().hex}/ds"

    def pylance_target(self, uri, options):
        return uri, dict(options)
