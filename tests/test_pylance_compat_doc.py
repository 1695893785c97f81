"""docs/pylance-compat.md must be what tools/compat_table.py generates now.

Why: the table says which pylance names work, and a "works" there comes from a smoke call run
against both libraries; when lance_fw (or a smoke call) changes, the doc must be regenerated, as
the protobuf modules must follow protos/ (test_protos_in_sync.py)."""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("lance")

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "compat_table.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compat_table", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compat_table"] = module
    spec.loader.exec_module(module)
    return module


def test_compat_doc_is_up_to_date() -> None:
    tool = _tool()
    expected = tool.generate()
    actual = tool.DOC.read_text() if tool.DOC.exists() else ""
    diff = "".join(
        difflib.unified_diff(
            actual.splitlines(True), expected.splitlines(True), "docs/pylance-compat.md", "generated", n=0
        )
    )
    assert actual == expected, (
        "docs/pylance-compat.md is stale; run python tools/compat_table.py\n" + diff[:4000]
    )


def test_signature_difference_reports_what_breaks_a_call() -> None:
    tool = _tool()

    def theirs(self: object, a: int, b: int = 1, *, c: int = 0) -> None: ...
    def same(self: object, a: int, b: int = 1, *, c: int = 0, d: int = 2) -> None: ...
    def lacks(self: object, a: int, *, b: int = 1) -> None: ...
    def kwargs(self: object, a: int, b: int = 1, **kw: int) -> None: ...

    assert tool.signature_difference(theirs, same) is None
    assert tool.signature_difference(theirs, kwargs) is None
    assert tool.signature_difference(theirs, lacks) == "lacks c; b keyword-only"
