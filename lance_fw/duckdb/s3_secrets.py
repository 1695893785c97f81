"""DuckDB S3 secrets as lance_fw ``storage_options``, so ``lance_scan('s3://…')`` reads with them.

A DuckDB user configures S3 once, with ``CREATE SECRET (TYPE S3, KEY_ID …, SECRET …, ENDPOINT …,
URL_STYLE 'path', USE_SSL false)``, and expects every S3 read of the connection to use it; lance_fw's
S3 storage takes pylance's option keys instead. So, for each ``s3://`` dataset a statement opens, the
secret DuckDB itself would pick (``which_secret(path, 's3')``: the longest matching ``SCOPE``) is read
through DuckDB and translated here.

Precedence is DuckDB's own (httpfs reads each setting from the matching secret, else from the
connection's settings, which come from the ``AWS_*`` environment): a key the secret sets wins over
the environment; a key it leaves out is taken from the environment as it is when the statement runs
(lance_fw's S3 storage reads it then). With no matching secret the environment alone applies.

Reading a secret's values needs the connection opened with ``allow_unredacted_secrets`` (DuckDB
otherwise shows ``redacted``): ``lance_fw.duckdb.connect()`` sets it; on another connection lance_fw
says so instead of reading with a redacted key. Secrets need DuckDB's httpfs extension (which owns
the S3 secret type); without it no S3 secret can exist and the environment applies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import duckdb

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

#: URI schemes whose datasets take S3 secrets (DuckDB's S3 secrets scope s3://, s3a://, s3n://;
#: lance_fw's S3 storage serves s3:// and s3a://).
S3_SCHEMES = ("s3", "s3a")
#: DuckDB's secret type for S3.
S3_SECRET_TYPE = "s3"
#: The connection setting without which DuckDB shows secret values as ``redacted``.
UNREDACTED_SETTING = "allow_unredacted_secrets"
#: DuckDB's S3 defaults for what a secret leaves out (httpfs: ``s3_endpoint``, ``s3_use_ssl``).
DEFAULT_ENDPOINT = "s3.amazonaws.com"
DEFAULT_USE_SSL = True
#: ``URL_STYLE`` values -> pylance's ``aws_virtual_hosted_style_request``.
URL_STYLES = {"path": "false", "vhost": "true"}

#: Secret keys that translate one to one into pylance storage option keys.
_DIRECT_KEYS = {
    "key_id": "aws_access_key_id",
    "secret": "aws_secret_access_key",
    "session_token": "aws_session_token",
    "region": "aws_region",
    "requester_pays": "aws_request_payer",
}
#: Secret keys that change nothing lance_fw does (DuckDB's own credential refresh and URL escaping).
_IGNORED_KEYS = frozenset({"refresh", "validation", "url_compatibility_mode"})
_ENDPOINT, _USE_SSL, _URL_STYLE = "endpoint", "use_ssl", "url_style"
#: The keys each secret type can store (DuckDB's httpfs S3 secret; its core HTTP secret): a field of the
#: secret string starts a new key only if it names one of these.
SECRET_KEYS = {
    S3_SECRET_TYPE: frozenset(
        {
            "key_id",
            "secret",
            "session_token",
            "region",
            "endpoint",
            "use_ssl",
            "url_style",
            "url_compatibility_mode",
            "kms_key_id",
            "account_id",
            "requester_pays",
            "refresh",
            "validation",
            "profile",
            "chain",
            "sts_endpoint",
        }
    ),
    "http": frozenset(
        {"http_proxy", "http_proxy_username", "http_proxy_password", "extra_http_headers", "bearer_token"}
    ),
}
#: A ``key=value`` field of DuckDB's secret string (keys are lower-case identifiers).
_FIELD = re.compile(r"([a-z_][a-z0-9_]*)=(.*)", re.DOTALL)
_TRUE, _FALSE = "true", "false"


def storage_options_for(con: duckdb.DuckDBPyConnection, uri: str) -> dict[str, str] | None:
    """The storage options a statement on ``con`` opens ``uri`` with: those of the S3 secret DuckDB
    would use for it, or None (no S3 URI, or no matching secret: the environment applies).

    Raises:
        InvalidArgumentError: a secret matches but ``con`` does not let its values be read, or a value
            does not parse.
        UnsupportedFeatureError: the secret sets something lance_fw cannot honour (named).
    """
    if uri.split("://", 1)[0].lower() not in S3_SCHEMES or "://" not in uri:
        return None
    found = matching_secret(con, uri, S3_SECRET_TYPE)
    if found is None:
        return None
    name, values = found
    return s3_storage_options(name, values)


def matching_secret(
    con: duckdb.DuckDBPyConnection, uri: str, secret_type: str
) -> tuple[str, dict[str, str]] | None:
    """(name, values) of the secret of ``secret_type`` DuckDB picks for ``uri``, or None.

    Asked on a cursor (same database, same secrets), so a result the connection is still streaming
    is left alone.
    """
    cursor = con.cursor()
    try:
        chosen = cursor.execute("SELECT name, storage FROM which_secret(?, ?)", [uri, secret_type]).fetchone()
        if chosen is None:
            return None
        name, storage = chosen
        try:
            row = cursor.execute(
                "SELECT type, provider, scope, secret_string FROM duckdb_secrets(redact := false) "
                "WHERE name = ? AND storage = ?",
                [name, storage],
            ).fetchone()
        except duckdb.InvalidInputException as exc:
            raise InvalidArgumentError(
                f"DuckDB secret {name!r} applies to {uri}, but this connection hides secret values from lance_fw "
                f"({str(exc).splitlines()[0]}); open the connection with config={{'{UNREDACTED_SETTING}': True}} "
                f"(lance_fw.duckdb.connect() does)"
            ) from exc
    finally:
        cursor.close()
    if row is None:  # dropped between the two queries
        return None
    secret_type_seen, provider, scope, text = row
    return name, parse_secret_string(
        name,
        secret_type_seen,
        provider,
        list(scope or []),
        text,
        SECRET_KEYS.get(secret_type_seen, frozenset()),
    )


def parse_secret_string(
    name: str, secret_type: str, provider: str, scope: list[str], text: str, keys: frozenset[str]
) -> dict[str, str]:
    """The key/value map of a DuckDB secret, from ``duckdb_secrets().secret_string``.

    DuckDB writes ``name=…;type=…;provider=…;serializable=…;scope=a,b`` (or ``;scope`` when empty), then
    each ``key=value`` in key order, joined by ``;`` without escaping. The header is checked against the
    columns DuckDB reports separately; a field that does not start one of ``keys`` (later in order than the
    key before it) is part of the value before it (a value holding ``;``).

    Raises:
        UnsupportedFeatureError: the string is not in that format (a DuckDB that writes it otherwise).
    """
    scope_field = "scope=" + ",".join(scope) if scope else "scope"
    head = f"name={name};type={secret_type};provider={provider};serializable="
    rest = text[len(head) :] if text.startswith(head) else None
    fields: list[str] | None = None
    for flag in (_TRUE, _FALSE):
        prefix = f"{flag};{scope_field}"
        if rest == prefix:
            fields = []
        elif rest is not None and rest.startswith(prefix + ";"):
            fields = rest[len(prefix) + 1 :].split(";")
    if fields is None:
        raise UnsupportedFeatureError(
            f"DuckDB secret {name!r}: its secret string is not in the format lance_fw "
            f"reads (duckdb {duckdb.__version__})"
        )
    values: dict[str, str] = {}
    last = ""
    for field in fields:
        match = _FIELD.fullmatch(field)
        if match and match.group(1) > last and match.group(1) in keys:
            last = match.group(1)
            values[last] = match.group(2)
        elif last:
            values[last] += ";" + field
        else:
            raise UnsupportedFeatureError(f"DuckDB secret {name!r}: cannot read its field {field!r}")
    return values


def s3_storage_options(name: str, values: Mapping[str, str]) -> dict[str, str]:
    """pylance-style storage options meaning what DuckDB's S3 secret ``values`` mean to httpfs.

    ``ENDPOINT`` is a host[:port] (DuckDB adds the scheme from ``USE_SSL``); an endpoint given with its
    scheme is taken as written. A secret that sets neither endpoint nor ``USE_SSL`` leaves the endpoint
    to lance_fw's S3 storage (AWS, or the environment's ``AWS_ENDPOINT_URL``).

    Raises:
        InvalidArgumentError: ``USE_SSL`` / ``URL_STYLE`` hold something DuckDB would not accept.
        UnsupportedFeatureError: a key lance_fw cannot honour (e.g. ``KMS_KEY_ID``), named.
    """
    options: dict[str, str] = {}
    for key, value in values.items():
        if value == "" or key in _IGNORED_KEYS or key in (_ENDPOINT, _USE_SSL, _URL_STYLE):
            continue
        if key not in _DIRECT_KEYS:
            raise UnsupportedFeatureError(
                f"DuckDB secret {name!r} sets {key.upper()}, which lance_fw's S3 storage does not support"
            )
        options[_DIRECT_KEYS[key]] = value
    endpoint, use_ssl = values.get(_ENDPOINT) or None, values.get(_USE_SSL) or None
    if endpoint is not None or use_ssl is not None:
        ssl = DEFAULT_USE_SSL if use_ssl is None else _flag(name, _USE_SSL, use_ssl)
        host = endpoint or DEFAULT_ENDPOINT
        url = host if host.startswith(("http://", "https://")) else ("https://" if ssl else "http://") + host
        options["aws_endpoint"] = url
        if url.startswith("http://"):
            options["allow_http"] = _TRUE
    style = values.get(_URL_STYLE) or None
    if style is not None:
        if style.lower() not in URL_STYLES:
            raise InvalidArgumentError(
                f"DuckDB secret {name!r}: URL_STYLE {style!r} is not one of {sorted(URL_STYLES)}"
            )
        options["aws_virtual_hosted_style_request"] = URL_STYLES[style.lower()]
    return options


def _flag(name: str, key: str, value: str) -> bool:
    text = value.strip().lower()
    if text in (_TRUE, _FALSE):
        return text == _TRUE
    raise InvalidArgumentError(f"DuckDB secret {name!r}: {key.upper()} {value!r} is not a boolean")
