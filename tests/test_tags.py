"""Tags: the same _refs/tags JSON as pylance, read and written both ways."""

from __future__ import annotations

import json
import os
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import InvalidArgumentError


@pytest.fixture
def three_versions(tmp_path):
    uri = str(tmp_path / "ds")
    for i in range(3):
        lance_fw.write_dataset(pa.table({"a": [i]}), uri, mode="append")
    return uri


def test_tags_round_trip_with_pylance(three_versions):
    uri = three_versions
    ds = lance_fw.dataset(uri)
    ds.tags.create("first", 1)
    ds.tags.create("latest")  # no reference: the latest version
    body = json.loads(open(os.path.join(uri, "_refs", "tags", "first.json")).read())
    assert set(body) == {"branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata"}
    theirs = lance.dataset(uri)
    assert {k: v["version"] for k, v in theirs.tags.list().items()} == {"first": 1, "latest": 3}
    assert theirs.tags.list()["first"]["manifest_size"] == body["manifestSize"]
    assert lance.dataset(uri, version="first").count_rows() == 1
    theirs.tags.create("second", 2)
    assert lance_fw.dataset(uri, version="second").count_rows() == 2
    assert ds.tags.get_version("second") == 2
    assert [name for name, _ in ds.tags.list_ordered()] == [n for n, _ in theirs.tags.list_ordered()]
    ds.tags.update("first", "second")  # a tag may point where another tag points
    assert lance.dataset(uri).tags.get_version("first") == 2
    ds.tags.delete("latest")
    assert set(lance.dataset(uri).tags.list()) == {"first", "second"}
    assert lance_fw.dataset(uri).checkout_version("second").version == 2


def test_tag_errors(three_versions):
    tags = lance_fw.dataset(three_versions).tags
    tags.create("t", 1)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        tags.create("t", 2)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        tags.create("u", 9)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        lance_fw.dataset(three_versions, version="nope")
    with pytest.raises(InvalidArgumentError, match="not valid"):
        tags.create("../escape", 1)


def test_tagged_version_survives_cleanup(three_versions):
    uri = three_versions
    lance_fw.dataset(uri).tags.create("keep", 1)
    stats = lance_fw.dataset(uri).cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == 1  # version 2 went, version 1 is tagged
    assert lance.dataset(uri, version="keep").count_rows() == 1
