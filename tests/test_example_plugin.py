"""The example third-party plugin in examples/lance_fw_delta: discovery, round trips, absence.

The plugin must be installed (``make setup`` runs ``pip install -e examples/lance_fw_delta``).
Nothing here is skipped: without the plugin every test fails and says how to install it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw.errors import CorruptFileError, UnsupportedEncodingError, UnsupportedFeatureError
from lance_fw.file.encoding import PageInput
from lance_fw.file.reader import LanceFileReader
from lance_fw.io.storage import join_uri, resolve_storage
from lance_fw.plugin_manager import get_plugin_manager, register, unregister
from lance_fw.table import flags
from lance_fw.table.manifest import encode_manifest, list_versions, read_manifest, read_transaction

try:
    import lance_fw_delta
    from lance_fw_delta import codec
except ImportError as exc:  # reported by the `delta` fixture, test by test
    lance_fw_delta = codec = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DELTA_URL = "/lance_fw_delta.DeltaBitpacked"
BUILTIN_URL = "/lance.encodings.ArrayEncoding"
HINT = {"lance-encoding:delta": "true"}
INSTALL = "pip install -e examples/lance_fw_delta  (make setup does this)"


@pytest.fixture
def delta():
    """The plugin module, registered under the name ``delta``; fails loudly when it is missing."""
    if lance_fw_delta is None:
        pytest.fail(f"the example plugin lance_fw_delta is not importable ({_IMPORT_ERROR}); "
                    f"install it with: {INSTALL}", pytrace=False)
    if get_plugin_manager().get_plugin("delta") is None:
        pytest.fail("lance_fw_delta is importable but lance_fw has no plugin named 'delta': its "
                    f"`lance_fw` entry point is not installed; reinstall with: {INSTALL}", pytrace=False)
    return lance_fw_delta


@pytest.fixture
def without_delta(delta):
    """Unregister the plugin for one test, then register it again whatever happens."""
    unregister("delta")
    try:
        yield
    finally:
        if get_plugin_manager().get_plugin("delta") is None:
            register(delta, name="delta")


# --- helpers -------------------------------------------------------------------------------------

def page_encodings(uri: str) -> dict[str, list[str]]:
    """Type URL of every page of every data file of a dataset, by top-level column name."""
    storage = resolve_storage(uri)
    out: dict[str, list[str]] = {}
    for name in sorted(storage.list_dir(join_uri(uri, "data"))):
        reader = LanceFileReader(storage, join_uri(uri, "data", name))
        try:
            for field in reader.schema.walk():
                column = reader.tail.columns[reader.column_of_field[field.id]]
                for page in column.pages:
                    enc = any_pb2.Any()
                    enc.ParseFromString(page.encoding.direct.encoding)
                    out.setdefault(field.name, []).append(enc.type_url)
        finally:
            reader.close()
    return out


def column_bytes(uri: str, column: str) -> int:
    """Bytes of page buffers a top-level column takes over all data files."""
    storage = resolve_storage(uri)
    total = 0
    for name in storage.list_dir(join_uri(uri, "data")):
        reader = LanceFileReader(storage, join_uri(uri, "data", name))
        try:
            field = next(f for f in reader.schema.fields if f.name == column)
            pages = reader.tail.columns[reader.column_of_field[field.id]].pages
            total += sum(sum(p.buffer_sizes) for p in pages)
        finally:
            reader.close()
    return total


def assert_same(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema.names == expected.schema.names
    assert actual.num_rows == expected.num_rows
    for name in expected.schema.names:
        e, a = expected.column(name).combine_chunks(), actual.column(name).combine_chunks()
        assert a.type == e.type, f"{name}: {a.type} != {e.type}"
        assert a.equals(e), f"column {name!r} differs:\n{e.to_pylist()[:20]}\n{a.to_pylist()[:20]}"


def sorted_table(n: int = 20_000, seed: int = 7) -> pa.Table:
    """Sorted int64 ids with nulls (a leading one, scattered ones, a run), plus plain copies."""
    rng = np.random.default_rng(seed)
    ids = 10**12 + np.cumsum(rng.integers(0, 50, n))
    mask = rng.random(n) < 0.05
    mask[0] = True
    mask[1000:1100] = True
    schema = pa.schema([
        pa.field("id", pa.int64(), metadata=HINT),
        pa.field("plain", pa.int64()),
        pa.field("name", pa.string()),
    ])
    return pa.table({
        "id": pa.array(ids, mask=mask),
        "plain": pa.array(ids, mask=mask),
        "name": pa.array([f"row{i}" for i in range(n)]),
    }, schema=schema)


# --- (a) discovery -------------------------------------------------------------------------------

def test_plugin_is_listed_with_its_hooks(delta):
    listed = {p["name"]: p for p in lance_fw.plugins()}
    assert "delta" in listed, f"plugins: {sorted(listed)}"
    assert listed["delta"]["hooks"] == ["lance_page_decoders", "lance_select_encoder"]
    # A fresh interpreter finds it through the `lance_fw` entry-point group alone, with its distribution.
    script = "import json, lance_fw; print(json.dumps(lance_fw.plugins()))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    fresh = {p["name"]: p for p in json.loads(done.stdout)}
    assert fresh["delta"] == {
        "name": "delta",
        "distribution": f"lance-fw-delta {delta.__version__}",
        "hooks": ["lance_page_decoders", "lance_select_encoder"],
        "status": "loaded", "overrides": {}, "error": None,
    }
    assert fresh["encodings_v2_0"]["distribution"].startswith("lance_fw ")


def test_trace_shows_the_plugin_taking_the_column(delta, tmp_path):
    script = textwrap.dedent(f"""
        import pyarrow as pa, lance_fw
        schema = pa.schema([pa.field("id", pa.int64(), metadata={HINT!r})])
        lance_fw.write_dataset(pa.table({{"id": [1, 2, 3]}}, schema=schema), {str(tmp_path / "ds")!r},
                               data_storage_version="2.0", allow_plugin_encodings=True)
    """)
    env = dict(os.environ, LANCE_FW_TRACE="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert "lance_select_encoder [hook]" in done.stderr
    assert "finish lance_select_encoder --> DeltaBitpackedEncoder(int64)" in done.stderr, done.stderr[-2000:]


# --- (b) round trips through a dataset, (d) other columns keep the built-in encoding --------------

def test_sorted_ids_round_trip_through_delta_pages(delta, tmp_path):
    table = sorted_table()
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", max_page_bytes=4096, max_rows_per_file=6000,
                           allow_plugin_encodings=True)

    ds = lance_fw.dataset(uri)
    assert len(ds.get_fragments()) == 4
    assert_same(table, ds.to_table())
    assert ds.schema.field("id").metadata == {b"lance-encoding:delta": b"true"}
    # row ranges that cross page and fragment boundaries
    assert_same(table.slice(5990, 30).select(["id"]), ds.to_table(columns=["id"], offset=5990, limit=30))

    pages = page_encodings(uri)
    assert len(pages["id"]) > 8, "expected several pages per file"
    assert set(pages["id"]) == {DELTA_URL}
    assert set(pages["plain"]) == {BUILTIN_URL}  # (d) no metadata: the built-in encoder
    assert set(pages["name"]) == {BUILTIN_URL}
    # deltas < 50 need 6 bits instead of 64
    assert column_bytes(uri, "id") * 4 < column_bytes(uri, "plain")


def test_appends_keep_the_hint_from_the_dataset_schema(delta, tmp_path):
    table = sorted_table(n=2000)
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", allow_plugin_encodings=True)
    # the appended batch carries no metadata: the dataset schema's field metadata steers the encoder
    more = sorted_table(n=500, seed=8)
    more = more.cast(pa.schema([f.remove_metadata() for f in more.schema]))
    lance_fw.write_dataset(more, uri, mode="append", allow_plugin_encodings=True)
    assert_same(pa.concat_tables([table, more.cast(table.schema)]), lance_fw.dataset(uri).to_table())
    assert set(page_encodings(uri)["id"]) == {DELTA_URL}


@pytest.mark.parametrize("arrow_type", [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    pa.date32(), pa.timestamp("us"),
], ids=str)
@pytest.mark.parametrize("order", ["sorted", "random"])
def test_integer_types_round_trip(delta, tmp_path, arrow_type, order):
    rng = np.random.default_rng(3)
    storage = pa.int32() if pa.types.is_date32(arrow_type) else \
        pa.int64() if pa.types.is_timestamp(arrow_type) else arrow_type
    info = np.iinfo(storage.to_pandas_dtype())
    n = 3000
    values = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=info.dtype)
    if order == "sorted":
        values.sort()
    array = pa.array(values, type=storage, mask=rng.random(n) < 0.1).view(arrow_type)
    table = pa.table({"v": array}, schema=pa.schema([pa.field("v", arrow_type, metadata=HINT)]))
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", max_page_bytes=1024, max_rows_per_file=2000,
                           allow_plugin_encodings=True)
    assert_same(table, lance_fw.dataset(uri).to_table())
    assert set(page_encodings(uri)["v"]) == {DELTA_URL}


def test_hint_is_ignored_where_the_encoding_does_not_apply(delta, tmp_path):
    schema = pa.schema([
        pa.field("s", pa.string(), metadata=HINT),                          # not an integer
        pa.field("f", pa.float64(), metadata=HINT),                         # not an integer
        pa.field("off", pa.int64(), metadata={"lance-encoding:delta": "false"}),
        pa.field("l", pa.list_(pa.int64()), metadata=HINT),                 # a list parent column
    ])
    table = pa.table({"s": ["a", None, "c"], "f": [1.5, None, 3.0], "off": [1, 2, 3],
                      "l": [[1, 2], None, [3]]}, schema=schema)
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", allow_plugin_encodings=True)
    assert_same(table, lance_fw.dataset(uri).to_table())
    pages = page_encodings(uri)
    assert {url for urls in pages.values() for url in urls} == {BUILTIN_URL}, pages


def test_struct_child_with_the_hint(delta, tmp_path):
    child = pa.field("ts", pa.int64(), metadata=HINT)
    values = pa.array(np.arange(0, 5000, 5), pa.int64())
    struct = pa.StructArray.from_arrays([values], fields=[child])
    table = pa.table({"s": struct})
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", allow_plugin_encodings=True)
    assert_same(table, lance_fw.dataset(uri).to_table())
    pages = page_encodings(uri)
    assert set(pages["ts"]) == {DELTA_URL}
    assert set(pages["s"]) == {BUILTIN_URL}


# --- (c) a reader without the plugin ------------------------------------------------------------

def _forget_plugin_record(uri: str) -> None:
    """Rewrite the latest manifest without the plugin record and its feature flag."""
    storage = resolve_storage(uri)
    entry = list_versions(storage, uri)[-1]
    manifest, index = read_manifest(storage, entry.path)
    del manifest.config[flags.PLUGIN_ENCODINGS_KEY]
    manifest.reader_feature_flags &= ~flags.PLUGIN_ENCODINGS
    manifest.writer_feature_flags &= ~flags.PLUGIN_ENCODINGS
    storage.write_bytes(entry.path, encode_manifest(manifest, read_transaction(storage, uri, entry.path), index))


def test_reader_without_the_plugin_names_the_encoding(delta, tmp_path):
    table = sorted_table(n=3000)
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", max_page_bytes=4096, max_rows_per_file=1000,
                           allow_plugin_encodings=True)

    unregister("delta")
    try:
        assert "delta" not in {p["name"] for p in lance_fw.plugins()}
        with pytest.raises(UnsupportedFeatureError, match=r"'delta' \(lance-fw-delta 0.1.0\)"):
            lance_fw.dataset(uri)  # the manifest records the plugin: refused at open, naming it
        _forget_plugin_record(uri)  # as a dataset written before the manifest recorded plugins
        with pytest.raises(UnsupportedEncodingError, match=DELTA_URL) as info:
            lance_fw.dataset(uri).to_table()
        assert "'id'" in str(info.value)  # and the column
        # columns that do not use the encoding stay readable
        assert_same(table.select(["plain", "name"]), lance_fw.dataset(uri).to_table(columns=["plain", "name"]))
    finally:
        register(delta, name="delta")
    assert_same(table, lance_fw.dataset(uri).to_table())


def test_writer_without_the_plugin_ignores_the_hint(without_delta, tmp_path):
    table = sorted_table(n=2000)
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(table, uri, data_storage_version="2.0", allow_plugin_encodings=True)
    assert set(page_encodings(uri)["id"]) == {BUILTIN_URL}
    assert_same(table, lance_fw.dataset(uri).to_table())


# --- the codec on its own -----------------------------------------------------------------------

@pytest.mark.parametrize("width", range(65))
def test_bit_packing_round_trips_every_width(delta, width):
    rng = np.random.default_rng(width)
    for n in (0, 1, 2, 63, 64, 65, 1000):
        values = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        values &= np.uint64((1 << width) - 1)
        packed = codec.pack(values, width)
        assert len(packed) == (n * width + 7) // 8
        assert np.array_equal(codec.unpack(packed, n, width), values)


@pytest.mark.parametrize("values", [
    [2**63 - 1, -2**63, 0, None, -1],  # deltas that overflow int64: arithmetic is modulo 2**64
    [None, None, None],
    [None, 5, None, None, 5, 7],
    [42],
])
def test_extreme_pages(delta, values):
    array = pa.array(values, pa.int64())
    page = codec.DeltaBitpackedEncoder(pa.int64()).encode(array)
    buffers = [memoryview(bytes(b)) for b in page.buffers]
    assert codec.decode(page.encoding, PageInput(buffers, len(array), pa.int64(), "page X")).equals(array)


def test_corrupt_pages_raise_corrupt_file_error(delta):
    array = pa.array(np.r_[np.arange(0, 1000, 3), [None]], pa.int64())
    page = codec.DeltaBitpackedEncoder(pa.int64()).encode(array)
    packed, validity = (memoryview(bytes(b)) for b in page.buffers)
    header = page.encoding.value

    def decode(buffers, value=header, n=len(array), arrow_type=pa.int64()):
        return codec.decode(any_pb2.Any(type_url=DELTA_URL, value=value),
                            PageInput(buffers, n, arrow_type, "file F: column 0 (field 'id'), page 3"))

    cases = [
        lambda: decode([packed[:10], validity]),   # short residuals
        lambda: decode([packed, validity[:1]]),    # short validity
        lambda: decode([packed]),                  # missing validity
        lambda: decode([packed, validity], value=header[:20]),
        lambda: decode([packed, validity], value=b"XXXX" + header[4:]),
        lambda: decode([packed, validity], n=len(array) + 1),
        lambda: decode([packed, validity], arrow_type=pa.int32()),
    ]
    for case in cases:
        with pytest.raises(CorruptFileError, match="page 3"):
            case()
