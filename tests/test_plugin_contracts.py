"""Plugins are trusted but verified: what an encoder or decoder hands back is checked, and the
storage contracts the kernel relies on (atomic outputs) hold for the built-in local storage.

Sections 1-2: hook implementations in this module, registered at run time with
``lance_fw.plugin_manager.register`` and wrapping the real example plugin ``lance_fw_delta``, so only
the one lie each test is about differs from a working plugin. Section 4 installs REAL plugin
distributions (module + dist-info on ``sys.path``, ``test_plugin_kernel``'s ``kernel`` fixture) and
drives every read path (scan, take, ``_take_rows``, filtered scans, DuckDB, the Spark reader)
through their lying decoders: each must raise ``CorruptFileError`` naming plugin, file, column, page.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError
from lance_fw.hookspecs import hookimpl
from lance_fw.plugin_manager import register, unregister
from test_plugin_kernel import kernel  # noqa: F401 - installs plugin distributions on sys.path

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
        lance_fw.write_dataset(table(start=1000), uri, mode="append", allow_plugin_encodings=True)
    message = str(info.value)
    assert says in message and "'liar'" in message and "'a'" in message and "LyingEncoder" in message
    assert data_files(uri) == files  # the failed write's data files are gone
    for ds in (lance.dataset(uri), lance_fw.dataset(uri)):
        assert ds.version == 1
        assert ds.to_table().equals(before)


def test_lying_encoder_on_create_leaves_no_dataset(uri, liar):
    liar.lie = "short"
    with pytest.raises(LanceError, match="999 rows"):
        lance_fw.write_dataset(table(), uri, data_storage_version="2.0", allow_plugin_encodings=True)
    with pytest.raises(ValueError):
        lance.dataset(uri)


def test_honest_wrapped_encoder_still_writes(uri, liar):
    liar.lie = "none"  # claims the column, encodes it exactly as lance_fw_delta does
    data = table(n=5000)
    lance_fw.write_dataset(data, uri, data_storage_version="2.0", max_page_bytes=4096, allow_plugin_encodings=True)
    assert lance_fw.dataset(uri).to_table().equals(data)


# --- 2. decoder output is checked on take (decode_rows) as on whole pages ------------------------

class BadRowsDecoder:
    """The example plugin's page decoder whose ``decode_rows`` tells one ``lie``."""

    def __init__(self, lie: str):
        self.lie = lie

    def __call__(self, encoding, page):
        return self._lie(lance_fw_delta.decode(encoding, page))

    def decode_rows(self, encoding, page, rows):
        return self._lie(lance_fw_delta.decode(encoding, page).take(pa.array(rows)))

    def _lie(self, array: pa.Array) -> pa.Array:
        if self.lie == "short":
            return array.slice(1)
        if self.lie == "int32":
            return array.cast(pa.int32())
        return array


class BadDecoderPlugin:
    def __init__(self, lie: str):
        self.decoder = BadRowsDecoder(lie)

    @hookimpl
    def lance_page_decoders(self):
        return {lance_fw_delta.TYPE_URL: self.decoder}


@pytest.mark.parametrize("lie, says", [("short", "rows"), ("int32", "int32")])
def test_lying_decoder_on_take_raises_corrupt_file(uri, lie, says):
    from lance_fw.errors import CorruptFileError

    schema = pa.schema([pa.field("id", pa.int64(), metadata={lance_fw_delta.METADATA_KEY: "true"})])
    data = pa.table({"id": np.arange(20_000, dtype=np.int64)}, schema=schema)
    lance_fw.write_dataset(data, uri, data_storage_version="2.0", allow_plugin_encodings=True)
    ds = lance_fw.dataset(uri)
    assert ds.take([3, 7, 15_000]).column("id").to_pylist() == [3, 7, 15_000]
    register(BadDecoderPlugin(lie), name="bad_decoder")
    try:
        for read in (lambda d: d.take([3, 7, 15_000]), lambda d: d.to_table()):
            with pytest.raises(CorruptFileError) as info:
                read(lance_fw.dataset(uri))
            assert says in str(info.value) and "'id'" in str(info.value) and ".lance" in str(info.value)
    finally:
        unregister("bad_decoder")


def test_kind_decoder_returning_int32_for_int64_is_not_cast_v2_1(uri):
    """2.1 pages are decoded by kind decoders a plugin may replace; a wrong type was cast back."""
    from lance_fw.errors import CorruptFileError
    from lance_fw_plugins import encodings_v2_1

    data = pa.table({"id": np.arange(20_000, dtype=np.int64)})
    lance_fw.write_dataset(data, uri, data_storage_version="2.1")
    honest = encodings_v2_1.KIND_DECODERS["mini_block_layout"]

    class Int32Plugin:
        @hookimpl
        def lance_kind_decoders(self):
            return {(encodings_v2_1.FAMILY, "mini_block_layout"):
                    lambda msg, page, n, t: honest(msg, page, n, t).cast(pa.int32())}

    register(Int32Plugin(), name="int32_kinds")
    try:
        for read in (lambda d: d.take([3, 7, 15_000]), lambda d: d.to_table()):
            with pytest.raises(CorruptFileError, match=r"'id'.*int32 array for a int64 column"):
                read(lance_fw.dataset(uri))
    finally:
        unregister("int32_kinds")
    assert lance_fw.dataset(uri).take([3, 15_000]).column("id").to_pylist() == [3, 15_000]


# --- 3. local open_output is atomic ---------------------------------------------------------------

def test_local_output_appears_only_when_closed(tmp_path):
    from lance_fw.io.storage import resolve_storage

    storage, path = resolve_storage(str(tmp_path)), str(tmp_path / "sub" / "f.bin")
    out = storage.open_output(path)
    out.write(b"x" * 100_000)
    out.flush()
    assert not storage.exists(path) and "f.bin" not in storage.list_dir(str(tmp_path / "sub"))
    out.close()
    assert storage.read_bytes(path) == b"x" * 100_000
    assert os.listdir(tmp_path / "sub") == ["f.bin"]  # no temp file left
    with storage.open_output(path) as out:  # replacing: readers see the old file until close
        out.write(b"new")
        assert storage.read_bytes(path) == b"x" * 100_000
    assert storage.read_bytes(path) == b"new"


def test_local_output_aborted_leaves_nothing(tmp_path):
    from lance_fw.io.storage import resolve_storage

    storage, path = resolve_storage(str(tmp_path)), str(tmp_path / "f.bin")
    out = storage.open_output(path)
    out.write(b"partial")
    out.abort()
    assert os.listdir(tmp_path) == []
    with pytest.raises(RuntimeError):
        with storage.open_output(path) as out:
            out.write(b"partial")
            raise RuntimeError("the writer failed")
    assert os.listdir(tmp_path) == []


def test_file_writer_abort_leaves_no_file(tmp_path):
    from lance_fw.file.writer import LanceFileWriter
    from lance_fw.io.storage import resolve_storage
    from lance_fw.schema import LanceSchema

    data = table(n=5000)
    path = str(tmp_path / "x.lance")
    writer = LanceFileWriter(resolve_storage(path), path, LanceSchema.from_arrow(data.schema), (2, 0),
                             {"max_page_bytes": 1024})
    writer.write_batch(data.to_batches()[0])
    assert not os.path.exists(path)  # pages were written, the file is not visible
    writer.abort()
    assert os.listdir(tmp_path) == []


# --- 4. every decode path checks what a REAL plugin distribution's decoder returns ----------------
#
# ``liar`` is installed as a distribution (module + dist-info on sys.path, ``test_plugin_kernel``'s
# ``kernel`` fixture): its encoder stores each page as Arrow IPC (honest), its decoder tells the lie
# set in its module attribute ``LIE``. ``ROWS`` says whether the decoder object has ``decode_rows``.

LIAR = """
import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw.file.encoding import EncodedPage

TYPE_URL = "/lfw_test_liar.Ipc"
HINT = "test-liar"
LIE = None
ROWS = True


class Encoder:
    def encode(self, array):
        sink = pa.BufferOutputStream()
        batch = pa.record_batch([array], names=["v"])
        with pa.ipc.new_stream(sink, batch.schema) as out:
            out.write_batch(batch)
        return EncodedPage([sink.getvalue().to_pybytes()], any_pb2.Any(type_url=TYPE_URL), len(array))


def lie(array):
    if LIE == "short":
        return array.slice(1)
    if LIE == "int32":
        return array.cast(pa.int32())
    if LIE == "bug":
        raise NotImplementedError("a decoder bug")
    if LIE == "pylist":
        return array.to_pylist()
    if LIE == "offsets" and len(array) > 1:  # a middle offset past the last one: not monotonic
        offsets = np.frombuffer(array.buffers()[1], np.int32)[array.offset:array.offset + len(array) + 1].copy()
        offsets[1] = offsets[-1] + 1
        return pa.Array.from_buffers(array.type, len(array), [None, pa.py_buffer(offsets), array.buffers()[2]])
    return array


def whole(encoding, page):
    table = pa.ipc.open_stream(pa.py_buffer(bytes(page.buffers[0]))).read_all()
    return table.column(0).combine_chunks()


def decode(encoding, page):
    return lie(whole(encoding, page))


class RowDecoder:
    def __call__(self, encoding, page):
        return decode(encoding, page)

    def decode_rows(self, encoding, page, rows):
        return lie(whole(encoding, page).take(pa.array(rows)))


@hookimpl
def lance_select_encoder(column, options):
    return Encoder() if column.metadata.get(HINT) == "yes" and len(column.path) <= 1 else None


@hookimpl
def lance_page_decoders():
    return {TYPE_URL: RowDecoder() if ROWS else decode}
"""

N_ROWS = 20_000  # several pages of max_page_bytes=16 KiB, two fragments


def _liar_table(start: int = 0, n: int = N_ROWS // 2) -> pa.Table:
    schema = pa.schema([pa.field("a", pa.int64(), metadata={"test-liar": "yes"}),
                        pa.field("s", pa.string(), metadata={"test-liar": "yes"}),
                        pa.field("k", pa.int64())])
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"a": ids, "s": [f"v{i}" for i in ids], "k": ids % 10}, schema=schema)


@pytest.fixture
def liar_dataset(kernel, tmp_path):  # noqa: F811 - the kernel fixture, imported
    """(uri, module of the installed liar plugin, expected table): written while the plugin is honest."""
    kernel.install("lfw-test-liar", LIAR, entry="liar", module="lfw_test_liar")
    kernel.reload()
    uri = str(tmp_path / "ds")
    options = {"max_page_bytes": 16 * 1024, "allow_plugin_encodings": True}  # not pylance-readable
    lance_fw.write_dataset(_liar_table(), uri, data_storage_version="2.1", **options)
    lance_fw.write_dataset(_liar_table(N_ROWS // 2), uri, mode="append", **options)
    expected = pa.concat_tables([_liar_table(), _liar_table(N_ROWS // 2)])
    assert lance_fw.dataset(uri).to_table().equals(expected)
    return uri, sys.modules["lfw_test_liar"], expected


def _duckdb_sum(uri: str, column: str):
    import lance_fw.duckdb as fw_duckdb

    return fw_duckdb.connect().sql(f"SELECT sum(length(CAST({column} AS VARCHAR))) FROM lance_scan('{uri}')").fetchall()


def _spark_read(uri: str, column: str) -> list:
    pytest.importorskip("pyspark")
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lance_fw.spark.reader import LanceReader

    spark_type = StringType() if column == "s" else LongType()
    reader = LanceReader({"path": uri}, StructType([StructField(column, spark_type)]))
    return [batch for part in reader.partitions() for batch in reader.read(part)]


#: every decode path the reader serves, by name: (dataset uri, column) -> rows read
READS = {
    "scan": lambda uri, c: lance_fw.dataset(uri).to_table(columns=[c]),
    "take": lambda uri, c: lance_fw.dataset(uri).take([3, 7, 15_000], columns=[c]),
    "take_whole_pages": lambda uri, c: lance_fw.dataset(uri).take(list(range(0, N_ROWS, 2)), columns=[c]),
    "_take_rows": lambda uri, c: lance_fw.dataset(uri)._take_rows([3, 7, (1 << 32) + 5], columns=[c]),
    "filtered_scan": lambda uri, c: lance_fw.dataset(uri).to_table(columns=[c], filter="k = 3"),
    "filtered_on_column": lambda uri, c: lance_fw.dataset(uri).to_table(
        columns=["k"], filter="a > 100" if c == "a" else "s > 'v5'"),
    "duckdb": _duckdb_sum,
    "spark": _spark_read,
}


@pytest.mark.parametrize("rows", [True, False], ids=["decode_rows", "whole_page"])
@pytest.mark.parametrize("lie, column, says", [("short", "a", "rows"), ("int32", "a", "int32"),
                                               ("offsets", "s", "not valid Arrow"),
                                               ("pylist", "a", "returned a list, not a pyarrow.Array")])
@pytest.mark.parametrize("read", list(READS))
def test_lying_decoder_of_an_installed_plugin_fails_every_read_path(liar_dataset, read, lie, column, says, rows):
    from lance_fw.errors import CorruptFileError

    uri, liar, _ = liar_dataset
    liar.LIE, liar.ROWS = lie, rows
    lance_fw.plugin_manager.registry.reset()  # ROWS changes what lance_page_decoders returns
    with pytest.raises(CorruptFileError) as info:
        READS[read](uri, column)
    message = str(info.value)
    assert says in message, message
    assert "'liar' (lfw-test-liar 0.1)" in message, message  # the plugin and its distribution
    assert ".lance" in message and f"(field {column!r})" in message and "page " in message, message


@pytest.mark.parametrize("read", ["scan", "take", "_take_rows"])
def test_decoder_bug_keeps_its_type_and_names_the_plugin(liar_dataset, read):
    """Not damage (so not CorruptFileError): the decoder's own exception, with a note naming the
    plugin, file, column and page (it used to name none of them)."""
    uri, liar, _ = liar_dataset
    liar.LIE = "bug"
    with pytest.raises(NotImplementedError, match="a decoder bug") as info:
        READS[read](uri, "a")
    note = " ".join(getattr(info.value, "__notes__", []))
    assert "'liar' (lfw-test-liar 0.1)" in note and ".lance" in note and "(field 'a')" in note, note


@pytest.mark.parametrize("read", list(READS))
def test_honest_installed_plugin_reads_on_every_path(liar_dataset, read):
    uri, liar, expected = liar_dataset
    liar.LIE = None
    out = READS[read](uri, "s")
    if read == "scan":
        assert out.column("s").equals(expected.column("s"))
    elif read == "take":
        assert out.column("s").to_pylist() == ["v3", "v7", "v15000"]
    elif read == "_take_rows":
        assert out.column("s").to_pylist() == ["v3", "v7", f"v{N_ROWS // 2 + 5}"]
    elif read == "duckdb":
        assert out == [(sum(len(f"v{i}") for i in range(N_ROWS)),)]
    elif read == "spark":
        assert pa.concat_arrays([b.column(0) for b in out]).to_pylist() == expected.column("s").to_pylist()


def test_kind_decoder_of_an_installed_plugin_is_named(kernel, tmp_path):  # noqa: F811
    """A distribution replacing a built-in 2.1 layout kind (declared override) whose kind decoder
    returns int32 for an int64 column: the error names it next to the family's built-in plugin."""
    kernel.install("lfw-test-kinds", """
        import pyarrow as pa
        from lance_fw_plugins import encodings_v2_1

        KIND = (encodings_v2_1.FAMILY, "mini_block_layout")
        LANCE_FW_OVERRIDES = {"lance_kind_decoders": [KIND]}

        def narrow(msg, page, n, arrow_type):
            return encodings_v2_1.KIND_DECODERS["mini_block_layout"](msg, page, n, arrow_type).cast(pa.int32())

        @hookimpl
        def lance_kind_decoders():
            return {KIND: narrow}
        """, entry="kinds", module="lfw_test_kinds")
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"id": np.arange(20_000, dtype=np.int64)}), uri, data_storage_version="2.1")
    kernel.reload()
    from lance_fw.errors import CorruptFileError

    for read in ("scan", "take", "duckdb"):
        with pytest.raises(CorruptFileError) as info:
            READS[read](uri, "id")
        message = str(info.value)
        assert "int32 array for a int64 column" in message and "(field 'id')" in message, message
        assert "'kinds' (lfw-test-kinds 0.1)" in message and "'encodings_v2_1'" in message, message


@pytest.mark.parametrize("version, kind", [("2.0", "binary"), ("2.1", "mini_block_layout")])
@pytest.mark.parametrize("lie, says", [("offsets", "not valid Arrow"), ("short", "rows")])
def test_replaced_kind_lying_fails_take_instead_of_returning_wrong_rows(kernel, tmp_path, version, kind,  # noqa: F811
                                                                        lie, says):
    """A distribution replacing a built-in kind (declared override) that lies. ``take`` decodes such
    pages whole and took rows from the result unchecked: with offsets out of order ``take([3, 7])``
    returned ``['', '']`` (2.0), with one row too few the rows after it (``['v4', 'v8']``)."""
    kernel.install("lfw-test-kinds2", f"""
        import numpy as np
        import pyarrow as pa
        from lance_fw_plugins import encodings_v2_0, encodings_v2_1

        FAMILY = {{"2.0": encodings_v2_0.decode.FAMILY, "2.1": encodings_v2_1.FAMILY}}[{version!r}]
        HONEST = {{"2.0": encodings_v2_0.decode.KIND_DECODERS, "2.1": encodings_v2_1.KIND_DECODERS}}[{version!r}]
        KIND = (FAMILY, {kind!r})
        LANCE_FW_OVERRIDES = {{"lance_kind_decoders": [KIND]}}

        def bad(msg, page, n, arrow_type):
            array = HONEST[{kind!r}](msg, page, n, arrow_type)
            if {lie!r} == "short":
                return array.slice(1)
            end = array.offset + len(array) + 1
            offsets = np.frombuffer(array.buffers()[1], np.int32)[array.offset:end].copy()
            offsets[1] = offsets[-1] + 100_000
            return pa.Array.from_buffers(array.type, len(array), [None, pa.py_buffer(offsets), array.buffers()[2]])

        @hookimpl
        def lance_kind_decoders():
            return {{KIND: bad}}
        """, entry="kinds2", module="lfw_test_kinds2")
    uri = str(tmp_path / "ds")
    lance_fw.write_dataset(pa.table({"s": [f"v{i}" for i in range(20_000)]}), uri, data_storage_version=version)
    kernel.reload()
    from lance_fw.errors import CorruptFileError

    for read in ("take", "_take_rows", "scan", "duckdb"):
        with pytest.raises(CorruptFileError) as info:
            READS[read](uri, "s")
        message = str(info.value)
        assert says in message and "(field 's')" in message, message
        assert "'kinds2' (lfw-test-kinds2 0.1)" in message, message
