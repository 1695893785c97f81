"""The Lance SQL filter dialect -> ``pyarrow.compute.Expression``.

Parsed with sqlglot's Spark dialect (backticks quote identifiers, double quotes make strings, as
in Lance). A visitor turns the tree into a pyarrow expression; literals are coerced to the
column's type with pylance's strict rules (no string -> temporal, no lossy numeric casts).
Anything that is not one boolean expression is refused with a ``FilterError``.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lance_fw.errors import InvalidArgumentError


class FilterError(InvalidArgumentError):
    """The filter is not a single boolean expression lance_fw (and pylance) accepts."""


_COMPARE = {exp.EQ: "equal", exp.NEQ: "not_equal", exp.LT: "less", exp.LTE: "less_equal",
            exp.GT: "greater", exp.GTE: "greater_equal"}


def parse_filter(text: str, schema: pa.Schema) -> pc.Expression:
    """Parse ``text`` against ``schema`` (column types drive literal coercion)."""
    try:
        statements = sqlglot.parse(f"SELECT 1 FROM t WHERE {text}", read="spark")
    except sqlglot.errors.ParseError as exc:
        raise FilterError(f"cannot parse filter {text!r}: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1 or statements[0] is None:
        raise FilterError(f"filter {text!r} must be one expression")
    select = statements[0]
    extra = [k for k in ("order", "limit", "offset", "group", "having", "joins") if select.args.get(k)]
    if extra or not isinstance(select, exp.Select):
        raise FilterError(f"filter {text!r} must be a single boolean expression (found {', '.join(extra)})")
    return _Visitor(schema, text).visit(select.args["where"].this)


def filter_columns(text: str, schema: pa.Schema) -> list[str]:
    """Top-level columns a filter reads (so scans can read them first)."""
    tree = sqlglot.parse_one(f"SELECT 1 FROM t WHERE {text}", read="spark")
    names = {c.parts[0].name for c in tree.find_all(exp.Column)} if tree else set()
    lookup = {n.lower(): n for n in schema.names}
    return sorted({lookup[n.lower()] for n in names if n.lower() in lookup})


class _Visitor:
    def __init__(self, schema: pa.Schema, text: str):
        self.schema, self.text = schema, text
        self.lookup = {n.lower(): n for n in schema.names}

    def fail(self, node, why: str = "is not supported") -> FilterError:
        return FilterError(f"filter {self.text!r}: {node.sql(dialect='spark')!r} {why}")

    # -- dispatch ---------------------------------------------------------------------------
    def visit(self, node) -> pc.Expression:
        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        if isinstance(node, exp.And):
            return self.visit(node.this) & self.visit(node.expression)
        if isinstance(node, exp.Or):
            return self.visit(node.this) | self.visit(node.expression)
        if isinstance(node, exp.Not):
            return ~self.visit(node.this)
        if type(node) in _COMPARE:
            return self.compare(_COMPARE[type(node)], node.this, node.expression)
        if isinstance(node, exp.Is):
            value = node.expression
            target = self.visit_value(node.this)
            if isinstance(value, exp.Null):
                return target.is_null()
            if isinstance(value, exp.Boolean):
                return pc.if_else(target.is_null(), False, target == pa.scalar(value.this))
            raise self.fail(node)
        if isinstance(node, exp.Between):
            low, high = node.args["low"], node.args["high"]
            return self.compare("greater_equal", node.this, low) & self.compare("less_equal", node.this, high)
        if isinstance(node, exp.In):
            if node.args.get("query"):
                raise self.fail(node, "(subqueries) is not supported")
            column, t = self.column(node.this)
            values = pa.array([self.literal(v, t) for v in node.expressions], t)
            # SQL semantics: NULL IN (...) is NULL; x IN (..., NULL) is NULL when x is not found
            found = pc.is_in(column, value_set=values.drop_null(), skip_nulls=True)
            missing = pa.scalar(None if values.null_count else False, pa.bool_())
            return pc.if_else(column.is_null(), pa.scalar(None, pa.bool_()), pc.if_else(found, True, missing))
        if isinstance(node, (exp.Like, exp.ILike)):
            column = self.visit_value(node.this)
            pattern = node.expression
            if not isinstance(pattern, exp.Literal) or not pattern.is_string:
                raise self.fail(node, "needs a string pattern")
            ignore_case = isinstance(node, exp.ILike)
            matched = pc.match_like(column, pattern.this, ignore_case=ignore_case)
            return ~matched if node.args.get("negate") else matched
        if isinstance(node, exp.Escape):
            raise self.fail(node, "(LIKE ... ESCAPE) is not supported yet")
        if isinstance(node, (exp.Column, exp.Dot)):
            expr, t = self.column(node)
            if not pa.types.is_boolean(t):
                raise self.fail(node, "is not a boolean column")
            return expr
        if isinstance(node, exp.Boolean):
            return pc.scalar(node.this)
        if isinstance(node, (exp.RegexpLike, exp.StartsWith)) or isinstance(node, exp.Anonymous):
            return self.function(node)
        raise self.fail(node)

    # -- pieces -----------------------------------------------------------------------------
    def column(self, node) -> tuple[pc.Expression, pa.DataType]:
        parts = [p.name for p in node.parts] if isinstance(node, exp.Column) else \
            [p.name for p in node.find_all(exp.Identifier)]
        if not parts:
            raise self.fail(node, "is not a column")
        head = parts[0]
        if head in ("_rowid", "_rowaddr"):
            return pc.field(head), pa.uint64()
        name = self.lookup.get(head.lower())
        if name is None:
            raise FilterError(f"filter {self.text!r}: no column named {head!r} (columns: {self.schema.names})")
        t = self.schema.field(name).type
        path = [name]
        for part in parts[1:]:
            if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
                raise FilterError(f"filter {self.text!r}: {'.'.join(path)!r} has no field {part!r}")
            t = t.field(part).type
            path.append(part)
        return pc.field(*path), t

    def compare(self, op: str, left, right) -> pc.Expression:
        if isinstance(left, exp.Literal) or _is_literal(left):
            left, right = right, left
            op = {"less": "greater", "greater": "less", "less_equal": "greater_equal",
                  "greater_equal": "less_equal"}.get(op, op)
        if isinstance(left, (exp.Column, exp.Dot)):
            column, t = self.column(left)
            if _is_literal(right):
                value = self.literal(right, t)
                if value.as_py() is None:
                    return pc.scalar(pa.scalar(None, pa.bool_()))
                result = getattr(pc, op)(column, value)
                if pa.types.is_floating(t) and op in ("greater", "greater_equal"):
                    result = result | pc.is_nan(column)  # NaN sorts above every number (as in pylance)
                return result
            return getattr(pc, op)(column, self.visit_value(right))
        return getattr(pc, op)(self.visit_value(left), self.visit_value(right))

    def visit_value(self, node) -> pc.Expression:
        if isinstance(node, (exp.Column, exp.Dot)):
            return self.column(node)[0]
        if _is_literal(node):
            return pc.scalar(self.literal(node, None))
        return self.visit(node)

    def function(self, node) -> pc.Expression:
        name = (node.name if isinstance(node, exp.Anonymous) else type(node).__name__).lower()
        args = node.expressions if isinstance(node, exp.Anonymous) else [node.this, node.expression]
        if name in ("regexplike", "regexp_like", "regexp_match") and len(args) == 2:
            return pc.match_substring_regex(self.visit_value(args[0]), _string(args[1], self))
        if name in ("startswith", "starts_with") and len(args) == 2:
            return pc.starts_with(self.visit_value(args[0]), _string(args[1], self))
        if name == "ends_with" and len(args) == 2:
            return pc.ends_with(self.visit_value(args[0]), _string(args[1], self))
        if name == "is_valid" and len(args) == 1:
            return self.visit_value(args[0]).is_valid()
        raise self.fail(node, "is not a supported function")

    def literal(self, node, t: pa.DataType | None) -> pa.Scalar:
        """A literal coerced to ``t`` without loss (pylance's rules)."""
        value = _literal_value(node, self)
        if t is None or value is None:
            return pa.scalar(value) if t is None else pa.scalar(None, t)
        if isinstance(value, str) and not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise self.fail(node, f"is a string and cannot be compared with a {t} column "
                                  "(use a typed literal such as DATE '...' or TIMESTAMP '...')")
        if isinstance(value, float) and pa.types.is_integer(t):
            raise self.fail(node, f"would lose precision as {t}")
        if isinstance(value, float) and pa.types.is_decimal(t):
            raise self.fail(node, f"is a float; use CAST('...' AS DECIMAL(p, s)) for a {t} column")
        try:
            return pa.scalar(value).cast(t, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError) as exc:
            raise self.fail(node, f"cannot be used with a {t} column: {exc}") from None


def _is_literal(node) -> bool:
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean, exp.Neg, exp.Cast, exp.TryCast)) and \
        not (isinstance(node, (exp.Cast, exp.TryCast)) and not _is_literal(node.this))


def _string(node, visitor: _Visitor) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise visitor.fail(node, "must be a string literal")


def _literal_value(node, visitor: _Visitor):
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal_value(node.this, visitor)
        return -inner
    if isinstance(node, (exp.Cast, exp.TryCast)):
        inner = _literal_value(node.this, visitor)
        kind = node.to.this
        DT = exp.DataType.Type
        try:
            if kind == DT.DATE:
                return dt.date.fromisoformat(str(inner))
            if kind in (DT.TIMESTAMP, DT.DATETIME, DT.TIMESTAMPTZ, DT.TIMESTAMPLTZ):
                return dt.datetime.fromisoformat(str(inner).replace("Z", "+00:00"))
            if kind == DT.DECIMAL:
                return decimal.Decimal(str(inner))
            if kind in (DT.INT, DT.BIGINT, DT.SMALLINT, DT.TINYINT):
                return int(inner)
            if kind in (DT.FLOAT, DT.DOUBLE):
                return float(inner)
            if kind in (DT.VARCHAR, DT.TEXT, DT.CHAR):
                raise visitor.fail(node, "uses a cast type Lance rejects (use STRING)")
            if kind == DT.BOOLEAN:
                return bool(inner)
        except ValueError as exc:
            raise visitor.fail(node, f"is not a valid literal: {exc}") from None
        return inner
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    raise visitor.fail(node, "is not a literal")
