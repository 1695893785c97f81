"""Taking rows from a table snapshot: by position over the live rows, by row address, or by stable
row id (looked up in the fragments' row-id sequences).

Why in table/: ``LanceDataset.take`` / ``_take_rows`` (api/) only check arguments and apply
projections; the per-fragment gather is table logic that other callers (a SQL front end, an index)
need without a ``LanceDataset``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from lance_fw._util import sets
from lance_fw.errors import InvalidArgumentError
from lance_fw.schema import LanceField
from lance_fw.table.deletion import live_rows
from lance_fw.table.fragment import FragmentReader
from lance_fw.table.row_ids import address_fragments, address_offsets
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.stable_rows import StableRows

#: Concurrent (fragment, column) gathers per fragment the storage reads at once.
TAKE_TASKS_PER_READAHEAD = 4


def live_addresses(snapshot: Snapshot, addresses: np.ndarray) -> np.ndarray:
    """``addresses`` without those of deleted rows, order kept."""
    keep = np.ones(len(addresses), bool)
    for frag in snapshot.fragments:
        if not frag.HasField("deletion_file"):
            continue
        hit = np.flatnonzero(address_fragments(addresses) == frag.id)
        if len(hit):
            deleted = snapshot.fragment_reader(frag).deleted
            keep[hit] = ~sets.isin(address_offsets(addresses[hit]).astype(np.int64), deleted)
    return addresses[keep]


def addresses_of(snapshot: Snapshot, row_ids: np.ndarray) -> np.ndarray:
    """Row addresses of the live rows with these stable ids, in the order asked."""
    return StableRows.of(snapshot).found(row_ids)


def take(snapshot: Snapshot, wanted: np.ndarray, columns: list[str] | None, by_address: bool) -> pa.Table:
    """Rows of ``columns`` at ``wanted``: row addresses (``by_address``) or positions over the live
    rows, in the order asked (repeats allowed).

    On a storage that reads several fragments at once (``Storage.default_readahead``: object
    stores) every (fragment, column) is gathered concurrently: each is a chain of dependent range
    reads (page metadata, then chunks), and one after another they cost a round trip each."""
    fields = snapshot.fields(columns)
    schema = pa.schema([f.to_arrow() for f in fields])
    # reader, distinct offsets, inverse (None: the offsets asked were already sorted and distinct)
    jobs: list[tuple[FragmentReader, np.ndarray, np.ndarray | None]] = []
    order = []
    base = 0
    try:
        for frag in snapshot.fragments:
            reader = snapshot.fragment_reader(frag)
            jobs.append((reader, np.zeros(0, np.int64), None))
            if by_address:
                hit = np.flatnonzero(address_fragments(wanted) == frag.id)
                offsets = address_offsets(wanted[hit]).astype(np.int64)
                if len(offsets) and offsets.max() >= frag.physical_rows:
                    raise InvalidArgumentError(
                        f"_take_rows: row {int(offsets.max())} of fragment {frag.id} asked; "
                        f"it has {frag.physical_rows} rows"
                    )
            else:
                live = live_rows(frag)
                hit = np.flatnonzero((wanted >= base) & (wanted < base + live))
                offsets = reader.physical_of_live(wanted[hit] - base)
                base += live
            if not len(hit):
                continue
            jobs[-1] = (reader, *_distinct(offsets))
            order.append(hit)
        parts = _gather(
            [(r, u, i) for r, u, i in jobs if len(u)], fields, schema, snapshot.storage.default_readahead
        )
    finally:
        for reader, _, _ in jobs:
            reader.close()
    if not parts:
        return schema.empty_table()
    return _in_request_order(parts, np.argsort(np.concatenate(order), kind="stable"))


def _distinct(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``offsets`` sorted without repeats, and where each offset asked lies among them (None
    when they already were: a take of sorted rows, the usual case, then skips Arrow's ``take``
    of every fragment's columns, ~30 us each)."""
    if _ascending(offsets):
        return offsets, None
    return np.unique(offsets, return_inverse=True)


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` strictly increase."""
    return len(values) < 2 or bool((values[1:] > values[:-1]).all())


def _gather(
    jobs: list[tuple[FragmentReader, np.ndarray, np.ndarray | None]],
    fields: list[LanceField],
    schema: pa.Schema,
    parallel: int,
) -> list[pa.Table]:
    """Each job's rows (distinct offsets, then ``inverse`` restores repeats and order) as a table."""

    def one(job: tuple[FragmentReader, np.ndarray, np.ndarray | None], field: LanceField) -> pa.Array:
        return job[0].take_physical([field], job[1])[0]

    tasks = [(job, f) for job in jobs for f in fields]
    if parallel > 0 and len(tasks) > 1:
        workers = min(len(tasks), parallel * TAKE_TASKS_PER_READAHEAD)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lance_fw-take") as pool:
            # first every file's small buffers, one round per file (this also opens each file
            # once, before the tasks could race to), then each (fragment, column) reads its chunks
            list(pool.map(lambda job: job[0].prefetch_small_buffers(fields, job[1]), jobs))
            arrays = list(pool.map(lambda t: one(*t), tasks))
    else:
        arrays = [one(job, f) for job, f in tasks]
    width = len(fields)
    tables = [
        pa.Table.from_arrays(arrays[k * width : (k + 1) * width], schema=schema) for k in range(len(jobs))
    ]
    return [table if job[2] is None else table.take(pa.array(job[2])) for table, job in zip(tables, jobs)]


def _in_request_order(parts: list[pa.Table], order: np.ndarray) -> pa.Table:
    """Row ``order[i]`` of the parts laid end to end, for each i. One ``take`` over all parts needs
    their dictionaries unified, which Arrow cannot do for dictionaries holding a null (2.0 files
    store one); then each run of rows from one part is taken from that part alone. Rows asked
    in order (``order`` 0, 1, ...) are the parts joined, one chunk per column as a ``take``'s."""
    if _ascending(order):  # a permutation of 0..n-1 that rises: the identity
        joined = pa.concat_tables(parts)
        try:
            return joined.combine_chunks()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return joined  # dictionaries Arrow cannot unify: one chunk per part, as taken run by run
    try:
        return pa.concat_tables(parts).take(pa.array(order))
    except pa.ArrowInvalid:
        if len(parts) < 2:
            raise
    sizes = np.array([p.num_rows for p in parts])
    part_of = np.repeat(np.arange(len(parts)), sizes)[order]
    local = order - np.concatenate([[0], np.cumsum(sizes)[:-1]])[part_of]
    runs = np.split(np.arange(len(order)), np.flatnonzero(np.diff(part_of)) + 1)
    return pa.concat_tables([parts[part_of[r[0]]].take(pa.array(local[r])) for r in runs])
