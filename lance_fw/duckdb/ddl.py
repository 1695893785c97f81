"""``ALTER TABLE`` on an attached Lance table: ``ADD COLUMN [DEFAULT …]``, ``DROP COLUMN``, ``RENAME
COLUMN``, ``ALTER COLUMN … TYPE``, ``ALTER COLUMN … SET / DROP NOT NULL`` -- each one Lance commit through
lance_fw's ``add_columns`` / ``drop_columns`` / ``alter_columns``, as pylance makes them.

Types are DuckDB's: each SQL type becomes the Arrow type DuckDB itself produces for it. A ``DEFAULT``
expression is evaluated by Lance's expression engine, so only the part of SQL on which DuckDB and Lance
agree exactly is taken (columns, literals, ``+ - *``, casts, parentheses); anything else (a function,
``/``, whose integer semantics differ) is refused by name rather than computed differently.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pyarrow as pa
from sqlglot import exp

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.query.dialect import LanceDialect

#: Expression nodes a DEFAULT may use: they mean the same in DuckDB and in Lance's engine.
_SAME_IN_BOTH = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Paren,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Neg,
    exp.Cast,
    exp.DataType,
)


def arrow_type(con: duckdb.DuckDBPyConnection, sql_type: exp.Expression) -> pa.DataType:
    """The Arrow type DuckDB produces for a SQL type (``BIGINT`` -> int64, ``FLOAT[3]`` -> list …)."""
    con.abort()
    return (
        con.sql(f"SELECT CAST(NULL AS {sql_type.sql(dialect='duckdb')}) AS c LIMIT 0")
        .to_arrow_table()
        .schema[0]
        .type
    )


def alter_table(
    con: duckdb.DuckDBPyConnection,
    tree: exp.Alter,
    ds: LanceDataset,
    name: str,
    check_no_transaction: Callable[[str], None],
) -> None:
    """Apply each action of ``ALTER TABLE`` to ``ds`` (one commit per action, in order)."""
    check_no_transaction(f"ALTER TABLE {name}")
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            _add_column(con, ds, name, action)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
            ds.drop_columns([c.name for c in action.args.get("tables") or [action.this]])
        elif isinstance(action, exp.RenameColumn):
            ds.alter_columns({"path": action.this.name, "name": action.args["to"].name})
        elif isinstance(action, exp.AlterColumn):
            _alter_column(con, ds, name, action)
        else:
            raise UnsupportedFeatureError(f"ALTER TABLE {name}: {action.sql(dialect='duckdb')}")


def _add_column(con: duckdb.DuckDBPyConnection, ds: LanceDataset, table: str, column: exp.ColumnDef) -> None:
    kind = column.args.get("kind")
    if kind is None:
        raise UnsupportedFeatureError(f"ALTER TABLE {table} ADD COLUMN {column.name}: a type is needed")
    default = None
    for constraint in column.args.get("constraints") or []:
        if isinstance(constraint.args.get("kind"), exp.DefaultColumnConstraint):
            default = constraint.args["kind"].this
        else:
            raise UnsupportedFeatureError(
                f"ALTER TABLE {table} ADD COLUMN {column.name}: constraint {constraint.sql(dialect='duckdb')}"
            )
    field = pa.field(column.name, arrow_type(con, kind))
    if default is None:
        ds.add_columns(field)  # all NULL: no data written, as pylance does for a field
        return
    foreign = [n for n in default.walk() if not isinstance(n, _SAME_IN_BOTH)]
    if foreign:
        raise UnsupportedFeatureError(
            f"ALTER TABLE {table} ADD COLUMN {column.name} DEFAULT {default.sql(dialect='duckdb')}: only columns, "
            "literals, + - *, casts and parentheses are computed the same by DuckDB and Lance; use "
            "lance_fw.dataset(path).add_columns(...) for anything else"
        )
    lance_type = kind.sql(dialect=LanceDialect)
    ds.add_columns({column.name: f"CAST(({default.sql(dialect=LanceDialect)}) AS {lance_type})"})


def _alter_column(
    con: duckdb.DuckDBPyConnection, ds: LanceDataset, table: str, action: exp.AlterColumn
) -> None:
    column = action.this.name
    if action.args.get("dtype") is not None:
        if action.args.get("using") or action.args.get("collate"):
            raise UnsupportedFeatureError(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE … USING / COLLATE")
        data_type = arrow_type(con, action.args["dtype"])
        # DuckDB's lance extension drops the column's indices and casts (pylance's alter_columns
        # refuses while an index is attached): the SQL front end does what the extension does.
        for index in ds.describe_indices():
            if column in index.field_names:
                ds.drop_index(index.name)
        ds.alter_columns({"path": column, "data_type": data_type})
    elif action.args.get("allow_null") is not None:
        ds.alter_columns({"path": column, "nullable": bool(action.args["allow_null"])})
    else:
        raise UnsupportedFeatureError(f"ALTER TABLE {table}: {action.sql(dialect='duckdb')}")
