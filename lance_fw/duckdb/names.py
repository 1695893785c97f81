"""The view name the ``lance_scan`` macro (``sql/lance_scan.sql``) computes from its arguments, and back.

The name carries the path and version themselves (hex of their UTF-8 text), not a digest, so the name
DuckDB's binder reports missing is all lance_fw needs to know which dataset a statement reads: DuckDB has
already evaluated the arguments, whatever literal syntax, parameter or expression the user wrote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

import duckdb

from lance_fw.duckdb.rows_only import may_read_rows_only, rows_only_names
from lance_fw.errors import InvalidArgumentError

#: Prefix of every name the macro computes (keep in sync with ``sql/lance_scan.sql``).
PREFIX = "__lance_"
#: Prefix of the name ``direct_reads`` gives a dataset its query reads no column of
#: (``SELECT count(*) FROM lance_scan('p')``): only its rows are read (``LiveRowCount``).
ROWS_PREFIX = PREFIX + "rows_"

#: A ``ROWS_PREFIX`` name in a query ``direct_reads`` rewrote.
_ROWS_NAME = re.compile('"(' + ROWS_PREFIX + r'[0-9A-F]*_[0-9A-F]*)"')
#: DuckDB's message for a ``query_table`` name that is not registered.
_MISSING = re.compile(r"Table with name (" + PREFIX + r"(?:rows_)?([0-9A-F]*)_([0-9A-F]*)) does not exist")
_INTEGER = re.compile(r"[+-]?[0-9]+")
#: DuckDB's message for any unknown table name; a string literal in ``FROM`` is looked up as one.
_MISSING_TABLE = re.compile(r"Table with name (.+?) does not exist!")
#: ``lance_scan('path')`` or ``lance_scan('path', version := n)`` written with literals, as most
#: statements read a dataset (group 1: the path with its quotes doubled, group 2: the version)
_LITERAL_SCAN = re.compile(
    r"\blance_scan\s*\(\s*'((?:[^']|'')*)'\s*(?:,\s*version\s*:=\s*([0-9]+)\s*)?\)", re.IGNORECASE
)
#: The ending by which a path in ``FROM 'path'`` names a Lance dataset (DuckDB's ``lance`` extension's
#: replacement scan goes by it too); a trailing slash is allowed.
LANCE_SUFFIX = ".lance"


def view_name(uri: str, version: int | str | None, rows_only: bool = False) -> str:
    """The name ``lance_scan(uri, version := version)`` reads (what the macro computes); with
    ``rows_only``, the name of its rows alone (see ``ROWS_PREFIX``)."""
    tail = "" if version is None else str(version).encode().hex().upper()
    return f"{ROWS_PREFIX if rows_only else PREFIX}{uri.encode().hex().upper()}_{tail}"


def reads_rows_only(name: str) -> bool:
    """Whether ``name`` is one ``direct_reads`` gave a dataset whose columns its query never reads."""
    return name.startswith(ROWS_PREFIX)


@lru_cache(maxsize=256)
def literal_scan_names(sql: str) -> tuple[str, ...]:
    """The names of the ``lance_scan`` calls ``sql`` spells with literals, a statement's likely
    datasets: a guess from the text (a call inside a string or a comment is found too), which the
    caller registers ahead only to save DuckDB a failed bind; the binder's report stays the truth.
    (Kept per text: a relation or a repeated query asks for the same text at every run.) With the
    name ``direct_reads`` gives a call whose columns the query never reads."""
    names = [_literal_name(m) for m in _LITERAL_SCAN.finditer(sql)]
    direct = direct_reads(sql)
    rows = _ROWS_NAME.search(direct) if direct is not None else None
    if rows is not None:
        names.append(rows.group(1))
    return tuple(dict.fromkeys(names))


def _literal_name(call: re.Match[str], rows_only: bool = False) -> str:
    """The name the macro computes for a ``_LITERAL_SCAN`` match (``rows_only``: see ``view_name``)."""
    path, version = call.groups()
    return view_name(path.replace("''", "'"), int(version) if version else None, rows_only)


#: The first keywords of the statements whose literal ``lance_scan`` calls ``direct_reads`` replaces:
#: queries, which write nothing and store no SQL text (a view keeps the call as written).
_QUERY_KEYWORDS = frozenset({"select", "with", "from"})


@lru_cache(maxsize=256)
def direct_reads(sql: str) -> str | None:
    """The query ``sql`` with each ``lance_scan('path' [, version := n])`` spelled with literals read
    as the name the macro would compute (quoted), or None when there is none to replace (or ``sql``
    is not a query). DuckDB then binds it without expanding the macro, whose argument arithmetic is
    most of a point lookup's bind. Only calls starting at an identifier token of DuckDB's own
    tokenizer (not qualified) are replaced, so one inside a string or a comment is left as it is;
    the caller runs ``sql`` as written wherever the result fails (the implicit alias differs: a
    self-join without aliases, or an error message naming it). A call whose query reads none of
    its columns (``SELECT count(*) FROM lance_scan('p')``, ``rows_only.py``) is read as its rows'
    name instead (``ROWS_PREFIX``), and so is a quoted ``FROM 'p.lance'`` path whose query reads
    none of its columns (any other stays as written, for the replacement scan).
    """
    lowered = sql.lower()
    if (
        "lance_scan" not in lowered
        and LANCE_SUFFIX + "'" not in lowered
        and LANCE_SUFFIX + "/'" not in lowered
    ):
        return None
    tokens = duckdb.tokenize(sql)
    ends = [start for start, _ in tokens[1:]] + [len(sql)]
    first_word = sql[: ends[0]].strip().lower() if tokens else ""
    if not tokens or tokens[0][1] != duckdb.token_type.keyword or first_word not in _QUERY_KEYWORDS:
        return None
    reads: list[_Read] = []
    for i, (start, kind) in enumerate(tokens):
        if reads and start < reads[-1].end:
            continue
        before = sql[tokens[i - 1][0] : start].strip().lower() if i else ""
        if kind == duckdb.token_type.identifier and before != ".":  # (qualified: not the macro)
            call = _LITERAL_SCAN.match(sql, start)
            if call is not None:
                reads.append(_Read(i, start, call.end(), _literal_name(call), _literal_name(call, True)))
        elif kind == duckdb.token_type.string_const and before in _TABLE_KEYWORDS:
            text = sql[start : ends[i]].strip()
            path = text[1:-1].replace("''", "'") if len(text) > 1 and text[0] == text[-1] == "'" else ""
            if path.rstrip("/").endswith(LANCE_SUFFIX):
                reads.append(_Read(i, start, start + len(text), path, view_name(path, None, True), path))
    if not reads:
        return None
    rows_only: set[str] = set()
    if any(may_read_rows_only(sql, tokens, ends, read.token) for read in reads):
        plain = _replaced(sql, reads, set())
        rows_only = rows_only_names(plain, {read.name for read in reads})
    if all(read.path is not None and read.name not in rows_only for read in reads):
        return None  # only quoted paths, read for their columns: the replacement scan's as before
    return _replaced(sql, reads, rows_only)


#: The keywords after which a quoted string in a query names a table (``FROM 'p.lance'``).
_TABLE_KEYWORDS = frozenset({"from", "join"})


@dataclass(frozen=True)
class _Read:
    """A dataset a query's text reads at ``[start, end)``, token ``token``: a literal ``lance_scan``
    call (``name`` the macro's, ``path`` None) or a quoted ``.lance`` path (``name`` the path, as
    the table name DuckDB and sqlglot see); ``rows_name`` its ``ROWS_PREFIX`` name."""

    token: int
    start: int
    end: int
    name: str
    rows_name: str
    path: str | None = None


def _replaced(sql: str, reads: list[_Read], rows_only: set[str]) -> str:
    """``sql`` with each call replaced by its name, quoted, or by its rows' name where its name is
    in ``rows_only``; a quoted path not in ``rows_only`` is left as it is."""
    pieces, done = [], 0
    for read in reads:
        if read.name in rows_only:
            name = read.rows_name
        elif read.path is None:
            name = read.name
        else:
            continue
        pieces += [sql[done : read.start], '"' + name + '"']
        done = read.end
    return "".join(pieces) + sql[done:]


def missing_name(message: str) -> str | None:
    """The macro-computed name a DuckDB catalog error says is not registered, if it is one."""
    match = _MISSING.search(message)
    return match.group(1) if match else None


def replacement_path(message: str) -> str | None:
    """The dataset path of ``FROM 'path.lance'`` that a DuckDB catalog error reports missing, if it is one.

    DuckDB reads a quoted path in ``FROM`` as a table name and, failing to find it, tries its replacement
    scans; the Python API cannot add one, so lance_fw registers the dataset under that very name for the
    statement, as it does for ``lance_scan`` names.
    """
    match = _MISSING_TABLE.search(message)
    if match is None or match.group(1).startswith(PREFIX):
        return None
    name = match.group(1)
    return name if name.rstrip("/").endswith(LANCE_SUFFIX) else None


def decode(name: str) -> tuple[str, int | str | None]:
    """(uri, version) of a macro-computed name (or a ``ROWS_PREFIX`` one); the version is an int, a
    tag name, or None for latest."""
    prefix = ROWS_PREFIX if reads_rows_only(name) else PREFIX
    path_hex, _, version_hex = name[len(prefix) :].partition("_")
    uri = bytes.fromhex(path_hex).decode()
    if not uri:
        raise InvalidArgumentError("lance_scan: the dataset path is empty")
    if not version_hex:
        return uri, None
    version = bytes.fromhex(version_hex).decode()
    return uri, int(version) if _INTEGER.fullmatch(version) else version


def same_dataset(uri: str) -> str:
    """A key under which two spellings of one dataset's URI (``d/t.lance`` and ``d/t.lance/``) are equal,
    so a statement naming both reads one snapshot."""
    if "://" in uri:
        return uri.rstrip("/")
    return os.path.normpath(os.path.abspath(uri))
