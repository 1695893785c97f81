"""The expression visitor's dispatch: one rule per sqlglot node type, for every SQL surface.

``functools.singledispatch`` picks the rule by the node's class (a subclass such as ``TryCast``
falls back to its base's rule): ``truth`` for a node in a boolean position, ``value`` for a value.
Filters, projections, ``update`` and ``add_columns`` share these registries; a rule only calls the
visitor's methods (``compare``, ``arithmetic``, ``cast``, ``function`` ...), which a projection's
visitor extends, so there is one operator table (``dialect``) and no copy of it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.query import filter_functions as functions
from lance_fw.query.dialect import (
    ARITHMETIC_NODES,
    BOOLEAN_NODES,
    COMPARISONS,
    NULL_SAFE,
    unwrap,
)

if TYPE_CHECKING:
    from lance_fw.query.filter import _Visitor as Visitor

NULL_BOOL = pa.scalar(None, pa.bool_())


@functools.singledispatch
def truth(node: exp.Expression, v: Visitor) -> pc.Expression:
    """A node in a boolean position with no rule of its own: a boolean column, a boolean function
    (the type is checked by parse_filter), or any value."""
    if v.is_column(node):
        expr, t = v.column(node)
        if not pa.types.is_boolean(t):
            raise v.fail(node, f"is a {t} column, not a boolean one")
        return expr
    if isinstance(node, exp.Func):
        if v.matched_groups_as_truth and _matched_groups(node):  # Lance: regexp_match(...) IS NOT NULL
            return functions.call(v, node).is_valid()
        return v.function(node)
    return v.visit_value(node)


def _matched_groups(node: exp.Expression) -> bool:
    """A call of a function whose value is a list of matched groups (``regexp_match``)."""
    return isinstance(node, exp.Func) and functions.call_arguments(node)[0] in functions.MATCHED_GROUPS


@truth.register(exp.Paren)
def _(node: exp.Paren, v: Visitor) -> pc.Expression:
    return v.visit(node.this)


@truth.register(exp.And)
def _(node: exp.And, v: Visitor) -> pc.Expression:
    return v.visit(node.this) & v.visit(node.expression)


@truth.register(exp.Or)
def _(node: exp.Or, v: Visitor) -> pc.Expression:
    return v.visit(node.this) | v.visit(node.expression)


@truth.register(exp.Not)
def _(node: exp.Not, v: Visitor) -> pc.Expression:
    return ~v.visit(node.this)


def _comparison(node: exp.Binary, v: Visitor) -> pc.Expression:
    return v.compare(COMPARISONS[type(node)], node.this, node.expression)


for _node_type in COMPARISONS:
    truth.register(_node_type, _comparison)


def _null_safe(node: exp.Binary, v: Visitor) -> pc.Expression:
    same = v.not_distinct(node.this, node.expression)
    return same if isinstance(node, exp.NullSafeEQ) else ~same


for _node_type in NULL_SAFE:
    truth.register(_node_type, _null_safe)


@truth.register(exp.Is)
def _(node: exp.Is, v: Visitor) -> pc.Expression:
    operand, value = unwrap(node.this), node.expression
    if _matched_groups(operand) and isinstance(value, exp.Null):  # whether the list is NULL is computed
        return functions.call(v, operand).is_null()
    target = v.visit_value(node.this)
    if isinstance(value, exp.Null):
        return target.is_null()
    if isinstance(value, exp.Boolean):
        return pc.if_else(target.is_null(), False, target == pa.scalar(value.this))
    raise v.fail(node)


@truth.register(exp.Between)
def _(node: exp.Between, v: Visitor) -> pc.Expression:
    low, high = node.args["low"], node.args["high"]
    return v.compare("greater_equal", node.this, low) & v.compare("less_equal", node.this, high)


@truth.register(exp.In)
def _(node: exp.In, v: Visitor) -> pc.Expression:
    return v.membership(node)


@truth.register(exp.Like)
@truth.register(exp.ILike)
@truth.register(exp.Escape)
def _(node: exp.Expression, v: Visitor) -> pc.Expression:
    return v.like(node)


@truth.register(exp.Boolean)
def _(node: exp.Boolean, v: Visitor) -> pc.Expression:
    return pc.scalar(node.this)


@truth.register(exp.Null)
def _(node: exp.Null, v: Visitor) -> pc.Expression:
    return pc.scalar(NULL_BOOL)


@functools.singledispatch
def value(node: exp.Expression, v: Visitor) -> pc.Expression:
    """A value node with no rule of its own: a function call, or unsupported."""
    if isinstance(node, exp.Func):
        return v.function(node)
    raise v.fail(node)


@value.register(exp.Bracket)
def _(node: exp.Bracket, v: Visitor) -> pc.Expression:
    if len(node.expressions) != 1:
        raise v.fail(node, "takes one index")
    return functions.list_element(v, node, node.this, node.expressions[0])


@value.register(exp.Neg)
def _(node: exp.Neg, v: Visitor) -> pc.Expression:
    return pc.negate(v.visit_value(node.this))


def _arithmetic(node: exp.Binary, v: Visitor) -> pc.Expression:
    return v.arithmetic(node)


for _node_type in ARITHMETIC_NODES:
    value.register(_node_type, _arithmetic)


@value.register(exp.DPipe)
def _(node: exp.DPipe, v: Visitor) -> pc.Expression:
    """``a || b``: NULL when either is NULL."""
    parts = [v.visit_value(p).cast(pa.string()) for p in (node.this, node.expression)]
    return pc.binary_join_element_wise(*parts, "")


@value.register(exp.Cast)  # TryCast too (a subclass)
def _(node: exp.Cast, v: Visitor) -> pc.Expression:
    return v.cast(node)


def truth_value(node: exp.Expression, v: Visitor) -> pc.Expression:
    return v.visit(node)


for _node_type in BOOLEAN_NODES:
    value.register(_node_type, truth_value)
