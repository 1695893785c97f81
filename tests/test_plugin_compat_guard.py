"""The pylance-compatibility guard (issue 19): lance_fw writes only what pylance 14 reads unless told.

A third-party encoding (the installed example plugin ``delta``, distribution ``lance-fw-delta``)
writes pages pylance cannot decode. Before the guard, a write with the plugin's schema hint
succeeded, pylance opened the dataset, counted its rows and then failed on *every* column read
(even the plain ones) with "unexpected type URL". Now:

* a default write that would use a non-pylance-readable encoding is refused before any file is
  written, naming the column, the plugin and the option ``allow_plugin_encodings``;
* with ``allow_plugin_encodings=True`` the manifest carries ``flags.PLUGIN_ENCODINGS`` in its
  reader and writer flags and names the plugin in its config, so pylance refuses the dataset at
  open; lance_fw with the plugin reads it, lance_fw without it names the plugin to install;
* an append that would write plugin pages needs the option again, and keeps the flag.
"""

from __future__ import annotations

import json
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from conftest import assert_tables_equal

import lance_fw
from lance_fw import plugin_manager
from lance_fw.errors import EncoderContractError, PluginEncodingNotAllowedError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage
from lance_fw.plugin_manager import get_plugin_manager, register, unregister
from lance_fw.table import flags
from lance_fw.table.manifest import (
    encode_manifest,
    list_versions,
    read_manifest,
    read_transaction,
)

HINT = {"lance-encoding:delta": "true"}
OPTION = "allow_plugin_encodings"
#: pylance 14's refusal of a manifest with reader flags it does not know
PYLANCE_REFUSAL = "cannot be read by this version of Lance"
#: pylance 14 reading a page it has no decoder for (what users saw before the guard)
PYLANCE_COLUMN_FAILURE = "unexpected type URL"
ROWS = 5000  # crosses a 4096-value chunk and, with small pages, several pages per file


@pytest.fixture
def delta():
    """The installed example plugin, loaded under its entry-point name ``delta``."""
    if get_plugin_manager().get_plugin("delta") is None:
        pytest.fail("the example plugin is not installed: pip install -e examples/lance_fw_delta", pytrace=False)
    return "delta"


@pytest.fixture
def plugins_disabled(monkeypatch):
    """``disable(names)`` blocks plugins as a user does (LANCE_FW_DISABLE_PLUGINS) and reloads."""
    def disable(names: str) -> None:
        monkeypatch.setenv("LANCE_FW_DISABLE_PLUGINS", names)
        plugin_manager.reload()
    try:
        yield disable
    finally:
        monkeypatch.undo()
        plugin_manager.reload()


def hinted(n: int = ROWS, start: int = 0) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64(), metadata=HINT), pa.field("v", pa.float64()),
                        pa.field("s", pa.string())])
    ids = np.arange(start, start + n, dtype=np.int64) * 3
    return pa.table({"id": pa.array(ids, mask=ids % 7 == 0), "v": np.linspace(0, 1, n),
                     "s": [f"r{i}" for i in range(start, start + n)]}, schema=schema)


def plain(n: int = ROWS) -> pa.Table:
    return pa.table({"id": np.arange(n, dtype=np.int64), "v": np.linspace(0, 1, n)})


def latest_manifest(uri: str):
    storage = resolve_storage(uri)
    return read_manifest(storage, list_versions(storage, uri)[-1].path)[0]


def data_files(uri: str) -> set[str]:
    path = os.path.join(uri, "data")
    return set(os.listdir(path)) if os.path.isdir(path) else set()


def write_allowed(uri: str, table: pa.Table, **kw) -> None:
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", max_page_bytes=4096, max_rows_per_file=3000,
                           allow_plugin_encodings=True, **kw)


def assert_names_plugin(message: str) -> None:
    assert "'delta'" in message and "lance-fw-delta" in message, message


# --- 1. the default write is refused before anything is written ---------------------------------

def test_default_write_with_plugin_hint_is_refused_before_anything_is_written(uri, delta):
    with pytest.raises(PluginEncodingNotAllowedError) as info:
        lance_fw.write_dataset(hinted(), uri, data_storage_version="2.0")
    message = str(info.value)
    assert_names_plugin(message)
    assert "'id'" in message and OPTION in message and "pylance" in message
    assert isinstance(info.value, UnsupportedFeatureError)
    assert data_files(uri) == set()
    for open_ in (lance.dataset, lance_fw.dataset):
        with pytest.raises(ValueError):
            open_(uri)


def test_write_fragments_default_is_refused(uri, delta):
    with pytest.raises(PluginEncodingNotAllowedError, match=OPTION):
        lance_fw.write_fragments(hinted(), uri, mode="overwrite", data_storage_version="2.0")
    assert data_files(uri) == set()


def test_hint_without_the_plugin_writes_builtin_pages_pylance_reads(uri, delta, plugins_disabled):
    """No plugin claims the column: the built-in encoder writes it, nothing to guard."""
    plugins_disabled("delta")
    table = hinted()
    lance_fw.write_dataset(table, uri, data_storage_version="2.0")
    assert latest_manifest(uri).reader_feature_flags & flags.PLUGIN_ENCODINGS == 0
    assert_tables_equal(table, lance.dataset(uri).to_table())


# --- 2. allowed: the manifest says so, pylance refuses at open, lance_fw reads ------------------

def test_allowed_write_is_refused_by_pylance_at_open_and_read_by_lance_fw(uri, delta):
    table = hinted()
    write_allowed(uri, table)
    manifest = latest_manifest(uri)
    assert len(manifest.fragments) == 2
    assert manifest.reader_feature_flags & flags.PLUGIN_ENCODINGS
    assert manifest.writer_feature_flags & flags.PLUGIN_ENCODINGS
    recorded = json.loads(manifest.config[flags.PLUGIN_ENCODINGS_KEY])
    assert recorded == {"delta": "lance-fw-delta 0.1.0"}
    with pytest.raises(ValueError, match=PYLANCE_REFUSAL):
        lance.dataset(uri)
    ds = lance_fw.dataset(uri)
    assert_tables_equal(table, ds.to_table())
    assert ds.take([0, 4095, 4096, ROWS - 1]).to_pylist() == table.take([0, 4095, 4096, ROWS - 1]).to_pylist()


def test_without_the_flag_pylance_would_fail_on_every_column(uri, delta):
    """What the flag protects against (the behaviour before the guard): clear the bit and the
    dataset opens in pylance, counts rows, and fails even on the column the plugin did not encode."""
    table = hinted()
    write_allowed(uri, table)
    storage = resolve_storage(uri)
    entry = list_versions(storage, uri)[-1]
    manifest, index = read_manifest(storage, entry.path)
    manifest.reader_feature_flags &= ~flags.PLUGIN_ENCODINGS
    manifest.writer_feature_flags &= ~flags.PLUGIN_ENCODINGS
    txn = read_transaction(storage, uri, entry.path)
    storage.write_bytes(entry.path, encode_manifest(manifest, txn, index))
    ds = lance.dataset(uri)
    assert ds.count_rows() == ROWS
    for column in ("id", "v"):
        with pytest.raises(ValueError, match=PYLANCE_COLUMN_FAILURE):
            ds.to_table(columns=[column])


def test_lance_fw_without_the_plugin_names_it_at_open(uri, delta, plugins_disabled):
    write_allowed(uri, hinted())
    other = uri + "_plain"
    lance_fw.write_dataset(plain(), other, data_storage_version="2.0")
    plugins_disabled("delta")
    with pytest.raises(UnsupportedFeatureError) as info:
        lance_fw.dataset(uri)
    assert_names_plugin(str(info.value))
    assert "install" in str(info.value)
    assert lance_fw.dataset(other).count_rows() == ROWS  # datasets without plugin pages still open
    with pytest.raises(UnsupportedFeatureError, match="lance-fw-delta"):  # nor may it commit there
        lance_fw.write_dataset(plain(10), uri, mode="overwrite")


def test_plugin_back_reads_again(uri, delta, plugins_disabled):
    table = hinted()
    write_allowed(uri, table)
    plugins_disabled("some_other_plugin")
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


# --- 3. appends and overwrites -------------------------------------------------------------------

def test_append_needs_the_option_again_and_keeps_the_flag(uri, delta):
    first = hinted()
    write_allowed(uri, first)
    files = data_files(uri)
    with pytest.raises(PluginEncodingNotAllowedError, match=OPTION):
        lance_fw.write_dataset(hinted(100, start=ROWS), uri, mode="append")
    assert data_files(uri) == files and lance_fw.dataset(uri).version == 1
    more = hinted(ROWS, start=ROWS)
    lance_fw.write_dataset(more, uri, mode="append", max_page_bytes=4096, allow_plugin_encodings=True)
    manifest = latest_manifest(uri)
    assert manifest.version == 2
    assert manifest.reader_feature_flags & flags.PLUGIN_ENCODINGS
    assert json.loads(manifest.config[flags.PLUGIN_ENCODINGS_KEY]) == {"delta": "lance-fw-delta 0.1.0"}
    with pytest.raises(ValueError, match=PYLANCE_REFUSAL):
        lance.dataset(uri)
    assert_tables_equal(pa.concat_tables([first, more]), lance_fw.dataset(uri).to_table())


def test_append_to_a_pylance_dataset_whose_schema_has_the_hint_is_refused(uri, delta):
    """pylance keeps the field metadata but ignores the hint: its dataset must stay readable."""
    table = hinted()
    lance.write_dataset(table, uri, data_storage_version="2.0")
    with pytest.raises(PluginEncodingNotAllowedError):
        lance_fw.write_dataset(hinted(10, start=ROWS), uri, mode="append")
    assert lance.dataset(uri).count_rows() == ROWS


def test_overwrite_without_plugin_pages_clears_the_flag(uri, delta):
    write_allowed(uri, hinted())
    table = plain()
    lance_fw.write_dataset(table, uri, mode="overwrite")
    manifest = latest_manifest(uri)
    assert manifest.reader_feature_flags & flags.PLUGIN_ENCODINGS == 0
    assert flags.PLUGIN_ENCODINGS_KEY not in manifest.config
    assert_tables_equal(table, lance.dataset(uri).to_table())


def test_delete_and_compaction_keep_the_flag(uri, delta):
    table = hinted()
    write_allowed(uri, table)
    ds = lance_fw.dataset(uri)
    ds.delete("v < 0.1")
    ds.optimize.compact_files(target_rows_per_fragment=ROWS)
    manifest = latest_manifest(uri)
    assert manifest.reader_feature_flags & flags.PLUGIN_ENCODINGS
    with pytest.raises(ValueError, match=PYLANCE_REFUSAL):
        lance.dataset(uri)
    expected = table.filter(pa.compute.greater_equal(table["v"], 0.1))
    assert_tables_equal(expected, lance_fw.dataset(uri).to_table())


def test_distributed_write_and_commit_records_the_plugin(uri, delta):
    table = hinted()
    fragments = lance_fw.write_fragments(table, uri, mode="overwrite", data_storage_version="2.0",
                                         allow_plugin_encodings=True)
    op = lance_fw.LanceOperation.Overwrite(table.schema, fragments)
    lance_fw.LanceDataset.commit(uri, op)
    assert latest_manifest(uri).reader_feature_flags & flags.PLUGIN_ENCODINGS
    with pytest.raises(ValueError, match=PYLANCE_REFUSAL):
        lance.dataset(uri)
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


def test_distributed_append_to_a_pylance_dataset_records_the_plugin(uri, delta):
    """Fragments written elsewhere then committed: the commit records what their fields' encoders are."""
    table = hinted()
    lance.write_dataset(table, uri, data_storage_version="2.0")
    more = hinted(ROWS, start=ROWS)
    with pytest.raises(PluginEncodingNotAllowedError):
        lance_fw.write_fragments(more, uri)
    fragments = lance_fw.write_fragments(more, uri, allow_plugin_encodings=True)
    lance_fw.LanceDataset.commit(uri, lance_fw.LanceOperation.Append(fragments), read_version=1)
    manifest = latest_manifest(uri)
    assert json.loads(manifest.config[flags.PLUGIN_ENCODINGS_KEY]) == {"delta": "lance-fw-delta 0.1.0"}
    with pytest.raises(ValueError, match=PYLANCE_REFUSAL):
        lance.dataset(uri)
    assert_tables_equal(pa.concat_tables([table, more]), lance_fw.dataset(uri).to_table())


# --- 4. what an encoder declares -----------------------------------------------------------------

def test_builtin_encoders_declare_pylance_readable(uri):
    from lance_fw.file.encoding import ColumnSpec, is_pylance_readable, select_encoder
    from lance_fw.schema import LanceSchema

    field = LanceSchema.from_arrow(pa.schema([pa.field("a", pa.int64())])).fields[0]
    for version in ((2, 0), (2, 1), (2, 2)):
        encoder = select_encoder(ColumnSpec(field, pa.int64(), {}, version), {})
        assert is_pylance_readable(encoder), (version, encoder)


class _ClaimingEncoder:
    """Declares pylance_readable but writes the delta plugin's pages: the writer must not trust it."""

    pylance_readable = True

    def __init__(self, arrow_type):
        from lance_fw_delta import DeltaBitpackedEncoder

        self.inner = DeltaBitpackedEncoder(arrow_type)

    def encode(self, array):
        return self.inner.encode(array)


class _ClaimingPlugin:
    from lance_fw.hookspecs import hookimpl

    @hookimpl(tryfirst=True)
    def lance_select_encoder(self, column, options):
        if "claim" in column.metadata and column.role == "leaf":
            return _ClaimingEncoder(column.arrow_type)
        return None


def test_encoder_claiming_pylance_readable_with_foreign_pages_fails_the_write(uri, delta):
    register(_ClaimingPlugin(), name="claimer")
    try:
        schema = pa.schema([pa.field("a", pa.int64(), metadata={"claim": "1"})])
        with pytest.raises(EncoderContractError, match="pylance_readable"):
            lance_fw.write_dataset(pa.table({"a": np.arange(10)}, schema=schema), uri, data_storage_version="2.0")
        assert data_files(uri) == set()
    finally:
        unregister("claimer")


# --- 5. rewrites of existing rows ----------------------------------------------------------------

def _upsert(uri: str, rows: pa.Table) -> None:
    ds = lance_fw.dataset(uri)
    ds.merge_insert("s").when_matched_update_all().when_not_matched_insert_all().execute(rows)


def test_merge_insert_into_a_recorded_dataset_uses_the_recorded_plugin(uri, delta):
    """merge_insert has no write options: it may use what the dataset already records."""
    table = hinted()
    write_allowed(uri, table)
    new_rows = hinted(10, start=ROWS - 5)  # 5 updates, 5 inserts
    _upsert(uri, new_rows)
    manifest = latest_manifest(uri)
    assert json.loads(manifest.config[flags.PLUGIN_ENCODINGS_KEY]) == {"delta": "lance-fw-delta 0.1.0"}
    assert manifest.reader_feature_flags & flags.PLUGIN_ENCODINGS
    back = lance_fw.dataset(uri).to_table().sort_by("s")
    expected = pa.concat_tables([table.slice(0, ROWS - 5), new_rows]).sort_by("s")
    assert_tables_equal(expected, back)


def test_merge_insert_into_a_pylance_dataset_with_the_hint_is_refused(uri, delta):
    lance.write_dataset(hinted(), uri, data_storage_version="2.0")
    with pytest.raises(PluginEncodingNotAllowedError, match="LANCE_FW_DISABLE_PLUGINS=delta"):
        _upsert(uri, hinted(10, start=ROWS - 5))
    assert lance.dataset(uri).version == 1


class _Rewrapper:
    """A plugin returning another package's encoder class: the record must name this plugin."""

    from lance_fw.hookspecs import hookimpl

    @hookimpl(tryfirst=True)
    def lance_select_encoder(self, column):
        if "rewrap" in column.metadata and column.role == "leaf":
            from lance_fw_delta import DeltaBitpackedEncoder

            return DeltaBitpackedEncoder(column.arrow_type)
        return None


def test_record_names_the_plugin_that_selected_the_encoder(uri, delta):
    register(_Rewrapper(), name="rewrapper")
    try:
        schema = pa.schema([pa.field("a", pa.int64(), metadata={"rewrap": "1"})])
        table = pa.table({"a": np.arange(ROWS, dtype=np.int64)}, schema=schema)
        with pytest.raises(PluginEncodingNotAllowedError, match="plugin 'rewrapper'"):
            lance_fw.write_dataset(table, uri, data_storage_version="2.0")
        lance_fw.write_dataset(table, uri, data_storage_version="2.0", allow_plugin_encodings=True)
        assert json.loads(latest_manifest(uri).config[flags.PLUGIN_ENCODINGS_KEY]) == {"rewrapper": ""}
        assert_tables_equal(table, lance_fw.dataset(uri).to_table())
    finally:
        unregister("rewrapper")
    with pytest.raises(UnsupportedFeatureError, match="'rewrapper' \\(distribution unknown\\)"):
        lance_fw.dataset(uri)


def test_option_must_be_a_bool(uri, delta):
    from lance_fw.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=OPTION):
        lance_fw.write_dataset(hinted(), uri, data_storage_version="2.0", allow_plugin_encodings="false")
    assert data_files(uri) == set()
