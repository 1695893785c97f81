"""``write_dataset(enable_stable_row_ids=True)`` and overwrites of datasets with stable row ids, as
pylance 14 does them. Before, lance_fw refused the option, and its overwrite of a pylance dataset
with stable row ids dropped the feature (the rows' ``_rowid`` then became their addresses).

pylance: the option counts only when the write creates the dataset (an overwrite of a dataset
without stable row ids stays without); an overwrite of a dataset with them keeps them, the new
rows' ids continuing from the dataset's next id.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw
from lance_fw.errors import InvalidArgumentError

LIBS = {"lance_fw": lance_fw, "pylance": lance}
ROWS = 9_000


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids.tolist()])})


def _state(uri: str) -> tuple[bool, list[int], list[tuple[int, int]]]:
    """What pylance sees: the feature, every row's id in row order, the fragments."""
    ds = lance.dataset(uri)
    ids = ds.to_table(columns=["id"], with_row_id=True).column("_rowid").to_pylist()
    return ds.has_stable_row_ids, ids, [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()]


@pytest.mark.parametrize("first_stable", [True, False])
def test_create_append_overwrite_as_pylance(tmp_path: Path, first_stable: bool) -> None:
    states = {}
    for name, lib in LIBS.items():
        uri = str(tmp_path / name)
        lib.write_dataset(_table(ROWS), uri, max_rows_per_file=4_000, enable_stable_row_ids=first_stable)
        steps = [_state(uri)]
        lib.write_dataset(_table(2_000, ROWS), uri, mode="append")
        lance.dataset(uri).delete("id % 5 = 0")
        steps.append(_state(uri))
        lib.write_dataset(_table(3_000, 50_000), uri, mode="overwrite", enable_stable_row_ids=not first_stable)
        steps.append(_state(uri))
        lib.write_dataset(_table(100, 60_000), uri, mode="append")
        steps.append(_state(uri))
        states[name] = steps
    assert states["lance_fw"] == states["pylance"]
    assert [s[0] for s in states["pylance"]] == [first_stable] * 4  # the overwrite kept the feature


def test_non_bool_option_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="enable_stable_row_ids must be True or False"):
        lance_fw.write_dataset(_table(10), str(tmp_path / "t"), enable_stable_row_ids="yes")
    assert not (tmp_path / "t" / "_versions").exists() or not list((tmp_path / "t" / "_versions").iterdir())
