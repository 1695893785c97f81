"""The lance-fw command line."""

from __future__ import annotations

import glob
import json

import pyarrow as pa
import pytest
from test_plugin_kernel import kernel  # noqa: F401 - installs plugin distributions on sys.path

import lance_fw
from lance_fw.cli import main


def test_cli_plugins_versions_inspect(uri, capsys):
    lance_fw.write_dataset(pa.table({"a": [1, None], "s": ["x", "y"]}), uri, data_storage_version="2.0")
    assert main(["plugins"]) == 0
    assert "encodings_v2_0" in capsys.readouterr().out
    assert main(["versions", uri]) == 0
    assert '"version": 1' in capsys.readouterr().out
    assert main(["inspect", glob.glob(f"{uri}/data/*.lance")[0]]) == 0
    out = capsys.readouterr().out
    assert "version 2.0, 2 rows, 2 columns" in out and "/lance.encodings.ArrayEncoding" in out
    assert out.count("(decoded by plugin 'encodings_v2_0' (lance_fw ") == 1  # once per encoding


def test_cli_reports_lance_errors(tmp_path, capsys):
    assert main(["versions", str(tmp_path / "nothing")]) == 2
    assert "no Lance dataset" in capsys.readouterr().err


def test_cli_sql_one_statement_and_shell(uri, capsys, monkeypatch):
    import io

    lance_fw.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    assert main(["sql", f"SELECT sum(a) AS total FROM lance_scan('{uri}')"]) == 0
    assert "total" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(f"SELECT count(*) AS n FROM lance_scan('{uri}')\nSELEC oops\n.quit\n"))
    assert main(["sql"]) == 0
    captured = capsys.readouterr()
    assert "n" in captured.out and "error:" in captured.err


# --- lance-fw plugins with real broken and conflicting plugin distributions ------------------------

def _decoders(url: str) -> str:
    return f"""
        def decode(encoding, page):
            raise NotImplementedError

        @hookimpl
        def lance_page_decoders():
            return {{{url!r}: decode}}
        """


@pytest.fixture
def troubled(kernel):  # noqa: F811 - test_plugin_kernel's fixture: dists on sys.path, manager reloaded
    """Installs one plugin of every kind of trouble next to a good one, then reloads the kernel."""
    kernel.install("fork_a", _decoders("/shared.Url"))
    kernel.install("fork_b", _decoders("/shared.Url"))
    kernel.install("broken", "raise RuntimeError('boom at import')\n")
    kernel.install("raises", """
        @hookimpl
        def lance_index_types():
            raise RuntimeError('index registry down')
        """)
    kernel.install("good", """
        LANCE_FW_OVERRIDES = {"lance_storage": ["file"]}

        @hookimpl
        def lance_storage_options():
            return {"good_region": "where the good store lives"}

        @hookimpl
        def lance_kind_decoders():
            return {("lance.encodings.ArrayEncoding", "good_kind"): lambda msg, page, n, t: None}
        """)
    kernel.reload()
    return kernel


def test_cli_plugins_json_reports_every_plugin_and_problem(troubled, capsys):
    assert main(["plugins", "--json"]) == 0  # never fails because of a plugin
    report = json.loads(capsys.readouterr().out)
    plugins = {p["name"]: p for p in report["plugins"]}
    assert plugins["broken"]["status"] == "failed" and "boom at import" in plugins["broken"]["error"]
    assert plugins["broken"]["distribution"] == "broken 0.1"
    good = plugins["good"]
    assert good["status"] == "loaded" and good["distribution"] == "good 0.1"
    assert good["provides"]["lance_storage_options"] == ["good_region"]
    assert good["provides"]["lance_kind_decoders"] == [str(("lance.encodings.ArrayEncoding", "good_kind"))]
    assert good["overrides"] == {"lance_storage": ["file"]} and good["conflicts"] == []
    assert plugins["encodings_v2_1"]["provides"]["lance_page_decoders"] == ["/lance.encodings21.PageLayout"]
    assert "lance_storage" in plugins["storage_local"]["hooks"]
    for fork in ("fork_a", "fork_b"):  # the conflict is listed under both plugins it names
        assert plugins[fork]["provides"]["lance_page_decoders"] == ["/shared.Url"]
        assert any("PluginConflictError" in c and "/shared.Url" in c for c in plugins[fork]["conflicts"])
    assert any("'raises' (raises 0.1)" in p and "index registry down" in p for p in report["problems"])
    assert any("'raises' (raises 0.1)" in c for c in plugins["raises"]["conflicts"])


def test_cli_plugins_text_reports_every_plugin_and_problem(troubled, capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "broken  [failed]  broken 0.1" in out and "error: " in out and "boom at import" in out
    assert "good  [loaded]  good 0.1" in out and "lance_storage_options: good_region" in out
    assert "overrides lance_storage: file" in out
    assert "lance_page_decoders: /shared.Url" in out and "conflict: PluginConflictError" in out
    assert "PROBLEM: PluginConflictError" in out and "PROBLEM: PluginLoadError" in out


def test_cli_plugins_shows_disabled_plugins(kernel, monkeypatch, capsys):  # noqa: F811
    kernel.install("fork_a", _decoders("/shared.Url"))
    monkeypatch.setenv("LANCE_FW_DISABLE_PLUGINS", "fork_a")
    kernel.reload()
    assert main(["plugins", "--json"]) == 0
    plugins = {p["name"]: p for p in json.loads(capsys.readouterr().out)["plugins"]}
    assert plugins["fork_a"]["status"] == "disabled"


def test_cli_inspect_names_missing_and_conflicting_decoders(kernel, tmp_path, capsys):  # noqa: F811
    kernel.install("fork_a", _decoders("/lance.encodings21.PageLayout"))
    kernel.install("fork_b", _decoders("/lance.encodings21.PageLayout"))
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"a": [1, 2]}), uri, data_storage_version="2.1")
    kernel.reload()  # the two forks claim the built-in 2.1 URL (no override): a conflict
    assert main(["inspect", glob.glob(f"{uri}/data/*.lance")[0]]) == 0
    out = capsys.readouterr().out
    assert "PluginConflictError" in out and "'fork_a' (fork_a 0.1)" in out
