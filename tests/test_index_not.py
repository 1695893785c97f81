"""``NOT`` over scalar-index answers, with nulls in the indexed columns, against pylance.

SQL's third value: ``NOT (c = 3)`` is not true where ``c`` is null. pylance's plan answers such a
``NOT`` from its indices exactly (it re-checks nothing), and so hands on each fragment's matches as
batches of their own; lance_fw tracks the rows where each part is null (``index_plan.Found``) to do
the same. Rows, order, every batch's length and ``count_rows`` (counted from the exact answers, less
the rows deleted since the indices were built) are compared, for BTREE and BITMAP indices.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

#: Rows and fragments: several 1024-value blocks a fragment.
ROWS, PER_FILE = 9000, 4000

FILTERS = [
    "c <> 3",
    "NOT (c = 3)",
    "NOT (c < 3)",
    "NOT (c >= 2 AND c <= 5)",
    "c NOT IN (1, 4, 7)",
    "NOT (c = 3 OR c IS NULL)",
    "NOT (c IS NULL)",
    "NOT (c = 3 AND d > 50)",
    "NOT (c = 3 OR d > 50)",
    "NOT (NOT (c = 3))",
    "NOT (c = 3) AND d < 20",
    "NOT (s = 'k7')",
    "NOT (s LIKE 'k1%')",
]


@pytest.fixture(scope="module", params=["BTREE", "BITMAP"])
def path(request, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp(request.param.lower()) / "t.lance")
    rng = np.random.default_rng(11)
    c = rng.integers(0, 10, ROWS)
    d = rng.integers(0, 100, ROWS)
    s = np.array([f"k{v}" for v in rng.integers(0, 30, ROWS)])
    table = pa.table(
        {
            "x": np.arange(ROWS),
            "c": pa.array(c, mask=rng.random(ROWS) < 0.1),
            "d": pa.array(d, mask=rng.random(ROWS) < 0.05),
            "s": pa.array(s, mask=rng.random(ROWS) < 0.08),
        }
    )
    lance.write_dataset(table, out, max_rows_per_file=PER_FILE)
    ds = lance.dataset(out)
    ds.delete("x % 97 = 0")
    for column in ("c", "d", "s"):
        ds.create_scalar_index(column, request.param)
    # rows deleted after the indices were built: among their answers, dropped by scans and counts
    lance.dataset(out).delete("x % 89 = 3")
    return out


@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("options", [{}, {"batch_size": 700, "columns": ["x", "c"]}], ids=str)
def test_not_over_indices_matches_pylance(path, where, options):
    _assert_reads_like_pylance(path, where, options)


def _assert_reads_like_pylance(path: str, where: str, options: dict) -> None:
    """Batch lengths, rows and ``count_rows`` of ``where`` read with ``options`` equal pylance's."""
    theirs = list(lance.dataset(path).to_batches(filter=where, **options))
    ours = list(lance_fw.dataset(path).to_batches(filter=where, **options))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert pa.Table.from_batches(ours).equals(pa.Table.from_batches(theirs).cast(ours[0].schema))
    assert lance_fw.dataset(path).count_rows(where) == lance.dataset(path).count_rows(where)


@pytest.fixture(scope="module")
def appended(tmp_path_factory) -> str:
    """A BTREE-indexed table, then rows appended (a fragment the index does not cover) and rows
    deleted across both: a ``NOT`` the index answers covers only the indexed fragments, held as
    the rows it leaves out (``query/address_sets``), and the new fragment is scanned."""
    out = str(tmp_path_factory.mktemp("appended") / "t.lance")
    rng = np.random.default_rng(12)

    def rows(start: int, n: int) -> pa.Table:
        return pa.table(
            {
                "x": np.arange(start, start + n),
                "c": pa.array(rng.integers(0, 10, n), mask=rng.random(n) < 0.1),
            }
        )

    lance.write_dataset(rows(0, ROWS), out, max_rows_per_file=PER_FILE)
    lance.dataset(out).create_scalar_index("c", "BTREE")
    lance.write_dataset(rows(ROWS, 5000), out, mode="append")
    lance.dataset(out).delete("x % 83 = 5")
    return out


@pytest.mark.parametrize("where", ["c <> 3", "NOT (c < 3)", "NOT (c IS NULL)", "c NOT IN (1, 4, 7)"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"batch_size": 1000, "columns": ["x"], "with_row_id": True},
        {"offset": 4100, "limit": 2500, "columns": ["c"]},
        {"limit": 10, "with_row_address": True},
    ],
    ids=str,
)
def test_not_over_covered_and_appended_fragments_matches_pylance(appended, where, options):
    _assert_reads_like_pylance(appended, where, options)
