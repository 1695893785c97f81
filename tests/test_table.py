"""Table-format behaviour: manifests, versions, flags, row ids, plugins, streaming writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import list_versions, manifest_name, parse_manifest_name, read_manifest
from tests.conftest import assert_tables_equal


def test_manifest_names():
    assert manifest_name(1) == "18446744073709551614.manifest"
    assert manifest_name(10) == "18446744073709551605.manifest"
    assert manifest_name(3, v2=False) == "3.manifest"
    assert parse_manifest_name("18446744073709551614.manifest") == (1, True)
    assert parse_manifest_name("7.manifest") == (7, False)
    assert parse_manifest_name("d7.manifest") is None
    assert parse_manifest_name("latest_version_hint.json") is None


def test_commit_writes_hint_transaction_and_inline_transaction(uri):
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version="2.0")
    lance_fw.write_dataset(pa.table({"a": [2]}), uri, mode="append")
    assert json.load(open(f"{uri}/_versions/latest_version_hint.json")) == {"version": 2}
    storage = resolve_storage(uri)
    manifest, _ = read_manifest(storage, list_versions(storage, uri)[-1].path)
    assert manifest.transaction_file.startswith("1-") and manifest.max_fragment_id == 1
    assert os.path.exists(f"{uri}/_transactions/{manifest.transaction_file}")
    assert manifest.HasField("transaction_section")
    txn = lance.dataset(uri).read_transaction(2) if hasattr(lance.LanceDataset, "read_transaction") else None
    if txn is not None:
        assert type(txn.operation).__name__ == "Append"


def test_v1_manifest_names_are_read_and_kept(uri):
    lance.write_dataset(pa.table({"a": [1]}), uri, data_storage_version="2.0", enable_v2_manifest_paths=False)
    lance_fw.write_dataset(pa.table({"a": [2]}), uri, mode="append")
    assert {"1.manifest", "2.manifest"} <= set(os.listdir(f"{uri}/_versions"))
    assert lance.dataset(uri).to_table().column("a").to_pylist() == [1, 2]


def test_stable_row_ids_survive_a_lance_fw_append(uri):
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, enable_stable_row_ids=True, data_storage_version="2.0")
    lance_fw.write_dataset(pa.table({"a": [4, 5]}), uri, mode="append")
    lance.write_dataset(pa.table({"a": [6]}), uri, mode="append")
    ds = lance.dataset(uri)
    assert ds.to_table(with_row_id=True).column("_rowid").to_pylist() == [0, 1, 2, 3, 4, 5]
    ds.delete("a = 2")
    assert lance_fw.dataset(uri).to_table().column("a").to_pylist() == [1, 3, 4, 5, 6]


def test_unknown_reader_flag_is_refused(uri):
    from lance_fw._proto import table_pb2  # noqa: F401
    from lance_fw.table.manifest import encode_manifest

    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version="2.0")
    storage = resolve_storage(uri)
    entry = list_versions(storage, uri)[-1]
    manifest, _ = read_manifest(storage, entry.path)
    manifest.reader_feature_flags |= 1 << 9
    manifest.writer_feature_flags |= 1 << 9
    storage.write_bytes(entry.path, encode_manifest(manifest, None))
    with pytest.raises(UnsupportedFeatureError, match="unknown bit 512"):
        lance_fw.dataset(uri)
    with pytest.raises(UnsupportedFeatureError):
        lance_fw.write_dataset(pa.table({"a": [2]}), uri, mode="append")


def test_pylance_default_22_dataset_reads_and_refuses_mixed_appends(uri):
    lance.write_dataset(pa.table({"a": [1]}), uri)  # pylance's default: 2.2
    assert lance_fw.dataset(uri).to_table().column("a").to_pylist() == [1]
    with pytest.raises(InvalidArgumentError, match="mix"):
        lance_fw.write_dataset(pa.table({"a": [2]}), uri, mode="append", data_storage_version="2.0")


def test_missing_dataset_and_version(uri):
    with pytest.raises(DatasetNotFoundError):
        lance_fw.dataset(uri)
    lance_fw.write_dataset(pa.table({"a": [1]}), uri, data_storage_version="2.0")
    with pytest.raises(DatasetNotFoundError, match="version 5"):
        lance_fw.dataset(uri, version=5)


FRAGMENT_ROWS = 10_000


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def fragment_paths(request, tmp_path_factory):
    """The same rows written and deleted by each library: 4 fragments (3000, 3000, 3000, 1000 rows)
    of several pages each, deletions in every fragment and a run of them in fragment 1."""
    table = pa.table({"a": pa.array(np.arange(FRAGMENT_ROWS), pa.int64()),
                      "s": [f"s{i % 17}" * (i % 5) for i in range(FRAGMENT_ROWS)],
                      "f": pa.array([None if i % 9 == 0 else i / 3 for i in range(FRAGMENT_ROWS)], pa.float64())})
    out = {}
    for mod in (lance, lance_fw):
        path = str(tmp_path_factory.mktemp(f"{mod.__name__}-{request.param}") / "ds")
        mod.write_dataset(table, path, max_rows_per_file=3000, max_page_bytes=4096,
                          data_storage_version=request.param)
        mod.dataset(path).delete("a % 11 = 0 OR (a >= 3500 AND a < 3600)")
        out[mod] = path
    return out


def _fragment_pairs(fragment_paths):
    """(pylance fragment, lance_fw fragment) pairs: each library on its own dataset, and lance_fw
    on pylance's dataset."""
    theirs = lance.dataset(fragment_paths[lance]).get_fragments()
    yield from zip(theirs, lance_fw.dataset(fragment_paths[lance_fw]).get_fragments())
    yield from zip(theirs, lance_fw.dataset(fragment_paths[lance]).get_fragments())


def test_fragment_metadata_equals_pylance(fragment_paths):
    pairs = list(_fragment_pairs(fragment_paths))
    assert len(pairs) == 8
    for theirs, ours in pairs:
        assert (ours.fragment_id, ours.physical_rows, ours.count_rows(), ours.count_rows("a % 2 = 0")) == \
            (theirs.fragment_id, theirs.physical_rows, theirs.count_rows(), theirs.count_rows("a % 2 = 0"))
        assert [(list(f.fields), list(f.column_indices), f.file_major_version, f.file_minor_version)
                for f in ours.data_files()] == \
            [(list(f.fields), list(f.column_indices), f.file_major_version, f.file_minor_version)
             for f in theirs.data_files()]
        assert (ours.deletion_file() is None) == (theirs.deletion_file() is None)
    for theirs, ours in pairs[4:]:  # the same dataset: the same files
        assert [f.path for f in ours.data_files()] == [f.path for f in theirs.data_files()]
        assert ours.deletion_file() == theirs.deletion_file()


@pytest.mark.parametrize("options", [
    {}, {"columns": ["s"]}, {"columns": ["f", "a"], "filter": "f IS NULL OR a > 6500"},
    {"offset": 10, "limit": 25}, {"offset": 2900}, {"limit": 0}, {"offset": 100, "limit": 10_000},
    {"columns": ["a"], "filter": "a % 3 = 1", "offset": 50, "limit": 700},
    {"with_row_id": True, "with_row_address": True, "offset": 499, "limit": 3},
    {"columns": [], "offset": 7}, {"columns": {"twice": "a * 2"}, "limit": 5, "offset": 400},
], ids=str)
def test_fragment_scans_equal_pylance(fragment_paths, options):
    for theirs, ours in _fragment_pairs(fragment_paths):
        expected = theirs.to_table(**options)
        actual = ours.to_table(**options)
        assert actual.num_rows == expected.num_rows and actual.schema.names == expected.schema.names
        if expected.num_columns:
            assert_tables_equal(expected, actual)
        ours_sizes = [b.num_rows for b in ours.to_batches(batch_size=256, **options)]
        if "filter" in options:  # pylance's filtered batches follow its read batches: only the bound holds
            assert sum(ours_sizes) == expected.num_rows and max(ours_sizes, default=0) <= 256
        else:
            assert ours_sizes == [b.num_rows for b in theirs.to_batches(batch_size=256, **options)]


def test_fragment_count_rows_and_head(fragment_paths):
    for theirs, ours in _fragment_pairs(fragment_paths):
        assert ours.count_rows("s = 's3s3s3'") == theirs.count_rows("s = 's3s3s3'")
        assert_tables_equal(theirs.head(7), ours.head(7))


def test_row_addresses_equal_pylance(fragment_paths):
    for mod_path in fragment_paths.values():
        ours = lance_fw.dataset(mod_path).to_table(with_row_address=True, columns=["a"])
        assert_tables_equal(lance.dataset(mod_path).to_table(with_row_address=True, columns=["a"]), ours)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_streaming_write_has_bounded_memory(uri, version):
    """A stream ~20x larger than the writer's buffer budget never piles up in memory."""
    rows, batches = 64 * 1024, 160  # 160 batches x 1 MiB = 160 MiB in total
    peak = 0

    def source():
        nonlocal peak
        for i in range(batches):
            yield pa.record_batch({"x": pa.array(np.arange(i * rows, (i + 1) * rows, dtype=np.int64)),
                                   "y": pa.array(np.full(rows, i, dtype=np.int64))})
            peak = max(peak, pa.total_allocated_bytes())

    schema = pa.schema([("x", pa.int64()), ("y", pa.int64())])
    reader = pa.RecordBatchReader.from_batches(schema, source())
    lance_fw.write_dataset(reader, uri, data_storage_version=version, max_page_bytes=1 << 20)
    assert peak < 48 * 1024 * 1024, f"peak Arrow memory {peak / 2**20:.1f} MiB while writing a 160 MiB stream"
    ds = lance_fw.dataset(uri)
    assert ds.count_rows() == rows * batches
    assert lance.dataset(uri).count_rows() == rows * batches


def test_plugins_listed_and_trace():
    names = {p["name"]: p for p in lance_fw.plugins()}
    for builtin in ("storage_local", "storage_fsspec", "commit_put_if_absent", "encodings_v2_0", "deletion_files"):
        assert builtin in names, names
    assert "lance_select_encoder" in names["encodings_v2_0"]["hooks"]
    code = ("import lance_fw, pyarrow as pa, tempfile; d = tempfile.mkdtemp(); "
            "lance_fw.write_dataset(pa.table({'a': [1]}), d + '/x', data_storage_version='2.0')")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "LANCE_FW_TRACE": "1"},
                         capture_output=True, text=True, check=True)
    assert "lance_select_encoder" in out.stderr and "lance_commit_handler" in out.stderr


def test_builtins_come_from_entry_points():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="lance_fw")}
    assert eps["encodings_v2_0"] == "lance_fw_plugins.encodings_v2_0"
    assert eps["storage_local"] == "lance_fw_plugins.storage_local"


def test_kernel_never_imports_plugins_by_name():
    import pathlib

    root = pathlib.Path(lance_fw.__file__).parent
    offenders = [str(p) for p in root.rglob("*.py") if "lance_fw_plugins" in p.read_text()]
    assert offenders == []


def test_index_type_registry_takes_plugins():
    from lance_fw.hookspecs import hookimpl
    from lance_fw.plugin_manager import register, registry, unregister

    class FakeIndex:
        @hookimpl
        def lance_index_types(self):
            return {"FAKE": object()}

    register(FakeIndex(), name="fake-index")
    try:
        assert "FAKE" in registry.index_types
    finally:
        unregister("fake-index")
    assert "FAKE" not in registry.index_types
