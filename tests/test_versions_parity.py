"""``versions()`` against pylance on a dataset written by both: the same versions, the same timestamps
to the microsecond (pylance's float conversion included), the same metadata."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("versions") / "v.lance")
    lance_fw.write_dataset(pa.table({"a": [0]}), path)
    for i in range(1, 30):  # interleaved writers; 30 stamps make a float rounding difference near certain
        writer = lance_fw if i % 2 else lance
        writer.write_dataset(pa.table({"a": [i]}), path, mode="append")
    lance.dataset(path).delete("a = 3")
    return path


def test_versions_and_timestamps_equal_pylance(mixed):
    ours = [(v["version"], v["timestamp"]) for v in lance_fw.dataset(mixed).versions()]
    theirs = [(v["version"], v["timestamp"]) for v in lance.dataset(mixed).versions()]
    assert ours == theirs


def test_version_metadata_equals_pylance(mixed):
    ours = [v["metadata"] for v in lance_fw.dataset(mixed).versions()]
    theirs = [v["metadata"] for v in lance.dataset(mixed).versions()]
    assert ours == theirs


@pytest.mark.parametrize("v2_names", [True, False], ids=["v2 names", "v1 names"])
def test_latest_and_each_version_open_as_in_pylance(tmp_path, v2_names):
    """The newest version is found without parsing every name (``manifest.latest_version``) and a
    given one by its name: both must still be pylance's, with v1 (counting up) or v2 (counting
    down) manifest names, past 10 versions (v1 names then sort apart from their numbers), and
    among files a listing may hold beside manifests."""
    path = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"a": [0]}), path, enable_v2_manifest_paths=v2_names)
    for i in range(1, 11):
        (lance_fw if i % 2 else lance).write_dataset(pa.table({"a": [i]}), path, mode="append")
    assert lance_fw.dataset(path).version == lance.dataset(path).version == 11  # manifests alone
    (lance_fw if v2_names else lance).write_dataset(pa.table({"a": [11]}), path, mode="append")
    versions = f"{path}/_versions"
    for junk in (".tmp-partial", "latest_version_hint.json", "d4.manifest", "x" * 20 + ".manifest"):
        with open(f"{versions}/{junk}", "w") as out:
            out.write("not a manifest")
    assert lance_fw.dataset(path).version == lance.dataset(path).version == 12
    assert lance_fw.dataset(path).latest_version == 12
    for version in (1, 2, 10, 12):
        ours = lance_fw.dataset(path, version=version).to_table()
        assert ours.equals(lance.dataset(path, version=version).to_table())
    with pytest.raises(ValueError):
        lance_fw.dataset(path, version=13)
    lance_fw.write_dataset(pa.table({"a": [99]}), path, mode="append")  # commits on top of 12
    assert lance.dataset(path).version == 13 and lance.dataset(path).count_rows() == 13
