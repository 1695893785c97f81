"""The Lance SQL filter dialect -> ``pyarrow.compute.Expression``.

Parsed with Lance's dialect (``dialect``: Spark's syntax, backticks quote identifiers, double
quotes make strings, a backslash is an ordinary character in strings, as in Lance). A visitor
turns the tree into a pyarrow expression with pylance 14's semantics, which tests/test_filters.py
checks row for row:

- a literal next to a bare column (``st.a``, ``st['a']`` too) is coerced to the column's type with
  Lance's strict rules (no string -> temporal, no lossy numeric casts); next to any other
  expression (``id + 1``, ``length(s)``) DataFusion's looser coercion applies (``'6'`` -> 6);
- TIMESTAMP literals are UTC wall clocks read in a tz column's zone, truncated to the literal's
  precision (``TIMESTAMP`` = microseconds, ``timestamp(p)``) and then to the column's unit;
- floats are totally ordered (``float_order``): a NaN sorts above every number and a negative NaN
  (x86's 0.0 / 0.0, ``-x`` of a NaN) below; two float expressions also order -0.0 below 0.0 (a
  literal 0 matches both zeros);
- float16 is compared and computed in float32 (pyarrow has no float16 kernels), as ``coercion`` says;
- ``CAST(int_or_decimal_column AS int_or_decimal) <op> literal`` compares the column itself when
  the literal fits its type (DataFusion's unwrap-cast rewrite: for dec = 2.5, ``CAST(dec AS INT) = 2``
  is false).
- an AND / OR of two IN lists over one expression is folded first, as DataFusion folds it
  (``in_lists``): ``NOT (d IN (1) AND d IN (0))`` keeps the rows where d is NULL.

The dialect (parser, token checks, operator tables) is ``dialect``'s, shared with projections,
``update`` and ``add_columns``; the visitor dispatches on sqlglot's node types through
``visitors`` (``functools.singledispatch``), and ``projection._Projector`` extends its methods
rather than copying its tables. Functions live in
``filter_functions``. Anything that is not one boolean expression is refused with a ``FilterError``
naming the filter; type errors are found at parse time on an empty table.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
from functools import reduce

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.query import coercion, filter_regex, float_math, float_order, in_lists, visitors
from lance_fw.query import filter_functions as functions
from lance_fw.query.dialect import (
    ARITHMETIC,
    FLIPPED,
    PARSE_CACHE_SIZE,
    ROW_COLUMNS,
    ExpressionError,
    column_path,
    parse_where,
)
from lance_fw.query.filter_literals import (
    _EPOCH,
    _PRECISION_UNIT,
    _UNIT_NS,
    LiteralValue,
    _float_cast_type,
    _half,
    _is_literal,
    _is_string,
    _literal_value,
    _parse_temporal,
    _scalar,
    _Timestamp,
    _truncate,
)


class FilterError(ExpressionError):
    """The filter is not a single boolean expression lance_fw (and pylance) accepts."""


_NULL_BOOL = visitors.NULL_BOOL
#: Values up to which ``x IN (...)`` is evaluated as OR-ed equalities rather than ``is_in`` (a
#: hash table built per 32k-row batch: 2.0-2.2 ms a 262144-row probe for 2-4 values, against
#: 1.0-1.3 for equalities; even at 8, 16 slower).
OR_MEMBERSHIP_MAX = 8


def parse_filter(text: str, schema: pa.Schema) -> pc.Expression:
    """Parse ``text`` against ``schema`` (column types drive literal coercion).

    Kept per (text, schema) (expressions are immutable; a point lookup spent a third of its planning
    here), except for filters that may read the clock (``now()``, ``current_date`` ...)."""
    if isinstance(text, str) and not any(word in text.lower() for word in _CLOCK_WORDS):
        return _parse_filter_cached(text, schema)
    return _parse_filter(text, schema)


#: Substrings of the functions whose value changes between calls: such filters are never cached.
_CLOCK_WORDS = ("now", "current_", "today")


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_filter_cached(text: str, schema: pa.Schema) -> pc.Expression:
    return _parse_filter(text, schema)


def _parse_filter(text: str, schema: pa.Schema) -> pc.Expression:
    visitor = _Visitor(schema, text)
    expression = visitor.visit(in_lists.fold_in_lists(parse_where(text, FilterError), visitor))
    t = visitor.type_of(expression)
    if not (pa.types.is_boolean(t) or pa.types.is_null(t)):
        raise FilterError(f"filter {text!r} is a {t} expression, not a boolean one")
    return expression


def filter_visitor(text: str, schema: pa.Schema) -> _Visitor:
    """The visitor ``parse_filter`` uses, for planners that must read literals exactly as the filter
    does (``query/index_plan.py`` turns ``col = <literal>`` into an index query)."""
    return _Visitor(schema, text)


def filter_columns(text: str, schema: pa.Schema) -> list[str]:
    """Top-level columns a filter reads (so scans can read them first)."""
    names = {c.parts[0].name for c in parse_where(text, FilterError).find_all(exp.Column)}
    lookup = {n.lower(): n for n in schema.names}
    return sorted({lookup[n.lower()] for n in names if n.lower() in lookup})


class _Visitor:
    """Turns a parsed expression into a ``pyarrow.compute.Expression`` with pylance's semantics.
    ``noun`` and ``error`` name what is being evaluated in errors (a subclass evaluates projections)."""

    noun = "filter"
    error: type[ExpressionError] = FilterError
    #: Lance reads ``regexp_match(...)`` in a filter's boolean position as "it matched"
    matched_groups_as_truth = True

    def __init__(self, schema: pa.Schema, text: str) -> None:
        self.schema, self.text = schema, text
        self.lookup = {n.lower(): n for n in schema.names}
        self._empty: pa.Table | None = None

    def fail(self, node: exp.Expr, why: str = "is not supported") -> ExpressionError:
        return self.error(f"{self.noun} {self.text!r}: {node.sql(dialect='spark')!r} {why}")

    def type_of(self, expression: pc.Expression) -> pa.DataType:
        """The type ``expression`` evaluates to (projected over an empty table of the schema)."""
        if self._empty is None:
            extra = [pa.field(n, pa.uint64()) for n in ROW_COLUMNS if n not in self.schema.names]
            self._empty = pa.schema(list(self.schema) + extra).empty_table()
        plan = acero.Declaration.from_sequence(
            [
                acero.Declaration("table_source", acero.TableSourceNodeOptions(self._empty)),
                acero.Declaration("project", acero.ProjectNodeOptions([expression], ["t"])),
            ]
        )
        try:
            return plan.to_table(use_threads=False).schema.field(0).type
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError) as exc:
            raise self.error(f"{self.noun} {self.text!r}: {str(exc).splitlines()[0]}") from None

    # -- booleans ---------------------------------------------------------------------------
    def visit(self, node: exp.Expression) -> pc.Expression:
        """``node`` in a boolean position (a filter, an operand of AND / OR / NOT)."""
        return visitors.truth(node, self)

    def compare(self, op: str, left: exp.Expression, right: exp.Expression) -> pc.Expression:
        if self.is_literal(left) and not self.is_literal(right):
            left, right, op = right, left, FLIPPED.get(op, op)
        if not self.is_literal(right):
            return self.compare_values(op, self.visit_value(left), self.visit_value(right))
        if self.is_literal(left):
            return getattr(pc, op)(pc.scalar(self.literal(left, None)), pc.scalar(self.literal(right, None)))
        unwrapped = self.unwrap_cast(left, right)
        if unwrapped is not None:
            return self.compare_literal(op, *unwrapped)
        if self.is_column(left):
            expr, t = self.column(left)
            return self.compare_literal(op, expr, t, self.literal(right, t))
        expr = self.visit_value(left)
        t = self.type_of(expr)
        return self.compare_literal(op, expr, t, self.loose_literal(right, t))

    def compare_literal(
        self, op: str, expr: pc.Expression, t: pa.DataType, value: pa.Scalar
    ) -> pc.Expression:
        if not value.is_valid:
            return pc.scalar(_NULL_BOOL)
        if pa.types.is_float16(t):  # no float16 kernels in pyarrow: compared in float32 (exact)
            expr, t, value = expr.cast(coercion.WIDE), coercion.WIDE, coercion.half_scalar(value)
        if pa.types.is_date(t) and pa.types.is_timestamp(value.type):
            expr = expr.cast(value.type)
        floating = pa.types.is_floating(value.type)
        nan = floating and math.isnan(value.as_py())
        if pa.types.is_decimal(t) and floating:  # compared as floats, as DataFusion coerces them
            expr, t = coercion.decimal_float(expr), pa.float64()
        if not (pa.types.is_floating(t) or nan):
            return getattr(pc, op)(expr, value)
        if not pa.types.is_floating(t):
            expr = expr.cast(pa.float64())
        return float_order.compare_to_literal(op, expr, value)

    def compare_values(self, op: str, a: pc.Expression, b: pc.Expression) -> pc.Expression:
        ta, tb = self.type_of(a), self.type_of(b)
        if coercion.temporal(ta) and coercion.temporal(tb):
            a, b = coercion.common_time(a, ta, tb), coercion.common_time(b, tb, ta)
        a, ta, b, tb, _ = coercion.half_operands(a, ta, b, tb, lambda w: self.error(f"{self.text!r}: {w}"))
        if not (pa.types.is_floating(ta) or pa.types.is_floating(tb)):
            return getattr(pc, op)(a, b)
        if pa.types.is_decimal(ta) or pa.types.is_decimal(tb):  # DataFusion compares these as decimals
            return getattr(pc, op)(*float_order.as_common_decimal(a, ta, b, tb))
        return float_order.compare_floats(op, a, b)  # total order, as DataFusion's float kernels

    def unwrap_cast(
        self, left: exp.Expression, right: exp.Expression
    ) -> tuple[pc.Expression, pa.DataType, pa.Scalar] | None:
        """DataFusion compares ``CAST(col AS T)`` with a literal as ``col`` when both types are
        integers/decimals and the literal converts to the column's type without loss."""
        if (
            not isinstance(left, (exp.Cast, exp.TryCast))
            or left.args.get("safe")
            or not self.is_column(left.this)
        ):
            return None
        expr, source = self.column(left.this)
        target = self.cast_type(left)
        numeric = (pa.types.is_integer, pa.types.is_decimal)
        if not (any(f(source) for f in numeric) and any(f(target) for f in numeric)):
            return None
        try:
            value = self.literal(right, target)
            if value.is_valid:
                value = value.cast(source, safe=True)
        except (FilterError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return expr, source, value

    def not_distinct(self, left: exp.Expression, right: exp.Expression) -> pc.Expression:
        """``left IS NOT DISTINCT FROM right``: equal, or both NULL; never NULL itself."""
        if self.is_literal(left) and not self.is_literal(right):
            left, right = right, left
        a = self.visit_value(left)
        if self.is_literal(right):
            if _literal_value(right, self) is None:
                return a.is_null()
            return pc.if_else(a.is_null(), False, self.compare("equal", left, right))
        b = self.visit_value(right)
        a_null, b_null = a.is_null(), b.is_null()
        return pc.if_else(a_null | b_null, a_null & b_null, self.compare("equal", left, right))

    def membership(self, node: exp.Expression) -> pc.Expression:
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise self.fail(node, "(subqueries) is not supported")
        values = node.expressions
        if not values:
            raise self.fail(node, "needs at least one value")
        if all(self.is_literal(v) for v in values):
            column, t, scalars = in_lists.list_scalars(self, node)
            if pa.types.is_float16(t):  # compared in float32, as ``compare_literal`` does
                column, t = column.cast(coercion.WIDE), coercion.WIDE
                scalars = [coercion.half_scalar(s) for s in scalars]
            present = [s for s in scalars if s.is_valid]
            if (
                all(s.type == t for s in present)
                and not pa.types.is_floating(t)
                and len(scalars) <= OR_MEMBERSHIP_MAX
            ):
                # a few values: equalities, OR-ed (Kleene: a NULL on either side is NULL, as in SQL's IN)
                return reduce(lambda a, b: a | b, [column == s for s in scalars])
            if all(s.type == t for s in present):
                value_set = pa.array([s.as_py() for s in present], t)
                if pa.types.is_floating(t):  # -0.0 and 0.0 are one value here (NaN matches NaN)
                    zero = pa.scalar(0.0, t)
                    column, value_set = pc.add(column, zero), pc.add(value_set, zero)
                found = pc.is_in(column, value_set=value_set)
                # SQL: NULL IN (...) is NULL; x IN (..., NULL) is NULL when x is not found
                missing = pa.scalar(None if len(present) < len(scalars) else False, pa.bool_())
                return pc.if_else(column.is_null(), _NULL_BOOL, pc.if_else(found, True, missing))
        return reduce(lambda a, b: a | b, [self.compare("equal", node.this, v) for v in values])

    def like(self, node: exp.Expression) -> pc.Expression:
        if isinstance(node, exp.Escape):
            if self.string_literal(node.expression) != "\\":
                raise self.fail(node, "uses an ESCAPE character other than '\\' (Lance supports only '\\')")
            node = node.this
        if not isinstance(node, (exp.Like, exp.ILike)):
            raise self.fail(node)
        if isinstance(node.expression, exp.Null):
            return pc.scalar(_NULL_BOOL)
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise self.fail(node, "needs a string literal pattern")
        matched = filter_regex.like(
            self.visit_value(node.this), pattern.this, ignore_case=isinstance(node, exp.ILike)
        )
        return ~matched if node.args.get("negate") else matched

    # -- values -----------------------------------------------------------------------------
    def visit_value(self, node: exp.Expression) -> pc.Expression:
        """``node`` as a value: columns and literals first (they are shapes of several node
        types), then by node type."""
        if isinstance(node, exp.Paren):
            return self.visit_value(node.this)
        if self.is_column(node):
            return self.column(node)[0]
        if self.is_literal(node):
            return pc.scalar(self.literal(node, None))
        return visitors.value(node, self)

    def is_column(self, node: exp.Expression) -> bool:
        """A column or struct field path: ``c``, ``st.a``, ```st`.`a```, ``st['a']``, ``get_field(st, 'a')``."""
        if isinstance(node, exp.Column):
            return not isinstance(node.this, exp.Star)
        if isinstance(node, exp.Dot):
            return isinstance(node.expression, exp.Identifier) and self.is_column(node.this)
        if isinstance(node, exp.Bracket):
            keys = node.expressions
            return len(keys) == 1 and _is_string(keys[0]) and self.is_column(node.this)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "get_field":
            args = node.expressions
            return len(args) == 2 and _is_string(args[1]) and self.is_column(args[0])
        return False

    def column(self, node: exp.Expression) -> tuple[pc.Expression, pa.DataType]:
        path = column_path(node)
        if not path:
            raise self.fail(node, "is not a column")
        head, quoted = path[0]
        if (
            head.lower() in ROW_COLUMNS
            and head not in self.schema.names
            and (not quoted or head in ROW_COLUMNS)
        ):
            if len(path) > 1:
                raise self.fail(node, "is not a struct")
            return pc.field(head.lower()), pa.uint64()
        # unquoted names match case-insensitively (as in pylance); `quoted` ones exactly
        name = (head if head in self.schema.names else None) if quoted else self.lookup.get(head.lower())
        if name is None:
            raise self.error(
                f"{self.noun} {self.text!r}: no column named {head!r} (columns: {self.schema.names})"
            )
        t = self.schema.field(name).type
        names = [name]
        for part, _ in path[1:]:
            if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
                raise self.error(f"{self.noun} {self.text!r}: {'.'.join(names)!r} has no field {part!r}")
            t = t.field(part).type
            names.append(part)
        return pc.field(*names), t

    def arithmetic(self, node: exp.Binary) -> pc.Expression:
        a, b = self.visit_value(node.this), self.visit_value(node.expression)
        ta, tb = self.type_of(a), self.type_of(b)
        # Acero narrows a bare literal to the other operand's type (i32 + 1 would wrap as int32);
        # DataFusion keeps the literal's own type (int64, or the CAST's): a cast pins it
        ta, tb = (self.literal_type(n, t) for n, t in ((node.this, ta), (node.expression, tb)))
        a, b = (
            x.cast(t) if self.is_literal(n) else x
            for x, t, n in ((a, ta, node.this), (b, tb, node.expression))
        )
        a, ta, b, tb, half = coercion.half_operands(a, ta, b, tb, lambda why: self.fail(node, why))
        if half:  # DataFusion computes in float16: in float32 here, rounded back
            return coercion.to_half(self.arithmetic_of(node, a, ta, b, tb))
        return self.arithmetic_of(node, a, ta, b, tb)

    def arithmetic_of(
        self, node: exp.Binary, a: pc.Expression, ta: pa.DataType, b: pc.Expression, tb: pa.DataType
    ) -> pc.Expression:
        # an integer next to a decimal becomes a decimal: Arrow casts int64 only to 19+ digit ones
        if pa.types.is_integer(ta) and pa.types.is_decimal(tb):
            a, ta = self.as_decimal(node.this, a), tb
        elif pa.types.is_decimal(ta) and pa.types.is_integer(tb):
            b, tb = self.as_decimal(node.expression, b), ta
        if isinstance(node, exp.Div) and pa.types.is_integer(ta) and pa.types.is_integer(tb):
            return pc.divide_checked(a, b)  # MIN / -1 fails in Rust instead of wrapping
        if not isinstance(node, exp.Mod):
            return ARITHMETIC[type(node)](a, b)
        # truncated remainder (the sign of the dividend), as in SQL; floats: libm's fmod, as Rust
        if any(pa.types.is_floating(t) for t in (ta, tb)) and not any(
            pa.types.is_decimal(t) for t in (ta, tb)
        ):
            return float_math.apply("fmod", a, b)
        if any(pa.types.is_decimal(t) for t in (ta, tb)):
            return pc.subtract(a, pc.multiply(pc.trunc(pc.divide(a, b)), b))
        return pc.subtract(a, pc.multiply(pc.divide(a, b), b))

    def literal_type(self, node: exp.Expression, t: pa.DataType) -> pa.DataType:
        """``t``, or for a literal cast to a number (``CAST(1 AS TINYINT)``) the cast's type."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, (exp.Cast, exp.TryCast)) and self.is_literal(node):
            target = self.cast_type(node)
            if pa.types.is_integer(target) or pa.types.is_floating(target):
                return target
        return t

    def as_decimal(self, node: exp.Expression, value: pc.Expression) -> pc.Expression:
        if self.is_literal(node):  # a literal keeps just its own digits
            number = _literal_value(node, self)
            if not isinstance(number, (int, float, str, decimal.Decimal)):
                raise self.fail(node, "is not a number")
            return pc.scalar(pa.scalar(decimal.Decimal(number)))
        return value.cast(pa.decimal128(19, 0))

    def cast_type(self, node: exp.Cast) -> pa.DataType:
        """The Arrow type of ``CAST(... AS <type>)``: the cast types Lance's planner accepts."""
        to = node.to
        T = exp.DataType.Type
        params = [int(p.this.this) for p in to.expressions if isinstance(p.this, exp.Literal)]
        simple = {
            T.BOOLEAN: pa.bool_(),
            T.TINYINT: pa.int8(),
            T.UTINYINT: pa.uint8(),
            T.SMALLINT: pa.int16(),
            T.USMALLINT: pa.uint16(),
            T.INT: pa.int32(),
            T.UINT: pa.uint32(),
            T.BIGINT: pa.int64(),
            T.UBIGINT: pa.uint64(),
            T.FLOAT: pa.float32(),
            T.DOUBLE: pa.float64(),
            T.TEXT: pa.string(),
            T.BINARY: pa.binary(),
            T.DATE: pa.date32(),
        }
        if to.this in simple:
            return simple[to.this]
        if to.this in (T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.DATETIME):
            return pa.timestamp(self.timestamp_unit(node, to, params))
        if to.this == T.DECIMAL:
            if len(params) != 2:
                raise self.fail(node, "needs DECIMAL(precision, scale)")
            if not 0 < params[0] <= 38:
                raise self.fail(node, "has a precision over 38")
            return pa.decimal128(*params)
        raise self.fail(node, "casts to a type Lance does not support")

    def timestamp_unit(self, node: exp.Expression, to: exp.DataType, params: list[int]) -> str:
        if not params:  # to_timestamp('...') parses as a plain TIMESTAMP and is nanoseconds
            return "ns" if to.this == exp.DataType.Type.TIMESTAMP else "us"
        if params[0] not in _PRECISION_UNIT:
            raise self.fail(node, "needs a precision of 0, 3, 6 or 9")
        return _PRECISION_UNIT[params[0]]

    def cast(self, node: exp.Cast) -> pc.Expression:
        target = self.cast_type(node)
        value = self.visit_value(node.this)
        source = self.type_of(value)
        if pa.types.is_float16(source):  # exact; pyarrow has no float16 kernels (trunc, round)
            value, source = value.cast(coercion.WIDE), coercion.WIDE
        if (
            node.args.get("safe")
            and pa.types.is_string(source)
            and (pa.types.is_integer(target) or pa.types.is_floating(target))
        ):
            number = (
                r"^\s*[+-]?\d+\s*$"
                if pa.types.is_integer(target)
                else r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
            )  # TRY_CAST: NULL when not a number
            value = pc.if_else(pc.match_substring_regex(value, number), value, pa.scalar(None, pa.string()))
        if pa.types.is_floating(source) and pa.types.is_integer(target):
            value = pc.trunc(value)  # Rust casts truncate; NaN and overflow still fail
        if pa.types.is_decimal(source) and pa.types.is_floating(target):
            return coercion.decimal_float(value).cast(target)
        if pa.types.is_integer(source) and pa.types.is_decimal(target):
            value = value.cast(pa.decimal128(38, target.scale))  # Arrow wants room for any integer first
        if pa.types.is_string(target) and (pa.types.is_floating(source) or pa.types.is_timestamp(source)):
            raise self.fail(
                node, "is not supported: Rust formats floats and timestamps differently from Arrow"
            )
        if pa.types.is_decimal(source) and pa.types.is_decimal(target) and target.scale < source.scale:
            value = pc.round(value, ndigits=target.scale, round_mode="half_towards_infinity")  # Rust rounds
        if pa.types.is_floating(source) and pa.types.is_decimal(target):  # NaN/inf/overflow fail, as in Rust
            return pc.round(value, ndigits=target.scale, round_mode="half_towards_infinity").cast(target)
        return value.cast(
            options=pc.CastOptions(
                target,
                allow_decimal_truncate=True,
                allow_time_truncate=True,
                allow_float_truncate=pa.types.is_integer(source),
            )
        )

    def function(self, node: exp.Expression) -> pc.Expression:
        if functions.call_arguments(node)[0] in functions.MATCHED_GROUPS:
            raise self.fail(
                node,
                "is a list of matched groups (not computed): supported in a filter or under IS [NOT] NULL",
            )
        return functions.call(self, node)

    # -- literals ---------------------------------------------------------------------------
    def is_literal(self, node: exp.Expression) -> bool:
        return _is_literal(node)

    def literal(self, node: exp.Expression, t: pa.DataType | None) -> pa.Scalar:
        """A literal coerced to ``t`` without loss (pylance's rules for a literal next to a column).
        A decimal literal keeps its own type (pyarrow compares decimals exactly across scales)."""
        value = _literal_value(node, self)
        if t is None:
            return _scalar(value)
        if value is None:
            return pa.scalar(None, t)
        cast_type = _float_cast_type(node, self) if pa.types.is_floating(t) else None
        if cast_type is not None and cast_type != t and isinstance(value, float):
            return pa.scalar(value, cast_type)  # CAST(0.1 AS DOUBLE) keeps its type next to a float32
        if pa.types.is_float16(t) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return _half(value, self, node)
        if pa.types.is_timestamp(t):
            return self.timestamp_literal(node, value, t)
        if isinstance(value, _Timestamp) and pa.types.is_date(t):
            return value.scalar()
        if isinstance(value, (_Timestamp, dt.date)) and not pa.types.is_date(t):
            raise self.fail(node, f"is a date/time and cannot be compared with a {t} column")
        textual = pa.types.is_string(t) or pa.types.is_large_string(t)
        if isinstance(value, str) and not textual:
            raise self.fail(
                node,
                f"is a string and cannot be compared with a {t} column "
                "(use a typed literal such as DATE '...' or TIMESTAMP '...')",
            )
        if textual and not isinstance(value, str):
            raise self.fail(node, f"is not a string and cannot be compared with a {t} column")
        if isinstance(value, bool) != pa.types.is_boolean(t):
            raise self.fail(node, f"cannot be used with a {t} column")
        if isinstance(value, float) and (pa.types.is_integer(t) or pa.types.is_decimal(t)):
            why = (
                "would lose precision"
                if pa.types.is_integer(t)
                else "is a float; use CAST('...' AS DECIMAL(p, s))"
            )
            raise self.fail(node, f"{why} for a {t} column")
        if isinstance(value, int) and pa.types.is_decimal(t):
            if abs(value) >= 10 ** (t.precision - t.scale):
                raise self.fail(node, f"does not fit a {t} column")
            value = decimal.Decimal(value)
        if isinstance(value, decimal.Decimal):
            if pa.types.is_decimal(t) or pa.types.is_integer(t):
                return _scalar(value)
            raise self.fail(node, f"is a decimal and cannot be compared with a {t} column")
        try:
            return pa.scalar(value).cast(t, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError) as exc:
            raise self.fail(node, f"cannot be used with a {t} column: {str(exc).splitlines()[0]}") from None

    def timestamp_literal(self, node: exp.Expression, value: LiteralValue, t: pa.TimestampType) -> pa.Scalar:
        if isinstance(value, _Timestamp):
            ns = _truncate(value.ns, value.unit) * _UNIT_NS[value.unit]
            if t.tz is not None:  # a wall clock in the column's time zone
                try:
                    ns = pc.assume_timezone(pa.scalar(ns, pa.timestamp("ns")), timezone=t.tz).value
                except (pa.ArrowInvalid, ValueError) as exc:
                    raise self.fail(node, f"is not a valid time in {t.tz}: {exc}") from None
        elif isinstance(value, dt.date):  # midnight UTC, whatever the column's zone
            ns = (value - _EPOCH).days * 86_400 * 10**9
        else:
            raise self.fail(node, f"cannot be compared with a {t} column (use TIMESTAMP '...')")
        return pa.scalar(_truncate(ns, t.unit), t)

    def loose_literal(self, node: exp.Expression, t: pa.DataType) -> pa.Scalar:
        """A literal next to a computed value: DataFusion's coercion (``'6'`` -> 6, 1 -> 1.0)."""
        value = _literal_value(node, self)
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        if value is None:
            return pa.scalar(None, t) if not pa.types.is_null(t) else pa.scalar(None)
        if numeric and isinstance(value, str):
            try:
                value = int(value) if pa.types.is_integer(t) else float(value)
            except ValueError:
                raise self.fail(node, f"is not a number (compared with a {t} value)") from None
        if numeric and isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
            if pa.types.is_decimal(t) and isinstance(value, int):
                value = decimal.Decimal(value)  # Arrow casts an int64 only to 19+ digit decimals
            return _scalar(value)
        if (pa.types.is_timestamp(t) or pa.types.is_date(t)) and isinstance(value, str):
            value = _parse_temporal(value, "us", self, node)
            return self.timestamp_literal(node, value, t) if pa.types.is_timestamp(t) else _scalar(value)
        return self.literal(node, t)

    def list_literal(self, node: exp.Expression, element: pa.DataType) -> pa.Scalar:
        """An element of an ``array_has*`` call: coerced to the list's element type, except that a
        float next to integer elements stays a float (the elements are compared as floats)."""
        value = _literal_value(node, self)
        if isinstance(value, float) and pa.types.is_integer(element):
            return _scalar(value)
        return self.literal(node, element)

    def string_literal(self, node: exp.Expression) -> str | None:
        value = _literal_value(node, self) if _is_literal(node) else node
        if value is not None and not isinstance(value, str):
            raise self.fail(node, "must be a string literal")
        return value

    def int_literal(self, node: exp.Expression) -> int:
        value = _literal_value(node, self) if _is_literal(node) else None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(node, "must be an integer literal")
        return value
