"""Index type plugins as the kernel uses them: every registered type checked against the contract
once per registry state, and looked up by pylance's ``index_type`` argument.

Why apart from ``table.indices``: the index planner, listing, full-text search and the vector
index code all look types up; the checks and lookups are one idea, the building and committing
of indices another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from lance_fw.errors import (
    IndexContractError,
    InvalidArgumentError,
    PluginConflictError,
    UnknownIndexTypeError,
)
from lance_fw.interfaces import ScalarIndexType
from lance_fw.plugin_manager import owner, registry

_HOOK = "lance_index_types"


def check_index_type(kind: Any, name: object, who: str, noun: str) -> None:
    """What the kernel needs of any index type (scalar or vector) before it uses one.

    Raises: ``IndexContractError`` naming the plugin ``who`` and the missing attribute or method."""
    for attr in ("name", "display_name", "type_url"):
        if not isinstance(getattr(kind, attr, None), str):
            raise IndexContractError(f"{who}: {noun} {name!r} has no string {attr!r}")
    if not isinstance(getattr(kind, "index_version", None), int):
        raise IndexContractError(f"{who}: {noun} {name!r} has no integer 'index_version'")
    for method in ("details", "check", "train", "load"):
        if not callable(getattr(kind, method, None)):
            raise IndexContractError(f"{who}: {noun} {name!r} has no method {method!r}")


def index_types() -> dict[str, ScalarIndexType]:
    """Every registered index type by upper-case name, each checked against the contract.

    Raises: ``IndexContractError`` naming the plugin whose value lacks what the kernel needs;
    ``PluginConflictError`` when two names claim one ``type_url``.
    """
    registered = registry.index_types
    if _CHECKED_TYPES is not None and _CHECKED_TYPES[0] is registered:
        return _CHECKED_TYPES[1]
    out: dict[str, ScalarIndexType] = {}
    by_url: dict[str, str] = {}
    for name, kind in registered.items():
        who = owner(_HOOK, name) or "an index plugin"
        check_index_type(kind, name, who, "index type")
        if kind.name.upper() != str(name).upper():
            raise IndexContractError(f"{who}: index type registered as {name!r} calls itself {kind.name!r}")
        if kind.type_url in by_url:
            raise PluginConflictError(
                f"index types {by_url[kind.type_url]!r} ({owner(_HOOK, by_url[kind.type_url])}) and "
                f"{name!r} ({who}) both claim index details {kind.type_url!r}"
            )
        by_url[kind.type_url] = str(name)
        out[str(name).upper()] = kind
    _remember_checked(registered, out)
    return out


#: The last registry mapping ``index_types`` checked, and its answer: every scan plans with the
#: index types, and the registry hands out the same mapping until a plugin is (un)registered.
#: Holding the mapping keeps its identity from being reused by another.
_CHECKED_TYPES: tuple[Mapping[str, Any], dict[str, ScalarIndexType]] | None = None


def _remember_checked(registered: Mapping[str, Any], checked: dict[str, ScalarIndexType]) -> None:
    global _CHECKED_TYPES
    _CHECKED_TYPES = (registered, checked)


K = TypeVar("K")


def plugin_named(types: Mapping[str, K], index_type: object, what: str = "index type") -> K:
    """The plugin for pylance's ``index_type`` argument (any case) among ``types`` (by upper-case
    name); ``what`` names the family in the error ("index type", "vector index type").

    Raises:
        InvalidArgumentError: ``index_type`` is not a string.
        UnsupportedFeatureError: no installed plugin has that name (the error lists those that are).
    """
    if not isinstance(index_type, str):
        raise InvalidArgumentError(f"index_type must be a string, got {index_type!r}")
    kind = types.get(index_type.upper())
    if kind is None:
        raise UnknownIndexTypeError(
            f"{what} {index_type!r} is not supported by lance_fw "
            f"(installed: {', '.join(sorted(types)) or 'none'})"
        )
    return kind


def index_type_named(index_type: str) -> ScalarIndexType:
    """The scalar index plugin for pylance's ``index_type`` argument (any case)."""
    return plugin_named(index_types(), index_type)
