"""A row rewrite planned before a concurrent ``add_columns`` commits must not publish rows without
the new column: the commit is refused (``CommitConflictError``) and the dataset stays as it was.

The concurrent change is injected between planning and commit (the operation's ``commit`` is
wrapped to run another writer's ``add_columns`` first), a window no stale-object test reaches."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.table.snapshot as snapshot_module
from lance_fw.errors import CommitConflictError
from tests.conftest import assert_tables_equal


def _run(ds, change: str) -> None:
    if change == "update":
        ds.update({"x": "x + 100"}, where="x < 3")
    elif change == "merge_insert":
        ds.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(
            pa.table({"x": pa.array([1, 50], pa.int64())}))
    else:
        ds.optimize.compact_files()


@pytest.mark.parametrize("change", ["update", "merge_insert", "compact"])
def test_row_rewrite_refused_when_add_columns_lands_before_its_commit(tmp_path, monkeypatch, change):
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), uri, max_rows_per_file=2)
    lance_fw.dataset(uri).delete("x = 7")  # something for compaction to do
    real_commit = snapshot_module.commit  # what Snapshot.commit, the rewrites' one commit path, calls
    injected = []

    def add_columns_first(*args, **kwargs):
        if not injected:
            injected.append(None)  # first: add_columns commits through this same path
            lance_fw.dataset(uri).add_columns({"b": "x * 2"})
            injected[0] = lance.dataset(uri).version
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(snapshot_module, "commit", add_columns_first)
    with pytest.raises(CommitConflictError):
        _run(lance_fw.dataset(uri), change)
    assert injected, "the concurrent add_columns never ran"
    after = lance.dataset(uri)
    # nothing with rows published on top of the add_columns (a compaction's ReserveFragments, which
    # changes no rows, may be: pylance's does the same)
    assert after.version == injected[0] + (change == "compact")
    assert after.to_table().column("b").null_count == 0
    assert_tables_equal(after.to_table(), lance.dataset(uri, version=injected[0]).to_table())
