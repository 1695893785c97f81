"""``LanceDataset``'s config and metadata methods (pylance's names), kept out of ``dataset.py``.

Each mutating call is one ``UpdateConfig`` commit (see ``lance_fw.table.metadata``) and moves the
dataset object to the version it committed, as pylance does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any


def _deprecated(name: str, instead: str) -> None:
    """pylance's ``DeprecationWarning`` text for a method kept for old callers, aimed at their call."""
    warnings.warn(f"{name} is deprecated. Use {instead} instead.", DeprecationWarning, stacklevel=3)


class MetadataMethods:
    """Config, table, schema and field metadata of a ``LanceDataset`` version."""

    _snapshot: Any
    _manifest: Any

    def _move_to(self, version: int | None) -> None:  # provided by LanceDataset
        raise NotImplementedError

    def config(self) -> dict[str, str]:
        """The manifest's config map."""
        return dict(self._manifest.config)

    def update_config(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """Set (str) / delete (None) config keys, or replace the whole config; returns the new config."""
        from lance_fw.table.metadata import update_config

        self._move_to(update_config(self._snapshot, values, replace))
        return self.config()

    def delete_config_keys(self, keys: list[str]) -> None:
        """Delete config keys (absent ones are ignored; a version is committed even for none)."""
        from lance_fw.table.metadata import delete_config_keys

        self._move_to(delete_config_keys(self._snapshot, keys))

    @property
    def metadata(self) -> dict[str, str]:
        """The table metadata (the manifest's ``table_metadata`` map)."""
        return dict(self._manifest.table_metadata)

    def update_metadata(self, values: dict[str, str | None], *, replace: bool = False) -> dict[str, str]:
        """As ``update_config``, for the table metadata; returns the new table metadata."""
        from lance_fw.table.metadata import update_table_metadata

        self._move_to(update_table_metadata(self._snapshot, values, replace))
        return self.metadata

    @property
    def schema_metadata(self) -> dict[str, str]:
        """The schema metadata as strings."""
        from lance_fw.table.metadata import schema_metadata

        return schema_metadata(self._snapshot)

    def update_schema_metadata(
        self, values: Mapping[str, str | None], *, replace: bool = False
    ) -> dict[str, str]:
        """As ``update_config``, for the schema metadata; returns the new schema metadata."""
        from lance_fw.table.metadata import update_schema_metadata

        self._move_to(update_schema_metadata(self._snapshot, values, replace))
        return self.schema_metadata

    def replace_schema_metadata(self, new_metadata: dict[str, str]) -> None:
        """Deprecated in pylance (as here): ``update_schema_metadata(new_metadata, replace=True)``."""
        _deprecated("replace_schema_metadata", "update_schema_metadata(metadata, replace=True)")
        self.update_schema_metadata(new_metadata, replace=True)

    def update_field_metadata(
        self, field_updates: Mapping[str, Mapping[str, str | None]], *, replace: bool = False
    ) -> None:
        """Field metadata by field path (``"struct.child"``), each field as ``update_config``."""
        from lance_fw.table.metadata import update_field_metadata

        self._move_to(update_field_metadata(self._snapshot, field_updates, replace))

    def replace_field_metadata(self, field_name: str, new_metadata: dict[str, str]) -> None:
        """Deprecated in pylance (as here): ``update_field_metadata({field_name: md}, replace=True)``."""
        _deprecated("replace_field_metadata", "update_field_metadata with field paths and replace=True")
        self.update_field_metadata({field_name: new_metadata}, replace=True)


__all__ = ["MetadataMethods"]
