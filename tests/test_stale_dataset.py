"""A dataset object after its own mutations, and a stale object racing another writer.

pylance moves the object a mutating call was made on to the version that call committed (with
the schema, fragments and everything else of that version), and refuses a schema change planned
on a schema a concurrent commit has since changed. The same call sequences run on both libraries.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError, LanceError
from tests.conftest import assert_tables_equal

BASE = pa.table({"x": list(range(3000)), "s": [f"v{i}" for i in range(3000)]})


def _steps(mod):
    """Mutations, each followed by what the same object must then show."""
    return [
        ("add_columns", lambda ds: ds.add_columns({"b": "x * 2"})),
        ("alter_columns", lambda ds: ds.alter_columns({"path": "x", "name": "y"})),
        ("add_columns_fields", lambda ds: ds.add_columns(pa.field("n", pa.int32()))),
        ("drop_columns", lambda ds: ds.drop_columns(["s"])),
        ("delete", lambda ds: ds.delete("y < 100")),
        ("update", lambda ds: ds.update({"b": "b + 1"}, where="y < 200")),
        ("merge_insert", lambda ds: ds.merge_insert("y").when_matched_update_all().when_not_matched_insert_all()
         .execute(pa.table({"y": pa.array([150, 5000], pa.int64()), "b": pa.array([0, 1], pa.int64()),
                            "n": pa.array([None, 7], pa.int32())}))),
        ("alter_cast", lambda ds: ds.alter_columns({"path": "n", "data_type": pa.int64()})),
        ("tags", lambda ds: ds.tags.create("t", 1)),
    ]


def _state(ds) -> tuple:
    return ds.version, ds.schema.names, [str(t) for t in ds.schema.types], ds.count_rows(), len(ds.get_fragments())


def test_one_object_follows_its_own_mutations(tmp_path):
    objects = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        objects[mod] = mod.write_dataset(BASE, uri, max_rows_per_file=1000)
    for (name, step), (_, fw_step) in zip(_steps(lance), _steps(lance_fw)):
        step(objects[lance])
        fw_step(objects[lance_fw])
        assert _state(objects[lance_fw]) == _state(objects[lance]), name
        key = objects[lance].schema.names[0]
        expected = objects[lance].to_table().sort_by(key)
        assert_tables_equal(expected, objects[lance_fw].to_table().sort_by(key))
        # the object shows exactly what opening its version afresh shows
        fresh = lance_fw.dataset(objects[lance_fw].uri, version=objects[lance_fw].version)
        assert _state(fresh) == _state(objects[lance_fw]), name


def test_fragments_taken_before_a_mutation_keep_their_version(uri):
    ds = lance_fw.write_dataset(BASE, uri, max_rows_per_file=1000)
    before = ds.get_fragments()
    ds.add_columns({"b": "x * 2"})
    assert before[0].to_table().column_names == ["x", "s"]
    assert ds.get_fragments()[0].to_table().column_names == ["x", "s", "b"]


@pytest.mark.parametrize("change", ["alter", "drop", "add", "add_fields"])
def test_stale_schema_change_is_refused(tmp_path, change):
    """ds1 read v1; ds2 added column b (v2); ds1's schema change was planned without b."""
    def stale_change(ds):
        if change == "alter":
            ds.alter_columns({"path": "x", "name": "y"})
        elif change == "drop":
            ds.drop_columns(["s"])
        elif change == "add":
            ds.add_columns({"c": "x + 1"})
        else:
            ds.add_columns(pa.field("c", pa.int64()))

    outcomes = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(BASE, uri)
        stale, other = mod.dataset(uri), mod.dataset(uri)
        other.add_columns({"b": "x * 2"})
        try:
            stale_change(stale)
            outcomes[mod] = ("ok", mod.dataset(uri).schema.names)
        except Exception as exc:  # noqa: BLE001 - the outcome is compared
            outcomes[mod] = ("refused", type(exc).__name__)
        assert "b" in mod.dataset(uri).schema.names  # the concurrent column is never lost
    if outcomes[lance][0] == "refused":
        assert outcomes[lance_fw] == ("refused", CommitConflictError.__name__), outcomes
    else:
        assert outcomes[lance_fw] == outcomes[lance], outcomes


@pytest.mark.parametrize("change", ["delete", "update", "merge_insert", "append", "compact"])
def test_stale_row_change_keeps_a_concurrent_column(tmp_path, change):
    """ds1 read v1; ds2 added column b; ds1's row change must not lose b's values. pylance rebases
    delete/update/merge_insert/append and refuses compaction; lance_fw matches it or refuses with a
    typed error, leaving the dataset as it was."""
    def stale_change(mod, ds):
        if change == "delete":
            ds.delete("x = 4")
        elif change == "update":
            ds.update({"x": "x + 100"}, where="x < 3")
        elif change == "merge_insert":
            ds.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(
                pa.table({"x": pa.array([1, 50], pa.int64()), "s": ["a", "b"]}))
        elif change == "compact":
            ds.optimize.compact_files()
        else:
            mod.write_dataset(pa.table({"x": pa.array([77], pa.int64()), "s": ["z"]}), ds, mode="append")

    results = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(BASE.slice(0, 10), uri, max_rows_per_file=4)
        stale = mod.dataset(uri)
        mod.dataset(uri).add_columns({"b": "x * 2"})
        try:
            stale_change(mod, stale)
        except (LanceError if mod is lance_fw else OSError):
            assert_tables_equal(lance.dataset(uri, version=2).to_table(), lance.dataset(uri).to_table())
            continue
        results[mod] = lance.dataset(uri).to_table().sort_by("x")
    if lance not in results:
        assert lance_fw not in results  # pylance refused: so must lance_fw
    elif lance_fw in results:
        assert_tables_equal(results[lance], results[lance_fw])


def test_compaction_and_cleanup_move_the_object_as_pylance(tmp_path):
    """compact_files moves the object to the Rewrite it committed; cleanup and tags do not move it."""
    objects = {}
    for mod in (lance, lance_fw):
        ds = mod.write_dataset(BASE, str(tmp_path / mod.__name__), max_rows_per_file=500)
        ds.delete("x % 4 = 0")
        before = ds.get_fragments()
        ds.optimize.compact_files(target_rows_per_fragment=1200)
        assert len(before) == 6  # fragments taken before keep their version
        ds.cleanup_old_versions(retain_versions=10)
        ds.tags.create("c", ds.version)
        objects[mod] = ds
    # pylance commits a ReserveFragments version before its Rewrite, lance_fw only the Rewrite: the
    # object is at the latest version in both, holding the same data
    for ds in objects.values():
        assert ds.version == ds.latest_version
    assert _state(objects[lance_fw])[1:] == _state(objects[lance])[1:]
    assert_tables_equal(objects[lance].to_table(), objects[lance_fw].to_table())


def test_restore_as_pylance(tmp_path):
    """restore() commits the checked-out version's contents as a new version and moves the object
    there; later appends continue the fragment ids (pylance keeps max_fragment_id)."""
    states = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(BASE.slice(0, 100), uri)
        ds = mod.dataset(uri)
        ds.add_columns({"b": "x * 2"})
        ds.delete("x < 10")
        old = mod.dataset(uri, version=1)
        assert old.restore() is None
        mod.write_dataset(BASE.slice(100, 5), uri, mode="append")
        latest = mod.dataset(uri)
        states[mod] = (_state(old), _state(latest), [f.fragment_id for f in latest.get_fragments()],
                       latest.to_table())
        assert lance.dataset(uri).read_transaction(4).operation.version == 1
    assert states[lance_fw][:3] == states[lance][:3]
    assert_tables_equal(states[lance][3], states[lance_fw][3])
    assert_tables_equal(states[lance][3], lance.dataset(str(tmp_path / "lance_fw")).to_table())
