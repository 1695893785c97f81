"""The key/value table functions of DuckDB's ``lance`` extension, over pylance's metadata API:

- ``lance_config(ds)``, ``lance_set_config(ds, key, value)``, ``lance_unset_config(ds, key)``;
- ``lance_table_metadata`` / ``lance_set_table_metadata`` / ``lance_unset_table_metadata``;
- ``lance_schema_metadata`` / ``lance_set_schema_metadata`` / ``lance_unset_schema_metadata``;
- ``lance_column_metadata(ds, column)`` / ``lance_set_column_metadata(ds, column, key, value)`` /
  ``lance_unset_column_metadata(ds, column, key)``;
- ``lance_indices(ds)``: one row per index, its name and the columns it covers.

Listings return ``Key``/``Value`` rows (sorted by key); the setters make one commit each and return
``Count`` = 1, as the extension's do. ``COMMENT ON TABLE`` / ``COMMENT ON COLUMN`` store the key
``comment`` in the table / column metadata, where the extension keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb.table_functions import COUNT_COLUMNS, DONE, KV_COLUMNS, TableFunction, register
from lance_fw.errors import InvalidArgumentError

#: The metadata key ``COMMENT ON`` writes.
COMMENT_KEY = "comment"


def _key(value: Any, what: str = "key") -> str:
    if value is None or str(value) == "":
        raise InvalidArgumentError(f"{what} cannot be NULL or empty")
    return str(value)


def _rows(mapping: dict[Any, Any]) -> list[tuple[Any, ...]]:
    def text(v: Any) -> str:
        return v.decode() if isinstance(v, bytes) else str(v)

    return sorted((text(k), text(v)) for k, v in mapping.items())


def field_metadata(ds: LanceDataset, column: str) -> dict[bytes, bytes]:
    """The Arrow metadata of a column (``a`` or a struct path ``a.b``)."""
    parts = column.split(".")
    try:
        current: pa.Field = ds.schema.field(parts[0])
        for part in parts[1:]:
            if not pa.types.is_struct(current.type):
                raise KeyError(part)
            current = current.type.field(part)
    except KeyError:
        raise InvalidArgumentError(f"no column {column!r} in {ds.uri}") from None
    return dict(current.metadata or {})


def set_comment(ds: LanceDataset, column: str | None, text: str | None) -> None:
    """``COMMENT ON TABLE`` (``column`` None) / ``COMMENT ON COLUMN``; a NULL comment removes it."""
    if column is None:
        ds.update_metadata({COMMENT_KEY: text})
    else:
        field_metadata(ds, column)  # names a missing column before anything is written
        ds.update_field_metadata({column: {COMMENT_KEY: text}})


def _done(_result: object) -> list[tuple[Any, ...]]:
    """What a setter reports once its commit is made."""
    return DONE


def _value(value: Any) -> str | None:
    """A value as the extension passes it (VARCHAR); NULL removes the key."""
    return None if value is None else str(value)


#: What a family of key/value functions reads and updates: the map of the dataset, or with a
#: column name (``lance_*column_metadata``) that column's.
Read = Callable[[LanceDataset, str | None], dict[Any, Any]]
Update = Callable[[LanceDataset, str | None, dict[str, str | None]], object]


def _key_value_functions(name: str, per_column: bool, read: Read, update: Update) -> list[TableFunction]:
    """``lance_<name>`` (list), ``lance_set_<name>`` and ``lance_unset_<name>`` (one commit each; a
    NULL value removes the key, as unsetting it does) for one metadata map; ``per_column``: the
    first argument names the column, the key and value follow."""
    scope = int(per_column)

    def column(args: list[Any]) -> str | None:
        return _key(args[0], "column name") if per_column else None

    return [
        TableFunction(f"lance_{name}", (scope, scope), KV_COLUMNS, lambda ds, a: _rows(read(ds, column(a)))),
        TableFunction(
            f"lance_set_{name}",
            (scope + 2, scope + 2),
            COUNT_COLUMNS,
            lambda ds, a: _done(update(ds, column(a), {_key(a[scope]): _value(a[scope + 1])})),
        ),
        TableFunction(
            f"lance_unset_{name}",
            (scope + 1, scope + 1),
            COUNT_COLUMNS,
            lambda ds, a: _done(update(ds, column(a), {_key(a[scope]): None})),
        ),
    ]


def _indices(ds: LanceDataset) -> list[tuple[Any, ...]]:
    return sorted((d.name, ",".join(d.field_names)) for d in ds.describe_indices())


_FUNCTIONS = [
    *_key_value_functions("config", False, lambda ds, _: ds.config(), lambda ds, _, kv: ds.update_config(kv)),
    *_key_value_functions(
        "table_metadata", False, lambda ds, _: ds.metadata, lambda ds, _, kv: ds.update_metadata(kv)
    ),
    *_key_value_functions(
        "schema_metadata",
        False,
        lambda ds, _: ds.schema_metadata,
        lambda ds, _, kv: ds.update_schema_metadata(kv),
    ),
    *_key_value_functions(
        "column_metadata",
        True,
        lambda ds, column: field_metadata(ds, str(column)),
        lambda ds, column, kv: ds.update_field_metadata({str(column): kv}),
    ),
    TableFunction("lance_indices", (0, 0), KV_COLUMNS, lambda ds, a: _indices(ds)),
]

for _function in _FUNCTIONS:
    register(_function)
