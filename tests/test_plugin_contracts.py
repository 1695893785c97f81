"""Plugins are trusted but verified: what an encoder or decoder hands back is checked, and the
storage contracts the kernel relies on (atomic outputs) hold for the built-in local storage.

The misbehaving plugins here are third-party style: hook implementations in this module,
registered at run time with ``lance_fw.plugin_manager.register`` and wrapping the real example
plugin ``lance_fw_delta``, so only the one lie each test is about differs from a working plugin.
"""

from __future__ import annotations

import dataclasses
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError
from lance_fw.hookspecs import hookimpl
from lance_fw.plugin_manager import register, unregister

lance_fw_delta = pytest.importorskip("lance_fw_delta", reason="pip install -e examples/lance_fw_delta")

CLAIM = "test-contracts:lie"  # field metadata: the lying plugin encodes this column


class LyingEncoder:
    """The example plugin's encoder, with one field of each page it returns made wrong."""

    def __init__(self, arrow_type: pa.DataType, lie: str | None):
        self.inner = lance_fw_delta.DeltaBitpackedEncoder(arrow_type)
        self.lie = lie

    def encode(self, array: pa.Array):
        page = self.inner.encode(array)
        if self.lie == "short":
            return dataclasses.replace(page, num_rows=page.num_rows - 1)
        if self.lie == "buffer":
            return dataclasses.replace(page, buffers=[*page.buffers, [1, 2, 3]])
        if self.lie == "encoding":
            return dataclasses.replace(page, encoding=page.encoding.SerializeToString())
        return page


class LyingPlugin:
    """Claims the columns carrying ``CLAIM`` metadata while it has a ``lie`` to tell."""

    lie: str | None = None

    @hookimpl
    def lance_select_encoder(self, column, options):
        if (self.lie is None or CLAIM not in column.metadata or column.role != "leaf"
                or tuple(column.version) != (2, 0)):
            return None  # honest: the built-in encoder writes it, so pylance reads the dataset
        return LyingEncoder(column.arrow_type, self.lie)


@pytest.fixture
def liar():
    plugin = LyingPlugin()
    register(plugin, name="liar")
    try:
        yield plugin
    finally:
        unregister("liar")


def table(n: int = 1000, start: int = 0) -> pa.Table:
    schema = pa.schema([pa.field("a", pa.int64(), metadata={CLAIM: "yes"}), pa.field("b", pa.string())])
    return pa.table({"a": np.arange(start, start + n, dtype=np.int64),
                     "b": [f"r{i}" for i in range(start, start + n)]}, schema=schema)


def data_files(uri: str) -> set[str]:
    return set(os.listdir(os.path.join(uri, "data")))


# --- 1. encoder output is checked before anything is committed -------------------------------------

@pytest.mark.parametrize("lie, says", [("short", "given 1000 rows and returned a page of 999 rows"),
                                       ("buffer", "page buffer"),
                                       ("encoding", "not a google.protobuf.Any")])
def test_lying_encoder_fails_the_write_and_keeps_the_previous_version(uri, liar, lie, says):
    before = table()
    lance_fw.write_dataset(before, uri, data_storage_version="2.0")
    files = data_files(uri)
    liar.lie = lie
    with pytest.raises(LanceError) as info:
        lance_fw.write_dataset(table(start=1000), uri, mode="append")
    message = str(info.value)
    assert says in message and "'liar'" in message and "'a'" in message and "LyingEncoder" in message
    assert data_files(uri) == files  # the failed write's data files are gone
    for ds in (lance.dataset(uri), lance_fw.dataset(uri)):
        assert ds.version == 1
        assert ds.to_table().equals(before)


def test_lying_encoder_on_create_leaves_no_dataset(uri, liar):
    liar.lie = "short"
    with pytest.raises(LanceError, match="999 rows"):
        lance_fw.write_dataset(table(), uri, data_storage_version="2.0")
    with pytest.raises(ValueError):
        lance.dataset(uri)


def test_honest_wrapped_encoder_still_writes(uri, liar):
    liar.lie = "none"  # claims the column, encodes it exactly as lance_fw_delta does
    data = table(n=5000)
    lance_fw.write_dataset(data, uri, data_storage_version="2.0", max_page_bytes=4096)
    assert lance_fw.dataset(uri).to_table().equals(data)
