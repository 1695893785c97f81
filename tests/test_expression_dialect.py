"""One expression dialect: filters, projections, ``update`` and ``add_columns`` read SQL alike.

pylance plans every SQL expression it takes (``to_table(filter=...)``, ``to_table(columns={...})``,
``update({...})``, ``add_columns({...})``) with one parser, whose string literals keep a backslash
as an ordinary character (``'a\\nb'`` is four characters; only ``''`` escapes a quote, and ``E'...'``
is not accepted). This test runs each expression through them (and update's WHERE, delete) on a
pylance dataset and the same dataset read by lance_fw, and asserts that lance_fw writes and returns exactly pylance's
values and types, or refuses (a ``LanceError``) where pylance refuses (a ``ValueError`` family error).
Expressions lance_fw cannot evaluate yet are in ``MISSING``: lance_fw must refuse them, and pylance
must still accept them (so the list shrinks when they are implemented).
"""

from __future__ import annotations

import shutil
import warnings

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError

#: strings with the characters a dialect could treat specially: backslashes, quotes, tabs, newlines,
#: LIKE wildcards; two fragments (rows 0-5 and 6-11)
STRINGS = ["plain", "a\\nb", "tab\there", "it's", "back\\slash", "100%", "under_score", None, "", "  pad  ",
           "MiXeD", "line\nbreak", "tail\\"]
N = len(STRINGS)

#: (expression, result kind): kind picks the column ``update`` sets and the ``filter`` built from it
STRING_CASES = [
    "concat(s, 'a\\nb')", "concat(s, '\\t')", "concat(s, '\\\\')", "concat(s, '\\')", "s || '\\'",
    "s || 'it''s'", "concat('x', s, \"dq\")", "concat(s, '\\'', 'q')", "concat(s, E'a\\nb')",
    "concat(s, 'a\\u0041')", "concat(s, '\\x41')", "concat(s, '\\0')", "concat(s, t)", "t || s",
    "lower(s)", "upper(s)", "upper('a\\nb') || s", "reverse(s)",
    "substr(s, 2, 3)", "substring(s, 2, 3)", "substring(s from 2 for 3)", "substr(s, 2)",
    "replace(s, '\\', '/')", "replace(s, 'a', '\\n')", "replace(s, '''', '\"')",
    "trim(s)", "btrim(s)", "ltrim(s)", "rtrim(s)", "btrim(s, ' p')", "trim(both 'p' from s)",
    "left(s, 3)", "right(s, 2)", "repeat(s, 2)", "split_part(s, '\\', 1)",
    "regexp_replace(s, '\\\\', '/', 'g')", "regexp_replace(s, '[a-z]+', '\\n')",
    "regexp_replace(s, '([a-z]+)', '$1x|${1}x|$$|$|\\0|\\1')", "regexp_replace(s, '(?P<w>[a-z]+)', '<$w>')",
    "regexp_replace(s, '([a-z]+)', '<$2>')", "regexp_replace(s, '([a-z]+)', '<\\2\\\\x>')",
    "CAST(i AS STRING)", "CAST(n AS VARCHAR)", "coalesce(s, 'none\\n')", "nullif(s, '')",
    "CASE WHEN i > 2 THEN 'big\\n' ELSE s END", "CASE i WHEN 1 THEN 'one' WHEN 2 THEN 'two' END",
    "CASE WHEN s IS NULL THEN 'null' ELSE upper(s) END",
    "'const\\n'", "'it''s'", "concat(s, \"a\"\"b\")", "concat(s, 'a\"\"b')", "concat(s, '\"', \"'\")",
    "ucase(s)", "lcase(s)", "string(n)", "concat(s, 'a' 'b')", "s || 'x' -- comment", "s || /* c */ 'x'", "concat(s, N'x')", "concat(s, r'x')",
]
INT_CASES = [
    "length(s)", "char_length(s)", "character_length(s)", "octet_length(s)", "strpos(s, '\\')",
    "length('a\\nb') + n", "n + 1", "n * 2 - i", "n / 2", "n % 3", "-n", "CAST(s AS BIGINT)",
    "CAST('5' AS BIGINT) + n", "coalesce(n, 0)", "CASE WHEN n > 3 THEN n ELSE 0 END",
    "n::bigint + 1", "n::int - 1", "n*+1", "n << 1", "n + 9223372036854775807", "n - -9223372036854775808",
    "CAST(n AS INT8)", "CAST(n AS REAL)", "n::float8", "CAST(n AS DOUBLE PRECISION)", "CAST(n AS BOOL)",
    "CAST(n AS LONG)", "CAST(n AS TIMESTAMP WITH TIME ZONE)", "CAST(n AS INTEGER)", "CAST(n AS SMALLINT)",
    "CAST(n AS INT UNSIGNED)", "CAST(n AS FLOAT(24))", "len(s)", "locate('b', s)", "int(x)",
    "n + 9223372036854775808", "n + 0 < 18446744073709551616", "n + 1_000", "date + 1", "`date` * 2", "DATE - n", "instr(s, 'b')", "n || s",
]
FLOAT_CASES = ["sign(x)", "signum(x)", "CAST(n AS DOUBLE(10))", "double(n)", "CAST(n AS DOUBLE) + -9223372036854775808", "x * 2.5", "x / 4", "CAST(n AS DOUBLE) + x", "coalesce(x, 1.5)", "CASE WHEN x > 1 THEN x END"]
BOOL_CASES = [
    "s IS NULL", "s IS NOT NULL", "s = 'a\\nb'", "s = 'it''s'", "s = \"plain\"", "s = 'back\\slash'",
    "s IN ('a\\nb', 'plain')", "s < 'b'", "s LIKE '%\\\\%'", "s LIKE '%\\%'", "s LIKE '100\\%'",
    "s LIKE 'under\\_score'", "s LIKE 'under_score'", "s LIKE '%''%'", "s ILIKE 'mixed'", "s NOT LIKE 'a%'",
    "s LIKE '%\\'", "s LIKE 'tail\\'", "s LIKE '%l\\\\'", "s ILIKE 'TAIL\\'", "s LIKE 'back\\\\%'",
    "s LIKE '%k\\\\s%'", "s LIKE 'line_break'", "s LIKE 'line%'", "s LIKE '%\\_%'", "s NOT LIKE '%\\'",
    "s LIKE '100!%' ESCAPE '!'", "s LIKE 'a\\\\nb' ESCAPE '\\'", "starts_with(s, 'a\\')", "ends_with(s, '%')",
    "contains(s, '\\n')", "contains(s, '\\')", "regexp_like(s, '\\\\')", "regexp_like(s, '[\\\\]')",
    "regexp_like(s, '^a\\\\')", "regexp_like(s, 'k\\\\\\\\s')", "regexp_like(s, 'a.b')", "regexp_like(s, '\\')",
    "regexp_like(s, '\\n')", "regexp_match(s, 'a.b') IS NOT NULL", "regexp_match(s, '^[a-z]+$') IS NULL",
    "NOT regexp_match(s, 'a')", "regexp_match(s, 'a') OR n > 3", "regexp_match(s, 'a') = true",
    "regexp_match(s, 'a') IS TRUE", "coalesce(regexp_match(s, 'a'), false)", "(regexp_match(s, 'e'))",
    "s = E'a\\nb'", "length(s) > 4 AND s <> ''", "CASE WHEN n > 3 THEN true ELSE false END",
    "coalesce(s = 'plain', false)", "coalesce(flag, false)", "n BETWEEN 2 AND 5",
    "startswith(s, 'a')", "endswith(s, 'b')", "starts_with(s, 'pl')", "n <=> 1", "n IS NOT DISTINCT FROM 1", "n > -9223372036854775808", "n + 0 > -9223372036854775808",
    "s LIKE 'a\\_b'", "s NOT IN ('a\\nb', NULL)", "s = 'plain' 'x'", "s = \"it's\"", "s = \"a\"\"b\"",
]
CASES = [(e, "string") for e in STRING_CASES] + [(e, "int") for e in INT_CASES] + \
    [(e, "float") for e in FLOAT_CASES] + [(e, "bool") for e in BOOL_CASES]

#: the column ``update`` sets per result kind
UPDATE_TARGET = {"string": "s", "int": "n", "float": "x", "bool": "flag"}
SURFACES = ("columns", "add_columns", "update", "filter", "update_where", "delete")

#: expressions pylance accepts that lance_fw refuses (with a LanceError) on every surface, and why
MISSING: dict[str, str] = {
    # DataFusion rewrites a literal regex to LIKE '%...%' without escaping backslashes, so pylance's
    # '\\' is LIKE's escape there ('\\' matches '100%'); lance_fw refuses rather than mimic it
    **dict.fromkeys(["regexp_like(s, '\\\\')", "regexp_like(s, '[\\\\]')", "regexp_like(s, '^a\\\\')",
                     "regexp_like(s, 'k\\\\\\\\s')"], "a regex matching a backslash"),
    # pylance's filter ignores whatever follows the first expression ('x' here); its projections refuse it
    "s = 'plain' 'x'": "adjacent string literals",
    "n << 1": "bit shifts",
    # DataFusion adds an int64 and a UInt64 literal in a wider type; Arrow cannot: refused
    "n + 9223372036854775808": "int64 + UInt64 literal", "n + 0 < 18446744073709551616": "a literal past u64",
}

#: expressions lance_fw evaluates as a filter but refuses as a value (columns, add_columns, update)
MISSING_AS_VALUE: dict[str, str] = {"(regexp_match(s, 'e'))": "regexp_match's list of groups"}
VALUE_SURFACES = ("columns", "add_columns", "update")


def _table() -> pa.Table:
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "s": pa.array(STRINGS, pa.string()),
        "t": pa.array([None if i % 5 == 2 else f"t\\{i}" for i in range(N)], pa.string()),
        "i": pa.array([None if i % 4 == 3 else i % 6 for i in range(N)], pa.int32()),
        "n": pa.array([None if i % 5 == 4 else i - 3 for i in range(N)], pa.int64()),
        "x": pa.array([None if i % 6 == 1 else i * 0.75 - 2 for i in range(N)], pa.float64()),
        "flag": pa.array([None if i % 7 == 5 else i % 2 == 0 for i in range(N)], pa.bool_()),
        "date": pa.array([i * 2 for i in range(N)], pa.int64()),  # a column named like a keyword
    })


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> str:
    """One pylance dataset of two fragments; every case runs on its own copies of it."""
    path = str(tmp_path_factory.mktemp("dialect") / "ds")
    lance.write_dataset(_table(), path, max_rows_per_file=N // 2)
    return path


def _filter_for(expr: str, kind: str) -> str:
    """A boolean filter over ``expr``: itself, or a test of its value that shows its characters."""
    if kind == "bool":
        return expr
    if kind == "string":
        return f"contains(({expr}), '\\') OR ({expr}) IS NULL"
    return f"({expr}) > 1 OR ({expr}) IS NULL"


def _run(module, path: str, expr: str, kind: str, surface: str) -> pa.Table:
    """What ``surface`` gives for ``expr``: the rows/values read back after it ran."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = module.dataset(path)
        if surface == "columns":
            return ds.to_table(columns={"id": "id", "c": expr})
        if surface == "filter":
            return ds.to_table(columns=["id"], filter=_filter_for(expr, kind))
        if surface == "update_where":  # the expression (or a test of it) as update()'s WHERE
            ds.update({"t": "concat(s, '\\n!')"}, where=_filter_for(expr, kind))
            return module.dataset(path).to_table(columns=["id", "t"])
        if surface == "delete":
            ds.delete(_filter_for(expr, kind))
            return module.dataset(path).to_table(columns=["id", "s"])
        if surface == "add_columns":
            ds.add_columns({"c": expr})
            return module.dataset(path).to_table(columns=["id", "c"])
        target = UPDATE_TARGET[kind]
        ds.update({target: expr})
        return module.dataset(path).to_table(columns=["id", target])


def _outcome(module, template: str, tmp_path, expr: str, kind: str, surface: str):
    path = str(tmp_path / module.__name__)
    shutil.copytree(template, path)
    try:
        return _run(module, path, expr, kind, surface)
    except Exception as exc:  # noqa: BLE001 - the class is what the test compares
        return exc


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("expr,kind", CASES, ids=[e for e, _ in CASES])
def test_expression_dialect(template, tmp_path, expr: str, kind: str, surface: str) -> None:
    expected = _outcome(lance, template, tmp_path, expr, kind, surface)
    actual = _outcome(lance_fw, template, tmp_path, expr, kind, surface)
    if isinstance(expected, Exception):
        assert isinstance(actual, LanceError) and isinstance(actual, ValueError), \
            f"pylance refuses {expr!r} ({type(expected).__name__}: {expected}), lance_fw gave {actual!r}"
        return
    assert isinstance(expected, pa.Table)
    if expr in MISSING or (expr in MISSING_AS_VALUE and surface in VALUE_SURFACES):
        assert isinstance(actual, LanceError), f"{expr!r} in MISSING, but lance_fw gave {actual!r}"
        return
    assert not isinstance(actual, Exception), \
        f"pylance accepts {expr!r} via {surface}, lance_fw raised {type(actual).__name__}: {actual}"
    assert actual.schema == expected.schema, f"schema {actual.schema} != pylance's {expected.schema}"
    for name in expected.column_names:
        assert actual.column(name).combine_chunks().equals(expected.column(name).combine_chunks()), \
            f"{name}: {actual.column(name).to_pylist()} != pylance's {expected.column(name).to_pylist()}"


#: update() of a column with a value of another type: pylance casts it to the column's type
CROSS_TYPE_UPDATES = [("s", "n + 1"), ("s", "flag"), ("s", "x"), ("s", "x * 0 + 1"), ("x", "n"), ("x", "i"),
                      ("x", "'1.5'"), ("n", "'5'"), ("n", "flag"), ("n", "s"), ("i", "n * 1000000000000"),
                      ("flag", "n"), ("n", "x"), ("i", "x * -1"), ("n", "x / 0"), ("n", "CAST(x AS FLOAT)")]
#: (column, expression) pylance updates that lance_fw refuses: Rust writes 1e20 as '1e20', Arrow '1e+20'
CROSS_TYPE_MISSING = {("s", "x"), ("s", "x * 0 + 1")}


@pytest.mark.parametrize("column,expr", CROSS_TYPE_UPDATES)
def test_update_casts_as_pylance(template, tmp_path, column: str, expr: str) -> None:
    def outcome(module):
        path = str(tmp_path / module.__name__)
        shutil.copytree(template, path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module.dataset(path).update({column: expr})
                return module.dataset(path).to_table(columns=["id", column])
        except Exception as exc:  # noqa: BLE001 - the class is what the test compares
            return exc

    expected, actual = outcome(lance), outcome(lance_fw)
    if isinstance(expected, Exception) or (column, expr) in CROSS_TYPE_MISSING:
        assert isinstance(actual, LanceError), f"pylance gave {expected!r}, lance_fw {actual!r}"
        return
    assert not isinstance(actual, Exception), f"lance_fw raised {actual!r}"
    assert actual.equals(expected), f"{actual.to_pydict()} != pylance's {expected.to_pydict()}"
