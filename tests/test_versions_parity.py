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
