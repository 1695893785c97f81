"""Flat vector search (``nearest=`` without an index) against pylance on the same dataset.

Datasets span several fragments and more than 4096 rows, with deleted rows; every metric, both
filter modes, batched queries, column subsets, row ids, limit/offset and the errors. float32
distances are compared bit for bit where lance_fw reproduces pylance's kernels (L2 and dot at any
dimension, cosine at multiples of 16); elsewhere within float32 rounding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError, InvalidArgumentTypeError, UnsupportedFeatureError

ROWS = 9000
ROWS_PER_FILE = 2500


def _vectors(values: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), values.shape[1])


def _write(path: Path, values: np.ndarray, null_every: int = 0) -> np.ndarray:
    n = len(values)
    vec = _vectors(values)
    if null_every:
        vec = pa.FixedSizeListArray.from_arrays(
            vec.values, values.shape[1], mask=pa.array(np.arange(n) % null_every == 1)
        )
    table = pa.table({"id": np.arange(n), "vec": vec, "s": [f"s{i % 7}" for i in range(n)]})
    ds = lance.write_dataset(table, str(path), max_rows_per_file=ROWS_PER_FILE)
    ds.delete("id % 10 = 3")
    return values


@pytest.fixture(scope="module", params=[32, 128])
def dataset(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(request.param)
    values = rng.standard_normal((ROWS, request.param)).astype(np.float32)
    values[17] = values[16]  # an exact tie: order by _rowid
    path = tmp_path_factory.mktemp(f"vec{request.param}") / "ds"
    return str(path), _write(path, values, null_every=97)


def _both(path: str, **options: Any) -> tuple[pa.Table, pa.Table]:
    return lance.dataset(path).to_table(**options), lance_fw.dataset(path).to_table(**options)


def _same(ours: pa.Table, theirs: pa.Table, exact: bool = True) -> None:
    assert ours.schema == theirs.schema
    assert ours.num_rows == theirs.num_rows
    for name in theirs.schema.names:
        if name == "_distance" and not exact:
            np.testing.assert_allclose(ours[name].to_numpy(), theirs[name].to_numpy(), rtol=2e-6, atol=1e-6)
        else:
            assert ours[name].equals(theirs[name]), name


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot", "L2", "euclidean"])
@pytest.mark.parametrize("k", [1, 10, 57])
def test_metrics_match_pylance(dataset: tuple[str, np.ndarray], metric: str, k: int) -> None:
    path, values = dataset
    for q in (values[16] + 0.05, np.random.default_rng(k).standard_normal(values.shape[1])):
        theirs, ours = _both(path, nearest={"column": "vec", "q": q, "k": k, "metric": metric})
        _same(ours, theirs)


def test_all_rows_ranked_like_pylance(dataset: tuple[str, np.ndarray]) -> None:
    """k beyond the row count: every live row with a vector, in pylance's order (ties by _rowid)."""
    path, values = dataset
    for metric in ("l2", "dot", "cosine"):
        options = {
            "nearest": {"column": "vec", "q": values[16], "k": ROWS, "metric": metric},
            "columns": ["id"],
        }
        theirs, ours = _both(path, **options)
        _same(ours, theirs)
        assert 16 in ours["id"].to_pylist() and 1 not in ours["id"].to_pylist()  # row 1: null vector


@pytest.mark.parametrize("prefilter", [True, False, None])
@pytest.mark.parametrize("filter", ["id > 4000 AND s != 's3'", "id < 20", "id < 0"])
def test_filters_both_modes(dataset: tuple[str, np.ndarray], prefilter: bool | None, filter: str) -> None:
    path, values = dataset
    options = {
        "nearest": {"column": "vec", "q": values[12], "k": 15},
        "filter": filter,
        "prefilter": prefilter,
        "columns": ["id", "s"],
    }
    theirs, ours = _both(path, **options)
    _same(ours, theirs)


def test_columns_row_ids_limit_offset(dataset: tuple[str, np.ndarray]) -> None:
    path, values = dataset
    near = {"column": "vec", "q": values[40], "k": 12}
    cases: list[dict[str, Any]] = [
        {"columns": ["s"], "with_row_id": True},
        {"columns": ["_distance", "id"]},
        {"columns": ["id", "_rowid"]},
        {"columns": []},
        {"with_row_id": True, "with_row_address": True},
        {"columns": {"x": "id * 2"}},
        {"columns": ["id"], "disable_scoring_autoprojection": True},
        {"limit": 4},
        {"limit": 4, "offset": 3},
        {"offset": 10},
        {"limit": 100},
    ]
    for case in cases:
        theirs, ours = _both(path, nearest=near, **case)
        _same(ours, theirs)


def test_batched_queries(dataset: tuple[str, np.ndarray]) -> None:
    path, values = dataset
    q = np.stack([values[2], values[3] + 0.1, values[2]])
    for extra in (
        {},
        {"limit": 5, "offset": 3},
        {"filter": "id > 2"},
        {"filter": "id > 2", "prefilter": True},
    ):
        theirs, ours = _both(path, nearest={"column": "vec", "q": q, "k": 4}, columns=["id"], **extra)
        _same(ours, theirs)
    theirs, ours = _both(path, nearest={"column": "vec", "q": q[:1].tolist(), "k": 3})
    _same(ours, theirs)


def test_query_forms_and_index_options(dataset: tuple[str, np.ndarray]) -> None:
    path, values = dataset
    q = values[7] + 0.2
    for near in (
        {"q": q.tolist()},
        {"q": q.astype(np.float64)},
        {"q": pa.array(q)},
        {"q": q, "nprobes": 3, "refine_factor": 2, "use_index": True, "ef": 10},
        {"q": q, "k": None, "metric": None},
    ):
        theirs, ours = _both(path, nearest={"column": "vec", **near}, columns=["id"])
        _same(ours, theirs)


def test_scanner_batches_and_plan(dataset: tuple[str, np.ndarray]) -> None:
    path, values = dataset
    near = {"column": "vec", "q": values[5], "k": 30}
    ours = lance_fw.dataset(path).scanner(nearest=near, batch_size=7)
    theirs = lance.dataset(path).scanner(nearest=near, batch_size=7)
    assert [b.num_rows for b in ours.to_batches()] == [b.num_rows for b in theirs.to_batches()]
    assert ours.count_rows() == theirs.count_rows() == 30
    assert ours.projected_schema == ours.to_table().schema
    for options in ({}, {"columns": ["s"]}, {"columns": ["id"], "filter": "id > 5", "prefilter": True}):
        mine = lance_fw.dataset(path).scanner(nearest=near, **options).explain_plan()
        expected = lance.dataset(path).scanner(nearest=near, **options).explain_plan()
        # pylance prints the path without its leading "/" and the filter in DataFusion's form
        expected = expected.replace("uri=/", "uri=").replace("id@0 > 5", "id > 5").replace("Int64(5)", "5")
        assert mine.replace("uri=/", "uri=") == expected.replace("uri=/", "uri=")


def test_fragment_scan_refused(dataset: tuple[str, np.ndarray]) -> None:
    path, values = dataset
    near = {"column": "vec", "q": values[5], "k": 3}
    with pytest.raises(ValueError, match="fragment scan"):
        lance.dataset(path).scanner(
            nearest=near, fragments=lance.dataset(path).get_fragments()[:1]
        ).to_table()
    with pytest.raises(ValueError, match="fragment scan"):
        ds = lance_fw.dataset(path)
        ds.scanner(nearest=near, fragments=ds.get_fragments()[:1]).to_table()


@pytest.mark.parametrize(
    ("near", "error"),
    [
        ({"column": "nope"}, ValueError),
        ({"column": "VEC"}, ValueError),
        ({"column": "s"}, TypeError),
        ({"q": [1.0, 2.0]}, ValueError),
        ({"k": 0}, ValueError),
        ({"metric": "bad"}, ValueError),
        ({"metric": "hamming"}, ValueError),
        ({"foo": 1}, TypeError),
        ({"nprobes": 0}, ValueError),
    ],
)
def test_errors_like_pylance(dataset: tuple[str, np.ndarray], near: dict[str, Any], error: type) -> None:
    path, values = dataset
    nearest = {"column": "vec", "q": values[0], **near}
    with pytest.raises(error):
        lance.dataset(path).to_table(nearest=nearest)
    with pytest.raises(error) as raised:
        lance_fw.dataset(path).to_table(nearest=nearest)
    assert isinstance(raised.value, (InvalidArgumentError, InvalidArgumentTypeError))


@pytest.mark.parametrize("dim", [4, 8, 12, 16, 20, 40, 100])
def test_odd_dimensions(tmp_path: Path, dim: int) -> None:
    """Dimensions not a multiple of the kernels' lanes: L2 and dot exact, cosine to rounding."""
    values = np.random.default_rng(dim).standard_normal((5000, dim)).astype(np.float32) * 3
    _write(tmp_path / "ds", values)
    for metric in ("l2", "dot", "cosine"):
        options = {
            "nearest": {"column": "vec", "q": values[9] * 0.5, "k": 20, "metric": metric},
            "columns": ["id"],
        }
        theirs, ours = _both(str(tmp_path / "ds"), **options)
        _same(ours, theirs, exact=metric != "cosine" or dim % 16 == 0)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types(tmp_path: Path, dtype: type) -> None:
    values = np.random.default_rng(1).standard_normal((5000, 24)).astype(dtype)
    _write(tmp_path / "ds", values)
    for metric in ("l2", "dot", "cosine"):
        options = {"nearest": {"column": "vec", "q": values[9].astype(np.float32), "k": 20, "metric": metric}}
        theirs, ours = _both(str(tmp_path / "ds"), columns=["id"], **options)
        _same(ours, theirs, exact=dtype == np.float64 and metric == "l2")


def test_hamming_uint8(tmp_path: Path) -> None:
    values = np.random.default_rng(2).integers(0, 256, (5000, 16), dtype=np.uint8)
    _write(tmp_path / "ds", values)
    q = values[9].astype(np.float32)
    odd = [{"q": [bad, 255.9, -0.5, *q[3:].tolist()]} for bad in (300.0, -3.0, float("nan"), 7.9)]
    for near in ({"metric": "hamming"}, {}, *odd):
        nearest = {"column": "vec", "q": q, "k": 25, **near}
        theirs, ours = _both(str(tmp_path / "ds"), nearest=nearest, columns=["id"])
        _same(ours, theirs)
    with pytest.raises(ValueError):
        lance_fw.dataset(str(tmp_path / "ds")).to_table(nearest={"column": "vec", "q": q, "metric": "l2"})


def test_nan_and_null_elements(tmp_path: Path) -> None:
    """A vector with a NaN is never returned; a null element counts its stored value, as in pylance."""
    values = np.random.default_rng(3).standard_normal((300, 16)).astype(np.float32)
    flat = values.ravel().copy()
    flat[16 * 2] = np.nan
    mask = np.zeros(len(flat), bool)
    mask[16 * 4 + 3] = True
    vec = pa.FixedSizeListArray.from_arrays(pa.array(flat, mask=mask), 16)
    lance.write_dataset(pa.table({"id": np.arange(300), "vec": vec}), str(tmp_path / "ds"))
    for q in (values[1], values[4]):
        theirs, ours = _both(str(tmp_path / "ds"), nearest={"column": "vec", "q": q, "k": 300})
        _same(ours, theirs)


def test_vector_index_searched_or_skipped_with_use_index_false(tmp_path: Path) -> None:
    """With a vector index the search goes through it, as pylance's (the same rows with explicit
    nprobes); ``use_index=False`` searches flat, as pylance does (tests/test_vector_index.py
    covers index searches in depth)."""
    values = np.random.default_rng(4).standard_normal((5000, 16)).astype(np.float32)
    _write(tmp_path / "ds", values)
    lance.dataset(str(tmp_path / "ds")).create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    nearest = {"column": "vec", "q": values[3], "k": 10}
    theirs, ours = _both(str(tmp_path / "ds"), nearest={**nearest, "nprobes": 2})
    assert sorted(ours.column("id").to_pylist()) == sorted(theirs.column("id").to_pylist())
    theirs, ours = _both(str(tmp_path / "ds"), nearest={**nearest, "use_index": False})
    _same(ours, theirs)


def test_stable_row_ids(tmp_path: Path) -> None:
    """With stable row ids, _rowid is the id (not the address) and ties order by it."""
    values = np.random.default_rng(5).standard_normal((5000, 16)).astype(np.float32)
    table = pa.table({"id": np.arange(5000), "vec": _vectors(values)})
    ds = lance.write_dataset(table, str(tmp_path / "ds"), max_rows_per_file=2000, enable_stable_row_ids=True)
    ds.delete("id < 100")
    ds.update({"id": "id + 100000"}, where="id < 300")  # moved rows get new ids
    nearest = {"column": "vec", "q": values[150], "k": 20}
    theirs, ours = _both(str(tmp_path / "ds"), nearest=nearest, with_row_id=True, with_row_address=True)
    _same(ours, theirs)
