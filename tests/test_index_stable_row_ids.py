"""Scalar and full-text indices on datasets with stable row ids, against pylance 14.

Before, lance_fw refused to build them and scanned past pylance's. pylance 14's BITMAP, LABEL_LIST
and INVERTED indices hold row ids there, its BTREE and ZONEMAP row addresses (``holds_row_ids``
on each type); lance_fw now builds each as pylance does and maps ids to this version's live rows.

The rows are made so that ids and addresses differ: several fragments (ids run on across them),
rows deleted, rows updated (they move to a new fragment and keep their ids) and, where the index
is built after it, a pylance compaction (every row moves). Each library answers with the other's
index exactly as pylance does with its own, and as an unindexed scan does (row ids and addresses
included), and optimizes it after an append.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_fw

ROWS = 12_000
FRAGMENT_ROWS = 4_000  # 3 fragments, each past a 4096-row page boundary in the compacted file
LIBS = {"lance_fw": lance_fw, "pylance": lance}

CASES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "BTREE": ("id", [{"filter": "id = 4"}, {"filter": "id IN (5, 4001, 8002, 11999)"}, {"filter": "id < 30"},
                     {"filter": "NOT (id = 4)"}, {"filter": "id BETWEEN 4090 AND 4110 AND cat > 2"}]),
    "BITMAP": ("cat", [{"filter": "cat = 3"}, {"filter": "cat IN (1, 2) AND id < 600"}, {"filter": "cat IS NULL"},
                       {"filter": "cat = 103"}]),
    "LABEL_LIST": ("tags", [{"filter": "array_has_any(tags, ['t4'])"}, {"filter": "array_has_all(tags, ['t1', 's2'])"}]),
    "ZONEMAP": ("id", [{"filter": "id = 4"}, {"filter": "id BETWEEN 100 AND 130"}, {"filter": "id > 11990"}]),
    "INVERTED": ("text", [{"full_text_query": "w4"}, {"full_text_query": "common"}]),
}


def _table(rows: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "cat": pa.array((ids * 7 % 10).astype(np.int32), mask=ids % 53 == 0),
            "tags": pa.array([[f"t{i % 5}", f"s{i % 3}"] for i in ids.tolist()]),
            "text": pa.array([f"w{i % 7} common row {i % 11}" for i in ids.tolist()]),
        }
    )


def _mutate(uri: str) -> None:
    """Deletes and updates (updated rows move to a new fragment, keeping their ids)."""
    ds = lance.dataset(uri)
    ds.delete("id % 5 = 0 AND id < 3000")
    ds.update({"cat": "cat + 100"}, where="id % 97 = 3")


def _answers(lib: Any, uri: str, query: dict[str, Any], **extra: Any) -> pa.Table:
    columns = ["id", "cat", "tags", "text"]
    table = lib.dataset(uri).to_table(columns=columns, with_row_id=True, with_row_address=True, **query, **extra)
    if "_score" in table.column_names:  # BM25 scores: compared to float32 precision
        table = table.set_column(
            table.column_names.index("_score"), "_score", pa.compute.round(table.column("_score"), 4)
        )
    return table.sort_by("id")


def _check(uri: str, queries: list[dict[str, Any]]) -> None:
    for query in queries:
        expected = _answers(lance, uri, query)
        assert _answers(lance_fw, uri, query).equals(expected), query
        if "filter" in query:  # the index answers as a scan does (pylance's index too)
            assert _answers(lance_fw, uri, query, use_scalar_index=False).equals(expected), query


@pytest.mark.parametrize("when", ["before changes", "after compaction"])
@pytest.mark.parametrize("builder", list(LIBS))
@pytest.mark.parametrize("index_type", list(CASES))
def test_index_on_stable_row_ids(tmp_path: Path, index_type: str, builder: str, when: str) -> None:
    column, queries = CASES[index_type]
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(ROWS), uri, max_rows_per_file=FRAGMENT_ROWS, enable_stable_row_ids=True)
    if when == "after compaction":
        _mutate(uri)
        lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=ROWS * 2)
    LIBS[builder].dataset(uri).create_scalar_index(column, index_type, name="x")
    if when == "before changes":
        _mutate(uri)
    ids = lance.dataset(uri).to_table(columns=[], with_row_id=True, with_row_address=True)
    assert ids.column("_rowid") != ids.column("_rowaddr")  # the two differ: the test can fail
    _check(uri, queries)
    # rows appended, then the index optimized by the other library: both still answer alike
    lance.write_dataset(_table(3_000, ROWS), uri, mode="append")
    other = "pylance" if builder == "lance_fw" else "lance_fw"
    LIBS[other].dataset(uri).optimize.optimize_indices()
    described = lance.dataset(uri).describe_indices()
    assert [d.num_rows_indexed for d in described] == [lance.dataset(uri).count_rows()]
    _check(uri, queries)
