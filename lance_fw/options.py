"""pylance options lance_fw names but does not implement.

Every public function takes pylance's parameters by name (no ``**kwargs``: a misspelt or unknown
option is a ``TypeError``). An option lance_fw cannot honour is accepted only at its default; any
other value raises ``UnsupportedFeatureError`` naming it, so it is never silently ignored. Options
that only tune performance (read-ahead, caches, thread counts) cannot change a result and are
accepted as they are.
"""

from __future__ import annotations

from typing import Any

from lance_fw.errors import UnsupportedFeatureError


def refuse(function: str, given: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
    """Raise for the first option in ``given`` set to something other than None or its default
    (``defaults[name]``, None when absent)."""
    defaults = defaults or {}
    for name, value in given.items():
        if value is not None and not _same(value, defaults.get(name)):
            raise UnsupportedFeatureError(f"{function}: option {name}={value!r} is not supported")


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:
        return False
