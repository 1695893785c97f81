"""pylance's ``lance.fragment.FragmentMetadata`` and the parts it shows: ``DeletionFile``,
``RowIdMeta`` (a fragment's stable row ids) and ``RowDatasetVersionMeta`` (the version each row
was created in / last updated in).

Why a module of its own: these wrap one ``DataFragment`` message for users (attributes,
``to_json`` / ``from_json`` in pylance's exact dictionary form, pickling), which distributed
writers (Ray, Daft, Spark) pass between processes and between the two libraries, apart from the
write and commit calls in ``distributed``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from lance_fw._proto import table_pb2
from lance_fw.errors import InvalidArgumentError, InvalidArgumentRangeError, UnsupportedFeatureError
from lance_fw.table.deletion import ARROW_ARRAY, BITMAP
from lance_fw.table.paths import DELETIONS_DIR

#: ``DeletionFile.file_type`` as pylance names it, and the extension of such a file
_DELETION_TYPES = {ARROW_ARRAY: "array", BITMAP: "bitmap"}
_DELETION_EXTENSIONS = {"array": "arrow", "bitmap": "bin"}
#: The keys of pylance's JSON for an inline / external sequence: row ids say ``Inline`` and
#: ``External``, the version sequences ``inline`` and ``external`` (pylance 14's forms).
_ROW_ID_KEYS = ("Inline", "External")
_VERSION_KEYS = ("inline", "external")


def _compact(value: Any) -> str:
    """JSON text as pylance's ``json()`` methods write it (no spaces)."""
    return json.dumps(value, separators=(",", ":"))


@dataclass
class DeletionFile:
    """pylance's ``lance.fragment.DeletionFile``: which file holds a fragment's deleted rows."""

    read_version: int
    id: int
    file_type: str
    num_deleted_rows: int
    base_id: int | None

    def __post_init__(self) -> None:
        """pylance's checks at construction: a known file type, and unsigned numbers."""
        if self.file_type not in _DELETION_EXTENSIONS:
            raise InvalidArgumentError(
                f"file_type must be either 'array' or 'bitmap', got {self.file_type!r}"
            )
        for name in ("read_version", "id", "num_deleted_rows", "base_id"):
            value = getattr(self, name)
            if isinstance(value, int) and value < 0:
                raise InvalidArgumentRangeError(
                    f"DeletionFile.{name}: can't convert negative int to unsigned"
                )

    def asdict(self) -> dict:
        return asdict(self)

    def json(self) -> str:
        return _compact(self.asdict())

    @staticmethod
    def from_json(text: str) -> DeletionFile:
        try:
            fields = json.loads(text)
            return DeletionFile(
                fields["read_version"],
                fields["id"],
                fields["file_type"],
                fields["num_deleted_rows"],
                fields.get("base_id"),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise InvalidArgumentError(
                f"Could not load DeletionFile due to error: missing or bad {exc}"
            ) from None

    def path(self, fragment_id: int, base_uri: str | None = None) -> str:
        """The file's path: relative to the dataset (``_deletions/...``), or under ``base_uri``
        (as an object store path, without leading or trailing slashes, as pylance gives it)."""
        name = f"{DELETIONS_DIR}/{fragment_id}-{self.read_version}-{self.id}.{_DELETION_EXTENSIONS[self.file_type]}"
        return name if base_uri is None else f"{base_uri.strip('/')}/{name}"

    def __repr__(self) -> str:
        return f"DeletionFile(type={self.file_type!r}, num_deleted_rows={self.num_deleted_rows})"

    @classmethod
    def of(cls, message: table_pb2.DeletionFile) -> DeletionFile:
        return cls(
            message.read_version,
            message.id,
            _DELETION_TYPES[message.file_type],
            message.num_deleted_rows,
            message.base_id if message.HasField("base_id") else None,
        )

    def to_message(self) -> table_pb2.DeletionFile:
        kinds = {v: k for k, v in _DELETION_TYPES.items()}
        if self.file_type not in kinds:
            raise InvalidArgumentError(
                f"DeletionFile.file_type must be 'array' or 'bitmap', not {self.file_type!r}"
            )
        return table_pb2.DeletionFile(
            file_type=kinds[self.file_type],
            read_version=self.read_version,
            id=self.id,
            num_deleted_rows=self.num_deleted_rows,
        )


class _Sequence:
    """A sequence stored inline (protobuf bytes) or in an external file (path, offset, size), as
    the manifest keeps it; ``_KEYS`` are the JSON keys pylance writes for the two forms."""

    _KEYS: tuple[str, str] = _ROW_ID_KEYS

    def __init__(self, inline: bytes | None = None, external: table_pb2.ExternalFile | None = None) -> None:
        self.inline, self.external = inline, external

    def asdict(self) -> dict:
        if self.external is not None:
            ext = self.external
            return {self._KEYS[1]: {"path": ext.path, "offset": ext.offset, "size": ext.size}}
        return {self._KEYS[0]: list(self.inline or b"")}

    def json(self) -> str:
        return _compact(self.asdict())

    @classmethod
    def from_dict(cls, data: dict) -> Any:
        inline, external = cls._KEYS
        if set(data) == {inline}:
            return cls(inline=bytes(data[inline]))
        if set(data) == {external}:
            return cls(external=table_pb2.ExternalFile(**data[external]))
        raise InvalidArgumentError(f"{cls.__name__}: expected {inline!r} or {external!r}, got {sorted(data)}")

    @classmethod
    def from_json(cls, text: str) -> Any:
        return cls.from_dict(json.loads(text))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, _Sequence) and self.asdict() == other.asdict()

    __hash__ = None  # type: ignore[assignment]  # mutable, like pylance's

    @classmethod
    def of(cls, frag: table_pb2.DataFragment, oneof: str) -> Any:
        """The sequence a fragment holds in ``oneof`` (its inline or external member), or None."""
        which = frag.WhichOneof(oneof)
        if which is None:
            return None
        value = getattr(frag, which)
        return cls(external=value) if which.startswith("external") else cls(inline=value)

    def store(self, frag: table_pb2.DataFragment, inline_name: str, external_name: str) -> None:
        if self.external is not None:
            getattr(frag, external_name).CopyFrom(self.external)
        else:
            setattr(frag, inline_name, self.inline or b"")


class RowIdMeta(_Sequence):
    """pylance's ``lance.fragment.RowIdMeta``: a fragment's stable row ids (``{"Inline": [...]}``)."""


class RowDatasetVersionMeta(_Sequence):
    """pylance's ``lance.fragment.RowDatasetVersionMeta``: per row, the dataset version it was
    created in or last updated in (``{"inline": [...]}``)."""

    _KEYS = _VERSION_KEYS


#: ``DataFragment`` oneofs -> (their inline member, their external member), for each sequence
_ROW_IDS = ("row_id_sequence", "inline_row_ids", "external_row_ids")
_CREATED = ("created_at_version_sequence", "inline_created_at_versions", "external_created_at_versions")
_UPDATED = (
    "last_updated_at_version_sequence",
    "inline_last_updated_at_versions",
    "external_last_updated_at_versions",
)


class FragmentMetadata:
    """One fragment's metadata (a ``DataFragment`` message), picklable and JSON-able, with
    pylance's attributes (``files`` are the messages, which have ``DataFile``'s attributes).

    ``pending``: a fragment whose data file is still being written (what a ``progress`` tracker's
    ``begin`` gets): its row count and file sizes are unknown, ``None`` as in pylance."""

    def __init__(self, message: table_pb2.DataFragment, pending: bool = False) -> None:
        self.message, self.pending = message, pending

    @property
    def id(self) -> int:
        return self.message.id

    @property
    def physical_rows(self) -> int | None:
        return None if self.pending else self.message.physical_rows

    @property
    def files(self) -> list:
        return list(self.message.files)

    def data_files(self) -> list:
        warnings.warn(
            "FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning, stacklevel=2
        )
        return self.files

    @property
    def deletion_file(self) -> DeletionFile | None:
        return DeletionFile.of(self.message.deletion_file) if self.message.HasField("deletion_file") else None

    @property
    def num_deletions(self) -> int:
        return self.message.deletion_file.num_deleted_rows if self.message.HasField("deletion_file") else 0

    @property
    def num_rows(self) -> int:
        return (self.physical_rows or 0) - self.num_deletions

    @property
    def row_id_meta(self) -> RowIdMeta | None:
        return RowIdMeta.of(self.message, _ROW_IDS[0])

    @property
    def created_at_version_meta(self) -> RowDatasetVersionMeta | None:
        return RowDatasetVersionMeta.of(self.message, _CREATED[0])

    @property
    def last_updated_at_version_meta(self) -> RowDatasetVersionMeta | None:
        return RowDatasetVersionMeta.of(self.message, _UPDATED[0])

    @property
    def overlays(self) -> list:
        return []  # data overlay files: the manifests lance_fw reads and writes have none

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FragmentMetadata)
            and other.message == self.message
            and other.pending == self.pending
        )

    __hash__ = None  # type: ignore[assignment]  # mutable (a dataclass in pylance): not hashable

    def __reduce__(self) -> tuple[Callable[[bytes, bool], FragmentMetadata], tuple[bytes, bool]]:
        return _from_bytes, (self.message.SerializeToString(), self.pending)

    def __repr__(self) -> str:
        return (
            f"FragmentMetadata(id={self.id}, files={[f.path for f in self.files]}, "
            f"physical_rows={self.physical_rows}, deletion_file={self.deletion_file!r})"
        )

    def to_json(self) -> dict:
        """pylance's dictionary form (``json.dumps`` it to send it anywhere)."""
        m = self.message
        deletion = self.deletion_file
        files = [
            {
                "fields": list(f.fields),
                "column_indices": list(f.column_indices),
                "file_major_version": f.file_major_version,
                "file_minor_version": f.file_minor_version,
                "file_size_bytes": f.file_size_bytes or None,
                "base_id": f.base_id or None,
                "path": f.path,
            }
            for f in m.files
        ]
        sequences = (self.row_id_meta, self.created_at_version_meta, self.last_updated_at_version_meta)
        row_ids, created, updated = (s.asdict() if s is not None else None for s in sequences)
        return {  # pylance's key order: the JSON text (progress files) is the same
            "id": m.id,
            "files": files,
            "overlays": [],
            "physical_rows": None if self.pending else m.physical_rows,
            "deletion_file": deletion.asdict() if deletion is not None else None,
            "row_id_meta": row_ids,
            "created_at_version_meta": created,
            "last_updated_at_version_meta": updated,
        }

    @classmethod
    def from_json(cls, data: str | dict) -> FragmentMetadata:
        """From ``to_json()``'s dictionary or its JSON text (lance_fw's or pylance's)."""
        try:
            d = json.loads(data) if isinstance(data, (str, bytes)) else dict(data)
            rows = d["physical_rows"]
            m = table_pb2.DataFragment(id=int(d.get("id") or 0), physical_rows=int(rows or 0))
            for f in d["files"]:
                m.files.add(
                    path=f["path"],
                    fields=f["fields"],
                    column_indices=f.get("column_indices", []),
                    file_major_version=f.get("file_major_version", 0),
                    file_minor_version=f.get("file_minor_version", 0),
                    file_size_bytes=f.get("file_size_bytes") or 0,
                )
            if d.get("deletion_file"):
                x = d["deletion_file"]
                m.deletion_file.CopyFrom(
                    DeletionFile(
                        x["read_version"],
                        x["id"],
                        x.get("file_type", "array"),
                        x["num_deleted_rows"],
                        x.get("base_id"),
                    ).to_message()
                )
            for key, kind, (_, inline, external) in (
                ("row_id_meta", RowIdMeta, _ROW_IDS),
                ("created_at_version_meta", RowDatasetVersionMeta, _CREATED),
                ("last_updated_at_version_meta", RowDatasetVersionMeta, _UPDATED),
            ):
                if d.get(key):
                    kind.from_dict(d[key]).store(m, inline, external)
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
            raise InvalidArgumentError(f"not a fragment's metadata: {exc!r}") from None
        if d.get("overlays"):
            raise UnsupportedFeatureError("FragmentMetadata with data overlay files is not supported yet")
        return cls(m, pending=rows is None)


def _from_bytes(raw: bytes, pending: bool = False) -> FragmentMetadata:
    return FragmentMetadata(table_pb2.DataFragment.FromString(raw), pending)


__all__ = ["DeletionFile", "FragmentMetadata", "RowDatasetVersionMeta", "RowIdMeta"]
