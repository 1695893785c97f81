"""Randomized SQL, differential: DuckDB over ``lance_scan`` vs DuckDB over the same rows as Arrow tables.

Each seed builds two datasets with random schemas (non-ASCII column names and string values, nulls, NaN),
written by lance_fw or by pylance at a random file version, and runs a random sequence of statements:
filters, aggregates, GROUP BY, joins, CTEs, views, parameters (values and the path itself), prepared
statements and relations fetched again, with appends and deletes (by lance_fw and by pylance) between
statements. The oracle is the same SQL on a plain DuckDB connection over Arrow tables holding what was
written; every answer must be equal (row order fixed by ORDER BY on a unique key).

Profiles (``LANCE_FW_RANDOM_SQL``): ``ci`` (default: a few seeds, ~30 s) and ``deep`` (many seeds and
statements, for local runs). ``LANCE_FW_RANDOM_SQL_SEED`` replays one seed; a failure names it.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_fw
import lance_fw.duckdb as fw_duckdb

PROFILES = {"ci": {"seeds": 8, "statements": 80}, "deep": {"seeds": 100, "statements": 250}}
PROFILE = PROFILES[os.environ.get("LANCE_FW_RANDOM_SQL", "ci")]
SEEDS = ([int(os.environ["LANCE_FW_RANDOM_SQL_SEED"])] if "LANCE_FW_RANDOM_SQL_SEED" in os.environ
         else list(range(PROFILE["seeds"])))

NAMES = ["ünï 0", "名前", "a b", "Ωmega", "x", "select", "Größe", "émoji 🙂", "col_5", "ñ"]
STRINGS = ["ü", "üb", "Ä", "名", "名前", "a", "ab", "a'b", "Ωx", "🙂", "e\u0301", "", "zz"]
TYPES = ["int32", "int64", "float64", "string", "bool_", "date32"]


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lit(value) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


# -- data ------------------------------------------------------------------------------------------

@dataclass
class Table:
    """One dataset and the Arrow table holding what it should contain."""

    name: str
    path: str
    schema: pa.Schema
    truth: pa.Table
    writer: str
    version: str
    next_id: int = 0
    columns: list[str] = field(default_factory=list)


def _schema(rng: random.Random) -> pa.Schema:
    names = rng.sample(NAMES, rng.randint(2, 5))
    return pa.schema([pa.field("id", pa.int64())] + [pa.field(n, getattr(pa, rng.choice(TYPES))()) for n in names])


def _column(rng: random.Random, type_: pa.DataType, n: int, null_rate: float) -> pa.Array:
    def one():
        if rng.random() < null_rate:
            return None
        if pa.types.is_integer(type_):
            return rng.randint(-50, 50)
        if pa.types.is_floating(type_):
            return math.nan if rng.random() < 0.03 else round(rng.uniform(-100, 100), 2)
        if pa.types.is_string(type_):
            return rng.choice(STRINGS) + (str(rng.randint(0, 9)) if rng.random() < 0.5 else "")
        if pa.types.is_boolean(type_):
            return rng.random() < 0.5
        return rng.randint(18000, 18100)  # date32: days since the epoch
    return pa.array([one() for _ in range(n)], type_)


def _rows(rng: random.Random, table: Table, n: int) -> pa.Table:
    null_rate = rng.choice([0.0, 0.1, 0.5])
    columns = [pa.array(range(table.next_id, table.next_id + n), pa.int64())]
    columns += [_column(rng, f.type, n, null_rate) for f in table.schema][1:]
    table.next_id += n + rng.randint(0, 3)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _write(writer: str):
    return lance_fw.write_dataset if writer == "lance_fw" else lance.write_dataset


def _make(rng: random.Random, tmp_path, name: str) -> Table:
    table = Table(name, str(tmp_path / f"{name} ü.lance"), _schema(rng), None, rng.choice(["lance_fw", "pylance"]),
                  rng.choice(["2.0", "2.1", "2.2"]))
    table.columns = [f.name for f in table.schema]
    # sizes crossing 1024-value blocks and 4096-value chunks, in several fragments
    table.truth = _rows(rng, table, rng.choice([300, 1500, 4500]))
    _write(table.writer)(table.truth, table.path, data_storage_version=table.version,
                         max_rows_per_file=rng.choice([700, 2000, 5000]))
    return table


def _mutate(rng: random.Random, table: Table) -> str:
    writer = rng.choice(["lance_fw", "pylance"])
    if rng.random() < 0.55 or table.truth.num_rows == 0:
        rows = _rows(rng, table, rng.choice([1, 200, 1100]))
        _write(writer)(rows, table.path, mode="append")
        table.truth = pa.concat_tables([table.truth, rows])
        return f"append {rows.num_rows} rows by {writer}"
    modulus, rest = rng.choice([3, 7, 50]), rng.randint(0, 2)
    ds = lance_fw.dataset(table.path) if writer == "lance_fw" else lance.dataset(table.path)
    ds.delete(f"id % {modulus} = {rest}")
    ids = table.truth["id"]
    table.truth = table.truth.filter(pc.not_equal(pc.subtract(ids, pc.multiply(pc.divide(ids, modulus), modulus)),
                                                  rest))
    return f"delete id % {modulus} = {rest} by {writer}"


# -- statements -----------------------------------------------------------------------------------

@dataclass
class Statement:
    """One statement for both sides: ``{A}``/``{B}`` stand for the sources, params are shared."""

    sql: str
    params: dict


class Generator:
    def __init__(self, rng: random.Random, tables: dict[str, Table]):
        self.rng = rng
        self.tables = tables
        self.params: dict = {}

    def _param(self, value) -> str:
        name = f"v{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def _value(self, table: Table, column: str):
        values = [v for v in table.truth[column].to_pylist()[:500] if v is not None]
        if not values:
            return None
        value = self.rng.choice(values)
        return None if isinstance(value, float) and math.isnan(value) else value

    def predicate(self, table: Table, alias: str = "") -> str:
        rng = self.rng
        column = rng.choice(table.columns)
        field_ = table.schema.field(column)
        ref = (alias + "." if alias else "") + q(column)
        value = self._value(table, column)
        kind = rng.random()
        if value is None or kind < 0.1:
            text = f"{ref} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
        elif pa.types.is_date32(field_.type):
            text = f"{ref} {rng.choice(['<', '>=', '='])} DATE '{value}'"
        elif pa.types.is_boolean(field_.type):
            text = f"{ref} = {lit(value)}" if rng.random() < 0.5 else f"NOT {ref}"
        elif pa.types.is_string(field_.type) and kind < 0.3:
            text = f"{ref} LIKE {lit(value[:1] + '%')}"
        elif kind < 0.45:
            others = [self._value(table, column) for _ in range(3)]
            text = f"{ref} IN ({', '.join(lit(v) for v in [value, *others] if v is not None)})"
        elif kind < 0.75:
            text = f"{ref} {rng.choice(['<', '<=', '>', '>=', '=', '<>'])} {self._param(value)}"
        else:
            text = f"{ref} {rng.choice(['<', '>=', '='])} {lit(value)}"
        if rng.random() < 0.25:
            text = f"({text} {rng.choice(['AND', 'OR'])} {self.predicate(table, alias)})"
        return text

    def source(self, name: str) -> str:
        """How the lance side names a dataset; the oracle side always reads ``{name}``'s Arrow table."""
        return "{" + name + "}"

    def statement(self) -> Statement:
        self.params = {}
        rng = self.rng
        a, b = self.tables["A"], self.tables["B"]
        shape = rng.choice(["rows", "aggregate", "group", "join", "cte", "view", "tag"])
        where = f"WHERE {self.predicate(a)}" if rng.random() < 0.8 else ""
        if shape == "rows":
            cols = ", ".join(q(c) for c in rng.sample(a.columns, rng.randint(1, len(a.columns))))
            limit = f" LIMIT {rng.randint(0, 50)} OFFSET {rng.randint(0, 20)}" if rng.random() < 0.3 else ""
            sql = f"SELECT id, {cols} FROM {{A}} {where} ORDER BY id{limit}"
        elif shape == "aggregate":
            items = ["count(*)"]
            for c in rng.sample(a.columns, min(2, len(a.columns))):
                t = a.schema.field(c).type
                items.append(f"count({q(c)})")
                if not pa.types.is_boolean(t):
                    items.append(f"{rng.choice(['min', 'max'])}({q(c)})")
                if pa.types.is_integer(t):
                    items.append(f"sum({q(c)})")
            sql = f"SELECT {', '.join(items)} FROM {{A}} {where}"
        elif shape == "group":
            key = q(rng.choice(a.columns[1:]))
            sql = (f"SELECT {key}, count(*), max(id) FROM {{A}} {where} GROUP BY {key} "
                   f"ORDER BY {key} NULLS FIRST")
        elif shape == "join":
            common = [c for c in b.columns[1:]]
            pick = q(rng.choice(common)) if common else "id"
            sql = (f"SELECT a.id, b.{pick} FROM {{A}} a JOIN {{B}} b ON a.id = b.id "
                   f"WHERE {self.predicate(a, 'a')} ORDER BY a.id LIMIT 200")
        elif shape == "cte":
            sql = (f"WITH t AS (SELECT * FROM {{A}} {where}) "
                   f"SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM {{A}}), (SELECT max(id) FROM {{A}})")
        elif shape == "view":
            sql = f"SELECT count(*), max(id) FROM va {where}"
        else:  # a non-ASCII literal before the call
            tag = rng.choice(STRINGS)
            sql = f"SELECT {lit(tag)} AS tag, count(*) FROM {{A}} {where}"
        return Statement(sql, dict(self.params))


def _normal(rows: list[tuple]) -> list[tuple]:
    """NaN equal to NaN, so results compare with ``==``."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]


class Sides:
    """The lance_fw connection and the oracle, kept describing the same data."""

    def __init__(self, rng: random.Random, tables: dict[str, Table]):
        self.rng = rng
        self.tables = tables
        self.lance = fw_duckdb.connect()
        self.oracle = duckdb.connect()
        for t in tables.values():
            self.oracle.register(f"truth_{t.name}", t.truth)
        self.lance.execute(f"CREATE VIEW va AS SELECT * FROM lance_scan({lit(tables['A'].path)})")
        self.oracle.execute("CREATE VIEW va AS SELECT * FROM truth_A")

    def refresh(self, table: Table) -> None:
        self.oracle.register(f"truth_{table.name}", table.truth)

    def texts(self, statement: Statement) -> tuple[str, dict, str, dict]:
        """The lance side's SQL (the path written one of several ways) and params, and the oracle's SQL."""
        params = dict(statement.params)
        lance_sources = {}
        for name, table in self.tables.items():
            way = self.rng.choice(["literal", "dollar", "named", "param", "escape"])
            if way == "literal":
                lance_sources[name] = f"lance_scan({lit(table.path)})"
            elif way == "dollar":
                lance_sources[name] = f"lance_scan($${table.path}$$)"
            elif way == "named":
                lance_sources[name] = f"lance_scan(p := {lit(table.path)})"
            elif way == "escape":
                lance_sources[name] = "lance_scan(E" + lit(table.path.replace("\\", "\\\\")) + ")"
            else:
                params[f"path_{name}"] = table.path
                lance_sources[name] = f"lance_scan($path_{name})"
        used = {k: v for k, v in params.items() if f"${k}" in statement.sql.format(**lance_sources)}
        oracle_params = {k: v for k, v in statement.params.items() if f"${k}" in statement.sql}
        return (statement.sql.format(**lance_sources), used,
                statement.sql.format(**{n: f"truth_{n}" for n in self.tables}), oracle_params)

    def compare(self, statement: Statement, context: str) -> None:
        lance_sql, lance_params, oracle_sql, oracle_params = self.texts(statement)
        expected = _normal(self.oracle.execute(oracle_sql, oracle_params or None).fetchall())
        if self.rng.random() < 0.5:
            got = self.lance.execute(lance_sql, lance_params or None).fetchall()
        else:
            got = self.lance.sql(lance_sql, params=lance_params or None).fetchall()
        assert _normal(got) == expected, f"{context}\nlance_fw: {lance_sql}\nparams {lance_params}"


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sql_matches_arrow(seed, tmp_path):
    rng = random.Random(seed)
    tables = {name: _make(rng, tmp_path, name) for name in ("A", "B")}
    sides = Sides(rng, tables)
    generator = Generator(rng, tables)
    history = [f"seed {seed}: " + ", ".join(f"{t.name} {t.writer} {t.version} {t.schema.names}"
                                          for t in tables.values())]
    relations = []  # (relation over lance_scan, oracle SQL, oracle params): fetched again later
    sides.lance.execute(f"PREPARE by_id AS SELECT count(*), max(id) FROM lance_scan({lit(tables['A'].path)}) "
                        "WHERE id >= ?")
    for step in range(PROFILE["statements"]):
        roll = rng.random()
        if roll < 0.2:
            table = rng.choice(list(tables.values()))
            history.append(f"{step}: {table.name} {_mutate(rng, table)}")
            sides.refresh(table)
        elif roll < 0.27:
            statement = generator.statement()
            lance_sql, lance_params, oracle_sql, oracle_params = sides.texts(statement)
            relations.append((sides.lance.sql(lance_sql, params=lance_params or None), oracle_sql, oracle_params))
        elif roll < 0.35 and relations:
            rel, oracle_sql, oracle_params = rng.choice(relations)
            expected = _normal(sides.oracle.execute(oracle_sql, oracle_params or None).fetchall())
            assert _normal(rel.fetchall()) == expected, "\n".join(history + [f"{step}: relation {oracle_sql}"])
        elif roll < 0.4:
            bound = rng.randint(0, tables["A"].next_id)
            expected = sides.oracle.execute("SELECT count(*), max(id) FROM truth_A WHERE id >= ?", [bound]).fetchall()
            assert sides.lance.execute(f"EXECUTE by_id({bound})").fetchall() == expected, "\n".join(history)
        else:
            statement = generator.statement()
            sides.compare(statement, "\n".join(history + [f"{step}: {statement.sql}"]))
