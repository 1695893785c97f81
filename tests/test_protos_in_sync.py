"""The checked-in lance_fw/_proto modules must match protos/*.proto."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "tools" / "gen_protos.py"


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None,
    reason="grpcio-tools (dev dependency) is not installed, cannot regenerate protobuf modules",
)
def test_generated_protos_are_in_sync():
    res = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, (
        "lance_fw/_proto is stale; run `python tools/gen_protos.py`\n" + res.stdout + res.stderr
    )
