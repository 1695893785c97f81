"""``x IN (...)`` lists: the values a list is compared with, and DataFusion's folding of two lists.

pylance hands a filter to DataFusion, whose simplifier rewrites an AND / OR of two lists over the
same expression into one list before anything runs, and an empty list into a constant:

- ``x IN (a) AND x IN (b)`` -> ``x IN (the items in a and b)``, FALSE when there are none;
- ``x IN (a) AND x NOT IN (b)`` -> ``x IN (a - b)``, FALSE when empty (either order);
- ``x NOT IN (a) AND x NOT IN (b)`` -> ``x NOT IN (the items in a or b)``;
- ``x NOT IN (a) OR x NOT IN (b)`` -> ``x NOT IN (the items in a and b)``, TRUE when none.

That is not SQL's three-valued answer: for a NULL ``x``, ``x IN (1) AND x IN (0)`` is NULL and the
fold says FALSE, so ``NOT (x IN (1) AND x IN (0))`` keeps the row in pylance; and a NULL in a list
changes the rest (``1 IN (1, 3) AND 1 IN (3, NULL)`` is NULL, ``1 IN (3)`` is FALSE). So a filter
is folded the same way (:func:`fold_in_lists`), bottom up as DataFusion's simplifier goes, before it
is evaluated or planned against an index; both see the folded tree.

Items compare as DataFusion's do after its coercion: literals by the value they take next to the
list's expression (``1`` and ``1.0`` in a float column are one value, and so are NULLs, both zeros
and NaNs), anything else by its syntax tree. A list with an item that does not coerce is left as
written (its evaluation raises the error). ``x IN (a) OR x IN (b)``, which DataFusion merges too,
means the same either way and is left alone.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lance_fw.query import coercion
from lance_fw.query.dialect import ExpressionError, column_path

if TYPE_CHECKING:
    from lance_fw.query.filter import _Visitor as Visitor

#: What an IN list is compared with: (the list's expression, its type, each item's scalar).
ListScalars = tuple[pc.Expression, pa.DataType, list[pa.Scalar]]


def list_scalars(v: Visitor, node: exp.Expression) -> ListScalars:
    """The scalars an all-literal list holds, coerced as pylance coerces them next to its expression.

    Raises:
        ExpressionError: an item does not coerce to the expression's type.
    """
    values = node.expressions
    if v.is_column(node.this) and len(column_path(node.this)) > 1:
        # pylance reads a struct child as ``get_field(...)``, a computed value: DataFusion coerces
        # it and the IN list to their common type, so a float32 child IN (0.1) is compared in
        # float64 (unlike ``=``, where the literal takes the child's type)
        column, t = v.column(node.this)
        scalars = [v.loose_literal(item, t) for item in values]
        wider = coercion.common_numeric(t, [s.type for s in scalars if s.is_valid])
        if wider is not None:
            column, t = column.cast(wider), wider
            scalars = [s.cast(wider) for s in scalars]
    elif v.is_column(node.this):
        column, t = v.column(node.this)
        scalars = [v.literal(item, t) for item in values]
    else:
        column = v.visit_value(node.this)
        t = v.type_of(column)
        scalars = [v.loose_literal(item, t) for item in values]
    return column, t, scalars


def fold_in_lists(tree: exp.Expression, v: Visitor) -> exp.Expression:
    """``tree`` with every AND / OR of two lists over one expression folded as DataFusion folds
    it (the module's rules); ``tree`` itself when it has no IN list (it is shared: never mutated)."""
    if tree.find(exp.In) is None:
        return tree
    tree = tree.copy()
    # children before parents (pre-order, reversed), so that a folded pair can fold again above
    for node in reversed(list(tree.dfs())):
        if not isinstance(node, (exp.And, exp.Or)):
            continue
        folded = _fold_pair(node, v)
        if folded is None:
            continue
        if node is tree:
            tree = folded
        else:
            node.replace(folded)
    return tree


def _term(node: exp.Expression) -> tuple[exp.In, bool] | None:
    """``node`` as (list, negated): ``x IN (...)`` under any parentheses and NOTs."""
    negated = False
    while isinstance(node, (exp.Paren, exp.Not)):
        negated ^= isinstance(node, exp.Not)
        node = node.this
    if not isinstance(node, exp.In) or not node.expressions:
        return None
    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        return None
    return node, negated


def _keys(v: Visitor, node: exp.In) -> tuple[Hashable, list[Hashable]] | None:
    """The list's expression as DataFusion sees it after coercion, and each item's identity as it
    compares list items; None where an item does not coerce.

    A column item of another type than the expression makes DataFusion cast the expression to
    their common type (``i32 IN (id)`` is ``CAST(i32 AS BIGINT) IN (id)``), which is then not the
    expression of ``i32 IN (2)``, whose literal takes the column's type."""
    literal = [v.is_literal(item) for item in node.expressions]
    try:
        if all(literal):
            scalars = list_scalars(v, node)[2]
            return (node.this, None), [("literal", _value_key(s)) for s in scalars]
        t = v.type_of(v.visit_value(node.this))
        others = {
            v.type_of(v.visit_value(item))
            for item, lit in zip(node.expressions, literal, strict=True)
            if not lit
        }
        keys: list[Hashable] = [
            ("literal", _value_key(v.loose_literal(item, t))) if lit else ("expression", item)
            for item, lit in zip(node.expressions, literal, strict=True)
        ]
    except ExpressionError:
        return None
    cast = None if others <= {t} else tuple(sorted(str(o) for o in others))
    return (node.this, cast), keys


def _value_key(scalar: pa.Scalar) -> Hashable:
    """A scalar's value as a set key: NULLs are one value, and so are a float's two zeros and its
    NaNs (as pylance folds ``f IN (0) AND f IN (-0.0)``)."""
    if not scalar.is_valid:
        return None
    value = scalar.as_py()
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value + 0.0)
    return value


def _fold_pair(node: exp.And | exp.Or, v: Visitor) -> exp.Expression | None:
    left, right = _term(node.this), _term(node.expression)
    if left is None or right is None:
        return None
    (l_list, l_negated), (r_list, r_negated) = left, right
    if l_list.this != r_list.this:
        return None
    l_found, r_found = _keys(v, l_list), _keys(v, r_list)
    if l_found is None or r_found is None or l_found[0] != r_found[0]:
        return None
    l_keys, r_keys = l_found[1], r_found[1]
    in_left, in_right = set(l_keys), set(r_keys)
    l_items = list(zip(l_keys, l_list.expressions, strict=True))
    r_items = list(zip(r_keys, r_list.expressions, strict=True))
    if isinstance(node, exp.Or):
        if not (l_negated and r_negated):
            return None
        return _in_list(l_list, [item for key, item in l_items if key in in_right], True)
    if not l_negated and not r_negated:
        return _in_list(l_list, [item for key, item in l_items if key in in_right], False)
    if l_negated and r_negated:
        union = [item for _, item in l_items] + [item for key, item in r_items if key not in in_left]
        return _in_list(l_list, union, True)
    if r_negated:
        return _in_list(l_list, [item for key, item in l_items if key not in in_right], False)
    return _in_list(r_list, [item for key, item in r_items if key not in in_left], False)


def _in_list(template: exp.In, items: list[exp.Expression], negated: bool) -> exp.Expression:
    """``template``'s expression IN / NOT IN ``items``; an empty list is the constant it folds to."""
    if not items:
        return exp.Boolean(this=negated)
    folded = exp.In(this=template.this.copy(), expressions=[item.copy() for item in items])
    return exp.Paren(this=exp.Not(this=folded)) if negated else folded
