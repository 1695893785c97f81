"""The one SQL dialect of lance_fw's expressions: filters, projections, ``update`` and ``add_columns``.

pylance hands every SQL expression it takes to one parser (sqlparser-rs behind Lance's planner),
so lance_fw parses them all here, with one sqlglot dialect and one set of operator tables that the
expression visitor (``filter._Visitor``, extended by ``projection._Projector``) dispatches on:

- Spark's syntax: backticks quote identifiers, double quotes make strings;
- a backslash is an ordinary character in a string (``'a\\nb'`` is four characters, ``'\\'`` one);
  only ``''`` escapes a quote, and ``E'...'`` strings are refused, as in pylance;
- ``log(x)`` is base 10 (DataFusion), ``log10`` / ``log2`` are their own functions;
- casts to types and calls Lance's planner rejects (``VARCHAR``, ``TRIM(...)``, ``SUBSTR(...)``,
  ``RLIKE``, unary ``+``) are refused from the tokens, before sqlglot rewrites them into
  something Lance would accept.

tests/test_expression_dialect.py checks the four surfaces against pylance with escapes, quoting
and string functions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import pairwise
from typing import ClassVar

import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

from lance_fw.errors import InvalidArgumentError


class ExpressionError(InvalidArgumentError):
    """A SQL expression lance_fw cannot parse or evaluate as pylance does (or pylance refuses)."""


#: comparison node -> pyarrow.compute function
COMPARISONS: dict[type, str] = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
}
#: a comparison with its operands swapped (``1 < x`` is ``x > 1``)
FLIPPED: dict[str, str] = {
    "less": "greater",
    "greater": "less",
    "less_equal": "greater_equal",
    "greater_equal": "less_equal",
}
#: arithmetic node -> pyarrow.compute kernel (``%`` is SQL's truncated remainder: the visitor's own)
ARITHMETIC: dict[type, Callable] = {
    exp.Add: pc.add,
    exp.Sub: pc.subtract,
    exp.Mul: pc.multiply,
    exp.Div: pc.divide,
}
ARITHMETIC_NODES: tuple[type, ...] = (*ARITHMETIC, exp.Mod)
NULL_SAFE: tuple[type, ...] = (exp.NullSafeEQ, exp.NullSafeNEQ)
#: nodes whose value is a truth value
BOOLEAN_NODES: tuple[type, ...] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.Is,
    exp.Between,
    exp.In,
    exp.Like,
    exp.ILike,
    exp.Escape,
    *NULL_SAFE,
    *COMPARISONS,
)
#: binary operators (Lance coerces a literal next to a bare column in these)
BINARY_NODES: tuple[type, ...] = (*ARITHMETIC_NODES, *COMPARISONS, *NULL_SAFE, exp.DPipe)
#: pylance's virtual row columns
ROW_COLUMNS = ("_rowid", "_rowaddr")

#: Cast types and calls sqlglot accepts but Lance's planner rejects (checked on the tokens).
#: (the token's text: sqlglot reads INT8 as TINYINT, REAL as FLOAT, LONG as BIGINT; pylance refuses them)
_REJECTED_TYPES = {
    "VARCHAR",
    "CHAR",
    "TEXT",
    "NUMERIC",
    "TIME",
    "NVARCHAR",
    "NCHAR",
    "REAL",
    "DOUBLE PRECISION",
    "FLOAT4",
    "FLOAT8",
    "INT2",
    "INT4",
    "INT8",
    "BOOL",
    "LONG",
    "TIMESTAMPTZ",
    "TIMESTAMP_LTZ",
    "CHARACTER VARYING",
    "CLOB",
}
#: TIMESTAMP WITH / WITHOUT TIME ZONE: pylance refuses a zone in a cast type
_ZONE_WORDS = {"WITH", "WITHOUT"}
_REJECTED_CALLS = {
    "TRIM",
    "SUBSTR",
    "SUBSTRING",
    "FLOOR",
    "CEIL",
    "CEILING",
    "EXTRACT",
    "POSITION",
    "OVERLAY",
    # Spark's names that sqlglot maps onto a function DataFusion has by another name
    "LEN",
    "UCASE",
    "LCASE",
    "LOCATE",
    "SIGN",
    "SIZE",
    "ARRAY_SIZE",
    "ELEMENT_AT",
    "TRY_ELEMENT_AT",
    "STARTSWITH",
    "ENDSWITH",
    # Spark's cast functions (string(x), int(x) ...): only CAST(x AS type) in Lance
    "STRING",
    "INT",
    "DOUBLE",
    "BOOLEAN",
    "FLOAT",
}
#: RLIKE / REGEXP / SIMILAR TO (use regexp_like), IS [NOT] UNKNOWN and <=> (use IS NOT DISTINCT FROM)
_REJECTED_TOKENS = {TokenType.RLIKE, TokenType.SIMILAR_TO, TokenType.UNKNOWN, TokenType.NULLSAFE_EQ}
#: tokens after which an operand starts, so that a '+' there is unary (after anything else, such as
#: a column named like a keyword, ``date + 1``, or a cast type, ``x::bigint + 1``, it adds)
_OPERAND_NEXT = {
    TokenType.L_PAREN,
    TokenType.COMMA,
    TokenType.L_BRACKET,
    TokenType.SELECT,
    TokenType.WHERE,
    TokenType.PLUS,
    TokenType.DASH,
    TokenType.STAR,
    TokenType.SLASH,
    TokenType.MOD,
    TokenType.PERCENT,
    TokenType.EQ,
    TokenType.NEQ,
    TokenType.LT,
    TokenType.LTE,
    TokenType.GT,
    TokenType.GTE,
    TokenType.NULLSAFE_EQ,
    TokenType.DPIPE,
    TokenType.CARET,
    TokenType.AMP,
    TokenType.PIPE,
    TokenType.DSTAR,
    TokenType.AND,
    TokenType.OR,
    TokenType.NOT,
    TokenType.CASE,
    TokenType.WHEN,
    TokenType.THEN,
    TokenType.ELSE,
    TokenType.IN,
    TokenType.BETWEEN,
    TokenType.LIKE,
    TokenType.ILIKE,
    TokenType.IS,
    TokenType.ESCAPE,
    TokenType.DCOLON,
    TokenType.ALIAS,
    TokenType.COLON,
}
#: Filter texts whose parsed trees are kept (``parse_where``).
PARSE_CACHE_SIZE = 512
#: clauses a single expression may not bring along
_CLAUSES = ("where", "order", "limit", "offset", "group", "having", "joins", "qualify")


class LanceDialect(Spark):
    """Spark's syntax, but a backslash is an ordinary character in strings (as in Lance)."""

    class Tokenizer(Spark.Tokenizer):
        # a doubled quote is the quote itself, in '...' and "..." strings alike; nothing else escapes
        STRING_ESCAPES: ClassVar[list[str]] = ["'", '"']

    # sqlglot annotates Dialect.Parser as a class attribute, yet subclassing it is how a dialect is made
    class Parser(Spark.Parser):  # type: ignore[misc,valid-type]
        # DataFusion's log(x) is log(10, x), not Spark's natural log; log10/log2 are their own
        # kernels (correctly rounded), not log(10, x) = ln(x) / ln(10) as sqlglot rewrites them.
        LOG_DEFAULTS_TO_LN = False
        FUNCTIONS: ClassVar[dict] = {
            **Spark.Parser.FUNCTIONS,
            "LOG10": lambda args: exp.Anonymous(this="log10", expressions=args),
            "LOG2": lambda args: exp.Anonymous(this="log2", expressions=args),
        }


DIALECT = LanceDialect()


def parse_where(text: str, error: type[ExpressionError] = ExpressionError) -> exp.Expression:
    """The expression of ``SELECT 1 FROM t WHERE <text>`` (pylance wraps filters the same way).

    The tree is shared (parsed once per text: a scan reads it for its columns, its matcher and its
    index plan, and ~0.2 ms per parse was most of a point lookup's planning): never mutate it."""
    if isinstance(text, str):
        try:
            return _parse_where_cached(text)
        except ExpressionError:
            pass  # parsed again below to raise the caller's error class (failures are not cached)
    return _parse_where(text, error)


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_where_cached(text: str) -> exp.Expression:
    return _parse_where(text, ExpressionError)


def _parse_where(text: str, error: type[ExpressionError]) -> exp.Expression:
    select, _ = _statement(text, f"SELECT 1 FROM t WHERE {text}", "filter", error)
    if select.args.get("where") is None:
        raise error(f"filter {text!r} must be one expression")
    extra = [k for k in _CLAUSES[1:] if select.args.get(k)]
    if extra:
        raise error(f"filter {text!r} must be a single boolean expression (found {', '.join(extra)})")
    return select.args["where"].this


def parse_value(text: str, error: type[ExpressionError] = ExpressionError) -> exp.Expression:
    """The expression of ``SELECT <text> FROM t``: a projection, ``update`` or ``add_columns`` value."""
    select, tokens = _statement(text, f"SELECT {text} FROM t", "projection", error)
    if len(select.expressions) != 1:
        raise error(f"projection {text!r} must be one expression")
    extra = [k for k in _CLAUSES if select.args.get(k)]
    if extra:
        raise error(f"projection {text!r} must be one expression (found {', '.join(extra)})")
    node = select.expressions[0]
    if isinstance(node, exp.Alias):
        raise error(f"projection {text!r}: name it with the dict key, not AS")
    calls = {
        t.text.upper() for t, n in pairwise(tokens) if n.text == "(" and t.token_type != TokenType.STRING
    }
    if "MOD" in calls:  # sqlglot reads mod(a, b) as a % b; DataFusion has no mod function
        raise error(f"projection {text!r}: mod(...) is not a function in Lance (use %)")
    return node


def _statement(
    text: str, sql: str, noun: str, error: type[ExpressionError]
) -> tuple[exp.Select, list[Token]]:
    if not isinstance(text, str):
        raise error(f"a {noun} must be a SQL string, not {type(text).__name__}")
    try:
        tokens = DIALECT.tokenize(sql)
        statements = [s for s in DIALECT.parse(sql) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise error(f"cannot parse {noun} {text!r}: {str(exc).splitlines()[0]}") from None
    _check_tokens(text, tokens, noun, error)
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        raise error(f"{noun} {text!r} must be one expression")
    return statements[0], tokens


def _check_tokens(text: str, tokens: list[Token], noun: str, error: type[ExpressionError]) -> None:
    for i, token in enumerate(tokens):
        word = token.text.upper()
        before = tokens[i - 1].token_type if i else None
        after = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        zoned = word == "TIMESTAMP" and i + 1 < len(tokens) and tokens[i + 1].text.upper() in _ZONE_WORDS
        if before in (TokenType.ALIAS, TokenType.DCOLON) and (word in _REJECTED_TYPES or zoned):
            raise error(f"{noun} {text!r}: Lance does not cast to {word} (use STRING or DECIMAL(p, s))")
        if (
            word in _REJECTED_CALLS
            and after == TokenType.L_PAREN
            and token.token_type != TokenType.STRING
            and before not in (TokenType.ALIAS, TokenType.DCOLON)
        ):  # CAST(x AS FLOAT(24)) is a type
            raise error(f"{noun} {text!r}: {word}(...) is not supported SQL in Lance")
        if token.token_type == TokenType.PLUS and (before is None or before in _OPERAND_NEXT):
            raise error(f"{noun} {text!r}: unary '+' is not supported in Lance")
        if token.token_type == TokenType.STRING and before == TokenType.STRING:
            # sqlglot joins 'a' 'b' into 'ab'; Lance refuses it (or, in a filter, ignores the rest)
            raise error(f"{noun} {text!r}: adjacent string literals are not supported SQL in Lance")
        if token.token_type in _REJECTED_TOKENS or (
            token.token_type == TokenType.IN and after == TokenType.L_BRACKET
        ):
            raise error(f"{noun} {text!r}: {token.text} is not supported SQL in Lance")


def column_path(node: exp.Expression) -> list[tuple[str, bool]]:
    """(name, quoted) of each segment of a column / struct field reference (``st.a``, ```st`.`a```,
    ``st['a']``, ``get_field(st, 'a')``); empty for anything else."""
    if isinstance(node, exp.Column):
        return [(p.name, bool(p.args.get("quoted"))) for p in node.parts]
    if isinstance(node, exp.Dot):
        return column_path(node.this) + [(node.expression.name, True)]
    if isinstance(node, exp.Bracket):
        return column_path(node.this) + [(node.expressions[0].this, True)]
    if isinstance(node, exp.Anonymous):
        return column_path(node.expressions[0]) + [(node.expressions[1].this, True)]
    return []


def unwrap(node: exp.Expression) -> exp.Expression:
    """``node`` without enclosing parentheses."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node


__all__ = [
    "ARITHMETIC",
    "ARITHMETIC_NODES",
    "BINARY_NODES",
    "BOOLEAN_NODES",
    "COMPARISONS",
    "DIALECT",
    "FLIPPED",
    "NULL_SAFE",
    "ROW_COLUMNS",
    "ExpressionError",
    "LanceDialect",
    "column_path",
    "parse_value",
    "parse_where",
    "unwrap",
]
