"""pylance's ``lance.fragment`` records beyond ``FragmentMetadata``: ``DeletionFile`` (works) and
the row-id / session objects lance_fw refuses by name.

``DeletionFile`` describes one fragment's deletion file: which version wrote it, its id, its kind
(an Arrow ``array`` of offsets or a roaring ``bitmap``) and how many rows it deletes; its ``path``
is the one lance_fw's own deletion files use (``_deletions/{fragment}-{read_version}-{id}.{ext}``).

Refused: ``RowIdMeta``, ``RowIdSequence`` and ``RowDatasetVersionMeta`` (hand-built stable row id
sequences and row version metadata on ``FragmentMetadata``, which lance_fw's ``FragmentMetadata``
does not take), and ``FragmentSession`` (``LanceFragment.open_session`` is refused).
"""

from __future__ import annotations

import json
from typing import Any

from lance_fw._util.refusals import refused_function

#: The module pylance users import these from
_MODULE = "lance.fragment"
#: Deletion file kinds and the extension each is stored with
DELETION_FILE_EXTENSIONS = {"array": "arrow", "bitmap": "bin"}
#: The directory deletion files live in, under the dataset root
DELETIONS_DIR = "_deletions"
#: The fields of a deletion file's dict / JSON form, in pylance's order
_FIELDS = ("read_version", "id", "file_type", "num_deleted_rows", "base_id")
#: Largest value of the unsigned 64-bit counters pylance stores
_U64_MAX = (1 << 64) - 1
#: Why the row-id records are refused
ROW_ID_META = (
    "hand-built stable row id sequences and row version metadata on FragmentMetadata are not "
    "implemented (lance_fw assigns stable row ids itself when it writes)"
)
FRAGMENT_SESSION = "fragment sessions are not implemented; use LanceFragment.take or scanner"


def _unsigned(name: str, value: Any) -> int:
    number = int(value)
    if number < 0 or number > _U64_MAX:
        raise OverflowError(f"{name}: can't convert {number} to an unsigned 64-bit integer")
    return number


class DeletionFile:
    """One fragment's deletion file, as a record (pylance's ``DeletionFile``)."""

    __slots__ = ("base_id", "file_type", "id", "num_deleted_rows", "read_version")

    def __init__(
        self, read_version: int, id: int, file_type: str, num_deleted_rows: int, base_id: int | None
    ) -> None:
        if file_type not in DELETION_FILE_EXTENSIONS:
            raise ValueError(f"file_type must be either 'array' or 'bitmap', got {file_type!r}")
        self.read_version = _unsigned("read_version", read_version)
        self.id = _unsigned("id", id)
        self.file_type = file_type
        self.num_deleted_rows = _unsigned("num_deleted_rows", num_deleted_rows)
        self.base_id = None if base_id is None else _unsigned("base_id", base_id)

    def asdict(self) -> dict[str, Any]:
        """The fields as a dict (pylance's keys and order)."""
        return {name: getattr(self, name) for name in _FIELDS}

    def json(self) -> str:
        """The fields as compact JSON (pylance's text)."""
        return json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(json_str: str) -> DeletionFile:
        """The deletion file a ``json()`` text describes (``base_id`` may be absent).

        Raises:
            ValueError: text that is not such JSON (a missing field, an unknown file type).
        """
        try:
            data = json.loads(json_str)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object")
            missing = [k for k in _FIELDS[:4] if k not in data]
            if missing:
                raise ValueError(f"missing field `{missing[0]}`")
            return DeletionFile(
                data["read_version"],
                data["id"],
                data["file_type"],
                data["num_deleted_rows"],
                data.get("base_id"),
            )
        except (ValueError, TypeError) as error:
            raise ValueError(f"Could not load DeletionFile due to error: {error}") from error

    def path(self, fragment_id: int, base_uri: str | None = None) -> str:
        """Where this file lives for fragment ``fragment_id``, relative to the dataset root, or
        under ``base_uri`` (a plain path; leading and trailing ``/`` dropped, as pylance's).

        Raises:
            ValueError: a ``base_uri`` with an empty path segment (``s3://...``, ``a//b``).
        """
        name = f"{DELETIONS_DIR}/{fragment_id}-{self.read_version}-{self.id}.{DELETION_FILE_EXTENSIONS[self.file_type]}"
        if base_uri is None:
            return name
        base = base_uri.strip("/")
        if "" in base.split("/") and base:
            raise ValueError(f'Invalid base URI: {base_uri}: Path "{base_uri}" contained empty path segment')
        return f"{base}/{name}" if base else name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionFile):
            return NotImplemented
        return self.asdict() == other.asdict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DeletionFile(type={self.file_type!r}, num_deleted_rows={self.num_deleted_rows})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (DeletionFile, tuple(getattr(self, name) for name in _FIELDS))


RowIdMeta = refused_function(_MODULE, "RowIdMeta", ROW_ID_META)
RowIdSequence = refused_function(_MODULE, "RowIdSequence", ROW_ID_META)
RowDatasetVersionMeta = refused_function(_MODULE, "RowDatasetVersionMeta", ROW_ID_META)
FragmentSession = refused_function(_MODULE, "FragmentSession", FRAGMENT_SESSION)

__all__ = ["DeletionFile", "FragmentSession", "RowDatasetVersionMeta", "RowIdMeta", "RowIdSequence"]
