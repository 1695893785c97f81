"""``LanceDataset.read_transaction`` / ``get_transactions`` against pylance: the same history
(create, append, delete, update, merge_insert, add_columns, drop_columns, compaction, a scalar
index, restore, overwrite, config and schema changes) written by either library reads the same
through both, and the same code run on both libraries records the same operations."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.api.transactions import UpdateMap
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import encode_manifest, find_version, read_manifest
from lance_fw.table.manifest import read_transaction as read_transaction_message

ROWS = 5000  # crosses a 4096-row chunk; max_rows_per_file makes two fragments
LIBS = (lance, lance_fw)


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows)
    return pa.table(
        {
            "a": ids,
            "b": [f"v{i}" for i in ids],
            "s": pa.StructArray.from_arrays([ids * 2, [str(i % 7) for i in ids]], names=["x", "y"]),
        }
    )


def _history(lib: Any, uri: str, storage_version: str) -> None:
    """One version per step (compaction: two, ReserveFragments then Rewrite)."""
    lib.write_dataset(
        _table(ROWS), uri, max_rows_per_file=3000, data_storage_version=storage_version, commit_message="init"
    )
    ds = lib.write_dataset(_table(10, ROWS), uri, mode="append", transaction_properties={"k": "v"})
    ds.delete("a < 100")
    ds.update({"b": "'zz'"}, where="a = 200")
    new = _table(3, ROWS - 1)
    ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(new)
    ds.add_columns({"c": "a * 2"})
    ds.drop_columns(["c"])
    ds.optimize.compact_files()
    ds.create_scalar_index("a", "BTREE")
    ds = lib.dataset(uri)
    ds.checkout_version(3).restore()
    ds = lib.write_dataset(_table(ROWS), uri, mode="overwrite", max_rows_per_file=4500)
    ds.update_config({"k": "v"})
    ds.alter_columns({"path": "b", "name": "bb"})
    ds.delete_config_keys(["k"])
    ds.update_schema_metadata({"m": "1"}, replace=True)
    ds.delete("true")


def norm(o: Any) -> Any:
    """Either library's transaction as plain values: a fragment as ``to_json()``, a schema as its
    arrow form and field ids, a set (pylance's ``Bitmap``) sorted, an operation as its class name
    (lance_fw's ``UpdateOperation`` is pylance's ``Update``) and every attribute."""
    if o is None or isinstance(o, (bool, int, float, str, bytes, datetime.datetime)):
        return o
    if hasattr(o, "to_json") and hasattr(o, "physical_rows"):
        return o.to_json()
    if hasattr(o, "to_pyarrow") and hasattr(o, "fields"):
        return (o.to_pyarrow(), _ids(o.fields()))
    if hasattr(o, "file_size_bytes") and hasattr(o, "column_indices"):
        names = ("path", "fields", "column_indices", "file_major_version", "file_minor_version")
        return {k: getattr(o, k) for k in (*names, "file_size_bytes", "base_id")}
    if isinstance(o, (list, tuple)):
        return [norm(x) for x in o]
    if isinstance(o, dict):
        return {k: norm(v) for k, v in o.items()}
    if hasattr(o, "__iter__") and hasattr(o, "__contains__"):
        return sorted(o)
    name = type(o).__name__.lstrip("_")
    name = "Update" if name == "UpdateOperation" else name
    if dataclasses.is_dataclass(o):
        return name, {k: norm(v) for k, v in vars(o).items() if k != "staged"}
    return (name,)


def _ids(fields: list) -> list:
    return [(f.name(), f.id(), _ids(f.children())) for f in fields]


#: what two runs of the same code cannot share: uuids, file names and sizes (index files too), times, ids
_RUN_SPECIFIC = {"uuid", "path", "file_size_bytes", "size_bytes", "created_at", "id", "old_id", "new_id"}


def _scrub(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: "*" if k in _RUN_SPECIFIC else _scrub(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_scrub(x) for x in o]
    return o


def _kind(t: Any) -> str:
    return norm(t)[1]["operation"][0]


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def histories(request, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp(f"txn{request.param}")
    out: dict = {"storage_version": request.param}
    for lib in LIBS:
        out[lib] = str(root / f"{lib.__name__}.lance")
        _history(lib, out[lib], request.param)
    return out


EXPECTED_KINDS = [
    "Overwrite",
    "Append",
    "Delete",
    "Update",
    "Update",
    "Merge",
    "Project",
    "BaseOperation",  # compaction's ReserveFragments: pylance has no class for it
    "Rewrite",
    "CreateIndex",
    "Restore",
    "Overwrite",
    "UpdateConfig",
    "Project",
    "UpdateConfig",
    "UpdateConfig",
    "Delete",
]


@pytest.mark.parametrize("writer", LIBS, ids=lambda lib: lib.__name__)
def test_both_libraries_read_the_same_transactions(histories, writer):
    path = histories[writer]
    ours, theirs = lance_fw.dataset(path), lance.dataset(path)
    assert ours.version == theirs.version == len(EXPECTED_KINDS)
    for version in range(1, ours.version + 1):
        expected = norm(theirs.read_transaction(version))
        assert norm(ours.read_transaction(version)) == expected, f"version {version}"
    assert [_kind(t) for t in ours.get_transactions(100)] == EXPECTED_KINDS[::-1]
    assert [norm(t) for t in ours.get_transactions()] == [norm(t) for t in theirs.get_transactions()]


def test_field_values(histories):
    """A few values spelled out: the read version, properties, the operation's own fields."""
    ds = lance_fw.dataset(histories[lance_fw])
    first, append, delete = (ds.read_transaction(v) for v in (1, 2, 3))
    assert first.read_version == 0 and first.transaction_properties == {"__lance_commit_message": "init"}
    assert isinstance(first.operation, lance_fw.LanceOperation.Overwrite)
    assert first.operation.new_schema.to_pyarrow() == _table(1).schema
    assert [f.physical_rows for f in first.operation.fragments] == [3000, 2000]
    assert append.read_version == 1 and append.transaction_properties == {"k": "v"}
    assert [f.physical_rows for f in append.operation.fragments] == [10]
    assert isinstance(delete.operation, lance_fw.LanceOperation.Delete)
    assert delete.operation.predicate == "a < 100" and delete.operation.deleted_fragment_ids == []
    restore = ds.read_transaction(11).operation
    assert isinstance(restore, lance_fw.LanceOperation.Restore) and restore.version == 3
    config = ds.read_transaction(13).operation
    assert config.config_updates.updates == {"k": "v"} and config.config_updates.replace is False
    index = ds.read_transaction(10).operation.new_indices[0]
    assert index.name == "a_idx" and index.fields == [0] and index.dataset_version == 9


def _comparable(t: Any) -> Any:
    """``norm(t)`` with what pylance orders by hash sorted: an Update's updated fragments and its
    ``fields_for_preserving_frag_bitmap`` (both vary from run to run in pylance)."""
    out = norm(t)
    if out is not None and out[1]["operation"][0] == "Update":
        update = out[1]["operation"][1]
        update["updated_fragments"] = sorted(update["updated_fragments"], key=lambda f: f["id"])
        update["fields_for_preserving_frag_bitmap"] = sorted(update["fields_for_preserving_frag_bitmap"])
    return out


def test_same_code_records_the_same_operations(histories):
    """Run-specific values aside, each version's transaction is the same whichever library wrote
    it: an overwrite keeps a 2.0 dataset's file version, new fragments are recorded unnumbered
    (id 0: the manifest numbers them), update/merge_insert fill ``fields_for_preserving_frag_bitmap``,
    and drop_columns takes a file none of whose fields remain out of the fragments."""
    ours, theirs = (lance.dataset(histories[lib]) for lib in (lance_fw, lance))
    for version in range(1, theirs.version + 1):
        expected = _scrub(_comparable(theirs.read_transaction(version)))
        assert _scrub(_comparable(ours.read_transaction(version))) == expected, f"version {version}"


def _fragments(ds: Any) -> list:
    """A version's fragments as both libraries show them (``to_json``), deletion file ids and
    file names aside (random per run)."""
    out = []
    for frag in ds.get_fragments():
        d = frag.metadata.to_json()  # pylance's and lance_fw's FragmentMetadata alike
        d["files"] = [{**f, "path": "*", "file_size_bytes": "*"} for f in d["files"]]
        if d["deletion_file"]:
            d["deletion_file"] = {**d["deletion_file"], "id": "*"}
        out.append(d)
    return out


def test_same_code_writes_the_same_manifests(histories):
    """Each version written by either library: the same fragments (ids, files' fields and
    versions, rows, deletions), file format version and rows, read through both libraries."""
    for version in range(1, len(EXPECTED_KINDS) + 1):
        shown = []
        for path in (histories[lance], histories[lance_fw]):
            for lib in LIBS:
                ds = lib.dataset(path, version=version)
                shown.append((_fragments(ds), ds.data_storage_version, ds.to_table().sort_by("a")))
        assert all(s[:2] == shown[0][:2] for s in shown), f"version {version}"
        assert all(s[2].equals(shown[0][2]) for s in shown), f"version {version}"


def test_get_transactions_counts(histories):
    """From the dataset's own version down: at least one, no more than the versions there are."""
    for lib in LIBS:
        ds = lib.dataset(histories[lance], version=3)
        assert [t.read_version for t in ds.get_transactions(20)] == [2, 1, 0]
        assert len(ds.get_transactions(0)) == len(ds.get_transactions(1)) == 1
        assert len(ds.get_transactions(2)) == 2


@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: lib.__name__)
def test_bad_versions(histories, lib):
    ds = lib.dataset(histories[lance])
    with pytest.raises(OSError):
        ds.read_transaction(99)
    with pytest.raises(OSError):
        ds.read_transaction(0)
    with pytest.raises(TypeError):
        ds.read_transaction(None)
    with pytest.raises(TypeError):
        ds.get_transactions(None)
    with pytest.raises(TypeError):
        ds.read_transaction(2.0)
    assert ds.read_transaction(np.int64(2)).read_version == 1  # numpy ints are integers


def test_version_without_transaction(tmp_path):
    """A manifest that records no transaction (older writers): None from both libraries, also
    inside ``get_transactions``."""
    paths = {}
    for lib in LIBS:
        paths[lib] = str(tmp_path / f"{lib.__name__}.lance")
        lib.write_dataset(_table(ROWS), paths[lib], max_rows_per_file=3000)
        lib.write_dataset(_table(10, ROWS), paths[lib], mode="append")
        storage = resolve_storage(paths[lib], None)
        entry = find_version(storage, paths[lib], 2)
        manifest, indices = read_manifest(storage, entry.path)
        manifest.ClearField("transaction_file")
        manifest.ClearField("transaction_section")
        storage.write_bytes(entry.path, encode_manifest(manifest, None, indices))
    for path in paths.values():
        for lib in LIBS:
            ds = lib.dataset(path)
            assert ds.read_transaction(2) is None
            assert [t is None for t in ds.get_transactions()] == [True, False]


def test_compaction_remapping_an_index(tmp_path):
    """Compaction after an index was built records the remapped index. pylance 14 cannot show it
    (its ``RewrittenIndex`` misses three arguments: TypeError); lance_fw gives pylance's fields."""
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=1000)
    ds.create_scalar_index("a", "BTREE")
    ds.delete("a < 10")
    ds.optimize.compact_files()
    with pytest.raises(TypeError):
        lance.dataset(path).get_transactions(1)
    ours = lance_fw.dataset(path)
    rewrite = ours.get_transactions(1)[0].operation
    index_uuid = ours.read_transaction(2).operation.new_indices[0].uuid
    assert [r.old_id for r in rewrite.rewritten_indices] == [index_uuid]
    assert all(r.new_id != index_uuid and r.new_details_type_url for r in rewrite.rewritten_indices)
    assert sum(len(g.old_fragments) for g in rewrite.groups) == 5
    assert [f.physical_rows for g in rewrite.groups for f in g.new_fragments] == [ROWS - 10]


def test_append_fragments_are_fragment_metadata(tmp_path):
    """An Append's fragments are lance_fw's ``FragmentMetadata`` (what ``commit`` takes), naming
    the files the version added."""
    path = str(tmp_path / "ds")
    lance_fw.write_dataset(_table(ROWS), path)
    ds = lance_fw.write_dataset(_table(10, ROWS), path, mode="append")
    append = ds.read_transaction(2)
    assert isinstance(append.operation, lance_fw.LanceOperation.Append)
    assert [f.to_json()["files"] for f in append.operation.fragments] == [
        lance.dataset(path).get_fragments()[-1].metadata.to_json()["files"]
    ]


def _pylance_data_replacement(path: str) -> None:
    """pylance commits a DataReplacement: fragment 0's file of column ``b`` swapped for a new one."""
    from lance.file import LanceFileWriter
    from lance.fragment import DataFile

    ds = lance.write_dataset(pa.table({"a": np.arange(ROWS)}), path, max_rows_per_file=3000)
    ds.add_columns({"b": "a * 2"})
    old = ds.get_fragments()[0].metadata.files[1]
    writer = LanceFileWriter(f"{path}/data/new_b.lance")
    writer.write_batch(pa.table({"b": np.arange(3000) * 3}))
    writer.close()
    new = DataFile("new_b.lance", [1], [0], old.file_major_version, old.file_minor_version)
    group = lance.LanceOperation.DataReplacementGroup(0, new)
    lance.LanceDataset.commit(path, lance.LanceOperation.DataReplacement([group]), read_version=ds.version)


@pytest.mark.parametrize("writer", LIBS, ids=lambda lib: lib.__name__)
def test_metadata_updates_read_the_same(tmp_path, writer):
    """Table, field and schema metadata changes and a partial-column merge_insert."""
    path = str(tmp_path / "ds")
    ds = writer.write_dataset(_table(ROWS), path, max_rows_per_file=3000)
    ds.update_metadata({"tm": "1"})
    ds.update_field_metadata({"b": {"fm": "2"}})
    ds.update_schema_metadata({"x": "y"})
    partial = pa.table({"a": pa.array([1, 2, 4000]), "b": ["p", "q", "r"]})
    ds.merge_insert("a").when_matched_update_all().execute(partial)
    ours, theirs = lance_fw.dataset(path), lance.dataset(path)
    assert [norm(t) for t in ours.get_transactions(10)] == [norm(t) for t in theirs.get_transactions(10)]
    assert [_kind(t) for t in ours.get_transactions(10)] == [
        "Update",
        "UpdateConfig",
        "UpdateConfig",
        "UpdateConfig",
        "Overwrite",
    ]
    field_update = ours.read_transaction(3).operation.field_metadata_updates
    assert {k: (v.updates, v.replace) for k, v in field_update.items()} == {1: ({"fm": "2"}, False)}


def test_data_replacement_reads_the_same(tmp_path):
    path = str(tmp_path / "ds")
    _pylance_data_replacement(path)
    ours, theirs = lance_fw.dataset(path), lance.dataset(path)
    assert norm(ours.read_transaction(3)) == norm(theirs.read_transaction(3))
    group = ours.read_transaction(3).operation.replacements[0]
    assert (group.fragment_id, group.new_file.path, group.new_file.fields) == (0, "new_b.lance", [1])


def test_get_transactions_stops_at_cleaned_up_versions(tmp_path):
    from datetime import timedelta

    path = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=3000)
    for start in (ROWS, ROWS + 10, ROWS + 20):
        ds = lance.write_dataset(_table(10, start), path, mode="append")
    ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    expected = [norm(t) for t in lance.dataset(path).get_transactions(10)]
    assert len(expected) == 1
    assert [norm(t) for t in lance_fw.dataset(path).get_transactions(10)] == expected


def test_stable_row_id_fragments(tmp_path):
    """The fragments of a dataset with stable row ids carry row id and version sequences, which
    ``to_json()`` shows as pylance's does (transactions and the manifest's fragments)."""
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=3000, enable_stable_row_ids=True)
    ds.delete("a > 4990")
    ds.update({"b": "'z'"}, where="a < 5")
    for version in (1, 2, 3):
        assert norm(lance_fw.dataset(path).read_transaction(version)) == norm(
            lance.dataset(path).read_transaction(version)
        )
    ours = [f.metadata.to_json() for f in lance_fw.dataset(path).get_fragments()]
    theirs = [f.metadata.to_json() for f in lance.dataset(path).get_fragments()]
    assert ours == theirs and all(f["row_id_meta"] and f["created_at_version_meta"] for f in ours)


def _rewrite_transaction(path: str, version: int, change) -> None:
    """Replace the transaction recorded for ``version`` by ``change(transaction)``'s edit of it
    (what an older writer would have written)."""
    storage = resolve_storage(path, None)
    entry = find_version(storage, path, version)
    manifest, indices = read_manifest(storage, entry.path)
    transaction = read_transaction_message(storage, path, entry.path)
    change(transaction)
    manifest.ClearField("transaction_file")
    storage.write_bytes(entry.path, encode_manifest(manifest, transaction, indices))


def test_older_update_config_and_rewrite_forms(tmp_path):
    """UpdateConfig's flat fields (upsert_values, delete_keys, schema_metadata, field_metadata) and
    Rewrite's flat fragment lists (no groups), which older writers recorded, read as pylance."""
    config, rewrite = str(tmp_path / "config"), str(tmp_path / "rewrite")
    lance.write_dataset(_table(10), config).update_config({"k": "v"})

    def flat_config(t) -> None:
        t.update_config.Clear()
        t.update_config.upsert_values["k"] = "v"
        t.update_config.delete_keys.append("gone")
        t.update_config.schema_metadata["sm"] = "1"
        t.update_config.field_metadata[0].metadata["fm"] = "2"

    def flat_rewrite(t) -> None:
        group = t.rewrite.groups[0]
        t.rewrite.old_fragments.extend(group.old_fragments)
        t.rewrite.new_fragments.extend(group.new_fragments)
        t.rewrite.ClearField("groups")

    _rewrite_transaction(config, 2, flat_config)
    lance.write_dataset(_table(ROWS), rewrite, max_rows_per_file=1000).optimize.compact_files()
    _rewrite_transaction(rewrite, 3, flat_rewrite)
    for path, version in ((config, 2), (rewrite, 3)):
        expected = norm(lance.dataset(path).read_transaction(version))
        assert norm(lance_fw.dataset(path).read_transaction(version)) == expected
    op = lance_fw.dataset(config).read_transaction(2).operation
    assert op.config_updates == UpdateMap({"k": "v", "gone": None}, replace=False)
