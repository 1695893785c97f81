"""``EXPLAIN [ANALYZE]`` over Lance scans: each ``LANCE_SCAN`` entry reports what lance_fw was handed.

Checked against ground truth rather than wording: the rows out equal the rows pylance's scanner returns
for the same filter; a filter DuckDB keeps above the scan reports 0 filter bytes / parts; LIMIT/OFFSET
pushdown is reported false (DuckDB's Arrow scan never hands it to lance_fw); the query's own results are
unchanged by EXPLAIN having run before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw.duckdb
from lance_fw.duckdb.explain import filter_ir_bytes, filter_parts

ROWS = 10_000  # three fragments (4000 / 4000 / 2000), 4096-row pages crossed
pytestmark = pytest.mark.filterwarnings("ignore:Arrow output on a DB-API result")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("explain")
    table = pa.table({"id": pa.array(range(ROWS), pa.int64()), "x": [i % 7 for i in range(ROWS)]})
    lance.write_dataset(table, str(root / "t.lance"), max_rows_per_file=4000)
    return root


def _scans(plan: Any) -> list[dict[str, str]]:
    nodes = plan["operator"] if isinstance(plan, dict) else plan
    return [n["extra_info"] for n in nodes if n["name"] == "LANCE_SCAN"]


def _explain(con: lance_fw.duckdb.Connection, sql: str) -> list[dict[str, str]]:
    rows = con.execute(sql).fetchall()
    return _scans(json.loads(rows[0][1]))


def test_analyze_reports_the_rows_and_filter_lance_fw_scanned(lake: Path) -> None:
    path = str(lake / "t.lance")
    con = lance_fw.duckdb.connect()
    (scan,) = _explain(con, f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(id) FROM '{path}' WHERE x = 3")
    expected = lance.dataset(path).to_table(filter="x = 3").num_rows
    assert scan["Lance Rows Out"] == str(expected)
    assert scan["Lance Path"] == path
    assert scan["Lance Scan Mode"] == "dataset"
    assert scan["Lance Pushed Filter Parts"] == "1"
    assert int(scan["Lance Filter IR Bytes"]) > 0
    assert "full_filter=(x == 3)" in scan["Lance Plan"]
    assert scan["Lance Limit Offset Pushdown"] == "false"


def test_plain_explain_probes_without_reading(lake: Path) -> None:
    path = str(lake / "t.lance")
    con = lance_fw.duckdb.connect()
    sql = f"SELECT count(*) FROM '{path}' WHERE x = 3 AND id < 100"
    (scan,) = _explain(con, "EXPLAIN (FORMAT JSON) " + sql)
    assert scan["Lance Pushed Filter Parts"] == "2"
    assert int(scan["Lance Filter IR Bytes (Bind)"]) > 0
    assert "Lance Rows Out" not in scan
    assert scan["Lance Plan (Bind)"].startswith("LanceRead:")
    # the probe left nothing behind: the query itself still answers in full
    assert con.execute(sql).fetchall() == [(sum(1 for i in range(100) if i % 7 == 3),)]


def test_filter_duckdb_keeps_is_reported_as_not_pushed(lake: Path) -> None:
    con = lance_fw.duckdb.connect()
    sql = f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM '{lake / 't.lance'}' WHERE x % 2 = 1"
    (scan,) = _explain(con, sql)
    assert scan["Lance Pushed Filter Parts"] == "0"
    assert scan["Lance Filter IR Bytes"] == "0"
    assert scan["Lance Rows Out"] == str(ROWS)  # every row went to DuckDB's filter


def test_limit_is_not_claimed_as_pushed(lake: Path) -> None:
    con = lance_fw.duckdb.connect()
    (scan,) = _explain(con, f"EXPLAIN (FORMAT JSON) SELECT * FROM '{lake / 't.lance'}' LIMIT 2 OFFSET 1")
    assert scan["Lance Limit Offset Pushdown"] == "false"
    assert "Lance Limit" not in scan and "Lance Offset" not in scan


def test_attached_table_and_text_format(lake: Path) -> None:
    con = lance_fw.duckdb.connect()
    con.execute(f"ATTACH '{lake}' AS lake (TYPE LANCE)")
    text = con.execute("EXPLAIN ANALYZE SELECT sum(id) FROM lake.main.t WHERE id >= 9000").fetchall()[0][1]
    assert "LANCE_SCAN" in text
    assert "Lance Rows Out: 1000" in text


def test_self_join_reports_each_scan(lake: Path) -> None:
    path = lake / "t.lance"
    con = lance_fw.duckdb.connect()
    sql = (
        f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM '{path}' a "
        f"JOIN '{path}' b USING (id) WHERE a.x = 1 AND b.id < 50"
    )
    scans = _explain(con, sql)
    assert len(scans) == 2
    assert all(s["Lance Version"] == "1" for s in scans)


def test_explain_without_lance_is_duckdb_own() -> None:
    con = lance_fw.duckdb.connect()
    rows = con.execute("EXPLAIN SELECT 42").fetchall()
    assert "LANCE_SCAN" not in rows[0][1]


def test_filter_measures() -> None:
    assert filter_parts(None) == 0 and filter_ir_bytes(None) == 0
    both = (pc.field("a") > 3) & ((pc.field("b") == "x and y") & pc.field("c").is_null())
    assert filter_parts(both) == 3
    assert filter_parts(pc.field("a") > 3) == 1
    assert filter_parts((pc.field("a") > 3) | (pc.field("b") < 1)) == 1
    assert filter_ir_bytes(pc.field("a") > 3) > 0


def test_probe_failure_keeps_duckdb_plan(lake: Path) -> None:
    """A query that fails when run (here a constant branch) still has its plan explained, as in
    DuckDB; lance_fw adds no scan entry it could not learn."""
    con = lance_fw.duckdb.connect()
    sql = f"EXPLAIN SELECT error('boom') FROM '{lake / 't.lance'}' UNION ALL SELECT error('boom')"
    plan = con.execute(sql).fetchall()[0][1]
    assert "PYTHON_ARROW_SCAN" in plan and "LANCE_SCAN" not in plan
