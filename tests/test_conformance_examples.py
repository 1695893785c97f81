"""The example third-party plugins pass the conformance kit, as their authors would run it.

The test classes live with each example (``examples/<plugin>/tests/``), where a plugin author keeps
them; ``make test`` only collects ``tests/``, so they are loaded from there and collected here.
The example must be installed (``make setup`` does it); a missing one fails, it is not skipped.
The example plugins of docs/plugin-authoring.md run the kit too, registered at run time.
"""

from __future__ import annotations

import importlib.util
import types
import uuid
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest

from lance_fw.testing import (
    CommitHandlerConformance,
    EncodingConformance,
    StorageConformance,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(path: Path):
    """Import a test module of an example by path (the example's tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_tests_{path.parent.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TestDeltaConformance = _load(EXAMPLES / "lance_fw_delta" / "tests" / "test_conformance.py").TestDeltaConformance


# --- the example plugins of docs/plugin-authoring.md (blocks after `<!-- example: NAME -->`),
# registered at run time: what the guide teaches must pass the kit too.

def _doc_plugin(name: str) -> types.ModuleType:
    from test_plugin_docs import (
        example,  # the one extractor of the guide's example blocks
    )

    module = types.ModuleType(f"doc_example_{name}")
    exec(compile(example(name), f"plugin-authoring.md:{name}", "exec"), module.__dict__)  # noqa: S102
    return module


PLAIN64 = _doc_plugin("plain64")
DICTSTORE = _doc_plugin("dictstore")


class TestDocPlain64Conformance(EncodingConformance):
    plugin = PLAIN64
    field_metadata: ClassVar[dict[str, str]] = {PLAIN64.HINT: "true"}
    arrow_types = (pa.int64(),)
    file_versions = ("2.0", "2.1", "2.2")
    type_urls = frozenset({PLAIN64.TYPE_URL})
    pylance_readable = False
    write_options: ClassVar[dict[str, bool]] = {"allow_plugin_encodings": True}


class TestDocDictstoreStorage(StorageConformance):
    """The store is a dict of this process: the process race does not apply."""

    plugin = DICTSTORE
    multiprocess = False

    @pytest.fixture
    def root(self) -> str:
        return f"{DICTSTORE.SCHEME}://conformance/{uuid.uuid4().hex}"


class TestDocDictstoreCommits(CommitHandlerConformance):
    """Commits through the generic put-if-absent handler, which the dictstore gets for free."""

    plugin = DICTSTORE
    multiprocess = False

    @pytest.fixture
    def dataset_uri(self) -> str:
        return f"{DICTSTORE.SCHEME}://conformance/{uuid.uuid4().hex}/ds"
