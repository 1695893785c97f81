"""What the conformance bases share: registering the plugin under test for one test class (all
three), and the storage options and process reach of the store under test (storage, commit)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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


class StoreUnderTest(PluginUnderTest):
    """Mixin of the storage and commit-handler bases: the options every open passes, and whether
    other processes see the store."""

    #: ``storage_options`` every open passes (keys the plugins declare in ``lance_storage_options``;
    #: commit handlers receive them too); override the ``options`` fixture instead when they depend
    #: on another fixture.
    storage_options: ClassVar[Mapping[str, Any]] = {}
    #: Whether other processes see the store (False for process-local ones such as ``memory://``:
    #: the multi-process tests are skipped).
    multiprocess: ClassVar[bool] = True

    @pytest.fixture
    def options(self) -> dict[str, Any]:
        """The ``storage_options`` of every open (default: ``storage_options``)."""
        return dict(self.storage_options)
