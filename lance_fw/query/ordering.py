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
    bits = values.astype(np.float64, copy=False).view(np.int64)
    key: np.ndarray = np.right_shift(bits, np.int64(63))  # (in place from here: one array)
    np.bitwise_and(key, _TOTAL_ORDER_MASK, out=key)
    np.bitwise_xor(key, bits, out=key)
    return key


def _value_key(column: pa.Array) -> np.ndarray:
    """An int64 key ordering the non-null values ascending (nulls get any value; see ``_keys``):
    the values themselves for integers that fit (a rank is a sort of its own: 2M ints ~0.1 s)."""
    if pa.types.is_floating(column.type):
        filled = column.fill_null(0) if column.null_count else column
        return _float_key(filled.to_numpy(zero_copy_only=False))
    if pa.types.is_integer(column.type) and column.type != pa.uint64():
        filled = column.fill_null(0) if column.null_count else column
        return filled.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense")
    return ranks.to_numpy(zero_copy_only=False).astype(np.int64)


def _keys(column: pa.Array, ascending: bool, nulls_first: bool) -> list[np.ndarray]:
    """The lexsort keys of one ordering, most significant first: null group (none without
    nulls), then value."""
    value = _value_key(column)
    value = value if ascending else ~value
    if not column.null_count:
        return [value]
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    group = np.where(nulls, 0 if nulls_first else 1, 1 if nulls_first else 0).astype(np.int8)
    return [group, value]


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


def sort_indices(table: pa.Table, orderings: Sequence[Any], first: int | None = None) -> np.ndarray:
    """The row order of ``table`` under ``orderings`` (objects with ``column_name``,
    ``ascending`` and ``nulls_first``, as pylance's ``ColumnOrdering``); equal keys keep their order.
    ``first``: only that many rows of the order are wanted (a top-k: ``offset + limit``); the
    order returned may then hold only those.

    Raises:
        InvalidArgumentError: a column the table does not have (pylance: "Column ... not found").
    """
    sorts: list[tuple[pa.Array, bool, bool]] = []
    for ordering in orderings:
        name = _attribute(ordering, "column_name")
        if name not in table.column_names:
            raise InvalidArgumentError(f"Invalid user input: Column {name} not found")
        sorts.append(
            (
                table.column(name).combine_chunks(),
                bool(_attribute(ordering, "ascending")),
                bool(_attribute(ordering, "nulls_first")),
            )
        )
    n = table.num_rows
    if not sorts or n == 0:
        return np.arange(n)
    top = first is not None and first < n * TOP_K_SHARE
    rows = _lead_candidates(sorts[0][0], sorts[0][1], first) if top and first else None
    if rows is not None:  # the rows that may come first, in scan order: their exact order
        chosen = pa.array(rows)
        order = _stable_order([key for c, asc, nf in sorts for key in _keys(c.take(chosen), asc, nf)])
        return rows[order[:first]]
    keys = [key for c, asc, nf in sorts for key in _keys(c, asc, nf)]
    if top and first:
        return _top(keys, first)
    return _stable_order(keys)


def _stable_order(keys: list[np.ndarray]) -> np.ndarray:
    """The stable order of rows by ``keys``, most significant first."""
    if len(keys) == 1:
        return np.argsort(keys[0], kind="stable")
    return np.lexsort(keys[::-1])  # (sorts by its last key first, stable)


#: Share of the rows up to which ``first`` rows of an order are found as a top-k (the rows the
#: leading key lets through, then sorted) rather than by sorting every row: a 2M-row
#: ``order_by`` with ``limit=10`` sorted 2M keys (~0.4 s) for ten rows.
TOP_K_SHARE = 0.25


def _lead_candidates(column: pa.Array, ascending: bool, first: int) -> np.ndarray | None:
    """The rows (ascending) that may be among the ``first`` of an order led by ``column``: those
    whose value is no worse than the ``first``-th best, by a partition of the values as they are
    (numbers without NULLs or NaNs, where IEEE order is total order but for -0.0 == 0.0, which
    only lets both through). None where that does not hold (``_top`` then works on the exact keys)."""
    if column.null_count or not (
        pa.types.is_floating(column.type) or (pa.types.is_integer(column.type) and column.type != pa.uint64())
    ):
        return None
    values = column.to_numpy(zero_copy_only=False)
    if pa.types.is_floating(column.type) and np.isnan(values).any():
        return None
    if ascending:
        return np.flatnonzero(values <= np.partition(values, first - 1)[first - 1])
    return np.flatnonzero(values >= np.partition(values, len(values) - first)[len(values) - first])


def _top(keys: list[np.ndarray], first: int) -> np.ndarray:
    """The first ``first`` rows of the stable order of ``keys`` (most significant first), in
    order. Every such row has a leading key no greater than the ``first``-th smallest (at least
    ``first`` rows precede any row above it), so only those rows are sorted, in scan order (the
    sort is stable): the result is the full sort's first rows exactly."""
    lead = keys[0]
    kth = np.partition(lead, first - 1)[first - 1]
    rows = np.flatnonzero(lead <= kth)
    order = _stable_order([key[rows] for key in keys])
    return rows[order[:first]]


def order_table(
    table: pa.Table, orderings: Sequence[Any], offset: int = 0, limit: int | None = None
) -> pa.Table:
    """``table`` sorted by ``orderings``, then ``offset`` rows skipped and ``limit`` kept (the
    order pylance applies them in: sort first)."""
    end = None if limit is None else offset + limit
    order = sort_indices(table, orderings, end)[offset:end]
    if len(order) <= SLICED_TAKE_ROWS:  # (a take from a scan's hundreds of chunks joins them first)
        return (
            pa.concat_tables([table.slice(row, 1) for row in order.tolist()], promote_options="none")
            if len(order)
            else table.slice(0, 0)
        )
    return table.take(pa.array(order, pa.int64()))


#: Rows of a sorted result up to which they are sliced out of the scan's table one by one
#: (~2 us each) rather than taken (``take`` joined a 2M-row table's chunks first: 5.6 ms for ten).
SLICED_TAKE_ROWS = 256


def ordered_batches(table: pa.Table, batch_size: int) -> list[pa.RecordBatch]:
    """The sorted rows as pylance's sorted stream cuts them: ``batch_size`` rows a batch."""
    return [
        batch
        for start in range(0, table.num_rows, batch_size)
        for batch in table.slice(start, batch_size).combine_chunks().to_batches()
    ]


__all__ = ["checked_orderings", "order_table", "ordered_batches", "sort_indices"]
