"""``ATTACH 'dir' AS ns (TYPE LANCE)``: a directory of ``name.lance`` datasets as a DuckDB catalog.

DuckDB's Python API cannot add a catalog, so lance_fw keeps the attached directories per connection and
rewrites each statement that names one of their tables (``ns.main.t``, or ``ns.t``) to read the dataset's
path instead (``FROM 'dir/t.lance' AS t``), which the statement runner registers like any quoted
``.lance`` path: every statement sees the latest version, and tables created in the directory by anyone
appear at once (no listing is cached). Writes to these tables are ``dml.py``'s.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import duckdb
from sqlglot import exp

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.table.namespace_dir import VERSIONS_DIR, DirectoryTables  # noqa: F401  (VERSIONS_DIR: dml.py imports it from here)

#: The only schema of an attached Lance directory (as DuckDB's lance extension names it).
MAIN_SCHEMA = "main"


@dataclass
class LanceCatalog:
    """One attached directory; which tables it holds and where is ``DirectoryTables``' (shared with
    ``lance_fw.namespace.DirectoryNamespace``, so both agree on names and paths)."""

    name: str
    root: str
    storage_options: dict[str, str] | None = None

    def _tables(self) -> DirectoryTables:
        return DirectoryTables(self.root, self.storage_options)

    def path(self, table: str) -> str:
        """The dataset path of ``table``; a name that could leave the directory is refused."""
        return self._tables().path(table)

    def tables(self) -> list[str]:
        """The datasets in the directory now (those with data), sorted by name."""
        return self._tables().tables()


@dataclass
class Session:
    """A connection's attached catalogs and, inside ``BEGIN … COMMIT``, its pending Lance writes."""

    catalogs: dict[str, LanceCatalog] = field(default_factory=dict)
    pending: list[Any] | None = None  # dml.PendingWrite objects while a transaction is open


_SESSIONS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Session] = weakref.WeakKeyDictionary()


def session(con: duckdb.DuckDBPyConnection) -> Session:
    """The connection's session state (created on first use)."""
    state = _SESSIONS.get(con)
    if state is None:
        state = _SESSIONS[con] = Session()
    return state


def attach(con: duckdb.DuckDBPyConnection, tree: exp.Attach, storage_options: dict[str, str] | None) -> bool:
    """Record ``ATTACH 'dir' AS ns (TYPE LANCE)``; False when the statement is not a Lance attach."""
    options = {node_text(o.this).lower(): node_text(o.args.get("expression")) for o in tree.expressions or []}
    if options.get("type", "").lower() != "lance":
        return False
    unknown = sorted(set(options) - {"type"})
    if unknown:
        raise UnsupportedFeatureError(f"ATTACH … (TYPE LANCE): option(s) {unknown} are not supported")
    target = tree.this
    alias = target.alias if isinstance(target, exp.Alias) else ""
    source = target.this if isinstance(target, exp.Alias) else target
    if not isinstance(source, exp.Literal) or not source.is_string:
        raise UnsupportedFeatureError("ATTACH … (TYPE LANCE): the directory must be a quoted path")
    root = source.this
    name = (alias or root.rstrip("/").rsplit("/", 1)[-1]).lower()
    state = session(con)
    if name in state.catalogs:
        if tree.args.get("exists"):
            return True
        raise InvalidArgumentError(f"ATTACH: a database named {name!r} is already attached")
    state.catalogs[name] = LanceCatalog(name, root, storage_options)
    return True


def detach(con: duckdb.DuckDBPyConnection, tree: exp.Detach) -> bool:
    """Forget an attached Lance directory; False when the name is not one (DuckDB's to detach)."""
    name = node_text(tree.this).lower()
    return session(con).catalogs.pop(name, None) is not None


def resolve(con: duckdb.DuckDBPyConnection, table: exp.Table) -> tuple[LanceCatalog, str] | None:
    """(catalog, table name) when ``table`` names a table of an attached Lance directory."""
    catalogs = session(con).catalogs
    if not catalogs:
        return None
    catalog, schema = table.catalog.lower(), table.db.lower()
    if catalog:
        if catalog not in catalogs:
            return None
        if schema != MAIN_SCHEMA:
            raise UnsupportedFeatureError(
                f"{catalog}.{schema}: an attached Lance directory has only the schema {MAIN_SCHEMA!r}"
            )
        return catalogs[catalog], table.name
    if schema in catalogs:
        return catalogs[schema], table.name
    return None


def rewrite_reads(con: duckdb.DuckDBPyConnection, tree: exp.Expr, busy: set[str]) -> bool:
    """Replace every table of an attached directory in ``tree`` by its dataset path (in place).

    Args:
        busy: dataset paths with writes pending in the open transaction; reading one is refused (the
            read would not see them).
    Returns:
        Whether anything was replaced.
    """
    changed = False
    for table in list(tree.find_all(exp.Table)):
        found = resolve(con, table)
        if found is None:
            continue
        catalog, name = found
        path = catalog.path(name)
        if path in busy:
            raise UnsupportedFeatureError(
                f"reading {catalog.name}.{MAIN_SCHEMA}.{name} after writing it in the same transaction "
                "(Lance writes apply at COMMIT): COMMIT first"
            )
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name))
        table.replace(exp.Table(this=exp.to_identifier(path, quoted=True), alias=alias))
        changed = True
    return changed


def node_text(node: exp.Expression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, exp.Literal | exp.Var | exp.Identifier):
        return str(node.this)
    return node.sql(dialect="duckdb")
