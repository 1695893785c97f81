"""The scalar-index kernel (issue 13): building, committing, planning and re-checking, through the
third-party example index (examples/lance_fw_bloom, installed by entry point) and run-time plugins.

pylance ignores an index type it does not know (with a warning), so it stays the oracle for the
rows every filter must return on the very same dataset. The per-type byte compatibility with
pylance (BTREE, BITMAP, LABEL_LIST, ZONEMAP) is tested in tests/test_index_<type>.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import pyroaring

import lance
import lance_fw
from lance_fw import plugin_manager
from lance_fw.errors import IndexContractError, InvalidArgumentError, PluginConflictError, UnsupportedFeatureError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import EqualsQuery, IndexSearchResult

lance_fw_bloom = pytest.importorskip("lance_fw_bloom", reason="pip install -e examples/lance_fw_bloom (make setup)")

ROWS = 30_000  # several 4096-row pages in each of 3 fragments


def _table(rows: int = ROWS, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    names = pa.array([f"user{(i * 7919) % rows}" for i in range(rows)])
    names = pc.if_else(pa.array(rng.random(rows) < 0.05), pa.scalar(None, pa.string()), names)
    return pa.table({"id": ids, "name": names, "x": rng.random(rows)})


@pytest.fixture()
def indexed(tmp_path: Path) -> str:
    uri = str(tmp_path / "t.lance")
    lance_fw.write_dataset(_table(), uri, max_rows_per_file=10_000)
    ds = lance_fw.dataset(uri)
    ds.create_scalar_index("name", "LF_BLOOM", rows_per_zone=2048)
    ds.create_scalar_index("id", "LF_BLOOM")
    return uri


FILTERS = [
    "name = 'user77'",
    "name = 'user77' OR name = 'user5'",
    "name IN ('user1', 'user2', 'nobody')",
    "id = 12345",
    "id = 12345 AND x > 0.5",
    "id IN (1, 9999, 10000, 29999)",
    "(id = 5 OR name = 'user8') AND x < 2",
    "id = 5 OR x < 0.001",  # an OR with an unindexable side: scanned
    "NOT (id = 5)",  # inexact leaf under NOT: scanned
    "name IS NULL",
]


@pytest.mark.parametrize("filter", FILTERS)
def test_filters_match_pylance_on_an_indexed_dataset(indexed: str, filter: str) -> None:
    got = lance_fw.dataset(indexed).to_table(filter=filter)
    want = lance.dataset(indexed).to_table(filter=filter)
    assert got.equals(want), filter


def test_plan_names_the_index_and_use_scalar_index_false_turns_it_off(indexed: str) -> None:
    ds = lance_fw.dataset(indexed)
    plan = ds.scanner(filter="name = 'user77'").explain_plan()
    assert "ScalarIndexQuery: query=[name = 'user77']@name_idx(LfBloom)" in plan
    assert "ScalarIndexQuery" not in ds.scanner(filter="name = 'user77'", use_scalar_index=False).explain_plan()
    assert "ScalarIndexQuery" not in ds.scanner(filter="x > 0.5").explain_plan()
    analyzed = ds.scanner(filter="id = 3").analyze_plan()
    assert "output_rows=1" in analyzed and "index_candidates=" in analyzed


def test_index_reads_only_candidate_zones(indexed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lance_fw.table import fragment

    read_rows: list[int] = []
    original = fragment.FragmentReader.read_range

    def counting(self, fields, start, stop, until=None, alone=False):  # type: ignore[no-untyped-def]
        read_rows.append(stop - start)
        return original(self, fields, start, stop, until, alone)

    monkeypatch.setattr(fragment.FragmentReader, "read_range", counting)
    got = lance_fw.dataset(indexed).to_table(filter="id = 12345")
    assert got.column("id").to_pylist() == [12345]
    assert sum(read_rows) <= lance_fw_bloom.ROWS_PER_ZONE  # one zone of 30000 rows


def test_appends_deletes_and_updates_after_the_index(indexed: str) -> None:
    lance_fw.write_dataset(_table(5000, seed=1), indexed, mode="append")
    ds = lance_fw.dataset(indexed)
    ds.delete("id = 12345 OR name = 'user5'")
    ds.update({"x": "x + 10"}, where="id = 77")
    ds.update({"id": "id + 1000000"}, where="id = 78")
    ds = lance_fw.dataset(indexed)
    described = {d.name: d for d in ds.describe_indices()}
    assert described["id_idx"].segments[0].fragment_ids == pyroaring.BitMap([0, 1, 2])
    oracle = lance.dataset(indexed)
    for filter in [*FILTERS, "id = 78", "id = 1000078", "id = 77", "id = 4999"]:
        assert ds.to_table(filter=filter).equals(oracle.to_table(filter=filter)), filter
    plan = ds.scanner(filter="id = 4999").explain_plan()
    assert "ScalarIndexQuery" in plan  # covered fragments from the index, the rest scanned


def test_optimize_indices_covers_new_fragments(indexed: str) -> None:
    lance_fw.write_dataset(_table(5000, seed=2), indexed, mode="append")
    ds = lance_fw.dataset(indexed)
    before = {d.name: d.segments[0].uuid for d in ds.describe_indices()}
    ds.optimize.optimize_indices(index_names=["id_idx"])
    after = {d.name: d for d in ds.describe_indices()}
    assert after["id_idx"].segments[0].uuid != before["id_idx"]
    assert after["id_idx"].segments[0].fragment_ids == pyroaring.BitMap([0, 1, 2, 3])
    assert after["name_idx"].segments[0].uuid == before["name_idx"]
    assert ds.to_table(filter="id = 4321").equals(lance.dataset(indexed).to_table(filter="id = 4321"))
    ds.optimize.optimize_indices()  # name_idx too
    version = ds.version
    ds.optimize.optimize_indices(retrain=True)  # every index covers every fragment: nothing to do
    assert lance_fw.dataset(indexed).version == version


def test_drop_and_replace(indexed: str) -> None:
    ds = lance_fw.dataset(indexed)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        ds.create_scalar_index("id", "LF_BLOOM", replace=False)
    version = ds.version
    ds.create_scalar_index("id", "LF_BLOOM", rows_per_zone=4096)  # replace=True by default
    assert ds.version == version + 1 and len([d for d in ds.describe_indices() if d.name == "id_idx"]) == 1
    ds.drop_index("id_idx")
    assert [d.name for d in ds.describe_indices()] == ["name_idx"]
    assert [d.name for d in lance.dataset(indexed).describe_indices()] == []  # pylance skips LF_BLOOM
    with pytest.raises(InvalidArgumentError, match="Index not found"):
        ds.drop_index("id_idx")


def test_bad_arguments_are_refused_by_name(indexed: str) -> None:
    ds = lance_fw.dataset(indexed)
    with pytest.raises(InvalidArgumentError, match="bits_per_valu"):
        ds.create_scalar_index("id", "LF_BLOOM", name="b", bits_per_valu=3)
    with pytest.raises(UnsupportedFeatureError, match="NOPE"):
        ds.create_scalar_index("id", "NOPE")
    with pytest.raises(UnsupportedFeatureError, match="fragment_ids"):
        ds.create_scalar_index("id", "LF_BLOOM", name="c", fragment_ids=[0])
    with pytest.raises(UnsupportedFeatureError, match="double"):
        ds.create_scalar_index("x", "LF_BLOOM")
    with pytest.raises(InvalidArgumentError, match="not in the dataset"):
        ds.create_scalar_index("missing", "LF_BLOOM")


def test_overwrite_drops_indices_as_pylance_does(tmp_path: Path) -> None:
    uri = str(tmp_path / "p.lance")
    lance.write_dataset(_table(5000), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lance_fw.write_dataset(_table(100), uri, mode="overwrite")
    assert lance.dataset(uri).describe_indices() == []
    assert lance_fw.dataset(uri).describe_indices() == []


def test_duckdb_pushdown_uses_the_index(indexed: str) -> None:
    from lance_fw.query.arrow_filter import lance_sql
    from lance_fw.query.filter_plan import filter_plan

    ds = lance_fw.dataset(indexed)
    expression = pc.field("id") == 12345
    assert lance_sql(expression, ds.schema) == "`id` = 12345"
    plan = filter_plan(ds._snapshot, expression)
    assert plan is not None and plan.scalar_index is not None
    from lance_fw.duckdb import connect

    con = connect()
    got = con.sql(f"SELECT id, name FROM lance_scan('{indexed}') WHERE id = 12345 OR name = 'user77' ORDER BY id").fetchall()
    want = lance.dataset(indexed).to_table(columns=["id", "name"], filter="id = 12345 OR name = 'user77'")
    assert got == sorted(zip(want.column("id").to_pylist(), want.column("name").to_pylist()))


# --- the plugin boundary ---------------------------------------------------------------------


class _Answer:
    """A run-time index type whose reader returns ``answer`` for every query."""

    def __init__(self, name: str, type_url: str, answer: object) -> None:
        self.name, self.display_name, self.type_url, self.index_version = name, name.title(), type_url, 0
        self.answer = answer

    def details(self, params: object) -> bytes:
        return b""

    def check(self, field: pa.Field, params: object) -> None:
        pass

    def train(self, batches, field, params, store):  # type: ignore[no-untyped-def]
        store.write_table("x.lance", pa.Table.from_batches(list(batches)))

    def load(self, store, field):  # type: ignore[no-untyped-def]
        answer = self.answer

        class Reader:
            def supports(self, query: object) -> bool:
                return isinstance(query, EqualsQuery)

            def search(self, query: object) -> object:
                return answer

            def statistics(self) -> dict:
                return {}

        return Reader()


@pytest.fixture()
def runtime_plugins():  # type: ignore[no-untyped-def]
    names: list[str] = []
    yield names
    for name in names:
        plugin_manager.unregister(name)


@pytest.mark.parametrize(
    "answer",
    [
        IndexSearchResult(np.array([5, 3], np.uint64), True),  # unsorted
        IndexSearchResult(np.array([3, 3], np.uint64), True),  # repeated
        IndexSearchResult(np.array([3], np.int64), True),  # not uint64
        "rows",
    ],
)
def test_a_broken_search_result_names_the_plugin(tmp_path: Path, runtime_plugins: list, answer: object) -> None:
    uri = str(tmp_path / "c.lance")
    lance_fw.write_dataset(_table(5000), uri)
    plugin_manager.register(_plugin(_Answer("BROKEN", "/test.Broken", answer)), "broken_index")
    runtime_plugins.append("broken_index")
    ds = lance_fw.dataset(uri)
    ds.create_scalar_index("id", "BROKEN")
    with pytest.raises(IndexContractError, match="broken_index"):
        ds.to_table(filter="id = 3")


def test_two_types_claiming_one_type_url_conflict(tmp_path: Path, runtime_plugins: list) -> None:
    uri = str(tmp_path / "c.lance")
    lance_fw.write_dataset(_table(100), uri)
    plugin_manager.register(_plugin(_Answer("ONE", "/test.Same", None), _Answer("TWO", "/test.Same", None)), "twins")
    runtime_plugins.append("twins")
    with pytest.raises(PluginConflictError, match="/test.Same"):
        lance_fw.dataset(uri).create_scalar_index("id", "ONE")


def test_a_type_missing_its_methods_is_refused(tmp_path: Path, runtime_plugins: list) -> None:
    class Half:
        name, display_name, type_url, index_version = "HALF", "Half", "/test.Half", 0

    uri = str(tmp_path / "c.lance")
    lance_fw.write_dataset(_table(100), uri)
    plugin_manager.register(_plugin(Half()), "half_index")
    runtime_plugins.append("half_index")
    with pytest.raises(IndexContractError, match="half_index.*'details'"):
        lance_fw.dataset(uri).create_scalar_index("id", "HALF")


def _plugin(*types: object) -> object:
    class Plugin:
        @hookimpl
        def lance_index_types(self) -> dict:
            return {t.name: t for t in types}  # type: ignore[attr-defined]

    return Plugin()


def test_a_failed_build_leaves_the_version_and_no_files(tmp_path: Path, runtime_plugins: list) -> None:
    class Failing(_Answer):
        def train(self, batches, field, params, store):  # type: ignore[no-untyped-def]
            store.write_table("x.lance", pa.table({"a": [1]}))
            raise RuntimeError("disk full")

    uri = str(tmp_path / "c.lance")
    lance_fw.write_dataset(_table(100), uri)
    plugin_manager.register(_plugin(Failing("FAILING", "/test.Failing", None)), "failing_index")
    runtime_plugins.append("failing_index")
    ds = lance_fw.dataset(uri)
    with pytest.raises(RuntimeError, match="disk full"):
        ds.create_scalar_index("id", "FAILING")
    assert ds.version == 1 and lance_fw.dataset(uri).version == 1
    leftovers = [p for p in (Path(uri) / "_indices").rglob("*") if p.is_file()] if (Path(uri) / "_indices").exists() else []
    assert leftovers == []
    shutil.rmtree(uri)


@pytest.mark.parametrize(
    ("filter", "rechecked"),
    [("id IN (5, 9999, 10000, 29999, 12345)", False), ("id = 12345 AND x > 0.5", True), ("id < 20", False)],
)
def test_an_exact_btree_answer_is_not_rechecked_and_matches_pylance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filter: str, rechecked: bool
) -> None:
    """When exact indices answer the whole filter, the scan takes their rows without evaluating
    the filter again; results (with rows deleted after the index) stay pylance's."""
    from lance_fw.query import filter_plan

    uri = str(tmp_path / "t.lance")
    lance_fw.write_dataset(_table(), uri, max_rows_per_file=10_000)
    lance_fw.dataset(uri).create_scalar_index("id", "BTREE")
    lance_fw.dataset(uri).delete("id = 9999 OR id = 7")
    evaluated: list[int] = []
    original = filter_plan.matcher_for

    def counting(expression: pc.Expression):  # type: ignore[no-untyped-def]
        inner = original(expression)

        def matcher(batch: pa.RecordBatch) -> np.ndarray:
            evaluated.append(batch.num_rows)
            return inner(batch)

        return matcher

    monkeypatch.setattr(filter_plan, "matcher_for", counting)
    got = lance_fw.dataset(uri).to_table(filter=filter)
    assert got.equals(lance.dataset(uri).to_table(filter=filter))
    assert bool(evaluated) is rechecked
