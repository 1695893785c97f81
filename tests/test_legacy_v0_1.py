"""Legacy file format 0.1 (``data_storage_version="legacy"``) both ways against pylance 14.

0.1 files store no validity: pylance reads back a null number as the bytes under it (0), a null
list as [], a null struct as a struct of its children's values, and an empty string of a nullable
field as null. The oracle is therefore what pylance reads, never the table written.
"""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_fw
from lance_fw.errors import CorruptFileError, LanceError, UnsupportedFeatureError

LEGACY = "legacy"
ROWS = 10_000
GROUP = 1000  # rows per 0.1 batch: every read crosses batch boundaries


def _mask(n: int, every: int) -> np.ndarray:
    return np.arange(n) % every == 0


def legacy_table(n: int = ROWS, seed: int = 0) -> pa.Table:
    """Every type pylance writes at 0.1 (dictionaries apart), nulls in every column."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(-100, 100, n)
    strs = [None if i % 13 == 0 else ("" if i % 17 == 0 else f"s{i}") for i in range(n)]
    return pa.table(
        {
            "i8": pa.array(ints.astype(np.int8), mask=_mask(n, 7)),
            "i16": pa.array(ints.astype(np.int16), mask=_mask(n, 5)),
            "i32": pa.array(ints.astype(np.int32)),
            "i64": pa.array(np.arange(n, dtype=np.int64)),
            "u8": pa.array(np.abs(ints).astype(np.uint8), mask=_mask(n, 3)),
            "u16": pa.array(np.abs(ints).astype(np.uint16)),
            "u32": pa.array(np.abs(ints).astype(np.uint32), mask=_mask(n, 11)),
            "u64": pa.array(np.abs(ints).astype(np.uint64) + 2**63),
            "f16": pa.array(ints.astype(np.float16)),
            "f32": pa.array(ints.astype(np.float32) / 3, mask=_mask(n, 4)),
            "f64": pa.array(ints / 7.0, mask=_mask(n, 9)),
            "bool": pa.array(ints > 0, mask=_mask(n, 6)),
            "str": pa.array(strs),
            "large_str": pa.array(strs, pa.large_string()),
            "bin": pa.array([None if s is None else s.encode() for s in strs], pa.binary()),
            "large_bin": pa.array([None if s is None else s.encode() for s in strs], pa.large_binary()),
            "date32": pa.array(ints.astype(np.int32), pa.date32()),
            "date64": pa.array(ints.astype(np.int64) * 86_400_000, pa.date64()),
            "time32": pa.array(np.abs(ints).astype(np.int32), pa.time32("ms")),
            "time64": pa.array(np.abs(ints).astype(np.int64), pa.time64("us")),
            "ts": pa.array(ints.astype(np.int64), pa.timestamp("us"), mask=_mask(n, 8)),
            "ts_tz": pa.array(ints.astype(np.int64), pa.timestamp("ns", tz="UTC")),
            "dur": pa.array(ints.astype(np.int64), pa.duration("ms")),
            "dec": pa.array(
                [None if i % 10 == 0 else Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)
            ),
            "fsb": pa.array([bytes([i % 256, 7]) for i in range(n)], pa.binary(2)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, np.float32)), 4),
            "list": pa.array(
                [None if i % 9 == 0 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())
            ),
            "large_list": pa.array(
                [None if i % 5 == 0 else [s, s] for i, s in enumerate(strs)], pa.large_list(pa.string())
            ),
            "list_list": pa.array(
                [[[i], []] if i % 3 else [] for i in range(n)], pa.list_(pa.list_(pa.int64()))
            ),
            "struct": pa.array(
                [None if i % 12 == 0 else {"a": i, "b": s, "c": {"d": float(i)}} for i, s in enumerate(strs)]
            ),
            "list_struct": pa.array([[{"x": i, "y": s}] if i % 2 else [] for i, s in enumerate(strs)]),
            "list_vec": pa.array(
                [[[1.0, float(i)]] * (i % 3) for i in range(n)], pa.list_(pa.list_(pa.float32(), 2))
            ),
        }
    )


def _write_pylance(table: pa.Table, uri: str, **kwargs) -> lance.LanceDataset:
    kwargs.setdefault("max_rows_per_group", GROUP)
    return lance.write_dataset(table, uri, data_storage_version=LEGACY, **kwargs)


def _write_lance_fw(table: pa.Table, uri: str, **kwargs):
    kwargs.setdefault("max_rows_per_group", GROUP)
    return lance_fw.write_dataset(table, uri, data_storage_version=LEGACY, **kwargs)


def _equal(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema.equals(expected.schema), f"{actual.schema}\n!=\n{expected.schema}"
    for name in expected.column_names:
        e, a = expected.column(name).combine_chunks(), actual.column(name).combine_chunks()
        assert a.equals(e), f"{name}: {a.to_pylist()[:12]} != {e.to_pylist()[:12]}"


@pytest.fixture(scope="module")
def pylance_dataset(tmp_path_factory) -> str:
    """Three fragments (max_rows_per_file) of ten 0.1 batches each."""
    uri = str(tmp_path_factory.mktemp("legacy") / "ds")
    ds = _write_pylance(legacy_table(), uri, max_rows_per_file=ROWS // 3 + 1)
    assert ds.data_storage_version == "0.1" and len(ds.get_fragments()) == 3
    return uri


def test_reads_what_pylance_reads(pylance_dataset):
    ours, theirs = lance_fw.dataset(pylance_dataset), lance.dataset(pylance_dataset)
    assert ours.data_storage_version == "0.1"
    assert ours.count_rows() == theirs.count_rows() == ROWS
    _equal(theirs.to_table(), ours.to_table())


@pytest.mark.parametrize(
    "columns, filter",
    [
        (["str", "struct", "list"], "i64 >= 2990 AND i64 < 7010"),
        (["large_list", "vec", "bool"], "i8 > 50"),
        (["i64", "dec", "list_struct"], "str IS NULL"),
        (None, "u32 = 0 OR f64 > 10"),
    ],
)
def test_projection_and_filter(pylance_dataset, columns, filter):
    ours, theirs = lance_fw.dataset(pylance_dataset), lance.dataset(pylance_dataset)
    _equal(theirs.to_table(columns=columns, filter=filter), ours.to_table(columns=columns, filter=filter))
    assert ours.count_rows(filter) == theirs.count_rows(filter)


def test_take_and_fragments(pylance_dataset):
    ours, theirs = lance_fw.dataset(pylance_dataset), lance.dataset(pylance_dataset)
    rows = [0, 1, 999, 1000, 1001, 3333, 3334, 5000, 9999, 4, 4]
    _equal(theirs.take(rows), ours.take(rows))
    _equal(
        theirs.take(rows, columns=["struct", "list_list"]), ours.take(rows, columns=["struct", "list_list"])
    )
    for mine, pyl in zip(ours.get_fragments(), theirs.get_fragments()):
        assert mine.count_rows() == pyl.count_rows()
        _equal(pyl.to_table(columns=["str", "vec"]), mine.to_table(columns=["str", "vec"]))
    got = pa.Table.from_batches(ours.to_batches(batch_size=777, columns=["large_str", "list"]))
    _equal(theirs.to_table(columns=["large_str", "list"]), got)


def test_deletions_appends_and_columns_by_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    table = legacy_table(3000, seed=1)
    _write_pylance(table, uri)
    lance.write_dataset(legacy_table(2500, seed=2), uri, mode="append", max_rows_per_group=700)
    ds = lance.dataset(uri)
    ds.delete("i64 % 7 = 3 OR i64 BETWEEN 900 AND 1100")
    ds.add_columns({"twice": "i64 * 2", "label": "str"})
    ds.drop_columns(["bin"])
    theirs = lance.dataset(uri)
    ours = lance_fw.dataset(uri)
    assert ours.count_rows() == theirs.count_rows()
    _equal(theirs.to_table(), ours.to_table())
    _equal(
        theirs.to_table(filter="twice > 4000", columns=["label", "struct"]),
        ours.to_table(filter="twice > 4000", columns=["label", "struct"]),
    )
    _equal(theirs.take([0, 10, 2999, 3000, 4000]), ours.take([0, 10, 2999, 3000, 4000]))


def test_lance_fw_writes_what_pylance_writes(tmp_path):
    """pylance reads a lance_fw 0.1 dataset exactly as it reads its own."""
    table = legacy_table(5000, seed=3)
    _write_pylance(table, str(tmp_path / "py"), max_rows_per_file=2000)
    _write_lance_fw(table, str(tmp_path / "fw"), max_rows_per_file=2000)
    expected = lance.dataset(str(tmp_path / "py")).to_table()
    fw = lance.dataset(str(tmp_path / "fw"))
    assert fw.data_storage_version == "0.1" and len(fw.get_fragments()) == 3
    _equal(expected, fw.to_table())
    _equal(expected, lance_fw.dataset(str(tmp_path / "fw")).to_table())
    frag = fw.get_fragments()[0].metadata.files[0]
    assert (frag.file_major_version, frag.file_minor_version) == (0, 2)


def test_mixed_appends_and_deletes(tmp_path):
    uri = str(tmp_path / "ds")
    a, b, c = (legacy_table(1500, seed=s) for s in (4, 5, 6))
    _write_pylance(a, uri)
    _write_lance_fw(b, uri, mode="append")
    lance.write_dataset(c, uri, mode="append", max_rows_per_group=512)
    lance_fw.dataset(uri).delete("i64 < 10")
    lance.dataset(uri).delete("i32 = 5")
    both = [lance.dataset(uri), lance_fw.dataset(uri)]
    assert both[0].count_rows() == both[1].count_rows()
    _equal(both[0].to_table(), both[1].to_table())


def test_non_nullable_strings_keep_empty_values(tmp_path):
    schema = pa.schema([pa.field("s", pa.string(), False), pa.field("n", pa.string())])
    table = pa.table({"s": ["", "a", ""], "n": ["", "b", None]}, schema=schema)
    for writer, name in ((_write_pylance, "py"), (_write_lance_fw, "fw")):
        writer(table, str(tmp_path / name))
        theirs = lance.dataset(str(tmp_path / name)).to_table()
        assert theirs.column("s").to_pylist() == ["", "a", ""]
        assert theirs.column("n").to_pylist() == [None, "b", None]
        _equal(theirs, lance_fw.dataset(str(tmp_path / name)).to_table())


def test_dictionary_columns(tmp_path):
    uri = str(tmp_path / "ds")
    n = 4000
    table = pa.table(
        {
            "id": pa.array(range(n)),
            "d": pa.array([f"k{i % 5}" for i in range(n)]).dictionary_encode(),
            "d8": pa.DictionaryArray.from_arrays(
                pa.array([i % 3 for i in range(n)], pa.int8()), ["p", "q", "r"]
            ),
            "dint": pa.array([i % 4 * 10 for i in range(n)]).dictionary_encode(),
        }
    )
    _write_pylance(table, uri)
    _equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    _equal(lance.dataset(uri).take([5, 1500, 3999]), lance_fw.dataset(uri).take([5, 1500, 3999]))
    # a lance_fw commit keeps the dictionaries pylance reads from the manifest file
    lance_fw.dataset(uri).delete("id < 100")
    after = lance.dataset(uri).to_table()
    assert after.num_rows == n - 100 and after.column("d").to_pylist()[:2] == ["k0", "k1"]
    _equal(after, lance_fw.dataset(uri).to_table())
    with pytest.raises(UnsupportedFeatureError, match="dictionary"):
        _write_lance_fw(table, str(tmp_path / "fw"))


def _file_of(uri: str) -> Path:
    return next((Path(uri) / "data").glob("*.lance"))


def test_damaged_page_table_raises(tmp_path):
    uri = str(tmp_path / "ds")
    _write_pylance(pa.table({"x": pa.array(range(3000))}), uri)
    path = _file_of(uri)
    data = bytearray(path.read_bytes())
    meta_pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    from lance_fw._proto import file_pb2

    length = struct.unpack_from("<I", data, meta_pos)[0]
    meta = file_pb2.Metadata.FromString(bytes(data[meta_pos + 4 : meta_pos + 4 + length]))
    struct.pack_into("<qq", data, meta.page_table_position + 16, len(data) + 10, GROUP)  # batch 1
    path.write_bytes(bytes(data))
    ds = lance_fw.dataset(uri)
    assert ds.to_table(limit=10).num_rows == 10
    with pytest.raises(CorruptFileError, match=path.name):
        ds.to_table()


def test_truncated_file_raises(tmp_path):
    uri = str(tmp_path / "ds")
    _write_pylance(pa.table({"x": pa.array(range(100))}), uri)
    path = _file_of(uri)
    path.write_bytes(path.read_bytes()[:-20] + path.read_bytes()[-16:])  # metadata cut short
    with pytest.raises(LanceError):
        lance_fw.dataset(uri).to_table()


def test_unwritable_type_is_refused(tmp_path):
    """pylance cannot write a map at 0.1 either; lance_fw refuses it before writing a file."""
    table = pa.table({"m": pa.array([[(1, 2)]], pa.map_(pa.int32(), pa.int32()))})
    with pytest.raises(LanceError):
        _write_lance_fw(table, str(tmp_path / "fw"))
    assert not list(tmp_path.glob("fw/data/*.lance"))


def test_lance_fw_operations_on_a_pylance_legacy_dataset(tmp_path):
    """Every rewrite lance_fw makes of a 0.1 dataset writes 0.1 files pylance reads."""
    uri = str(tmp_path / "ds")
    n = 3000
    table = pa.table(
        {
            "id": pa.array(range(n)),
            "s": pa.array([f"v{i}" for i in range(n)]),
            "l": pa.array([[i] * (i % 3) for i in range(n)]),
            "st": pa.array([{"a": i, "b": f"b{i}"} for i in range(n)]),
        }
    )
    _write_pylance(table, uri, max_rows_per_file=1200, max_rows_per_group=500)
    more = pa.table(
        {
            "id": pa.array(range(2900, 3100)),
            "s": pa.array(["m"] * 200),
            "l": pa.array([[1]] * 200),
            "st": pa.array([{"a": 1, "b": "m"}] * 200),
        }
    )
    steps = [
        lambda: lance_fw.dataset(uri).update({"s": "'upd'"}, where="id < 100"),
        lambda: (
            lance_fw.dataset(uri)
            .merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(more)
        ),
        lambda: lance_fw.dataset(uri).add_columns({"x2": "id * 2"}),
        lambda: lance_fw.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000),
        lambda: lance_fw.write_dataset(
            more.slice(0, 10).append_column("x2", pa.array([0] * 10)), uri, mode="append"
        ),
    ]
    for step in steps:
        step()
        theirs = lance.dataset(uri)
        _equal(theirs.to_table(), lance_fw.dataset(uri).to_table())
        assert {
            (f.file_major_version, f.file_minor_version)
            for g in theirs.get_fragments()
            for f in g.metadata.files
        } == {(0, 2)}
    assert lance.dataset(uri).count_rows() == n + 100 + 10


def test_use_legacy_format_alias(tmp_path):
    ds = lance_fw.write_dataset(pa.table({"x": [1, 2]}), str(tmp_path / "fw"), use_legacy_format=True)
    assert ds.data_storage_version == "0.1" == lance.dataset(str(tmp_path / "fw")).data_storage_version


# --- random tables ---------------------------------------------------------------------------------

_LEAVES = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text(max_size=6)),
    "binary": (pa.large_binary(), st.binary(max_size=6)),
    "date": (pa.date32(), st.dates().map(lambda d: (d - datetime.date(1970, 1, 1)).days)),
}


@st.composite
def _random_table(draw) -> pa.Table:
    n = draw(st.integers(1, 2500))
    columns = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(sorted(_LEAVES)))
        arrow_type, values = _LEAVES[kind]
        sample = draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=20))
        flat = [sample[j % len(sample)] for j in range(n)]
        shape = draw(st.sampled_from(["leaf", "list", "struct"]))
        if shape == "list":  # lists of 0..2 items, some null
            items = [None if j % 11 == 5 else flat[j : j + j % 3] for j in range(n)]
            column = pa.array(items, pa.list_(arrow_type))
        elif shape == "struct":
            column = pa.StructArray.from_arrays([pa.array(flat, arrow_type)], names=["v"])
        else:
            column = pa.array(flat, arrow_type)
        columns[f"c{i}_{kind}_{shape}"] = column
    return pa.table(columns)


@given(table=_random_table(), group=st.sampled_from([1, 7, 256, 1024]))
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_tables_both_ways(tmp_path_factory, table, group):
    base = tmp_path_factory.mktemp("rand")
    _write_pylance(table, str(base / "py"), max_rows_per_group=group, max_rows_per_file=1500)
    _write_lance_fw(table, str(base / "fw"), max_rows_per_group=group, max_rows_per_file=1500)
    expected = lance.dataset(str(base / "py")).to_table()
    _equal(expected, lance_fw.dataset(str(base / "py")).to_table())
    _equal(expected, lance.dataset(str(base / "fw")).to_table())
    _equal(expected, lance_fw.dataset(str(base / "fw")).to_table())
