"""SQL writes to the tables of an attached Lance directory: ``INSERT``, ``UPDATE``, ``DELETE``,
``TRUNCATE``, ``CREATE [OR REPLACE] TABLE [AS]``, ``SHOW TABLES``, and ``BEGIN`` / ``COMMIT`` / ``ROLLBACK``.

DuckDB evaluates every expression (``SET`` values, ``WHERE`` conditions, ``INSERT`` sources), so the rows
written are exactly what DuckDB computes; lance_fw only turns them into one Lance commit each: an
``Update`` (deletions plus the rewritten rows appended, as pylance's ``update``), a ``Delete`` or an
append. The rows to change are found by DuckDB over the dataset with its row addresses (``_rowaddr``).

Inside ``BEGIN … COMMIT`` the rows are computed at the statement and committed at ``COMMIT`` (dropped at
``ROLLBACK``), each against the version it read, with the usual conflict checks. Reading or writing a
table again after writing it in the same open transaction is refused: its pending writes would not show.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

import lance_fw
from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb import index_ddl, table_functions, vector_functions  # index_ddl registers its own
from lance_fw.duckdb.catalog import (
    VERSIONS_DIR,
    LanceCatalog,
    attach,
    detach,
    resolve,
    rewrite_reads,
    session,
)
from lance_fw.duckdb.dataset import READAHEAD, DuckDBDataset, _ReportingScanner
from lance_fw.duckdb.ddl import alter_table
from lance_fw.duckdb.merge import SOURCE_NAME, plan_merge
from lance_fw.duckdb.metadata_functions import set_comment  # also registers the metadata table functions
from lance_fw.errors import (
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidArgumentError,
    LanceError,
    UnsupportedFeatureError,
)
from lance_fw.io.storage import Storage, resolve_storage
from lance_fw.options import Columns, Filter
from lance_fw.schema import conform
from lance_fw.table.delete import addresses_matcher, delete_rows
from lance_fw.table.row_rewrite import rewrite

#: The row-address column DuckDB selects to say which rows change.
ROW_ADDRESS = "_rowaddr"
#: Name under which the target, with its row addresses, is registered for one write statement.
TARGET_NAME = "__lance_fw_dml_target"
#: What DuckDB returns for a write: one row, the number of rows changed.
COUNT_RESULT = "SELECT ?::BIGINT AS Count"
#: What DuckDB returns for DDL: no rows.
EMPTY_RESULT = "SELECT 1 AS Success LIMIT 0"


@dataclass
class PendingWrite:
    """A write computed inside an open transaction, committed at ``COMMIT``."""

    path: str
    apply: Callable[[], object]


class AddressedDataset(DuckDBDataset):
    """The dataset with a ``_rowaddr`` column, for DuckDB to report which rows a write changes."""

    @property
    def schema(self) -> pa.Schema:
        return self._lance.schema.append(pa.field(ROW_ADDRESS, pa.uint64()))

    def scanner(
        self, columns: Columns | None = None, filter: Filter | None = None, batch_size: int | None = None
    ) -> _ReportingScanner:
        wanted = list(self.schema.names) if columns is None else list(columns)
        data_columns = [c for c in wanted if c != ROW_ADDRESS]
        scanner = self._lance.scanner(
            columns=data_columns,
            filter=filter,
            batch_size=batch_size,
            with_row_address=True,
            fragment_readahead=READAHEAD,
        )
        return _Selecting(scanner, self._on_error, wanted)


class _Selecting(_ReportingScanner):
    """A scanner whose batches carry exactly the columns DuckDB asked for, in its order."""

    def __init__(self, scanner: Any, on_error: Callable[[LanceError], None], columns: list[str]) -> None:
        super().__init__(scanner, on_error)
        self._columns = columns

    @property
    def projected_schema(self) -> pa.Schema:
        schema = self._scanner.projected_schema
        return pa.schema([schema.field(c) for c in self._columns])

    def to_reader(self) -> pa.RecordBatchReader:
        batches = (b.select(self._columns) for b in super().to_reader())
        return pa.RecordBatchReader.from_batches(self.projected_schema, batches)


class WriteRouter:
    """Runs the Lance writes of one connection; ``run_query`` runs a query through the statement path
    (so it may read Lance datasets itself) and returns its rows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_query: Callable[[str, object], pa.Table]) -> None:
        self.con, self.run_query = con, run_query
        self.state = session(con)

    # -- the statement kinds ------------------------------------------------------------------

    def handle(self, tree: exp.Expr, values: object) -> bool:
        """Run ``tree`` if it is a write to (or DDL on) an attached Lance table; False otherwise."""
        if isinstance(tree, exp.Insert):
            return self._insert(tree, values)
        if isinstance(tree, exp.Update):
            return self._update(tree, values)
        if isinstance(tree, exp.Delete):
            return self._delete(tree, values)
        if isinstance(tree, exp.TruncateTable):
            return self._truncate(tree)
        if isinstance(tree, exp.Create) and tree.kind == "TABLE":
            return self._create(tree, values)
        if isinstance(tree, exp.Drop) and str(tree.args.get("kind")).upper() == "TABLE":
            return self._drop(tree)
        if isinstance(tree, exp.Merge):
            return self._merge(tree, values)
        if isinstance(tree, exp.Comment):
            return self._comment(tree)
        if isinstance(tree, exp.Alter) and str(tree.args.get("kind")).upper() == "TABLE":
            return self._alter(tree)
        if isinstance(tree, exp.Show) and str(tree.this).upper() == "TABLES":
            return self._show_tables(tree)
        return False

    def _insert(self, tree: exp.Insert, values: object) -> bool:
        target = tree.this
        columns = None
        if isinstance(target, exp.Schema):
            columns = [c.name for c in target.expressions]
            target = target.this
        found = self._target(target)
        if found is None:
            return False
        catalog, name, path = found
        if tree.args.get("conflict") or tree.args.get("returning") or tree.args.get("overwrite"):
            raise UnsupportedFeatureError(f"INSERT INTO {name}: ON CONFLICT / RETURNING / OVERWRITE")
        ds = self._open(catalog, path)
        source = self._sql(tree.expression)
        rows = self.run_query(source, values)
        schema = ds.schema
        names = columns if columns is not None else schema.names
        if rows.num_columns != len(names):
            raise InvalidArgumentError(
                f"INSERT INTO {name}: the table has {len(names)} column(s) "
                f"but {rows.num_columns} value(s) were supplied"
            )
        unknown = [c for c in names if c not in schema.names]
        if unknown:
            raise InvalidArgumentError(f"INSERT INTO {name}: no column(s) {unknown}")
        rows = rows.rename_columns(names)
        data = pa.table(
            [rows.column(f.name) if f.name in names else pa.nulls(rows.num_rows, f.type) for f in schema],
            names=schema.names,
        )
        data = conform(data, schema, f"INSERT INTO {name}")
        options = catalog.storage_options

        def append() -> object:
            return lance_fw.write_dataset(data, path, mode="append", storage_options=options)

        self._write(path, append, data.num_rows)
        return True

    def _row_write_target(
        self, tree: exp.Update | exp.Delete, what: str, refused: tuple[str, ...]
    ) -> tuple[str, str, LanceDataset] | None:
        """(name, path, dataset) of an UPDATE / DELETE on an attached table; clauses it cannot
        carry out (``FROM``, ``USING``, ``RETURNING``) are refused by name."""
        found = self._target(tree.this)
        if found is None:
            return None
        catalog, name, path = found
        present = [clause.upper().rstrip("_") for clause in refused if tree.args.get(clause)]
        if present:
            raise UnsupportedFeatureError(f"{what} {name}: {' / '.join(present)}")
        return name, path, self._open(catalog, path)

    def _update(self, tree: exp.Update, values: object) -> bool:
        target = self._row_write_target(tree, "UPDATE", ("from_", "from", "returning"))
        if target is None:
            return False
        name, path, ds = target
        sets: dict[str, exp.Expression] = {}
        for assignment in tree.expressions:
            column = assignment.this.name
            if column not in ds.schema.names:
                raise InvalidArgumentError(f"UPDATE {name}: no column {column!r}")
            sets[column] = assignment.expression
        outputs: list[exp.Expr] = [exp.column(ROW_ADDRESS)] + [
            exp.alias_(sets.get(c, exp.column(c, quoted=True)), c, quoted=True) for c in ds.schema.names
        ]
        rows = self._select_target(tree, ds, outputs, values)
        new = conform(rows.drop_columns([ROW_ADDRESS]), ds.schema, f"UPDATE {name}")
        addresses = rows.column(ROW_ADDRESS).to_numpy()
        snapshot, where = ds._snapshot, self._where_sql(tree)

        def commit() -> object:
            return rewrite(snapshot, addresses, new, where)

        self._write(path, commit if rows.num_rows else None, rows.num_rows)
        return True

    def _delete(self, tree: exp.Delete, values: object) -> bool:
        target = self._row_write_target(tree, "DELETE FROM", ("using", "returning"))
        if target is None:
            return False
        _name, path, ds = target
        rows = self._select_target(tree, ds, [exp.column(ROW_ADDRESS)], values)
        addresses = rows.column(ROW_ADDRESS).to_numpy()
        snapshot, where = ds._snapshot, self._where_sql(tree)

        def commit() -> object:
            return delete_rows(snapshot, addresses_matcher(addresses), where)

        self._write(path, commit if rows.num_rows else None, rows.num_rows)
        return True

    def _truncate(self, tree: exp.TruncateTable) -> bool:
        targets = [self._target(t) for t in tree.expressions]
        if not any(targets):
            return False
        if not all(targets):
            raise UnsupportedFeatureError("TRUNCATE of Lance and DuckDB tables in one statement")
        for catalog, _name, path in targets:  # type: ignore[misc]
            ds = self._open(catalog, path)
            self._write(path, partial(ds.delete, "true") if ds.count_rows() else None, ds.count_rows())
        return True

    def _create(self, tree: exp.Create, values: object) -> bool:
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        found = self._target(table)
        if found is None:
            return False
        catalog, name, path = found
        replace, if_not_exists = bool(tree.args.get("replace")), bool(tree.args.get("exists"))
        exists = self._exists(catalog, path)
        if exists and if_not_exists:
            self.con.execute(EMPTY_RESULT)
            return True
        if exists and not replace:
            raise DatasetExistsError(f"CREATE TABLE {catalog.name}.main.{name}: {path} already exists")
        if tree.expression is not None:  # CREATE TABLE … AS query
            data = self.run_query(self._sql(tree.expression), values)
        elif isinstance(tree.this, exp.Schema):
            columns = ", ".join(
                f"CAST(NULL AS {c.args['kind'].sql(dialect='duckdb')}) AS {c.this.sql(dialect='duckdb')}"
                for c in tree.this.expressions
                if isinstance(c, exp.ColumnDef)
            )
            self.con.abort()
            data = self.con.sql(f"SELECT {columns} LIMIT 0").to_arrow_table()
        else:
            raise UnsupportedFeatureError(f"CREATE TABLE {name} without columns or AS query")
        mode, options = ("overwrite" if exists else "create"), catalog.storage_options
        self._require_no_transaction(f"CREATE TABLE {name}")
        lance_fw.write_dataset(data, path, mode=mode, storage_options=options)
        self.con.execute(EMPTY_RESULT)
        return True

    def _drop(self, tree: exp.Drop) -> bool:
        targets = [self._target(t) for t in tree.args.get("tables") or [tree.this]]
        if not any(targets):
            return False
        if not all(targets):
            raise UnsupportedFeatureError("DROP TABLE of Lance and DuckDB tables in one statement")
        self._require_no_transaction("DROP TABLE")
        for catalog, name, path in targets:  # type: ignore[misc]
            if not self._exists(catalog, path):
                if tree.args.get("exists"):
                    continue
                raise DatasetNotFoundError(f"DROP TABLE {catalog.name}.main.{name}: no dataset at {path}")
            remove_dataset(path, catalog.storage_options)
        self.con.execute(EMPTY_RESULT)
        return True

    def _merge(self, tree: exp.Merge, values: object) -> bool:
        found = self._target(tree.this)
        if found is None:
            return False
        catalog, _name, path = found
        ds = self._open(catalog, path)
        using = tree.args["using"]
        if isinstance(using, exp.Subquery):
            source_query = using.this.copy()
        else:
            source_table = using.copy()
            source_table.set("alias", None)
            source_query = exp.select("*").from_(source_table)
        source = self.run_query(self._sql(source_query), values)

        def target(alias: str) -> exp.Table:
            return exp.Table(
                this=exp.to_identifier(TARGET_NAME, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias)),
            )

        self.con.register(TARGET_NAME, AddressedDataset(ds))
        self.con.register(SOURCE_NAME, source)
        try:
            result = plan_merge(
                tree, ds, target, lambda select: self.run_query(self._sql(select), None), source
            )
        finally:
            self.con.unregister(SOURCE_NAME)
            self.con.unregister(TARGET_NAME)
        addresses = np.concatenate(result.addresses) if result.addresses else np.zeros(0, np.uint64)
        new = pa.concat_tables(result.rows) if result.rows else None
        snapshot = ds._snapshot

        def commit() -> object:
            return rewrite(snapshot, addresses, new, "MERGE INTO")

        changes = len(addresses) or (new is not None and new.num_rows)
        self._write(path, commit if changes else None, result.changed)
        return True

    def _comment(self, tree: exp.Comment) -> bool:
        kind = str(tree.args.get("kind")).upper()
        target = tree.this
        column = None
        if kind == "COLUMN" and isinstance(target, exp.Column):
            # ns.main.t.c parses as a column c of table t in db main, catalog ns
            column = target.name
            target = exp.Table(
                this=exp.to_identifier(target.table),
                db=exp.to_identifier(target.db),
                catalog=exp.to_identifier(target.catalog),
            )
        elif kind != "TABLE":
            return False
        found = self._target(target)
        if found is None:
            return False
        catalog, name, path = found
        self._require_no_transaction(f"COMMENT ON {kind} {name}")
        text = tree.expression
        set_comment(self._open(catalog, path), column, None if isinstance(text, exp.Null) else text.name)
        self.con.execute(EMPTY_RESULT)
        return True

    def _alter(self, tree: exp.Alter) -> bool:
        found = self._target(tree.this)
        if found is None:
            return False
        catalog, name, path = found
        alter_table(self.con, tree, self._open(catalog, path), name, self._require_no_transaction)
        self.con.execute(EMPTY_RESULT)
        return True

    def _show_tables(self, tree: exp.Show) -> bool:
        source = tree.args.get("from_") or tree.args.get("from")
        if not isinstance(source, exp.Table):
            return False
        # SHOW TABLES FROM ns.main parses as table 'main' in db 'ns'; FROM ns as table 'ns'.
        catalog_name = (source.db or source.name).lower()
        catalog = self.state.catalogs.get(catalog_name)
        if catalog is None:
            return False
        self.con.execute("SELECT unnest(?::VARCHAR[]) AS name", [catalog.tables()])
        return True

    # -- transactions -------------------------------------------------------------------------

    def begin(self) -> None:
        self.state.pending = []

    def commit(self) -> None:
        pending, self.state.pending = self.state.pending or [], None
        for write in pending:
            write.apply()

    def rollback(self) -> None:
        self.state.pending = None

    def busy_paths(self) -> set[str]:
        return {w.path for w in self.state.pending or []}

    # -- helpers ------------------------------------------------------------------------------

    def _target(self, table: exp.Expression) -> tuple[LanceCatalog, str, str] | None:
        if not isinstance(table, exp.Table):
            return None
        found = resolve(self.con, table)
        if found is None:
            return None
        catalog, name = found
        path = catalog.path(name)
        if path in self.busy_paths():
            raise UnsupportedFeatureError(
                f"writing {catalog.name}.main.{name} twice in one transaction (Lance writes apply at "
                "COMMIT): COMMIT first"
            )
        return catalog, name, path

    def _open(self, catalog: LanceCatalog, path: str) -> LanceDataset:
        return lance_fw.dataset(path, storage_options=catalog.storage_options)

    def _exists(self, catalog: LanceCatalog, path: str) -> bool:
        try:
            self._open(catalog, path)
        except DatasetNotFoundError:
            return False
        return True

    def _sql(self, node: exp.Expression) -> str:
        rewrite_reads(self.con, node, self.busy_paths())
        return node.sql(dialect="duckdb")

    def _where_sql(self, tree: exp.Expression) -> str:
        where = tree.args.get("where")
        return where.this.sql(dialect="duckdb") if where is not None else ""

    def _select_target(
        self, tree: exp.Expression, ds: LanceDataset, outputs: list[exp.Expr], values: object
    ) -> pa.Table:
        """DuckDB's rows of the write's target that its WHERE selects, with their row addresses."""
        table = tree.this
        alias = table.alias or table.name
        query = exp.select(*outputs).from_(
            exp.Table(
                this=exp.to_identifier(TARGET_NAME, quoted=True),
                alias=exp.TableAlias(this=exp.to_identifier(alias)),
            )
        )
        where = tree.args.get("where")
        if where is not None:
            query = query.where(where.this)
        self.con.register(TARGET_NAME, AddressedDataset(ds))
        try:
            return self.run_query(self._sql(query), values)
        finally:
            self.con.unregister(TARGET_NAME)

    def _write(self, path: str, apply: Callable[[], object] | None, rows: int) -> None:
        if apply is not None:
            if self.state.pending is not None:
                self.state.pending.append(PendingWrite(path, apply))
            else:
                apply()
        self.con.execute(COUNT_RESULT, [rows])

    def _require_no_transaction(self, what: str) -> None:
        if self.state.pending is not None:
            raise UnsupportedFeatureError(f"{what} inside a transaction on an attached Lance directory")


def remove_dataset(path: str, storage_options: dict[str, str] | None) -> None:
    """Delete a whole dataset directory (``DROP TABLE``): its manifests first, so that from the first
    deletion on a reader finds no dataset rather than a version whose files are going; locally the
    directory is first renamed away, so it disappears at once."""
    if "://" not in path or path.startswith("file://"):
        local = path.removeprefix("file://")
        doomed = f"{local.rstrip('/')}.dropping-{uuid.uuid4().hex}"
        os.rename(local, doomed)
        shutil.rmtree(doomed)
        return
    storage = resolve_storage(path, storage_options)
    versions = f"{path.rstrip('/')}/{VERSIONS_DIR}"
    for name in storage.list_dir(versions):
        storage.delete(f"{versions}/{name}")
    _remove_files(storage, path.rstrip("/"))


def _remove_files(storage: Storage, path: str) -> None:
    for name in storage.list_dir(path):
        child = f"{path}/{name}"
        if storage.list_dir(child):  # object stores have no directories: a prefix with entries
            _remove_files(storage, child)
        else:
            storage.delete(child)


#: Cheap test before parsing: the statements that (de)attach a directory.
ATTACH_STATEMENT = re.compile(r"^\s*(ATTACH|DETACH)\b", re.I)


def route(
    con: duckdb.DuckDBPyConnection,
    statement: object,
    values: object,
    query: Callable[[str, object], pa.Table],
    run: Callable[[str, object], object],
    storage_options: Callable[[str], dict[str, str] | None],
) -> bool:
    """Run ``statement`` if it concerns an attached Lance directory; False leaves it to DuckDB.

    Args:
        query: runs a query through the statement path and returns its rows.
        run: runs a statement through the statement path (its result stays on ``con``).
        storage_options: the storage options (from DuckDB's secrets) for a path.
    """
    if not isinstance(statement, str):
        return False
    state = session(con)
    if ATTACH_STATEMENT.match(statement):
        tree = parse_statement(statement)
        if isinstance(tree, exp.Attach) and attach(con, tree, storage_options(_attach_root(tree))):
            con.execute(EMPTY_RESULT)
            return True
        if isinstance(tree, exp.Detach) and detach(con, tree):
            con.execute(EMPTY_RESULT)
            return True
        return False
    if index_ddl.may_be_index_ddl(statement):
        if index_ddl.run(con, statement, state.pending is not None, storage_options):
            return True
    calls = table_functions.may_call(statement)
    searches = vector_functions.may_search(statement)
    if not state.catalogs and not calls and not searches:
        return False
    busy = WriteRouter(con, query).busy_paths() if searches else set()
    if searches and vector_functions.explain(con, statement, storage_options, query, values, busy):
        return True
    tree = parse_statement(statement)
    if tree is None:
        return False
    router = WriteRouter(con, query)
    if isinstance(tree, exp.Transaction):
        router.begin()
        return False
    if isinstance(tree, exp.Commit):
        try:
            router.commit()
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return False
    if isinstance(tree, exp.Rollback):
        router.rollback()
        return False
    changed = calls and table_functions.replace_calls(con, tree, storage_options)
    if searches:
        changed = vector_functions.replace_searches(con, tree, storage_options, query, busy) or changed
    if router.handle(tree, values):
        return True
    if rewrite_reads(con, tree, router.busy_paths()) or changed:
        run(tree.sql(dialect="duckdb"), values)
        return True
    return False


def parse_statement(statement: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(statement, read="duckdb")
    except sqlglot.errors.ParseError:
        return None  # DuckDB reports its own syntax error


def _attach_root(tree: exp.Attach) -> str:
    target = tree.this.this if isinstance(tree.this, exp.Alias) else tree.this
    return str(target.this) if isinstance(target, exp.Literal) else ""
