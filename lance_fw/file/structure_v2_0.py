"""How nested Arrow data maps onto 2.0 columns, both ways.

In 2.0 every field owns a column, in pre-order: a struct parent's column only records a row count,
a list parent's column stores the list offsets (here handed to encoders as int64 *lengths* with the
list's validity, and decoded to ``LIST_PAGE_TYPE``), and the item column follows with the items.
A packed struct (``LanceField.is_packed``) is one column of whole rows, its fields own none, as
pylance stores it: the page is a ``packed_struct`` of the children's fixed-width values side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import CorruptFileError, SchemaError, UnsupportedFeatureError
from lance_fw.file.buffers import fixed_bits, validity_or_none
from lance_fw.schema import LanceField


def column_fields(fields: Iterable[LanceField]) -> Iterator[LanceField]:
    """The fields owning a 2.0 column, in column order: pre-order, not into packed structs."""
    for f in fields:
        yield f
        if not f.is_packed:
            yield from column_fields(f.children)


def packable(t: pa.DataType) -> bool:
    """Whether pylance 14 writes *and reads back* a 2.0 packed-struct child of type ``t``: whole
    bytes of fixed width (fixed-size binary and lists of such included). Booleans and strings it
    refuses to write; nested structs and dictionaries it writes but cannot read, or panics on."""
    if pa.types.is_fixed_size_list(t):
        return t.list_size > 0 and packable(t.value_type)
    if pa.types.is_boolean(t) or pa.types.is_null(t) or pa.types.is_dictionary(t):
        return False
    if pa.types.is_nested(t):
        return False
    bits = fixed_bits(t)
    return bits is not None and bits > 0 and bits % 8 == 0


def check_packed(fields: Iterable[LanceField], where: str) -> None:
    """Refuse (``UnsupportedFeatureError``) a packed struct pylance could not read at 2.0."""
    for f in column_fields(fields):
        if not f.is_packed:
            continue
        bad = [c for c in f.children if not packable(c.arrow_type())]
        if bad or not f.children:
            what = ", ".join(f"{c.name!r} ({c.arrow_type()})" for c in bad) or "no fields"
            raise UnsupportedFeatureError(
                f"{where}: packed struct {f.name!r} has {what}; a 2.0 packed struct holds only "
                "fixed-width fields of whole bytes (pylance refuses or cannot read others): "
                "drop the packed metadata or write 2.1 or later"
            )


def _no_struct_nulls(field: LanceField, array: pa.Array) -> None:
    if array.null_count:
        raise SchemaError(
            f"field {field.name!r}: Lance file version 2.0 does not encode struct validity "
            "(null structs); write with data_storage_version='2.1' or later"
        )


def _has_nulls(array: pa.Array) -> bool:
    if array.null_count:
        return True
    if pa.types.is_fixed_size_list(array.type):
        return _has_nulls(array.flatten())
    return False


def shred(field: LanceField, array: pa.Array) -> Iterator[tuple[LanceField, str, pa.Array]]:
    """Yield (field, role, column array) for ``array`` and its descendants in column order."""
    if field.is_packed:
        _no_struct_nulls(field, array)
        for child, i in zip(field.children, range(array.type.num_fields)):
            if _has_nulls(array.field(i)):
                raise UnsupportedFeatureError(
                    f"field {field.name!r}.{child.name!r}: a 2.0 packed struct cannot hold null "
                    "values (pylance refuses them too); write 2.1 or later, or drop the packed metadata"
                )
        yield field, "leaf", array
    elif field.is_struct:
        _no_struct_nulls(field, array)
        yield field, "struct", pa.nulls(len(array))
        for child, child_array in zip(field.children, array.flatten()):
            yield from shred(child, child_array)
    elif field.is_list:
        lengths = pc.list_value_length(array).cast(pa.int64())
        yield field, "list", lengths
        yield from shred(field.children[0], array.flatten())
    elif field.is_map:
        raise SchemaError(f"field {field.name!r}: the map type needs data_storage_version 2.2 or later")
    else:
        yield field, "leaf", array


#: What a 2.0 list page decodes to (reading). Per row, ``items`` is how many items the row spans in
#: the item column, *also for null rows*: pylance backs a null list with the items Arrow had under
#: it, and the rows after it start past them. The struct's own validity is the list validity. A
#: struct, not int64 lengths with nulls, because Arrow zeroes values under nulls when it concatenates.
LIST_PAGE_TYPE = pa.struct([pa.field("items", pa.int64(), nullable=False)])


def list_page_rows(counts: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """Decoded 2.0 list rows (``LIST_PAGE_TYPE``) from item counts and the list validity."""
    mask = None if valid is None else pa.array(~valid)
    return pa.StructArray.from_arrays([pa.array(counts, pa.int64())], fields=list(LIST_PAGE_TYPE), mask=mask)


def item_counts(rows: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(items spanned per row, validity or None when no row is null) of decoded 2.0 list rows."""
    counts = rows.field(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)  # ``field`` slices
    valid = rows.is_valid().to_numpy(zero_copy_only=False) if rows.null_count else None
    return counts, valid


def lengths_to_list(
    list_type: pa.DataType,
    counts: np.ndarray,
    valid: np.ndarray | None,
    items: pa.Array,
    path: str,
    name: str,
) -> pa.Array:
    """Rebuild a (large) list array from per-row item counts, the list validity and the items.

    Null rows keep the items they span (valid Arrow: a null slot may own values), so the items of
    a range of rows are always one contiguous run of the item column.
    """
    offset_dtype = np.int64 if pa.types.is_large_list(list_type) else np.int32
    total = int(counts.sum()) if len(counts) else 0
    if (counts < 0).any() or total != len(items) or total > np.iinfo(offset_dtype).max:
        raise CorruptFileError(
            path,
            f"list column {name!r}: rows span {total} items, the item column "
            f"holds {len(items)} (or the offsets are out of range)",
        )
    offsets = np.zeros(len(counts) + 1, dtype=offset_dtype)
    np.cumsum(counts, out=offsets[1:])
    validity, nulls = validity_or_none(valid) if valid is not None else (None, 0)
    return pa.Array.from_buffers(
        list_type, len(counts), [validity, pa.py_buffer(offsets)], null_count=nulls, children=[items]
    )
