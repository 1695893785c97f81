"""What lance_fw's writers put in manifests and transaction files, against pylance running the
same code (issue 16): the file version an overwrite keeps, how new fragments are numbered (in the
transaction and in the manifest), ``fields_for_preserving_frag_bitmap`` of update/merge_insert,
which data files drop_columns leaves, and ``FragmentMetadata``'s attributes and JSON.

Each test runs one function on both libraries and compares what both libraries read back:
fragments (``to_json``), the file format version, the transaction and the rows."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

import lance
import lance.fragment
import numpy as np
import pyarrow as pa
import pytest
from test_parity_transactions import _comparable, _fragments, _scrub, norm

import lance_fw
import lance_fw.fragment

ROWS = 5000  # crosses a 4096-row chunk; max_rows_per_file=3000 makes two fragments
LIBS = (lance, lance_fw)


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows)
    return pa.table(
        {
            "a": ids,
            "b": [f"v{i}" for i in ids],
            "s": pa.StructArray.from_arrays([ids * 2, [str(i % 7) for i in ids]], names=["x", "y"]),
            "c": ids * 3,
        }
    )


def _file_versions(path: str) -> list[list[tuple[int, int]]]:
    return [
        [(f.file_major_version, f.file_minor_version) for f in frag.metadata.files]
        for frag in lance.dataset(path).get_fragments()
    ]


def _run_both(tmp_path: Any, steps: Callable[[Any, str], Any], version: str = "2.0") -> dict:
    """``steps(lib, path)`` on a 2-fragment dataset of ``version`` files, once per library."""
    paths = {}
    for lib in LIBS:
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        lib.write_dataset(_table(ROWS), paths[lib], max_rows_per_file=3000, data_storage_version=version)
        steps(lib, paths[lib])
    return paths


def _assert_same(paths: dict, sort_key: str = "a") -> None:
    """Both datasets read the same through both libraries: latest fragments, file versions,
    format version, rows, and the last transaction (run-specific values aside)."""
    shown = []
    for path in paths.values():
        for lib in LIBS:
            ds = lib.dataset(path)
            shown.append((_fragments(ds), ds.data_storage_version, ds.version))
    assert all(s == shown[0] for s in shown)
    assert _file_versions(paths[lance_fw]) == _file_versions(paths[lance])
    ours, theirs = (lance.dataset(paths[lib]) for lib in (lance_fw, lance))
    assert ours.to_table().sort_by(sort_key).equals(theirs.to_table().sort_by(sort_key))
    assert lance_fw.dataset(paths[lance]).to_table().equals(theirs.to_table())
    last = theirs.version
    assert _scrub(_comparable(ours.read_transaction(last))) == _scrub(
        _comparable(theirs.read_transaction(last))
    )


# -- 1. the file version a write uses on an existing 2.0 dataset ---------------------------------

STORAGE_VERSION_STEPS: dict[str, Callable[[Any, str], Any]] = {
    "overwrite": lambda lib, p: lib.write_dataset(
        _table(ROWS, 7), p, mode="overwrite", max_rows_per_file=4500
    ),
    "overwrite_2_1": lambda lib, p: lib.write_dataset(
        _table(ROWS), p, mode="overwrite", data_storage_version="2.1", max_rows_per_file=4500
    ),
    "overwrite_stable": lambda lib, p: lib.write_dataset(
        _table(ROWS), p, mode="overwrite", data_storage_version="stable"
    ),
    "append": lambda lib, p: lib.write_dataset(_table(4200, ROWS), p, mode="append"),
    "append_2_0": lambda lib, p: lib.write_dataset(
        _table(10, ROWS), p, mode="append", data_storage_version="2.0"
    ),
    "update": lambda lib, p: lib.dataset(p).update({"b": "'zz'"}, where="a > 4000"),
    "merge_insert": lambda lib, p: (
        lib.dataset(p)
        .merge_insert("a")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(_table(4200, 2990))
    ),
    "add_columns": lambda lib, p: lib.dataset(p).add_columns({"d": "a * 2"}),
}


@pytest.mark.parametrize("step", sorted(STORAGE_VERSION_STEPS))
def test_file_version_of_writes_on_a_2_0_dataset(tmp_path, step):
    """pylance: a write that names no ``data_storage_version`` uses the dataset's (an overwrite
    too: 2.0 stays 2.0); an overwrite naming one switches the dataset to it."""
    paths = _run_both(tmp_path, STORAGE_VERSION_STEPS[step])
    _assert_same(paths)
    expected = {"overwrite_2_1": "2.1", "overwrite_stable": "2.2"}.get(step, "2.0")
    assert lance_fw.dataset(paths[lance_fw]).data_storage_version == expected


def test_write_fragments_keep_the_dataset_version(tmp_path):
    """``write_fragments(mode="overwrite")`` writes the dataset's version (committed: the same
    manifest); ``mode="create"`` on an existing dataset is an error in both."""
    paths = {}
    for lib in LIBS:
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        lib.write_dataset(_table(ROWS), paths[lib], max_rows_per_file=3000, data_storage_version="2.0")
        with pytest.raises(OSError):
            lib.fragment.write_fragments(_table(10), paths[lib], mode="create")
        frags = lib.fragment.write_fragments(
            _table(ROWS, 3), paths[lib], mode="overwrite", max_rows_per_file=3000
        )
        assert [(f.file_major_version, f.file_minor_version) for x in frags for f in x.files] == [(2, 0)] * 2
        op = lib.LanceOperation.Overwrite(_table(1).schema, frags)
        lib.LanceDataset.commit(paths[lib], op, read_version=1)
    _assert_same(paths)


def test_append_naming_another_version(tmp_path):
    """A known, typed difference: pylance's append naming another v2 version writes those files
    into the dataset (mixed versions); lance_fw refuses (``InvalidArgumentError``)."""
    path = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(10), path, data_storage_version="2.0")
    with pytest.raises(lance_fw.errors.InvalidArgumentError, match="mix"):
        lance_fw.write_dataset(_table(10), path, mode="append", data_storage_version="2.1")


# -- 2. fragment ids: recorded as given, numbered in the manifest -------------------------------


def _created(lib: Any, path: str, ids: list[int], start: int = 10_000) -> list:
    return [
        lib.fragment.LanceFragment.create(
            path, _table(5, start + 10 * i), fragment_id=i, data_storage_version="2.0"
        )
        for i in ids
    ]


ID_STEPS: dict[str, Callable[[Any, str], Any]] = {
    "append_unnumbered": lambda lib, p: lib.write_dataset(
        _table(ROWS, ROWS), p, mode="append", max_rows_per_file=2000
    ),
    "overwrite_unnumbered": lambda lib, p: lib.write_dataset(
        _table(ROWS), p, mode="overwrite", max_rows_per_file=2000
    ),
    "append_given_ids": lambda lib, p: lib.LanceDataset.commit(
        p, lib.LanceOperation.Append(_created(lib, p, [7, 9])), read_version=1
    ),
    "append_mixed_ids": lambda lib, p: lib.LanceDataset.commit(
        p, lib.LanceOperation.Append(_created(lib, p, [4, 0])), read_version=1
    ),
    "overwrite_given_ids": lambda lib, p: lib.LanceDataset.commit(
        p, lib.LanceOperation.Overwrite(_table(1).schema, _created(lib, p, [9, 7])), read_version=1
    ),
    "update_given_ids": lambda lib, p: lib.LanceDataset.commit(
        p, lib.LanceOperation.Update(new_fragments=_created(lib, p, [7, 0])), read_version=1
    ),
}


@pytest.mark.parametrize("step", sorted(ID_STEPS))
def test_fragment_ids(tmp_path, step):
    """The transaction records new fragments as they were given (a writer's: id 0); the manifest
    numbers id-0 fragments from ``max_fragment_id`` + 1, keeps a caller's other ids (Append,
    Update; an Overwrite renumbers all) and orders the fragments by id."""
    paths = _run_both(tmp_path, ID_STEPS[step])
    _assert_same(paths)
    ours, theirs = (lance.dataset(paths[lib]) for lib in (lance_fw, lance))
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]
    recorded = [_new_fragment_ids(lance.dataset(paths[lib]).read_transaction(2)) for lib in (lance_fw, lance)]
    assert recorded[0] == recorded[1]
    if step.endswith("unnumbered"):
        assert set(recorded[0]) == {0}


def _new_fragment_ids(transaction: Any) -> list[int]:
    op = norm(transaction)[1]["operation"][1]
    return [f["id"] for f in op.get("fragments", op.get("new_fragments"))]


@pytest.mark.parametrize("ids", [[1], [5, 5]])
def test_duplicate_fragment_ids_are_refused(tmp_path, ids):
    for lib in LIBS:
        path = str(tmp_path / lib.__name__)
        lib.write_dataset(_table(ROWS), path, max_rows_per_file=3000, data_storage_version="2.0")
        with pytest.raises(OSError, match="two fragments with id"):
            lib.LanceDataset.commit(path, lib.LanceOperation.Append(_created(lib, path, ids)), read_version=1)
        assert lib.dataset(path).version == 1


def test_appending_fragments_that_carry_row_ids(tmp_path):
    """On a stable-row-id dataset, new fragments get the next row ids; a caller's fragment that
    already carries some (``row_id_meta``, which pylance keeps and completes) is refused, typed."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(ROWS), path, max_rows_per_file=3000, enable_stable_row_ids=True)
    plain = lance_fw.fragment.LanceFragment.create(path, _table(5, ROWS), data_storage_version="2.2")
    carrying = plain.to_json()
    carrying["row_id_meta"] = lance.dataset(path).get_fragments()[0].metadata.to_json()["row_id_meta"]
    with pytest.raises(lance_fw.errors.UnsupportedFeatureError, match="row_id_meta"):
        op = lance_fw.LanceOperation.Append([lance_fw.fragment.FragmentMetadata.from_json(carrying)])
        lance_fw.LanceDataset.commit(path, op, read_version=1)
    lance_fw.LanceDataset.commit(path, lance_fw.LanceOperation.Append([plain]), read_version=1)
    row_ids = lance.dataset(path).to_table(with_row_id=True)["_rowid"].to_pylist()
    assert row_ids == list(range(ROWS + 5))


# -- 3. fields_for_preserving_frag_bitmap --------------------------------------------------------

PRESERVING_STEPS: dict[str, Callable[[Any, str], Any]] = {
    "update_one": lambda lib, p: lib.dataset(p).update({"b": "'zz'"}, where="a = 4100"),
    "update_two": lambda lib, p: lib.dataset(p).update({"c": "c + 1", "b": "'q'"}, where="a < 4200"),
    "update_key": lambda lib, p: lib.dataset(p).update({"a": "a + 100000"}, where="a < 10"),
    "update_no_rows": lambda lib, p: lib.dataset(p).update({"b": "'q'"}, where="a < 0"),
    "merge_upsert": lambda lib, p: (
        lib.dataset(p)
        .merge_insert("a")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(_table(4200, 2990))
    ),
    "merge_insert_only": lambda lib, p: (
        lib.dataset(p).merge_insert("a").when_not_matched_insert_all().execute(_table(5, 4998))
    ),
    "merge_by_source": lambda lib, p: (
        lib.dataset(p)
        .merge_insert("a")
        .when_matched_update_all()
        .when_not_matched_by_source_delete()
        .execute(_table(4100, 10))
    ),
    "merge_columns": lambda lib, p: (
        lib.dataset(p)
        .merge_insert("a")
        .when_matched_update_all()
        .execute(pa.table({"a": np.arange(10, 4200), "c": np.arange(4190)}))
    ),
}


@pytest.mark.filterwarnings("ignore:The 'list_indices' method is deprecated")
@pytest.mark.parametrize("version", ["2.0", "2.1"])
@pytest.mark.parametrize("step", sorted(PRESERVING_STEPS))
def test_fields_for_preserving_frag_bitmap(tmp_path, step, version):
    """update: the field ids of the columns it sets (a struct's with its children); merge_insert
    rewriting rows: every field id; rewriting columns: none (``fields_modified`` instead). pylance
    lists them in hash order: compared as sets. With BTREE indices, the same coverage."""

    def steps(lib: Any, path: str) -> None:
        lance.dataset(path).create_scalar_index("a", "BTREE")
        lance.dataset(path).create_scalar_index("c", "BTREE")
        PRESERVING_STEPS[step](lib, path)

    paths = _run_both(tmp_path, steps, version)
    ours, theirs = (lance.dataset(paths[lib]).read_transaction(4).operation for lib in (lance_fw, lance))
    for name in ("fields_for_preserving_frag_bitmap", "fields_modified"):
        assert sorted(getattr(ours, name)) == sorted(getattr(theirs, name)), name
    expected = {"update_one": [1], "update_two": [1, 5], "update_key": [0], "update_no_rows": [1]}
    if step in expected:
        assert sorted(ours.fields_for_preserving_frag_bitmap) == expected[step]
    shown = [
        sorted((i["name"], sorted(i["fragment_ids"])) for i in lib.dataset(paths[w]).list_indices())
        for w in LIBS
        for lib in LIBS
    ]
    assert all(s == shown[0] for s in shown)
    ours_ds, theirs_ds = (lance.dataset(paths[lib]) for lib in (lance_fw, lance))
    assert ours_ds.to_table().sort_by("a").equals(theirs_ds.to_table().sort_by("a"))
    assert _fragments(ours_ds) == _fragments(theirs_ds)


# -- 4. data files drop_columns and column rewrites leave ----------------------------------------


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_drop_columns_drops_files_without_live_fields(tmp_path, version):
    """A data file none of whose fields remain leaves the fragments; one keeping any field stays
    whole (its field list unchanged, dropped ids included)."""

    def steps(lib: Any, path: str) -> None:
        ds = lib.dataset(path)
        ds.add_columns({"d": "a + 1", "e": "a + 2"})
        ds.add_columns({"f": "a * 5"})
        lib.dataset(path).drop_columns(["b"])
        lib.dataset(path).drop_columns(["d"])
        lib.dataset(path).drop_columns(["f", "e"])

    paths = _run_both(tmp_path, steps, version)
    _assert_same(paths)
    for frag in lance.dataset(paths[lance_fw]).get_fragments():
        assert len(frag.metadata.files) == 1  # only the first file: a, (b), s, c
    for version_no in range(2, 7):
        ours, theirs = (lance.dataset(paths[lib]) for lib in (lance_fw, lance))
        expected = _scrub(norm(theirs.read_transaction(version_no)))
        assert _scrub(norm(ours.read_transaction(version_no))) == expected, version_no


def test_column_rewrite_drops_tombstone_only_files(tmp_path):
    """merge_insert rewriting columns (a partial source joined through a BTREE index) replaces the
    only column of an added file: its transaction keeps that file, all tombstones (-2), and the
    manifest drops it, in both libraries."""

    def steps(lib: Any, path: str) -> None:
        lib.dataset(path).add_columns({"d": "a + 1"})
        lance.dataset(path).create_scalar_index("a", "BTREE")
        source = pa.table({"a": np.arange(0, ROWS, 1000), "d": np.arange(0, ROWS, 1000) * 7})
        lib.dataset(path).merge_insert("a").when_matched_update_all().execute(source)

    paths = _run_both(tmp_path, steps, "2.1")
    _assert_same(paths)
    update = lance.dataset(paths[lance_fw]).read_transaction(4).operation
    assert update.update_mode == "rewrite_columns" and update.fields_modified == [6]
    assert [[list(f.fields) for f in frag.files] for frag in update.updated_fragments] == [
        [[0, 1, 3, 4, 5], [-2], [6]]
    ] * 2
    fields = [
        [list(f.fields) for f in frag.metadata.files]
        for frag in lance.dataset(paths[lance_fw]).get_fragments()
    ]
    assert fields == [[[0, 1, 3, 4, 5], [6]]] * 2


# -- 5. FragmentMetadata ----------------------------------------------------------------------------


def test_fragment_metadata_attributes():
    ours = {n for n in dir(lance_fw.fragment.FragmentMetadata) if not n.startswith("_")}
    theirs = {n for n in dir(lance.fragment.FragmentMetadata) if not n.startswith("_")}
    assert theirs <= ours | {"overlays"} and "overlays" in dir(lance_fw.fragment.FragmentMetadata)


@pytest.mark.parametrize("stable", [False, True])
def test_fragment_metadata_json(tmp_path, stable):
    """deletion_file, row_id_meta and version metas: the same values and JSON as pylance's, and
    ``from_json`` in either library reads the other's."""
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=3000, enable_stable_row_ids=stable)
    ds.delete("a < 10 or a > 4990")
    ds.update({"b": "'z'"}, where="a = 20")
    for frag, theirs in zip(
        lance_fw.dataset(path).get_fragments(), lance.dataset(path).get_fragments(), strict=True
    ):
        mine, meta = frag.metadata, theirs.metadata  # both libraries' FragmentMetadata
        assert mine.to_json() == meta.to_json()
        assert (mine.num_rows, mine.num_deletions, mine.physical_rows) == (
            meta.num_rows,
            meta.num_deletions,
            meta.physical_rows,
        )
        if meta.deletion_file is None:
            assert mine.deletion_file is None
        else:
            assert mine.deletion_file.asdict() == meta.deletion_file.asdict()
            assert mine.deletion_file.json() == meta.deletion_file.json()
            assert repr(mine.deletion_file) == repr(meta.deletion_file)
            assert mine.deletion_file.path(mine.id) == meta.deletion_file.path(meta.id)
        for name in ("row_id_meta", "created_at_version_meta", "last_updated_at_version_meta"):
            a, b = getattr(mine, name), getattr(meta, name)
            assert (a is None) == (b is None) == (not stable), name
            if a is not None:
                assert json.loads(a.json()) == json.loads(b.json()), name
        text = json.dumps(meta.to_json())
        assert lance_fw.fragment.FragmentMetadata.from_json(text) == mine
        assert lance.fragment.FragmentMetadata.from_json(json.dumps(mine.to_json())) == meta
        assert pickle.loads(pickle.dumps(mine)) == mine
    txn = lance_fw.dataset(path).read_transaction(3)
    assert norm(txn) == norm(lance.dataset(path).read_transaction(3))
