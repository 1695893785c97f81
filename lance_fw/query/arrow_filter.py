"""A ``pyarrow.compute.Expression`` filter read back as Lance SQL, so scalar indices can answer it.

Why: DuckDB (and any pyarrow-dataset consumer) pushes its ``WHERE`` down as a pyarrow expression,
whose tree pyarrow does not expose. Its text form is regular (``((id == 5) and (x < 2.5))``,
``is_in(s, {value_set=string:[...], ...})``), so it is parsed here, but only trusted when the
expression rebuilt from the parse ``equals`` the original: a misread text can never narrow a scan.
Anything outside the small grammar (casts, arithmetic, odd names, timestamps) gives ``None`` and the
scan simply reads the data. The SQL is used only to *plan* index lookups; the original expression
still filters every row.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<date>\d{4}-\d{2}-\d{2}(?![\d:]))|(?P<num>-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)'
    r"|(?P<op>==|!=|<=|>=|<|>|[(){}\[\],:=])|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"
)
_COMPARE = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_PC_COMPARE = {
    "==": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
_SAFE_STRING = re.compile(r"[^'\\\"\n\r]*")


class _Bail(Exception):
    """The text is outside the grammar (or a value cannot be written as Lance SQL)."""


def lance_sql(expression: pc.Expression, schema: pa.Schema) -> str | None:
    """Lance SQL matching exactly the rows ``expression`` keeps, or None when it cannot be read."""
    try:
        parser = _Parser(str(expression), schema)
        node = parser.expr()
        if parser.pos != len(parser.tokens):
            return None
        rebuilt, sql = node
        if not rebuilt.equals(expression):
            return None
        return sql
    except (_Bail, pa.ArrowException, ValueError, TypeError, OverflowError):
        return None


class _Parser:
    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.schema = schema
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise _Bail(text[pos:])
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("", "")

    def take(self, value: str | None = None) -> str:
        kind, text = self.peek()
        if not kind or (value is not None and text != value):
            raise _Bail(value)
        self.pos += 1
        return text

    # expr := '(' operand binop operand ')' | call
    def expr(self) -> tuple[pc.Expression, str]:
        kind, text = self.peek()
        if text == "(":
            self.take("(")
            if self.peek()[0] == "word" and self.peek()[1] not in _CALLS and self._is_field_next():
                name = self.field()
                op = self.take()
                if op not in _COMPARE:
                    raise _Bail(op)
                value, literal = self.literal(self.schema.field(name).type)
                self.take(")")
                return _PC_COMPARE[op](pc.field(name), value), f"{_quote(name)} {_COMPARE[op]} {literal}"
            left = self.expr()
            op = self.take()
            right = self.expr()
            self.take(")")
            if op == "and":
                return left[0] & right[0], f"({left[1]}) AND ({right[1]})"
            if op == "or":
                return left[0] | right[0], f"({left[1]}) OR ({right[1]})"
            raise _Bail(op)
        if kind == "word" and text in _CALLS:
            return _CALLS[text](self)
        raise _Bail(text)

    def _is_field_next(self) -> bool:
        nxt = self.tokens[self.pos + 1] if self.pos + 1 < len(self.tokens) else ("", "")
        return nxt[1] in _COMPARE

    def field(self) -> str:
        name = self.take()
        if name not in self.schema.names:
            raise _Bail(name)
        return name

    def literal(self, t: pa.DataType) -> tuple[pa.Scalar, str]:
        kind, text = self.peek()
        self.pos += 1
        value: Any
        if kind == "num" and (pa.types.is_integer(t) or pa.types.is_floating(t)):
            value = float(text) if pa.types.is_floating(t) else int(text)
            if isinstance(value, float) and not math.isfinite(value):
                raise _Bail(text)
            return pa.scalar(value, t), repr(value)
        if kind == "str" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
            value = text[1:-1]
            if not _SAFE_STRING.fullmatch(value):
                raise _Bail(text)
            return pa.scalar(value, t), f"'{value}'"
        if kind == "word" and text in ("true", "false") and pa.types.is_boolean(t):
            return pa.scalar(text == "true", t), text
        if kind == "date" and pa.types.is_date(t):
            return pa.scalar(dt.date.fromisoformat(text), t), f"DATE '{text}'"
        raise _Bail(text)

    def options(self) -> list[tuple[str, str]]:
        """``{k=v, ...}`` of a call, the values as raw text (value sets handled by the caller)."""
        self.take("{")
        out = []
        while self.peek()[1] != "}":
            key = self.take()
            self.take("=")
            out.append((key, self.take()))
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        return out

    def is_null(self) -> tuple[pc.Expression, str]:
        self.take("is_null")
        self.take("(")
        name = self.field()
        self.take(",")
        if self.options() != [("nan_is_null", "false")]:
            raise _Bail("is_null options")
        self.take(")")
        return pc.field(name).is_null(), f"{_quote(name)} IS NULL"

    def is_valid(self) -> tuple[pc.Expression, str]:
        self.take("is_valid")
        self.take("(")
        name = self.field()
        self.take(")")
        return pc.field(name).is_valid(), f"{_quote(name)} IS NOT NULL"

    def invert(self) -> tuple[pc.Expression, str]:
        self.take("invert")
        self.take("(")
        inner, sql = self.expr()
        self.take(")")
        return ~inner, f"NOT ({sql})"

    def is_in(self) -> tuple[pc.Expression, str]:
        self.take("is_in")
        self.take("(")
        name = self.field()
        t = self.schema.field(name).type
        self.take(",")
        self.take("{")
        self.take("value_set")
        self.take("=")
        self.take()  # the value set's type name; the rebuilt expression checks it
        self.take(":")
        self.take("[")
        values, literals = [], []
        while self.peek()[1] != "]":
            scalar, literal = self.literal(t)
            values.append(scalar.as_py())
            literals.append(literal)
            if self.peek()[1] == ",":
                self.take(",")
        self.take("]")
        self.take(",")
        self.take("null_matching_behavior")
        self.take("=")
        if self.take() != "MATCH":
            raise _Bail("null_matching_behavior")
        self.take("}")
        self.take(")")
        if not values:
            raise _Bail("empty value set")
        return pc.field(name).isin(pa.array(values, t)), f"{_quote(name)} IN ({', '.join(literals)})"

    def if_else(self) -> tuple[pc.Expression, str]:
        """DuckDB's ``if_else(is_valid(c), is_in(c, ...), null[bool])``: the rows of ``is_in``."""
        self.take("if_else")
        self.take("(")
        cond, _ = self.expr()
        self.take(",")
        then, sql = self.expr()
        self.take(",")
        for part in ("null", "[", "bool", "]"):
            self.take(part)
        self.take(")")
        return pc.if_else(cond, then, pa.scalar(None, pa.bool_())), sql


_CALLS = {
    "is_null": _Parser.is_null,
    "is_valid": _Parser.is_valid,
    "invert": _Parser.invert,
    "is_in": _Parser.is_in,
    "if_else": _Parser.if_else,
}


def _quote(name: str) -> str:
    return f"`{name}`"
