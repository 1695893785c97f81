"""``lance.optimize.Compaction`` (plan / execute tasks elsewhere / commit) against pylance: the same
plan, the same results, the same committed dataset, with tasks sent through pickle and JSON."""

from __future__ import annotations

import pickle

import lance
import lance.optimize
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 21_000  # fragments of 1500 rows: several 1024-value blocks and 4096-value chunks per task


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "id": pa.array(np.arange(ROWS, dtype=np.int64)),
            "v": pa.array(rng.normal(size=ROWS)),
            "s": pa.array([f"row-{i % 977}" for i in range(ROWS)]),
        }
    )


@pytest.fixture
def both(tmp_path):
    out = {}
    for mod in (lance, lance_fw):
        path = str(tmp_path / f"{mod.__name__}.lance")
        mod.write_dataset(_table(), path, max_rows_per_file=1500)
        ds = mod.dataset(path)
        ds.delete("id % 5 = 0 AND id < 4000")
        out[mod] = mod.dataset(path)
    return out


def _fragment_rows(ds) -> list[tuple[int, int]]:
    return [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()]


@pytest.mark.parametrize(
    "options",
    [
        {"target_rows_per_fragment": 4000},
        {"target_rows_per_fragment": 6000, "materialize_deletions_threshold": 0.05},
    ],
)
def test_plan_execute_commit_matches_pylance(both, options):
    results = {}
    for mod, ds in both.items():
        plan = mod.optimize.Compaction.plan(ds, options)
        tasks = [pickle.loads(pickle.dumps(t)) for t in plan.tasks]
        rewrites = [pickle.loads(pickle.dumps(t.execute(ds))) for t in tasks]
        shape = (
            plan.read_version,
            plan.num_tasks(),
            [[f.id for f in t.fragments] for t in plan.tasks],
            [[f.id for f in r.original_fragments] for r in rewrites],
            [sum(f.physical_rows for f in r.new_fragments) for r in rewrites],
            [{k: getattr(r.metrics, k) for k in _METRIC_FIELDS} for r in rewrites],
        )
        metrics = mod.optimize.Compaction.commit(ds, rewrites)
        results[mod] = (
            shape,
            {k: getattr(metrics, k) for k in _METRIC_FIELDS},
            ds.version,
            _fragment_rows(ds),
            mod.dataset(ds.uri).to_table(),
        )
    ours, theirs = results[lance_fw], results[lance]
    assert ours[:4] == theirs[:4]
    assert ours[4].equals(theirs[4])


_METRIC_FIELDS = ("fragments_removed", "fragments_added", "files_removed", "files_added")


def test_task_metrics_and_json_round_trip(both):
    ds = both[lance_fw]
    plan = lance_fw.optimize.Compaction.plan(ds, {"target_rows_per_fragment": 4000})
    again = lance_fw.optimize.CompactionPlan.from_json(plan.json())
    assert again == plan
    theirs = lance.optimize.Compaction.plan(both[lance], {"target_rows_per_fragment": 4000})
    ours_results = [lance_fw.optimize.CompactionTask.from_json(t.json()).execute(ds) for t in again.tasks]
    their_results = [t.execute(both[lance]) for t in theirs.tasks]
    for mine, pl in zip(ours_results, their_results, strict=True):
        assert {k: getattr(mine.metrics, k) for k in _METRIC_FIELDS} == {
            k: getattr(pl.metrics, k) for k in _METRIC_FIELDS
        }
        assert lance_fw.optimize.RewriteResult.from_json(mine.json()) == mine
    # a subset of the results commits on its own, as pylance allows
    lance_fw.optimize.Compaction.commit(ds, ours_results[:1])
    lance.optimize.Compaction.commit(both[lance], their_results[:1])
    assert _fragment_rows(ds) == _fragment_rows(both[lance])
    assert ds.to_table().equals(both[lance].to_table())


def test_execute_is_compact_files(both):
    for mod, ds in both.items():
        mod.optimize.Compaction.execute(ds, {"target_rows_per_fragment": 5000})
    assert _fragment_rows(both[lance_fw]) == _fragment_rows(both[lance])
    assert both[lance_fw].version == both[lance].version


def test_tasks_run_on_a_later_version(both):
    """A task reads its fragments at the planned version even when the dataset moved on."""
    results = {}
    for mod, ds in both.items():
        plan = mod.optimize.Compaction.plan(ds, {"target_rows_per_fragment": 4000})
        mod.write_dataset(_table().slice(0, 100), ds.uri, mode="append")
        later = mod.dataset(ds.uri)
        rewrites = [t.execute(later) for t in plan.tasks]
        mod.optimize.Compaction.commit(later, rewrites)
        results[mod] = (_fragment_rows(later), later.to_table())
    assert results[lance_fw][0] == results[lance][0]
    assert results[lance_fw][1].equals(results[lance][1])


def test_options_are_checked(both):
    ds = both[lance_fw]
    with pytest.raises(InvalidArgumentError, match="bogus"):
        lance_fw.optimize.Compaction.plan(ds, {"bogus": 1})
    with pytest.raises(UnsupportedFeatureError, match="compaction_mode"):
        lance_fw.optimize.Compaction.plan(ds, {"compaction_mode": "force_binary_copy"})
    with pytest.raises(UnsupportedFeatureError, match="max_source_rows"):
        lance_fw.optimize.Compaction.commit(ds, [], {"max_source_rows": 10})
