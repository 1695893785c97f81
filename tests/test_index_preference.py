"""Two indices on one column: pylance consults them in manifest order (the first created that
answers the query); lance_fw's plans must name the same index, and the rows stay exact."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

FILTERS = ["a = 5", "a > 19990", "a IN (1, 2)", "a BETWEEN 100 AND 5000", "a IS NULL"]


def _index_lines(plan: str) -> list[str]:
    return [line.strip() for line in plan.splitlines() if "ScalarIndexQuery" in line]


@pytest.mark.parametrize("order", [("ZONEMAP", "BTREE"), ("BTREE", "ZONEMAP"), ("BITMAP", "BTREE")])
def test_first_created_index_answers(tmp_path: Any, order: tuple[str, str]) -> None:
    uri = str(tmp_path / "ds")
    values = np.arange(20_000, dtype=np.int64)
    table = pa.table({"a": pa.array(values, mask=values % 997 == 0)})
    lance.write_dataset(table, uri, max_rows_per_file=7000)
    ds = lance.dataset(uri)
    for kind in order:
        ds.create_scalar_index("a", kind, name=f"a_{kind.lower()}")
    for text in FILTERS:
        theirs, ours = lance.dataset(uri), lance_fw.dataset(uri)
        assert _index_lines(ours.scanner(filter=text).explain_plan()) == _index_lines(
            theirs.scanner(filter=text).explain_plan()
        ), text
        assert ours.to_table(filter=text).equals(theirs.to_table(filter=text)), text
