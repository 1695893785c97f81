"""How nested Arrow data maps onto 2.1/2.2 columns, both ways.

From 2.1 on only leaves (and fixed-size lists) own columns; struct and list structure travels in
each leaf's rep/def levels. A leaf column therefore decodes to a *path array*: the top-level field
pruned to that one leaf (``struct<a: list<struct<x>>>`` for leaf ``x``). Reading a field decodes
one path array per leaf and merges them back into the full field.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.schema import LanceField


def is_leaf(field: LanceField) -> bool:
    return not field.children


def leaf_paths(field: LanceField) -> list[list[LanceField]]:
    """Every chain top -> leaf under ``field``, in column (pre-order) order."""
    if is_leaf(field):
        return [[field]]
    return [[field] + chain for child in field.children for chain in leaf_paths(child)]


def storage_type(field: LanceField) -> pa.DataType:
    """The type a leaf is stored as (dictionaries are stored as their values)."""
    t = field.arrow_type()
    return t.value_type if pa.types.is_dictionary(t) else t


def path_type(chain: list[LanceField]) -> pa.DataType:
    """The top-level type pruned to one leaf (maps become list<entries struct>)."""
    t = storage_type(chain[-1])
    for parent, child in zip(reversed(chain[:-1]), reversed(chain[1:])):
        child_field = pa.field(child.name, t, child.nullable)
        if parent.is_struct:
            t = pa.struct([child_field])
        elif parent.is_map:
            t = pa.list_(pa.field("entries", t, False))
        elif parent.logical_type.startswith("large_list"):
            t = pa.large_list(child_field)
        else:
            t = pa.list_(child_field)
    return t


def _bitmap(array: pa.Array) -> tuple[pa.Buffer | None, int]:
    if not array.null_count:
        return None, 0
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    return pa.py_buffer(np.packbits(valid, bitorder="little")), array.null_count


def _list_parts(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    offsets = array.offsets.to_numpy()
    child = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    return offsets - offsets[0], child


def merge(field: LanceField, arrays: list[pa.Array]) -> pa.Array:
    """Rebuild ``field`` from the path arrays of its leaves (in ``leaf_paths`` order)."""
    target = field.arrow_type()
    if is_leaf(field):
        array = arrays[0]
        if pa.types.is_dictionary(target):
            array = pc.dictionary_encode(array).cast(target)
        return array
    first = arrays[0]
    n = len(first)
    bitmap, nulls = _bitmap(first)
    if field.is_struct:
        children, pos = [], 0
        child_arrays = [a.flatten()[0] for a in arrays]
        for child in field.children:
            count = len(leaf_paths(child))
            children.append(merge(child, child_arrays[pos:pos + count]))
            pos += count
        return pa.Array.from_buffers(target, n, [bitmap], null_count=nulls, children=children)
    offsets, _ = _list_parts(first)
    child_arrays = [_list_parts(a)[1] for a in arrays]
    child = field.children[0]
    merged = merge(child, child_arrays)
    wide = pa.types.is_large_list(target)
    offs = pa.py_buffer(offsets.astype(np.int64 if wide else np.int32))
    return pa.Array.from_buffers(target, n, [bitmap, offs], null_count=nulls, children=[merged])
