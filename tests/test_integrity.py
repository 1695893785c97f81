"""Table-format integrity: a published version is never damaged by a failure after it was
published, data never escapes its declared nullability, and crafted manifests are refused."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.table import transaction
from tests.conftest import assert_tables_equal


def _dataset_files(uri: str) -> set[str]:
    out = set()
    for root, _, files in os.walk(uri):
        out.update(os.path.relpath(os.path.join(root, f), uri) for f in files)
    return out


def _referenced_files(uri: str) -> list[str]:
    """Data and deletion files of the latest version, as pylance sees them."""
    ds = lance.dataset(uri)
    out = []
    for frag in ds.get_fragments():
        meta = frag.metadata
        out.extend(os.path.join(uri, "data", f.path) for f in meta.files)
        if meta.deletion_file is not None:
            out.append(os.path.join(uri, meta.deletion_file.path(frag.fragment_id)))
    return out


def _base(uri: str) -> None:
    lance_fw.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()), "v": [float(i) for i in range(100)]}),
                           uri, max_rows_per_file=10)


def _append(uri):
    lance_fw.write_dataset(pa.table({"id": pa.array([1000, 1001], pa.int64()), "v": [1.0, 2.0]}), uri, mode="append")


def _delete(uri):
    lance_fw.dataset(uri).delete("id % 3 = 0")


def _compact(uri):
    lance_fw.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)


def _update(uri):
    lance_fw.dataset(uri).update({"v": "v + 1"}, where="id < 15")


def _add_columns(uri):
    lance_fw.dataset(uri).add_columns({"w": "id * 2"})


def _merge_insert(uri):
    source = pa.table({"id": pa.array([5, 500], pa.int64()), "v": [-1.0, -2.0]})
    lance_fw.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)


OPERATIONS = [_append, _delete, _compact, _update, _add_columns, _merge_insert]


def _interrupt(*_args, **_kwargs):
    raise KeyboardInterrupt("interrupted right after the manifest was published")


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__.strip("_"))
def test_interrupt_after_publish_keeps_the_version_whole(uri, monkeypatch, operation):
    """Ctrl-C (or any failure) after the manifest link: the version is published, so every file it
    references must stay; pylance reads it completely."""
    _base(uri)
    monkeypatch.setattr(transaction, "write_hint", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        operation(uri)
    monkeypatch.undo()
    expected = lance.dataset(uri).to_table()  # the new version, as pylance reads it
    for path in _referenced_files(uri):
        assert os.path.exists(path), f"{path} is referenced by the latest version but was deleted"
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())


def test_hint_failure_is_not_a_commit_failure(uri, monkeypatch):
    """The version hint is an optimisation: failing to write it must not fail (and undo) a commit."""
    _base(uri)

    def broken(*_args, **_kwargs):
        raise RuntimeError("hint storage broke")

    monkeypatch.setattr(transaction, "write_hint", _patched_hint_with(broken))
    _append(uri)
    monkeypatch.undo()
    assert lance.dataset(uri).count_rows() == 102
    for path in _referenced_files(uri):
        assert os.path.exists(path)


def _patched_hint_with(broken):
    """The real write_hint over a storage whose write_bytes fails."""
    from lance_fw.table.manifest import write_hint

    class Broken:
        def write_bytes(self, *args, **kwargs):
            broken()

    return lambda _storage, base, version: write_hint(Broken(), base, version)


class _LinkThenFail:
    """A commit handler that publishes, then fails (a lost reply from an object store)."""

    def __init__(self, real, error: BaseException):
        self.real, self.error = real, error

    def commit(self, path, data):
        self.real.commit(path, data)
        raise self.error


class _FailBeforePublish:
    def __init__(self, real):
        self.real = real

    def commit(self, path, data):
        raise lance_fw.errors.StorageError(f"{path}: storage unavailable")


def _with_handler(monkeypatch, wrap):
    real_resolve = transaction.resolve_commit_handler
    monkeypatch.setattr(transaction, "resolve_commit_handler", lambda storage, uri: wrap(real_resolve(storage, uri)))


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__.strip("_"))
def test_error_after_link_is_a_success(uri, monkeypatch, operation):
    """The handler published our manifest and then raised: the version exists with our bytes, so
    the commit succeeded; nothing it references is deleted."""
    _base(uri)
    before = lance.dataset(uri).version
    _with_handler(monkeypatch, lambda real: _LinkThenFail(real, OSError("reply lost")))
    operation(uri)
    monkeypatch.undo()
    ds = lance.dataset(uri)
    assert ds.version > before
    for path in _referenced_files(uri):
        assert os.path.exists(path)
    assert_tables_equal(ds.to_table(), lance_fw.dataset(uri).to_table())


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__.strip("_"))
def test_failure_before_publish_leaves_no_files(uri, monkeypatch, operation):
    """A failure known to precede publication still removes every file the attempt wrote."""
    _base(uri)
    version = lance.dataset(uri).version
    before = _dataset_files(uri)
    _with_handler(monkeypatch, _FailBeforePublish)
    with pytest.raises(lance_fw.errors.StorageError):
        operation(uri)
    monkeypatch.undo()
    after = _dataset_files(uri)
    assert lance.dataset(uri).version == version
    assert after - before == {"_versions/latest_version_hint.json"} & after or after - before == set()


# -- item 3: nulls in non-nullable fields ----------------------------------------------------

VERSIONS = ["2.0", "2.1", "2.2"]
_CHILD = pa.field("c", pa.int32(), False)
_ITEM = pa.field("item", pa.int32(), False)
_ROWS = 5000  # past a 4096-value chunk and several 1024-value blocks


def _required_top():
    values = list(range(_ROWS))
    values[4500] = None
    return pa.Table.from_arrays([pa.array(values, pa.int32())], schema=pa.schema([pa.field("a", pa.int32(), False)]))


def _required_child():
    values = list(range(_ROWS))
    values[3] = None
    struct = pa.StructArray.from_arrays([pa.array(values, pa.int32())], fields=[_CHILD])
    return pa.Table.from_arrays([struct], schema=pa.schema([pa.field("s", struct.type)]))


def _required_item():
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), pa.array([1, None, 2], pa.int32()),
                                     type=pa.list_(_ITEM))
    return pa.table({"l": lists})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("make", [_required_top, _required_child, _required_item], ids=lambda f: f.__name__)
def test_nulls_in_a_non_nullable_field_are_refused(tmp_path, version, make):
    data = make()
    with pytest.raises(OSError):  # the oracle refuses
        lance.write_dataset(data, str(tmp_path / "oracle"), data_storage_version=version)
    uri = str(tmp_path / "ds")
    with pytest.raises(lance_fw.errors.SchemaError, match=r"non-nullable") as info:
        lance_fw.write_dataset(data, uri, data_storage_version=version)
    assert repr(data.schema.names[0]) in str(info.value) or "'s.c'" in str(info.value) or "'l.item'" in str(info.value)
    assert not os.path.exists(uri) or _dataset_files(uri) == set(), "a refused write left files behind"


@pytest.mark.parametrize("version", VERSIONS)
def test_append_of_nulls_into_a_non_nullable_field_is_refused(tmp_path, version):
    schema = pa.schema([pa.field("a", pa.int32(), False)])
    good = pa.Table.from_arrays([pa.array([1, 2], pa.int32())], schema=schema)
    bad = pa.table({"a": pa.array([None, 5], pa.int32())})  # a nullable column: the dataset's schema decides
    oracle, uri = str(tmp_path / "oracle"), str(tmp_path / "ds")
    lance.write_dataset(good, oracle, data_storage_version=version)
    with pytest.raises(OSError):
        lance.write_dataset(bad, oracle, mode="append")
    lance_fw.write_dataset(good, uri, data_storage_version=version)
    before = _dataset_files(uri)
    with pytest.raises(lance_fw.errors.SchemaError, match="'a'"):
        lance_fw.write_dataset(bad, uri, mode="append")
    assert _dataset_files(uri) == before
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_null_under_a_null_parent_is_allowed(tmp_path, version):
    """Both writers accept a non-nullable child that is null only where its struct is null."""
    struct = pa.StructArray.from_arrays([pa.array([1, None, 3], pa.int32())], fields=[_CHILD],
                                        mask=pa.array([False, True, False]))
    data = pa.Table.from_arrays([struct], schema=pa.schema([pa.field("s", struct.type)]))
    lance.write_dataset(data, str(tmp_path / "oracle"), data_storage_version=version)
    lance_fw.write_dataset(data, str(tmp_path / "ds"), data_storage_version=version)
    expected = lance.dataset(str(tmp_path / "oracle")).to_table()
    assert_tables_equal(expected, lance_fw.dataset(str(tmp_path / "ds")).to_table())
    assert_tables_equal(expected, lance.dataset(str(tmp_path / "ds")).to_table())


# -- item 12: field names pylance cannot scan -------------------------------------------------

def _dotted_top():
    return pa.table({"a.b": [1, 2]})


def _duplicate_top():
    return pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])


@pytest.mark.parametrize("make", [_dotted_top, _duplicate_top], ids=lambda f: f.__name__)
def test_top_level_names_pylance_refuses_are_refused(tmp_path, make):
    with pytest.raises(OSError):
        lance.write_dataset(make(), str(tmp_path / "oracle"))
    uri = str(tmp_path / "ds")
    with pytest.raises(lance_fw.errors.SchemaError, match="'a"):
        lance_fw.write_dataset(make(), uri)
    assert not os.path.exists(uri)


def test_dotted_top_level_names_are_refused_by_schema_changes(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri)
    ds = lance_fw.dataset(uri)
    with pytest.raises(lance_fw.errors.SchemaError, match="b.c"):
        ds.add_columns({"b.c": "a + 1"})
    with pytest.raises((lance_fw.errors.SchemaError, lance_fw.errors.InvalidArgumentError), match="q.r"):
        ds.alter_columns({"path": "a", "name": "q.r"})
    assert lance.dataset(uri).schema.names == ["a"]


def test_dotted_nested_names_are_kept(tmp_path):
    """pylance writes and scans a dot inside a nested name: so does lance_fw, same data."""
    data = pa.table({"s": pa.array([{"x.y": 1}], pa.struct([("x.y", pa.int64())]))})
    lance_fw.write_dataset(data, str(tmp_path / "ds"))
    assert_tables_equal(data, lance.dataset(str(tmp_path / "ds")).to_table())
    assert_tables_equal(data, lance_fw.dataset(str(tmp_path / "ds")).to_table())


# -- item 11: failures are typed and leave nothing behind -------------------------------------

def test_a_file_is_not_a_dataset():
    with pytest.raises(ValueError):  # pylance: "Not a directory"
        lance.dataset("/etc/hostname")
    with pytest.raises(lance_fw.errors.DatasetNotFoundError, match="/etc/hostname"):
        lance_fw.dataset("/etc/hostname")


def test_writing_under_a_regular_file_is_a_storage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(lance_fw.errors.StorageError, match="file"):
        lance_fw.write_dataset(pa.table({"x": [1]}), str(blocker / "ds"))


@pytest.mark.parametrize("expression", ["id / 0", "id % 0"])
def test_update_failing_on_the_data_is_typed_and_commits_nothing(uri, tmp_path, expression):
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    oracle = str(tmp_path / "oracle")
    lance.write_dataset(data, oracle)
    with pytest.raises(OSError):  # pylance: "Divide by zero error"
        lance.dataset(oracle).update({"id": expression})
    assert lance.dataset(oracle).version == 1
    lance_fw.write_dataset(data, uri)
    before = _dataset_files(uri)
    with pytest.raises(lance_fw.errors.InvalidArgumentError, match="id"):
        lance_fw.dataset(uri).update({"id": expression})
    assert lance.dataset(uri).version == 1
    assert _dataset_files(uri) == before


@pytest.mark.parametrize("values", [pa.array([{"a": 1}, {"a": 2}]), pa.array([[1], [2]])], ids=["struct", "list"])
def test_dictionary_of_nested_values_is_refused_before_writing(tmp_path, values):
    data = pa.table({"d": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), values)})
    with pytest.raises(OSError, match="Cannot encode dictionary"):
        lance.write_dataset(data, str(tmp_path / "oracle"))
    uri = str(tmp_path / "ds")
    with pytest.raises(lance_fw.errors.SchemaError, match="dictionary"):
        lance_fw.write_dataset(data, uri)
    assert not os.path.exists(uri)


# -- item 9: crafted manifests ----------------------------------------------------------------

def _ten_rows(uri, deletes=False):
    lance_fw.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), uri, max_rows_per_file=5)
    if deletes:
        lance_fw.dataset(uri).delete("x = 1 or x = 2")


def _rewrite_latest(uri, edit):
    from tests.test_path_safety import _rewrite_latest as rewrite

    rewrite(uri, edit)


def _no_files(m):
    del m.fragments[0].files[:]


def _more_rows(m):
    m.fragments[0].physical_rows = 7


def _fewer_rows(m):
    m.fragments[0].physical_rows = 3


def _too_many_deleted(m):
    m.fragments[0].deletion_file.num_deleted_rows = 6


def _all_deleted_but_kept(m):
    m.fragments[0].deletion_file.num_deleted_rows = 5


def _reads(ds):
    return [lambda: ds.to_table(), lambda: ds.take([0, 4]), lambda: ds.count_rows("x >= 0"),
            lambda: ds.to_table(filter="x > 3")]


@pytest.mark.parametrize("edit,deletes", [(_no_files, False), (_more_rows, False), (_fewer_rows, False),
                                          (_too_many_deleted, True), (_all_deleted_but_kept, True)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_inconsistent_fragment_metadata_is_corrupt(uri, edit, deletes):
    """Counts and rows never come from a manifest that disagrees with its files: every read of the
    crafted version is a CorruptFileError (pylance: "Fragment 0 does not contain any data", "cannot
    read Ranges(..) from columns with 5 rows", or silently different rows)."""
    _ten_rows(uri, deletes)
    _rewrite_latest(uri, edit)
    try:
        ds = lance_fw.dataset(uri)
    except lance_fw.errors.CorruptFileError:
        return
    for read in _reads(ds):
        with pytest.raises(lance_fw.errors.CorruptFileError):
            read()


def test_missing_physical_rows_is_not_guessed(uri):
    """pylance reads a fragment without ``physical_rows`` by opening its file; lance_fw refuses it
    rather than dropping its rows."""
    _ten_rows(uri)
    _rewrite_latest(uri, lambda m: setattr(m.fragments[0], "physical_rows", 0))
    assert lance.dataset(uri).count_rows() == 10
    with pytest.raises(lance_fw.errors.LanceError, match="physical_rows"):
        lance_fw.dataset(uri).count_rows()


def test_spark_abort_after_a_published_commit_keeps_its_files(uri, monkeypatch):
    """Spark calls ``abort`` when ``commit`` raised, also when the version was published before
    the failure: the files that version references must stay."""
    pytest.importorskip("pyspark")
    from lance_fw.table.write import plan_write
    from lance_fw.spark.writer import LanceArrowWriter

    data = pa.table({"x": pa.array(range(10), pa.int64())})
    writer = LanceArrowWriter(plan_write(uri, data.schema, "create"), {})
    messages = [writer.write(iter(data.to_batches()))]
    monkeypatch.setattr(transaction, "write_hint", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        writer.commit(messages)
    monkeypatch.undo()
    writer.abort(messages)
    assert lance.dataset(uri).to_table().column("x").to_pylist() == list(range(10))


def test_update_and_merge_insert_cannot_put_nulls_into_a_non_nullable_field(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.int64(), False)])
    source = pa.table({"id": pa.array([2, 3], pa.int64()), "v": pa.array([None, 5], pa.int64())})
    for module in (lance, lance_fw):
        uri = str(tmp_path / module.__name__)
        module.write_dataset(pa.Table.from_arrays([pa.array([1, 2], pa.int64())] * 2, schema=schema), uri)
        before = _dataset_files(uri)
        error = OSError if module is lance else lance_fw.errors.SchemaError
        with pytest.raises(error):
            module.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
                .execute(source)
        with pytest.raises(error):
            module.dataset(uri).update({"v": "NULL"}, where="id = 1")
        assert lance.dataset(uri).version == 1
        if module is lance_fw:
            assert _dataset_files(uri) == before


def test_deletion_file_without_a_count_is_not_guessed(uri):
    """pylance: "Fragments are missing row count stats"; lance_fw would count every row as live."""
    _ten_rows(uri, deletes=True)
    _rewrite_latest(uri, lambda m: setattr(m.fragments[0].deletion_file, "num_deleted_rows", 0))
    with pytest.raises(OSError, match="missing row count"):
        lance.dataset(uri).count_rows("x >= 0")
    with pytest.raises(lance_fw.errors.UnsupportedFeatureError, match="deletion file"):
        lance_fw.dataset(uri).count_rows()


def test_partial_manifest_write_on_fsspec_is_removed(monkeypatch):
    """A manifest write that breaks off half way must not become the newest version."""
    from lance_fw_plugins.storage_fsspec import FsspecStorage

    uri = "memory://integrity-partial"
    lance_fw.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64())}), uri)
    real = FsspecStorage.write_bytes

    def half(self, path, data):
        if path.endswith(".manifest"):
            real(self, path, data[: len(data) // 2])
            raise OSError("connection reset")
        return real(self, path, data)

    monkeypatch.setattr(FsspecStorage, "write_bytes", half)
    with pytest.raises(OSError, match="connection reset"):
        lance_fw.write_dataset(pa.table({"x": pa.array([3], pa.int64())}), uri, mode="append")
    monkeypatch.undo()
    ds = lance_fw.dataset(uri)
    assert (ds.version, ds.to_table().column("x").to_pylist()) == (1, [1, 2])
