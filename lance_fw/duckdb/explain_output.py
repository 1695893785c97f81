"""DuckDB's ``EXPLAIN`` output with lance_fw's own plan nodes added, shared by every statement that
rewrites a Lance read before DuckDB runs it (``lance_scan`` reads in ``explain.py``, searches in
``vector_functions.py``).

Why one module: DuckDB plans the rewritten statement, which no longer names Lance; the nodes added
here are where the user sees what lance_fw really did. Both writers must agree on the statement
prefix, the rows that hold a plan and the result's shape, so those live here once.
"""

from __future__ import annotations

import json
import re

import duckdb

#: ``EXPLAIN``, ``ANALYZE`` and a parenthesised option list ahead of the query explained.
EXPLAIN_PREFIX = re.compile(r"\s*EXPLAIN\s+(ANALYZE\s+)?(\([^)]*\)\s*)?", re.I)
JSON_FORMAT = re.compile(r"\bFORMAT\s+JSON\b", re.I)
#: The rows of DuckDB's EXPLAIN (ANALYZE) output holding the plan that nodes are added to.
PLAN_KEYS = ("physical_plan", "analyzed_plan")
#: The statement that hands the (key, plan) rows back as the EXPLAIN result.
EXPLAIN_RESULT = "SELECT unnest(?::VARCHAR[]) AS explain_key, unnest(?::VARCHAR[]) AS explain_value"


def publish_plans(
    con: duckdb.DuckDBPyConnection,
    rows: list[tuple[str, str]],
    node: str,
    infos: list[dict[str, str]],
    json_format: bool,
) -> None:
    """Make ``con``'s pending result DuckDB's EXPLAIN ``rows`` with one ``node`` per entry of ``infos``
    appended to each plan row (``PLAN_KEYS``); other rows are passed through unchanged."""
    keys = [key for key, _ in rows]
    plans = [_with_nodes(plan, node, infos, json_format) if key in PLAN_KEYS else plan for key, plan in rows]
    con.execute(EXPLAIN_RESULT, [keys, plans])


def _with_nodes(plan: str, node: str, infos: list[dict[str, str]], json_format: bool) -> str:
    if json_format:
        parsed = json.loads(plan)  # EXPLAIN: a list of operators; EXPLAIN ANALYZE: a profile dict
        nodes = parsed
        if isinstance(parsed, dict):  # ANALYZE's profile keeps its operators under "children"
            nodes = parsed.get("operator", parsed.get("children"))
            if nodes is None:
                nodes = parsed.setdefault("operator", [])
        if not isinstance(nodes, list):
            return plan
        nodes.extend({"name": node, "children": [], "extra_info": info} for info in infos)
        return json.dumps(parsed, indent=4)
    lines = [plan.rstrip("\n")]
    for info in infos:
        lines.append(node)
        for key, value in info.items():
            lines.append(f"  {key}: " + value.replace("\n", "\n    "))
    return "\n".join(lines) + "\n"
