"""Every path a manifest or a caller stores is resolved strictly under the dataset root: a path
that climbs out (``..``), is absolute, or names another scheme is refused, never read."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CorruptFileError, InvalidArgumentError
from lance_fw.fragment import FragmentMetadata, write_fragments
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import encode_manifest, list_versions, read_manifest, read_transaction

ESCAPES = ["../../other/data/{name}", "{other}/data/{name}", "file://{other}/data/{name}", "sub/../../../other/data/{name}"]


def _datasets(tmp_path):
    """``ds`` (ours) and ``other`` (a real dataset outside it, whose file a crafted path would read)."""
    ds, other = str(tmp_path / "ds"), str(tmp_path / "other")
    lance_fw.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), ds)
    lance_fw.write_dataset(pa.table({"x": pa.array([7, 8, 9], pa.int64())}), other)
    name = os.listdir(os.path.join(other, "data"))[0]
    return ds, other, name


def _rewrite_latest(uri, edit) -> None:
    """Edit the latest manifest in place (what a crafted or corrupted manifest looks like)."""
    storage = resolve_storage(uri)
    path = list_versions(storage, uri)[-1].path
    manifest, index_section = read_manifest(storage, path)
    transaction = read_transaction(storage, uri, path)
    edit(manifest)
    with open(path, "wb") as f:
        f.write(encode_manifest(manifest, transaction, index_section))


@pytest.mark.parametrize("template", ESCAPES)
def test_data_file_path_outside_the_root_is_refused(tmp_path, template):
    ds, other, name = _datasets(tmp_path)
    escape = template.format(name=name, other=other)
    _rewrite_latest(ds, lambda m: setattr(m.fragments[0].files[0], "path", escape))
    with pytest.raises(CorruptFileError, match="outside the dataset"):
        lance_fw.dataset(ds).to_table()
    with pytest.raises(CorruptFileError, match="outside the dataset"):
        lance_fw.dataset(ds).count_rows("x > 0")


def test_transaction_file_outside_the_root_is_refused(tmp_path):
    ds, other, _ = _datasets(tmp_path)
    storage = resolve_storage(other)
    txn = read_manifest(storage, list_versions(storage, other)[-1].path)[0].transaction_file
    os.makedirs(os.path.join(other, "_transactions"), exist_ok=True)
    with open(os.path.join(other, "_transactions", txn), "wb") as f:
        f.write(b"")
    path = list_versions(resolve_storage(ds), ds)[-1].path
    manifest, index_section = read_manifest(resolve_storage(ds), path)
    manifest.transaction_file = f"../../other/_transactions/{txn}"
    manifest.ClearField("transaction_section")  # so the transaction is looked up by file name
    with open(path, "wb") as f:
        f.write(encode_manifest(manifest, None, index_section))
    with pytest.raises(CorruptFileError, match="outside the dataset"):
        read_transaction(resolve_storage(ds), ds, path)


@pytest.mark.parametrize("template", ESCAPES)
def test_commit_of_fragment_metadata_outside_the_root_is_refused(tmp_path, template):
    """``LanceDataset.commit`` takes fragment metadata from callers: an escaping path is a bad
    argument, and nothing is committed."""
    ds, other, name = _datasets(tmp_path)
    [fragment] = write_fragments(pa.table({"x": pa.array([4], pa.int64())}), ds)
    fragment.message.files[0].path = template.format(name=name, other=other)
    with pytest.raises(InvalidArgumentError, match="outside the dataset"):
        lance_fw.LanceDataset.commit(ds, lance_fw.LanceOperation.Append([fragment]))
    assert lance.dataset(ds).version == 1
    as_json = FragmentMetadata(fragment.message).to_json()
    with pytest.raises(InvalidArgumentError, match="outside the dataset"):
        lance_fw.LanceDataset.commit(ds, lance_fw.LanceOperation.Append([as_json]))
    assert lance_fw.dataset(ds).to_table().column("x").to_pylist() == [1, 2, 3]


def test_pylance_does_not_read_the_escaping_path_either(tmp_path):
    """The oracle: pylance does not hand back the other dataset's rows for a ``..`` path."""
    ds, other, name = _datasets(tmp_path)
    _rewrite_latest(ds, lambda m: setattr(m.fragments[0].files[0], "path", f"../../other/data/{name}"))
    try:
        rows = lance.dataset(ds).to_table().column("x").to_pylist()
    except Exception:  # noqa: BLE001 - refusing is what we want
        return
    assert rows != [7, 8, 9]
