"""IVF_PQ vector indices against pylance 14, both directions.

* lance_fw searching pylance's index returns pylance's rows and distances (the PQ estimates are
  computed the same way, so equal up to float32 rounding) at a given ``nprobes``, with and without
  ``refine_factor``, for l2, cosine and dot; after deletions; with rows appended after the index
  (searched flat and merged); with a prefilter.
* pylance lists and searches the index lance_fw builds, and its recall@10 there is at least its
  recall on its own index minus 0.05 (and lance_fw's search of that index equals pylance's).

Data: clustered vectors (64 centres) over several fragments, small enough to keep the module fast.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.api.indices import IndexMethods
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 12000
DIM = 32
ROWS_PER_FILE = 5000
PARTITIONS = 16
SUB_VECTORS = 8
QUERIES = 20
#: queries of a recall comparison between two builds (each build's k-means optimum differs)
RECALL_QUERIES = 80
K = 10
#: clusters of the data: many small ones, so partition boundaries cut few of them and the recall of
#: two k-means optima (pylance's is unseeded) differs little
CENTRES = 512
#: recall pylance gets from lance_fw's index may be this much below what it gets from its own.
#: pylance's own build is unseeded: over 6 builds of the cosine data its recall at 4 probes ranged
#: 0.70-0.755 while lance_fw's (seeded) stayed 0.699; 0.05 failed one CI run in many (0.056).
RECALL_SLACK = 0.07
#: copies of each vector in the data of the ties test
TIED_COPIES = 4


def _data(seed: int, rows: int = ROWS, centres: int = 64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    at = rng.standard_normal((centres, DIM)).astype(np.float32) * 3
    return (at[rng.integers(0, centres, rows)] + rng.standard_normal((rows, DIM))).astype(np.float32)


def _table(values: np.ndarray, start: int = 0) -> pa.Table:
    vec = pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), DIM)
    return pa.table({"id": np.arange(start, start + len(values)), "vec": vec})


def _near(values: np.ndarray, seed: int, count: int = RECALL_QUERIES) -> np.ndarray:
    """Queries near rows of ``values`` (each a row plus unit noise)."""
    rng = np.random.default_rng(seed + 1000)
    noise = rng.standard_normal((count, values.shape[1])).astype(np.float32)
    return values[rng.choice(len(values), count)] + noise


def _queries(seed: int, count: int = QUERIES) -> np.ndarray:
    return _data(seed + 100, count)


def _fw_create(path: str, metric: str, **params: Any) -> None:
    """lance_fw's ``create_index`` (the ``IndexMethods`` method: ``LanceDataset`` reaches it once
    ``DatasetExtras`` no longer refuses the name)."""
    ds = lance_fw.dataset(path)
    IndexMethods.create_index(
        ds,
        "vec",
        "IVF_PQ",
        num_partitions=PARTITIONS,
        num_sub_vectors=SUB_VECTORS,
        metric=metric,
        **params,
    )


@pytest.fixture(scope="module", params=["l2", "cosine", "dot"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same data indexed by pylance and by lance_fw, with the exact answers."""
    metric = request.param
    values = _data(1, centres=CENTRES)
    root = tmp_path_factory.mktemp(f"ivfpq_{metric}")
    paths = {}
    for who in ("pylance", "lance_fw"):
        path = str(root / who)
        lance.write_dataset(_table(values), path, max_rows_per_file=ROWS_PER_FILE)
        if who == "pylance":
            lance.dataset(path).create_index(
                "vec", "IVF_PQ", num_partitions=PARTITIONS, num_sub_vectors=SUB_VECTORS, metric=metric
            )
        else:
            _fw_create(path, metric)
        paths[who] = path
    queries = _near(values, 1)
    truth = [
        set(
            lance.dataset(paths["pylance"])
            .to_table(
                nearest={"column": "vec", "q": q, "k": K, "use_index": False, "metric": metric},
                columns=["id"],
            )["id"]
            .to_pylist()
        )
        for q in queries
    ]
    return {"metric": metric, "paths": paths, "queries": queries, "truth": truth, "values": values}


def _search(ds: Any, q: np.ndarray, **nearest: Any) -> pa.Table:
    return ds.to_table(nearest={"column": "vec", "q": q, "k": K, **nearest}, columns=["id"], with_row_id=True)


def _recall(ds: Any, built: dict[str, Any], **nearest: Any) -> float:
    hits = [
        len(set(_search(ds, q, **nearest)["id"].to_pylist()) & truth) / K
        for q, truth in zip(built["queries"], built["truth"], strict=True)
    ]
    return float(np.mean(hits))


def _same_answers(path: str, queries: np.ndarray, approximate: bool = False, **nearest: Any) -> None:
    """Both libraries return the same rows in the same order with the same float32 distances, to
    the bit: the same rows survive ties at the k-th distance (pylance's heap order).

    With ``approximate`` (IVF_SQ, and cosine IVF_FLAT: kernels lance_fw does not replay to the
    bit) distances agree up to float32 rounding, and two rows whose distances are equal up to that
    rounding may swap, or one may replace the other at k."""
    theirs_ds, ours_ds = lance.dataset(path), lance_fw.dataset(path)
    for q in queries:
        theirs, ours = _search(theirs_ds, q, **nearest), _search(ours_ds, q, **nearest)
        a, b = theirs["_distance"].to_numpy(), ours["_distance"].to_numpy()
        if not approximate:
            assert ours["_rowid"].to_pylist() == theirs["_rowid"].to_pylist()
            assert b.tobytes() == a.tobytes()
            continue
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
        if ours["id"].to_pylist() != theirs["id"].to_pylist():
            tol = 1e-5 * max(1.0, float(np.abs(a).max()))
            differ = np.flatnonzero(ours["id"].to_numpy() != theirs["id"].to_numpy())
            for i in differ:  # a swap at a near tie: a neighbour at (almost) the same distance
                near = np.flatnonzero(np.abs(a - a[i]) <= tol)
                assert len(near) > 1 or i == len(a) - 1, (i, ours["id"].to_pylist(), theirs["id"].to_pylist())


@pytest.mark.parametrize("nearest", [{"nprobes": 1}, {"nprobes": 4}, {"nprobes": 3, "refine_factor": 4}])
def test_search_of_pylance_index_equals_pylance(built: dict[str, Any], nearest: dict[str, Any]) -> None:
    _same_answers(built["paths"]["pylance"], built["queries"][:8], **nearest)


def test_pylance_uses_lance_fw_index(built: dict[str, Any]) -> None:
    path = built["paths"]["lance_fw"]
    theirs = lance.dataset(path)
    (described,) = theirs.describe_indices()
    assert described.index_type == "IVF_PQ"
    assert described.details == lance.dataset(built["paths"]["pylance"]).describe_indices()[0].details
    stats = theirs.stats.index_stats("vec_idx")
    assert stats["index_type"] == "IVF_PQ" and stats["num_indexed_rows"] == ROWS
    segment = stats["indices"][0]
    assert segment["num_partitions"] == PARTITIONS
    assert sum(p["size"] for p in segment["partitions"]) == ROWS
    assert segment["sub_index"]["num_sub_vectors"] == SUB_VECTORS
    assert segment["metric_type"] == built["metric"]
    assert "ANNSubIndex" in theirs.scanner(nearest={"column": "vec", "q": built["queries"][0]}).explain_plan()
    for nprobes in (4, 8):
        own = _recall(lance.dataset(built["paths"]["pylance"]), built, nprobes=nprobes)
        ours = _recall(theirs, built, nprobes=nprobes)
        assert ours >= own - RECALL_SLACK, (nprobes, ours, own)
    # lance_fw reads its own index as pylance does
    _same_answers(path, built["queries"][:8], nprobes=3)
    _same_stats(path)
    _same_stats(built["paths"]["pylance"])


def test_recall_of_lance_fw_search(built: dict[str, Any]) -> None:
    pylance_index = built["paths"]["pylance"]
    for nearest in ({"nprobes": 4}, {}, {"nprobes": 2, "refine_factor": 5}):
        own = _recall(lance.dataset(pylance_index), built, **nearest)
        ours = _recall(lance_fw.dataset(pylance_index), built, **nearest)
        assert ours >= own - RECALL_SLACK, (nearest, ours, own)


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_FLAT"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_rows_tied_at_k_are_the_rows_pylance_keeps(tmp_path: Path, index_type: str, metric: str) -> None:
    """Every vector is stored four times, so the k-th distance is shared by several rows: the
    ones returned are those pylance's top-k heap keeps (neither the lowest nor the first row
    ids), over one and several probed partitions, after deletions."""
    rng = np.random.default_rng(9)
    base = rng.standard_normal((1500, DIM)).astype(np.float32)
    values = base[rng.permutation(np.repeat(np.arange(len(base)), TIED_COPIES))]
    path = str(tmp_path / "ties")
    lance.write_dataset(_table(values), path, max_rows_per_file=2500)
    lance.dataset(path).delete("id % 13 = 0")
    extra = {"num_sub_vectors": SUB_VECTORS} if index_type == "IVF_PQ" else {}
    lance.dataset(path).create_index("vec", index_type, num_partitions=6, metric=metric, **extra)
    queries = _near(base, 9, 6)
    approximate = index_type == "IVF_FLAT" and metric == "cosine"
    for k, nprobes in [(7, 1), (30, 3), (101, 6)]:
        _same_answers(path, queries, approximate, k=k, nprobes=nprobes)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_SQ"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_ivf_flat_and_sq_both_ways(tmp_path: Path, index_type: str, metric: str) -> None:
    """IVF_FLAT / IVF_SQ: each library's search of each library's index gives pylance's answer,
    pylance lists lance_fw's index by its type, and recall on it is pylance's own at least."""
    values = _data(5, 6000, centres=CENTRES)
    many = _near(values, 5)
    queries = many[:8]
    paths = {who: str(tmp_path / who) for who in ("pylance", "lance_fw")}
    for who, path in paths.items():
        lance.write_dataset(_table(values), path, max_rows_per_file=2500)
        if who == "pylance":
            lance.dataset(path).create_index("vec", index_type, num_partitions=8, metric=metric)
        else:
            IndexMethods.create_index(
                lance_fw.dataset(path), "vec", index_type, num_partitions=8, metric=metric
            )
        approximate = index_type == "IVF_SQ" or metric == "cosine"
        _same_answers(path, queries, approximate, nprobes=2)
        _same_answers(path, queries[:3], approximate, nprobes=1, refine_factor=2)
    theirs = lance.dataset(paths["lance_fw"])
    assert theirs.describe_indices()[0].index_type == index_type
    assert (
        theirs.describe_indices()[0].details == lance.dataset(paths["pylance"]).describe_indices()[0].details
    )
    _same_stats(paths["lance_fw"])
    _same_stats(paths["pylance"])
    assert theirs.stats.index_stats("vec_idx")["indices"][0]["num_partitions"] == 8
    exact = lance.dataset(paths["pylance"])
    truth = [
        set(
            exact.to_table(nearest={"column": "vec", "q": q, "k": K, "use_index": False, "metric": metric})[
                "id"
            ].to_pylist()
        )
        for q in many
    ]
    built = {"queries": many, "truth": truth}
    # pylance's k-means is not seeded: its own recall here varies by 0.1 from build to build, so
    # "pylance's recall" is the median of three of its builds
    owns = [_recall(exact, built, nprobes=4)]
    for _ in range(2):
        exact.create_index("vec", index_type, num_partitions=8, metric=metric, replace=True)
        owns.append(_recall(lance.dataset(paths["pylance"]), built, nprobes=4))
    assert _recall(theirs, built, nprobes=4) >= float(np.median(owns)) - RECALL_SLACK, owns


def _same_stats(path: str) -> None:
    """``stats.index_stats`` of a vector index equals pylance's (centroids and loss up to float
    rounding; the timestamp aside)."""
    theirs = lance.dataset(path).stats.index_stats("vec_idx")
    ours = lance_fw.dataset(path).stats.index_stats("vec_idx")
    assert list(ours) == list(theirs)
    for key in theirs:
        if key in ("indices", "segments"):
            for mine, their in zip(copy.deepcopy(ours[key]), theirs[key], strict=True):
                assert list(mine) == list(their)
                np.testing.assert_allclose(mine.pop("centroids"), their.pop("centroids"), rtol=1e-6)
                np.testing.assert_allclose(mine.pop("loss"), their.pop("loss"), rtol=1e-6)
                if "bounds" in their["sub_index"]:  # pylance's JSON parse may be an ulp off (f64)
                    bounds = mine["sub_index"].pop("bounds"), their["sub_index"].pop("bounds")
                    np.testing.assert_allclose(list(bounds[0].values()), list(bounds[1].values()), rtol=1e-12)
                assert mine == their
        else:
            assert ours[key] == theirs[key], key


def _copy(path: str, tmp_path: Path) -> str:
    target = str(tmp_path / "copy")
    shutil.copytree(path, target)
    return target


def test_deleted_and_appended_rows(built: dict[str, Any], tmp_path: Path) -> None:
    for who in ("pylance", "lance_fw"):
        path = _copy(built["paths"][who], tmp_path / who)
        queries = built["queries"][:6]
        nearest_ids = _search(lance.dataset(path), queries[0], nprobes=4)["id"].to_pylist()
        lance.dataset(path).delete(f"id IN ({', '.join(map(str, nearest_ids[:3]))}) OR id % 7 = 0")
        # appended after the index: the query itself and its neighbours must be found (searched flat)
        extra = np.concatenate([queries[:3], _data(9, 3000)])
        lance.write_dataset(_table(extra, start=ROWS), path, mode="append", max_rows_per_file=2000)
        for nearest in ({"nprobes": 4}, {"nprobes": 2, "refine_factor": 3}):
            _same_answers(path, queries, **nearest)
        ours = _search(lance_fw.dataset(path), queries[1], nprobes=4)["id"].to_pylist()
        assert ROWS + 1 in ours
        assert not set(ours) & set(nearest_ids[:3]) and all(i % 7 for i in ours if i < ROWS)


def test_prefilter_and_postfilter(built: dict[str, Any]) -> None:
    path = built["paths"]["pylance"]
    for prefilter in (True, False):
        for q in built["queries"][:4]:
            options: dict[str, Any] = {
                "nearest": {"column": "vec", "q": q, "k": K, "nprobes": 4},
                "filter": "id % 3 = 1",
                "prefilter": prefilter,
                "columns": ["id"],
            }
            theirs, ours = lance.dataset(path).to_table(**options), lance_fw.dataset(path).to_table(**options)
            assert ours["id"].to_pylist() == theirs["id"].to_pylist()
            if prefilter:
                assert ours.num_rows == K


def test_index_metric_and_use_index(built: dict[str, Any]) -> None:
    """A query without metric takes the index's; another metric, or use_index=False, is flat."""
    path = built["paths"]["pylance"]
    other = "dot" if built["metric"] != "dot" else "l2"
    q = built["queries"][0]
    for nearest in ({"metric": other}, {"use_index": False}, {"metric": built["metric"], "nprobes": 2}):
        theirs = _search(lance.dataset(path), q, **nearest)
        ours = _search(lance_fw.dataset(path), q, **nearest)
        assert ours["id"].to_pylist() == theirs["id"].to_pylist()
        np.testing.assert_allclose(ours["_distance"].to_numpy(), theirs["_distance"].to_numpy(), rtol=1e-5)


def test_parameters_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(_data(3, 600)), path)
    ds = lance_fw.dataset(path)

    def create(index_type: str = "IVF_PQ", **params: Any) -> None:
        IndexMethods.create_index(ds, "vec", index_type, **params)

    with pytest.raises(InvalidArgumentError, match="required"):
        create(num_partitions=2)
    with pytest.raises(UnsupportedFeatureError, match="num_bits"):
        create(num_partitions=2, num_sub_vectors=4, num_bits=4)
    with pytest.raises(InvalidArgumentError, match="colour"):
        create(num_partitions=2, num_sub_vectors=4, colour="red")
    with pytest.raises(InvalidArgumentError, match="divide"):
        create(num_partitions=2, num_sub_vectors=5)
    with pytest.raises(UnsupportedFeatureError, match="accelerator"):
        create(num_partitions=2, num_sub_vectors=4, accelerator="cuda")
    for other in ("IVF_HNSW_SQ", "IVF_RQ"):
        with pytest.raises(UnsupportedFeatureError, match=other):
            create(other, num_partitions=2)
    with pytest.raises(InvalidArgumentError, match="num_sub_vectors"):
        create("IVF_FLAT", num_partitions=2, num_sub_vectors=4)  # not an IVF_FLAT parameter
    with pytest.raises(InvalidArgumentError, match="required"):
        create("IVF_SQ")
    with pytest.raises(UnsupportedFeatureError):
        IndexMethods.create_index(ds, "id", "IVF_PQ", num_partitions=2, num_sub_vectors=1)


def test_unsupported_vector_index_refused_unless_flat(tmp_path: Path) -> None:
    """An index type lance_fw cannot search (IVF_HNSW_SQ) is refused by name, never searched flat
    silently; ``use_index=False`` gives the exact answer."""
    path = str(tmp_path / "ds")
    values = _data(4, 3000)
    lance.write_dataset(_table(values), path)
    lance.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=4)
    with pytest.raises(UnsupportedFeatureError, match="IVF_HNSW_SQ"):
        lance_fw.dataset(path).to_table(nearest={"column": "vec", "q": values[0]})
    exact = lance_fw.dataset(path).to_table(nearest={"column": "vec", "q": values[0], "use_index": False})
    assert exact["id"][0].as_py() == 0


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_FLAT", "IVF_SQ"])
def test_optimize_indices_adds_appended_rows(tmp_path: Path, index_type: str) -> None:
    """``optimize_indices`` re-encodes every row with the index's model (no retraining, as
    pylance's merge): pylance then sees no unindexed rows, and both libraries answer alike."""
    path = str(tmp_path / "ds")
    values = _data(6, 4000)
    lance.write_dataset(_table(values), path)
    params: dict[str, Any] = {"num_partitions": 8, "metric": "l2"}
    if index_type == "IVF_PQ":
        params["num_sub_vectors"] = SUB_VECTORS
    lance.dataset(path).create_index("vec", index_type, **params)
    lance.write_dataset(_table(_data(7, 1500), start=4000), path, mode="append")
    lance.dataset(path).delete("id % 11 = 0")
    ds = lance_fw.dataset(path)
    ds.optimize.optimize_indices()
    theirs = lance.dataset(path)
    stats = theirs.stats.index_stats("vec_idx")
    assert stats["num_unindexed_rows"] == 0 and stats["num_indices"] == 1
    assert stats["num_indexed_rows"] == 5500 - len(range(0, 5500, 11))
    assert theirs.describe_indices()[0].index_type == index_type
    _same_answers(path, _queries(6)[:6], index_type == "IVF_SQ", nprobes=3)
    # lance_fw's own index is optimized alike
    IndexMethods.create_index(lance_fw.dataset(path), "vec", index_type, replace=True, **params)
    lance.write_dataset(_table(_data(8, 500), start=5500), path, mode="append")
    lance_fw.dataset(path).optimize.optimize_indices()
    assert lance.dataset(path).stats.index_stats("vec_idx")["num_unindexed_rows"] == 0
    _same_answers(path, _queries(6)[:6], index_type == "IVF_SQ", nprobes=3)


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_explain_plan_of_index_search(tmp_path: Path, metric: str) -> None:
    """pylance's ANN plan (ANNSubIndex / ANNIvfPartition, the refine and unindexed-fragment
    re-measure and union, prefilter input, post-filter), but for the path's leading "/" and
    DataFusion's filter form."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(_data(10, 3000)), path, max_rows_per_file=1200)
    lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=4, metric=metric)
    q = _queries(10)[0]

    def same(**options: Any) -> None:
        theirs = lance.dataset(path).scanner(**options).explain_plan()
        theirs = re.sub(r"id@\d+ > ", "id > ", theirs.replace("uri=/", "uri=")).replace("Int64(3)", "3")
        assert lance_fw.dataset(path).scanner(**options).explain_plan().replace("uri=/", "uri=") == theirs

    for appended in (False, True):
        if appended:
            lance.write_dataset(_table(_data(11, 200), start=3000), path, mode="append")
        same(nearest={"column": "vec", "q": q, "k": 5})
        same(nearest={"column": "vec", "q": q, "k": 5, "nprobes": 2, "refine_factor": 3}, columns=["id"])
        same(nearest={"column": "vec", "q": q, "k": 5}, columns=["id"], filter="id > 3")
    same(nearest={"column": "vec", "q": q, "k": 5, "minimum_nprobes": 2}, columns=["id"])


def test_stable_row_ids(tmp_path: Path) -> None:
    """With stable row ids the index stores ids, not addresses: lance_fw maps them to the live
    rows (deleted, updated and appended rows as pylance) and answers as pylance does."""
    path = str(tmp_path / "ds")
    values = _data(12, 5000, centres=CENTRES)
    lance.write_dataset(_table(values), path, max_rows_per_file=2000, enable_stable_row_ids=True)
    lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=8, num_sub_vectors=SUB_VECTORS)
    queries = _near(values, 12, 6)
    nearest_ids = _search(lance.dataset(path), queries[0], nprobes=4)["id"].to_pylist()
    lance.dataset(path).delete(f"id = {nearest_ids[0]} OR id % 13 = 0")
    lance.dataset(path).update({"id": "id + 100000"}, where=f"id = {nearest_ids[1]} OR id < 40")
    lance.write_dataset(_table(queries[:2], start=9000), path, mode="append")
    for nearest in ({"nprobes": 4}, {"nprobes": 2, "refine_factor": 3}):
        _same_answers(path, queries, **nearest)
    options: dict[str, Any] = {
        "nearest": {"column": "vec", "q": queries[1], "k": K, "nprobes": 4},
        "with_row_id": True,
        "with_row_address": True,
        "filter": "id % 2 = 0",
        "prefilter": True,
    }
    assert lance_fw.dataset(path).to_table(**options).drop_columns(["_distance"]) == lance.dataset(
        path
    ).to_table(**options).drop_columns(["_distance"])


def test_build_with_stable_row_ids(tmp_path: Path) -> None:
    """On a dataset with stable row ids lance_fw's index stores the ids (as pylance's does):
    pylance searches it with lance_fw's answers, also after deletes, updates and optimize."""
    path = str(tmp_path / "ds")
    values = _data(13, 5000, centres=CENTRES)
    lance.write_dataset(_table(values), path, max_rows_per_file=2000, enable_stable_row_ids=True)
    lance.dataset(path).delete("id < 50")
    lance.dataset(path).update({"id": "id + 100000"}, where="id < 120")  # ids and addresses differ
    IndexMethods.create_index(
        lance_fw.dataset(path), "vec", "IVF_PQ", num_partitions=8, num_sub_vectors=SUB_VECTORS
    )
    queries = _near(values, 13, 6)
    _same_answers(path, queries, nprobes=3)
    lance.dataset(path).delete("id % 9 = 0")
    lance.write_dataset(_table(queries[:2], start=9000), path, mode="append")
    _same_answers(path, queries, nprobes=3, refine_factor=2)
    lance_fw.dataset(path).optimize.optimize_indices()
    assert lance.dataset(path).stats.index_stats("vec_idx")["num_unindexed_rows"] == 0
    _same_answers(path, queries, nprobes=3)
