"""Repetition and definition levels -> nested Arrow arrays (vectorised, any depth).

``layers`` run from the leaf (index 0) outwards, one per field on the path from the column's
top-level field down to its leaf. Definition numbers are handed out from the inside: each
nullable item/list layer takes one number, an empty-able list one, a null-and-empty list two
(null first). A level's def is 0 when everything is valid, else the number of the outermost
layer that stops it. Repetition: with R list layers, rep = R starts a new row, rep = r starts a
new list at the r-th list layer counted from the inside, 0 continues the innermost list.

The walk goes top-down over the levels to find, for every layer, where its elements start, their
validity and (for lists) their offsets; the arrays are then assembled bottom-up.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import fixed_bits, validity_or_none

from .decoded_values import DecodedValues, present, split_packed_struct
from .layouts import PageLevels

ITEM_LAYERS = (pb.REPDEF_ALL_VALID_ITEM, pb.REPDEF_NULLABLE_ITEM)
LIST_LAYERS = (
    pb.REPDEF_ALL_VALID_LIST,
    pb.REPDEF_NULLABLE_LIST,
    pb.REPDEF_EMPTYABLE_LIST,
    pb.REPDEF_NULL_AND_EMPTY_LIST,
)


def def_numbers(layers: list[int]) -> tuple[list[int], list[int | None]]:
    """Per layer: the highest def number used strictly inside it, and its empty-list number."""
    inside: list[int] = []
    empty: list[int | None] = []
    n = 0
    for layer in layers:
        inside.append(n)
        if layer in (pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULLABLE_LIST):
            n += 1
            empty.append(None)
        elif layer == pb.REPDEF_EMPTYABLE_LIST:
            n += 1
            empty.append(n)
        elif layer == pb.REPDEF_NULL_AND_EMPTY_LIST:
            n += 2
            empty.append(n)
        else:
            empty.append(None)
    return inside, empty


def visible_levels(layers: list[int], defs: np.ndarray | None, count: int) -> np.ndarray:
    """Levels that carry a value: all but those standing for a null/empty list (or what holds it)."""
    lists = [i for i, layer in enumerate(layers) if layer in LIST_LAYERS]
    if defs is None or not lists:
        return np.ones(count if defs is None else len(defs), dtype=bool)
    inside, _ = def_numbers(layers)
    return defs <= inside[lists[0]]


def path_types(arrow_type: pa.DataType, depth: int) -> list[pa.DataType]:
    """The types on the path from a top-level (single-leaf) type down to its leaf, at most
    ``depth`` of them (a leaf may itself be a struct, e.g. a blob descriptor)."""
    out = [arrow_type]
    t = arrow_type
    while len(out) < depth:
        if pa.types.is_struct(t):
            t = t.field(0).type
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            t = t.value_type
        else:
            return out
        out.append(t)
    return out


def build(levels: PageLevels, arrow_type: pa.DataType, where: str) -> pa.Array:
    layers = levels.layers
    types = path_types(arrow_type, len(layers))
    if len(types) != len(layers):
        raise CorruptFileError(
            where, f"page has {len(layers)} rep/def layers for a path of {len(types)} fields"
        )
    for i, layer in enumerate(layers):  # the layers must describe the column's path, leaf first
        t = types[len(layers) - 1 - i]
        is_list = i > 0 and (pa.types.is_list(t) or pa.types.is_large_list(t))
        if layer not in ITEM_LAYERS + LIST_LAYERS or (layer in LIST_LAYERS) != is_list:
            raise CorruptFileError(where, f"rep/def layer {layer} does not describe a {t} field")
    inside, empty = def_numbers(layers)
    list_idx = [i for i, layer in enumerate(layers) if layer in LIST_LAYERS]
    count = _level_count(levels)
    if not list_idx and levels.rep is None and levels.defs is None and levels.values is not None:
        return _all_valid(levels, types, count, where)
    defs = levels.defs if levels.defs is not None else np.zeros(count, np.uint16)
    rep = levels.rep
    if list_idx and rep is None:
        raise CorruptFileError(where, "list layers without repetition levels")
    if levels.defs is None and levels.values is None and _is_all_null(levels):
        defs = np.ones(count, np.uint16)  # all null at the innermost nullable layer (number 1)
    if len(defs) != count or (rep is not None and len(rep) != count):
        raise CorruptFileError(where, "rep and def levels differ in length")
    # slots: the levels standing for the elements of the layer at hand (None: every level)
    slots = None if rep is None else np.flatnonzero(rep == len(list_idx))
    rows = count if slots is None else len(slots)
    if rows != levels.num_rows:
        raise CorruptFileError(where, f"levels describe {rows} rows, the page has {levels.num_rows}")
    valid_by_layer: dict[int, np.ndarray] = {}
    offsets_by_layer: dict[int, np.ndarray] = {}
    for i in range(len(layers) - 1, -1, -1):
        d = defs if slots is None else defs[slots]
        has_items = d <= inside[i]
        if layers[i] in LIST_LAYERS:
            assert rep is not None and slots is not None  # list layers have rep levels (checked above)
            valid = has_items | (d == empty[i]) if empty[i] is not None else has_items
            r = sum(1 for j in list_idx if j <= i)
            is_start = (rep >= r - 1) & (defs <= inside[i])
            starts = np.flatnonzero(is_start)
            # a list's offset: the item starts before its slot (a running count, not a search)
            before = np.cumsum(is_start, dtype=np.int64)
            before -= is_start
            offsets = np.empty(len(slots) + 1, np.int64)
            offsets[:-1] = before[slots]
            offsets[-1] = len(starts)
            offsets_by_layer[i] = offsets
            valid_by_layer[i] = valid
            slots = starts
        else:
            valid_by_layer[i] = has_items
    leaf = _leaf(levels, types[-1], count if slots is None else len(slots), valid_by_layer[0], where)
    array = leaf
    for i in range(1, len(layers)):
        t = types[len(layers) - 1 - i]
        valid = valid_by_layer[i]
        bitmap, nulls = validity_or_none(valid)
        if i in offsets_by_layer:
            offs = offsets_by_layer[i]
            offs = offs.astype(np.int64 if pa.types.is_large_list(t) else np.int32)
            array = pa.Array.from_buffers(
                t, len(valid), [bitmap, pa.py_buffer(offs)], null_count=nulls, children=[array]
            )
        else:
            array = pa.Array.from_buffers(t, len(valid), [bitmap], null_count=nulls, children=[array])
    return array


def _all_valid(levels: PageLevels, types: list[pa.DataType], count: int, where: str) -> pa.Array:
    """A page without rep and def levels and without lists: every level is a valid row (the
    common case of a non-nullable scalar column), so no per-level work at all."""
    if count != levels.num_rows:
        raise CorruptFileError(where, f"levels describe {count} rows, the page has {levels.num_rows}")
    array = _leaf(levels, types[-1], count, None, where)
    for t in reversed(types[:-1]):  # structs around the leaf, all valid
        array = pa.Array.from_buffers(t, count, [None], null_count=0, children=[array])
    return array


def _is_all_null(levels: PageLevels) -> bool:
    return levels.constant is None and levels.constant_buffers is None


def _level_count(levels: PageLevels) -> int:
    for arr in (levels.defs, levels.rep):
        if arr is not None:
            return len(arr)
    if levels.values is not None:
        return levels.values.num_values
    return levels.num_rows


def _leaf(levels: PageLevels, t: pa.DataType, n: int, valid: np.ndarray | None, where: str) -> pa.Array:
    if levels.values is None:
        return _constant_leaf(levels, t, n, valid, where)
    if levels.values.num_values != n:
        raise CorruptFileError(where, f"page holds {levels.values.num_values} values for {n} visible items")
    return values_to_arrow(levels.values, t, valid, where)


def values_to_arrow(values: DecodedValues, t: pa.DataType, valid: np.ndarray | None, where: str) -> pa.Array:
    """Decoded values as an Arrow array of ``t``. What the page's encoding produced must fit the
    column's type (damage can pair any encoding with any column): a mismatch is a CorruptFileError."""
    try:
        return _values_to_arrow(values, t, valid, where)
    except (pa.ArrowInvalid, ValueError) as exc:
        if isinstance(exc, CorruptFileError):
            raise
        raise CorruptFileError(where, f"{values.kind} values do not make a {t} array: {exc}") from None


def _values_to_arrow(values: DecodedValues, t: pa.DataType, valid: np.ndarray | None, where: str) -> pa.Array:
    n = values.num_values
    bitmap, nulls = validity_or_none(valid) if valid is not None else (None, 0)
    if valid is not None and len(valid) != n:
        raise CorruptFileError(where, f"{len(valid)} validity bits for {n} values")
    if values.kind == "null":
        return pa.nulls(n, t)
    if values.kind == "arrow":  # packed structs: relabel the decoded children to the column's fields
        array = present(values.array, "array")
        if not pa.types.is_struct(t) or t.num_fields != array.type.num_fields:
            raise CorruptFileError(where, f"packed struct values for a {t} column")
        try:
            children = [c.cast(t.field(i).type) for i, c in enumerate(array.flatten())]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise CorruptFileError(where, f"packed struct values do not fit {t}: {exc}") from None
        return pa.Array.from_buffers(t, n, [bitmap], null_count=nulls, children=children)
    if values.kind == "fsl":
        items = present(values.inner, "items")
        if (
            not pa.types.is_fixed_size_list(t)
            or values.dimension != t.list_size
            or items.num_values != n * t.list_size
        ):
            raise CorruptFileError(
                where,
                f"{n} fixed-size lists of {values.dimension} ({items.num_values} items) for a {t} column",
            )
        inner = values_to_arrow(items, t.value_type, values.validity, where)
        return pa.Array.from_buffers(t, n, [bitmap], null_count=nulls, children=[inner])
    if values.kind == "variable":
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
            raise CorruptFileError(where, f"variable-width values for a {t} column")
        offs = present(values.offsets, "offsets").astype(np.int64 if large else np.int32)
        data = pa.py_buffer(np.ascontiguousarray(values.data, dtype=np.uint8))
        return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(offs), data], null_count=nulls)
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_struct(t):
        return _packed_struct(values, t, bitmap, nulls, where)
    width = fixed_bits(t)
    if values.kind != "fixed" or width is None:
        raise CorruptFileError(where, f"{values.kind} values for a {t} column")
    raw, bits = values.fixed_bytes(), values.bits_per_value
    if pa.types.is_boolean(t) and bits == 8 and raw.size >= n:
        # a full-zip page stores a boolean a byte (pylance, under structural-encoding=fullzip)
        if raw[:n].max(initial=0) > 1:
            raise CorruptFileError(where, "byte-wide booleans other than 0 and 1")
        raw, bits = np.packbits(raw[:n], bitorder="little"), 1
    expected = (n * width + 7) // 8
    if bits != width or raw.size < expected:
        raise CorruptFileError(where, f"{values.bits_per_value}-bit values for a {t} column")
    return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(raw)], null_count=nulls)


def _packed_struct(
    values: DecodedValues, t: pa.StructType, bitmap: pa.Buffer | None, nulls: int, where: str
) -> pa.Array:
    """Row-major packed-struct rows (``lance-encoding:packed``) as a struct of their fields."""
    widths = [fixed_bits(t.field(i).type) for i in range(t.num_fields)]
    if values.kind != "fixed" or list(values.packed_struct_bits) != widths:
        raise CorruptFileError(
            where, f"packed struct values of {list(values.packed_struct_bits)} bits for a {t} column"
        )
    children = [
        pa.Array.from_buffers(
            t.field(i).type, values.num_values, [None, pa.py_buffer(np.ascontiguousarray(c))], null_count=0
        )
        for i, c in enumerate(split_packed_struct(values))
    ]
    return pa.Array.from_buffers(t, values.num_values, [bitmap], null_count=nulls, children=children)


def _constant_leaf(
    levels: PageLevels, t: pa.DataType, n: int, valid: np.ndarray | None, where: str
) -> pa.Array:
    if levels.constant is None and levels.constant_buffers is None:
        return pa.nulls(n, t)
    if levels.constant is not None:
        raw = levels.constant
        if pa.types.is_boolean(t):
            one = pa.array([bool(raw[0] & 1)] if raw else [False])
        elif (fixed_bits(t) or 0) % 8 or len(raw) * 8 != fixed_bits(t):
            raise CorruptFileError(where, f"a constant of {len(raw)} bytes for a {t} column")
        else:
            one = pa.Array.from_buffers(t, 1, [None, pa.py_buffer(raw)], null_count=0)
    else:
        bufs = [pa.py_buffer(b) for b in present(levels.constant_buffers, "constant buffers")]
        try:
            if pa.types.is_fixed_size_list(t):
                inner = pa.Array.from_buffers(t.value_type, t.list_size, [None] + bufs, null_count=0)
                one = pa.Array.from_buffers(t, 1, [None], null_count=0, children=[inner])
            else:
                one = pa.Array.from_buffers(t, 1, [None] + bufs, null_count=0)
            one.validate(full=True)  # before take() reads through its offsets
        except (pa.ArrowInvalid, ValueError) as exc:
            raise CorruptFileError(where, f"constant value does not fit {t}: {exc}") from None
    out = one.take(pa.array(np.zeros(n, np.int64)))
    return out if valid is None or valid.all() else _with_validity(out, valid)


def _with_validity(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    bitmap, nulls = validity_or_none(valid)
    if pa.types.is_fixed_size_list(arr.type):
        return pa.Array.from_buffers(arr.type, len(arr), [bitmap], null_count=nulls, children=[arr.values])
    return pa.Array.from_buffers(arr.type, len(arr), [bitmap] + arr.buffers()[1:], null_count=nulls)
