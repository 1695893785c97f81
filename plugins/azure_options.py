"""pylance's Azure Blob ``storage_options`` and ``AZURE_*`` environment, translated into adlfs arguments.

The keys are object_store's ``AzureConfigKey`` spellings (canonical key first, then aliases); each
``azure_*`` spelling is also read from its ``AZURE_*`` variable when not given. Keys lance_fw
cannot honour raise ``UnsupportedFeatureError``; keys of other stores ``InvalidArgumentError``.

Credentials are chosen as object_store chooses them (``azure_credential_type``, default "auto":
a bearer token, else the account key, else workload identity, else a service principal's secret,
else a SAS, else the Azure CLI, else managed identity), and exactly that one credential reaches
adlfs. adlfs reads ``AZURE_STORAGE_*`` variables of its own when an argument is missing, so
the shapes below leave it nothing to fill in: a SAS, anonymous access, the emulator and an
endpoint that is not a plain https host go as a connection string built here; an account key or
a token credential go as themselves. ``AZURE_STORAGE_CONNECTION_STRING``, which adlfs would prefer
to everything and pylance ignores, is refused while set (unless a connection string is built here).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw_plugins.fsspec_cloud import (
    Setting,
    StoreOptions,
    client_settings,
    prefixed_setting,
    store_setting,
)

#: The key prefix object_store strips, and reads ``AZURE_*`` variables for.
PREFIX = "azure_"
#: Azurite's well-known account and key (public, the same in every emulator), and where it listens
#: unless ``AZURITE_BLOB_STORAGE_URL`` says otherwise -- object_store's emulator defaults.
EMULATOR_ACCOUNT = "devstoreaccount1"
EMULATOR_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
EMULATOR_URL_ENV = "AZURITE_BLOB_STORAGE_URL"
EMULATOR_URL = "http://127.0.0.1:10000"
#: Blob hosts of an account, and the variable adlfs reads a connection string from.
BLOB_HOST = "{account}.blob.core.windows.net"
FABRIC_BLOB_HOST = "{account}.blob.fabric.microsoft.com"
CONNECTION_STRING_ENV = "AZURE_STORAGE_CONNECTION_STRING"
#: A static bearer token's nominal lifetime: object_store never refreshes it; the Azure SDK asks
#: again when it nears expiry, and gets the same token.
STATIC_TOKEN_LIFETIME_S = 24 * 3600


_setting = partial(store_setting, PREFIX)
_short = partial(prefixed_setting, PREFIX)


ACCOUNT_NAME = _setting(("azure_storage_account_name", "account_name"), "Azure storage account name")
ACCESS_KEY = _setting(
    (
        "azure_storage_account_key",
        "azure_storage_access_key",
        "azure_storage_master_key",
        "master_key",
        "account_key",
        "access_key",
    ),
    "Azure storage account (shared) key",
)
CLIENT_ID = _setting(("azure_storage_client_id", "azure_client_id", "client_id"), "Azure client (app) id")
CLIENT_SECRET = _setting(
    ("azure_storage_client_secret", "azure_client_secret", "client_secret"), "Azure client secret"
)
TENANT_ID = _setting(
    (
        "azure_storage_tenant_id",
        "azure_storage_authority_id",
        "azure_tenant_id",
        "azure_authority_id",
        "tenant_id",
        "authority_id",
    ),
    "Azure tenant (authority) id",
)
AUTHORITY_HOST = _setting(
    ("azure_storage_authority_host", "azure_authority_host", "authority_host"), "Azure authority host"
)
SAS_KEY = _setting(
    ("azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token"),
    "Azure shared access signature (query string)",
)
TOKEN = _setting(("azure_storage_token", "bearer_token", "token"), "static Azure OAuth bearer token")
USE_EMULATOR = _setting(("azure_storage_use_emulator", "use_emulator"), "use Azurite (the local emulator)")
ENDPOINT = _setting(("azure_storage_endpoint", "azure_endpoint", "endpoint"), "Azure blob endpoint URL")
OBJECT_ID = _short("object_id", "managed identity object id")
MSI_RESOURCE_ID = _short("msi_resource_id", "managed identity resource id")
FEDERATED_TOKEN_FILE = _short("federated_token_file", "workload identity token file")
USE_FABRIC_ENDPOINT = _short("use_fabric_endpoint", "use the Microsoft Fabric blob endpoint")
USE_AZURE_CLI = _short("use_azure_cli", "authenticate with the Azure CLI")
SKIP_SIGNATURE = _short("skip_signature", "send anonymous Azure requests")
CONTAINER_NAME = _short("container_name", "Azure container (must match the URI, which names it)")
DISABLE_TAGGING = _short("disable_tagging", "do not tag blobs (lance_fw never does)")
CREDENTIAL_TYPE = _short(
    "credential_type",
    "which Azure credential to use: auto, access_key, sas_token, bearer_token, client_secret, "
    "workload_identity, azure_cli, managed_identity",
)
ALLOW_HTTP, CONNECT_TIMEOUT, TIMEOUT = client_settings(
    PREFIX, "allow an http:// endpoint", "per-request read timeout, e.g. '30s'"
)

SETTINGS = (
    ACCOUNT_NAME,
    ACCESS_KEY,
    CLIENT_ID,
    CLIENT_SECRET,
    TENANT_ID,
    AUTHORITY_HOST,
    SAS_KEY,
    TOKEN,
    USE_EMULATOR,
    ENDPOINT,
    OBJECT_ID,
    MSI_RESOURCE_ID,
    FEDERATED_TOKEN_FILE,
    USE_FABRIC_ENDPOINT,
    USE_AZURE_CLI,
    SKIP_SIGNATURE,
    CONTAINER_NAME,
    DISABLE_TAGGING,
    CREDENTIAL_TYPE,
    ALLOW_HTTP,
    CONNECT_TIMEOUT,
    TIMEOUT,
)

_FABRIC = "Microsoft Fabric token-service credentials are not supported"
_MSI = "the managed-identity endpoint is the Azure SDK's own (IDENTITY_ENDPOINT / MSI_ENDPOINT)"
_CPK = "customer-provided encryption keys are not passed on"
#: object_store keys for Azure that lance_fw does not implement, with why.
UNSUPPORTED = {
    **dict.fromkeys(
        ("azure_msi_endpoint", "azure_identity_endpoint", "identity_endpoint", "msi_endpoint"), _MSI
    ),
    **dict.fromkeys(("azure_fabric_token_service_url", "fabric_token_service_url"), _FABRIC),
    **dict.fromkeys(("azure_fabric_workload_host", "fabric_workload_host"), _FABRIC),
    **dict.fromkeys(("azure_fabric_session_token", "fabric_session_token"), _FABRIC),
    **dict.fromkeys(("azure_fabric_cluster_identifier", "fabric_cluster_identifier"), _FABRIC),
    **dict.fromkeys(("azure_storage_encryption_key", "encryption_key"), _CPK),
    **dict.fromkeys(
        ("azure_allow_invalid_certificates", "allow_invalid_certificates"),
        "TLS certificates are always checked on Azure",
    ),
    **dict.fromkeys(("azure_proxy_url", "proxy_url"), "proxies are not configurable for Azure"),
    "azure_storage_connection_string": "object_store (pylance) has no connection-string key and ignores "
    "it; give its parts: azure_storage_account_name, azure_storage_account_key or "
    "azure_storage_sas_key, azure_storage_endpoint",
}

#: Refused as options, but no object_store key: their variables are not read (the connection
#: string's is refused only where adlfs would use it).
_NOT_OBJECT_STORE_KEYS = frozenset({"azure_storage_connection_string"})

#: Every key this module reads, for the ``lance_storage_options`` hook (key -> description).
OPTION_DESCRIPTIONS: dict[str, str] = {
    **{key: s.description for s in SETTINGS for key in s.keys},
    **{key: f"pylance option lance_fw does not support on Azure ({why})" for key, why in UNSUPPORTED.items()},
}

#: The credential kinds ``azure_credential_type`` names (object_store's values).
ACCESS_KEY_KIND, SAS_KIND, BEARER_KIND = "access_key", "sas_token", "bearer_token"
CLIENT_SECRET_KIND, WORKLOAD_KIND = "client_secret", "workload_identity"
CLI_KIND, MANAGED_KIND, AUTO_KIND = "azure_cli", "managed_identity", "auto"
CREDENTIAL_KINDS = (
    AUTO_KIND,
    ACCESS_KEY_KIND,
    SAS_KIND,
    BEARER_KIND,
    CLIENT_SECRET_KIND,
    WORKLOAD_KIND,
    CLI_KIND,
    MANAGED_KIND,
)
#: Kinds a connection string can carry (the others are token credentials).
_SHARED_KEY_KINDS = (ACCESS_KEY_KIND, SAS_KIND)
#: Pseudo-kind: anonymous requests (``azure_skip_signature``).
ANONYMOUS = "anonymous"


class StaticTokenCredential:
    """An async Azure token credential that always answers the same bearer token, as object_store
    uses ``azure_storage_token`` (never refreshed)."""

    def __init__(self, token: str):
        self._token = token

    async def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, int(time.time()) + STATIC_TOKEN_LIFETIME_S)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> StaticTokenCredential:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None


def _auto_kind(values: Mapping[str, Any], use_cli: bool) -> str:
    """object_store's "auto" order."""
    if values["token"] is not None:
        return BEARER_KIND
    if values["key"] is not None:
        return ACCESS_KEY_KIND
    if values["client_id"] and values["tenant"] and values["federated_file"]:
        return WORKLOAD_KIND
    if values["client_id"] and values["secret"] and values["tenant"]:
        return CLIENT_SECRET_KIND
    if values["sas"] is not None:
        return SAS_KIND
    return CLI_KIND if use_cli else MANAGED_KIND


def _require(values: Mapping[str, Any], kind: str, *names: str) -> None:
    missing = [n for n in names if not values[n]]
    if missing:
        raise InvalidArgumentError(f"Azure credential {kind!r} needs {missing} (storage options or AZURE_*)")


def _token_credential(kind: str, values: Mapping[str, Any]) -> Any:
    """The async credential object adlfs authenticates with, for a token kind."""
    authority = {"authority": values["authority"]} if values["authority"] else {}
    if kind == BEARER_KIND:
        _require(values, kind, "token")
        return StaticTokenCredential(str(values["token"]))
    from azure.identity import aio

    if kind == CLIENT_SECRET_KIND:
        _require(values, kind, "client_id", "secret", "tenant")
        return aio.ClientSecretCredential(
            values["tenant"], values["client_id"], values["secret"], **authority
        )
    if kind == WORKLOAD_KIND:
        _require(values, kind, "client_id", "tenant", "federated_file")
        return aio.WorkloadIdentityCredential(
            tenant_id=values["tenant"],
            client_id=values["client_id"],
            token_file_path=values["federated_file"],
            **authority,
        )
    if kind == CLI_KIND:
        return aio.AzureCliCredential(tenant_id=values["tenant"] or "")
    identity = {
        name: values[key]
        for name, key in (("client_id", "client_id"), ("object_id", "object_id"), ("resource_id", "msi_res"))
        if values[key]
    }
    if len(identity) > 1:
        raise InvalidArgumentError(
            f"managed identity: give one of azure_client_id, azure_object_id, azure_msi_resource_id "
            f"(got {sorted(identity)})"
        )
    return aio.ManagedIdentityCredential(identity_config=identity or None)


def _connection_string(endpoint: str, kind: str, account: str | None, values: Mapping[str, Any]) -> str:
    parts = [f"BlobEndpoint={endpoint}"]
    if kind == ACCESS_KEY_KIND:
        parts += [f"AccountName={account}", f"AccountKey={values['key']}"]
    elif kind == SAS_KIND:
        parts.append(f"SharedAccessSignature={str(values['sas']).lstrip('?')}")
    return ";".join(parts)


def adlfs_kwargs(
    options: Mapping[str, Any],
    container: str,
    uri_account: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``adlfs.AzureBlobFileSystem`` meaning what ``options`` (and the
    ``AZURE_*`` environment) mean to pylance for a container (``uri_account``: the account an
    ``abfss://container@account.dfs.core.windows.net`` URI names). Listing caches are always off.

    Raises:
        UnsupportedFeatureError: a key lance_fw cannot honour, or a combination adlfs cannot reach.
        InvalidArgumentError: a bad value, a missing account, a key of another store, a container
            or account other than the URI's.
    """
    read = StoreOptions(
        options, environ, "az://", OPTION_DESCRIPTIONS, UNSUPPORTED, PREFIX, _NOT_OBJECT_STORE_KEYS
    )

    def get(setting: Setting) -> str | None:
        value = read.get(setting)
        return None if value is None else str(value)

    read.same_as_uri(CONTAINER_NAME, container)
    account = get(ACCOUNT_NAME)
    if uri_account is not None:
        read.same_as_uri(ACCOUNT_NAME, uri_account)
        account = uri_account
    values = {
        "key": get(ACCESS_KEY),
        "sas": get(SAS_KEY),
        "token": get(TOKEN),
        "client_id": get(CLIENT_ID),
        "secret": get(CLIENT_SECRET),
        "tenant": get(TENANT_ID),
        "authority": get(AUTHORITY_HOST),
        "federated_file": get(FEDERATED_TOKEN_FILE),
        "object_id": get(OBJECT_ID),
        "msi_res": get(MSI_RESOURCE_ID),
    }
    read.flag(DISABLE_TAGGING)  # validated; lance_fw never tags blobs
    kind = (get(CREDENTIAL_TYPE) or AUTO_KIND).strip().lower()
    if kind not in CREDENTIAL_KINDS:
        raise InvalidArgumentError(
            f"storage option azure_credential_type={kind!r}: one of {list(CREDENTIAL_KINDS)}"
        )
    if kind == AUTO_KIND:
        kind = _auto_kind(values, read.flag(USE_AZURE_CLI))
    if read.flag(SKIP_SIGNATURE):
        kind = ANONYMOUS

    kwargs: dict[str, Any] = {"use_listings_cache": False, "anon": kind == ANONYMOUS}
    for setting, name in ((CONNECT_TIMEOUT, "connection_timeout"), (TIMEOUT, "read_timeout")):
        value = read.seconds(setting)
        if value is not None:
            kwargs[name] = value

    if read.flag(USE_EMULATOR):
        # object_store's emulator branch: an account key, else a bearer token, else a SAS, else
        # the emulator's well-known key (credential_type and token credentials play no part).
        account = account or EMULATOR_ACCOUNT
        if kind != ANONYMOUS:
            if values["key"] is not None:
                kind = ACCESS_KEY_KIND
            elif values["token"] is not None:
                raise UnsupportedFeatureError(
                    "azure_storage_token with the Azure emulator: lance_fw reaches the emulator "
                    "with an account key or a SAS only"
                )
            elif values["sas"] is not None:
                kind = SAS_KIND
            else:
                kind, values["key"] = ACCESS_KEY_KIND, EMULATOR_KEY
        base = (read.environ.get(EMULATOR_URL_ENV) or EMULATOR_URL).rstrip("/")
        kwargs["account_name"] = account
        kwargs["connection_string"] = _connection_string(f"{base}/{account}", kind, account, values)
        return kwargs

    if not account:
        raise InvalidArgumentError(
            "Azure needs a storage account: storage option azure_storage_account_name "
            "(or AZURE_STORAGE_ACCOUNT_NAME, or an abfss://container@ACCOUNT.dfs.core.windows.net URI)"
        )
    kwargs["account_name"] = account
    host = (FABRIC_BLOB_HOST if read.flag(USE_FABRIC_ENDPOINT) else BLOB_HOST).format(account=account)
    endpoint = (get(ENDPOINT) or f"https://{host}").rstrip("/")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArgumentError(
            f"storage option azure_storage_endpoint={endpoint!r} must be an http(s):// URL"
        )
    read.refuse_plain_http(endpoint, parts.scheme == "http", ALLOW_HTTP, "Azure")
    plain_https_host = parts.scheme == "https" and parts.path in ("", "/") and not parts.query
    if kind in (SAS_KIND, ANONYMOUS) or not plain_https_host:
        if kind not in (*_SHARED_KEY_KINDS, ANONYMOUS):
            raise UnsupportedFeatureError(
                f"Azure endpoint {endpoint} with credential {kind!r}: adlfs reaches an endpoint "
                "other than https://HOST only with an account key or a SAS"
            )
        if kind == SAS_KIND:
            _require(values, kind, "sas")
        kwargs["connection_string"] = _connection_string(endpoint, kind, account, values)
        return kwargs
    if read.environ.get(CONNECTION_STRING_ENV):
        raise UnsupportedFeatureError(
            f"{CONNECTION_STRING_ENV} is set: adlfs would use it instead of the settings pylance "
            "reads (pylance ignores it); unset it, or give the account's key or SAS"
        )
    if parts.netloc != BLOB_HOST.format(account=account):  # adlfs's own default host
        kwargs["account_host"] = parts.netloc
    if kind == ACCESS_KEY_KIND:
        _require(values, kind, "key")
        kwargs["account_key"] = values["key"]
    else:
        kwargs["credential"] = _token_credential(kind, values)
    return kwargs
