"""FSST (spec §5.4): the vectorised decoder and encoder, and FSST pages both ways with pylance.

pylance writes FSST for string pages of >= 32 KiB whose longest value has >= 5 bytes (mini-block
and full-zip); lance_fw must read those and write the same kind of pages, which pylance must read
back equal. The unit properties check the numpy kernels against a byte-at-a-time reference
decoder on arbitrary bytes (0xFF included, so escapes and runs of 255 occur)."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2
from hypothesis import given
from hypothesis import strategies as st

import lance_fw
from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError
from lance_fw.file import fsst, fsst_encode
from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage
from tests.conftest import assert_tables_equal

lance = pytest.importorskip("lance")

VERSIONS = ["2.1", "2.2"]


def reference_decode(table: bytes, offsets, data: bytes) -> list[bytes]:
    """Byte-at-a-time FSST decoding, straight from the spec."""
    n = table[0]
    syms = [table[8 + 8 * i : 8 + 8 * i + table[8 + 8 * n + i]] for i in range(n)]
    out = []
    for a, b in zip(list(offsets[:-1]), list(offsets[1:])):
        s, i = bytearray(), a
        while i < b:
            if data[i] == fsst.ESCAPE:
                s.append(data[i + 1])
                i += 2
            else:
                s += syms[data[i]]
                i += 1
        out.append(bytes(s))
    return out


def _split(offsets: np.ndarray, data: np.ndarray) -> list[bytes]:
    raw = data.tobytes()
    return [raw[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def _arrays(strings: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(strings), np.uint8)


# bytes biased to a small alphabet (so symbols form) with 0xFF and high bytes mixed in
_BYTES = st.lists(st.one_of(st.sampled_from(b"ab \xff\xfe"), st.integers(0, 255)), max_size=600).map(bytes)


@given(st.lists(_BYTES, max_size=40), st.integers(0, 3))
def test_trained_round_trip(strings, prefix):
    """train + compress + decompress gives the strings back, the codes decode the same through
    the reference decoder, and offsets not starting at 0 are honoured."""
    strings = [b"x" * prefix, *strings]  # the first string is skipped below
    offsets, data = _arrays(strings)
    book = fsst_encode.train(offsets[1:], data)
    table = book.symbol_table()
    comp_offsets, codes = fsst_encode.compress(book, offsets[1:], data)
    assert reference_decode(table, comp_offsets, codes.tobytes()) == strings[1:]
    padded = np.concatenate([np.full(5, 7, np.uint8), codes])
    out_offsets, out = fsst.decompress(table, comp_offsets + 5, padded)
    assert _split(out_offsets, out) == strings[1:]


@given(st.lists(_BYTES, max_size=30), st.lists(st.binary(min_size=1, max_size=8), max_size=255))
def test_decoder_matches_reference(strings, symbols):
    """Any symbol set (escape-heavy streams, runs of 255 codes and literals) decodes as the spec."""
    table, offsets, data = fsst_encode.compress_simple(strings, symbols)
    out_offsets, out = fsst.decompress(table, offsets, data)
    assert _split(out_offsets, out) == reference_decode(table, offsets, data) == strings


@given(
    st.lists(_BYTES, min_size=1, max_size=12),
    st.lists(st.integers(0, 11), min_size=1, max_size=300),
    st.integers(0, 5),
)
def test_repeated_strings_compress_to_the_codes_of_each(distinct, picks, skip):
    """A page of repeated strings is tokenised once per distinct string: the same offsets and
    codes as tokenising every string (also for strings not starting at byte 0), and they decode
    to the strings."""
    strings = [distinct[i % len(distinct)] for i in picks]
    offsets, data = _arrays([b"x" * skip, *strings])
    offsets, book = offsets[1:], fsst_encode.train(offsets[1:], data)
    every = fsst_encode._compress_each(book, offsets, data, fsst_encode.SEGMENT_BYTES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fsst_encode, "DEDUPE_MIN_STRINGS", 1)
        mp.setattr(fsst_encode, "DEDUPE_SAMPLE_DISTINCT", 1.0)
        once = fsst_encode.compress(book, offsets, data)
    assert np.array_equal(once[0], every[0]) and np.array_equal(once[1], every[1])
    out_offsets, out = fsst.decompress(book.symbol_table(), *once)
    assert _split(out_offsets, out) == strings


def test_strings_crossing_segments_and_all_byte_values():
    """Strings longer than a tokeniser segment, every byte value, runs of 0xFF, empty strings."""
    rng = np.random.default_rng(3)
    words = [b"lance ", b"\xff\xff\xff", b"col", bytes(range(256)), b""]
    strings = [b"".join(words[j] for j in rng.integers(0, 5, int(k))) for k in rng.integers(0, 400, 300)]
    offsets, data = _arrays(strings)
    table, comp_offsets, codes = fsst_encode.compress_strings(offsets, data)
    assert codes.size < data.size  # it compresses
    out_offsets, out = fsst.decompress(table, comp_offsets, codes)
    assert _split(out_offsets, out) == strings


def test_pages_stored_raw_among_compressed_ones_decode_together():
    """A run of pages with a table each, one stored raw (encoder switch off, as pylance leaves a
    column's small last page) between compressed ones: ``decompress_tables`` gives every page's
    strings in order (the compressed pages around the raw one still decode as one run)."""
    rng = np.random.default_rng(5)
    words = [b"lance ", b"item-", b"0042", b"\xff", b"format "]
    pages = [
        [b"".join(words[j] for j in rng.integers(0, 5, int(k))) for k in rng.integers(0, 30, 700)]
        for _ in range(6)
    ]
    tables, offsets, chunks, cuts, at = [], [0], [], [0], 0
    for i, strings in enumerate(pages):
        page_offsets, data = _arrays(strings)
        if i in (2, 5):  # stored raw: the table's switch off, the bytes as they are
            table = bytearray(fsst.SYMBOL_TABLE_SIZE)
            table[4:8] = fsst.MAGIC
            tables.append(bytes(table))
            codes_offsets, codes = page_offsets, data
        else:
            table, codes_offsets, codes = fsst_encode.compress_strings(page_offsets, data)
            tables.append(table)
        offsets += (np.asarray(codes_offsets[1:]) + at).tolist()
        chunks.append(np.asarray(codes, np.uint8))
        at += len(codes)
        cuts.append(cuts[-1] + len(strings))
    out_offsets, out = fsst.decompress_tables(
        tables, np.array(offsets, np.int64), np.concatenate(chunks), cuts, "test"
    )
    assert _split(out_offsets, out) == [s for strings in pages for s in strings]


def test_code_without_symbol_is_corrupt():
    table, _, _ = fsst_encode.compress_simple([b"ab"], [b"ab", b"c"])
    with pytest.raises(CorruptFileError, match="beyond"):
        fsst.decompress(table, np.array([0, 2]), b"\x00\x05")


def _reference_or_corrupt(table: bytes, offsets: list[int], data: bytes) -> list[bytes] | None:
    """Byte-at-a-time decoding per the spec, None where the stream is corrupt: a code without a
    symbol, or an escape as a string's last byte."""
    n = table[0]
    syms = [table[8 + 8 * i : 8 + 8 * i + table[8 + 8 * n + i]] for i in range(n)]
    out = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        s, i = bytearray(), a
        while i < b:
            if data[i] == fsst.ESCAPE:
                if i + 1 >= b:
                    return None
                s.append(data[i + 1])
                i += 2
            elif data[i] >= n:
                return None
            else:
                s += syms[data[i]]
                i += 1
        out.append(bytes(s))
    return out


def _decoded_or_corrupt(table: bytes, offsets: list[int], raw: bytes, pairs: bool) -> list[bytes] | None:
    """lance_fw's decoding (one code at a time, or in pairs at any size), None for CorruptFileError."""
    with pytest.MonkeyPatch.context() as mp:
        if pairs:
            mp.setattr(fsst, "PAIR_MIN_CODES", 0)
            mp.setattr(fsst, "PAIR_MIN_CODES_PER_STRING", 0)
        else:
            mp.setattr(fsst, "PAIR_MIN_CODES", 1 << 62)
        try:
            out_offsets, out = fsst.decompress(table, np.array(offsets), raw)
        except CorruptFileError:
            return None
    return _split(out_offsets, out)


@given(st.data(), st.lists(st.binary(min_size=1, max_size=8), max_size=255))
def test_any_code_stream_decodes_as_the_spec_or_is_corrupt(data, symbols):
    """Code streams cut into several strings (the whole-array decoder, not the one-string loop):
    symbol codes, escapes of any byte (literals at or past the symbol count, runs of escaped 255),
    and now and then any byte at all. The spec's bytes, or CorruptFileError exactly where the spec
    has no decoding (a code past the table, an escape ending a string). Both decoders: one code
    at a time, and two (any alignment of escapes, literals and string starts within the pairs)."""
    table, _, _ = fsst_encode.compress_simple([], symbols)
    token = st.one_of(
        st.integers(0, len(symbols) - 1).map(lambda c: [c]) if symbols else st.just([fsst.ESCAPE, 0]),
        st.tuples(st.just(fsst.ESCAPE), st.sampled_from([0, 1, 254, 255, len(symbols), 200])).map(list),
    )
    codes = [c for t in data.draw(st.lists(token, max_size=200)) for c in t]
    if data.draw(st.integers(0, 4)) == 0:  # now and then any byte anywhere (often corrupt)
        codes.insert(data.draw(st.integers(0, len(codes))), data.draw(st.integers(0, 255)))
    raw = bytes(codes)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=12))
    offsets = sorted({0, len(raw), *cuts})
    offsets = [0, *offsets] if len(offsets) < 3 else offsets  # at least two strings
    expected = _reference_or_corrupt(table, offsets, raw)
    assert _decoded_or_corrupt(table, offsets, raw, pairs=False) == expected
    assert _decoded_or_corrupt(table, offsets, raw, pairs=True) == expected


@pytest.mark.parametrize(
    "offsets, data, corrupt",
    [
        ([0, 2, 4], b"\xff\x05\x00\x01", False),  # a literal past the symbol count
        ([0, 2, 4], b"\xff\xff\xff\xfe", False),  # escaped 255, escaped 254
        ([0, 1, 4], b"\x00\xff\x00\x01", False),  # an escape at an odd code, its literal even
        ([0, 3, 4], b"\x00\xff\x05\x01", False),  # a string starting right after a literal
        ([0, 3, 4], b"\x00\xff\x00\x01", False),  # ... one that is also a symbol's code
        ([0, 1, 3], b"\xff\x05\x00", True),  # an escape ends the first string
        ([0, 2, 3], b"\x00\x01\xff", True),  # ... the last string
        ([0, 2, 4], b"\xff\x05\x05\x00", True),  # a code past the table after a literal
    ],
)
@pytest.mark.parametrize("pairs", [False, True])
def test_escapes_and_codes_past_the_table_in_the_array_decoder(offsets, data, corrupt, pairs):
    """Several strings go through the whole-array decoders: a literal byte at or past the symbol
    count is data, a code there (or an escape ending a string) is corrupt."""
    table, _, _ = fsst_encode.compress_simple([], [b"ab", b"c"])
    expected = None if corrupt else reference_decode(table, offsets, data)
    assert _decoded_or_corrupt(table, offsets, data, pairs) == expected


def test_escape_run_at_the_end_is_corrupt():
    table, _, _ = fsst_encode.compress_simple([b"ab"], [b"ab"])
    fsst.decompress(table, np.array([0, 2]), b"\xff\xff")  # escaped 0xFF: fine
    with pytest.raises(CorruptFileError, match="escape"):
        fsst.decompress(table, np.array([0, 3]), b"\xff\xff\xff")


# --- pages, both ways ------------------------------------------------------------------------


def value_encodings(path: str, column: int = 0) -> list[tuple[str, str]]:
    """(layout, value compression) of every page of one column of every data file."""
    out = []
    for f in sorted(glob.glob(f"{path}/data/*.lance")):
        tail = read_tail(resolve_storage(f).open_reader(f))
        for page in tail.columns[column].pages:
            a = any_pb2.Any()
            a.ParseFromString(page.encoding.direct.encoding)
            layout = pb.PageLayout()
            a.Unpack(layout)
            kind = layout.WhichOneof("layout")
            msg = getattr(layout, kind)
            comp = msg.value_compression.WhichOneof("compression") if kind != "constant_layout" else ""
            out.append((kind, comp))
    return out


def _text(n: int, seed: int, words_per_value: tuple[int, int] = (2, 12), nulls: bool = True) -> pa.Array:
    rng = np.random.default_rng(seed)
    vocab = ["lance", "columnar", "größe", "日本語", "ünïcödé", "x", "", "format", "😀 emoji", "a\u00ffb"]
    counts = rng.integers(*words_per_value, n)
    values: list[str | None] = [
        " ".join(vocab[j] for j in rng.integers(0, len(vocab), int(c))) for c in counts
    ]
    for i in range(0, n, 97):
        values[i] = ""
    if nulls:
        for i in rng.choice(n, n // 20, replace=False):
            values[int(i)] = None
    return pa.array(values)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("large", [False, True])
def test_pylance_fsst_pages_read_equal(uri, version, large):
    """pylance's FSST mini-block pages (9000 values: several 4096-value chunks; nulls, empty
    strings, non-ASCII) read equal through lance_fw."""
    arr = _text(9000, 1)
    if large:
        arr = arr.cast(pa.large_string())
    table = pa.table({"s": arr})
    lance.write_dataset(table, uri, data_storage_version=version)
    assert {c for _, c in value_encodings(uri)} == {"fsst"}
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    rows = [0, 1, 4095, 4096, 4097, 8999]
    assert lance_fw.dataset(uri).take(rows).equals(lance.dataset(uri).take(rows))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("large", [False, True])
def test_lance_fw_writes_fsst_mini_block(uri, version, large):
    """Strings of >= 32 KiB a page get FSST mini-block pages (several pages and 4096-value
    chunks), which pylance reads back equal."""
    arr = _text(60_000, 2)
    if large:
        arr = arr.cast(pa.large_string())
    table = pa.table({"s": arr})
    lance_fw.write_dataset(table, uri, data_storage_version=version, max_page_bytes=512 * 1024)
    encodings = value_encodings(uri)
    assert encodings.count(("mini_block_layout", "fsst")) >= 3  # a short last page may differ
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())
    rows = [0, 4095, 4096, 30_001, 59_999]
    assert lance.dataset(uri).take(rows).equals(table.take(rows))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("large", [False, True])
def test_lance_fw_writes_fsst_full_zip(uri, version, large):
    """Long strings go full-zip with per-value FSST (as pylance): pylance reads them equal."""
    arr = _text(3000, 3, words_per_value=(40, 120))
    table = pa.table({"s": arr.cast(pa.large_string()) if large else arr})
    lance_fw.write_dataset(table, uri, data_storage_version=version, max_page_bytes=512 * 1024)
    encodings = value_encodings(uri)
    assert encodings.count(("full_zip_layout", "fsst")) >= 2  # a short last page may differ
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())
    assert lance.dataset(uri).take([0, 1500, 2999]).equals(table.take([0, 1500, 2999]))


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([b"\xff\x00abc" * 20] * 2000, pa.binary()),  # binary: pylance never uses FSST
        pa.array(["abcd"] * 20_000),  # longest value < 5 bytes
        pa.array(["lance format"] * 100),  # < 32 KiB
    ],
    ids=["binary", "short-values", "small-page"],
)
def test_no_fsst_where_pylance_uses_none(uri, arr):
    lance_fw.write_dataset(pa.table({"s": arr}), uri, data_storage_version="2.2")
    assert all(c != "fsst" for _, c in value_encodings(uri))
    assert_tables_equal(pa.table({"s": arr}), lance.dataset(uri).to_table())


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("compression", "arr", "expect_fsst"),
    [
        ("none", _text(4000, 4, nulls=False), False),
        ("fsst", pa.array([b"\xff\x00lance %d" % i for i in range(3000)], pa.binary()), True),
        ("fsst", pa.array(["ab", None, ""] * 10), True),  # tiny page: FSST when asked
    ],
    ids=["none-text", "fsst-binary", "fsst-tiny"],
)
def test_field_compression_metadata(uri, version, compression, arr, expect_fsst):
    """``lance-encoding:compression`` is honoured as pylance does: "none" stores the strings as
    they are (no FSST, no zstd), "fsst" asks for FSST even where the size rule says no."""
    field = pa.field("s", arr.type, metadata={"lance-encoding:compression": compression})
    table = pa.table([arr], schema=pa.schema([field]))
    lance_fw.write_dataset(table, uri, data_storage_version=version)
    comps = {c for _, c in value_encodings(uri)}
    assert ("fsst" in comps) == expect_fsst
    if compression == "none":
        assert comps == {"variable"}
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


def test_column_compressor_reuses_then_retrains():
    """A column's codebook carries over to a like page and is retrained for a page it does badly
    on; every page decodes with the table returned for it."""
    rng = np.random.default_rng(6)
    words = [b"lance ", b"columnar ", b"format "]
    like = [[b"".join(words[j] for j in rng.integers(0, 3, 8)) for _ in range(500)] for _ in range(2)]
    other = [bytes(rng.integers(0x30, 0x3A, 40).astype(np.uint8)) for _ in range(500)]  # digits
    comp = fsst_encode.ColumnCompressor()
    tables = []
    for strings in (like[0], like[1], other):
        offsets, data = _arrays(strings)
        table, comp_offsets, codes = comp.compress(offsets, data)
        out_offsets, out = fsst.decompress(table, comp_offsets, codes)
        assert _split(out_offsets, out) == strings
        tables.append(table)
    assert tables[0] == tables[1]  # reused
    assert tables[2] != tables[1]  # retrained


@pytest.mark.parametrize("version", VERSIONS)
def test_nested_strings_get_fsst(uri, version):
    """list<string> and struct<string> leaves (rep/def levels, null and empty lists) take the same
    FSST pages; pylance reads them back equal."""
    words = _text(20_000, 7)
    offsets = np.arange(0, 20_001, 4, dtype=np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), words, mask=pa.array(np.arange(5000) % 11 == 0))
    structs = pa.StructArray.from_arrays([words], names=["w"], mask=pa.array(np.arange(20_000) % 13 == 0))
    table = pa.table({"l": pa.concat_arrays([lists, pa.array([[]] * 100, lists.type)]), "s": structs[:5100]})
    lance_fw.write_dataset(table, uri, data_storage_version=version)
    assert ("mini_block_layout", "fsst") in value_encodings(uri, 0)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())


def test_repeated_strings_write_the_same_file_as_tokenising_each(tmp_path, monkeypatch):
    """A page of few distinct strings (names, as analysts' columns often are) is tokenised once per
    distinct string: the data file is byte for byte the one tokenising every string writes, and
    pylance reads it back."""
    rng = np.random.default_rng(9)
    names = np.array([f"customer-{i:05d}" for i in range(3000)])
    values = names[rng.integers(0, len(names), 60_000)].tolist()
    table = pa.table({"s": pa.array([None if i % 101 == 0 else v for i, v in enumerate(values)])})
    once = []
    distinct = fsst_encode._compress_distinct
    monkeypatch.setattr(fsst_encode, "_compress_distinct", lambda *a: once.append(1) or distinct(*a))
    lance_fw.write_dataset(table, str(tmp_path / "once"), data_storage_version="2.2")
    assert once  # the path under test ran
    monkeypatch.setattr(fsst_encode, "DEDUPE_MIN_STRINGS", 1 << 62)
    lance_fw.write_dataset(table, str(tmp_path / "each"), data_storage_version="2.2")
    (a,), (b,) = (glob.glob(str(tmp_path / d / "data" / "*.lance")) for d in ("once", "each"))
    assert open(a, "rb").read() == open(b, "rb").read()
    assert lance.dataset(str(tmp_path / "once")).to_table().equals(table)


@pytest.mark.parametrize("block, share, ride", [(64, 0.9, 16), (7, 0.0, 1), (1000, 0.5, 3)])
def test_finished_segments_riding_along_change_no_byte(tmp_path, monkeypatch, block, share, ride):
    """The tokeniser keeps finished segments in its step arrays for a while (their codes placed,
    then overwritten): whatever the block size, the share of finished segments tolerated and the
    steps between drops, the data file is byte for byte the default one, which pylance reads back
    (strings of 1-400 bytes: segments finish at every step, some cut at 256 bytes)."""
    table = pa.table({"s": _text(20_000, 11, words_per_value=(0, 60))})
    lance_fw.write_dataset(table, str(tmp_path / "default"), data_storage_version="2.2")
    monkeypatch.setattr(fsst_encode, "BLOCK_SEGMENTS", block)
    monkeypatch.setattr(fsst_encode, "FINISHED_SHARE", share)
    monkeypatch.setattr(fsst_encode, "MAX_RIDE", ride)
    lance_fw.write_dataset(table, str(tmp_path / "varied"), data_storage_version="2.2")
    (a,), (b,) = (glob.glob(str(tmp_path / d / "data" / "*.lance")) for d in ("default", "varied"))
    assert open(a, "rb").read() == open(b, "rb").read()
    assert_tables_equal(table, lance.dataset(str(tmp_path / "varied")).to_table())
    assert {c for _, c in value_encodings(str(tmp_path / "varied"))} == {"fsst"}
