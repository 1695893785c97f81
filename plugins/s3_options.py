"""pylance's S3 ``storage_options`` and ``AWS_*`` environment, translated into s3fs arguments.

pylance hands ``storage_options`` to the Rust object_store crate, whose key names (and aliases) users
copy from pylance's docs; s3fs/botocore call the same things differently. One table here names
every key: the settings lance_fw honours (with object_store's aliases and environment variables)
and the ones pylance knows but lance_fw cannot honour, which raise ``UnsupportedFeatureError``
instead of being ignored (an ignored encryption or credentials key would be silently wrong).

Precedence, as in object_store: a key in ``storage_options`` wins over the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

#: object_store's region when none is configured (botocore has no default of its own for S3).
DEFAULT_REGION = "us-east-1"
#: HTTP connections kept per filesystem: enough for one reader's parallel range GETs
#: (storage_s3.MAX_PARALLEL_RANGES) plus a writer; botocore's default of 10 would queue them.
MAX_POOL_CONNECTIONS = 48
_TRUE = frozenset({"true", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "0", "no", "n", "off"})
#: A humantime-style duration as object_store accepts it ("30s", "500ms", "2min", "1h").
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\s*$")
_UNIT_SECONDS = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
}


@dataclass(frozen=True)
class Setting:
    """One configurable thing: the option keys that name it (pylance's canonical key first, then
    object_store's aliases) and the environment variables read when no key is given."""

    keys: tuple[str, ...]
    env: tuple[str, ...]
    description: str


def _aws(name: str, description: str) -> Setting:
    """A setting object_store spells ``aws_<name>`` (canonical) or plain ``<name>``, read from
    ``AWS_<NAME>``: the rule most S3 keys follow."""
    return Setting(("aws_" + name, name), ("AWS_" + name.upper(),), description)


ACCESS_KEY_ID = _aws("access_key_id", "S3 access key id")
SECRET_ACCESS_KEY = _aws("secret_access_key", "S3 secret access key")
SESSION_TOKEN = Setting(
    ("aws_session_token", "aws_token", "session_token", "token"),
    ("AWS_SESSION_TOKEN", "AWS_TOKEN"),
    "S3 session token (temporary credentials)",
)
REGION = Setting(
    ("aws_region", "region", "aws_default_region", "default_region"),
    ("AWS_REGION", "AWS_DEFAULT_REGION"),
    f"S3 region (default {DEFAULT_REGION})",
)
ENDPOINT = Setting(
    ("aws_endpoint", "aws_endpoint_url", "endpoint", "endpoint_url"),
    ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    "S3-compatible endpoint URL (default: AWS)",
)
ALLOW_HTTP = Setting(
    ("allow_http", "aws_allow_http"),
    ("AWS_ALLOW_HTTP",),
    "allow an http:// endpoint (refused otherwise, as in pylance)",
)
VIRTUAL_HOSTED = _aws(
    "virtual_hosted_style_request", "bucket in the host name instead of the path (AWS endpoint only)"
)
SKIP_SIGNATURE = _aws("skip_signature", "send unsigned (anonymous) requests")
ALLOW_INVALID_CERTIFICATES = Setting(
    ("allow_invalid_certificates", "aws_allow_invalid_certificates"),
    ("AWS_ALLOW_INVALID_CERTIFICATES",),
    "skip TLS certificate checks",
)
REQUEST_PAYER = _aws("request_payer", "accept requester-pays charges")
CONNECT_TIMEOUT = Setting(("connect_timeout", "aws_connect_timeout"), (), "connect timeout, e.g. '5s'")
TIMEOUT = Setting(("timeout", "aws_timeout"), (), "per-request read timeout, e.g. '30s'")
PROXY_URL = Setting(("proxy_url", "aws_proxy_url"), (), "HTTP(S) proxy for every request")
#: Accepted and meaningless here: lance_fw never tags objects.
DISABLE_TAGGING = _aws("disable_tagging", "do not tag objects (lance_fw never does)")

SETTINGS = (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
    REGION,
    ENDPOINT,
    ALLOW_HTTP,
    VIRTUAL_HOSTED,
    SKIP_SIGNATURE,
    ALLOW_INVALID_CERTIFICATES,
    REQUEST_PAYER,
    CONNECT_TIMEOUT,
    TIMEOUT,
    PROXY_URL,
    DISABLE_TAGGING,
)

#: pylance (object_store) keys lance_fw does not implement, with why: declared so that they raise
#: ``UnsupportedFeatureError`` naming them rather than "unknown option".
UNSUPPORTED = {
    "aws_bucket": "the bucket comes from the s3:// URI",
    "aws_bucket_name": "the bucket comes from the s3:// URI",
    "aws_s3_express": "S3 Express One Zone is not supported",
    "aws_imdsv1_fallback": "instance-metadata credentials follow botocore's own chain",
    "aws_metadata_endpoint": "instance-metadata credentials follow botocore's own chain",
    "aws_unsigned_payload": "payloads are always signed",
    "aws_checksum_algorithm": "botocore chooses the upload checksum",
    "aws_container_credentials_relative_uri": "container credentials follow botocore's own chain",
    "aws_container_credentials_full_uri": "container credentials follow botocore's own chain",
    "aws_container_authorization_token_file": "container credentials follow botocore's own chain",
    "aws_web_identity_token_file": "web-identity credentials follow botocore's own chain (AWS_* env)",
    "aws_role_arn": "web-identity credentials follow botocore's own chain (AWS_* env)",
    "aws_role_session_name": "web-identity credentials follow botocore's own chain (AWS_* env)",
    "aws_endpoint_url_sts": "web-identity credentials follow botocore's own chain (AWS_* env)",
    "aws_copy_if_not_exists": "commits use conditional PUT, not copy-if-not-exists",
    "aws_conditional_put": "commits always use If-None-Match conditional PUT",
    "aws_server_side_encryption": "server-side encryption settings are not passed on",
    "aws_sse_kms_key_id": "server-side encryption settings are not passed on",
    "aws_sse_bucket_key_enabled": "server-side encryption settings are not passed on",
    "aws_sse_customer_key_base64": "server-side encryption settings are not passed on",
}

#: Every key this module reads, for the ``lance_storage_options`` hook (key -> description).
OPTION_DESCRIPTIONS: dict[str, str] = {
    **{key: s.description for s in SETTINGS for key in s.keys},
    **{key: f"pylance S3 option lance_fw does not support ({why})" for key, why in UNSUPPORTED.items()},
}


def lookup(options: Mapping[str, Any], setting: Setting, environ: Mapping[str, str]) -> Any:
    """The setting's value from ``options`` (any alias; two aliases disagreeing is an error),
    else from the first of its environment variables that is set, else None. Every store's option
    plugin reads its settings through this one function."""
    given = {k: options[k] for k in setting.keys if k in options and options[k] is not None}
    if len(set(map(str, given.values()))) > 1:
        raise InvalidArgumentError(
            f"storage_options {sorted(given)} name the same setting with different values; give one"
        )
    if given:
        return next(iter(given.values()))
    for name in setting.env:
        if environ.get(name):
            return environ[name]
    return None


def parse_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidArgumentError(f"storage option {key}={value!r} is not a boolean (use 'true' or 'false')")


def parse_duration(value: Any, key: str) -> float:
    """Seconds from a duration as pylance takes it ('30s', '500ms', '2min')."""
    match = _DURATION.match(str(value))
    if not match:
        raise InvalidArgumentError(f"storage option {key}={value!r} is not a duration (e.g. '30s', '500ms')")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def s3fs_kwargs(options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``s3fs.S3FileSystem`` meaning what ``options`` (and the ``AWS_*``
    environment) mean to pylance. Listing caches are always off (freshness: other processes commit).

    Raises:
        UnsupportedFeatureError: a pylance key lance_fw cannot honour is set.
        InvalidArgumentError: a value does not parse, or an http:// endpoint without allow_http.
    """
    environ = os.environ if environ is None else environ
    unsupported = sorted(k for k in options if k in UNSUPPORTED)
    if unsupported:
        raise UnsupportedFeatureError(
            f"storage_options {unsupported} are pylance S3 options lance_fw does "
            f"not support: {'; '.join(UNSUPPORTED[k] for k in unsupported)}"
        )
    from lance_fw_plugins.fsspec_cloud import refuse_foreign_keys  # it imports this module

    refuse_foreign_keys(options, "s3://", OPTION_DESCRIPTIONS)  # google_*/azure_* keys: not ignored

    def get(setting: Setting) -> Any:
        return lookup(options, setting, environ)

    def flag(setting: Setting) -> bool:
        value = get(setting)
        return False if value is None else parse_bool(value, setting.keys[0])

    config: dict[str, Any] = {}
    client: dict[str, Any] = {"region_name": str(get(REGION) or DEFAULT_REGION)}
    kwargs: dict[str, Any] = {"use_listings_cache": False, "client_kwargs": client, "config_kwargs": config}
    for setting, name in ((ACCESS_KEY_ID, "key"), (SECRET_ACCESS_KEY, "secret"), (SESSION_TOKEN, "token")):
        value = get(setting)
        if value is not None:
            kwargs[name] = str(value)

    allow_http = flag(ALLOW_HTTP)
    virtual_hosted = flag(VIRTUAL_HOSTED)
    endpoint = get(ENDPOINT)
    if endpoint is not None:
        endpoint = str(endpoint).rstrip("/")
        if not endpoint.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"storage option aws_endpoint={endpoint!r} must be an http(s):// URL")
        if endpoint.startswith("http://") and not allow_http:
            raise InvalidArgumentError(
                f"the S3 endpoint {endpoint} is plain http; set storage option "
                "allow_http='true' (or AWS_ALLOW_HTTP) to allow it, as pylance requires"
            )
        if virtual_hosted:
            raise UnsupportedFeatureError(
                "aws_virtual_hosted_style_request with a custom aws_endpoint (pylance "
                "then takes the endpoint to name the bucket) is not supported"
            )
        kwargs["endpoint_url"] = endpoint
    config["s3"] = {"addressing_style": "virtual" if virtual_hosted else "path"}
    config["max_pool_connections"] = MAX_POOL_CONNECTIONS

    if flag(SKIP_SIGNATURE):
        kwargs["anon"] = True
    if flag(REQUEST_PAYER):
        kwargs["requester_pays"] = True
    if flag(ALLOW_INVALID_CERTIFICATES):
        client["verify"] = False
    for setting, name in ((CONNECT_TIMEOUT, "connect_timeout"), (TIMEOUT, "read_timeout")):
        value = get(setting)
        if value is not None:
            config[name] = parse_duration(value, setting.keys[0])
    proxy = get(PROXY_URL)
    if proxy is not None:
        config["proxies"] = {"http": str(proxy), "https": str(proxy)}
    flag(DISABLE_TAGGING)  # validated; nothing to do
    return kwargs
