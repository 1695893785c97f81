"""Storage for ``az://`` and ``abfs[s]://`` over adlfs, configured as pylance users configure it.

Why a plugin of its own instead of the generic fsspec one:

* **Configuration.** pylance's ``azure_*`` keys and ``AZURE_*`` variables are translated into
  adlfs arguments (:mod:`lance_fw_plugins.azure_options`); keys lance_fw cannot honour raise.
* **Freshness.** No listing cache: other processes' commits are seen at once.
* **Safe commits.** ``put_if_absent`` uploads with ``If-None-Match: *`` (adlfs's
  ``overwrite=False``): Azure creates the blob only if none has the name, atomically for every
  client (pylance commits with the same condition), so ``atomic_put_if_absent`` is true and the
  generic put-if-absent handler is safe.

URIs: ``az://container/path`` and ``abfs[s]://container/path`` (account from the options), or
``abfs[s]://container@account.dfs.core.windows.net/path`` (account from the URI), as pylance takes
them. adlfs is imported only when such a URI is opened; without it a ``StorageError`` names the
extra to install (``pip install lance_fw[azure]``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from lance_fw.errors import StorageError
from lance_fw_plugins.azure_options import OPTION_DESCRIPTIONS, adlfs_kwargs
from lance_fw_plugins.fsspec_cloud import CloudReader, CloudStorage, import_backend, storage_hooks

#: URI schemes this plugin answers (pylance's spellings that adlfs also registers).
SCHEMES = ("az", "abfs", "abfss")
#: The pip extra that installs adlfs.
EXTRA = "azure"
#: Ranged downloads of one reader in flight at once.
MAX_PARALLEL_RANGES = 32
#: ``container@account.dfs.core.windows.net`` (or ``.blob.``): the Hadoop driver's form.
_ACCOUNT_HOST = re.compile(r"^(?P<container>[^@/]+)@(?P<account>[^./]+)\.(dfs|blob)\.core\.windows\.net$")


def container_and_account(uri: str) -> tuple[str, str | None]:
    """The container a URI names, and the account when the URI names one."""
    authority = uri.split("://", 1)[1].split("/", 1)[0]
    if "@" in authority:
        match = _ACCOUNT_HOST.match(authority)
        if not match:
            raise StorageError(
                f"{uri!r}: expected abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH "
                "(or az://CONTAINER/PATH with azure_storage_account_name)"
            )
        return match["container"], match["account"]
    if not authority or "." in authority:
        raise StorageError(f"{uri!r}: expected az://CONTAINER/PATH (a container name has no dots)")
    return authority, None


class AzureReader(CloudReader):
    """Every ranged download carries ``If-Match: <etag of the open>``: once the blob is replaced
    Azure answers 412 and the read fails instead of mixing blobs. (adlfs's own ``cat_file`` sends
    no condition, so the downloads are issued here, on adlfs's event loop, a bounded number at a
    time.)"""

    version_field = "etag"

    def _fetch(self, spans: list[tuple[int, int]]) -> list[bytes]:
        from fsspec.asyn import sync

        return list(sync(self.fs.loop, self._download_all, spans))

    async def _download_all(self, spans: list[tuple[int, int]]) -> list[bytes]:
        from azure.core import MatchConditions

        container, blob, _ = self.fs.split_path(self.path)
        limit = asyncio.Semaphore(MAX_PARALLEL_RANGES)
        condition: dict[str, Any] = (
            {"etag": self._version, "match_condition": MatchConditions.IfNotModified} if self._version else {}
        )
        async with self.fs.service_client.get_blob_client(container=container, blob=blob) as client:

            async def one(start: int, length: int) -> bytes:
                async with limit:
                    stream = await client.download_blob(
                        offset=start, length=length, **condition, **self.fs._timeout_kwargs
                    )
                    return bytes(await stream.readall())

            return list(await asyncio.gather(*(one(s, n) for s, n in spans)))

    def _replaced(self, exc: BaseException) -> bool:
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        return isinstance(exc, (ResourceModifiedError, ResourceNotFoundError))


class AzureStorage(CloudStorage):
    """Blobs in Azure Blob Storage (or Azurite, with ``azure_storage_use_emulator``)."""

    reader_class = AzureReader

    def __init__(self, uri: str, options: Mapping[str, Any]):
        scheme = uri.split("://", 1)[0].lower()
        container, account = container_and_account(uri)
        adlfs = import_backend("adlfs", scheme, EXTRA)  # first: translating options imports its dependencies
        kwargs = adlfs_kwargs(options, container, account)
        from azure.core.exceptions import AzureError

        try:
            fs = adlfs.AzureBlobFileSystem(**kwargs)
        except (ValueError, TypeError, AzureError) as exc:
            raise StorageError(f"adlfs refused the Azure configuration: {exc}") from exc
        super().__init__(scheme, fs, options)
        self.backend_errors = (AzureError,)


lance_storage, lance_storage_options = storage_hooks(SCHEMES, AzureStorage, OPTION_DESCRIPTIONS)
