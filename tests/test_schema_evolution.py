"""add_columns / drop_columns, differential against pylance (rows, schema, files)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import CommitConflictError, InvalidArgumentError, SchemaError
from tests.conftest import assert_tables_equal


@pytest.fixture(params=["2.0", "2.2"])
def pair(request, tmp_path):
    table = pa.table({"a": pa.array(range(20), pa.int64()), "s": [f"v{i}" if i % 4 else None for i in range(20)],
                      "st": pa.array([{"x": i % 3} for i in range(20)])})
    out = []
    for module in (lance, lance_fw):
        uri = str(tmp_path / module.__name__)
        module.write_dataset(table, uri, data_storage_version=request.param, max_rows_per_file=8)
        module.dataset(uri).delete("a = 3 OR a = 17")
        out.append(uri)
    return out


@pytest.mark.parametrize("transforms", [
    {"b": "a * 2", "u": "upper(s)"},
    {"flag": "a > 10 AND s IS NOT NULL", "const": "'x'"},
    {"sx": "st.x + 1"},
])
def test_add_columns_from_sql_matches_pylance(pair, transforms):
    theirs, ours = pair
    lance.dataset(theirs).add_columns(transforms)
    ds = lance_fw.dataset(ours)
    ds.add_columns(transforms)
    assert ds.version == lance.dataset(theirs).version
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert_tables_equal(lance.dataset(ours).to_table(), lance_fw.dataset(ours).to_table())
    frag = lance.dataset(ours).get_fragments()[0]
    assert len(frag.data_files()) == 2  # the old file untouched, one file of new columns
    assert lance.dataset(ours).take([0, 5, 15]).equals(lance.dataset(theirs).take([0, 5, 15]))


def test_add_null_columns_and_drop_columns(pair):
    theirs, ours = pair
    for module, uri in ((lance, theirs), (lance_fw, ours)):
        module.dataset(uri).add_columns([pa.field("n", pa.int32()), pa.field("t", pa.string())])
        module.dataset(uri).drop_columns(["s"])
    assert lance.dataset(ours).schema.names == ["a", "st", "n", "t"]
    assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
    assert_tables_equal(lance.dataset(ours).to_table(), lance_fw.dataset(ours).to_table())
    lance.write_dataset(pa.table({"a": pa.array([99], pa.int64()), "st": pa.array([{"x": 1}]),
                                  "n": pa.array([7], pa.int32()), "t": ["z"]}), ours, mode="append")
    assert lance_fw.dataset(ours).to_table(filter="a = 99").column("n").to_pylist() == [7]


def test_errors_and_conflicts(pair):
    _, ours = pair
    ds = lance_fw.dataset(ours)
    with pytest.raises(InvalidArgumentError, match="already exist"):
        ds.add_columns({"a": "a + 1"})
    with pytest.raises(SchemaError, match="no column"):
        ds.drop_columns(["zzz"])
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        ds.drop_columns(["a", "s", "st"])
    stale = lance_fw.dataset(ours)
    lance.write_dataset(pa.table({"a": pa.array([50], pa.int64()), "s": ["q"], "st": pa.array([{"x": 0}])}), ours,
                        mode="append")
    with pytest.raises(CommitConflictError):
        stale.add_columns({"b": "a + 1"})
    assert lance.dataset(ours).schema.names == ["a", "s", "st"]


def test_alter_columns_matches_pylance(pair):
    theirs, ours = pair
    changes = [({"path": "a", "name": "b"}, {"path": "st.x", "name": "y"}),
               ({"path": "b", "data_type": pa.int32()}, {"path": "s", "name": "text"}),
               ({"path": "b", "nullable": False},)]
    for change in changes:
        lance.dataset(theirs).alter_columns(*change)
        lance_fw.dataset(ours).alter_columns(*change)
        assert lance.dataset(ours).schema == lance.dataset(theirs).schema
        assert_tables_equal(lance.dataset(theirs).to_table(), lance.dataset(ours).to_table())
        assert_tables_equal(lance.dataset(ours).to_table(), lance_fw.dataset(ours).to_table())
    assert lance.dataset(ours).version == lance.dataset(theirs).version
    ds = lance_fw.dataset(ours)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        ds.alter_columns({"path": "nope", "name": "z"})
    with pytest.raises(InvalidArgumentError, match="taken"):
        ds.alter_columns({"path": "b", "name": "text"})
    with pytest.raises(InvalidArgumentError, match="holds nulls"):
        ds.alter_columns({"path": "text", "nullable": False})
