"""``lance-encoding:compression`` (and ``-level``, ``-bss``) on a field, against pylance: the same
general compression (scheme and level) over the same encodings where pylance applies it, none
where pylance applies none, the same refusals, and each engine reading the other's pages back
exactly.

Before, lance_fw honoured the hint only for strings at 2.1+ (and wrote zstd when LZ4 was asked),
ignored it for fixed-width values and at 2.0, accepted any scheme name, and could not read a
2.0 page whose string bytes pylance had compressed."""

from __future__ import annotations

import glob

import lance
import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw
from lance_fw._proto import encodings_v2_0_pb2 as pb20
from lance_fw._proto import encodings_v2_1_pb2 as pb21
from lance_fw.errors import InvalidUserInputError, UnsupportedFeatureError
from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage

from conftest import assert_tables_equal

RNG = np.random.default_rng(34)
#: Rows crossing 1024-value blocks, 4096-value chunks and (at ``FRAGMENT_ROWS``) two fragments.
ROWS = 70_000
FRAGMENT_ROWS = 40_000
WORDS = np.array(["lance", "columnar", "format", "python", "duckdb", "größe", "日本語", "😀"])


def _text(n: int, nulls: bool = False) -> pa.Array:
    lengths = RNG.integers(1, 12, n)
    words = WORDS[RNG.integers(0, len(WORDS), int(lengths.sum()))]
    values = [" ".join(w) for w in np.split(words, np.cumsum(lengths)[:-1])]
    mask = RNG.random(n) < 0.1 if nulls else None
    return pa.array(values, mask=mask)


VALUES = {
    "small int32": lambda: pa.array(RNG.integers(0, 1000, ROWS).astype(np.int32)),
    "counting int64": lambda: pa.array(np.arange(ROWS, dtype=np.int64)),
    "random float64": lambda: pa.array(RNG.random(ROWS)),
    "int32 with nulls": lambda: pa.array(RNG.integers(0, 50, ROWS).astype(np.int32), mask=RNG.random(ROWS) < 0.1),
    "uint8": lambda: pa.array(RNG.integers(0, 256, ROWS).astype(np.uint8)),
    "text": lambda: _text(12_000),
    "large text with nulls": lambda: _text(12_000, nulls=True).cast(pa.large_string()),
    "binary": lambda: pa.array([bytes(RNG.integers(0, 4, 30).astype(np.uint8)) for _ in range(8000)]),
    "wide text (full-zip)": lambda: pa.array([" ".join(WORDS[RNG.integers(0, len(WORDS), 80)]) for _ in range(3000)]),
    "full-range int32": lambda: pa.array(RNG.integers(-(2**31), 2**31 - 1, ROWS).astype(np.int32)),
    "full-range int64": lambda: pa.array(RNG.integers(-(2**62), 2**62, ROWS)),
    "float32": lambda: pa.array(RNG.random(ROWS, dtype=np.float32)),
    "int16": lambda: pa.array(RNG.integers(0, 100, ROWS).astype(np.int16)),
    "date32": lambda: pa.array(RNG.integers(0, 20_000, ROWS).astype(np.int32)).cast(pa.date32()),
    "timestamp": lambda: pa.array(RNG.integers(0, 2**50, ROWS)).cast(pa.timestamp("us")),
    "decimal128": lambda: pa.array(RNG.integers(0, 10**6, 20_000)).cast(pa.decimal128(22, 2)),
    "low-cardinality strings": lambda: pa.array([f"x{i % 7}" for i in range(ROWS)]),
    "bool": lambda: pa.array(RNG.random(ROWS) < 0.5),
    "list<int32>": lambda: pa.array([list(range(i % 5)) for i in range(20_000)], pa.list_(pa.int32())),
}
HINTS = {
    "zstd": {"lance-encoding:compression": "zstd"},
    "lz4": {"lance-encoding:compression": "lz4"},
    "zstd level 9": {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "9"},
}


def _table(values: pa.Array, metadata: dict[str, str]) -> pa.Table:
    return pa.table([values], schema=pa.schema([pa.field("c", values.type, metadata=metadata)]))


def _pages(path: str) -> list[any_pb2.Any]:
    out = []
    for name in sorted(glob.glob(f"{path}/data/*.lance")):
        for page in read_tail(resolve_storage(name).open_reader(name)).columns[-1].pages:
            message = any_pb2.Any()
            message.ParseFromString(page.encoding.direct.encoding)
            out.append(message)
    return out


def _general_v21(path: str) -> set[tuple[str, str, int | None, str]]:
    """Every page's (layout, general scheme or "", level or None, the encoding of its values
    inside any general compression) of the column's leaf."""
    out = set()
    for message in _pages(path):
        layout = pb21.PageLayout()
        message.Unpack(layout)
        kind = layout.WhichOneof("layout")
        encoding = getattr(layout, kind).value_compression if kind != "constant_layout" else None
        if encoding is not None and encoding.WhichOneof("compression") == "general":
            scheme = encoding.general.compression
            level = scheme.level if scheme.HasField("level") else None
            inner = encoding.general.values.WhichOneof("compression")
            out.add((kind, pb21.CompressionScheme.Name(scheme.scheme), level, inner or ""))
        else:
            out.add((kind, "", None, encoding.WhichOneof("compression") or "" if encoding is not None else ""))
    return out


def _both(tmp_path, table: pa.Table, version: str) -> tuple[str, str]:
    theirs, ours = str(tmp_path / "pylance"), str(tmp_path / "lance_fw")
    lance.write_dataset(table, theirs, data_storage_version=version, max_rows_per_file=FRAGMENT_ROWS)
    lance_fw.write_dataset(table, ours, data_storage_version=version, max_rows_per_file=FRAGMENT_ROWS)
    return theirs, ours


def _read_both_ways(table: pa.Table, theirs: str, ours: str) -> None:
    """Each engine reads the other's dataset, and its own, as written; takes across block and
    fragment edges give pylance's rows."""
    assert_tables_equal(table, lance.dataset(ours).to_table())
    assert_tables_equal(table, lance_fw.dataset(theirs).to_table())
    assert_tables_equal(table, lance_fw.dataset(ours).to_table())
    rows = [r for r in (0, 1023, 1024, 4095, 4096, FRAGMENT_ROWS - 1, FRAGMENT_ROWS, table.num_rows - 1) if r < table.num_rows]
    for path in (theirs, ours):
        assert_tables_equal(lance.dataset(path).take(rows), lance_fw.dataset(path).take(rows))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("hint", list(HINTS))
@pytest.mark.parametrize("kind", list(VALUES))
def test_general_compression_as_pylance(tmp_path, version, hint, kind):
    """pylance's rule: 32- and 64-bit values whose first bytes look repetitive are byte-stream-
    split first (``lance-encoding:bss`` "auto"); a page's values are wrapped in the asked scheme
    and level where its chunks' value buffers hold 4 KiB or more and compress smaller in all (so
    not booleans, bit-packed small integers or random full-width ones), never fixed-size lists
    or FSST codes. lance_fw writes the same encodings page by page, but for doubles that
    bit-packing would shrink by less than ``MIN_PACKING_SAVING`` (flat, where pylance packs them):
    there its wrapped pages carry the asked scheme and level. Wide strings (full-zip) are
    zstd-compressed value by value whichever scheme is asked, at the asked level or a recorded
    level 0. Each engine reads the other's."""
    table = _table(VALUES[kind](), HINTS[hint])
    theirs, ours = _both(tmp_path, table, version)
    mine, pylance_pages = _general_v21(ours), _general_v21(theirs)
    if kind != "random float64":
        assert mine == pylance_pages
    else:  # lance_fw keeps these flat (``MIN_PACKING_SAVING``), pylance bit-packs them to 63 bits
        metadata = HINTS[hint]
        scheme = "COMPRESSION_ALGORITHM_" + metadata["lance-encoding:compression"].upper()
        level = int(metadata["lance-encoding:compression-level"]) if "lance-encoding:compression-level" in metadata else None
        assert all(page[1:3] in {("", None), (scheme, level)} for page in mine)
    _read_both_ways(table, theirs, ours)


def _flat_compressions_v20(path: str) -> set[tuple[str, int | None]]:
    """Every 2.0 page's (string bytes' compression scheme or "", level or None)."""
    out = set()
    for message in _pages(path):
        encoding = pb20.ArrayEncoding()
        message.Unpack(encoding)
        flat = encoding.binary.bytes.flat
        compressed = flat.HasField("compression")
        out.add((flat.compression.scheme if compressed else "", flat.compression.level if compressed and flat.compression.HasField("level") else None))
    return out


@pytest.mark.parametrize("hint", [*HINTS, "none"])
@pytest.mark.parametrize("kind", ["text", "large text with nulls", "binary"])
def test_v20_string_bytes_compressed_as_pylance(tmp_path, hint, kind):
    """At 2.0 pylance compresses a string column's bytes as one framed buffer (recording "none"
    when asked for none); lance_fw writes the same and reads pylance's (before: "flat compression
    'zstd' is not supported")."""
    metadata = HINTS.get(hint, {"lance-encoding:compression": "none"})
    table = _table(VALUES[kind](), metadata)
    theirs, ours = _both(tmp_path, table, "2.0")
    assert _flat_compressions_v20(ours) == _flat_compressions_v20(theirs)
    _read_both_ways(table, theirs, ours)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("scheme", ["snappy", "ZSTD", "gzip", "zstd:3"])
def test_unknown_scheme_refused(tmp_path, version, scheme):
    """A scheme pylance does not know: at 2.1+ both refuse it (pylance: ``OSError`` "Invalid user
    input"; lance_fw: ``InvalidUserInputError``, an ``OSError`` too); at 2.0 pylance writes the
    column anyway and lance_fw refuses it too (a hint is never silently dropped). Nothing is
    committed."""
    table = _table(VALUES["text"](), {"lance-encoding:compression": scheme})
    if version != "2.0":
        with pytest.raises(OSError, match="Unknown compression scheme"):
            lance.write_dataset(table, str(tmp_path / "pylance"), data_storage_version=version)
    with pytest.raises(InvalidUserInputError, match=f"column 'c'.*{scheme}"):
        lance_fw.write_dataset(table, str(tmp_path / "lance_fw"), data_storage_version=version)
    assert not glob.glob(str(tmp_path / "lance_fw" / "_versions" / "*"))


def test_non_integer_level_refused(uri):
    """pylance writes a column whose level is not an integer as if none were given; lance_fw
    refuses it naming the key (a hint is never silently dropped)."""
    table = _table(VALUES["text"](), {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "high"})
    with pytest.raises(InvalidUserInputError, match="compression-level must be an integer, not 'high'"):
        lance_fw.write_dataset(table, uri)


@pytest.mark.parametrize("kind", ["text", "wide text (full-zip)"])
@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_damaged_compressed_bytes_are_a_corrupt_file(uri, version, scheme, kind):
    """Bytes flipped inside a compressed buffer (chunks, or full-zip values compressed one by
    one and decompressed as one stream) make the read fail with ``CorruptFileError`` naming the
    file, never a crash or other rows."""
    table = _table(VALUES[kind](), {"lance-encoding:compression": scheme})
    lance_fw.write_dataset(table, uri, data_storage_version=version)
    (name,) = glob.glob(f"{uri}/data/*.lance")
    tail = read_tail(resolve_storage(name).open_reader(name))
    page = tail.columns[-1].pages[0]
    at = page.buffer_offsets[-1] + page.buffer_sizes[-1] // 2  # inside the compressed bytes
    with open(name, "r+b") as f:
        f.seek(at)
        f.write(b"\xff" * 64)
    with pytest.raises(lance_fw.errors.CorruptFileError, match=name.split("/")[-1]):
        lance_fw.dataset(uri).to_table()


@pytest.mark.parametrize(
    ("kind", "bss"),
    [("random float64", "on"), ("random float64", "ON"), ("small int32", "off"), ("counting int64", "auto")],
)
def test_bss_hint_as_pylance(tmp_path, kind, bss):
    """``lance-encoding:bss`` beside a compression: "on" byte-stream-splits what "auto" would not,
    "off" keeps pylance from it (bit-packing then), as pylance writes each."""
    table = _table(VALUES[kind](), {"lance-encoding:compression": "zstd", "lance-encoding:bss": bss})
    theirs, ours = _both(tmp_path, table, "2.2")
    assert _general_v21(ours) == _general_v21(theirs)
    _read_both_ways(table, theirs, ours)


def test_unknown_bss_mode_refused(uri):
    """pylance logs a warning and uses "auto" for a mode it does not know; lance_fw refuses it
    naming the key (a hint is never silently replaced)."""
    table = _table(VALUES["small int32"](), {"lance-encoding:compression": "zstd", "lance-encoding:bss": "maybe"})
    with pytest.raises(InvalidUserInputError, match="lance-encoding:bss='maybe'"):
        lance_fw.write_dataset(table, uri)


@pytest.mark.parametrize("key", ["lance-encoding:rle-threshold", "lance-encoding:dict-divisor", "lance-encoding:dict-size-ratio"])
def test_unhonoured_hints_refused(tmp_path, key):
    """Hints pylance 14 tunes its run-length and dictionary choices by (an RLE threshold of 0.01
    keeps pylance from run-length encoding runs of 20, which lance_fw would) are refused by name
    at 2.1+, nothing committed, rather than ignored."""
    runs = pa.array(np.repeat(RNG.integers(0, 1000, 1000), 20).astype(np.int32))
    table = _table(runs, {key: "0.01"})
    with pytest.raises(UnsupportedFeatureError, match=f"column 'c'.*{key}"):
        lance_fw.write_dataset(table, str(tmp_path / "lance_fw"))
    assert not glob.glob(str(tmp_path / "lance_fw" / "_versions" / "*"))
