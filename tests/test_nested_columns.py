"""``columns=["p.a"]``: nested paths in a column list, against pylance.

Scans return the child as a flat column named by the path; ``take`` returns the top-level struct
pruned to the children asked for. Data: 6000 rows (several 1024-value blocks and 4096-value
chunks) with null structs, null children and a child whose name holds a dot."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError
from tests.conftest import assert_tables_equal

ROWS = 6000


def _table(null_structs: bool) -> pa.Table:
    """File format 2.0 stores no struct validity (pylance refuses null structs there)."""
    rng = np.random.default_rng(7)
    ids = np.arange(ROWS)
    inner = pa.StructArray.from_arrays(
        [pa.array(ids * 2, pa.int64()), pa.array([f"e{i}" if i % 5 else None for i in ids])], names=["d", "e"],
        mask=pa.array((ids % 11 == 0) & null_structs))
    p = pa.StructArray.from_arrays(
        [pa.array(np.where(ids % 3 == 0, None, ids).tolist(), pa.int32()),
         pa.array([f"b{i}" for i in ids]), pa.array(rng.random(ROWS)), inner],
        names=["a", "b.c", "f", "c"], mask=pa.array((ids % 7 == 0) & null_structs))
    return pa.table({"id": pa.array(ids, pa.int64()), "p": p, "my q": pa.array(ids % 13, pa.int16())})


COLUMN_LISTS = [["p.a"], ["p.`b.c`", "id"], ["my q", "p.c.e", "p.a"], ["p.c", "p.c.d"], ["p.a", "p"],
                ["p.f", "p.a", "p.c.d"]]


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def uris(request, tmp_path_factory):
    out = {}
    for writer in (lance, lance_fw):
        uri = str(tmp_path_factory.mktemp("nested") / f"{writer.__name__}_{request.param}")
        writer.write_dataset(_table(request.param != "2.0"), uri, data_storage_version=request.param, max_rows_per_file=2500)
        out[writer.__name__] = uri
    return out


@pytest.mark.parametrize("columns", COLUMN_LISTS, ids=str)
@pytest.mark.parametrize("writer", ["lance", "lance_fw"])
def test_scan_of_nested_paths_equals_pylance(uris, writer, columns):
    expected = lance.dataset(uris[writer]).to_table(columns=columns)
    actual = lance_fw.dataset(uris[writer]).to_table(columns=columns)
    assert actual.schema.names == expected.schema.names
    assert_tables_equal(expected, actual)
    filtered = dict(columns=columns, filter="id % 4 = 1")
    assert_tables_equal(lance.dataset(uris[writer]).to_table(**filtered),
                        lance_fw.dataset(uris[writer]).to_table(**filtered))


@pytest.mark.parametrize("columns", COLUMN_LISTS, ids=str)
@pytest.mark.parametrize("writer", ["lance", "lance_fw"])
def test_take_of_nested_paths_equals_pylance(uris, writer, columns):
    rows = [5999, 0, 4097, 1024, 7, 7, 2501]
    expected = lance.dataset(uris[writer]).take(rows, columns=columns)
    actual = lance_fw.dataset(uris[writer]).take(rows, columns=columns)
    assert actual.schema == expected.schema
    assert actual.to_pylist() == expected.to_pylist()


@pytest.mark.parametrize("columns", [["p.zz"], ["id.x"], ["p.`b.c"]], ids=str)
def test_bad_paths_are_refused_by_both(uris, columns):
    with pytest.raises(ValueError):
        lance.dataset(uris["lance"]).to_table(columns=columns)
    with pytest.raises(LanceError):
        lance_fw.dataset(uris["lance"]).to_table(columns=columns)
