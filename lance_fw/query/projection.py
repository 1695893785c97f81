"""SQL projections: ``scanner(columns={"x2": "x * 2", "up": "upper(s)"})`` as in pylance.

pylance plans a projection with the same Lance planner as a filter, so an expression here is the
filter visitor's value expression: the same parser and token checks, the same operators, casts and
function table (``filter_functions``, ``float_math``, ``float_order``), hence the same NaN signs,
``totalOrder`` picks and refusals. What differs is only what a filter never shows:

- Lance coerces a literal next to a bare column to the column's type, strictly, but only at the
  top of the expression (through AND/OR/NOT, and into an arithmetic right-hand side): ``i32 + 1``
  stays int32 and wraps, ``(i32 + 1) * 1`` and ``abs(i32 + 1)`` are int64, ``i32 * 2.5`` is refused.
  :func:`_resolve_literals` marks those literals before the visitor runs.
- A projection that reads no column is refused (pylance: "Scans must request at least one column"),
  also when DataFusion's simplifier folds it to a constant (``i32 + NULL``, ``power(x, 0)``,
  ``coalesce('', s)``); :meth:`_Projector.folded` follows those rules, and nullability too
  (``coalesce(x, 0)`` and ``x IS NULL`` are "not null" in the scan schema and in add_columns).
- Result types are DataFusion's, not pyarrow's: float32 stays float32 (sqrt, signum, %, round),
  date_part is int32, left/right are string_view, coalesce/greatest/least/nullif take the common
  type of their arguments. Where lance_fw cannot yet give pylance's type or value (decimal
  arithmetic, float -> string, exp/ln of float32, log10, regexp_match ...), the projection is
  refused with a ``ProjectionError`` naming it (tests/test_projection_parity.py lists them).

Batches read with the referenced columns are projected through Acero; failures on the data
(integer / 0, a NaN cast to an integer, ``power(0, -1)``) become a typed ``ProjectionError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.query import filter_functions as functions
from lance_fw.query.dialect import (
    ARITHMETIC,
    ARITHMETIC_NODES,
    BINARY_NODES,
    COMPARISONS,
    ROW_COLUMNS,
    ExpressionError,
    column_path,
    parse_value,
    unwrap,
)
from lance_fw.query.filter import _Visitor
from lance_fw.query.filter_literals import _literal_value

#: errors pyarrow raises while computing a projected batch
_DATA_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
#: functions whose float32 argument gives a float32 result in pylance (pyarrow's kernels give float64);
#: each is exact or correctly rounded, so rounding the float64 result is the float32 result (not so
#: for exp/ln: float32 libm differs from rounded float64 in the last digit, so those are refused)
_FLOAT32_KEEPING = {"sqrt", "signum"}
#: functions pylance refuses for a boolean argument (first: the argument whose type decides)
_NUMERIC_ONLY = {"sqrt", "signum", "round", "ln", "exp", "power", "abs", "isnan", "log", "log10", "log2"}
#: math functions that DataFusion folds to NULL for a NULL argument
_NULL_STRICT = (exp.Pow, exp.Sqrt, exp.Sign, exp.Round, exp.Ln, exp.Exp, exp.Abs)
#: functions whose result type is DataFusion's common type of their arguments
_COMMON_TYPE = {"coalesce", "nullif", "greatest", "least"}
#: functions pylance computes in float32 for a float32 argument with float32 libm (whose last digit
#: differs from the rounded float64 result): refused for float32 until computed that way
_FLOAT32_LIBM = {"ln", "exp", "log", "log10", "log2"}
#: DataFusion's type of a bare literal by Python type
_LITERAL_TYPES = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


class ProjectionError(ExpressionError):
    """A projection expression lance_fw cannot evaluate (or pylance refuses)."""


def as_stored(values: pa.Table, target: pa.Schema, what: str) -> pa.Table:
    """Computed values ready for ``conform`` to the stored columns as pylance's (Rust) casts store
    them (``update({"n": "x"})``): a float stored in an integer column is truncated toward zero; a
    float or timestamp stored in a string column is refused (Rust writes 1e20 as '1e20', Arrow
    as '1e+20', as for ``CAST(x AS STRING)``)."""
    textual = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    for i, field in enumerate(values.schema):
        stored = target.field(field.name).type if field.name in target.names else field.type
        if any(f(stored) for f in textual) and (
            pa.types.is_floating(field.type) or pa.types.is_timestamp(field.type)
        ):
            raise ProjectionError(
                f"{what}: storing a {field.type} value in the {stored} column {field.name!r} "
                "is not supported (Rust formats floats and timestamps differently from Arrow)"
            )
        if pa.types.is_floating(field.type) and pa.types.is_integer(stored):
            values = values.set_column(i, field, pc.trunc(values.column(i)))
    return values


class Projection:
    """Named SQL expressions over a dataset schema: the columns to read and how to project them."""

    def __init__(self, expressions: dict[str, str], schema: pa.Schema, require_column: bool = True) -> None:
        """``require_column``: refuse expressions that read no column, as pylance's scans do
        (``add_columns({"c": "'x'"})`` reads rows anyway and allows them)."""
        if not expressions:
            raise ProjectionError("columns={} asks for no column")
        self._schema = schema
        self.names = [str(n) for n in expressions]
        self.expressions: list[pc.Expression] = []
        non_null: set[str] = set()
        #: names whose expression names no column (``'x'``, ``1 + 2``): add_columns stores them not null
        self.constants: set[str] = set()
        columns: dict[str, None] = {}
        for name, text in expressions.items():
            if not isinstance(text, str):
                raise ProjectionError(f"columns[{name!r}] must be a SQL string, not {type(text).__name__}")
            visitor = _Projector(schema, text)
            tree = _parse(text)
            self.expressions.append(visitor.value(tree))
            columns.update(dict.fromkeys(visitor.referenced(tree)))
            if tree.find(exp.Column) is None:
                self.constants.add(str(name))
            if not visitor.nullable(tree):
                non_null.add(str(name))
        if not columns and require_column:
            raise ProjectionError("a projection must read at least one column (found only constants)")
        self.columns = [n for n in schema.names if n in columns]
        self.schema: pa.Schema | None = None
        raw = self.apply(pa.schema([schema.field(c) for c in self.columns]).empty_table()).schema
        self.schema = pa.schema([f.with_nullable(f.name not in non_null) for f in raw])

    def apply(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        """Project a table/batch holding (at least) ``self.columns``."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        try:
            out = _project(table, self.expressions, self.names)
            return out if self.schema is None or out.schema == self.schema else out.cast(self.schema)
        except _DATA_ERRORS as exc:  # e.g. integer / 0
            why = str(exc).splitlines()[0]
            raise ProjectionError(f"projection of {self.names} failed on the data: {why}") from None

    def batches(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from self.apply(batch).to_batches()


def _parse(text: str) -> exp.Expression:
    """The expression of ``SELECT <text> FROM t``, in the one Lance dialect (``dialect``)."""
    node = parse_value(text, ProjectionError)
    if any(c.parts[0].name.lower() in ROW_COLUMNS for c in node.find_all(exp.Column)):
        raise ProjectionError(
            f"projection {text!r}: _rowid/_rowaddr in SQL projections are not supported yet"
        )
    return node


def _project(table: pa.Table, expressions: list[pc.Expression], names: list[str]) -> pa.Table:
    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions(expressions, names)),
        ]
    )
    return plan.to_table(use_threads=False)


def _plain_literal(node: exp.Expression) -> bool:
    """A literal the Lance planner keeps as one (``CAST(1 AS BIGINT)`` is a cast, not coerced)."""
    if isinstance(node, exp.Paren):
        return _plain_literal(node.this)
    if isinstance(node, exp.Neg):
        return isinstance(node.this, exp.Literal) and not node.this.is_string
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean))


def _constant(node: exp.Expression) -> bool:
    """Arithmetic of plain literals only (DataFusion folds it to one literal)."""
    node = unwrap(node)
    if isinstance(node, ARITHMETIC_NODES):
        return all(_plain_literal(n) or _constant(n) for n in (node.this, node.expression))
    return False


def _children(node: exp.Expression) -> list:
    """The argument nodes of an operator or function call."""
    return [v for key, v in node.args.items() if isinstance(v, exp.Expression) and key != "to"] + [
        x for v in node.args.values() if isinstance(v, list) for x in v if isinstance(x, exp.Expression)
    ]


class _Projector(_Visitor):
    """The filter visitor, plus Lance's top-level literal coercion and projection errors."""

    noun = "projection"
    error = ProjectionError
    matched_groups_as_truth = False  # pylance refuses regexp_match(...) AND ... in a projection

    def __init__(self, schema: pa.Schema, text: str) -> None:
        super().__init__(schema, text)
        self._coerced: dict[int, pa.DataType] = {}  # id(literal node) -> the column type it takes

    def value(self, node: exp.Expression) -> pc.Expression:
        """The expression of a whole projection (type-checked against the schema)."""
        self._resolve_literals(node)
        out = self.visit_value(node)
        self.type_of(out)
        return out

    def visit_value(self, node: exp.Expression) -> pc.Expression:
        target = self._coerced.get(id(node))
        if target is not None:
            return self._coerced_literal(node, target)
        if isinstance(node, (exp.Cast, exp.TryCast)) and self.is_literal(
            node
        ):  # CAST(0 AS FLOAT) is a float32
            return (
                super()
                .visit_value(node)
                .cast(self.literal_type(node, self.type_of(super().visit_value(node))))
            )
        if isinstance(node, exp.Neg) and not self.is_literal(node):
            t = self.type_of(super().visit_value(node.this))
            if pa.types.is_unsigned_integer(t) or pa.types.is_boolean(t):
                raise self.fail(node, f"negates a {t}, which pylance refuses")
        out = super().visit_value(node)
        if isinstance(node, exp.DPipe):  # a large_string side makes a large_string, as in DataFusion
            sides = [self.type_of(self.visit_value(x)) for x in (node.this, node.expression)]
            textual = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
            if not any(f(t) for t in sides for f in textual):
                raise self.fail(node, f"concatenates {sides[0]} and {sides[1]}, which pylance refuses")
            if any(pa.types.is_string_view(t) for t in sides):
                return out.cast(pa.string_view())
            if any(pa.types.is_large_string(t) for t in sides):
                return out.cast(pa.large_string())
        return out

    def _resolve_literals(self, node: exp.Expression) -> None:
        """Mark the literals Lance's planner casts to a neighbouring column's type before DataFusion
        coerces the rest: either operand of a binary operator at the top (or under AND/OR/NOT) next
        to a bare column; when that other operand is itself arithmetic, every literal inside it."""
        node = unwrap(node)
        if isinstance(node, (exp.And, exp.Or)):
            self._resolve_literals(node.this)
            self._resolve_literals(node.expression)
        elif isinstance(node, exp.Not):
            self._resolve_literals(node.this)
        elif isinstance(node, BINARY_NODES):
            left, right = unwrap(node.this), unwrap(node.expression)
            if self.is_column(left):
                self._coerce(right, self.column(left)[1])
            elif self.is_column(right) and _plain_literal(left):
                self._coerce(left, self.column(right)[1])

    def _coerce(self, node: exp.Expression, t: pa.DataType) -> None:
        """DataFusion folds constant arithmetic first (``i32 + (1 + 1)`` is ``i32 + 2``), then
        Lance casts the literal; ``u8 * (1 + length(s))`` keeps its int64 literal."""
        node = unwrap(node)
        if _plain_literal(node) or _constant(node):
            self._coerced[id(node)] = t

    def _coerced_literal(self, node: exp.Expression, t: pa.DataType) -> pc.Expression:
        if _plain_literal(node):
            return pc.scalar(self.literal(node, t))
        value = _project(pa.table({"_": [0]}), [super().visit_value(node)], ["v"]).column(0)[0]
        if pa.types.is_floating(value.type) and not pa.types.is_floating(t):
            raise self.fail(node, f"is a float and cannot be converted to {t}")
        try:
            return pc.scalar(value.cast(t, safe=True))
        except _DATA_ERRORS as exc:
            raise self.fail(node, f"cannot be converted to {t}: {str(exc).splitlines()[0]}") from None

    # -- where a projected value's type or value would differ from pylance's -------------------
    def function(self, node: exp.Expression) -> pc.Expression:
        name, args = functions.call_arguments(node)
        if name in ("concat",) and any(isinstance(unwrap(a), exp.Null) for a in args):
            raise self.fail(node, "with a NULL argument is not supported yet (pylance returns a string_view)")
        first = self._arg_type(args[0]) if args and name in _NUMERIC_ONLY else None
        if name == "power" and len(args) > 1 and pa.types.is_boolean(self._arg_type(args[1])):
            first = pa.bool_()
        if first is not None and pa.types.is_boolean(first):
            raise self.fail(node, "needs a number, not a boolean (as in pylance)")
        if name == "round" and pa.types.is_decimal(first):
            raise self.fail(node, "of a decimal is not supported yet (pylance keeps a decimal)")
        if name in _FLOAT32_LIBM and first == pa.float32():
            raise self.fail(node, "of a float32 is not supported yet (pylance computes it in float32)")
        common = self._common_type(node, args) if name in _COMMON_TYPE else None
        if name == "power" and isinstance(node, exp.Pow) and self._power_exponent(node) in (0.0, 1.0):
            # DataFusion folds power(x, 0) to 1 and power(x, 1) to x, also for a constant expression
            return (
                pc.scalar(1.0).cast(pa.float64())
                if self._power_exponent(node) == 0
                else self.visit_value(node.this).cast(pa.float64())
            )
        out = super().function(node)
        if name in _FLOAT32_KEEPING and first == pa.float32():
            return out.cast(pa.float32())
        if name in ("date_part", "datepart") and (self.string_literal(args[0]) or "").lower() != "epoch":
            return out.cast(pa.int32())
        if name == "date_trunc" and len(args) > 1 and pa.types.is_date(self._arg_type(args[1])):
            return out.cast(pa.timestamp("ns"))
        if (
            name in ("left", "right")
            or (name == "regexp_replace" and pa.types.is_large_string(self._arg_type(args[0])))
            or (name == "concat" and any(pa.types.is_string_view(self._arg_type(a)) for a in args))
        ):
            return out.cast(pa.string_view())  # DataFusion's kernels return string_view here
        return out.cast(common) if common is not None else out

    def _arg_type(self, node: exp.Expression) -> pa.DataType:
        """The type DataFusion gives an argument: a bare literal keeps its own (1 is int64)."""
        if _plain_literal(node):
            value = _literal_value(unwrap(node), self)
            return pa.null() if value is None else _LITERAL_TYPES.get(type(value), pa.null())
        return self.type_of(self.visit_value(node))

    def _common_type(self, node: exp.Expression, args: list[exp.Expression]) -> pa.DataType | None:
        """DataFusion's common type of coalesce/nullif/greatest/least arguments (a bare literal
        counts as int64/float64). The filter functions compute in the first column's type; that
        gives the same values when every literal is exact in that type, so only the type changes."""
        types = [self._arg_type(a) for a in args]
        present = [t for t in types if not pa.types.is_null(t)]
        for a in args:  # the filter functions take a literal's own digits, not its CAST's
            typed = (
                self._evaluate(a)
                if self.is_literal(a) and isinstance(unwrap(a), (exp.Cast, exp.TryCast))
                else None
            )
            if (
                typed is not None
                and (pa.types.is_integer(typed.type) or pa.types.is_floating(typed.type))
                and typed.as_py() != _literal_value(unwrap(a), self)
            ):
                raise self.fail(
                    node, f"with {a.sql(dialect='spark')} (changed by its cast) is not supported yet"
                )
        anchor = next((t for a, t in zip(args, types) if not self.is_literal(a)), None)
        if (
            anchor is not None
            and pa.types.is_floating(anchor)
            and not all(self._exact(a, anchor) for a in args if self.is_literal(a))
        ):
            raise self.fail(node, f"with a literal that is not exact in {anchor} is not supported yet")
        if len(set(present)) <= 1:
            return present[0] if present else None  # the filter function may compute in float64
        if all(pa.types.is_signed_integer(t) for t in present):
            return max(present, key=lambda t: t.bit_width)
        floats = [t for t in present if pa.types.is_floating(t)]
        int_columns = any(pa.types.is_integer(self._arg_type(a)) for a in args if not _plain_literal(a))
        if int_columns and pa.float64() not in floats:
            floats = []  # int64 next to float32 is float32 in pylance: not followed yet
        if floats and all(pa.types.is_signed_integer(t) or pa.types.is_floating(t) for t in present):
            anchor = next((self._arg_type(a) for a in args if not _plain_literal(a)), None)
            if anchor is not None and all(self._exact(a, anchor) for a in args if _plain_literal(a)):
                return max(floats, key=lambda t: t.bit_width)
        raise self.fail(
            node, f"of {[str(t) for t in types]} is not supported yet (pylance's common type differs)"
        )

    def _exact(self, node: exp.Expression, t: pa.DataType) -> bool:
        """A literal that ``t`` holds exactly (0.1 is not exact in float32, 2**60 not in float64)."""
        value = _literal_value(unwrap(node), self)
        if value is None:
            return True
        if not isinstance(value, (int, float)):
            return False
        try:
            return pa.scalar(value).cast(t, safe=False).as_py() == value
        except _DATA_ERRORS:
            return False

    def arithmetic(self, node: exp.Binary) -> pc.Expression:
        a, b = self.visit_value(node.this), self.visit_value(node.expression)
        ta, tb = self.type_of(a), self.type_of(b)
        if pa.types.is_boolean(ta) or pa.types.is_boolean(tb):
            raise self.fail(node, "is not arithmetic on numbers (pylance refuses booleans)")
        for operand in (node.this, node.expression):
            value = self.folded(operand)
            if value is not None and pa.types.is_floating(value.type) and math.isnan(value.as_py() or 0.0):
                raise self.fail(
                    node, "with a NaN literal is not supported yet (the result NaN's sign differs)"
                )
        if pa.types.is_decimal(ta) or pa.types.is_decimal(tb):
            raise self.fail(node, "on decimals is not supported yet (DataFusion's result precision differs)")
        if pa.types.is_date(ta) and pa.types.is_date(tb):
            raise self.fail(node, "of dates is not supported yet (pylance returns days as int64)")
        if any(pa.types.is_date(x) for x in (ta, tb)) and any(pa.types.is_timestamp(x) for x in (ta, tb)):
            raise self.fail(node, "of a date and a timestamp is not supported yet (pylance's unit differs)")
        if {ta, tb} & {pa.uint64()} and any(pa.types.is_signed_integer(t) for t in (ta, tb)):
            raise self.fail(
                node, "of uint64 and a signed integer is not supported yet (pylance uses a decimal)"
            )
        if (pa.types.is_integer(ta) and pa.types.is_floating(tb)) or (
            pa.types.is_floating(ta) and pa.types.is_integer(tb)
        ):
            return self._mixed(node, a, ta, b, tb)
        out = super().arithmetic(node)
        if isinstance(node, exp.Mod) and ta == tb == pa.float32():
            return out.cast(pa.float32())  # fmod is exact: the float64 remainder is the float32 one
        return out

    def _mixed(
        self, node: exp.Binary, a: pc.Expression, ta: pa.DataType, b: pc.Expression, tb: pa.DataType
    ) -> pc.Expression:
        """An integer next to a float becomes that float (DataFusion: i32 + f32 is float32)."""
        t = ta if pa.types.is_floating(ta) else tb
        a, b = (x.cast(t, safe=False) for x in (a, b))
        if isinstance(node, exp.Mod):
            out = functions.float_math.apply("fmod", a, b)
            return out.cast(t) if t == pa.float32() else out
        return ARITHMETIC[type(node)](a, b)

    def cast(self, node: exp.Cast) -> pc.Expression:
        source = self.type_of(self.visit_value(node.this))
        target = self.cast_type(node)
        if (
            type(node) is exp.Cast
            and pa.types.is_timestamp(target)
            and not pa.types.is_string(source)
            and not pa.types.is_date(source)
            and not pa.types.is_timestamp(source)
        ):
            raise self.fail(node, "is not supported yet (to_timestamp of numbers counts seconds in pylance)")
        return super().cast(node)

    def nullable(self, node: exp.Expression) -> bool:
        """DataFusion's nullability of an expression, which pylance reports in the scan schema and
        stores in add_columns' fields: IS [NOT] NULL, a non-NULL constant and a coalesce with a
        non-null argument are never NULL; operators and functions are NULL when an argument may be
        (nullif and TRY_CAST always may); a column as its field (and its parent structs) says."""
        node = unwrap(node)
        if isinstance(node, exp.Is):
            return False
        folded = self.folded(node)
        if folded is not None:
            return not folded.is_valid
        if self.is_column(node):
            return self._column_nullable(node)
        if isinstance(node, exp.Coalesce):  # pylance reports a boolean coalesce as nullable
            return pa.types.is_boolean(self.type_of(self.visit_value(node))) or all(
                self.nullable(a) for a in [node.this, *node.expressions]
            )
        if isinstance(node, exp.Nullif) or (isinstance(node, exp.TryCast) and node.args.get("safe")):
            return True  # TRY_CAST (sqlglot's Spark reads a plain CAST as a TryCast too)
        if isinstance(
            node, (exp.Not, exp.Neg, exp.Cast, exp.Round, exp.DPipe, *ARITHMETIC_NODES)
        ):  # Cast: TryCast too
            return any(self.nullable(a) for a in _children(node))
        return True  # other functions (signum(coalesce(x, 1)) is nullable in pylance)

    def _column_nullable(self, node: exp.Expression) -> bool:
        try:
            parts = [name for name, _ in column_path(node)]
            field = self.schema.field(self.lookup.get(parts[0].lower(), parts[0]))
        except (KeyError, IndexError):
            return True
        nullable = field.nullable
        for part in parts[1:]:
            if not pa.types.is_struct(field.type) or field.type.get_field_index(part) < 0:
                return True
            field = field.type.field(part)
            nullable = nullable or field.nullable
        return nullable

    def folded(self, node: exp.Expression) -> pa.Scalar | None:
        """The constant DataFusion's simplifier turns ``node`` into, or None when it reads data:
        constant subtrees, arithmetic/casts/functions of a NULL (NULL), functions of constants,
        coalesce starting with a non-NULL constant, ``power(x, 0)`` (1). Evaluated over one row
        of NULL columns, which the folded parts never read."""
        return self._evaluate(node) if self._foldable(unwrap(node)) else None

    def _foldable(self, node: exp.Expression) -> bool:
        node = unwrap(node)
        if node.find(exp.Column) is None:
            return True
        if isinstance(node, (exp.Cast, exp.Neg)):
            return self._foldable(node.this)
        folded = [self._foldable(n) for n in _children(node)]
        if (
            isinstance(node, (*ARITHMETIC_NODES, *COMPARISONS, *_NULL_STRICT))
            and folded
            and any(f and not self._evaluate(n).is_valid for f, n in zip(folded, _children(node)))
        ):
            return True  # NULL in, NULL out
        if isinstance(node, (*ARITHMETIC_NODES, exp.DPipe, *COMPARISONS, exp.And, exp.Or, exp.Not)):
            return all(folded)
        if isinstance(node, exp.Coalesce):
            first = self._foldable(node.this)
            return (first and self._evaluate(node.this).is_valid) or (first and all(folded))
        if isinstance(node, exp.Pow) and self._power_exponent(node) == 0:
            return True
        if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous):
            return all(folded)
        return False

    def _power_exponent(self, node: exp.Expression) -> float | None:
        """The constant exponent DataFusion's simplifier sees in ``power(x, e)`` (after folding e),
        or None. A literal ``-0.0`` is a negation there and is not folded."""
        e = unwrap(node.expression)
        if (isinstance(e, exp.Neg) and _plain_literal(e)) or not self._foldable(e):
            return None
        value = self._evaluate(e)
        if not value.is_valid or not (pa.types.is_integer(value.type) or pa.types.is_floating(value.type)):
            return None
        return None if math.copysign(1.0, float(value.as_py())) < 0 else float(value.as_py())

    def _evaluate(self, node: exp.Expression) -> pa.Scalar:
        nulls = (
            pa.table({f.name: pa.nulls(1, f.type) for f in self.schema})
            if len(self.schema)
            else pa.table({"_": [0]})
        )
        try:
            return _project(nulls, [self.visit_value(unwrap(node))], ["v"]).column(0)[0]
        except _DATA_ERRORS as exc:  # pylance fails planning such a constant too
            raise self.fail(node, f"fails: {str(exc).splitlines()[0]}") from None

    def referenced(self, node: exp.Expression) -> list[str]:
        """Top-level columns read; none when DataFusion folds the expression to a constant
        (``x + NULL`` is NULL, ``power(x, 0)`` is 1): pylance then finds no column to read."""
        node = unwrap(node)
        if self._foldable(node):
            return []
        heads = [c.parts[0].name for c in node.find_all(exp.Column)]
        return [self.lookup[h.lower()] for h in heads if h.lower() in self.lookup]
