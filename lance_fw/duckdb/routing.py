"""Which statements only lance_fw's statement path understands, for callers that build relations
(``Connection.sql``) and must run such a statement through ``execute`` first."""

from __future__ import annotations

import duckdb
from sqlglot import exp

from lance_fw.duckdb import dml, index_ddl, table_functions, vector_functions
from lance_fw.duckdb.catalog import session


def needs_routing(con: duckdb.DuckDBPyConnection, statement: object) -> bool:
    """Whether ``route`` would act on ``statement`` (so a relation-building ``con.sql`` must run it
    through ``execute`` first): ATTACH/DETACH, index DDL, a Lance table function or search, and,
    once a Lance directory is attached, transactions and statements naming an attached catalog."""
    if not isinstance(statement, str):
        return False
    if dml.ATTACH_STATEMENT.match(statement) or index_ddl.may_be_index_ddl(statement):
        return True
    if table_functions.may_call(statement) or vector_functions.may_search(statement):
        return True
    catalogs = session(con).catalogs
    if not catalogs:
        return False
    tree = dml.parse_statement(statement)
    if tree is None:
        return False
    if isinstance(tree, exp.Transaction | exp.Commit | exp.Rollback):
        return True
    return any(table.catalog in catalogs for table in tree.find_all(exp.Table))


def returns_rows(statement: str) -> bool:
    """Whether ``statement`` is a query (its rows are a relation), not a command."""
    tree = dml.parse_statement(statement)
    return isinstance(tree, exp.Query | exp.Describe | exp.Show)
