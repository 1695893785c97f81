"""The typed dictionaries pylance's ``lance.dataset`` declares for what its calls return or take
(``ds.delete`` -> ``DeleteResult``, ``ds.versions()`` -> ``Version`` ...), with pylance's names and
keys, so code annotated against pylance type-checks against lance_fw; and the two dataclasses of
``ds.stats.data_stats()``.

Why TypedDicts: pylance returns plain dicts there, and so does lance_fw; these only name the keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

import pyarrow as pa


class Tag(TypedDict):
    branch: str | None
    version: int
    created_at: datetime | None
    updated_at: datetime | None
    manifest_size: int
    metadata: dict[str, str]


class Version(TypedDict):
    version: int
    timestamp: int | datetime
    metadata: dict[str, str]


class VersionRef(TypedDict):
    version: int


class DatasetStats(TypedDict):
    num_deleted_rows: int
    num_fragments: int
    num_small_files: int


class UpdateResult(TypedDict):
    num_rows_updated: int


class DeleteResult(TypedDict):
    num_deleted_rows: int


class ExecuteResult(TypedDict):
    num_inserted_rows: int
    num_updated_rows: int
    num_deleted_rows: int


class AutoCleanupConfig(TypedDict):
    interval: int
    older_than_seconds: int


class AlterColumn(TypedDict):
    path: str
    name: str | None
    nullable: bool | None
    data_type: pa.DataType | None


@dataclass
class FieldStatistics:
    """pylance's ``FieldStatistics``: the bytes on disk (possibly compressed) of one field's data."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """pylance's ``DataStatistics`` (``ds.stats.data_stats()``): one entry per field of the
    schema, nested ones included, in field-id pre-order."""

    fields: list[FieldStatistics]


__all__ = [
    "AlterColumn",
    "AutoCleanupConfig",
    "DataStatistics",
    "DatasetStats",
    "DeleteResult",
    "ExecuteResult",
    "FieldStatistics",
    "Tag",
    "UpdateResult",
    "Version",
    "VersionRef",
]
