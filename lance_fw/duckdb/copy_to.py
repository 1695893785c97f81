"""``COPY (query) TO 'path.lance' (FORMAT lance, …)``: DuckDB's ``lance`` extension's write statement.

DuckDB's Python API cannot register a copy function, so the statement is recognised here (parsed with
sqlglot's DuckDB dialect), its query runs through lance_fw's statement path (so it may read Lance datasets
itself), and the rows stream from DuckDB's Arrow reader into ``lance_fw.write_dataset`` -- one Lance
commit, never a full materialisation. The options are the extension's (``mode``, ``data_storage_version``,
``max_rows_per_file``, ``max_rows_per_group``, ``max_bytes_per_file``) plus DuckDB's generic
``write_empty_file``; any other option is refused by name rather than ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

import lance_fw
from lance_fw.duckdb.catalog import node_text
from lance_fw.duckdb.s3_secrets import storage_options_for
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

#: The copy format this module answers for (``FORMAT lance``).
LANCE_FORMAT = "lance"
#: The extension's write modes; ``create`` (its default) fails where a dataset exists.
MODES = ("create", "append", "overwrite")
#: Integer options, passed to ``write_dataset`` under the same names.
INT_OPTIONS = ("max_rows_per_file", "max_rows_per_group", "max_bytes_per_file")
#: DuckDB's generic COPY option: false writes nothing at all when the query returns no rows.
WRITE_EMPTY_FILE = "write_empty_file"
#: Rows per Arrow batch pulled from DuckDB (its vector size times a few; memory stays bounded).
BATCH_ROWS = 8192
#: Cheap test before parsing: only statements that start with COPY and mention lance are parsed.
_MAYBE_COPY = re.compile(r"^\s*COPY\b.*\blance\b", re.I | re.S)


@dataclass
class CopyToLance:
    """A parsed ``COPY … TO … (FORMAT lance)``: the query to run, the target and write options."""

    query: str
    path: str
    mode: str = "create"
    write_empty_file: bool = True
    options: dict[str, Any] = field(default_factory=dict)


def parse(statement: object) -> CopyToLance | None:
    """The plan for ``statement`` if it is a ``COPY … TO … (FORMAT lance)``, else None.

    Raises:
        InvalidArgumentError / UnsupportedFeatureError: a Lance COPY with a bad or unknown option.
    """
    if not isinstance(statement, str) or not _MAYBE_COPY.match(statement):
        return None
    try:
        tree = sqlglot.parse_one(statement, read="duckdb")
    except sqlglot.errors.ParseError:
        return None  # DuckDB reports its own syntax error
    if not isinstance(tree, exp.Copy) or tree.args.get("kind"):  # kind True: COPY … FROM
        return None
    params = {_param_name(p): p.args.get("expression") for p in tree.args.get("params") or []}
    fmt = params.pop("format", None)
    if fmt is None or node_text(fmt).lower() != LANCE_FORMAT:
        return None
    files = tree.args.get("files") or []
    if len(files) != 1 or not isinstance(files[0], exp.Literal) or not files[0].is_string:
        raise UnsupportedFeatureError("COPY … TO (FORMAT lance): the target must be one quoted path")
    plan = CopyToLance(query=_query_sql(tree.this), path=files[0].this)
    for name, value in params.items():
        _apply_option(plan, name, value)
    return plan


def _param_name(param: exp.Expression) -> str:
    return node_text(param.this).lower()


def _query_sql(source: exp.Expression) -> str:
    if isinstance(source, exp.Subquery):
        return source.this.sql(dialect="duckdb")
    if isinstance(source, exp.Table):  # COPY tbl TO …
        return f"SELECT * FROM {source.sql(dialect='duckdb')}"
    return source.sql(dialect="duckdb")


def _apply_option(plan: CopyToLance, name: str, value: exp.Expression | None) -> None:
    where = f"COPY … TO '{plan.path}' (FORMAT lance): option {name!r}"
    if value is None:
        raise InvalidArgumentError(f"{where} needs a value")
    if name == "mode":
        mode = node_text(value).lower()
        if mode not in MODES:
            raise InvalidArgumentError(f"{where} must be one of {list(MODES)}, not {node_text(value)!r}")
        plan.mode = mode
    elif name == "data_storage_version":
        version = node_text(value)
        if not version:
            raise InvalidArgumentError(f"{where} cannot be empty")
        plan.options[name] = version
    elif name in INT_OPTIONS:
        try:
            number = int(node_text(value))
        except ValueError:
            raise InvalidArgumentError(
                f"{where} must be a positive integer, not {node_text(value)!r}"
            ) from None
        if number <= 0:
            raise InvalidArgumentError(f"{where} must be a positive integer, not {number}")
        plan.options[name] = number
    elif name == WRITE_EMPTY_FILE:
        if isinstance(value, exp.Boolean):
            plan.write_empty_file = bool(value.this)
        elif node_text(value).lower() in ("true", "false", "1", "0"):
            plan.write_empty_file = node_text(value).lower() in ("true", "1")
        else:
            raise InvalidArgumentError(f"{where} must be true or false")
    else:
        raise UnsupportedFeatureError(
            f"{where} is not supported (lance_fw takes mode, data_storage_version, "
            f"{', '.join(INT_OPTIONS)}, {WRITE_EMPTY_FILE})"
        )


def run(con: duckdb.DuckDBPyConnection, plan: CopyToLance, parameters: Any = None) -> int:
    """Run the plan's query on ``con`` (whose Lance names are registered by the caller) and write its
    rows to the dataset; returns the number of rows written.

    The write is one commit: a failure leaves the dataset as it was (``write_dataset``'s guarantee).
    """
    # A new statement ends the connection's previous result, as ``execute`` would (a relation refuses to
    # start while one is unfinished); a relation streams Arrow batches without the DB-API result's copy.
    con.abort()
    reader = con.sql(plan.query, params=parameters).to_arrow_reader(BATCH_ROWS)
    first = None
    if not plan.write_empty_file:
        first = _first_non_empty(reader)
        if first is None:
            return 0
    counted = _Counting(reader, first)
    lance_fw.write_dataset(
        counted.reader(),
        plan.path,
        mode=plan.mode,
        storage_options=storage_options_for(con, plan.path),
        **plan.options,
    )
    return counted.rows


def _first_non_empty(reader: Any) -> Any:
    for batch in reader:
        if batch.num_rows:
            return batch
    return None


class _Counting:
    """Counts the rows a record-batch reader yields (COPY reports them), with a batch already read."""

    def __init__(self, reader: Any, first: Any) -> None:
        self._source = reader
        self._first = first
        self.rows = 0

    def reader(self) -> Any:
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self._source.schema, self._batches())

    def _batches(self) -> Any:
        if self._first is not None:
            self.rows += self._first.num_rows
            yield self._first
        while True:
            try:
                batch = self._source.read_next_batch()
            except StopIteration:
                return
            except OSError as exc:  # DuckDB's error while it streamed, as pyarrow reports it
                raise duckdb_error(exc) from exc
            self.rows += batch.num_rows
            yield batch


def duckdb_error(exc: OSError) -> duckdb.Error:
    """The DuckDB exception behind an error pyarrow raised while reading DuckDB's Arrow stream.

    pyarrow reports it as ``OSError("<Kind> Error: …")``; DuckDB names its Python exception classes after
    that kind (``Invalid Input Error`` -> ``duckdb.InvalidInputException``), so callers see the class
    DuckDB itself raises for the same failure in a non-Lance COPY.
    """
    message = str(exc)
    kind, sep, _ = message.partition(" Error:")
    name = "".join(word[:1].upper() + word[1:] for word in kind.split()) + "Exception"
    cls = getattr(duckdb, name, None) if sep else None
    if not (isinstance(cls, type) and issubclass(cls, duckdb.Error)):
        cls = duckdb.Error
    return cls(message)
