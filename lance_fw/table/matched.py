"""The batches a late-materialised (filtered) fragment read hands out: the matching rows of a
probe, with the other fields fetched for them, cut where pylance's read batches end.

Apart from ``fragment``, which decides what to read, so that each module keeps to one job.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from lance_fw.schema import LanceField


def matched_batches(
    fields: list[LanceField],
    filter_ids: list[int],
    probe: pa.RecordBatch,
    hits: np.ndarray,
    fetched: list[pa.Array],
    schema: pa.Schema,
    windows: np.ndarray,
) -> Iterator[pa.RecordBatch]:
    """The rows ``hits`` of a late-materialised read, in ``schema`` (``fields`` then the row columns
    asked for), one batch per run of equal ``windows`` (each hit's window of ``batch_size`` live
    rows: pylance filters each batch it reads and hands on what matches, so a filtered scan's
    batches end where the read batches end). The filter's columns and the row columns come from
    ``probe`` (filter columns, then ``_rowid`` and ``_rowaddr`` when the read asks for either or
    the filter names one), the other fields from ``fetched`` (those fields' values at the hits, in
    ``fields`` order)."""
    chosen = pa.array(hits)
    by_id = dict(zip((f.id for f in fields if f.id not in filter_ids), fetched))
    arrays = [
        probe.column(filter_ids.index(f.id)).take(chosen) if f.id in filter_ids else by_id[f.id]
        for f in fields
    ]
    arrays += [probe.column(name).take(chosen) for name in schema.names[len(fields) :]]
    yield from window_slices(pa.RecordBatch.from_arrays(arrays, schema=schema), windows)


def window_slices(out: pa.RecordBatch, windows: np.ndarray) -> Iterator[pa.RecordBatch]:
    """``out`` cut where its rows' ``windows`` (ascending) change: one batch per window."""
    cuts = [0, *(np.flatnonzero(np.diff(windows)) + 1).tolist(), out.num_rows]
    for lo, hi in itertools.pairwise(cuts):
        yield out.slice(lo, hi - lo)
