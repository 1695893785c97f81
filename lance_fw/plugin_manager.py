"""The pluggy manager: loads every plugin from the ``lance_fw`` entry-point group.

Built-in plugins are not special: they are listed in ``pyproject.toml`` under the same group a
third-party package uses. Set ``LANCE_FW_TRACE=1`` to print every hook call to stderr.
"""

from __future__ import annotations

import os
import sys
import threading
from functools import cached_property
from typing import Any

import pluggy

from lance_fw import hookspecs

ENTRY_POINT_GROUP = "lance_fw"

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide manager, created on first use."""
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
            pm.add_hookspecs(hookspecs)
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            if os.environ.get("LANCE_FW_TRACE"):
                pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
                pm.enable_tracing()
            _manager = pm
        return _manager


def register(plugin: object, name: str | None = None) -> None:
    """Register a plugin object at run time (tests, notebooks); caches are rebuilt."""
    get_plugin_manager().register(plugin, name=name)
    registry.reset()


def unregister(name: str) -> None:
    get_plugin_manager().unregister(name=name)
    registry.reset()


class _Registry:
    """Merged answers of the collecting hooks, computed once (later plugins override earlier)."""

    def reset(self) -> None:
        for key in ("page_decoders", "kind_decoders", "deletion_codecs", "index_types"):
            self.__dict__.pop(key, None)

    @staticmethod
    def _merge(results: list[dict]) -> dict:
        merged: dict = {}
        for result in reversed(results):  # pluggy returns the newest plugin first
            merged.update(result or {})
        return merged

    @cached_property
    def page_decoders(self) -> dict[str, Any]:
        return self._merge(get_plugin_manager().hook.lance_page_decoders())

    @cached_property
    def kind_decoders(self) -> dict[tuple[str, str], Any]:
        return self._merge(get_plugin_manager().hook.lance_kind_decoders())

    @cached_property
    def deletion_codecs(self) -> dict[int, Any]:
        return self._merge(get_plugin_manager().hook.lance_deletion_codecs())

    @cached_property
    def index_types(self) -> dict[str, Any]:
        """Index types by name; none are built in yet (BTREE/BITMAP/IVF_PQ come as plugins)."""
        return self._merge(get_plugin_manager().hook.lance_index_types())


registry = _Registry()


def plugins() -> list[dict[str, Any]]:
    """What each loaded plugin provides: its name, distribution and the hooks it implements."""
    pm = get_plugin_manager()
    dists = {id(p): d for p, d in pm.list_plugin_distinfo()}
    out = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin)
        dist = dists.get(id(plugin))
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or []))
        out.append({
            "name": name,
            "distribution": f"{dist.project_name} {dist.version}" if dist else None,
            "hooks": hooks,
        })
    return sorted(out, key=lambda p: p["name"])
