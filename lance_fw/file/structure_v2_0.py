"""How nested Arrow data maps onto 2.0 columns, both ways.

In 2.0 every field owns a column, in pre-order: a struct parent's column only records a row count,
a list parent's column stores the list offsets (here handed to encoders as int64 *lengths* with the
list's validity), and the item column follows with the flattened items.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import SchemaError
from lance_fw.schema import LanceField


def shred(field: LanceField, array: pa.Array) -> Iterator[tuple[LanceField, str, pa.Array]]:
    """Yield (field, role, column array) for ``array`` and its descendants in column order."""
    if field.is_struct:
        if array.null_count:
            raise SchemaError(f"field {field.name!r}: Lance file version 2.0 does not encode struct validity "
                              "(null structs); write with data_storage_version='2.1' or later")
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


def lengths_to_list(list_type: pa.DataType, lengths: pa.Array, items: pa.Array) -> pa.Array:
    """Rebuild a (large) list array from int64 lengths with validity and its items."""
    counts = pc.fill_null(lengths, 0).to_numpy()
    offset_dtype = np.int64 if pa.types.is_large_list(list_type) else np.int32
    offsets = np.zeros(len(lengths) + 1, dtype=offset_dtype)
    np.cumsum(counts, out=offsets[1:])
    validity = lengths.buffers()[0] if lengths.null_count else None
    if validity is not None and lengths.offset:
        validity = pa.array(lengths.is_valid()).buffers()[1]
    return pa.Array.from_buffers(list_type, len(lengths), [validity, pa.py_buffer(offsets)],
                                 null_count=lengths.null_count, children=[items])
