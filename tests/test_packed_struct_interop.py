"""Packed structs (a struct stored row by row in one column) against pylance: pylance takes both
metadata keys, ``lance-encoding:packed`` and the older ``packed``; lance_fw must store and read
both as pylance does in 2.1+ files (else pylance reads lance_fw's struct as nulls, and lance_fw
cannot open pylance's). Packed structs in 2.0 files are refused by name on write and on read."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError

ROWS = 5000  # crosses a 4096-value chunk
STRUCT = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.float32())])


def _table(key: str, nulls: bool = True) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", STRUCT, metadata={key: "true"})])
    rng = np.random.default_rng(1)
    a = pa.array(rng.integers(0, 100, ROWS).astype(np.int32))
    b = pa.array(rng.random(ROWS).astype(np.float32))
    valid = pa.array(rng.random(ROWS) > (0.1 if nulls else -1.0))  # 2.0 stores no struct validity
    p = pa.StructArray.from_arrays([a, b], fields=list(STRUCT), mask=pc.invert(valid))
    return pa.table({"id": np.arange(ROWS), "p": p}, schema=schema)


@pytest.mark.parametrize("key", ["packed", "lance-encoding:packed"])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lance", "lance_fw"])
def test_packed_struct_round_trips_with_pylance(tmp_path, key, version, writer):
    path = str(tmp_path / "t.lance")
    {"lance": lance, "lance_fw": lance_fw}[writer].write_dataset(_table(key), path, data_storage_version=version)
    files = [list(d.fields) for f in lance.dataset(path).get_fragments() for d in f.data_files()]
    assert files == [[0, 1]]  # one column for the whole struct, as pylance stores it
    for where in (None, "p.a = 7", "id < 100"):
        want = lance.dataset(path).to_table(filter=where)
        got = lance_fw.dataset(path).to_table(filter=where)
        assert got.equals(want), where
    assert lance_fw.dataset(path).take([1, 4097, 4999]).equals(lance.dataset(path).take([1, 4097, 4999]))


@pytest.mark.parametrize("key", ["packed", "lance-encoding:packed"])
def test_packed_structs_in_2_0_files_are_refused_by_name(tmp_path, key):
    with pytest.raises(UnsupportedFeatureError, match="packed"):
        lance_fw.write_dataset(_table(key, False), str(tmp_path / "fw.lance"), data_storage_version="2.0")
    path = str(tmp_path / "pl.lance")
    lance.write_dataset(_table(key, False), path, data_storage_version="2.0")
    with pytest.raises(UnsupportedFeatureError, match="packed struct"):
        lance_fw.dataset(path).to_table()
    assert lance_fw.dataset(path).to_table(columns=["id"]).equals(lance.dataset(path).to_table(columns=["id"]))
