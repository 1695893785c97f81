"""The typed dictionaries pylance's ``lance.dataset`` declares for what its calls return or take
(``ds.delete`` -> ``DeleteResult``, ``ds.versions()`` -> ``Version`` ...), with pylance's names and
keys, so code annotated against pylance type-checks against lance_fw.

Why TypedDicts: pylance returns plain dicts there, and so does lance_fw; these only name the keys.
"""

from __future__ import annotations

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


__all__ = [
    "AlterColumn",
    "AutoCleanupConfig",
    "DatasetStats",
    "DeleteResult",
    "ExecuteResult",
    "Tag",
    "UpdateResult",
    "Version",
    "VersionRef",
]
