"""What ``write_dataset`` accepts as data, against pylance: each input kind writes the same rows
and schema, or both refuse it (same error class)."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lance_fw

ROWS = 5000  # several 1024-value blocks
TABLE = pa.table({"a": np.arange(ROWS, dtype=np.int64), "b": [f"v{i % 97}" for i in range(ROWS)]})

INPUTS = {
    "table": lambda mod, path: TABLE,
    "record batch": lambda mod, path: TABLE.combine_chunks().to_batches()[0],
    "reader": lambda mod, path: TABLE.to_reader(max_chunksize=1500),
    "pandas": lambda mod, path: TABLE.to_pandas(),
    "pyarrow dataset": lambda mod, path: pads.dataset(TABLE),
    "pyarrow scanner": lambda mod, path: pads.dataset(TABLE).scanner(
        columns=["b"], filter=pads.field("a") > 100
    ),
    "lance dataset": lambda mod, path: mod.dataset(path),
    "dict of columns": lambda mod, path: TABLE.to_pydict(),
    "list of row dicts": lambda mod, path: TABLE.to_pylist(),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    out = {}
    for mod in (lance, lance_fw):
        path = str(tmp_path_factory.mktemp(mod.__name__) / "src")
        mod.write_dataset(TABLE, path, max_rows_per_file=2000)
        out[mod] = path
    return out


@pytest.mark.parametrize("kind", list(INPUTS))
def test_input_kinds_match_pylance(tmp_path, sources, kind):
    written = {}
    for mod in (lance, lance_fw):
        path = str(tmp_path / mod.__name__)
        mod.write_dataset(INPUTS[kind](mod, sources[mod]), path)
        written[mod] = mod.dataset(path).to_table()
    assert written[lance_fw].schema.equals(written[lance].schema)
    assert written[lance_fw].equals(written[lance])


@pytest.mark.parametrize("bad", [42, "a string", [1, 2, 3]])
def test_bad_inputs_raise_pylance_error_classes(tmp_path, bad):
    """lance_fw's typed error is also the builtin class pylance raises, so ``except`` clauses
    written for pylance still catch it."""
    with pytest.raises(Exception) as theirs:
        lance.write_dataset(bad, str(tmp_path / "pylance"))
    with pytest.raises(lance_fw.LanceError) as ours:
        lance_fw.write_dataset(bad, str(tmp_path / "lance_fw"))
    builtin = next(c for c in type(theirs.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(ours.value, builtin)
