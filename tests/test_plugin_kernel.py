"""The plugin kernel does not trust plugins blindly (issue 19, first step).

Every test installs REAL plugin distributions: a module plus a ``<dist>-0.1.dist-info`` with METADATA
and an ``entry_points.txt`` (group ``lance_fw``) in ``tmp_path``, put on ``sys.path``; then the manager
is reloaded. Nothing patches the registry. The ``kernel`` fixture restores the normal plugin state.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import types

import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw import plugin_manager
from lance_fw.cli import main
from lance_fw.errors import (
    PluginConflictError,
    PluginLoadError,
    StorageError,
    UnsupportedEncodingError,
)
from lance_fw.file.encoding import decode_page
from lance_fw.io.storage import resolve_storage
from lance_fw.plugin_manager import registry
from lance_fw.table.commit import resolve_commit_handler

BUILTIN_URL = "/lance.encodings.ArrayEncoding"
HEADER = "from lance_fw.hookspecs import hookimpl\n"


class Kernel:
    """Installs plugin distributions into one sys.path folder and reloads the manager."""

    def __init__(self, root, monkeypatch):
        self.root, self.monkeypatch, self.modules = root, monkeypatch, []
        monkeypatch.syspath_prepend(str(root))

    def install(self, dist: str, body: str, entry: str | None = None, module: str | None = None) -> None:
        module = module or f"lfw_test_{dist}"
        (self.root / f"{module}.py").write_text(HEADER + textwrap.dedent(body))
        info = self.root / f"{dist}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[lance_fw]\n{entry or dist} = {module}\n")
        self.modules.append(module)

    def reload(self) -> None:
        importlib.invalidate_caches()
        for module in self.modules:
            sys.modules.pop(module, None)
        plugin_manager.reload()
        plugin_manager.get_plugin_manager()  # plugins load lazily: load them now


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    k = Kernel(tmp_path, monkeypatch)
    try:
        yield k
    finally:
        monkeypatch.undo()  # sys.path and LANCE_FW_* variables first, then a clean reload
        for module in k.modules:
            sys.modules.pop(module, None)
        importlib.invalidate_caches()
        plugin_manager.reload()


def _by_name() -> dict[str, dict]:
    return {p["name"]: p for p in lance_fw.plugins()}


def _decoders(url: str) -> str:
    return textwrap.dedent(f"""
        def decode(encoding, page):
            raise NotImplementedError

        @hookimpl
        def lance_page_decoders():
            return {{{url!r}: decode}}
        """)


def _storage(scheme: str) -> str:
    """A plugin answering both scheme hooks for ``scheme`` with real (inert) Storage / CommitHandler objects."""
    return textwrap.dedent(f"""
        from lance_fw.io.storage import Storage
        from lance_fw.table.commit import CommitHandler

        class MarkStorage(Storage):
            scheme = {scheme!r}

            def open_reader(self, path):
                raise NotImplementedError

            def open_output(self, path):
                raise NotImplementedError

            def list_dir(self, path):
                return []

            def exists(self, path):
                return False

            def delete(self, path):
                pass

            def mtime(self, path):
                return None

        class MarkHandler(CommitHandler):
            def commit(self, path, data):
                raise NotImplementedError

        MARK = MarkStorage()
        HANDLER = MarkHandler(MARK)

        @hookimpl
        def lance_storage(uri, options):
            return MARK if uri.startswith({scheme!r} + "://") or ({scheme!r} == "file" and "://" not in uri) else None

        @hookimpl
        def lance_commit_handler(storage, uri):
            return HANDLER if uri.startswith({scheme!r} + "://") else None
        """)


def _table() -> pa.Table:
    return pa.table({"a": pa.array(range(5000), pa.int64()), "s": [str(i) for i in range(5000)]})


# 1. conflicts are errors

def test_same_entry_point_name_in_two_distributions_is_a_conflict(kernel):
    """pluggy skipped the second ``dup`` silently; now neither loads and both are named."""
    kernel.install("dist_one", _decoders("/one.Url"), entry="dup")
    kernel.install("dist_two", _decoders("/two.Url"), entry="dup")
    kernel.reload()
    dup = _by_name()["dup"]
    assert dup["status"] == "failed"
    assert "dist_one 0.1" in dup["error"] and "dist_two 0.1" in dup["error"]
    assert isinstance(plugin_manager.failures()[0].error, PluginConflictError)
    assert "/one.Url" not in registry.page_decoders and "/two.Url" not in registry.page_decoders


def test_two_plugins_claiming_one_type_url_conflict(kernel, capsys):
    kernel.install("fork_a", _decoders("/shared.Url"))
    kernel.install("fork_b", _decoders("/shared.Url"))
    kernel.reload()
    assert main(["plugins"]) == 0  # the listing shows the conflict instead of failing on it
    out = capsys.readouterr().out
    assert "lance_page_decoders: /shared.Url" in out and "PROBLEM: PluginConflictError" in out
    with pytest.raises(PluginConflictError, match="fork_a 0.1.*fork_b 0.1"):
        registry.page_decoders.get("/shared.Url")  # neither fork decodes it: install order never decides
    with pytest.raises(PluginConflictError, match="fork_a 0.1.*fork_b 0.1"):
        decode_page(any_pb2.Any(type_url="/shared.Url"), types.SimpleNamespace(where="f.lance column 0 page 0"))
    assert "/shared.Url" not in sorted(registry.page_decoders)


def test_a_key_conflict_fails_only_uses_of_that_key(kernel, tmp_path):
    """Two plugins claiming one type URL used to make every page decoder unavailable: every read of
    every dataset failed. Now only pages with that URL fail; reads of the rest work."""
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(), uri, data_storage_version="2.0")
    lance_fw.write_dataset(_table(), str(tmp_path / "ds21"), data_storage_version="2.1")
    kernel.install("fork_a", _decoders("/shared.Url"))
    kernel.install("fork_b", _decoders("/shared.Url"))
    kernel.reload()
    assert lance_fw.dataset(uri).to_table().equals(_table())
    assert lance_fw.dataset(str(tmp_path / "ds21")).take([0, 4999]).column("a").to_pylist() == [0, 4999]
    assert any("/shared.Url" in p for p in plugin_manager.problems())


def test_replacing_a_builtin_encoding_needs_an_override(kernel, tmp_path):
    kernel.install("shadow", _decoders(BUILTIN_URL))
    kernel.reload()
    with pytest.raises(PluginConflictError, match="'shadow' \\(shadow 0.1\\).*LANCE_FW_OVERRIDES"):
        registry.page_decoders.get(BUILTIN_URL)
    with pytest.raises(PluginConflictError):  # a read needs the decoders: never the fork silently
        lance_fw.write_dataset(_table(), str(tmp_path / "ds"), data_storage_version="2.0")
        lance_fw.dataset(str(tmp_path / "ds")).to_table()


def test_override_declaration_replaces_a_builtin(kernel):
    kernel.install("shadow", _decoders(BUILTIN_URL) + f"\nLANCE_FW_OVERRIDES = {{'lance_page_decoders': [{BUILTIN_URL!r}]}}\n")
    kernel.reload()
    assert registry.page_decoders[BUILTIN_URL].__module__ == "lfw_test_shadow"
    assert _by_name()["shadow"]["overrides"] == {"lance_page_decoders": [BUILTIN_URL]}


@pytest.mark.parametrize("hook,key", [("lance_kind_decoders", ("v2_0", "my_kind")),
                                      ("lance_deletion_codecs", 77), ("lance_index_types", "MYIDX")])
def test_collect_hook_conflicts(kernel, hook, key):
    body = f"""
        @hookimpl
        def {hook}():
            return {{{key!r}: object()}}
        """
    kernel.install("claim_a", body)
    kernel.install("claim_b", body)
    kernel.reload()
    with pytest.raises(PluginConflictError, match="claim_a.*claim_b"):
        getattr(registry, hook.removeprefix("lance_")).get(key)


def test_two_plugins_answering_for_one_scheme_conflict(kernel):
    """firstresult hooks: the newest used to win, so a write could go to the wrong store."""
    kernel.install("count_a", _storage("count"))
    kernel.install("count_b", _storage("count"))
    kernel.reload()
    with pytest.raises(PluginConflictError, match="count_a.*count_b|count_b.*count_a"):
        resolve_storage("count://bucket/ds")
    with pytest.raises(PluginConflictError, match="'count'"):
        resolve_commit_handler(object(), "count://bucket/ds")


def test_one_plugin_for_a_new_scheme_is_no_conflict(kernel):
    kernel.install("count_a", _storage("count"))
    kernel.reload()
    plugin = sys.modules["lfw_test_count_a"]
    assert resolve_storage("count://bucket/ds") is plugin.MARK
    assert resolve_commit_handler(plugin.MARK, "count://bucket/ds") is plugin.HANDLER


def test_replacing_builtin_local_storage_needs_an_override(kernel, tmp_path):
    kernel.install("mylocal", _storage("file"))
    kernel.reload()
    with pytest.raises(PluginConflictError, match="storage_local.*mylocal"):
        resolve_storage(str(tmp_path / "ds"))


def test_override_declaration_replaces_builtin_storage(kernel, tmp_path):
    kernel.install("mylocal", _storage("file") + "\nLANCE_FW_OVERRIDES = {'lance_storage': ['file']}\n")
    kernel.reload()
    assert resolve_storage(str(tmp_path / "ds")) is sys.modules["lfw_test_mylocal"].MARK


# 2. choosing

def test_disable_plugins_by_name_resolves_a_conflict(kernel, monkeypatch):
    kernel.install("fork_a", _decoders("/shared.Url"))
    kernel.install("fork_b", _decoders("/shared.Url"))
    monkeypatch.setenv("LANCE_FW_DISABLE_PLUGINS", "fork_a, other")
    kernel.reload()
    assert registry.page_decoders["/shared.Url"].__module__ == "lfw_test_fork_b"
    assert _by_name()["fork_a"]["status"] == "disabled"


def test_disable_autoload_keeps_builtins_only(kernel, monkeypatch, tmp_path):
    kernel.install("fork_a", _decoders("/shared.Url"))
    monkeypatch.setenv("LANCE_FW_DISABLE_PLUGIN_AUTOLOAD", "1")
    kernel.reload()
    status = {n: p["status"] for n, p in _by_name().items()}
    assert status["fork_a"] == "disabled" and status["storage_local"] == "loaded"
    assert all(p["distribution"].startswith("lance_fw ") for p in lance_fw.plugins() if p["status"] == "loaded")
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(), uri)
    assert lance_fw.dataset(uri).to_table().equals(_table())


# 3. isolation

def test_plugin_failing_on_import_is_recorded_not_fatal(kernel, tmp_path, capsys):
    kernel.install("broken", "raise RuntimeError('boom at import')\n")
    kernel.reload()
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(), uri)  # used to raise the plugin's RuntimeError
    assert lance_fw.dataset(uri).to_table().equals(_table())
    import lance_fw.duckdb as fw_duckdb

    assert fw_duckdb.connect().sql(f"SELECT sum(a) FROM lance_scan('{uri}')").fetchall() == [(sum(range(5000)),)]
    broken = _by_name()["broken"]
    assert broken["status"] == "failed" and broken["distribution"] == "broken 0.1"
    assert "RuntimeError: boom at import" in broken["error"]
    failure = plugin_manager.failures()[0]
    assert isinstance(failure.error, PluginLoadError) and isinstance(failure.error.__cause__, RuntimeError)
    assert main(["plugins"]) == 0
    assert "broken" in capsys.readouterr().out
    with pytest.raises(StorageError, match="'broken' \\(broken 0.1\\).*boom at import"):
        resolve_storage("nosuchscheme://bucket/ds")
    encoding = any_pb2.Any(type_url="/not.Installed")
    with pytest.raises(UnsupportedEncodingError, match="'broken'.*boom at import"):
        decode_page(encoding, types.SimpleNamespace(where="f.lance column 0 page 0"))


# 4. unknown hook names

def test_unknown_hook_name_is_rejected(kernel):
    kernel.install("typo", """
        @hookimpl
        def lance_storages(uri, options):
            return None
        """)
    kernel.reload()
    typo = _by_name()["typo"]
    assert typo["status"] == "failed" and "lance_storages" in typo["error"] and "'typo'" in typo["error"]
    assert isinstance(plugin_manager.failures()[0].error, PluginLoadError)


def test_unknown_hook_name_rejected_at_run_time_registration(kernel):
    class Typo:
        @staticmethod
        def lance_storages(uri, options):
            return None

    Typo.lance_storages.lance_fw_impl = {}
    with pytest.raises(PluginLoadError, match="lance_storages"):
        plugin_manager.register(Typo(), name="typo-runtime")


# 5. collect-hook results are type-checked

def test_collect_hook_returning_a_list_names_the_plugin(kernel, tmp_path):
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(), uri)
    kernel.install("listy", """
        @hookimpl
        def lance_page_decoders():
            return ["/x.Url"]
        """)
    kernel.reload()
    with pytest.raises(PluginLoadError, match="'listy' \\(listy 0.1\\).*returned list, expected a mapping"):
        lance_fw.dataset(uri).to_table()  # used to be ValueError: dictionary update sequence element


def test_collect_hook_key_of_wrong_type_names_the_plugin(kernel):
    kernel.install("badkey", """
        @hookimpl
        def lance_deletion_codecs():
            return {"zero": object()}
        """)
    kernel.reload()
    with pytest.raises(PluginLoadError, match="'badkey'.*'zero'"):
        _ = registry.deletion_codecs


def test_hookimpl_not_matching_its_spec_is_recorded(kernel, tmp_path):
    """pluggy's own validation (an argument the hookspec does not have) fails the plugin, not lance_fw."""
    kernel.install("badsig", """
        @hookimpl
        def lance_storage(uri, options, bucket_region):
            return None
        """)
    kernel.reload()
    badsig = _by_name()["badsig"]
    assert badsig["status"] == "failed" and "bucket_region" in badsig["error"]
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(), uri)
    assert lance_fw.dataset(uri).count_rows() == 5000


def test_plugin_using_lance_fw_at_import_fails_alone(kernel):
    """It used to deadlock on the manager's lock: now it is recorded as failed and the rest works."""
    import threading

    kernel.install("eager", "import lance_fw\nlance_fw.plugins()\n")
    done: list = []
    worker = threading.Thread(target=lambda: (kernel.reload(), done.append(_by_name())), daemon=True)
    worker.start()
    worker.join(60)
    assert done, "loading the plugins hung"
    eager = done[0]["eager"]
    assert eager["status"] == "failed" and "while being imported" in eager["error"]
    assert done[0]["storage_local"]["status"] == "loaded"


# 6. firstresult answers are type-checked where they enter the kernel, naming the plugin

@pytest.mark.parametrize("hook,call", [
    ("lance_storage", lambda uri: resolve_storage(uri)),
    ("lance_commit_handler", lambda uri: resolve_commit_handler(resolve_storage(uri), uri)),
])
def test_scheme_hook_answer_of_the_wrong_type_names_the_plugin(kernel, tmp_path, hook, call):
    """A bare object used to be returned as the storage / commit handler and fail later, far away
    (AttributeError on 'open_reader' / 'commit'), naming no plugin."""
    args = "uri, options" if hook == "lance_storage" else "storage, uri"
    kernel.install("badtype", f"""
        LANCE_FW_OVERRIDES = {{{hook!r}: ["file"]}}

        @hookimpl
        def {hook}({args}):
            return object()
        """)
    kernel.reload()
    expected = "Storage" if hook == "lance_storage" else "CommitHandler"
    with pytest.raises(PluginLoadError, match=f"'badtype' \\(badtype 0.1\\): {hook} returned object, expected a "
                                              f"{expected}"):
        call(str(tmp_path / "ds"))


def test_encoder_answer_of_the_wrong_type_names_the_plugin(kernel, tmp_path):
    kernel.install("badenc", """
        @hookimpl
        def lance_select_encoder(column, options):
            return object()
        """)
    kernel.reload()
    with pytest.raises(PluginLoadError, match="'badenc' \\(badenc 0.1\\): lance_select_encoder returned object"):
        lance_fw.write_dataset(_table(), str(tmp_path / "ds"))
    assert not (tmp_path / "ds" / "_versions").exists()
