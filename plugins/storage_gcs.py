"""Storage for ``gs://`` (and fsspec's ``gcs://``) over gcsfs, configured as pylance users configure it.

Why a plugin of its own instead of the generic fsspec one:

* **Configuration.** pylance's ``google_*`` keys and ``GOOGLE_*`` variables are translated into
  gcsfs arguments (:mod:`lance_fw_plugins.gcs_options`); keys lance_fw cannot honour raise.
* **Freshness.** No listing cache: other processes' commits are seen at once.
* **Safe commits.** ``put_if_absent`` uploads with ``ifGenerationMatch=0``: GCS creates the object
  only if no live object has the name, atomically for every client (pylance commits with the same
  precondition), so ``atomic_put_if_absent`` is true and the generic put-if-absent handler is safe.

gcsfs is imported only when such a URI is opened; without it a ``StorageError`` names the extra
to install (``pip install lance_fw[gcs]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_fw.errors import StorageError
from lance_fw_plugins.fsspec_cloud import CloudReader, CloudStorage, import_backend, storage_hooks
from lance_fw_plugins.gcs_options import OPTION_DESCRIPTIONS, gcsfs_kwargs

#: URI schemes this plugin answers (``gs`` is pylance's; fsspec also registers ``gcs`` for gcsfs).
SCHEMES = ("gs", "gcs")
#: The pip extra that installs gcsfs.
EXTRA = "gcs"


def bucket_of(uri: str) -> str:
    """The bucket a ``gs://bucket/...`` URI names."""
    bucket = uri.split("://", 1)[1].split("/", 1)[0]
    if not bucket:
        raise StorageError(f"{uri!r} names no bucket")
    return bucket


class GcsReader(CloudReader):
    """Reads ask for the generation the open saw (``generation=`` on every GET): once the object
    is replaced that generation is gone (404), and the read fails instead of mixing objects."""

    version_field = pin_argument = "generation"

    def _replaced(self, exc: BaseException) -> bool:
        return isinstance(exc, FileNotFoundError)


class GcsStorage(CloudStorage):
    """Objects in Google Cloud Storage (or an emulator reached through ``google_base_url``)."""

    reader_class = GcsReader

    def __init__(self, uri: str, options: Mapping[str, Any]):
        scheme = uri.split("://", 1)[0].lower()
        import_backend("gcsfs", scheme, EXTRA)  # first: translating options imports its dependencies
        kwargs = gcsfs_kwargs(options, bucket_of(uri))
        # The JSON-API filesystem itself: recent gcsfs exports an "extended" class that first asks
        # a gRPC control API for the bucket's layout (a minute of retries where that API is not
        # reachable, e.g. an emulator); object reads, writes and preconditions need none of it.
        from gcsfs.core import GCSFileSystem
        from gcsfs.retry import HttpError

        try:
            fs = GCSFileSystem(**kwargs)
        except Exception as exc:  # gcsfs raises plain Exceptions for credentials it cannot use
            raise StorageError(f"gcsfs refused the GCS configuration: {type(exc).__name__}: {exc}") from exc
        super().__init__(scheme, fs, options)
        self.backend_errors = (HttpError,)


lance_storage, lance_storage_options = storage_hooks(SCHEMES, GcsStorage, OPTION_DESCRIPTIONS)
