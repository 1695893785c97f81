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

from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import validity_bitmap
from lance_fw.schema import PACKED_KEY as PACKED_KEY  # re-exported: its home before schema.py
from lance_fw.schema import LanceField


def is_packed(field: LanceField) -> bool:
    """A struct pylance stores as one packed-struct column (its fields are not columns)."""
    return field.is_packed


def is_leaf(field: LanceField) -> bool:
    return not field.children or field.is_blob_v2 or is_packed(field)


def packed_owner(top_fields: list[LanceField], field: LanceField) -> LanceField | None:
    """The packed struct ``field`` lies in (its column holds ``field``'s values), or None."""

    def walk(f: LanceField, owner: LanceField | None) -> LanceField | None:
        owner = owner or (f if is_packed(f) else None)
        if f.id == field.id:
            return owner if owner is not f else None
        for child in f.children:
            found = walk(child, owner)
            if found is not None:
                return found
        return None

    for top in top_fields:
        found = walk(top, None)
        if found is not None:
            return found
    return None


def packed_field(array: pa.Array, owner: LanceField, field: LanceField) -> pa.Array:
    """``field``'s values out of its packed struct's ``array`` (null where the struct is null)."""
    index = [c.id for c in owner.children].index(field.id)
    return array.flatten()[index]


def leaf_paths(field: LanceField) -> list[list[LanceField]]:
    """Every chain top -> leaf under ``field``, in column (pre-order) order."""
    if is_leaf(field):
        return [[field]]
    return [[field] + chain for child in field.children for chain in leaf_paths(child)]


def storage_type(field: LanceField) -> pa.DataType:
    """The type a leaf is stored as (dictionaries are stored as their values)."""
    t = field.arrow_type()
    return t.value_type if pa.types.is_dictionary(t) else t


def path_type(chain: list[LanceField], decoded: bool = True) -> pa.DataType:
    """The top-level type pruned to one leaf (maps become list<entries struct>).

    Readers get dictionary leaves as their values (``decoded``); writers hand encoders the
    dictionary itself so it can become the page's dictionary.
    """
    t = storage_type(chain[-1]) if decoded else chain[-1].arrow_type()
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
    return validity_bitmap(array.is_valid().to_numpy(zero_copy_only=False))


def _list_parts(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    offsets = array.offsets.to_numpy()
    child = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    return offsets - offsets[0], child


def merge(field: LanceField, arrays: list[pa.Array], where: str = "data file") -> pa.Array:
    """Rebuild ``field`` from the path arrays of its leaves (in ``leaf_paths`` order).

    Each path array is valid on its own (the page decoders check that); what damage can still
    break is their agreement: every leaf of a struct must have the struct's row count and every
    leaf under a list the list's lengths, or the merged array would be invalid Arrow.
    ``where`` names the file in the ``CorruptFileError`` raised then.
    """
    target = field.arrow_type()
    if is_leaf(field):
        array = arrays[0]
        if pa.types.is_dictionary(target):
            array = pc.dictionary_encode(array).cast(target)
        return array
    first = arrays[0]
    n = len(first)
    if any(len(a) != n for a in arrays):
        raise CorruptFileError(
            where,
            f"the leaf columns of field {field.name!r} hold "
            f"{sorted({len(a) for a in arrays})} rows, not one count",
        )
    bitmap, nulls = _bitmap(first)
    if field.is_struct:
        children, pos = [], 0
        child_arrays = [a.flatten()[0] for a in arrays]
        for child in field.children:
            count = len(leaf_paths(child))
            children.append(merge(child, child_arrays[pos : pos + count], where))
            pos += count
        return pa.Array.from_buffers(target, n, [bitmap], null_count=nulls, children=children)
    offsets, _ = _list_parts(first)
    parts = [_list_parts(a) for a in arrays]
    if any(not np.array_equal(offs, offsets) for offs, _ in parts[1:]):
        raise CorruptFileError(
            where, f"the leaf columns of list field {field.name!r} disagree on list lengths"
        )
    child = field.children[0]
    merged = merge(child, [values for _, values in parts], where)
    wide = pa.types.is_large_list(target)
    offs = pa.py_buffer(offsets.astype(np.int64 if wide else np.int32))
    return pa.Array.from_buffers(target, n, [bitmap, offs], null_count=nulls, children=[merged])


def prune(array: pa.Array, chain: list[LanceField]) -> pa.Array:
    """The path array of one leaf: ``array`` (of ``chain[0]``) keeping only the path to ``chain[-1]``.

    Zero-copy; dictionary leaves stay dictionaries (see ``path_type``).
    """
    if len(chain) == 1:
        return array
    parent, child = chain[0], chain[1]
    target = path_type(chain, decoded=False)
    if parent.is_struct:
        bitmap, nulls = _bitmap(array)
        index = [c.name for c in parent.children].index(child.name)
        inner = prune(array.flatten()[index], chain[1:])
        return pa.Array.from_buffers(target, len(array), [bitmap], null_count=nulls, children=[inner])
    inner = prune(array.values, chain[1:])  # a map's values are its entries struct
    return _rebuild_list(target, array, array.offsets, inner)


def _rebuild_list(target: pa.DataType, array: pa.Array, offsets: pa.Array, inner: pa.Array) -> pa.Array:
    """A list of ``target`` type with ``array``'s offsets (absolute into ``inner``) and validity."""
    bitmap, nulls = _bitmap(array)
    wide = pa.types.is_large_list(target)
    offs = offsets.to_numpy().astype(np.int64 if wide else np.int32)
    return pa.Array.from_buffers(
        target, len(array), [bitmap, pa.py_buffer(offs)], null_count=nulls, children=[inner]
    )
