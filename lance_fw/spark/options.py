"""Parsing the string options Spark hands a data source (``.option(key, value)``, case-insensitive)."""

from __future__ import annotations

import json
from typing import Mapping

from lance_fw.errors import InvalidArgumentError


def dataset_uri(options: Mapping[str, str]) -> str:
    """``path`` (or ``uri``) with Spark's ``file:`` prefix removed (catalog tables add it)."""
    uri = options.get("path") or options.get("uri")
    if not uri:
        raise InvalidArgumentError("the lance data source needs a path: .load(path) / .save(path) or "
                                   ".option('path', ...)")
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    elif uri.startswith("file:"):
        uri = uri[len("file:"):]
    return uri.rstrip("/")


def int_option(options: Mapping[str, str], key: str, default: int | None = None) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be an integer, got {value!r}") from None
    if number < 0:
        raise InvalidArgumentError(f"option {key!r} must not be negative, got {value!r}")
    return number


def bool_option(options: Mapping[str, str], key: str) -> bool:
    value = str(options.get(key, "false")).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise InvalidArgumentError(f"option {key!r} must be true or false, got {value!r}")
    return value in ("true", "1", "yes")


def columns_option(options: Mapping[str, str]) -> list[str] | None:
    """``columns`` as a JSON list or a comma-separated string."""
    value = options.get("columns")
    if not value:
        return None
    if value.lstrip().startswith("["):
        try:
            names = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"option 'columns' is not a JSON list: {exc}") from None
    else:
        names = [n.strip() for n in value.split(",")]
    if not all(isinstance(n, str) and n for n in names):
        raise InvalidArgumentError(f"option 'columns' must name columns, got {value!r}")
    return names


def storage_options(options: Mapping[str, str]) -> dict | None:
    """``storage_options`` as JSON (credentials, endpoints) for object stores."""
    value = options.get("storage_options")
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"option 'storage_options' is not a JSON object: {exc}") from None
    if not isinstance(parsed, dict):
        raise InvalidArgumentError("option 'storage_options' must be a JSON object")
    return parsed
