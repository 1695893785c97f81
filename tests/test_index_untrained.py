"""pylance's ``create_scalar_index(train=False)`` and ``optimize_indices(retrain=True)``, against
pylance 14. Before, lance_fw refused both options by name.

An untrained index covers no fragment: its files are the index type's files for zero rows and its
fragment bitmap is empty, so every query scans (the answers stay the unindexed ones) until
``optimize_indices`` trains it over every fragment. Each library reads the other's untrained
index, answers as the other does, and optimizes it (pylance merging lance_fw's empty files).
``retrain=True`` changes nothing for a scalar index that covers every fragment (pylance commits
no version), trains an untrained one, and is refused for a vector index (lance_fw would keep its
model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 15_000
FRAGMENT_ROWS = 5_000  # 3 fragments, each past a 4096-row page and several 1024-value blocks
LIBS = {"lance_fw": lance_fw, "pylance": lance}


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": rng.permutation(rows).astype(np.int64) + seed * 1_000_000,
            "cat": pa.array(rng.integers(0, 12, rows).astype(np.int32), mask=rng.random(rows) < 0.03),
            "tags": pa.array([[f"t{(i * 7) % 13}", f"t{i % 5}"] for i in range(rows)], pa.list_(pa.string())),
            "text": pa.array([f"lance row {i % 17} format {i % 3}" for i in range(rows)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 8, dtype=np.float32)), 8),
        }
    )


#: index type -> (column, a query's keyword arguments for ``to_table``)
CASES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "BTREE": ("id", [{"filter": "id = 777"}, {"filter": "id < 100"}]),
    "BITMAP": ("cat", [{"filter": "cat = 3"}, {"filter": "cat IS NULL"}]),
    "LABEL_LIST": ("tags", [{"filter": "array_has_any(tags, ['t3'])"}]),
    "ZONEMAP": ("id", [{"filter": "id BETWEEN 10 AND 20"}]),
    "INVERTED": ("text", [{"full_text_query": "format"}, {"full_text_query": "row"}]),
}


def _listing(uri: str) -> list[tuple[Any, ...]]:
    """pylance's view of the dataset's indices, but uuids and times."""
    return [
        (d.name, d.index_type, d.num_rows_indexed, [sorted(s.fragment_ids) for s in d.segments])
        for d in sorted(lance.dataset(uri).describe_indices(), key=lambda d: d.name)
    ]


def _answers(lib: Any, uri: str, queries: list[dict[str, Any]]) -> list[pa.Table]:
    return [lib.dataset(uri).to_table(**q).sort_by("id") for q in queries]


@pytest.mark.parametrize("builder", list(LIBS))
@pytest.mark.parametrize("index_type", list(CASES))
def test_untrained_index_both_ways(tmp_path: Path, index_type: str, builder: str) -> None:
    """Built untrained by one library: both list it alike (no rows, no fragments) and answer as an
    unindexed scan; the other library optimizes it, after which both list it over every fragment
    and answer alike."""
    column, queries = CASES[index_type]
    uris = {name: str(tmp_path / name) for name in LIBS}
    for uri in uris.values():
        lance.write_dataset(_table(ROWS, 0), uri, max_rows_per_file=FRAGMENT_ROWS)
        LIBS[builder if uri == uris["lance_fw"] else "pylance"].dataset(uri).create_scalar_index(
            column, index_type, name="x", train=False
        )
    ours, theirs = uris["lance_fw"], uris["pylance"]  # lance_fw's index (when it builds), pylance's
    assert _listing(ours) == _listing(theirs) == [("x", _listing(theirs)[0][1], 0, [[]])]
    expected = _answers(lance, theirs, queries)
    for lib in LIBS.values():
        assert _answers(lib, ours, queries) == expected
    other = "pylance" if builder == "lance_fw" else "lance_fw"
    LIBS[other].dataset(ours).optimize.optimize_indices()
    lance.dataset(theirs).optimize.optimize_indices()
    assert _listing(ours) == _listing(theirs) == [("x", _listing(theirs)[0][1], ROWS, [[0, 1, 2]])]
    for lib in LIBS.values():
        assert _answers(lib, ours, queries) == expected


@pytest.mark.parametrize("lib", list(LIBS))
def test_retrain_as_pylance(tmp_path: Path, lib: str) -> None:
    """``retrain=True`` trains an untrained index over every fragment, and leaves one that covers
    every fragment as it is (no new version), in both libraries."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS, 1), uri, max_rows_per_file=FRAGMENT_ROWS)
    ds = LIBS[lib].dataset(uri)
    ds.create_scalar_index("id", "BTREE", name="trained")
    ds.create_scalar_index("cat", "BITMAP", name="untrained", train=False)
    ds = LIBS[lib].dataset(uri)
    ds.optimize.optimize_indices(index_names=["trained"], retrain=True)
    assert LIBS[lib].dataset(uri).version == 3  # nothing to do
    ds.optimize.optimize_indices(retrain=True)
    assert LIBS[lib].dataset(uri).version == 4
    assert [(n, rows, frags) for n, _, rows, frags in _listing(uri)] == [
        ("trained", ROWS, [[0, 1, 2]]),
        ("untrained", ROWS, [[0, 1, 2]]),
    ]


def test_retrain_of_a_vector_index_is_refused(tmp_path: Path) -> None:
    """pylance trains a new IVF model; lance_fw's rebuild keeps the model, so it refuses by name
    and commits nothing."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS, 2), uri, max_rows_per_file=FRAGMENT_ROWS)
    lance.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=2)
    ds = lance_fw.dataset(uri)
    with pytest.raises(UnsupportedFeatureError, match="retrain=True for vector index 'vec_idx'"):
        ds.optimize.optimize_indices(retrain=True)
    assert lance.dataset(uri).version == ds.version == 2


@pytest.mark.parametrize("option", [{"train": "false"}, {"train": 0}, {"replace": "no"}])
def test_non_bool_flags_are_refused(tmp_path: Path, option: dict[str, Any]) -> None:
    """A flag that is not a bool is refused rather than read as truthy (``"false"`` would train)."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(2_000, 3), uri)
    with pytest.raises(InvalidArgumentError, match=f"{next(iter(option))} must be a bool"):
        lance_fw.dataset(uri).create_scalar_index("id", "BTREE", **option)
    assert lance.dataset(uri).version == 1
