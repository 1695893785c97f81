"""README command 1 runs: Spark writes, DuckDB queries through lance_scan, pylance agrees."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_main_job_runs(tmp_path):
    script = pathlib.Path(__file__).parents[1] / "examples" / "main_job.py"
    out = subprocess.run([sys.executable, str(script), "--rows", "30000", "--appends", "3",
                          "--out", str(tmp_path / "trips.lance")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[pylance] version 3, 30,000 rows" in out.stdout
    assert "avg_fare" in out.stdout and "[done] OK" in out.stdout
    assert "[spark] stopped" in out.stdout.split("[duckdb]")[0]  # DuckDB ran with Spark gone
