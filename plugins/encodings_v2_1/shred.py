"""Nested Arrow path arrays -> repetition/definition levels + visible leaf values (the inverse of
``repdef.build``, same numbering rules; see its docstring).

Vectorised bottom-up: every element at a layer owns a contiguous run of levels; a list (or a null
struct over lists) regroups its children's runs, and a null or empty list becomes one synthetic
level. Only the leaf values behind *visible* levels are stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.file.buffers import range_positions

from .decoded_values import present
from .repdef import LIST_LAYERS, def_numbers, visible_levels


@dataclass
class Shredded:
    layers: list[int]  # innermost -> outermost
    rep: np.ndarray | None  # u16 per level, None without lists
    defs: np.ndarray | None  # u16 per level, None when nothing is null or empty
    values: pa.Array  # the visible leaf values (nulls where the leaf is null)
    row_starts: np.ndarray  # first level of every row (len = rows + 1)


@dataclass
class _Node:
    is_list: bool
    valid: np.ndarray | None  # None: all valid
    offsets: np.ndarray | None  # lists: absolute offsets into the child (n + 1)
    length: int


def _nodes(array: pa.Array, depth: int | None = None) -> tuple[list[_Node], pa.Array]:
    """Top-down: the structure of every layer and the (whole) leaf array; with ``depth`` the
    layer at that depth is the leaf whatever its type (a packed struct)."""
    nodes: list[_Node] = []
    a = array
    while True:
        t = a.type
        valid = a.is_valid().to_numpy(zero_copy_only=False) if a.null_count else None
        if depth is not None and len(nodes) == depth - 1:
            nodes.append(_Node(False, valid, None, len(a)))
            return nodes, a
        if pa.types.is_struct(t):
            nodes.append(_Node(False, valid, None, len(a)))
            a = a.flatten()[0]
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            nodes.append(_Node(True, valid, a.offsets.to_numpy().astype(np.int64), len(a)))
            a = a.values
        else:
            nodes.append(_Node(False, valid, None, len(a)))
            return nodes, a


def _layer(node: _Node, nullable: bool | None = None) -> int:
    """The layer for a node: from its data, or, when ``nullable`` is given, from the schema (the
    data can only widen it). pylance needs the schema form across the pages of columns with lists:
    it cannot stitch a null struct over lists in one page to an all-valid one in the next."""
    if nullable is not None:
        data = _layer(node)
        if node.is_list:
            return (
                pb.REPDEF_NULL_AND_EMPTY_LIST
                if nullable or data in (pb.REPDEF_NULLABLE_LIST, pb.REPDEF_NULL_AND_EMPTY_LIST)
                else pb.REPDEF_EMPTYABLE_LIST
            )
        return (
            pb.REPDEF_NULLABLE_ITEM
            if nullable or data == pb.REPDEF_NULLABLE_ITEM
            else pb.REPDEF_ALL_VALID_ITEM
        )
    if not node.is_list:
        return (
            pb.REPDEF_NULLABLE_ITEM
            if node.valid is not None and not node.valid.all()
            else pb.REPDEF_ALL_VALID_ITEM
        )
    lengths = np.diff(present(node.offsets, "offsets"))
    valid = node.valid if node.valid is not None else np.ones(node.length, bool)
    has_null = not valid.all()
    has_empty = bool(((lengths == 0) & valid).any())
    return {
        (False, False): pb.REPDEF_ALL_VALID_LIST,
        (True, False): pb.REPDEF_NULLABLE_LIST,
        (False, True): pb.REPDEF_EMPTYABLE_LIST,
        (True, True): pb.REPDEF_NULL_AND_EMPTY_LIST,
    }[(has_null, has_empty)]


def shred(array: pa.Array, path: tuple = ()) -> Shredded:
    """``path``: the schema fields top -> leaf; with a struct above a list, layers follow the schema."""
    top_down, leaf = _nodes(array, len(path) or None)
    nodes = top_down[::-1]  # innermost first, like layers
    # only a struct above a list trips pylance (see _layer); elsewhere the data decides, as in pylance
    first_list = next((i for i, n in enumerate(nodes) if n.is_list), None)
    static = (
        len(path) == len(nodes)
        and first_list is not None
        and any(not n.is_list for n in nodes[first_list + 1 :])
    )
    layers = (
        [_layer(n, f.nullable if static else None) for n, f in zip(nodes, reversed(path))]
        if static
        else [_layer(n) for n in nodes]
    )
    inside, empty = def_numbers(layers)
    lists_below = np.cumsum([0] + [layer in LIST_LAYERS for layer in layers])  # list layers with index < i

    n_leaf = len(leaf)
    starts = np.arange(n_leaf + 1, dtype=np.int64)  # levels of element e: [starts[e], starts[e+1])
    rep = np.zeros(n_leaf, np.uint16)
    defs = np.zeros(n_leaf, np.uint16)
    elem = np.arange(n_leaf, dtype=np.int64)  # leaf element behind each level (-1: synthetic)
    if nodes[0].valid is not None:
        defs[~nodes[0].valid] = inside[0] + 1
    for i in range(1, len(nodes)):
        node = nodes[i]
        valid = node.valid if node.valid is not None else np.ones(node.length, bool)
        if node.is_list:
            offsets = present(node.offsets, "offsets")
            lo, hi = offsets[:-1], offsets[1:]
            keep = valid & (hi > lo)
            synth_def = np.where(valid, empty[i] or 0, inside[i] + 1).astype(np.uint16)
            r = int(lists_below[i + 1])
        else:
            lo, hi = np.arange(node.length), np.arange(1, node.length + 1)
            keep = valid
            synth_def = np.full(node.length, inside[i] + 1, np.uint16)
            r = int(lists_below[i])
            if (np.diff(starts) == 1).all() and len(starts) == node.length + 1:
                defs[~valid] = inside[i] + 1  # one level per element: no regrouping needed
                continue
        starts, rep, defs, elem = _regroup(starts, lo, hi, keep, synth_def, r, node.is_list, rep, defs, elem)
    visible = visible_levels(layers, defs, len(defs))
    take = elem[visible]
    if len(take) == n_leaf and (len(take) == 0 or (take[0] == 0 and (np.diff(take) == 1).all())):
        values = leaf
    else:
        values = leaf.take(pa.array(take))
    has_defs = any(layer not in (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_ALL_VALID_LIST) for layer in layers)
    return Shredded(layers, rep if lists_below[-1] else None, defs if has_defs else None, values, starts)


def _regroup(
    starts: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    keep: np.ndarray,
    synth_def: np.ndarray,
    r: int,
    is_list: bool,
    rep: np.ndarray,
    defs: np.ndarray,
    elem: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """New elements made of child-element ranges [lo, hi); those not kept become one level."""
    lo_lvl, hi_lvl = starts[lo], starts[hi]
    counts = np.where(keep, hi_lvl - lo_lvl, 1)
    new_starts = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=new_starts[1:])
    total = int(new_starts[-1])
    src = range_positions(np.where(keep, lo_lvl, 0), counts)
    synthetic = np.repeat(~keep, counts)
    if len(rep):
        src = np.where(synthetic, 0, src)
        new_rep, new_defs, new_elem = rep[src], defs[src], elem[src]
    else:
        new_rep, new_defs, new_elem = (
            np.zeros(total, np.uint16),
            np.zeros(total, np.uint16),
            np.zeros(total, np.int64),
        )
    new_rep[synthetic] = r
    new_defs[synthetic] = np.repeat(synth_def, counts)[synthetic]
    new_elem[synthetic] = -1
    if is_list:
        new_rep[new_starts[:-1][keep]] = r
    return new_starts, new_rep, new_defs, new_elem
