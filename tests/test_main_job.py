"""README command 1 runs: the main job exits 0 and pylance agrees on the row count."""

from __future__ import annotations

import pathlib
import subprocess
import sys


def test_main_job_runs():
    script = pathlib.Path(__file__).parents[1] / "examples" / "main_job.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "[pylance] reads 1,000,000 rows" in out.stdout
    assert "avg_fare" in out.stdout
