"""Filters of ``NOT`` / ``AND`` / ``OR`` over index-answerable comparisons, drawn by hypothesis, on
columns holding nulls (two indexed, one not), against pylance: the rows (and their order) and
``count_rows``.

Where indices answer the whole filter exactly, lance_fw re-checks nothing (``IndexPlan.exact``), so
its three-valued logic (``index_plan.Found``: the rows where each part is null) must be SQL's: a
wrong null set returns rows pylance does not, which only a test like this one sees. IN lists (with
NULL items, and NOT IN) meet each other under AND / OR, where DataFusion folds two lists into one
or into a constant before it sees a row (``query/in_lists``): ``NOT (d IN (1) AND d IN (0))`` keeps
the rows where d is null.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_fw

#: Rows and rows per file: three fragments, several 1024-value blocks each.
ROWS, PER_FILE = 7000, 2500


@pytest.fixture(scope="module", params=["BTREE", "BITMAP"])
def path(request, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp(request.param.lower()) / "t.lance")
    rng = np.random.default_rng(29)
    table = pa.table(
        {
            "x": np.arange(ROWS),
            "c": pa.array(rng.integers(0, 8, ROWS), mask=rng.random(ROWS) < 0.15),
            "d": pa.array(rng.integers(0, 6, ROWS), mask=rng.random(ROWS) < 0.1),
            "e": pa.array(rng.integers(0, 6, ROWS), mask=rng.random(ROWS) < 0.1),  # no index
        }
    )
    lance.write_dataset(table, out, max_rows_per_file=PER_FILE)
    ds = lance.dataset(out)
    ds.create_scalar_index("c", request.param)
    ds.create_scalar_index("d", request.param)
    lance.dataset(out).delete("x % 31 = 5")  # after the indices: among their answers
    return out


def _leaves() -> st.SearchStrategy[str]:
    column = st.sampled_from(["c", "d", "e"])
    value = st.integers(0, 8)
    item = st.one_of(value.map(str), st.just("NULL"))
    return st.one_of(
        st.builds(
            lambda c, op, v: f"{c} {op} {v}",
            column,
            st.sampled_from(["=", "<", "<=", ">", ">=", "<>"]),
            value,
        ),
        st.builds(
            lambda c, neg, items: f"{c} {'NOT ' if neg else ''}IN ({', '.join(items)})",
            column,
            st.booleans(),
            st.lists(item, min_size=1, max_size=3),
        ),
        st.builds(lambda c, neg: f"{c} IS {'NOT ' if neg else ''}NULL", column, st.booleans()),
        st.builds(lambda c, lo, hi: f"{c} BETWEEN {lo} AND {hi}", column, value, value),
    )


def _filters() -> st.SearchStrategy[str]:
    return st.recursive(
        _leaves(),
        lambda inner: st.one_of(
            st.builds(lambda a: f"NOT ({a})", inner),
            st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
            st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        ),
        max_leaves=4,
    )


@settings(max_examples=60, deadline=None)
@given(where=_filters())
def test_index_answered_logic_matches_pylance(path, where):
    theirs = lance.dataset(path).to_table(filter=where, columns=["x", "c", "d", "e"])
    ours = lance_fw.dataset(path).to_table(filter=where, columns=["x", "c", "d", "e"])
    assert ours.equals(theirs.cast(ours.schema)), where
    assert lance_fw.dataset(path).count_rows(where) == lance.dataset(path).count_rows(where), where
