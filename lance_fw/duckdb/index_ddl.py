"""Index DDL of DuckDB's ``lance`` extension, over lance_fw's scalar indices:

- ``CREATE INDEX name ON 'path.lance' (column) USING BTREE [WITH (replace = true, key = value, …)]``;
- ``DROP INDEX name ON 'path.lance'``;
- ``SHOW INDEXES ON 'path.lance'`` (also ``FROM``): the rows of ``lance_indexes``;
- ``REINDEX name ON 'path.lance' [RETRAIN]``: ``optimize_indices`` of that index;
- ``ALTER INDEX name ON 'path.lance' OPTIMIZE [WITH (mode = 'append' | 'merge' | 'retrain', …)]``;
- the table functions ``lance_indexes(ds)`` (``index_name``, ``index_type``, ``fields``,
  ``rows_indexed``, ``details``) and ``lance_create_scalar_index(ds, column, name)`` (a ``BTREE``,
  replacing one of that name; ``Count`` = 1).

Why a hand-written parser: none of these statements is SQL that sqlglot or DuckDB parse (a quoted path
as the indexed table, ``USING`` after the column list, ``REINDEX``), and the extension itself reads
them with a prefix parser. The target is a dataset path (a string literal) or a table of an attached
Lance directory (``ns.main.t``); a ``CREATE INDEX`` on anything else is DuckDB's own and left to it.

Each statement is one Lance commit made at once (refused inside ``BEGIN … COMMIT`` on an attached
directory, as ``ALTER TABLE`` is). Scalar and full-text (``INVERTED``, alias ``FTS``; its
tokenizer options as ``WITH``) and vector (``IVF_FLAT`` / ``IVF_PQ`` / ``IVF_SQ``) indices are built;
other types are refused naming the type, and options lance_fw does not implement (merging, a vector
index's ``RETRAIN``) are refused by lance_fw's API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

import lance_fw
from lance_fw.api.dataset import LanceDataset
from lance_fw.duckdb import table_functions
from lance_fw.duckdb.catalog import resolve
from lance_fw.duckdb.table_functions import COUNT_COLUMNS, DONE, TableFunction, register
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

#: What DuckDB returns for a DDL statement: no rows.
NO_ROWS = "SELECT 1 AS Success LIMIT 0"
#: ``lance_indexes`` / ``SHOW INDEXES`` columns, as the extension names and types them (the types are
#: read by sqlglot's default dialect, which spells DuckDB's ``UBIGINT`` ``BIGINT UNSIGNED``).
INDEX_COLUMNS = (
    ("index_name", "VARCHAR"),
    ("index_type", "VARCHAR"),
    ("fields", "VARCHAR"),
    ("rows_indexed", "BIGINT UNSIGNED"),
    ("details", "VARCHAR"),
)
#: ``ALTER INDEX … OPTIMIZE``'s result (the extension's maintenance statements' shape); lance_fw
#: reports no metrics, so ``MetricsJSON`` is an empty object.
OPTIMIZE_RESULT = "SELECT ?::VARCHAR AS Operation, ?::VARCHAR AS Target, ?::VARCHAR AS MetricsJSON"
#: The index type ``lance_create_scalar_index`` builds (the extension's default scalar parameters).
DEFAULT_SCALAR_TYPE = "BTREE"
#: Vector index types the extension's DDL accepts; lance_fw builds none of them.
VECTOR_INDEX_TYPES = frozenset(
    {"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"}
)
#: Full-text index types; lance_fw builds none.
FULL_TEXT_INDEX_TYPES = frozenset({"INVERTED", "FTS"})
#: Other spellings the extension accepts for an index type.
TYPE_ALIASES = {"LABELLIST": "LABEL_LIST", "BLOOM_FILTER": "BLOOMFILTER", "N_GRAM": "NGRAM"}
#: ``ALTER INDEX … OPTIMIZE WITH (mode = …)`` values.
OPTIMIZE_MODES = ("append", "merge", "retrain")

#: Each statement kind as the error messages name it.
STATEMENT_NAMES = {
    "create": "CREATE INDEX",
    "drop": "DROP INDEX",
    "show": "SHOW INDEXES",
    "reindex": "REINDEX",
    "optimize": "ALTER INDEX … OPTIMIZE",
}
#: Cheap test before tokenizing: a statement that starts like one of the index statements.
_MAY_BE_INDEX_DDL = re.compile(
    r"\s*(create\s+index|drop\s+index|show\s+indexes|reindex|alter\s+index)\b", re.I
)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<quoted>"(?:[^"]|"")*")
      | (?P<number>[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<punct>[().,=])
    )""",
    re.X,
)


@dataclass(frozen=True)
class Token:
    """One token of an index statement: a string literal, quoted identifier, number, word or mark."""

    kind: str  # string, quoted, number, word or punct
    text: str

    @property
    def value(self) -> str:
        """The text a string literal or quoted identifier stands for; a word or mark as written."""
        if self.kind in ("string", "quoted"):
            return self.text[1:-1].replace(self.text[0] * 2, self.text[0])
        return self.text


class _Tokens:
    """The statement's tokens, read front to back."""

    def __init__(self, statement: str) -> None:
        text = statement.strip().rstrip(";").strip()
        self.items: list[Token] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise _NotIndexDdl
            kind = match.lastgroup or "punct"
            self.items.append(Token(kind, match.group(kind)))
            position = match.end()
        self.position = 0

    def peek(self) -> Token | None:
        return self.items[self.position] if self.position < len(self.items) else None

    def next(self, what: str) -> Token:
        token = self.peek()
        if token is None:
            raise InvalidArgumentError(f"index DDL: {what} expected at the end of the statement")
        self.position += 1
        return token

    def keyword(self, *words: str) -> str | None:
        """Consume the next token if it is one of ``words`` (case-insensitive); return it in lower case."""
        token = self.peek()
        if token is not None and token.kind == "word" and token.text.lower() in words:
            self.position += 1
            return token.text.lower()
        return None

    def mark(self, mark: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "punct" and token.text == mark:
            self.position += 1
            return True
        return False

    def expect(self, mark: str, what: str) -> None:
        if not self.mark(mark):
            raise InvalidArgumentError(f"index DDL: {what}")

    def identifier(self, what: str) -> str:
        token = self.next(what)
        if token.kind not in ("word", "quoted"):
            raise InvalidArgumentError(f"index DDL: {what} expected, got {token.text!r}")
        return token.value

    def at_end(self) -> bool:
        return self.peek() is None


class _NotIndexDdl(Exception):
    """The statement is not one of the index statements (DuckDB gets it unchanged)."""


@dataclass
class IndexStatement:
    """One parsed index statement."""

    kind: str  # a key of STATEMENT_NAMES
    target: str  # the path, or the table name as written
    target_is_path: bool
    index_name: str = ""
    columns: list[str] = field(default_factory=list)
    index_type: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    retrain: bool = False


def may_be_index_ddl(statement: object) -> bool:
    """Whether ``statement`` may be an index statement (a quick textual test)."""
    return isinstance(statement, str) and _MAY_BE_INDEX_DDL.match(statement) is not None


def parse(statement: str) -> IndexStatement | None:
    """The index statement ``statement`` is, or None where it is not one (DuckDB's own ``CREATE INDEX``)."""
    try:
        tokens = _Tokens(statement)
        return _parse(tokens)
    except _NotIndexDdl:
        return None


def _parse(tokens: _Tokens) -> IndexStatement:
    verb = tokens.keyword("create", "drop", "show", "reindex", "alter")
    if verb == "show":
        tokens.keyword("indexes")
        if tokens.keyword("on", "from") is None:
            raise _NotIndexDdl
        parsed = IndexStatement("show", *_target(tokens))
        _end(tokens, "SHOW INDEXES")
        return parsed
    if verb != "reindex":
        tokens.keyword("index")
    name = tokens.identifier("an index name")
    if tokens.keyword("on") is None:
        raise _NotIndexDdl  # DuckDB's own (DROP INDEX name) or not SQL at all: DuckDB answers
    target, is_path = _target(tokens)
    if verb == "create":
        return _create(tokens, name, target, is_path)
    if verb == "drop":
        _end(tokens, f"DROP INDEX {name}")
        return IndexStatement("drop", target, is_path, name)
    if verb == "reindex":
        retrain = tokens.keyword("retrain") is not None
        options = {} if retrain or tokens.at_end() else _with_options(tokens, f"REINDEX {name}")
        _end(tokens, f"REINDEX {name}")
        return IndexStatement("reindex", target, is_path, name, options=options, retrain=retrain)
    if tokens.keyword("optimize") is None:
        raise UnsupportedFeatureError(f"ALTER INDEX {name}: only OPTIMIZE")
    options = {} if tokens.at_end() else _with_options(tokens, f"ALTER INDEX {name}")
    _end(tokens, f"ALTER INDEX {name}")
    return IndexStatement("optimize", target, is_path, name, options=options)


def _create(tokens: _Tokens, name: str, target: str, is_path: bool) -> IndexStatement:
    what = f"CREATE INDEX {name}"
    tokens.expect("(", f"{what}: a column list expected")
    columns = [tokens.identifier("a column name")]
    while tokens.mark(","):
        columns.append(tokens.identifier("a column name"))
    tokens.expect(")", f"{what}: ')' expected after the columns")
    if tokens.keyword("using") is None:
        if not is_path:
            raise _NotIndexDdl  # DuckDB's own index on a DuckDB table
        raise InvalidArgumentError(
            f"{what}: USING <index type> expected (BTREE, BITMAP, LABEL_LIST, ZONEMAP)"
        )
    index_type = normalize_type(tokens.identifier("an index type"))
    options = {} if tokens.at_end() else _with_options(tokens, what)
    _end(tokens, what)
    return IndexStatement("create", target, is_path, name, columns, index_type, options)


def _target(tokens: _Tokens) -> tuple[str, bool]:
    token = tokens.next("a dataset")
    if token.kind == "string":
        return token.value, True
    if token.kind not in ("word", "quoted"):
        raise InvalidArgumentError(f"index DDL: a dataset path or table name expected, got {token.text!r}")
    parts = [token.text]
    while tokens.mark("."):
        parts.append(tokens.next("a table name").text)
    return ".".join(parts), False


def _with_options(tokens: _Tokens, what: str) -> dict[str, Any]:
    tokens.keyword("with")
    tokens.expect("(", f"{what}: WITH (key = value, …) expected")
    options: dict[str, Any] = {}
    while not tokens.mark(")"):
        key = tokens.identifier("an option name").lower()
        tokens.expect("=", f"{what}: option {key} needs '= value'")
        options[key] = _option_value(tokens.next(f"the value of {key}"))
        if not tokens.mark(","):
            tokens.expect(")", f"{what}: ',' or ')' expected after option {key}")
            break
    return options


def _option_value(token: Token) -> Any:
    if token.kind == "number":
        return float(token.text) if any(c in token.text for c in ".eE") else int(token.text)
    if token.kind == "word" and token.text.lower() in ("true", "false"):
        return token.text.lower() == "true"
    return token.value


def _end(tokens: _Tokens, what: str) -> None:
    if not tokens.at_end():
        raise InvalidArgumentError(f"{what}: unexpected {tokens.next('').text!r}")


def normalize_type(name: str) -> str:
    """An index type as the extension reads it: upper case, ``-`` and spaces as ``_``, aliases folded."""
    upper = name.strip().upper().replace("-", "_").replace(" ", "_")
    return TYPE_ALIASES.get(upper, upper)


# -- running ----------------------------------------------------------------------------------------


def run(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    in_transaction: bool,
    storage_options: Callable[[str], dict[str, str] | None],
) -> bool:
    """Run ``statement`` if it is an index statement on a Lance dataset (its result left on ``con``);
    False leaves it to DuckDB."""
    parsed = parse(statement)
    if parsed is None:
        return False
    path, options = _dataset_path(con, parsed, storage_options)
    if path is None:
        return False
    if in_transaction and parsed.kind != "show":
        raise UnsupportedFeatureError(f"{STATEMENT_NAMES[parsed.kind]} inside a transaction")
    if parsed.kind == "show":
        _show(con, parsed.target, storage_options)
        return True
    ds = lance_fw.dataset(path, storage_options=options)
    if parsed.kind == "create":
        create_index(ds, parsed)
    elif parsed.kind == "drop":
        ds.drop_index(parsed.index_name)
    elif parsed.kind == "reindex":
        _optimize(
            ds, parsed.index_name, {"mode": "retrain" if parsed.retrain else "append", **parsed.options}
        )
    else:
        _optimize(ds, parsed.index_name, parsed.options)
        con.execute(OPTIMIZE_RESULT, ["optimize_index", parsed.target, "{}"])
        return True
    con.execute(NO_ROWS)
    return True


def _dataset_path(
    con: duckdb.DuckDBPyConnection,
    parsed: IndexStatement,
    storage_options: Callable[[str], dict[str, str] | None],
) -> tuple[str | None, dict[str, str] | None]:
    """The dataset the statement is on, with its storage options; (None, None): not a Lance table."""
    if parsed.target_is_path:
        if not parsed.target:
            raise InvalidArgumentError(f"{STATEMENT_NAMES[parsed.kind]}: the dataset path is empty")
        return parsed.target, storage_options(parsed.target)
    try:
        table = sqlglot.parse_one(parsed.target, read="duckdb", into=exp.Table)
    except sqlglot.errors.ParseError:
        table = None
    found = resolve(con, table) if isinstance(table, exp.Table) else None
    if found is None:
        if parsed.kind == "create":
            return None, None
        raise UnsupportedFeatureError(
            f"{STATEMENT_NAMES[parsed.kind]} … ON {parsed.target}: only a Lance dataset path or a table of an "
            "attached Lance directory"
        )
    catalog, name = found
    return catalog.path(name), catalog.storage_options


def create_index(ds: LanceDataset, parsed: IndexStatement) -> None:
    """``CREATE INDEX``: one scalar index on one column, as the extension creates it (no replacing
    unless ``replace = true``; ``params = '<json>'`` replaces the other options)."""
    what = f"CREATE INDEX {parsed.index_name} USING {parsed.index_type}"
    if parsed.index_type in VECTOR_INDEX_TYPES:
        _create_vector_index(ds, parsed, what)
        return
    index_type = "INVERTED" if parsed.index_type in FULL_TEXT_INDEX_TYPES else parsed.index_type
    if len(parsed.columns) != 1:
        raise UnsupportedFeatureError(f"{what}: an index on {len(parsed.columns)} columns (one column only)")
    options = dict(parsed.options)
    replace = options.pop("replace", False)  # a bool, or lance_fw's API refuses it
    train = options.pop("train", True)
    if options.pop("retrain", False):
        raise InvalidArgumentError(f"{what}: CREATE INDEX does not accept retrain; use REINDEX")
    if "params" in options:
        params = json.loads(str(options.pop("params")))
        if not isinstance(params, dict):
            raise InvalidArgumentError(f"{what}: params must be a JSON object")
        options = params
    ds.create_scalar_index(
        parsed.columns[0], index_type, name=parsed.index_name, replace=replace, train=train, **options
    )


def _create_vector_index(ds: LanceDataset, parsed: IndexStatement, what: str) -> None:
    """``CREATE INDEX … USING IVF_*``: ``ds.create_index`` with the extension's option names
    (``metric_type`` is pylance's ``metric``); types lance_fw does not build are refused there."""
    if len(parsed.columns) != 1:
        raise UnsupportedFeatureError(f"{what}: an index on {len(parsed.columns)} columns (one column only)")
    options = dict(parsed.options)
    if "params" in options:
        params = json.loads(str(options.pop("params")))
        if not isinstance(params, dict):
            raise InvalidArgumentError(f"{what}: params must be a JSON object")
        options = {**params, **options}
    if "metric_type" in options:
        options["metric"] = options.pop("metric_type")
    replace = options.pop("replace", False)  # a bool, or lance_fw's API refuses it
    ds.create_index(parsed.columns[0], parsed.index_type, name=parsed.index_name, replace=replace, **options)


def _optimize(ds: LanceDataset, name: str, options: dict[str, Any]) -> None:
    """``ALTER INDEX … OPTIMIZE`` / ``REINDEX``: ``optimize_indices`` of index ``name`` (lance_fw refuses
    merging, and retraining a vector index, by name, as its API does)."""
    options = dict(options)
    mode = str(options.pop("mode", "append")).lower()
    if mode not in OPTIMIZE_MODES:
        raise InvalidArgumentError(f"optimize index {name}: mode {mode!r} is not one of {OPTIMIZE_MODES}")
    merge = options.pop("num_indices_to_merge", None)
    if options:
        raise UnsupportedFeatureError(f"optimize index {name}: option(s) {sorted(options)}")
    if name not in {d.name for d in ds.describe_indices()}:
        raise InvalidArgumentError(f"Index not found: {name!r}")
    ds.optimize.optimize_indices(
        index_names=[name],
        num_indices_to_merge=None if mode != "merge" else (merge if merge is not None else 1),
        retrain=True if mode == "retrain" else None,
    )


def _show(
    con: duckdb.DuckDBPyConnection, target: str, storage_options: Callable[[str], dict[str, str] | None]
) -> None:
    """``SHOW INDEXES``: the rows of ``lance_indexes(target)`` (a path or an attached table's name)."""
    call = exp.Table(this=exp.Anonymous(this="lance_indexes", expressions=[exp.Literal.string(target)]))
    tree = exp.select(exp.Star()).from_(call)
    table_functions.replace_calls(con, tree, storage_options)
    con.execute(tree.sql(dialect="duckdb"))


# -- table functions --------------------------------------------------------------------------------


def rows_indexed(ds: LanceDataset, covered: set[int]) -> int:
    """The live rows of the dataset's fragments an index covers (the extension's ``rows_indexed``:
    0 for an index that covers no fragment)."""
    return sum(f.count_rows() for f in ds.get_fragments() if f.fragment_id in covered)


def index_rows(ds: LanceDataset) -> list[tuple[Any, ...]]:
    """One ``lance_indexes`` row per index of ``ds``, by name."""
    rows = []
    for description in ds.describe_indices():
        covered: set[int] = set()
        for segment in description.segments:
            covered |= set(segment.fragment_ids)
        try:
            details: str | None = json.dumps(description.details, sort_keys=True, default=str)
        except UnsupportedFeatureError:
            details = None  # a type whose details lance_fw does not decode (the extension: NULL)
        rows.append(
            (
                description.name,
                description.index_type,
                ",".join(description.field_names),
                rows_indexed(ds, covered),
                details,
            )
        )
    return sorted(rows, key=lambda row: row[0])


def _create_scalar_index(ds: LanceDataset, args: list[Any]) -> list[tuple[Any, ...]]:
    column, name = args
    if not column or not name:
        raise InvalidArgumentError(
            "lance_create_scalar_index: the column and the index name cannot be NULL or empty"
        )
    ds.create_scalar_index(str(column), DEFAULT_SCALAR_TYPE, name=str(name), replace=True)
    return DONE


register(TableFunction("lance_indexes", (0, 0), INDEX_COLUMNS, lambda ds, _args: index_rows(ds)))
register(TableFunction("lance_create_scalar_index", (2, 2), COUNT_COLUMNS, _create_scalar_index))
