"""``IN`` on a struct child against pylance: pylance reads ``p.h`` as ``get_field(p, 'h')``, a
computed value, so DataFusion compares it with the IN list in their common type (a float32 child
``IN (0.1)`` matches nothing, where ``p.h = 0.1`` and a top-level ``h IN (0.1)`` match). Checked
with and without a BTREE on the child, built by either library, over rows sparse enough that an
exact index answer is taken without re-checking the filter."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 20_000
FILTERS = [
    "p.h IN (0.1, 0.2)",
    "p.h IN (0.1)",
    "p.h IN (0.25, 0.5)",
    "p.h IN (0.1, 0.25)",
    "p.h NOT IN (0.1, 0.2)",
    "p.h = 0.1",
    "p.s IN (1, 2)",
    "p.s IN (1.0, 2.5)",
    "p.s IN (7, 100000)",
    "h IN (0.1, 0.25)",
    "p.s IN (7, 2.5)",
    "p.h IN (7, 2)",
    "p.h IN (7, 0.25, 0.1)",
]


def _table() -> pa.Table:
    rng = np.random.default_rng(3)
    pool = np.array([0.1, 0.2, 0.3, 0.25, 0.5, 1.5, 2.0, 7.0], np.float32)
    h = pa.array(pool[rng.integers(0, len(pool), ROWS)])
    s = pa.array(rng.integers(0, 3000, ROWS).astype(np.int16))
    return pa.table({"id": np.arange(ROWS), "h": h, "p": pa.StructArray.from_arrays([h, s], names=["h", "s"])})


@pytest.fixture(scope="module", params=[None, "lance", "lance_fw"])
def path(request, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("t") / "t.lance")
    lance.write_dataset(_table(), out, max_rows_per_file=7000)
    builder = {"lance": lance, "lance_fw": lance_fw}.get(request.param)
    if builder is not None:
        builder.dataset(out).create_scalar_index("p.s", "BTREE")
        builder.dataset(out).create_scalar_index("p.h", "BTREE")
    return out


@pytest.mark.parametrize("where", FILTERS)
def test_in_on_a_struct_child_matches_pylance(path: str, where: str) -> None:
    want = lance.dataset(path).to_table(filter=where)
    got = lance_fw.dataset(path).to_table(filter=where)
    assert got.equals(want), (where, got.num_rows, want.num_rows)
