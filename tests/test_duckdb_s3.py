"""DuckDB's ``lance_scan('s3://…')`` configured as DuckDB users configure S3: the ``AWS_*`` environment
as it is when the statement runs, and DuckDB S3 secrets (``CREATE SECRET (TYPE S3, …)``), a matching
secret winning over the environment as in DuckDB's httpfs. Real SeaweedFS (``s3_server``), pylance
the oracle.

DuckDB's S3 secret type lives in its httpfs extension, which DuckDB 2.0 cannot download here (no
network) and no package ships for it; so the secret plumbing is tested in parts, each against real
DuckDB where it can be: the lookup (``which_secret`` scope choice and the unredacted secret string)
on DuckDB's built-in HTTP secrets, the S3 mapping on the values DuckDB stores, and the end to end
read over SeaweedFS with DuckDB's real scope choice feeding that mapping. The test that creates real
``TYPE S3`` secrets runs wherever httpfs loads.
"""

from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb
from conftest import assert_tables_equal
from lance_fw.duckdb import s3_secrets
from lance_fw.errors import InvalidArgumentError, LanceError, StorageError, UnsupportedFeatureError

#: More than one 4096-value chunk, two fragments.
ROWS = 5000
ROWS_PER_FILE = 3000
#: Environment variables that could lend credentials or an endpoint behind a test's back.
AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ALLOW_HTTP", "AWS_PROFILE",
                 "AWS_VIRTUAL_HOSTED_STYLE_REQUEST")


def table(start: int = 0, n: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": pa.array([f"r{i % 311}" for i in range(start, start + n)])})


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No AWS configuration from the environment or the user's files."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def written(s3_server, rows: pa.Table | None = None) -> str:
    uri = s3_server.new_bucket() + "/ds"
    lance_fw.write_dataset(table() if rows is None else rows, uri, storage_options=s3_server.storage_options,
                           max_rows_per_file=ROWS_PER_FILE)
    return uri


def scan(con, uri: str) -> pa.Table:
    return con.sql(f"SELECT * FROM lance_scan('{uri}') ORDER BY id").arrow().read_all()


# --- the environment, read when each statement runs -------------------------------------------------

def test_environment_set_after_connect_is_used(s3_server, clean_env):
    uri = written(s3_server)
    con = fw_duckdb.connect()
    with pytest.raises(StorageError):  # no credentials yet
        scan(con, uri)
    for name, value in s3_server.env.items():
        clean_env.setenv(name, value)
    expected = lance.dataset(uri, storage_options=s3_server.storage_options).to_table()
    assert_tables_equal(expected, scan(con, uri))


def test_environment_changed_between_statements_is_used(s3_server, clean_env):
    uri = written(s3_server)
    for name, value in s3_server.env.items():
        clean_env.setenv(name, value)
    con = fw_duckdb.connect()
    assert con.execute(f"SELECT count(*) FROM lance_scan('{uri}')").fetchall() == [(ROWS,)]
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(StorageError, match=uri.removeprefix("s3://")):
        con.execute(f"SELECT count(*) FROM lance_scan('{uri}')").fetchall()


def test_bad_credentials_are_a_typed_error_naming_the_path(s3_server, clean_env):
    uri = written(s3_server)
    for name, value in {**s3_server.env, "AWS_SECRET_ACCESS_KEY": "wrong"}.items():
        clean_env.setenv(name, value)
    con = fw_duckdb.connect()
    with pytest.raises(StorageError, match=uri.removeprefix("s3://")) as info:
        con.execute(f"SELECT * FROM lance_scan('{uri}')").fetchall()
    assert isinstance(info.value, LanceError)


# --- reading a secret through DuckDB (built-in HTTP secrets: same manager, same secret string) ----------

def test_lookup_takes_duckdb_s_choice_of_scope_and_its_unredacted_values():
    con = fw_duckdb.connect().con
    con.execute("CREATE SECRET wide (TYPE HTTP, HTTP_PROXY 'wide:1', SCOPE 's3://bkt')")
    con.execute("CREATE SECRET narrow (TYPE HTTP, BEARER_TOKEN 'tok;en=x;y', HTTP_PROXY 'p=q:2', "
                "SCOPE ['s3://bkt/deep', 's3://other;odd'])")
    con.execute("CREATE SECRET everywhere (TYPE HTTP, HTTP_PROXY 'any')")
    assert s3_secrets.matching_secret(con, "s3://bkt/deep/ds", "http") == (
        "narrow", {"bearer_token": "tok;en=x;y", "http_proxy": "p=q:2"})
    assert s3_secrets.matching_secret(con, "s3://other;odd/ds", "http")[0] == "narrow"
    assert s3_secrets.matching_secret(con, "s3://bkt/ds", "http") == ("wide", {"http_proxy": "wide:1"})
    assert s3_secrets.matching_secret(con, "s3://zzz/ds", "http") == ("everywhere", {"http_proxy": "any"})
    assert s3_secrets.matching_secret(con, "s3://bkt/ds", "s3") is None  # no S3 secret: the environment


def test_hidden_secret_values_raise_naming_the_secret_and_path():
    con = duckdb.connect()  # not lance_fw's connect: allow_unredacted_secrets is off
    con.execute("CREATE SECRET hidden (TYPE HTTP, BEARER_TOKEN 't', SCOPE 's3://bkt')")
    with pytest.raises(InvalidArgumentError, match="hidden.*s3://bkt/ds.*allow_unredacted_secrets"):
        s3_secrets.matching_secret(con, "s3://bkt/ds", "http")


def test_no_secret_lookup_for_local_paths(tmp_path):
    con = duckdb.connect()
    assert s3_secrets.storage_options_for(con, str(tmp_path / "ds")) is None
    assert s3_secrets.storage_options_for(con, "memory://x") is None


def test_connect_keeps_a_user_s_explicit_redaction_setting():
    con = fw_duckdb.connect(config={"allow_unredacted_secrets": False})
    assert con.execute("SELECT current_setting('allow_unredacted_secrets')").fetchall() == [(False,)]
    assert fw_duckdb.connect().execute("SELECT current_setting('allow_unredacted_secrets')").fetchall() == [(True,)]


# --- DuckDB S3 secret values -> pylance storage options -------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    ({"key_id": "AK", "secret": "SK", "region": "eu-west-1", "endpoint": "127.0.0.1:8333", "use_ssl": "false",
      "url_style": "path"},
     {"aws_access_key_id": "AK", "aws_secret_access_key": "SK", "aws_region": "eu-west-1",
      "aws_endpoint": "http://127.0.0.1:8333", "allow_http": "true", "aws_virtual_hosted_style_request": "false"}),
    ({"key_id": "AK", "secret": "SK", "session_token": "T", "endpoint": "minio.example:9000"},
     {"aws_access_key_id": "AK", "aws_secret_access_key": "SK", "aws_session_token": "T",
      "aws_endpoint": "https://minio.example:9000"}),
    ({"key_id": "AK", "secret": "SK", "url_style": "vhost", "endpoint": ""},
     {"aws_access_key_id": "AK", "aws_secret_access_key": "SK", "aws_virtual_hosted_style_request": "true"}),
    ({"use_ssl": "false"}, {"aws_endpoint": "http://s3.amazonaws.com", "allow_http": "true"}),
    ({"endpoint": "http://10.0.0.1:9000", "requester_pays": "true", "refresh": "auto"},
     {"aws_endpoint": "http://10.0.0.1:9000", "allow_http": "true", "aws_request_payer": "true"}),
])
def test_s3_secret_values_map_to_pylance_options(values, expected):
    assert s3_secrets.s3_storage_options("s", values) == expected


@pytest.mark.parametrize("values, error, match", [
    ({"kms_key_id": "k"}, UnsupportedFeatureError, "'s'.*KMS_KEY_ID"),
    ({"use_ssl": "maybe", "endpoint": "h"}, InvalidArgumentError, "USE_SSL"),
    ({"url_style": "sideways"}, InvalidArgumentError, "URL_STYLE"),
])
def test_s3_secret_values_lance_fw_cannot_honour_raise(values, error, match):
    with pytest.raises(error, match=match):
        s3_secrets.s3_storage_options("s", values)


# --- end to end over SeaweedFS: DuckDB picks the secret, lance_fw reads with it -----------------------

@pytest.fixture
def secrets_by_name(monkeypatch):
    """S3 secret values, chosen by DuckDB's real ``which_secret`` scope matching over HTTP secrets of the
    same names and scopes (DuckDB cannot create ``TYPE S3`` secrets without httpfs)."""
    values: dict[str, dict[str, str]] = {}
    real = s3_secrets.matching_secret

    def matching(con, uri, secret_type):
        assert secret_type == s3_secrets.S3_SECRET_TYPE
        found = real(con, uri, "http")
        return None if found is None else (found[0], values[found[0]])

    monkeypatch.setattr(s3_secrets, "matching_secret", matching)
    return values


def server_secret(s3_server, **overrides) -> dict[str, str]:
    """The values ``CREATE SECRET (TYPE S3, KEY_ID…, SECRET…, ENDPOINT 'host:port', URL_STYLE 'path',
    USE_SSL false, REGION…)`` stores for the test server."""
    options = s3_server.storage_options
    return {"key_id": options["aws_access_key_id"], "secret": options["aws_secret_access_key"],
            "endpoint": s3_server.endpoint.removeprefix("http://"), "url_style": "path", "use_ssl": "false",
            "region": options["aws_region"], **overrides}


def test_secret_alone_configures_lance_scan(s3_server, clean_env, secrets_by_name):
    uri = written(s3_server)
    con = fw_duckdb.connect()
    con.execute("CREATE SECRET srv (TYPE HTTP, HTTP_PROXY 'unused')")
    secrets_by_name["srv"] = server_secret(s3_server)
    expected = lance.dataset(uri, storage_options=s3_server.storage_options).to_table()
    assert_tables_equal(expected, scan(con, uri))


def test_matching_secret_wins_over_the_environment(s3_server, clean_env, secrets_by_name):
    uri = written(s3_server)
    for name, value in {**s3_server.env, "AWS_SECRET_ACCESS_KEY": "wrong",
                        "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}.items():  # nothing listens on port 9
        clean_env.setenv(name, value)
    con = fw_duckdb.connect()
    con.execute("CREATE SECRET srv (TYPE HTTP, HTTP_PROXY 'unused')")
    secrets_by_name["srv"] = server_secret(s3_server)
    assert con.execute(f"SELECT count(*), sum(id) FROM lance_scan('{uri}')").fetchall() == [(ROWS, sum(range(ROWS)))]


def test_scoped_secrets_apply_to_their_bucket_only(s3_server, clean_env, secrets_by_name):
    good, other = written(s3_server, table(0)), written(s3_server, table(10_000))
    good_bucket = good.rsplit("/", 1)[0]
    con = fw_duckdb.connect()
    con.execute(f"CREATE SECRET scoped (TYPE HTTP, HTTP_PROXY 'unused', SCOPE '{good_bucket}')")
    con.execute("CREATE SECRET fallback (TYPE HTTP, HTTP_PROXY 'unused', SCOPE 's3://')")
    secrets_by_name["scoped"] = server_secret(s3_server)
    secrets_by_name["fallback"] = server_secret(s3_server, secret="wrong")
    assert_tables_equal(table(0), scan(con, good))
    with pytest.raises(StorageError, match=other.removeprefix("s3://")):
        scan(con, other)
    # one statement, two datasets, two secrets: each dataset opened with its own
    secrets_by_name["fallback"] = server_secret(s3_server)
    query = f"SELECT (SELECT count(*) FROM lance_scan('{good}')), (SELECT min(id) FROM lance_scan('{other}'))"
    assert con.execute(query).fetchall() == [(ROWS, 10_000)]


def test_secret_with_bad_credentials_is_a_typed_error_naming_the_path(s3_server, clean_env, secrets_by_name):
    uri = written(s3_server)
    con = fw_duckdb.connect()
    con.execute("CREATE SECRET srv (TYPE HTTP, HTTP_PROXY 'unused')")
    secrets_by_name["srv"] = server_secret(s3_server, key_id="nobody")
    with pytest.raises(StorageError, match=uri.removeprefix("s3://")):
        con.execute(f"SELECT * FROM lance_scan('{uri}')").fetchall()


def _httpfs_loads() -> bool:
    try:
        duckdb.connect(config={"autoinstall_known_extensions": False}).execute("LOAD httpfs")
        return True
    except duckdb.Error:
        return False


@pytest.mark.skipif(not _httpfs_loads(), reason="DuckDB's httpfs extension (the S3 secret type) is not "
                                                "installed for this DuckDB; the parts above cover the plumbing")
def test_real_duckdb_s3_secret(s3_server, clean_env):
    uri = written(s3_server)
    con = fw_duckdb.connect()
    con.execute("LOAD httpfs")
    values = server_secret(s3_server)
    bucket = uri.rsplit("/", 1)[0]
    con.execute(f"CREATE SECRET srv (TYPE S3, KEY_ID '{values['key_id']}', SECRET '{values['secret']}', "
                f"ENDPOINT '{values['endpoint']}', URL_STYLE 'path', USE_SSL false, REGION '{values['region']}', "
                f"SCOPE '{bucket}')")
    assert_tables_equal(table(), scan(con, uri))
