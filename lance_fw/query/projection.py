"""SQL projections: ``scanner(columns={"x2": "x * 2", "up": "upper(s)"})`` as in pylance.

Each expression is parsed with sqlglot (the filter dialect) into a ``pyarrow.compute.Expression``;
batches read with the referenced columns are projected through Acero. Boolean parts (comparisons,
AND/OR, IN, LIKE, IS NULL ...) reuse the filter visitor; arithmetic and scalar functions are
added here. Literals are coerced to the type of the expression they meet, with the filter's strict
rules (``x * 2.5`` on an integer column is refused, as in pylance). Types are pyarrow's own:
they are found by projecting an empty table of the schema.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lance_fw.errors import InvalidArgumentError
from lance_fw.query.filter import _COMPARE, FilterError, _is_literal, _Visitor

_ARITHMETIC = {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide"}
_BOOLEAN = (exp.And, exp.Or, exp.Not, exp.Is, exp.Between, exp.In, exp.Like, exp.ILike, *_COMPARE)


class ProjectionError(InvalidArgumentError):
    """A projection expression lance_fw cannot evaluate."""


class Projection:
    """Named SQL expressions over a dataset schema: the columns to read and how to project them."""

    def __init__(self, expressions: dict[str, str], schema: pa.Schema):
        if not expressions:
            raise ProjectionError("columns={} asks for no column")
        self._schema = schema
        self.names = [str(n) for n in expressions]
        self.expressions: list[pc.Expression] = []
        columns: dict[str, None] = {}
        for name, text in expressions.items():
            if not isinstance(text, str):
                raise ProjectionError(f"columns[{name!r}] must be a SQL string, not {type(text).__name__}")
            tree = _parse(text)
            visitor = _Projector(schema, text)
            try:
                self.expressions.append(visitor.value(tree))
            except FilterError as exc:  # raised by the shared filter pieces (unknown column ...)
                raise ProjectionError(str(exc).replace("filter ", "projection ", 1)) from None
            columns.update(dict.fromkeys(visitor.referenced(tree)))
        if not columns:
            raise ProjectionError("a projection must read at least one column (found only literals)")
        self.columns = [n for n in schema.names if n in columns]
        self.schema = self.apply(pa.schema([schema.field(c) for c in self.columns]).empty_table()).schema

    def apply(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        """Project a table/batch holding (at least) ``self.columns``."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        try:
            return _project(table, self.expressions, self.names)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:  # e.g. integer / 0
            raise ProjectionError(f"projection of {self.names} failed on the data: {str(exc).splitlines()[0]}") from None

    def batches(self, batches):
        for batch in batches:
            yield from self.apply(batch).to_batches()


def _parse(text: str):
    try:
        statements = sqlglot.parse(f"SELECT {text} FROM t", read="spark")
    except sqlglot.errors.ParseError as exc:
        raise ProjectionError(f"cannot parse projection {text!r}: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Select) or len(statements[0].expressions) != 1:
        raise ProjectionError(f"projection {text!r} must be one expression")
    node = statements[0].expressions[0]
    if isinstance(node, exp.Alias):
        raise ProjectionError(f"projection {text!r}: name it with the dict key, not AS")
    return node


def _project(table: pa.Table, expressions: list[pc.Expression], names: list[str]) -> pa.Table:
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("project", acero.ProjectNodeOptions(expressions, names)),
    ])
    return plan.to_table(use_threads=False)


class _Projector(_Visitor):
    """Value expressions; boolean nodes go to the filter visitor."""

    def referenced(self, node) -> list[str]:
        heads = [c.parts[0].name for c in node.find_all(exp.Column)]
        return [self.lookup[h.lower()] for h in heads if h.lower() in self.lookup]

    def type_of(self, expression: pc.Expression) -> pa.DataType:
        try:
            return _project(self.schema.empty_table(), [expression], ["t"]).schema.field(0).type
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise self.fail_text(str(exc).splitlines()[0]) from None

    def fail_text(self, why: str) -> ProjectionError:
        return ProjectionError(f"projection {self.text!r}: {why}")

    def fail(self, node, why: str = "is not supported") -> ProjectionError:
        return self.fail_text(f"{node.sql(dialect='spark')!r} {why}")

    def value(self, node) -> pc.Expression:
        """The expression for any node (checked to type-check against the schema)."""
        out = self._value(node)
        self.type_of(out)
        return out

    def visit_value(self, node) -> pc.Expression:  # used by the filter visitor for operands
        return self._value(node)

    def _value(self, node) -> pc.Expression:
        if isinstance(node, exp.Paren):
            return self._value(node.this)
        if isinstance(node, (exp.Column, exp.Dot)):
            return self.column(node)[0]
        if isinstance(node, exp.Neg) and not _literal(node):
            return pc.negate(self._value(node.this))
        if _literal(node):
            return pc.scalar(self.literal(node, None))
        if type(node) in _ARITHMETIC or isinstance(node, exp.Mod):
            return self.arithmetic(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, _BOOLEAN) or isinstance(node, (exp.RegexpLike, exp.StartsWith)):
            return self.visit(node)
        if isinstance(node, exp.Func):
            return self.function(node)
        raise ProjectionError(f"projection {self.text!r}: {node.sql(dialect='spark')!r} is not supported")

    def operands(self, left, right) -> tuple[pc.Expression, pc.Expression]:
        """Both sides; a literal next to a column takes the column's type (strict coercion, as
        pylance does: ``i + 1`` stays int32 but ``length(s) + 1`` is int64)."""
        if _literal(left) and isinstance(right, (exp.Column, exp.Dot)):
            b, t = self.column(right)
            return pc.scalar(self.literal(left, t)), b
        if _literal(right) and isinstance(left, (exp.Column, exp.Dot)):
            a, t = self.column(left)
            return a, pc.scalar(self.literal(right, t))
        a, b = self._value(left), self._value(right)
        if _literal(right) and not _literal(left):
            a = self.widen(a, self.type_of(b))
        elif _literal(left) and not _literal(right):
            b = self.widen(b, self.type_of(a))
        return a, b

    def widen(self, expression: pc.Expression, literal_type: pa.DataType) -> pc.Expression:
        """Promote an expression to a wider literal's type (Arrow would narrow the literal)."""
        t = self.type_of(expression)
        if pa.types.is_integer(t) and pa.types.is_integer(literal_type) and literal_type.bit_width > t.bit_width:
            return expression.cast(literal_type)
        if pa.types.is_integer(t) and pa.types.is_floating(literal_type):
            return expression.cast(literal_type)
        return expression

    def arithmetic(self, node) -> pc.Expression:
        a, b = self.operands(node.this, node.expression)
        if isinstance(node, exp.Mod):  # truncated remainder (the sign of the dividend), as in SQL
            return pc.subtract(a, pc.multiply(pc.divide(a, b), b))
        return getattr(pc, _ARITHMETIC[type(node)])(a, b)

    def cast(self, node) -> pc.Expression:
        target = _CAST_TYPES.get(node.to.this)
        if target is None:
            raise self.fail(node, "casts to a type lance_fw does not support")
        return self._value(node.this).cast(target)

    def function(self, node) -> pc.Expression:
        if isinstance(node, exp.Trim) and node.args.get("expression") is None:
            trim = {"LEADING": pc.utf8_ltrim_whitespace, "TRAILING": pc.utf8_rtrim_whitespace}
            how = trim.get(str(node.args.get("position") or "").upper(), pc.utf8_trim_whitespace)
            return how(self._value(node.this))
        name = (node.name if isinstance(node, exp.Anonymous) else node.key).lower()
        args = _arguments(node)
        build = _FUNCTIONS.get(name)
        if build is None or not build[0](len(args)):
            if isinstance(node, exp.Anonymous) or name in ("regexplike", "startswith"):
                return super().function(node)
            raise self.fail(node, "is not a supported function")
        return build[1](self, args)


def _literal(node) -> bool:
    """A constant (the filter's test, minus negated columns such as ``-x``)."""
    return _is_literal(node) and not any(True for _ in node.find_all(exp.Column))


def _arguments(node) -> list:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out = [node.this] if node.args.get("this") is not None else []
    for key in ("expression", "expressions", "decimals", "replacement"):
        value = node.args.get(key)
        if isinstance(value, list):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def _unary(fn):
    return (lambda n: n == 1), (lambda v, args: fn(v._value(args[0])))


def _concat(v: _Projector, args) -> pc.Expression:
    parts = [v._value(a) for a in args]
    return pc.binary_join_element_wise(*parts, pc.scalar(""), null_handling="replace", null_replacement="")


def _coalesce(v: _Projector, args) -> pc.Expression:
    first = v._value(args[0])
    rest = [pc.scalar(v.literal(a, v.type_of(first))) if _literal(a) else v._value(a) for a in args[1:]]
    return pc.coalesce(first, *rest)


def _nullif(v: _Projector, args) -> pc.Expression:
    a, b = v.operands(args[0], args[1])
    return pc.if_else(pc.equal(a, b), pc.scalar(pa.scalar(None, v.type_of(a))), a)


def _round(v: _Projector, args) -> pc.Expression:
    digits = int(v.literal(args[1], pa.int64()).as_py()) if len(args) > 1 else 0
    return pc.round(v._value(args[0]), ndigits=digits, round_mode="half_towards_infinity")


def _replace(v: _Projector, args) -> pc.Expression:
    return pc.replace_substring(v._value(args[0]), v.literal(args[1], pa.string()).as_py(),
                                v.literal(args[2], pa.string()).as_py())


def _power(v: _Projector, args) -> pc.Expression:
    return pc.power(v._value(args[0]).cast(pa.float64()), v._value(args[1]).cast(pa.float64()))


_FUNCTIONS = {
    "upper": _unary(pc.utf8_upper),
    "lower": _unary(pc.utf8_lower),
    "length": _unary(pc.utf8_length),
    "char_length": _unary(pc.utf8_length),
    "reverse": _unary(pc.utf8_reverse),
    "ltrim": _unary(pc.utf8_ltrim_whitespace),
    "rtrim": _unary(pc.utf8_rtrim_whitespace),
    "btrim": _unary(pc.utf8_trim_whitespace),
    "abs": _unary(pc.abs),
    "sqrt": _unary(lambda e: pc.sqrt(e.cast(pa.float64()))),
    "concat": ((lambda n: n >= 1), _concat),
    "coalesce": ((lambda n: n >= 1), _coalesce),
    "nullif": ((lambda n: n == 2), _nullif),
    "round": ((lambda n: n in (1, 2)), _round),
    "replace": ((lambda n: n == 3), _replace),
    "pow": ((lambda n: n == 2), _power),
    "power": ((lambda n: n == 2), _power),
}

_T = exp.DataType.Type
_CAST_TYPES = {
    _T.BOOLEAN: pa.bool_(), _T.TINYINT: pa.int8(), _T.SMALLINT: pa.int16(), _T.INT: pa.int32(),
    _T.BIGINT: pa.int64(), _T.FLOAT: pa.float32(), _T.DOUBLE: pa.float64(), _T.TEXT: pa.string(),
    _T.VARCHAR: pa.string(), _T.DATE: pa.date32(), _T.TIMESTAMP: pa.timestamp("us"),
}
