"""Scalar indices across pylance and lance_fw, end to end through ``create_scalar_index`` (issue 13).

Per index type and per builder (lance_fw or pylance): the other library lists the index, plans with
it (``ScalarIndexQuery``) and returns exactly what an unindexed scan returns, before and after
appends, deletes and updates made by either library. The per-type file formats are tested in
tests/test_index_<type>.py; here the whole path runs: build, commit, plan, candidate rows, re-check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw

ROWS = 24_000  # 3 fragments of 8000: several 4096-row pages and B-tree pages each


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64) + seed * 1_000_000
    cat = pa.array(rng.integers(0, 12, rows).astype(np.int32), mask=rng.random(rows) < 0.03)
    tags = pa.array(
        [None if i % 97 == 0 else [f"t{(i * 7) % 13}", f"t{i % 5}"] for i in range(rows)], pa.list_(pa.string())
    )
    return pa.table({"id": ids, "cat": cat, "tags": tags, "x": rng.random(rows)})


#: index type -> (column, filters that index can answer, each with a refining part in some)
CASES = {
    "BTREE": ("id", ["id = 777", "id IN (5, 6, 23999, 1000003)", "id < 100", "id BETWEEN 300 AND 310 AND x > 0.2"]),
    "BITMAP": ("cat", ["cat = 3", "cat IN (1, 2) AND id < 5000", "cat IS NULL", "NOT (cat = 4)"]),
    "LABEL_LIST": ("tags", ["array_has_any(tags, ['t3'])", "array_has_all(tags, ['t1', 't4'])"]),
    "ZONEMAP": ("id", ["id = 777", "id > 23990", "id BETWEEN 10 AND 20"]),
}


def _same(a: lance_fw.LanceDataset, b: lance.LanceDataset, filters: list[str]) -> None:
    for f in filters:
        got, want = a.to_table(filter=f), b.to_table(filter=f)
        assert got.equals(want), f
        assert got.equals(a.to_table(filter=f, use_scalar_index=False)), f


@pytest.mark.parametrize("builder", ["lance_fw", "pylance"])
@pytest.mark.parametrize("index_type", sorted(CASES))
def test_index_built_by_one_is_listed_and_used_by_the_other(tmp_path: Path, index_type: str, builder: str) -> None:
    column, filters = CASES[index_type]
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS, 0), uri, max_rows_per_file=8000)
    (lance_fw if builder == "lance_fw" else lance).dataset(uri).create_scalar_index(column, index_type)
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert [(d.name, d.index_type) for d in fw.describe_indices()] == [
        (d.name, d.index_type) for d in pl.describe_indices()
    ]
    assert [d.name for d in pl.describe_indices()] == [f"{column}_idx"]
    assert fw.stats.index_stats(f"{column}_idx") == {
        k: v for k, v in pl.stats.index_stats(f"{column}_idx").items() if k != "updated_at_timestamp_ms"
    } | {"updated_at_timestamp_ms": fw.stats.index_stats(f"{column}_idx")["updated_at_timestamp_ms"]}
    for f in filters[:1]:
        assert "ScalarIndexQuery" in pl.scanner(filter=f).explain_plan()
        assert "ScalarIndexQuery" in fw.scanner(filter=f).explain_plan()
    _same(fw, pl, filters)

    # changes after the index, by both libraries: appended rows are scanned, deleted ones stay gone
    lance_fw.write_dataset(_table(3000, 1), uri, mode="append")
    lance.write_dataset(_table(2000, 2), uri, mode="append")
    lance_fw.dataset(uri).delete("id % 10 = 3")
    lance.dataset(uri).delete("id = 777 OR id = 6")
    lance_fw.dataset(uri).update({"x": "x + 1"}, where="id < 50")
    lance.dataset(uri).update({"x": "x - 1"}, where="id BETWEEN 300 AND 305")
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    _same(fw, pl, filters)
    assert "ScalarIndexQuery" in fw.scanner(filter=filters[0]).explain_plan()

    # optimize by the builder covers the new fragments; the other library still agrees
    (fw if builder == "lance_fw" else pl).optimize.optimize_indices()
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    covered = {int(i) for d in pl.describe_indices() for s in d.segments for i in s.fragment_ids}
    assert covered == {f.fragment_id for f in pl.get_fragments()}
    _same(fw, pl, filters)


def test_drop_index_by_lance_fw_is_seen_by_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(5000, 0), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    ds = lance_fw.dataset(uri)
    ds.drop_index("id_idx")
    assert lance.dataset(uri).describe_indices() == []
    assert "ScalarIndexQuery" not in lance.dataset(uri).scanner(filter="id = 5").explain_plan()
    assert ds.to_table(filter="id = 5").equals(lance.dataset(uri).to_table(filter="id = 5"))


def test_dropping_a_column_drops_its_index_and_casting_an_indexed_one_is_refused(tmp_path: Path) -> None:
    for lib in (lance_fw, lance):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        lance.write_dataset(pa.table({"id": np.arange(5000), "v": np.arange(5000)}), uri)
        ds = lib.dataset(uri)
        ds.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("v", "BTREE")
        ds.drop_columns(["id"])
        assert [d.name for d in lance.dataset(uri).describe_indices()] == ["v_idx"]
        assert "ScalarIndexQuery" in lance.dataset(uri).scanner(filter="v = 5").explain_plan()
        with pytest.raises(OSError, match="index"):
            lib.dataset(uri).alter_columns({"path": "v", "data_type": pa.int32()})
        assert lance.dataset(uri).schema.field("v").type == pa.int64()


@pytest.mark.parametrize("index_type", ["BTREE", "BITMAP"])
def test_compaction_of_an_indexed_dataset_stays_exact_for_both(tmp_path: Path, index_type: str) -> None:
    """lance_fw's compaction takes the rewritten fragments out of each index's fragment bitmap
    (pylance remaps the index instead); both libraries then scan the new fragments, and
    optimize_indices covers them again."""
    column, filters = CASES[index_type]
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS, 0), uri, max_rows_per_file=3000)
    lance.dataset(uri).create_scalar_index(column, index_type)
    lance.dataset(uri).delete("id % 7 = 0")
    ds = lance_fw.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=9000)
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert len(pl.get_fragments()) < ROWS // 3000
    (segment,) = pl.describe_indices()[0].segments
    assert not set(segment.fragment_ids) & {f.fragment_id for f in pl.get_fragments()}
    _same(fw, pl, filters)
    fw.optimize.optimize_indices()
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert "ScalarIndexQuery" in pl.scanner(filter=filters[0]).explain_plan()
    _same(fw, pl, filters)


def test_restore_brings_back_the_old_versions_indices(tmp_path: Path) -> None:
    for lib in (lance_fw, lance):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        lance.write_dataset(pa.table({"id": np.arange(5000)}), uri)
        lib.dataset(uri).create_scalar_index("id", "BTREE")  # v2
        lib.dataset(uri).drop_index("id_idx")  # v3
        lib.dataset(uri, version=2).restore()
        assert [d.name for d in lance.dataset(uri).describe_indices()] == ["id_idx"]
        assert "ScalarIndexQuery" in lance.dataset(uri).scanner(filter="id = 5").explain_plan()
        assert lance_fw.dataset(uri).to_table(filter="id = 5").num_rows == 1
        lib.dataset(uri, version=1).restore()
        assert lance.dataset(uri).describe_indices() == []
