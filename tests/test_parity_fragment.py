"""pylance's LanceFragment conveniences (``take``, ``schema``, ``to_pandas``): the same calls on each
fragment of a dataset each library wrote, with deletions, compared with pylance's results."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 12_000
ROWS_PER_FILE = 5000
TABLE = pa.table(
    {
        "id": pa.array(np.arange(ROWS), pa.int64()),
        "s": pa.array([f"s{i % 31}" for i in range(ROWS)]),
        "v": pa.array([[i, i + 1] for i in range(ROWS)], pa.list_(pa.int32())),
    }
)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Any]:
    out = {}
    for lib in (lance, lance_fw):
        path = str(tmp_path_factory.mktemp(lib.__name__) / "d")
        ds = lib.write_dataset(TABLE, path, max_rows_per_file=ROWS_PER_FILE)
        ds.delete("id % 777 = 1 OR (id >= 5000 AND id < 5100)")
        out[lib] = ds
    return out


def _each_fragment(datasets: dict[Any, Any], call: Any) -> tuple[list[object], list[object]]:
    theirs, ours = ([call(f) for f in datasets[lib].get_fragments()] for lib in (lance, lance_fw))
    return theirs, ours


@pytest.mark.parametrize(
    ("indices", "columns"),
    [([0, 1, 4095, 4096, 4200], None), ([3, 10, 4500], ["v", "id"]), ([], ["s"]), ([7], ["s"])],
)
def test_take(datasets: dict[Any, Any], indices: list[int], columns: Any) -> None:
    """Positions over each fragment's live rows (pylance wants them strictly increasing)."""

    def call(fragment: Any) -> object:
        live = fragment.count_rows()
        return fragment.take([i for i in indices if i < live], columns=columns)

    theirs, ours = _each_fragment(datasets, call)
    assert ours == theirs


def test_schema(datasets: dict[Any, Any]) -> None:
    theirs, ours = _each_fragment(datasets, lambda fragment: fragment.schema)
    assert ours == theirs


def test_to_pandas(datasets: dict[Any, Any]) -> None:
    def call(fragment: Any) -> object:
        frame = fragment.to_pandas(["id", "s"], "id % 3 = 0", 1500, 20)
        return list(frame.columns), frame.to_dict("list")

    theirs, ours = _each_fragment(datasets, call)
    assert ours == theirs
