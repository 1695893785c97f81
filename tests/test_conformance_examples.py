"""The example third-party plugins pass the conformance kit, as their authors would run it.

The test classes live with each example (``examples/<plugin>/tests/``), where a plugin author keeps
them; ``make test`` only collects ``tests/``, so they are loaded from there and collected here.
The example must be installed (``make setup`` does it); a missing one fails, it is not skipped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(path: Path):
    """Import a test module of an example by path (the example's tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_tests_{path.parent.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TestDeltaConformance = _load(EXAMPLES / "lance_fw_delta" / "tests" / "test_conformance.py").TestDeltaConformance
