"""Where a scan's batches end: pylance's batch boundaries, cut from or joined over Arrow batches.

Its job: given the batches a scan's fragment reads produce, hand them on at the boundaries pylance
uses -- ``rechunk`` cuts each fragment's run into batches of exactly ``batch_size`` rows (never
spanning two fragments), ``coalesce`` joins a filtered stream's batches until each holds
``batch_size`` rows (what pylance does when it materialises some column after the filter), and
``materialised_late`` says which columns pylance reads late (after the filter).

Why apart from ``scanner.py``: this is pure batch arithmetic over ``pyarrow`` record batches and a
field's Arrow type, with no scan state (no ``Snapshot``, options, filter plan or reads);
``LanceScanner._batches`` only picks which of these applies to a scan. Keeping it here leaves
``scanner.py`` to the scan's options and its run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from lance_fw.schema import LanceField


def rechunk(pieces: Iterator[tuple[int, pa.RecordBatch]], size: int) -> Iterator[pa.RecordBatch]:
    """Batches of exactly ``size`` rows cut from each fragment's run of batches, the fragment's
    last one shorter (pylance's batch boundaries: a batch never spans two fragments)."""
    held: list[pa.RecordBatch] = []
    rows, current = 0, None
    for frag_id, batch in pieces:
        if frag_id != current and held:
            yield _joined(held)
            held, rows = [], 0
        current = frag_id
        held.append(batch)
        rows += batch.num_rows
        if rows >= size:
            joined = _joined(held)
            full = rows - rows % size
            for lo in range(0, full, size):
                yield joined.slice(lo, size)
            held = [joined.slice(full)] if rows > full else []
            rows -= full
    if held and rows:
        yield _joined(held)


def coalesce(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """``batches`` joined in order until each output holds ``size`` rows or more (the last
    fewer; a batch of ``size`` or more passes alone): how pylance's take of late-materialised
    columns batches a filtered stream."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows >= size:  # a full batch passes as it is, after what was held
            if held:
                yield _joined(held)
                held, rows = [], 0
            yield batch
            continue
        held.append(batch)
        rows += batch.num_rows
        if rows >= size:
            yield _joined(held)
            held, rows = [], 0
    if rows:
        yield _joined(held)


#: The widest values pylance reads together with a filter's columns; wider ones (and booleans,
#: strings, lists ...) it reads after the filter, for the matching rows only.
EARLY_VALUE_BYTES = 8


def materialised_late(field: LanceField) -> bool:
    t = field.arrow_type()
    if pa.types.is_fixed_size_list(t) and not pa.types.is_nested(t.value_type):
        width = t.list_size * (t.value_type.bit_width if not pa.types.is_boolean(t.value_type) else 0)
        return not 0 < width <= 8 * EARLY_VALUE_BYTES
    if pa.types.is_boolean(t) or pa.types.is_nested(t) or pa.types.is_dictionary(t):
        return True
    try:
        return not t.bit_width <= 8 * EARLY_VALUE_BYTES
    except ValueError:  # variable width
        return True


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)
