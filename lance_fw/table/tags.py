"""Tags: names for versions, in ``_refs/tags/<name>.json`` exactly as pylance 14 writes them.

A tag keeps its version readable: ``dataset(uri, version="name")`` opens it and
``cleanup_old_versions`` will not remove it. The JSON holds ``version``, ``branch`` (null: main),
``createdAt``/``updatedAt`` (RFC 3339, UTC), ``manifestSize`` and ``metadata``.
"""

from __future__ import annotations

import builtins
import json
import re
from datetime import UTC, datetime

from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError, InvalidArgumentTypeError
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.manifest import find_version
from lance_fw.table.paths import TAGS_DIR

#: What a tag can point at (pylance's forms): a version number, another tag's name, a
#: ``(branch, version-or-tag)`` pair (only branch None / "main"), or None for the latest version.
TagReference = int | str | tuple[str | None, "int | str | None"] | None

_VALID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    head, _, frac = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(head).replace(microsecond=int((frac or "0")[:6].ljust(6, "0")), tzinfo=UTC)


class Tags:
    """pylance's ``ds.tags``: ``create``, ``update``, ``delete``, ``list``, ``list_ordered``, ``get_version``."""

    def __init__(self, storage: Storage, uri: str) -> None:
        self._storage, self._uri = storage, uri

    def _path(self, tag: str) -> str:
        if not isinstance(tag, str) or not _VALID.fullmatch(tag) or tag.endswith(".lock"):
            raise InvalidArgumentError(
                f"tag name {tag!r} is not valid: use letters, digits, '_', '-' and '.'"
            )
        return join_uri(self._uri, *TAGS_DIR, f"{tag}.json")

    def _read(self, tag: str) -> dict:
        path = self._path(tag)
        if not self._storage.exists(path):
            raise InvalidArgumentError(f"{self._uri}: tag {tag!r} does not exist")
        return json.loads(self._storage.read_bytes(path))

    def _resolve(self, reference: TagReference) -> int:
        """A version number, another tag's name, or None (the latest version)."""
        if reference is None:
            return find_version(self._storage, self._uri, None).version
        if isinstance(reference, str):
            return self.get_version(reference)
        if isinstance(reference, tuple):
            branch, version = reference
            if branch not in (None, "main"):
                raise InvalidArgumentError(f"tags on branch {branch!r}: branches are not supported yet")
            return self._resolve(version)
        return int(reference)

    def _write(
        self, tag: str, version: int, created: str | None = None, metadata: dict[str, str] | None = None
    ) -> None:
        try:
            entry = find_version(self._storage, self._uri, version)
        except DatasetNotFoundError:
            raise InvalidArgumentError(
                f"{self._uri}: cannot tag version {version}: it does not exist"
            ) from None
        with self._storage.open_reader(entry.path) as reader:
            size = reader.size()
        now = _now()
        body: dict[str, object] = {
            "branch": None,
            "version": version,
            "createdAt": created or now,
            "updatedAt": now,
            "manifestSize": size,
            "metadata": metadata or {},
        }
        self._storage.write_bytes(self._path(tag), json.dumps(body, indent=2).encode())

    def create(self, tag: str, reference: TagReference = None) -> None:
        if self._storage.exists(self._path(tag)):
            raise InvalidArgumentError(f"{self._uri}: tag {tag!r} already exists (use update)")
        self._write(tag, self._resolve(reference))

    def update(self, tag: str, reference: TagReference = None) -> None:
        """Point ``tag`` at another version (its metadata kept, as pylance keeps it)."""
        body = self._read(tag)
        self._write(tag, self._resolve(reference), body.get("createdAt"), body.get("metadata") or {})

    def replace_metadata(self, tag: str, metadata: dict[str, str]) -> None:
        """pylance's ``Tags.replace_metadata``: the tag's whole metadata map replaced; its version
        and ``updatedAt`` unchanged (pylance moves ``updatedAt`` only when the version changes)."""
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise InvalidArgumentTypeError(f"tag metadata must be a dict of str to str, got {metadata!r}")
        body = self._read(tag)
        body["metadata"] = dict(metadata)
        self._storage.write_bytes(self._path(tag), json.dumps(body, indent=2).encode())

    def delete(self, tag: str) -> None:
        self._read(tag)
        self._storage.delete(self._path(tag))

    def get_version(self, tag: str) -> int:
        return int(self._read(tag)["version"])

    def list(self) -> dict[str, dict]:
        out = {}
        for name in sorted(self._storage.list_dir(join_uri(self._uri, *TAGS_DIR))):
            if not name.endswith(".json"):
                continue
            body = json.loads(self._storage.read_bytes(join_uri(self._uri, *TAGS_DIR, name)))
            out[name[: -len(".json")]] = {
                "branch": body.get("branch"),
                "version": body.get("version"),
                "created_at": _parse_time(body.get("createdAt")),
                "updated_at": _parse_time(body.get("updatedAt")),
                "manifest_size": body.get("manifestSize"),
                "metadata": body.get("metadata") or {},
            }
        return out

    def list_ordered(self, order: str | None = None) -> builtins.list[tuple[str, dict]]:
        """Tags by version, newest first (``order="asc"`` for oldest first)."""
        items = sorted(self.list().items(), key=lambda kv: (kv[1]["version"], kv[0]), reverse=order != "asc")
        return items
