"""docs/plugin-authoring.md's code is correct: every python block compiles, and the example plugins
(blocks after an ``<!-- example: NAME -->`` marker, concatenated per name) are installed as REAL
distributions (module + dist-info on ``sys.path``, see ``test_plugin_kernel.Kernel``) and used."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal
from test_plugin_kernel import kernel  # noqa: F401 - the fixture that installs plugin dists

import lance_fw
from lance_fw.cli import main
from lance_fw.errors import InvalidArgumentError

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugin-authoring.md"
BLOCK = re.compile(r"(?:<!-- example: (?P<name>[\w-]+) -->\n)?```python\n(?P<code>.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str | None, str]]:
    return [(m["name"], m["code"]) for m in BLOCK.finditer(DOC.read_text())]


def example(name: str) -> str:
    code = "\n".join(c for n, c in _blocks() if n == name)
    assert code, f"no example {name!r} in {DOC}"
    return code


def test_every_python_block_compiles():
    blocks = _blocks()
    assert len(blocks) >= 8
    for i, (_, code) in enumerate(blocks):
        if code.lstrip().startswith(">>>"):
            continue  # an interpreter transcript
        compile(code, f"{DOC.name} block {i}", "exec")


@pytest.mark.parametrize("name", ["plain64", "dictstore", "handler", "overrides"])
def test_example_blocks_execute(name):
    exec(compile(example(name), f"{DOC.name}:{name}", "exec"), {"__name__": f"doc_example_{name}"})  # noqa: S102


def _with_nulls(n: int) -> pa.Table:
    ids = pa.array(np.arange(n, dtype=np.int64) * 3, mask=np.arange(n) % 7 == 3)
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"lance-encoding:plain64": "true"}),
                        pa.field("s", pa.string())])
    return pa.table({"id": ids, "s": [f"r{i}" for i in range(n)]}, schema=schema)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_plain64_example_plugin_round_trips(kernel, tmp_path, capsys, version):  # noqa: F811
    kernel.install("lance_fw_plain64", example("plain64"), entry="plain64", module="lance_fw_plain64")
    kernel.reload()
    uri = str(tmp_path / "ds")
    first, second = _with_nulls(5000), _with_nulls(3000)
    lance_fw.write_dataset(first, uri, data_storage_version=version, max_page_bytes=8192, allow_plugin_encodings=True)
    lance_fw.write_dataset(second, uri, mode="append", allow_plugin_encodings=True)  # pylance cannot read plain64
    ds = lance_fw.dataset(uri)
    expected = pa.concat_tables([first, second])
    assert_tables_equal(expected, ds.to_table())
    rows = [0, 3, 4999, 5000, 7999]
    assert ds.take(rows).column("id").to_pylist() == expected.column("id").take(rows).to_pylist()
    assert ds.to_table(filter="id > 20000").num_rows == expected.filter(pa.compute.greater(
        expected.column("id"), 20000)).num_rows
    assert main(["plugins"]) == 0
    assert "/lance_fw_plain64.Plain64" in capsys.readouterr().out


def test_dictstore_example_storage_commits_and_checks_options(kernel):  # noqa: F811
    kernel.install("lance_fw_dictstore", example("dictstore"), entry="dictstore", module="lance_fw_dictstore")
    kernel.reload()
    uri = "dictstore://bucket/ds"
    data = pa.table({"a": np.arange(10_000, dtype=np.int64), "s": [str(i) for i in range(10_000)]})
    lance_fw.write_dataset(data.slice(0, 6000), uri, storage_options={"dictstore_label": "x"})
    lance_fw.write_dataset(data.slice(6000), uri, mode="append")
    ds = lance_fw.dataset(uri, storage_options={"dictstore_label": "x"})
    assert ds.version == 2
    assert_tables_equal(data, ds.to_table())
    with pytest.raises(InvalidArgumentError, match="dictstore_lable"):
        lance_fw.dataset(uri, storage_options={"dictstore_lable": "x"})
    files = sys.modules["lance_fw_dictstore"]._files
    assert any("/_versions/" in p for p in files)


def test_handler_example_commits_once_per_path(tmp_path):
    from lance_fw.errors import CommitConflictError
    from lance_fw.io.storage import resolve_storage

    namespace: dict = {"__name__": "doc_example_handler"}
    exec(compile(example("handler"), f"{DOC.name}:handler", "exec"), namespace)  # noqa: S102
    storage = resolve_storage(str(tmp_path))
    handler = namespace["lance_commit_handler"](storage, "examplestore://bucket/ds",
                                                {"examplestore_lock_file": str(tmp_path / "lock")})
    manifest = str(tmp_path / "_versions" / "1.manifest")
    handler.commit(manifest, b"first")
    with pytest.raises(CommitConflictError):
        handler.commit(manifest, b"second")
    assert storage.read_bytes(manifest) == b"first"
    assert namespace["lance_commit_handler"](storage, str(tmp_path), {}) is None
