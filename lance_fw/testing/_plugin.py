"""Registering the plugin under test for one test class (shared by the three conformance bases)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest


class PluginUnderTest:
    """Mixin: set ``plugin`` to a module or object with hook implementations and it is registered
    while the class's tests run. Leave it None when the plugin is installed (an entry point of the
    ``lance_fw`` group): then it is loaded already, and processes the kit spawns load it too, which
    a plugin registered here at run time is not (the multi-process tests need it installed)."""

    #: Plugin object to register for the class (None: it is installed and loaded already).
    plugin: ClassVar[Any] = None

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def registered_plugin(cls) -> Iterator[Any]:
        from lance_fw.plugin_manager import get_plugin_manager, register, unregister

        plugin = cls.plugin
        if plugin is None or get_plugin_manager().is_registered(plugin):
            yield plugin
            return
        name = f"conformance-{cls.__module__}.{cls.__qualname__}"
        register(plugin, name=name)
        try:
            yield plugin
        finally:
            unregister(name)
