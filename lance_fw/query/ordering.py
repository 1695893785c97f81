"""A scan's ``order_by=`` (pylance's ``ColumnOrdering`` list): the order pylance 14's sort gives.

Why a kernel of its own: pylance sorts with DataFusion, whose order differs from a plain
``pyarrow.compute.sort_indices`` in ways a user sees:

* floats compare by IEEE total order: ``-0.0`` before ``0.0``, NaN after every number ascending
  and before every number descending (Arrow puts NaN with the nulls, at one end either way);
* each key places its own nulls (``nulls_first``), first or last in both directions;
* keys compare lexicographically, the first key first.

Rows with equal keys have no specified order in pylance (its sort merges partitions in parallel:
observed differing from a stable sort at 50k rows), so any order of them is pylance's order; this
kernel keeps them in scan order (a stable sort). The result is cut into ``batch_size`` batches, as
pylance's sorted stream is.

What pylance 14 accepts (for the scanner that calls this): sort columns are dataset columns only
(a ``{name: SQL}`` alias or ``_rowid`` raises ``ValueError`` "Column x not found"); a sort column
missing from ``columns=`` raises ``ValueError`` (a TakeExec planning error) unless a filter is given;
``offset`` / ``limit`` apply after the sort (its top-k, again with unspecified tie order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import InvalidArgumentError

#: Mask of the IEEE total-order key: flip every bit below the sign of a negative float64
_TOTAL_ORDER_MASK = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def _float_key(values: np.ndarray) -> np.ndarray:
    """An integer key whose order is IEEE total order (``-0.0 < 0.0``, NaN after +inf). Widening
    to float64 first keeps that order for float16 / float32 values."""
    bits = values.astype(np.float64).view(np.int64)
    sign = np.right_shift(bits, np.int64(63))
    key: np.ndarray = np.bitwise_xor(bits, np.bitwise_and(sign, _TOTAL_ORDER_MASK))
    return key


def _value_key(column: pa.Array) -> np.ndarray:
    """An int64 key ordering the non-null values ascending (nulls get any value; see ``_keys``)."""
    if pa.types.is_floating(column.type):
        filled = column.fill_null(0).to_numpy(zero_copy_only=False)
        return _float_key(filled)
    ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense")
    return ranks.to_numpy(zero_copy_only=False).astype(np.int64)


def _keys(column: pa.Array, ascending: bool, nulls_first: bool) -> list[np.ndarray]:
    """The lexsort keys of one ordering, most significant first: null group, then value."""
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    group = np.where(nulls, 0 if nulls_first else 1, 1 if nulls_first else 0).astype(np.int8)
    value = _value_key(column)
    return [group, value if ascending else ~value]


@dataclass(frozen=True)
class _ByName:
    """A sort key given as a column name (``order_by=["x"]``)."""

    column_name: str
    ascending: bool
    nulls_first: bool


def _attribute(ordering: Any, name: str) -> Any:
    try:
        return getattr(ordering, name)
    except AttributeError:
        raise InvalidArgumentError(
            f"order_by: expected ColumnOrdering objects, got {type(ordering).__name__}"
        ) from None


def checked_orderings(orderings: Sequence[Any], schema: pa.Schema) -> list[Any]:
    """``order_by=`` checked before any read: a list of ``ColumnOrdering``-like objects naming
    dataset columns.

    Raises:
        InvalidArgumentError: not a list of such objects, or a column the dataset does not have
            (pylance: ``ValueError`` "Column x not found"; ``_rowid`` and aliases included).
    """
    if isinstance(orderings, (str, bytes)) or not isinstance(orderings, Sequence):
        raise InvalidArgumentError(f"order_by must be a list of ColumnOrdering, got {orderings!r}")
    # a name alone is pylance's ColumnOrdering(name): ascending, nulls last
    out = [_ByName(o, True, False) if isinstance(o, str) else o for o in orderings]
    for ordering in out:
        name = _attribute(ordering, "column_name")
        _attribute(ordering, "ascending")
        _attribute(ordering, "nulls_first")
        if name not in schema.names:
            raise InvalidArgumentError(f"Invalid user input: Column {name} not found")
    return out


def sort_indices(table: pa.Table, orderings: Sequence[Any]) -> np.ndarray:
    """The row order of ``table`` under ``orderings`` (objects with ``column_name``,
    ``ascending`` and ``nulls_first``, as pylance's ``ColumnOrdering``); equal keys keep their order.

    Raises:
        InvalidArgumentError: a column the table does not have (pylance: "Column ... not found").
    """
    keys: list[np.ndarray] = []
    for ordering in orderings:
        name = _attribute(ordering, "column_name")
        if name not in table.column_names:
            raise InvalidArgumentError(f"Invalid user input: Column {name} not found")
        column = table.column(name).combine_chunks()
        keys += _keys(
            column, bool(_attribute(ordering, "ascending")), bool(_attribute(ordering, "nulls_first"))
        )
    if not keys or table.num_rows == 0:
        return np.arange(table.num_rows)
    # np.lexsort sorts by its last key first, and is stable
    return np.lexsort(keys[::-1])


def order_table(
    table: pa.Table, orderings: Sequence[Any], offset: int = 0, limit: int | None = None
) -> pa.Table:
    """``table`` sorted by ``orderings``, then ``offset`` rows skipped and ``limit`` kept (the
    order pylance applies them in: sort first)."""
    order = sort_indices(table, orderings)
    end = None if limit is None else offset + limit
    return table.take(pa.array(order[offset:end], pa.int64()))


def ordered_batches(table: pa.Table, batch_size: int) -> list[pa.RecordBatch]:
    """The sorted rows as pylance's sorted stream cuts them: ``batch_size`` rows a batch."""
    return [
        batch
        for start in range(0, table.num_rows, batch_size)
        for batch in table.slice(start, batch_size).combine_chunks().to_batches()
    ]


__all__ = ["checked_orderings", "order_table", "ordered_batches", "sort_indices"]
