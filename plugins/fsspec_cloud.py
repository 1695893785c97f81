"""What the Google Cloud Storage and Azure Blob plugins share: reading pylance's option families
and creating a manifest exactly once through an fsspec backend.

**Options.** pylance hands ``storage_options`` to object_store, which reads a key from the options
first and otherwise from an environment variable spelt as the key in capitals (``GOOGLE_*`` for
Google, ``AZURE_*`` for Azure). The key namespace is shared by every store: one dict may carry
keys of several plugins (commit handlers read their own). A key another *store* declares
(``aws_endpoint`` on a ``gs://`` URI) configures nothing here, so it is refused rather than
ignored; keys of non-store plugins pass through untouched.

**Create if absent.** Both backends send a real server-side precondition for fsspec's
``mode="create"``: gcsfs uploads with ``ifGenerationMatch=0`` and adlfs with ``If-None-Match: *``.
The server creates the object only if no object has the name, atomically against every other
client (the same preconditions pylance's object_store sends for its own commits), so these
storages set ``atomic_put_if_absent`` and the generic put-if-absent commit handler is safe.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO

from lance_fw.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidArgumentError,
    StorageError,
    UnsupportedFeatureError,
)
from lance_fw.hookspecs import hookimpl
from lance_fw.io.storage import RangeReader, Storage, coalesce_ranges
from lance_fw_plugins.s3_options import Setting, lookup, parse_bool, parse_duration
from lance_fw_plugins.storage_fsspec import FsspecStorage

__all__ = ["Setting", "parse_bool", "parse_duration"]

#: The option tables of the built-in object stores, by the URI form they configure: a key in one
#: of them but not in the store's own configures another store.
_STORE_TABLES = {
    "s3://": "lance_fw_plugins.s3_options",
    "gs://": "lance_fw_plugins.gcs_options",
    "az://": "lance_fw_plugins.azure_options",
}


#: Ranges closer than this become one request: a request to an object store costs tens of
#: milliseconds before the first byte, in which ~1 MiB more could have streamed (object_store, and
#: the S3 plugin, coalesce at the same distance).
CLOUD_COALESCE_GAP = 1024 * 1024
#: Fragments read at once by a scan that does not say (as on S3).
CLOUD_SCAN_READAHEAD = 4


def env_names(keys: tuple[str, ...], prefix: str) -> tuple[str, ...]:
    """The environment variables object_store reads for a setting: every spelling of the key that
    starts with the store's prefix, in capitals (it lower-cases ``GOOGLE_*``/``AZURE_*`` names and
    parses them as keys)."""
    return tuple(k.upper() for k in keys if k.startswith(prefix))


def store_setting(
    prefix: str, keys: tuple[str, ...], description: str, extra_env: tuple[str, ...] = ()
) -> Setting:
    """A GCS or Azure setting: its keys, read from the variables object_store derives from the
    keys with the store's ``prefix`` (``env_names``) and any ``extra_env`` the store also reads."""
    return Setting(keys, env_names(keys, prefix) + extra_env, description)


def prefixed_setting(prefix: str, name: str, description: str) -> Setting:
    """A setting object_store spells ``<prefix><name>`` (canonical) or plain ``<name>``, read from
    the prefixed key's variable: the rule most GCS and Azure keys follow."""
    return store_setting(prefix, (prefix + name, name), description)


def client_settings(prefix: str, allow_http: str, timeout: str) -> tuple[Setting, Setting, Setting]:
    """object_store's client options as GCS and Azure read them: ``allow_http``, ``connect_timeout``
    and ``timeout``, each also spelt with the store's ``prefix`` and read from that variable. The
    store describes ``allow_http`` and ``timeout`` (which requests may use http, and what the timeout
    bounds, differ per store)."""

    def setting(name: str, description: str) -> Setting:
        return store_setting(prefix, (name, prefix + name), description)

    return (
        setting("allow_http", allow_http),
        setting("connect_timeout", "connect timeout, e.g. '5s'"),
        setting("timeout", timeout),
    )


def refuse_keys(
    options: Mapping[str, Any],
    environ: Mapping[str, str],
    store: str,
    own: Mapping[str, str],
    unsupported: Mapping[str, str],
    prefix: str,
    options_only: frozenset[str] = frozenset(),
) -> None:
    """Raise for keys this store cannot honour, given as options or as environment variables, and
    for option keys that configure another store.

    Args:
        store: the URI form for messages (``gs://``).
        own: every key the store reads (supported and unsupported).
        unsupported: key -> why lance_fw cannot honour it.
        prefix: the store's key prefix (``google_``); ``PREFIX_KEY`` variables are read as keys.
        options_only: unsupported keys object_store would not read from the environment.
    Raises:
        UnsupportedFeatureError: a pylance key (or its variable) lance_fw does not implement is set.
        InvalidArgumentError: a key of another store is given.
    """
    named = sorted(k for k in options if k in unsupported and options[k] is not None)
    named += sorted(
        f"{k.upper()} (environment)"
        for k in unsupported
        if k.startswith(prefix) and k not in options_only and environ.get(k.upper())
    )
    if named:
        reasons = sorted({unsupported[n.split(" ")[0].lower()] for n in named})
        raise UnsupportedFeatureError(
            f"{named}: pylance {store} options lance_fw does not support: {'; '.join(reasons)}"
        )
    refuse_foreign_keys(options, store, own)


def refuse_foreign_keys(options: Mapping[str, Any], store: str, own: Mapping[str, str]) -> None:
    """Raise ``InvalidArgumentError`` for option keys another built-in store reads and ``store``
    (``s3://``, ``gs://``, ``az://``) does not: the kernel accepts them (some plugin declares them),
    but this store would ignore them."""
    for other, module in _STORE_TABLES.items():
        if other == store:
            continue
        table = importlib.import_module(module).OPTION_DESCRIPTIONS
        foreign = sorted(k for k in options if k in table and k not in own)
        if foreign:
            raise InvalidArgumentError(
                f"storage_options {foreign} configure {other} URIs, not {store} ones; remove them"
            )


class StoreOptions:
    """One store's ``storage_options`` and environment, read as object_store reads them (a key in
    the options wins over its variable). Checked when made: keys the store cannot honour, given
    as options or variables, and keys of another store raise (``refuse_keys``)."""

    def __init__(
        self,
        options: Mapping[str, Any],
        environ: Mapping[str, str] | None,
        store: str,
        own: Mapping[str, str],
        unsupported: Mapping[str, str],
        prefix: str,
        options_only: frozenset[str] = frozenset(),
    ):
        self.options = options
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        refuse_keys(options, self.environ, store, own, unsupported, prefix, options_only)

    def get(self, setting: Setting) -> Any:
        """The setting's value (None when neither a key nor a variable gives it)."""
        return lookup(self.options, setting, self.environ)

    def flag(self, setting: Setting, default: bool = False) -> bool:
        value = self.get(setting)
        return default if value is None else parse_bool(value, setting.keys[0])

    def seconds(self, setting: Setting) -> float | None:
        value = self.get(setting)
        return None if value is None else parse_duration(value, setting.keys[0])

    def same_as_uri(self, setting: Setting, from_uri: str) -> None:
        """object_store takes the bucket/container/account from the URI whatever the option says;
        a different value would be silently ignored there, so it is refused here."""
        value = lookup(self.options, setting, {})
        if value is not None and str(value) != from_uri:
            raise InvalidArgumentError(
                f"storage option {setting.keys[0]}={value!r} differs from {from_uri!r} in the URI; "
                "the URI names it"
            )

    def refuse_plain_http(self, endpoint: str, is_http: bool, allow_http: Setting, service: str) -> None:
        """pylance refuses an ``http://`` endpoint unless ``allow_http`` is set."""
        if is_http and not self.flag(allow_http):
            raise InvalidArgumentError(
                f"the {service} endpoint {endpoint} is plain http; set storage option allow_http='true' "
                f"(or {allow_http.env[0]}) to allow it, as pylance requires"
            )


def import_backend(module: str, scheme: str, extra: str) -> Any:
    """The fsspec backend module, or a ``StorageError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StorageError(
            f"{scheme}:// URIs need {module}, which is not installed: pip install lance_fw[{extra}]"
        ) from exc


class CloudReader(RangeReader):
    """Positional reads of one object as it was when the reader opened.

    The open is one metadata request: it fixes the size and the object's version (GCS generation,
    Azure ETag; ``version_of``). Every read asks for that version (``_fetch``), so an object
    replaced while the reader is open fails the read with a ``StorageError`` instead of returning
    the new object's bytes at the old object's offsets (``RangeReader``'s snapshot promise).
    ``read_ranges`` merges ranges closer than ``CLOUD_COALESCE_GAP`` and fetches the merged
    ranges concurrently on the backend's event loop. Every backend failure becomes a
    ``StorageError`` naming the object."""

    #: The ``info`` field holding the object's version (set per store).
    version_field = ""
    #: The ``cat_ranges`` keyword that pins a read to that version, where the backend takes one
    #: (gcsfs: ``generation``); a store without one overrides ``_fetch``.
    pin_argument = ""

    def __init__(self, fs: Any, path: str, failures: tuple[type[BaseException], ...]):
        self.fs, self.path, self._failures = fs, path, failures
        try:
            info = fs.info(path)
        except FileNotFoundError as exc:
            raise DatasetNotFoundError(f"{path}: no such object") from exc
        except failures as exc:
            raise StorageError(f"{path}: {exc}") from exc
        if info.get("type") != "file":
            raise StorageError(f"{path}: not an object (a prefix)")
        self._size = int(info["size"])
        self._version = info.get(self.version_field) if self.version_field else None

    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if length == 0:
            return b""
        return self._fetch_typed([(offset, length)], f"{length} bytes at {offset}")[0]

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        merged = [m for m in coalesce_ranges(ranges, CLOUD_COALESCE_GAP) if m[1] > 0]
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        if not merged:
            return out
        blobs = self._fetch_typed([(start, length) for start, length, _ in merged], f"{len(merged)} ranges")
        for (start, length, members), blob in zip(merged, blobs):
            if len(blob) != length:
                raise CorruptFileError(
                    self.path,
                    f"{len(blob)} bytes at [{start}, {start + length}) where {length} were asked "
                    "for; the object is truncated",
                )
            view = memoryview(blob)
            for i in members:
                offset, size = ranges[i]
                out[i] = view[offset - start : offset - start + size]
        return out

    def _fetch_typed(self, spans: list[tuple[int, int]], what: str) -> list[bytes]:
        try:
            return self._fetch(spans)
        except self._failures as exc:
            if self._version is not None and self._replaced(exc):
                raise StorageError(
                    f"{self.path} was replaced after it was opened; reopen it to read the new object"
                ) from exc
            raise StorageError(f"{self.path}: reading {what}: {exc}") from exc

    def _fetch(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """The bytes of each ``(offset, length)`` span of the opened version, fetched concurrently."""
        pin = {self.pin_argument: self._version} if self.pin_argument else {}
        return list(
            self.fs.cat_ranges(
                [self.path] * len(spans),
                [start for start, _ in spans],
                [start + length for start, length in spans],
                on_error="raise",
                **pin,
            )
        )

    def _replaced(self, exc: BaseException) -> bool:
        """Whether a failed read means the opened version is gone (set per store)."""
        return False


class ObjectOutput:
    """A writable stream straight to the object: S3, GCS and Azure publish it whole at ``close`` (one
    upload, or a multipart / resumable upload / block list finalized at close), so nothing is visible before;
    ``abort`` -- or leaving a ``with`` block by an exception -- publishes nothing. (The generic
    fsspec output writes a temp object and moves it, which on an object store is a second copy.)"""

    def __init__(self, file: Any, path: str, errors: tuple[type[BaseException], ...]):
        self._file, self.path = file, path
        self._errors = errors
        self.closed = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return int(self._file.write(data))
        except self._errors as exc:
            raise StorageError(f"{self.path}: cannot write: {exc}") from exc

    def tell(self) -> int:
        return int(self._file.tell())

    def flush(self) -> None:
        """Nothing to do: the object is published whole at ``close``."""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._file.close()
        except self._errors as exc:
            self._discard()
            raise StorageError(f"{self.path}: cannot publish the object: {exc}") from exc

    def abort(self) -> None:
        if not self.closed:
            self.closed = True
            self._discard()

    def _discard(self) -> None:
        try:
            self._file.discard()  # cancels a started resumable upload (uncommitted blocks expire)
        except Exception:
            pass
        self._file.closed = True  # fsspec would otherwise publish it when the file is collected

    def __enter__(self) -> ObjectOutput:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()


class CloudStorage(FsspecStorage):
    """An fsspec object store opened with translated options, with no listing cache (other
    processes commit, and a cached ``_versions/`` listing would hide their versions) and an atomic
    create-if-absent (see the module docstring). Listings are the generic fsspec storage's; reads
    fetch ranges concurrently (``CloudReader``), outputs go straight to the object
    (``ObjectOutput``), and backend errors become ``StorageError``s naming the path."""

    atomic_put_if_absent = True
    #: Fragments a scan reads at once by default: every fragment's first read waits a round trip,
    #: which reading the next ones meanwhile hides (the backends run requests from any thread on
    #: their own event loop).
    default_readahead = CLOUD_SCAN_READAHEAD
    #: Exceptions the backend raises for a failed request besides ``OSError`` (set per store).
    backend_errors: tuple[type[BaseException], ...] = ()

    @property
    def failures(self) -> tuple[type[BaseException], ...]:
        """What a failed request raises: ``OSError`` (fsspec's mapping) or a backend error."""
        return (OSError, *self.backend_errors)

    def __init__(self, scheme: str, fs: Any, options: Mapping[str, Any]):
        # FsspecStorage.__init__ would open fsspec's default, unconfigured filesystem: not called.
        self.scheme = scheme
        self.options = dict(options)
        self.fs = fs

    def open_output(self, path: str) -> BinaryIO:
        """No directories on an object store: a name's "parents" exist once it does."""
        try:
            file = self.fs.open(path, "wb")
        except self.failures as exc:
            raise StorageError(f"{path}: cannot create the object: {exc}") from exc
        return ObjectOutput(file, path, self.failures)  # type: ignore[return-value]

    #: The reader class (pins the object's version the store's way).
    reader_class: type[CloudReader] = CloudReader

    def open_reader(self, path: str) -> RangeReader:
        return self.reader_class(self.fs, path, self.failures)

    def list_dir(self, path: str) -> list[str]:
        try:
            return super().list_dir(path)
        except self.failures as exc:
            raise StorageError(f"{path}: cannot list: {exc}") from exc

    def exists(self, path: str) -> bool:
        try:
            return super().exists(path)
        except self.failures as exc:
            raise StorageError(f"{path}: cannot check whether it exists: {exc}") from exc

    def delete(self, path: str) -> None:
        try:
            super().delete(path)
        except self.failures as exc:
            raise StorageError(f"{path}: cannot delete: {exc}") from exc

    def mtime(self, path: str) -> float | None:
        try:
            return super().mtime(path)
        except FileNotFoundError:
            raise
        except self.failures as exc:
            raise StorageError(f"{path}: cannot read its modification time: {exc}") from exc

    def put_if_absent(self, path: str, data: bytes) -> None:
        """One upload with the store's "must not exist" precondition (``mode="create"``).

        A refusal where the object already holds exactly ``data`` is this call's own success: the
        client library retries an upload whose response was lost, and the retry finds the object
        the first attempt created. (Another writer cannot have written the same bytes: a manifest
        names its own transaction.)"""
        try:
            self.fs.pipe_file(path, data, mode="create")
        except FileExistsError as exc:
            if self._holds(path, data):
                return
            raise CommitConflictError(f"{path} already exists: another writer created it first") from exc
        except self.failures as exc:
            raise StorageError(f"{path}: conditional create failed: {exc}") from exc

    def _holds(self, path: str, data: bytes) -> bool:
        try:
            return self.read_bytes(path) == data
        except (StorageError, DatasetNotFoundError, OSError):
            return False


def storage_hooks(
    schemes: tuple[str, ...],
    storage: Callable[[str, Mapping[str, Any]], Storage],
    descriptions: Mapping[str, str],
) -> tuple[Callable[..., Storage | None], Callable[[], Mapping[str, str]]]:
    """A cloud plugin's two hook implementations: ``lance_storage`` opening ``storage(uri,
    options)`` for URIs of ``schemes``, and ``lance_storage_options`` declaring its keys. A plugin
    module binds them to those names: ``lance_storage, lance_storage_options = storage_hooks(...)``."""

    @hookimpl
    def lance_storage(uri: str, options: Mapping[str, Any]) -> Storage | None:
        if "://" not in uri or uri.split("://", 1)[0].lower() not in schemes:
            return None
        return storage(uri, options)

    @hookimpl
    def lance_storage_options() -> Mapping[str, str]:
        return descriptions

    return lance_storage, lance_storage_options
