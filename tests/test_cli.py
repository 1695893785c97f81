"""The lance-fw command line."""

from __future__ import annotations

import glob

import pyarrow as pa

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
