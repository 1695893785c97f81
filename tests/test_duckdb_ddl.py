"""``ALTER TABLE`` on attached Lance tables and the maintenance table functions in SQL.

Differential: each statement is compared with pylance's own call on a copy of the dataset.
"""

from __future__ import annotations

import shutil

import lance
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.duckdb
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 9_000


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([i % 90 for i in range(ROWS)], pa.int32()),
            "score": pa.array([i / 4 for i in range(ROWS)], pa.float64()),
        }
    )
    lance.write_dataset(table, str(root / "t.lance"), max_rows_per_file=4000)
    return root


@pytest.fixture
def con(root):
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{root}' AS ns (TYPE LANCE)")
    return con


def _pair(root):
    copy = root.parent / "copy.lance"
    shutil.copytree(root / "t.lance", copy)
    return str(root / "t.lance"), str(copy)


def _same(ours: str, theirs: str, versions: bool = True) -> None:
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.schema == b.schema
    assert a.to_table().equals(b.to_table())
    if versions:
        assert a.version == b.version


@pytest.mark.parametrize(
    ("statement", "pylance_call"),
    [
        (
            "ALTER TABLE ns.main.t ADD COLUMN age_plus_one BIGINT DEFAULT (age + 1)",
            lambda ds: ds.add_columns({"age_plus_one": "CAST((age + 1) AS BIGINT)"}),
        ),
        (
            "ALTER TABLE ns.main.t ADD COLUMN c INTEGER DEFAULT 42",
            lambda ds: ds.add_columns({"c": "CAST((42) AS INT)"}),
        ),
        (
            "ALTER TABLE ns.main.t ADD COLUMN note VARCHAR",
            lambda ds: ds.add_columns(pa.field("note", pa.string())),
        ),
        ("ALTER TABLE ns.main.t DROP COLUMN score", lambda ds: ds.drop_columns(["score"])),
        (
            "ALTER TABLE ns.main.t RENAME COLUMN score TO score2",
            lambda ds: ds.alter_columns({"path": "score", "name": "score2"}),
        ),
        (
            "ALTER TABLE ns.main.t ALTER COLUMN age TYPE BIGINT",
            lambda ds: ds.alter_columns({"path": "age", "data_type": pa.int64()}),
        ),
        (
            "ALTER TABLE ns.main.t ALTER COLUMN age SET NOT NULL",
            lambda ds: ds.alter_columns({"path": "age", "nullable": False}),
        ),
    ],
)
def test_alter_table_matches_pylance(root, con, statement, pylance_call):
    ours, theirs = _pair(root)
    con.execute(statement)
    pylance_call(lance.dataset(theirs))
    _same(ours, theirs)


def test_a_default_lance_would_compute_differently_is_refused(root, con):
    with pytest.raises(UnsupportedFeatureError, match="DEFAULT"):
        con.execute("ALTER TABLE ns.main.t ADD COLUMN half DOUBLE DEFAULT (age / 2)")
    with pytest.raises(UnsupportedFeatureError, match="DEFAULT"):
        con.execute("ALTER TABLE ns.main.t ADD COLUMN h VARCHAR DEFAULT md5('x')")
    assert lance.dataset(str(root / "t.lance")).version == 1


def test_compact_files_matches_pylance(root, con):
    ours, theirs = _pair(root)
    for path in (ours, theirs):
        lance.write_dataset(pa.table({"id": [-1], "age": pa.array([1], pa.int32()), "score": [0.0]}), path, mode="append")
    assert con.execute("SELECT Count FROM lance_compact_files('ns.main.t')").fetchall() == [(1,)]
    lance.dataset(theirs).optimize.compact_files()
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert [f.count_rows() for f in a.get_fragments()] == [f.count_rows() for f in b.get_fragments()]
    _same(ours, theirs)


def test_compaction_makes_the_versions_and_fragment_ids_pylance_makes(root):
    """pylance 14 commits ReserveFragments before the Rewrite: two versions, and the new fragments
    take the reserved ids."""
    ours, theirs = _pair(root)
    lance_fw.dataset(ours).optimize.compact_files()
    lance.dataset(theirs).optimize.compact_files()
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.version == b.version
    assert [f.fragment_id for f in a.get_fragments()] == [f.fragment_id for f in b.get_fragments()]
    assert [v["version"] for v in a.versions()] == [v["version"] for v in b.versions()]


def test_versions_and_cleanup_match_pylance(root, con):
    path = str(root / "t.lance")
    con.execute("DELETE FROM ns.main.t WHERE id < 5")
    expected = [(v["version"], v["timestamp"]) for v in lance.dataset(path).versions()]
    assert con.execute(f"SELECT * FROM lance_versions('{path}') ORDER BY version").fetchall() == expected
    assert con.execute("SELECT Count FROM lance_cleanup_old_versions('ns.t', 0, false)").fetchall() == [(1,)]
    assert [v["version"] for v in lance.dataset(path).versions()] == [2]


def test_table_function_argument_errors(con):
    with pytest.raises(InvalidArgumentError, match="argument"):
        con.execute("SELECT * FROM lance_cleanup_old_versions('ns.main.t')")
    with pytest.raises(InvalidArgumentError, match="NULL or empty"):
        con.execute("SELECT * FROM lance_versions(NULL)")


def test_config_functions_match_pylance(root, con):
    path = str(root / "t.lance")
    assert con.execute("SELECT Count FROM lance_set_config('ns.main.t', 'k1', 'v1')").fetchall() == [(1,)]
    con.execute("SELECT * FROM lance_set_config('ns.t', 'k2', 42)").fetchall()  # a value is VARCHAR, as in the extension
    assert lance.dataset(path).config() == {"k1": "v1", "k2": "42"}
    assert con.execute("SELECT Key, Value FROM lance_config('ns.main.t')").fetchall() == sorted(lance.dataset(path).config().items())
    con.execute("SELECT * FROM lance_unset_config('ns.main.t', 'k1')").fetchall()
    assert lance.dataset(path).config() == {"k2": "42"}


def test_table_schema_and_column_metadata_match_pylance(root, con):
    path = str(root / "t.lance")
    con.execute("SELECT * FROM lance_set_table_metadata('ns.main.t', 'owner', 'ana')").fetchall()
    con.execute("COMMENT ON TABLE ns.main.t IS 'trips'")
    assert lance.dataset(path).metadata == {"owner": "ana", "comment": "trips"}
    assert con.execute("SELECT * FROM lance_table_metadata('ns.main.t')").fetchall() == [("comment", "trips"), ("owner", "ana")]

    con.execute("SELECT * FROM lance_set_schema_metadata('ns.main.t', 'sk', 'sv')").fetchall()
    assert lance.dataset(path).schema_metadata == {"sk": "sv"}
    con.execute("SELECT * FROM lance_unset_schema_metadata('ns.main.t', 'sk')").fetchall()
    assert lance.dataset(path).schema_metadata == {}

    con.execute("COMMENT ON COLUMN ns.main.t.age IS 'years'")
    con.execute("SELECT * FROM lance_set_column_metadata('ns.main.t', 'age', 'unit', 'y')").fetchall()
    assert lance.dataset(path).schema.field("age").metadata == {b"comment": b"years", b"unit": b"y"}
    rows = con.execute("SELECT * FROM lance_column_metadata('ns.main.t', 'age')").fetchall()
    assert rows == [("comment", "years"), ("unit", "y")]
    con.execute("SELECT * FROM lance_unset_column_metadata('ns.main.t', 'age', 'unit')").fetchall()
    assert lance.dataset(path).schema.field("age").metadata == {b"comment": b"years"}
    with pytest.raises(InvalidArgumentError, match="nope"):
        con.execute("COMMENT ON COLUMN ns.main.t.nope IS 'x'")


def test_indices_listing_matches_pylance(root, con):
    path = str(root / "t.lance")
    lance.dataset(path).create_scalar_index("age", "BTREE", name="age_idx")
    expected = [(d.name, ",".join(d.field_names)) for d in lance.dataset(path).describe_indices()]
    assert con.execute("SELECT * FROM lance_indices('ns.main.t')").fetchall() == expected == [("age_idx", "age")]
