"""Placeholder: the btree scalar index type (issue 13); filled in by its plugin module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_fw.hookspecs import hookimpl


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """No index type yet."""
    return {}
