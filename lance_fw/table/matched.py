"""The batches a late-materialised (filtered) fragment read hands out: the matching rows of a
probe, with the other fields fetched for them, cut where pylance's read batches end.

Apart from ``fragment``, which decides what to read, so that each module keeps to one job.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from lance_fw.file.buffers import true_bytes
from lance_fw.schema import LanceField


def matched_batches(
    fields: list[LanceField],
    filter_ids: list[int],
    probe: pa.RecordBatch,
    hits: np.ndarray,
    fetched: list[pa.Array],
    schema: pa.Schema,
    ranks: np.ndarray,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """The rows ``hits`` of a late-materialised read, in ``schema`` (``fields`` then the row columns
    asked for), one batch per window of ``batch_size`` that holds hits (``ranks``: each hit's rank
    among the rows the windows count; pylance filters each batch it reads and hands on what
    matches, so a filtered scan's batches end where the read batches end).

    The filter's columns come from ``probe``, the other fields from ``fetched`` (those fields'
    values at the hits, in ``fields`` order); the row columns asked for (``_rowid`` first) follow
    them in ``fetched``, or, where ``fetched`` holds none, come from ``probe`` (its filter columns,
    then ``_rowid`` and ``_rowaddr``: a filter naming either sees them on every row). A probe whose
    every row matches hands on its columns as they are."""
    every = len(hits) == probe.num_rows  # (hits are distinct rows of the probe)
    chosen = pa.array(hits)

    def at_hits(column: pa.Array) -> pa.Array:
        return column if every else column.take(chosen)

    others = [f.id for f in fields if f.id not in filter_ids]
    by_id = dict(zip(others, fetched))
    arrays = [
        at_hits(probe.column(filter_ids.index(f.id))) if f.id in filter_ids else by_id[f.id] for f in fields
    ]
    row_columns = fetched[len(others) :]
    arrays += row_columns or [at_hits(probe.column(name)) for name in schema.names[len(fields) :]]
    yield from window_slices(pa.RecordBatch.from_arrays(arrays, schema=schema), ranks, batch_size)


def dense_matched_batches(
    fields: list[LanceField],
    filter_ids: list[int],
    kept: list[pa.Array],
    mask: pa.BooleanArray,
    fetched: list[pa.Array],
    schema: pa.Schema,
    first_rank: int,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """``matched_batches`` for a probe of live rows most of which match, given the filter's
    ``mask`` over the probe instead of the matches' indices (``matcher.DenseMatches``): the
    fields of the filter's columns already filtered in ``kept`` (in ``fields`` order), the other
    fields' in ``fetched``, no row columns. ``first_rank``: the probe's first row's rank among
    the rows the windows count; a window's end is found by counting the mask's trues before it."""
    others = [f.id for f in fields if f.id not in filter_ids]
    by_id = dict(zip(others, fetched))
    in_filter = iter(kept)
    arrays = [next(in_filter) if f.id in filter_ids else by_id[f.id] for f in fields]
    out = pa.RecordBatch.from_arrays(arrays, schema=schema)
    if not len(mask):
        return
    starts = np.arange((first_rank // batch_size + 1) * batch_size - first_rank, len(mask), batch_size)
    # the trues of every window in one pass (a sum a window cost a call each, 32 a probe)
    trues = np.add.reduceat(true_bytes(mask).view(np.uint8), np.r_[0, starts], dtype=np.int64)
    lo = 0
    for hi in np.cumsum(trues).tolist():
        if hi > lo:  # (a window without matches)
            yield out.slice(lo, hi - lo)
        lo = hi


def window_slices(out: pa.RecordBatch, ranks: np.ndarray, batch_size: int) -> Iterator[pa.RecordBatch]:
    """``out`` cut into one batch per window of ``batch_size`` holding any of its rows, ``ranks``
    (ascending, one a row) placing each row. The cuts are searched for, one per window: a pass
    over every row's window (a division, a difference, its nonzeros) cost ~5 ms of a filtered
    2M-row scan that most rows pass."""
    first, last = int(ranks[0]) // batch_size, int(ranks[-1]) // batch_size
    if first == last:
        yield out
        return
    cuts = np.searchsorted(ranks, np.arange(first + 1, last + 1, dtype=np.int64) * batch_size)
    for lo, hi in itertools.pairwise([0, *cuts.tolist(), out.num_rows]):
        if hi > lo:  # (a window without rows of ``out``)
            yield out.slice(lo, hi - lo)
