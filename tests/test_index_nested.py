"""Scalar indices on a struct's child (``p.a``), differential against pylance 14.

pylance indexes ``p.a`` as the column ``get_field(p, 'a')``: the index metadata names the child's
field id, ``describe_indices`` says ``field_names=['p.a']``, the default name is ``p.a_idx`` (a
child holding a dot is quoted: ``p.`x.y`_idx``) and a row whose parent is null has a null value.
Here each library builds the index and the other lists it, plans with it and returns what pylance
returns, over several fragments crossing 4096-row pages, with null parents and null children,
before and after appends, deletes, ``optimize_indices`` and ``drop_index``.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError

ROWS = 12_000  # 3 fragments of 5000 / 5000 / 2000: pages of 4096 rows cross each
ROWS_PER_FILE = 5000
LIBS = {"lance_fw": lance_fw, "pylance": lance}


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    a = pa.array([None if i % 97 == 0 else int(i % 300) for i in ids], pa.int64())
    b = pa.array([None if i % 89 == 0 else str(i % 10) for i in ids], pa.string())
    dotted = pa.array((ids % 11).astype(np.int32))
    inner = pa.StructArray.from_arrays([pa.array(ids)], names=["r"])
    labels = pa.array([[int(i % 5), int(i % 7)] for i in ids], pa.list_(pa.int64()))
    flags = pa.array(
        ids % 3 != 0
    )  # no null flags: pylance 14 cannot write null booleans in a nullable struct split into files
    parent_null = pa.array(ids % 53 == 0)
    p = pa.StructArray.from_arrays(
        [a, b, dotted, inner, labels, flags], names=["a", "b", "x.y", "Q", "l", "t"], mask=parent_null
    )
    up = pa.StructArray.from_arrays([pa.array(ids * 2)], names=["Lo"])
    return pa.table({"id": ids, "p": p, "Up": up})


#: case -> (column as given, index type, index name both libraries choose, filters it answers)
CASES = {
    "btree": (
        "p.a",
        "BTREE",
        "p.a_idx",
        [
            "p.a = 7",
            "p.a IN (1, 2, 299)",
            "p.a BETWEEN 3 AND 5",
            "p.a IS NULL",
            "p.a IS NOT NULL",
            "p.a > 250 AND id < 3000",
            "NOT (p.a = 7)",
            "`p`.`a` = 7",
            "p['a'] = 7",
            "p.a = 7 OR p.a = 8",
            "p.a != 7",
            "p.a NOT IN (1, 2)",
            "p.a > 3 AND p.a < 10",
            "p.a > 3 AND p.a < 10 AND p.a <= 8 AND id > 5",
            "p.a >= 3 AND p.a <= 3",
            "p.a = 7 AND p.b = '7'",
        ],
    ),
    "string": ("p.b", "BTREE", "p.b_idx", ["p.b = '3'", "p.b LIKE '3%'", "p.b IN ('1', '2')", "p.b > '5'"]),
    "bool": ("p.t", "BITMAP", "p.t_idx", []),
    "bitmap": ("p.b", "BITMAP", "p.b_idx", ["p.b = '3'", "p.b IN ('1', '2') AND id < 6000", "p.b IS NULL"]),
    "zonemap": ("p.a", "ZONEMAP", "p.a_idx", ["p.a = 7", "p.a > 290"]),
    "deep": ("p.Q.r", "BTREE", "p.Q.r_idx", ["p.Q.r = 3", "p.Q.r < 10", "p.Q.r IS NULL"]),
    "dotted": ("p.`x.y`", "BTREE", "p.`x.y`_idx", ["p.`x.y` = 3", "p.`x.y` IN (1, 4)"]),
    "case": ("up.lo", "BTREE", "Up.Lo_idx", ["Up.Lo = 40", "up.Lo < 10", "`Up`.`Lo` >= 23990"]),
}
#: filters lance_fw answers from an index pylance does not use for them (a BITMAP answers LIKE
#: 'p%' in lance_fw, top-level or nested; pylance scans): compared on results only
ANSWERED_BY_FW_ONLY = ["p.b LIKE '3%'"]
#: filters no index answers in pylance (so none in lance_fw): whole struct, LIKE, list children
UNINDEXED = [
    "p IS NULL",
    "array_has_any(p.l, [3])",
    "3 < p.a",
    "p.a IN (1, NULL)",
    "p.t",
    "p.t = true",
    "NOT p.t",
]


def _index_line(ds: lance.LanceDataset | lance_fw.LanceDataset, f: str) -> str:
    lines = [x.strip() for x in ds.scanner(filter=f).explain_plan().splitlines() if "ScalarIndexQuery" in x]
    return lines[0] if lines else ""


def _used(line: str) -> list[tuple[str, str]]:
    """The (index name, type) pairs a ScalarIndexQuery line consults."""
    return re.findall(r"@([^\s()]+)\((\w+)\)", line)


def _describe(ds: lance.LanceDataset | lance_fw.LanceDataset) -> list[tuple[object, ...]]:
    return sorted(
        (d.name, list(d.fields), list(d.field_names), d.index_type, d.num_rows_indexed)
        for d in ds.describe_indices()
    )


def _same_results(fw: lance_fw.LanceDataset, pl: lance.LanceDataset, filters: list[str]) -> None:
    for f in filters:
        want = pl.to_table(filter=f).sort_by("id")
        got = fw.to_table(filter=f).sort_by("id")
        assert got.equals(want), f
        assert got.equals(fw.to_table(filter=f, use_scalar_index=False).sort_by("id")), f
        assert fw.count_rows(f) == pl.count_rows(f), f


def _same_plans(fw: lance_fw.LanceDataset, pl: lance.LanceDataset, filters: list[str], name: str) -> None:
    for f in filters:
        want, got = _index_line(pl, f), _index_line(fw, f)
        assert _used(got) == _used(want), (f, got, want)
        assert f"@{name}(" in want, (f, want)
        assert got == want, f


def _stats(ds: lance.LanceDataset | lance_fw.LanceDataset, name: str) -> dict[str, object]:
    out = dict(ds.stats.index_stats(name))
    out.pop("updated_at_timestamp_ms")
    return out


@pytest.mark.parametrize("builder", sorted(LIBS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_nested_index_built_by_one_is_listed_and_used_by_the_other(
    tmp_path: Path, case: str, builder: str
) -> None:
    column, index_type, name, filters = CASES[case]
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS), uri, max_rows_per_file=ROWS_PER_FILE)
    LIBS[builder].dataset(uri).create_scalar_index(column, index_type)
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert _describe(fw) == _describe(pl)
    assert [d.name for d in pl.describe_indices()] == [name]
    assert fw.list_indices()[0]["fields"] == pl.describe_indices()[0].field_names
    _same_plans(fw, pl, filters, name)
    for f in UNINDEXED:
        if f not in filters:
            assert _index_line(fw, f) == "" == _index_line(pl, f), f
    _same_results(fw, pl, filters + UNINDEXED + ANSWERED_BY_FW_ONLY)
    assert _stats(fw, name) == _stats(pl, name)


@pytest.mark.parametrize("builder", sorted(LIBS))
@pytest.mark.parametrize("writer", sorted(LIBS))
def test_append_delete_optimize_drop(tmp_path: Path, builder: str, writer: str) -> None:
    """After an append (uncovered fragment, scanned) and a delete, both answer alike; after
    ``optimize_indices`` the index covers every fragment in both; ``drop_index`` removes it."""
    column, index_type, name, filters = CASES["btree"]
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS), uri, max_rows_per_file=ROWS_PER_FILE)
    LIBS[builder].dataset(uri).create_scalar_index(column, index_type)
    LIBS[writer].write_dataset(_table(3000, start=ROWS), uri, mode="append")
    LIBS[writer].dataset(uri).delete("id % 7 = 0 OR p.a = 8")
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    _same_plans(fw, pl, filters, name)
    _same_results(fw, pl, filters + UNINDEXED)
    assert _stats(fw, name) == _stats(pl, name)

    LIBS[builder].dataset(uri).optimize.optimize_indices()
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert _describe(fw) == _describe(pl)
    assert fw.stats.index_stats(name)["num_unindexed_fragments"] == 0
    assert pl.stats.index_stats(name)["num_unindexed_fragments"] == 0
    _same_plans(fw, pl, filters, name)
    _same_results(fw, pl, filters)

    LIBS[builder].dataset(uri).drop_index(name)
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert fw.describe_indices() == [] and pl.describe_indices() == []
    assert _index_line(fw, "p.a = 7") == "" == _index_line(pl, "p.a = 7")
    _same_results(fw, pl, filters[:3])


def test_default_names_as_pylance(tmp_path: Path) -> None:
    """Several indices on one child: same type replaces, another type gets ``_2``; a label list
    on a child is built but not used for ``array_has_any`` (as in pylance)."""
    steps = [
        ("p.a", "ZONEMAP", {}),
        ("p.a", "BTREE", {}),
        ("`p`.`a`", "BTREE", {}),
        ("p.l", "LABEL_LIST", {}),
        ("P.a", "BITMAP", {"name": "mine"}),
    ]
    described = {}
    for lib_name, lib in LIBS.items():
        uri = str(tmp_path / f"{lib_name}.lance")
        ds = lib.write_dataset(_table(ROWS), uri, max_rows_per_file=ROWS_PER_FILE)
        for column, index_type, kw in steps:
            ds.create_scalar_index(column, index_type, **kw)
        described[lib_name] = _describe(lib.dataset(uri))
        assert _index_line(lib.dataset(uri), "array_has_any(p.l, [3])") == ""
    assert described["lance_fw"] == described["pylance"]
    assert [d[0] for d in described["pylance"]] == ["mine", "p.a_idx", "p.a_idx_2", "p.l_idx"]


@pytest.mark.parametrize("column", ["p.zz", "p.x.y", "zz", "p", "p.Q"])
def test_refused_columns(tmp_path: Path, column: str) -> None:
    """A missing path, or a struct itself, is refused by both (pylance: KeyError / TypeError)."""
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(1000), uri)
    with pytest.raises((KeyError, TypeError)):
        ds.create_scalar_index(column, "BTREE")
    with pytest.raises(LanceError):
        lance_fw.dataset(uri).create_scalar_index(column, "BTREE")


def test_zonemap_on_a_struct_is_refused(tmp_path: Path) -> None:
    """pylance builds a ZONEMAP over a whole struct; lance_fw refuses it rather than guess what
    such an index holds."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(1000), uri)
    with pytest.raises(LanceError):
        lance_fw.dataset(uri).create_scalar_index("p", "ZONEMAP")


#: top-level filters whose ScalarIndexQuery text lance_fw writes as pylance does (the planner's
#: text is rendered from the query: flipped comparisons, BETWEEN as a range, short IN lists as
#: ORs, != as NOT, ranges folded under AND, unquoted strings, dates, floats as Rust prints them)
TOP_LEVEL_TEXT = [
    "id = 3",
    "id IN (1, 2)",
    "id IN (1, 2, 3)",
    "id IN (1, 2, 3, 4)",
    "id NOT IN (1, 2)",
    "id BETWEEN 3 AND 5",
    "3 < id",
    "id > 3 AND id < 10",
    "id > 3 AND id > 5",
    "id >= 3 AND id <= 3",
    "id > 3 AND id < 10 AND s = 'a'",
    "id != 3",
    "id IN (1, NULL)",
    "s = 'x'",
    "s = 'it''s'",
    "s IN ('a', 'b', 'c', 'd')",
    "s LIKE 'ab%'",
    "f = 1.5",
    "f > 2",
    "f > 1e20",
    "f > 1e-7",
    "g = 0.1",
    "g BETWEEN 0.1 AND 0.3",
    "d = DATE '2020-01-03'",
    "bo",
    "NOT bo",
    "array_has_any(tags, ['t1'])",
    "array_has_all(tags, ['t1', 't2'])",
    "c IN (1, 2)",
    "id = 1 OR s = 'a' OR c = 2",
]


def test_plan_text_as_pylance(tmp_path: Path) -> None:
    n = 3000
    table = pa.table(
        {
            "id": pa.array(range(n)),
            "s": pa.array([str(i % 20) for i in range(n)]),
            "f": pa.array([i / 7 for i in range(n)]),
            "g": pa.array([i / 10 for i in range(n)], pa.float32()),
            "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 100) for i in range(n)]),
            "bo": pa.array([i % 2 == 0 for i in range(n)]),
            "tags": pa.array([[f"t{i % 5}", f"t{i % 3}"] for i in range(n)]),
            "c": pa.array([i % 5 for i in range(n)], pa.int32()),
        }
    )
    indices = [
        ("id", "BTREE"),
        ("s", "BTREE"),
        ("f", "BTREE"),
        ("g", "BTREE"),
        ("d", "BTREE"),
        ("bo", "BITMAP"),
        ("tags", "LABEL_LIST"),
        ("c", "BITMAP"),
    ]
    opened = {}
    for lib_name, lib in LIBS.items():
        ds = lib.write_dataset(table, str(tmp_path / f"{lib_name}.lance"), max_rows_per_file=2000)
        for column, index_type in indices:
            ds.create_scalar_index(column, index_type)
        opened[lib_name] = lib.dataset(str(tmp_path / f"{lib_name}.lance"))
    fw, pl = opened["lance_fw"], opened["pylance"]
    for f in TOP_LEVEL_TEXT:
        assert _index_line(fw, f) == _index_line(pl, f), f
        assert fw.to_table(filter=f).equals(pl.to_table(filter=f)), f


@pytest.mark.parametrize("builder", sorted(LIBS))
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_file_versions(tmp_path: Path, version: str, builder: str) -> None:
    """The child is read alone (its siblings are not) from each file version; 2.0 stores no
    struct validity, so its parents are never null."""
    table = _table(ROWS)
    if version == "2.0":
        p = table.column("p").combine_chunks()
        children = [p.field(i) for i in range(p.type.num_fields)]
        plain = pa.StructArray.from_arrays(children, fields=list(p.type))
        table = table.set_column(1, "p", plain)
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(table, uri, max_rows_per_file=ROWS_PER_FILE, data_storage_version=version)  # type: ignore[arg-type]
    LIBS[builder].dataset(uri).create_scalar_index("p.Q.r", "BTREE")
    LIBS[builder].dataset(uri).create_scalar_index("p.b", "BITMAP")
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert _describe(fw) == _describe(pl)
    filters = ["p.Q.r < 10", "p.Q.r IS NULL", "p.b = '4' AND p.Q.r > 11000", "p.b IS NULL"]
    for f in filters:
        assert _index_line(fw, f) == _index_line(pl, f) != "", f
    _same_results(fw, pl, filters)


@pytest.mark.parametrize("builder", sorted(LIBS))
def test_full_text_index_on_a_child(tmp_path: Path, builder: str) -> None:
    """An INVERTED index on ``p.b``: listed and described alike, pylance searches the one
    lance_fw built; lance_fw's full-text search does not look at nested indices yet (it says so)."""
    n = 5000
    p = pa.StructArray.from_arrays([pa.array([f"word{i % 13} other{i % 7}" for i in range(n)])], names=["b"])
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(n)), "p": p}), uri, max_rows_per_file=2000)
    LIBS[builder].dataset(uri).create_scalar_index("p.b", "INVERTED")
    fw, pl = lance_fw.dataset(uri), lance.dataset(uri)
    assert _describe(fw) == _describe(pl)
    assert _stats(fw, "p.b_idx") == _stats(pl, "p.b_idx")
    assert pl.to_table(full_text_query="word3").num_rows == len(range(3, n, 13))
    with pytest.raises(LanceError):
        fw.to_table(full_text_query="word3")
