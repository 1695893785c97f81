"""pylance's Google Cloud Storage ``storage_options`` and ``GOOGLE_*`` environment, translated into
gcsfs arguments.

The keys are object_store's ``GoogleConfigKey`` spellings (canonical key first, then aliases), plus
lance's own ``google_storage_token``; each is also read from its ``GOOGLE_*`` variable when not
given (``SERVICE_ACCOUNT`` too, as object_store does). Keys lance_fw cannot honour raise
``UnsupportedFeatureError``; keys of other stores raise ``InvalidArgumentError``.

Credentials, in object_store's order: a service account (file or serialized key; both is an
error), else a static OAuth token, else an application-credentials file, else Google's default
chain (gcloud's well-known file, then the metadata server) -- which fails when nothing is found
instead of falling back to anonymous requests as gcsfs would. ``google_skip_signature`` sends
anonymous requests. The endpoint is always passed to gcsfs, so ``STORAGE_EMULATOR_HOST`` (which
gcsfs reads and pylance does not) changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw_plugins.fsspec_cloud import (
    Setting,
    StoreOptions,
    client_settings,
    prefixed_setting,
    store_setting,
)

#: The key prefix object_store strips, and reads ``GOOGLE_*`` variables for.
PREFIX = "google_"
#: Where requests go when no base URL is configured (object_store's and gcsfs's default host).
DEFAULT_BASE_URL = "https://storage.googleapis.com"
#: gcsfs's ``token`` values naming an authentication method rather than a credential.
TOKEN_DEFAULT_CHAIN = "google_default"
TOKEN_ANONYMOUS = "anon"
#: Credential-file ``type``s object_store understands (service accounts and gcloud user logins).
SERVICE_ACCOUNT_TYPE = "service_account"
AUTHORIZED_USER_TYPE = "authorized_user"
#: Fields object_store reads from a service-account file besides Google's own: an emulator's base
#: URL, and "send no OAuth token" (the fake-gcs-server recipe pylance users follow).
FILE_BASE_URL_FIELD = "gcs_base_url"
FILE_DISABLE_OAUTH_FIELD = "disable_oauth"


_setting = partial(store_setting, PREFIX)
_short = partial(prefixed_setting, PREFIX)


SERVICE_ACCOUNT = _setting(
    ("google_service_account", "service_account", "google_service_account_path", "service_account_path"),
    "path to a GCS service-account JSON file",
    ("SERVICE_ACCOUNT",),
)
SERVICE_ACCOUNT_KEY = _short("service_account_key", "a GCS service-account key, serialized JSON")
BUCKET = _setting(
    ("google_bucket", "google_bucket_name", "bucket", "bucket_name"),
    "GCS bucket (must match the gs:// URI, which names it)",
)
BASE_URL = _short("base_url", f"GCS endpoint (default {DEFAULT_BASE_URL})")
APPLICATION_CREDENTIALS = _short(
    "application_credentials",
    "path to a GCS application-default-credentials JSON file",
)
BEARER_TOKEN = _short("bearer_token", "static GCS OAuth bearer token")
#: lance's own spelling of a static token (read from the options only).
STORAGE_TOKEN = Setting(("google_storage_token",), (), "static GCS OAuth token (lance's key)")
SKIP_SIGNATURE = _short("skip_signature", "send anonymous GCS requests")
#: object_store would allow http on GCS by default, but pylance (lance's client options) refuses
#: an http:// endpoint unless allow_http is set: lance_fw does what pylance does.
ALLOW_HTTP, CONNECT_TIMEOUT, TIMEOUT = client_settings(
    PREFIX, "allow an http:// endpoint (refused otherwise)", "per-request timeout, e.g. '30s'"
)

SETTINGS = (
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_KEY,
    BUCKET,
    BASE_URL,
    APPLICATION_CREDENTIALS,
    BEARER_TOKEN,
    STORAGE_TOKEN,
    SKIP_SIGNATURE,
    ALLOW_HTTP,
    CONNECT_TIMEOUT,
    TIMEOUT,
)

#: object_store keys for GCS that lance_fw does not implement, with why.
UNSUPPORTED = {
    "google_allow_invalid_certificates": "TLS certificates are always checked on GCS",
    "allow_invalid_certificates": "TLS certificates are always checked on GCS",
    "google_proxy_url": "proxies are not configurable for GCS",
    "proxy_url": "proxies are not configurable for GCS",
}

#: Every key this module reads, for the ``lance_storage_options`` hook (key -> description).
OPTION_DESCRIPTIONS: dict[str, str] = {
    **{key: s.description for s in SETTINGS for key in s.keys},
    **{key: f"pylance option lance_fw does not support on GCS ({why})" for key, why in UNSUPPORTED.items()},
}


def _credential_file(path: str, key: str) -> dict[str, Any]:
    """The JSON object in a credentials file; a missing file is an error (gcsfs would take the
    path for a raw token and fail later, far from the cause)."""
    try:
        with open(path, encoding="utf-8") as f:
            return _credential_json(f.read(), f"{key}={path!r}")
    except OSError as exc:
        raise InvalidArgumentError(f"storage option {key}={path!r}: cannot read the file: {exc}") from exc


def _credential_json(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"{what}: not a JSON credential: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{what}: not a JSON object")
    return value


def _check_type(info: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    kind = info.get("type")
    if kind not in allowed:
        raise UnsupportedFeatureError(
            f"{what}: credential type {kind!r} is not supported (object_store reads {list(allowed)})"
        )


def _static_token(token: str) -> Any:
    """An OAuth credential that is never refreshed, as object_store treats a bearer token."""
    from google.oauth2.credentials import Credentials

    return Credentials(token=str(token))


def gcsfs_kwargs(
    options: Mapping[str, Any], bucket: str, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Keyword arguments for ``gcsfs.GCSFileSystem`` meaning what ``options`` (and the ``GOOGLE_*``
    environment) mean to pylance for ``gs://bucket``. Listing caches are always off.

    Raises:
        UnsupportedFeatureError: a key lance_fw cannot honour, or a credential type it cannot use.
        InvalidArgumentError: a bad value, a key of another store, a bucket other than the URI's.
    """
    read = StoreOptions(options, environ, "gs://", OPTION_DESCRIPTIONS, UNSUPPORTED, PREFIX)
    get = read.get
    read.same_as_uri(BUCKET, bucket)
    kwargs: dict[str, Any] = {"use_listings_cache": False}
    base_url = get(BASE_URL)

    path, key = get(SERVICE_ACCOUNT), get(SERVICE_ACCOUNT_KEY)
    if path is not None and key is not None:
        raise InvalidArgumentError(
            "give a GCS service account as a file (google_service_account) or as a key "
            "(google_service_account_key), not both"
        )
    account = None
    if path is not None:
        account = _credential_file(str(path), SERVICE_ACCOUNT.keys[0])
    elif key is not None:
        account = _credential_json(str(key), SERVICE_ACCOUNT_KEY.keys[0])
    bearer, lance_token = get(BEARER_TOKEN), get(STORAGE_TOKEN)
    if bearer is not None and lance_token is not None and str(bearer) != str(lance_token):
        raise InvalidArgumentError("google_bearer_token and google_storage_token differ; give one")
    static = bearer if bearer is not None else lance_token
    adc = get(APPLICATION_CREDENTIALS)
    if account is not None:
        base_url = base_url or account.get(FILE_BASE_URL_FIELD)

    # object_store's order: an explicit token, then a service account (whose file may say "no
    # OAuth"), then application credentials, then the default chain.
    token: Any
    if read.flag(SKIP_SIGNATURE):
        token = TOKEN_ANONYMOUS
    elif static is not None:
        token = _static_token(static)
    elif account is not None:
        if parse_bool_field(account.get(FILE_DISABLE_OAUTH_FIELD)):
            token = TOKEN_ANONYMOUS
        else:
            _check_type(account, (SERVICE_ACCOUNT_TYPE,), "GCS service account")
            token = account
    elif adc is not None:
        info = _credential_file(str(adc), APPLICATION_CREDENTIALS.keys[0])
        _check_type(info, (SERVICE_ACCOUNT_TYPE, AUTHORIZED_USER_TYPE), "GCS application credentials")
        token = info
    else:
        token = TOKEN_DEFAULT_CHAIN
    kwargs["token"] = token

    endpoint = str(base_url or DEFAULT_BASE_URL).rstrip("/")
    if not endpoint.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"storage option google_base_url={endpoint!r} must be an http(s):// URL")
    read.refuse_plain_http(endpoint, endpoint.startswith("http://"), ALLOW_HTTP, "GCS")
    kwargs["endpoint_url"] = endpoint

    total, connect = read.seconds(TIMEOUT), read.seconds(CONNECT_TIMEOUT)
    if total is not None or connect is not None:
        import aiohttp

        kwargs["requests_timeout"] = aiohttp.ClientTimeout(total=total, sock_connect=connect)
    return kwargs


def parse_bool_field(value: Any) -> bool:
    """A boolean field of a credentials file (JSON true/false, or a string as object_store takes)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"true", "1"}
