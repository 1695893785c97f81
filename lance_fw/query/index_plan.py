"""Which rows a filter can be answered for from scalar indices, before any data is read.

Why a separate planner: the filter itself (``query/filter.py``) is always evaluated on the rows a scan
reads, so an index only has to narrow *which* rows are read. The planner turns the parts of a
filter's SQL tree that an index can answer (``=``, ``IN``, ranges, ``BETWEEN``, ``IS NULL``,
``LIKE 'p%'``, ``array_has_any/all``, and ``AND`` / ``OR`` / ``NOT`` over them) into a tree of
``ScalarQuery`` leaves; parts it cannot answer are dropped from an ``AND`` (the result is then a
superset) and make an ``OR`` unanswerable. Every candidate row is re-checked by the full filter, so
a superset is always safe, and ``NOT`` is taken only over a subtree that is exact; with SQL's third
value tracked (``Found``: the rows where a part is null, known for comparisons on a top-level column),
a ``NOT`` is exact too, as in pylance, whose plan then re-checks nothing.

The candidate rows are limited to the fragments every index used covers (``coverage``): other
fragments, appended after the index was built, are scanned as usual.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from lance_fw._util import sets
from lance_fw.errors import LanceError
from lance_fw.interfaces import (
    ContainsAllQuery,
    ContainsAnyQuery,
    EqualsQuery,
    InQuery,
    IsNullQuery,
    PrefixQuery,
    RangeQuery,
    ScalarQuery,
)
from lance_fw.query import coercion
from lance_fw.query.address_sets import AddressSet
from lance_fw.query.dialect import column_path, parse_where, unwrap
from lance_fw.query.filter import filter_visitor
from lance_fw.query.in_lists import fold_in_lists
from lance_fw.query.index_text import merge_ranges, query_text
from lance_fw.table.index_list import SCALAR_TYPES
from lance_fw.table.index_paths import quoted_path
from lance_fw.table.indices import IndexHandle, open_index, search, type_url_of, usable_indices
from lance_fw.table.row_ids import fragment_parts
from lance_fw.table.snapshot import Snapshot

#: Comparison node -> (RangeQuery for ``column OP literal``), bounds as (lower?, inclusive).
_RANGES: dict[type, tuple[bool, bool]] = {
    exp.GT: (True, False),
    exp.GTE: (True, True),
    exp.LT: (False, False),
    exp.LTE: (False, True),
}
_FLIP: dict[type, type] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
}
_LIKE_WILDCARDS = ("%", "_", "\\")
#: IN lists up to this long on a top-level column show as an OR of equalities in pylance's plan
#: (DataFusion's simplifier inlines them)
_INLINE_IN_LIST = 3


@dataclass
class Leaf:
    """One query on one index (all segments of that name)."""

    handles: list[IndexHandle]
    query: ScalarQuery
    #: the filter part the index answers (rendered as text only for plans: ``text``)
    node: exp.Expression
    #: the column as pylance's plan names it (``p.a`` however the filter spelled it)
    column: str = ""
    #: the column's path from the top level (``("p", "a")``)
    path: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """pylance's text for the query when the index is one of pylance's types and the values'
        spelling is known; else the filter part's SQL, the column named as pylance names it."""
        if self.column and type_url_of(self.handles[0].meta) in SCALAR_TYPES:
            text = query_text(self.column, self.query, self.handles[0].field.arrow_type())
            if text is not None:
                return text
        if not self.column:
            return self.node.sql(dialect="spark")
        named = self.node.transform(lambda n: exp.var(self.column) if _is_column(n) else n)
        return named.sql(dialect="spark")

    def in_chain(self) -> list[Leaf] | None:
        """pylance (DataFusion) plans a short IN list on a top-level column as an OR of equalities:
        the leaves it shows, or None for any other leaf."""
        query = self.query
        if not isinstance(query, InQuery) or len(self.path) != 1 or len(query.values) > _INLINE_IN_LIST:
            return None
        if type_url_of(self.handles[0].meta) not in SCALAR_TYPES:
            return None
        return [Leaf(self.handles, EqualsQuery(v), self.node, self.column, self.path) for v in query.values]

    @property
    def coverage(self) -> frozenset[int]:
        return frozenset().union(*(h.fragments for h in self.handles))


@dataclass
class Node:
    """``AND`` / ``OR`` over children, or ``NOT`` over one (only over a complete subtree)."""

    op: str
    children: list[Leaf | Node] = field(default_factory=list)


Tree = Leaf | Node


def _is_column(node: exp.Expression) -> bool:
    """A column or struct-field reference (what ``column_path`` reads), not a function over one."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower() == "get_field" and bool(column_path(node))
    return isinstance(node, (exp.Column, exp.Dot, exp.Bracket)) and bool(column_path(node))


def describe(tree: Tree) -> str:
    """pylance's ``ScalarIndexQuery`` text: ``AND([id > 5]@id_idx(BTree),[s = s3]@s_idx(Bitmap))``."""
    if isinstance(tree, Leaf):
        chain = tree.in_chain()
        if chain is not None and len(chain) > 1:
            return _chain("OR", [describe(c) for c in chain])
        handle = tree.handles[0]
        return f"[{tree.text}]@{handle.name}({handle.kind.display_name})"
    if tree.op == "NOT" and isinstance(tree.children[0], Leaf):
        chain = tree.children[0].in_chain()
        if chain is not None and len(chain) > 1:  # NOT IN: pylance's AND of NOT(=)
            return _chain("AND", [f"NOT({describe(c)})" for c in chain])
    return f"{tree.op}({','.join(describe(c) for c in tree.children)})"


def _chain(op: str, parts: list[str]) -> str:
    """``a OP b OP c`` as DataFusion nests it: ``OP(OP(a,b),c)``."""
    out = parts[0]
    for part in parts[1:]:
        out = f"{op}({out},{part})"
    return out


def _leaves(tree: Tree) -> list[Leaf]:
    return [tree] if isinstance(tree, Leaf) else [x for c in tree.children for x in _leaves(c)]


class IndexPlan:
    """The index part of a filtered scan: candidate rows per covered fragment, searched once."""

    def __init__(self, snapshot: Snapshot, tree: Tree, complete: bool = False) -> None:
        """``complete``: the tree stands for the whole filter (no part is left to the scan)."""
        self.snapshot, self.tree, self.complete = snapshot, tree, complete
        self._exact = False
        coverage = frozenset(f.id for f in snapshot.fragments)
        for leaf in _leaves(tree):
            coverage &= leaf.coverage
        self.coverage = coverage
        self._physical_rows = {f.id: f.physical_rows for f in snapshot.fragments}
        self._by_fragment: dict[int, AddressSet] | None = None
        self._none = AddressSet(np.zeros(0, np.int64))  # a fragment with no address in the answer
        self._listed: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def describe(self) -> str:
        return describe(self.tree)

    @property
    def exact(self) -> bool:
        """Whether the candidates are exactly the matching rows (deleted ones aside): the whole
        filter was answered by indices that were all exact, so re-checking it finds nothing to drop.
        Runs the search (once)."""
        self._answer()
        return self._exact

    def count(self, fragment_id: int) -> int:
        """How many candidates a fragment has (deleted rows included; 0 where it is not covered),
        without listing them."""
        if fragment_id not in self.coverage:
            return 0
        found = self._found_of(fragment_id)
        return self._physical_rows[fragment_id] - len(found.values) if found.inverted else len(found.values)

    def candidates(self, fragment_id: int) -> np.ndarray | None:
        """Sorted physical offsets of fragment ``fragment_id`` that may match (deleted rows
        included), or None when the fragment is not covered (scan it)."""
        if fragment_id not in self.coverage:
            return None
        found = self._found_of(fragment_id)
        if not found.inverted:
            return found.values
        with self._lock:  # listed when a scan reads the fragment, once
            listed = self._listed.get(fragment_id)
            if listed is None:
                rows = self._physical_rows[fragment_id]
                listed = self._listed[fragment_id] = sets.range_without(0, rows, found.values)
        return listed

    def excluded(self, fragment_id: int) -> np.ndarray | None:
        """Where the candidates of a covered fragment are most of its rows, held as the rest
        (``AddressSet``): the sorted physical offsets that are *not* candidates, so that a count
        need not list the others; None where the candidates are held as such (``candidates``)
        or the fragment is not covered."""
        if fragment_id not in self.coverage:
            return None
        found = self._found_of(fragment_id)
        return found.values if found.inverted else None

    def _found_of(self, fragment_id: int) -> AddressSet:
        """Fragment ``fragment_id``'s part of the answer, as offsets."""
        return self._answer().get(fragment_id, self._none)

    def _answer(self) -> dict[int, AddressSet]:
        """Each covered fragment's part of the answer (searched on the first ask)."""
        with self._lock:
            if self._by_fragment is None:
                self._by_fragment = self._search()
            return self._by_fragment

    def _search(self) -> dict[int, AddressSet]:
        found = self._evaluate(self.tree)
        self._exact = self.complete and found.exact
        self._none = AddressSet(np.zeros(0, np.int64), found.rows.inverted)
        addresses = found.rows.values
        out: dict[int, AddressSet] = {}
        for frag, part in fragment_parts(addresses):
            if frag in self.coverage:
                out[frag] = AddressSet(part, found.rows.inverted)
        return out

    def _evaluate(self, tree: Tree, under_not: bool = False) -> Found:
        """``tree``'s answer; ``under_not``: a ``NOT`` above needs the rows where it is null (an
        extra ``IS NULL`` search a leaf, so only then)."""
        if isinstance(tree, Leaf):
            addresses, exact = self._search_leaf(tree, tree.query)  # (sorted and distinct: ``search``)
            return Found(AddressSet(addresses), self._null_rows(tree) if under_not else None, exact)
        parts = [self._evaluate(c, under_not or tree.op == "NOT") for c in tree.children]
        if tree.op in ("AND", "OR"):
            found = parts[0]
            for part in parts[1:]:
                found = _and(found, part) if tree.op == "AND" else _or(found, part)
            return found
        inner = parts[0]  # NOT: neither the rows matching nor those where the inner part is null
        if not inner.exact:
            return Found(AddressSet.everything(), None, False)
        if inner.nulls is None:  # a superset: the rows where the inner part is null are kept
            return Found(~inner.rows, None, False)
        return Found(~(inner.rows | inner.nulls), inner.nulls, True)

    def _search_leaf(self, leaf: Leaf, query: ScalarQuery) -> tuple[np.ndarray, bool]:
        results = [search(self.snapshot, h, query) for h in leaf.handles]
        if len(results) == 1:
            return results[0].addresses, results[0].exact
        return sets.unique(np.concatenate([r.addresses for r in results])), all(r.exact for r in results)

    def _null_rows(self, leaf: Leaf) -> AddressSet | None:
        """The rows where ``leaf``'s query is null (its top-level column is null), None where that
        is not known exactly: a ``NOT`` over it then keeps them, and the scan re-checks them."""
        if isinstance(leaf.query, IsNullQuery):
            return AddressSet(np.zeros(0, np.uint64))
        if not isinstance(leaf.query, _NULL_WHERE_COLUMN_NULL) or len(leaf.path) != 1:
            return None
        try:
            if not all(open_index(self.snapshot, h).supports(IsNullQuery()) for h in leaf.handles):
                return None
        except LanceError:
            return None
        nulls, exact = self._search_leaf(leaf, IsNullQuery())
        return AddressSet.of(nulls) if exact else None


def _and(a: Found, b: Found) -> Found:
    """``a AND b``: null where one side is null and the other is not false."""
    nulls = None
    if a.nulls is not None and b.nulls is not None:
        nulls = (a.nulls & (b.rows | b.nulls)) | (b.nulls & a.rows)
    return Found(a.rows & b.rows, nulls, a.exact and b.exact)


def _or(a: Found, b: Found) -> Found:
    """``a OR b``: null where one side is null and neither is true."""
    rows = a.rows | b.rows
    nulls = None
    if a.nulls is not None and b.nulls is not None:
        nulls = (a.nulls | b.nulls) - rows
    return Found(rows, nulls, a.exact and b.exact)


#: Queries whose answer on a row is null exactly where the row's column is null (of a top-level
#: column: a struct's child is also null under a null parent, which its index may not record).
_NULL_WHERE_COLUMN_NULL = (EqualsQuery, RangeQuery, InQuery, PrefixQuery)


@dataclass(frozen=True)
class Found:
    """A tree's answer from the indices: the row addresses where it is true, those where it is
    null (SQL's third value: a ``NOT`` over it is not true there either; None where unknown), and
    whether both are exact."""

    rows: AddressSet
    nulls: AddressSet | None
    exact: bool


def index_tree(snapshot: Snapshot, text: str) -> tuple[Tree, bool] | None:
    """The indices that answer (part of) the filter ``text``: (tree, complete), or None when none
    helps. A value of the version: scans of the same filter may share it (``plan_of`` each)."""
    handles = usable_indices(snapshot)
    if not handles:
        return None
    try:
        planner = _Planner(snapshot, text, handles)
        tree, complete = planner.plan(fold_in_lists(parse_where(text), planner.visitor))
    except LanceError:
        return None  # the filter's own parse reports the error
    return None if tree is None else (tree, complete)


def plan_of(snapshot: Snapshot, planned: tuple[Tree, bool]) -> IndexPlan | None:
    """A scan's own plan (it searches once, for that scan) over ``index_tree``'s answer."""
    plan = IndexPlan(snapshot, *planned)
    return plan if plan.coverage else None


class _Planner:
    def __init__(self, snapshot: Snapshot, text: str, handles: list[IndexHandle]) -> None:
        self.snapshot, self.text = snapshot, text
        self.schema = snapshot.schema
        self.visitor = filter_visitor(text, self.schema)
        self.by_column: dict[tuple[str, ...], list[list[IndexHandle]]] = {}
        groups: dict[str, list[IndexHandle]] = {}
        for h in handles:
            groups.setdefault(h.name, []).append(h)
        # pylance consults a column's indices in manifest order (the first created that answers
        # the query wins, a ZONEMAP before a BTREE built after it): so do its plans here
        for group in groups.values():
            self.by_column.setdefault(group[0].column, []).append(group)

    # (tree, complete): complete means the tree's rows are exactly the node's truth (given exact
    # leaf results), so a NOT over it may be taken.
    def plan(self, node: exp.Expression) -> tuple[Tree | None, bool]:
        node = unwrap(node)
        if isinstance(node, exp.And):
            parts = [self.plan(c) for c in (node.this, node.expression)]
            kept = [(t, c) for t, c in parts if t is not None]
            complete = len(kept) == 2 and all(c for _, c in kept)
            if not kept:
                return None, False
            if len(kept) == 1:
                return kept[0][0], complete
            merged = self.merge(kept[0][0], kept[1][0], node)
            if merged is not None:
                return merged, complete
            return Node("AND", [t for t, _ in kept]), complete
        if isinstance(node, exp.Or):
            parts = [self.plan(c) for c in (node.this, node.expression)]
            if any(t is None for t, _ in parts):
                return None, False
            return Node("OR", [t for t, _ in parts if t is not None]), all(c for _, c in parts)
        if isinstance(node, exp.Not):  # (exact when the inner rows and their nulls are: ``Found``)
            if isinstance(unwrap(node.this), exp.Like):
                return None, False  # pylance: ``NOT LIKE`` is not answered from an index
            inner, complete = self.plan(node.this)
            if inner is None or not complete:
                return None, False
            return Node("NOT", [inner]), True
        if isinstance(node, exp.NEQ):  # pylance: NOT(x = v), over the rows the index finds
            equal = self.leaf(exp.EQ(this=node.this, expression=node.expression))
            return (Node("NOT", [equal]), True) if equal is not None else (None, False)
        leaf = self.leaf(node)
        return (leaf, True) if leaf is not None else (None, False)

    def merge(self, a: Tree, b: Tree, node: exp.Expression) -> Leaf | None:
        """Two ranges on one index under an AND, as the one range pylance plans."""
        if not (isinstance(a, Leaf) and isinstance(b, Leaf)) or a.handles[0].name != b.handles[0].name:
            return None
        if not (isinstance(a.query, RangeQuery) and isinstance(b.query, RangeQuery)):
            return None
        query = merge_ranges(a.query, b.query)
        try:
            if query is None or not open_index(self.snapshot, a.handles[0]).supports(query):
                return None
        except LanceError:
            return None
        return Leaf(a.handles, query, node, a.column, a.path)

    def column(self, node: exp.Expression) -> tuple[str, ...] | None:
        """The column path ``node`` names, as the filter resolves it: the top-level name in any
        case unless quoted, a struct's children exactly (``p.a``, ```p`.`a```, ``p['a']``)."""
        path = column_path(node)
        if not path:
            return None
        head, quoted = path[0]
        top = (
            (head if head in self.schema.names else None) if quoted else self.visitor.lookup.get(head.lower())
        )
        if top is None:
            return None
        names = [top]
        t = self.schema.field(top).type
        for part, _ in path[1:]:
            if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
                return None
            t = t.field(part).type
            names.append(part)
        return tuple(names)

    def type_of(self, path: tuple[str, ...]) -> pa.DataType:
        t = self.schema.field(path[0]).type
        for part in path[1:]:
            t = t.field(part).type
        return t

    def literal(self, node: exp.Expression, t: pa.DataType) -> Any:
        """The literal's value coerced as the filter coerces it; ``_NO`` when it is not a usable one."""
        if not self.visitor.is_literal(node):
            return _NO
        try:
            scalar = self.visitor.literal(node, t)
        except LanceError:
            return _NO
        if not scalar.is_valid or scalar.type != t:
            return _NO
        value = scalar.as_py()
        if isinstance(value, float) and math.isnan(value):
            return _NO
        return value

    def members(self, nodes: list[exp.Expression], t: pa.DataType) -> list[Any]:
        """An IN list next to a struct child of type ``t``, which the filter compares in the common
        type of the child and the whole list (``Filter.membership``, ``coercion.common_numeric``):
        each value as a ``t`` the filter would match (rounded as the filter rounds it when no
        wider type is taken), ``_NEVER`` when no ``t`` value can equal it (0.1 next to float32),
        ``_NO`` when unusable."""
        if not all(self.visitor.is_literal(n) for n in nodes):
            return [_NO]
        try:
            scalars = [self.visitor.loose_literal(n, t) for n in nodes]
        except LanceError:
            return [_NO]
        if not all(s.is_valid for s in scalars):
            return [_NO]
        if coercion.common_numeric(t, [s.type for s in scalars]) is None:
            return [self.literal(n, t) for n in nodes]  # compared in the child's own type
        out: list[Any] = []
        for scalar in scalars:
            try:
                narrowed = scalar.cast(t, safe=False)
                exact = narrowed.cast(scalar.type, safe=False).equals(scalar)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return [_NO]
            value = narrowed.as_py()
            if isinstance(value, float) and math.isnan(value):
                return [_NO]
            out.append(value if exact else _NEVER)
        return out

    def leaf(self, node: exp.Expression) -> Leaf | None:
        found = self.query(node)
        if found is None:
            return None
        column, query = found
        # pylance answers nothing about a struct's boolean child from an index
        if len(column) > 1 and pa.types.is_boolean(self.type_of(column)):
            return None
        for group in self.by_column.get(column, []):
            try:
                if open_index(self.snapshot, group[0]).supports(query):
                    return Leaf(group, query, node, quoted_path(column), column)
            except LanceError:
                continue
        return None

    def query(self, node: exp.Expression) -> tuple[tuple[str, ...], ScalarQuery] | None:
        if isinstance(node, (exp.EQ, exp.NEQ, *_RANGES)):
            left, right, kind = node.this, node.expression, type(node)
            if self.column(left) is None:
                left, right, kind = right, left, _FLIP[kind]
                flipped = self.column(left)
                if flipped is not None and len(flipped) > 1:
                    return None  # pylance: ``3 < p.a`` is not answered from an index
            return self.compare(kind, left, right)
        if isinstance(node, exp.Between):
            name = self.column(node.this)
            if name is None:
                return None
            t = self.type_of(name)
            lo, hi = self.literal(node.args["low"], t), self.literal(node.args["high"], t)
            return None if _NO in (lo, hi) else (name, RangeQuery(lo, True, hi, True))
        if isinstance(node, exp.In):
            name = self.column(node.this)
            if name is None or node.args.get("query") is not None or not node.expressions:
                return None
            t = self.type_of(name)
            if any(isinstance(unwrap(v), exp.Null) for v in node.expressions):
                return None  # pylance: an IN list holding NULL is not answered from an index
            if len(name) > 1:  # a struct child: compared with the list in their common type
                values = self.members(list(node.expressions), t)
                kept = tuple(v for v in values if v is not _NEVER)
                return None if _NO in values or not kept else (name, InQuery(kept))
            values = [self.literal(v, t) for v in node.expressions]
            return None if _NO in values else (name, InQuery(tuple(values)))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            name = self.column(node.this)
            return None if name is None else (name, IsNullQuery())
        if isinstance(node, exp.Like):
            return self.prefix(node)
        if isinstance(node, (exp.ArrayContains, exp.ArrayContainsAll)) or (
            isinstance(node, exp.Anonymous)
            and node.name.lower() in ("array_has_any", "list_has_any", "arrays_overlap")
        ):
            return self.contains(node)
        name = self.column(node)
        if name is not None and pa.types.is_boolean(self.type_of(name)):
            return name, EqualsQuery(True)
        return None

    def compare(
        self, kind: type, left: exp.Expression, right: exp.Expression
    ) -> tuple[tuple[str, ...], ScalarQuery] | None:
        name = self.column(left)
        if name is None:
            return None
        value = self.literal(right, self.type_of(name))
        if value is _NO:
            return None
        if kind is exp.EQ:
            return name, EqualsQuery(value)
        if kind is exp.NEQ:
            return None  # the planner's NOT handles NOT (x = v); x != v alone selects most rows
        lower, inclusive = _RANGES[kind]
        return name, (
            RangeQuery(value, inclusive, None, True) if lower else RangeQuery(None, True, value, inclusive)
        )

    def prefix(self, node: exp.Like) -> tuple[tuple[str, ...], ScalarQuery] | None:
        name = self.column(node.this)
        pattern = node.expression
        if name is None or node.args.get("escape") is not None or not isinstance(pattern, exp.Literal):
            return None
        if not pattern.is_string or not pa.types.is_string(self.type_of(name)):
            return None
        text = pattern.this
        head = text[:-1]
        if not text.endswith("%") or any(w in head for w in _LIKE_WILDCARDS):
            return None
        return name, PrefixQuery(head)

    def contains(self, node: exp.Expression) -> tuple[tuple[str, ...], ScalarQuery] | None:
        args = [node.this, node.expression] if not isinstance(node, exp.Anonymous) else list(node.expressions)
        if len(args) != 2:
            return None
        name = self.column(args[0])
        if name is None or len(name) > 1:  # pylance: array_has_* only on a top-level column
            return None
        t = self.type_of(name)
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            return None
        needles = args[1]
        items = needles.expressions if isinstance(needles, exp.Array) else [needles]
        if isinstance(node, exp.ArrayContains) and isinstance(needles, exp.Array):
            return None
        values = [self.literal(v, t.value_type) for v in items]
        if _NO in values or not values:
            return None
        if isinstance(node, exp.ArrayContainsAll):
            return name, ContainsAllQuery(tuple(values))
        return name, ContainsAnyQuery(tuple(values))


class _Missing:
    def __repr__(self) -> str:
        return "<no literal>"

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)


_NO: Any = _Missing()
#: An IN-list value no value of the column can equal (``_Planner.members``)
_NEVER: Any = _Missing()
