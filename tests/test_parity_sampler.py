"""``lance_fw.sampler`` against pylance's ``lance.sampler``.

Both libraries read the same dataset directory (written by pylance, with deletions and fragments of
uneven sizes; one case written by lance_fw), so every deterministic path is compared batch by batch:
row values, batch sizes and order, schemas, error classes. The unseeded paths (``maybe_sample`` and
``reservoir_sampling``) are compared after seeding the global generators pylance draws from, or by
their properties where pylance's generator is a fresh, unseeded one.
"""

from __future__ import annotations

import inspect
import random
import warnings
from collections import Counter
from typing import Any

import lance
import lance.sampler as ls
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.sampler as fs
from lance_fw.errors import LanceError, UnsupportedFeatureError

ROWS = 12_000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "s": pa.array([f"v{i}" for i in range(ROWS)]),
        "x": pa.array([None if i % 11 == 0 else i * 0.5 for i in range(ROWS)], pa.float64()),
    }
)
#: Deleted rows: scattered, plus a whole run, so fragments end up of uneven live sizes
DELETE = "id % 7 = 3 OR (id >= 3000 AND id < 3700) OR id >= 11900"


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """(pylance dataset, lance_fw dataset) over one directory: 4 fragments, then deletions."""
    path = str(tmp_path_factory.mktemp("sampler") / "ds")
    pl = lance.write_dataset(TABLE, path, max_rows_per_file=3500)
    pl.delete(DELETE)
    pl.insert(TABLE.slice(0, 900))  # a small fifth fragment
    return lance.dataset(path), lance_fw.dataset(path)


def _builtin(error: BaseException) -> type[BaseException]:
    """The most specific builtin class of an error: what an ``except`` written for pylance names."""
    return next(c for c in type(error).__mro__ if c.__module__ == "builtins")


def _outcome(produce: Any) -> Any:
    """The batches (as (schema, rows) pairs) or the builtin error class a call ends in."""
    try:
        return [(b.schema, b.to_pydict()) for b in produce()]
    except Exception as error:
        return _builtin(error)


def _same(pl_call: Any, fw_call: Any) -> list[Any]:
    ours = _outcome(fw_call)
    theirs = _outcome(pl_call)
    assert ours == theirs
    return ours


# -- fragment samplers ----------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [128, 1000, 4097])
@pytest.mark.parametrize("options", [{}, {"columns": ["id"]}, {"filter": "id > 5000"}, {"with_row_id": True}])
def test_full_scan(both: tuple[Any, Any], batch_size: int, options: dict[str, Any]) -> None:
    pl, fw = both
    theirs = list(ls.FullScanSampler()(pl, batch_size=batch_size, **options))
    ours = list(fs.FullScanSampler()(fw, batch_size=batch_size, **options))
    assert pa.Table.from_batches(ours) == pa.Table.from_batches(theirs)
    assert sum(b.num_rows for b in ours) == pl.count_rows(options.get("filter"))
    if "filter" not in options:  # filtered scans: lance_fw's scanner cuts batches elsewhere
        assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]


@pytest.mark.parametrize(("rank", "world_size"), [(0, 1), (0, 2), (1, 2), (2, 3), (4, 8)])
@pytest.mark.parametrize(("randomize", "seed"), [(False, 0), (True, 0), (True, 7), (True, 12345)])
def test_sharded_fragments(
    both: tuple[Any, Any], rank: int, world_size: int, randomize: bool, seed: int
) -> None:
    pl, fw = both
    theirs = ls.ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)
    ours = fs.ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)
    assert [f.fragment_id for f in ours.iter_fragments(fw)] == [
        f.fragment_id for f in theirs.iter_fragments(pl)
    ]
    for sampler in (theirs, ours):
        sampler.set_epoch(3)
    _same(
        lambda: theirs(pl, batch_size=1500, columns=["id", "s"]),
        lambda: ours(fw, batch_size=1500, columns=["id", "s"]),
    )


def test_sharded_fragments_cover_dataset_once(both: tuple[Any, Any]) -> None:
    _, fw = both
    ids = [
        i
        for rank in range(3)
        for batch in fs.ShardedFragmentSampler(rank, 3, randomize=True, seed=5)(fw, batch_size=999)
        for i in batch.column("id").to_pylist()
    ]
    assert sorted(ids) == sorted(fw.to_table(columns=["id"]).column("id").to_pylist())


def test_seeded_shuffle_leaves_global_rng_alone(both: tuple[Any, Any]) -> None:
    _, fw = both
    random.seed(99)
    expected = random.random()
    random.seed(99)
    list(fs.ShardedFragmentSampler(0, 2, randomize=True, seed=1).iter_fragments(fw))
    list(fs.ShardedBatchSampler(0, 2, randomize=True, seed=1)(fw, batch_size=100))
    list(fs.ShardedBatchSampler(0, 2, randomize=True, seed=1)(fw, batch_size=100, filter="id > 9"))
    list(fs.ShardedFixedBatchSampler(0, 2, True, 1, 10, 100))
    assert random.random() == expected


# -- batch samplers -------------------------------------------------------------------------------

SHARDS = [(0, 1), (0, 2), (1, 2), (0, 3), (2, 3), (3, 4)]


@pytest.mark.parametrize(("rank", "world_size"), SHARDS)
@pytest.mark.parametrize("batch_size", [100, 1024, 1025, 4096, 5000])
@pytest.mark.parametrize(("randomize", "seed"), [(False, 0), (True, 0), (True, 42)])
def test_sharded_batches(
    both: tuple[Any, Any], rank: int, world_size: int, batch_size: int, randomize: bool, seed: int
) -> None:
    pl, fw = both
    theirs = ls.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)
    ours = fs.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)
    got = _same(
        lambda: theirs(pl, batch_size=batch_size, columns=["id", "x"]),
        lambda: ours(fw, batch_size=batch_size, columns=["id", "x"]),
    )
    assert all(len(rows["id"]) <= batch_size for _, rows in got)


def test_sharded_batches_reader_and_schema(both: tuple[Any, Any]) -> None:
    pl, fw = both
    theirs, ours = (
        ls.ShardedBatchSampler(1, 3)(pl, batch_size=2000),
        fs.ShardedBatchSampler(1, 3)(fw, batch_size=2000),
    )
    assert isinstance(ours, pa.RecordBatchReader) and isinstance(theirs, pa.RecordBatchReader)
    assert ours.schema == theirs.schema
    assert ours.read_all() == theirs.read_all()


def test_sharded_batches_errors_and_warning(both: tuple[Any, Any]) -> None:
    pl, fw = both
    for call in (
        lambda ds, s: s(ds, batch_size=10, columns={"y": "id * 2"}),
        lambda ds, s: s(ds, batch_size=10, columns=["nope"]),
        lambda ds, s: s(ds, batch_size=0),
    ):  # all raised at the call, before reading
        with pytest.raises(Exception) as theirs:
            call(pl, ls.ShardedBatchSampler(0, 2))
        with pytest.raises(Exception) as ours:
            call(fw, fs.ShardedBatchSampler(0, 2))
        assert isinstance(ours.value, _builtin(theirs.value))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ls.ShardedBatchSampler(0, 2)(pl, batch_size=10, with_row_id=True)
        fs.ShardedBatchSampler(0, 2)(fw, batch_size=10, with_row_id=True)
    assert len(caught) == 2 and str(caught[0].message) == str(caught[1].message)
    assert caught[0].category is caught[1].category


@pytest.mark.parametrize(("rank", "world_size"), SHARDS)
@pytest.mark.parametrize("batch_size", [7, 1024, 4097])
@pytest.mark.parametrize("filt", ["id > 2000", "x IS NOT NULL AND id < 9000"])
def test_sharded_batches_filtered(
    both: tuple[Any, Any], rank: int, world_size: int, batch_size: int, filt: str
) -> None:
    pl, fw = both
    got = _same(
        lambda: ls.ShardedBatchSampler(rank, world_size)(pl, batch_size=batch_size, filter=filt),
        lambda: fs.ShardedBatchSampler(rank, world_size)(fw, batch_size=batch_size, filter=filt),
    )
    assert all(len(rows["id"]) == batch_size for _, rows in got[:-1])


@pytest.mark.parametrize(("rank", "world_size", "seed", "epoch"), [(0, 1, 0, 0), (1, 3, 5, 0), (2, 4, 5, 2)])
@pytest.mark.parametrize("batch_size", [3, 64])
def test_sharded_batches_filtered_randomized(
    both: tuple[Any, Any], rank: int, world_size: int, seed: int, epoch: int, batch_size: int
) -> None:
    """More batches than the reservoir holds (256) at batch size 3: the seeded heap order matters."""
    pl, fw = both
    theirs = ls.ShardedBatchSampler(rank, world_size, randomize=True, seed=seed)
    ours = fs.ShardedBatchSampler(rank, world_size, randomize=True, seed=seed)
    theirs.set_epoch(epoch)
    ours.set_epoch(epoch)
    state = random.getstate()  # pylance reseeds the global generator: put it back for other tests
    try:
        _same(
            lambda: theirs(pl, batch_size=batch_size, columns=["id"], filter="id < 6000"),
            lambda: ours(fw, batch_size=batch_size, columns=["id"], filter="id < 6000"),
        )
    finally:
        random.setstate(state)


@pytest.mark.parametrize(
    ("filt", "rank", "world_size"),
    [("id < 0", 0, 1), ("id < 0", 1, 2), ("id = 1", 3, 4), ("id < 5", 3, 4)],
)
def test_sharded_batches_filtered_edges(both: tuple[Any, Any], filt: str, rank: int, world_size: int) -> None:
    """No row passes, or this rank's share is empty: pylance fails, lance_fw too (same builtin class)."""
    pl, fw = both
    _same(
        lambda: ls.ShardedBatchSampler(rank, world_size)(pl, batch_size=3, filter=filt, columns=["id"]),
        lambda: fs.ShardedBatchSampler(rank, world_size)(fw, batch_size=3, filter=filt, columns=["id"]),
    )


def test_sharded_batches_filtered_short_scan_batches(both: tuple[Any, Any]) -> None:
    """Where a scan batch holds no more rows than the rank still has to skip, pylance's sampler
    fails (its ``take`` of an empty index list) though the rank's share is not empty: here two
    one-row batches (one per fragment holding id 1) and rank 1 of 2. lance_fw deals rows across
    batch boundaries and yields the rank's row (the second copy of id 1); it cannot know where
    pylance's scan cuts its batches, so it does not copy that failure."""
    _, fw = both
    got = list(fs.ShardedBatchSampler(1, 2)(fw, batch_size=3, filter="id = 1", columns=["id"]))
    assert [b.to_pydict() for b in got] == [{"id": [1]}]


def test_batch_sampler_has_no_len() -> None:
    for lib in (ls, fs):
        with pytest.raises(AttributeError):
            len(lib.ShardedBatchSampler(0, 1))


@pytest.mark.parametrize(
    ("rank", "world_size", "batch_size", "total"),
    [(0, 1, 4, 23), (1, 3, 4, 23), (3, 4, 100, 1000), (2, 3, 1024, 5000), (0, 2, 0, 0), (1, 2, 5, 0)],
)
@pytest.mark.parametrize(("randomize", "seed", "epoch"), [(False, 0, 0), (True, 0, 0), (True, 3, 1)])
def test_fixed_batches(
    rank: int, world_size: int, batch_size: int, total: int, randomize: bool, seed: int, epoch: int
) -> None:
    state = random.getstate()
    try:
        theirs = ls.ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total)
        ours = fs.ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total)
        theirs.set_epoch(epoch)
        ours.set_epoch(epoch)
        assert len(ours) == len(theirs)
        assert list(ours) == list(theirs)
    finally:
        random.setstate(state)


def test_fixed_batches_errors_and_call(both: tuple[Any, Any]) -> None:
    pl, fw = both
    for lib in (ls, fs):
        with pytest.raises(ZeroDivisionError):
            lib.ShardedFixedBatchSampler(0, 2, total_num_rows=10)
    _same(
        lambda: ls.ShardedFixedBatchSampler(1, 3, batch_size=5, total_num_rows=10)(pl, batch_size=3000),
        lambda: fs.ShardedFixedBatchSampler(1, 3, batch_size=5, total_num_rows=10)(fw, batch_size=3000),
    )


def test_from_torch_needs_torch() -> None:
    pytest.importorskip("lance")  # torch is optional for both: without it both fail the same way
    try:
        import torch  # noqa: F401
    except ImportError:
        for lib in (ls, fs):
            with pytest.raises(ImportError):
                lib.ShardedFragmentSampler.from_torch()
            with pytest.raises(ImportError):
                lib.ShardedBatchSampler.from_torch(randomize=True)
            with pytest.raises(ImportError):
                lib.ShardedFixedBatchSampler.from_torch(10, 100)
    else:
        pytest.skip("torch installed: from_torch needs a distributed group")


def test_signatures() -> None:
    def params(fn: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    pairs: list[tuple[str, str | None]] = [("maybe_sample", None), ("reservoir_sampling", None)]
    for cls in (
        "Sampler",
        "FragmentSampler",
        "FullScanSampler",
        "ShardedFragmentSampler",
        "ShardedBatchSampler",
        "ShardedFixedBatchSampler",
    ):
        for member in (
            "__init__",
            "__call__",
            "iter_fragments",
            "set_epoch",
            "from_torch",
            "__len__",
            "__iter__",
        ):
            if member in vars(getattr(ls, cls)):
                pairs.append((cls, member))
    for owner, wanted in pairs:
        theirs_fn, ours_fn = getattr(ls, owner), getattr(fs, owner)
        if wanted is not None:
            assert hasattr(ours_fn, wanted), (owner, wanted)  # defined there or inherited
            theirs_fn, ours_fn = getattr(theirs_fn, wanted), getattr(ours_fn, wanted)
        assert params(ours_fn) == params(theirs_fn), (owner, wanted)
    for name in ls.__all__:
        assert name in fs.__all__


def test_custom_fragment_sampler(both: tuple[Any, Any]) -> None:
    """A user subclass (the documented extension point) works on both."""

    def make(base: type) -> Any:
        class LastFirst(base):
            def iter_fragments(self, ds: Any, *args: Any, **kwargs: Any) -> Any:
                yield from reversed(ds.get_fragments())

        return LastFirst()

    pl, fw = both
    _same(
        lambda: make(ls.FragmentSampler)(pl, batch_size=2048),
        lambda: make(fs.FragmentSampler)(fw, batch_size=2048),
    )
    for lib in (ls, fs):
        with pytest.raises(TypeError):
            lib.Sampler()  # abstract


# -- maybe_sample and reservoir_sampling ----------------------------------------------------------


def _seeded(call: Any, seed: int) -> Any:
    np_state, py_state = np.random.get_state(), random.getstate()
    np.random.seed(seed)
    random.seed(seed)
    try:
        return _outcome(call)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


@pytest.mark.parametrize(
    ("n", "options"),
    [
        (10**6, {"batch_size": 4000}),  # n above the row count: a plain scan
        (10**6, {"batch_size": 1024, "filt": "id > 10000"}),
        (3000, {"batch_size": 1000, "max_takes": 100}),  # runs of adjacent rows
        (5000, {"batch_size": 4096, "max_takes": 64}),
        (1500, {"batch_size": 512}),  # n <= max_takes: distinct random rows
        (5000, {"batch_size": 1024, "filt": "x is not null", "max_takes": 16}),
        (50, {"batch_size": 20, "max_takes": 64}),
    ],
)
@pytest.mark.parametrize("seed", [0, 11])
def test_maybe_sample_with_seeded_globals(
    both: tuple[Any, Any], n: int, options: dict[str, Any], seed: int
) -> None:
    """pylance draws from the global numpy / Python generators: seeded, both give the same rows."""
    pl, fw = both
    columns = ["x"] if options.get("filt") == "x is not null" else ["id", "x"]
    ours = _seeded(lambda: fs.maybe_sample(fw, n, columns, **options), seed)
    assert ours == _seeded(lambda: ls.maybe_sample(pl, n, columns, **options), seed)
    assert isinstance(ours, list) and ours


def test_maybe_sample_properties(both: tuple[Any, Any]) -> None:
    """Unseeded: n distinct live rows in batches of at most batch_size."""
    _, fw = both
    rows = Counter((r["id"], r["s"]) for r in fw.to_table(columns=["id", "s"]).to_pylist())
    for n, batch_size in [(700, 256), (1600, 4096), (3000, 1000)]:
        batches = list(fs.maybe_sample(fw, n, ["id", "s"], batch_size=batch_size, max_takes=1024))
        got = [(r["id"], r["s"]) for b in batches for r in b.to_pylist()]
        # no live row drawn twice (values repeat: the fifth fragment copies rows 0..899); above
        # max_takes, runs of n // max_takes rows per chunk can fall short of n (as in pylance)
        assert (len(got) == n if n <= 1024 else 0 < len(got) <= n) and not Counter(got) - rows
        if n <= 1024:
            assert all(b.num_rows <= batch_size for b in batches)


def test_maybe_sample_path_and_string_column(both: tuple[Any, Any]) -> None:
    pl, fw = both
    assert _outcome(lambda: fs.maybe_sample(fw.uri, 10**6, "id", batch_size=5000)) == _outcome(
        lambda: ls.maybe_sample(pl.uri, 10**6, "id", batch_size=5000)
    )


def test_maybe_sample_unsupported_filter(both: tuple[Any, Any]) -> None:
    pl, fw = both
    with pytest.raises(NotImplementedError):
        list(ls.maybe_sample(pl, 100, ["id"], filt="id > 3"))
    with pytest.raises(UnsupportedFeatureError) as caught:
        list(fs.maybe_sample(fw, 100, ["id"], filt="id > 3"))
    assert isinstance(caught.value, NotImplementedError) and "id > 3" in str(caught.value)


def test_reservoir_sampling() -> None:
    for lib in (ls, fs):
        assert sorted(lib.reservoir_sampling(range(3), 5)) == [0, 1, 2]
        sample = lib.reservoir_sampling(range(5000), 40)
        assert len(sample) == 40 == len(set(sample)) and set(sample) <= set(range(5000))
        assert lib.reservoir_sampling([], 3) == []


def test_dataset_written_by_lance_fw(tmp_path: Any) -> None:
    path = str(tmp_path / "fw")
    fw = lance_fw.write_dataset(TABLE.slice(0, 9000), path, max_rows_per_file=4000)
    fw.delete("id % 5 = 0")
    fw = lance_fw.dataset(path)
    pl = lance.dataset(path)
    _same(
        lambda: ls.ShardedBatchSampler(1, 2, randomize=True, seed=8)(pl, batch_size=1100),
        lambda: fs.ShardedBatchSampler(1, 2, randomize=True, seed=8)(fw, batch_size=1100),
    )
    _same(
        lambda: ls.ShardedFragmentSampler(0, 2, randomize=True, seed=8)(pl, batch_size=1100),
        lambda: fs.ShardedFragmentSampler(0, 2, randomize=True, seed=8)(fw, batch_size=1100),
    )
    assert issubclass(UnsupportedFeatureError, LanceError)
