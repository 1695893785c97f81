"""``_rowid`` / ``_rowaddr`` / ``_rowoffset`` asked for by name in ``take`` / ``_take_rows`` ``columns=``.

pylance lets ``columns=`` name these three hidden columns anywhere in the list; they come back in
the order asked, next to the stored columns. They are not stored: each is worked out from where
every taken row lies (fragment, physical offset), so the stored columns are taken as usual and
these are put in between. ``_rowaddr`` is ``fragment id << 32 | offset``; ``_rowid`` is the stable
row id where the dataset has them, else the address; ``_rowoffset`` is the row's position among
the version's live rows (what ``take`` takes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from lance_fw.table.deletion import live_rows
from lance_fw.table.row_ids import address_fragments, address_offsets, row_addresses
from lance_fw.table.snapshot import Snapshot

#: The hidden columns and their types as pylance returns them from ``take``
ROW_COLUMNS = {
    "_rowid": pa.field("_rowid", pa.uint64()),
    "_rowaddr": pa.field("_rowaddr", pa.uint64()),
    "_rowoffset": pa.field("_rowoffset", pa.uint64(), nullable=False),
}


def asks_for_row_columns(columns: object) -> bool:
    return isinstance(columns, (list, tuple)) and any(c in ROW_COLUMNS for c in columns)


def _locate(snapshot: Snapshot, wanted: np.ndarray, by_address: bool) -> dict[str, np.ndarray]:
    """The three hidden columns' values for each of ``wanted`` (addresses or live positions)."""
    n = len(wanted)
    out = {name: np.zeros(n, np.uint64) for name in ROW_COLUMNS}
    base = 0
    for frag in snapshot.fragments:
        live = live_rows(frag)
        if by_address:
            hit = np.flatnonzero(address_fragments(wanted) == frag.id)
        else:
            hit = np.flatnonzero((wanted >= base) & (wanted < base + live))
        if len(hit):
            reader = snapshot.fragment_reader(frag)
            try:
                if by_address:
                    offsets = address_offsets(wanted[hit]).astype(np.int64)
                    positions = base + np.searchsorted(reader.live_offsets(), offsets)
                else:
                    positions = wanted[hit]
                    offsets = reader.physical_of_live(positions - base).astype(np.int64)
                sequence = reader.row_ids
            finally:
                reader.close()
            addresses = row_addresses(frag.id, offsets)
            out["_rowaddr"][hit] = addresses
            out["_rowid"][hit] = addresses if sequence is None else sequence[offsets]
            out["_rowoffset"][hit] = positions
        base += live
    return out


def live_positions(snapshot: Snapshot, addresses: np.ndarray) -> np.ndarray:
    """The position among the live rows of each (live) row address."""
    return _locate(snapshot, addresses, by_address=True)["_rowoffset"]


def take_with_row_columns(
    snapshot: Snapshot,
    wanted: np.ndarray,
    columns: Sequence[str],
    by_address: bool,
    take_stored: Callable[[list[str]], pa.Table],
) -> pa.Table:
    """The rows at ``wanted`` with ``columns`` in the order asked: the stored ones from
    ``take_stored(names)``, the hidden ones worked out here."""
    stored_names = [c for c in columns if c not in ROW_COLUMNS]
    stored = take_stored(stored_names) if stored_names else None
    hidden = _locate(snapshot, wanted, by_address)
    arrays, fields = [], []
    for name in columns:
        if name in ROW_COLUMNS:
            arrays.append(pa.array(hidden[name], pa.uint64()))
            fields.append(ROW_COLUMNS[name])
        else:
            assert stored is not None
            arrays.append(stored.column(name))
            fields.append(stored.schema.field(name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


__all__ = ["ROW_COLUMNS", "asks_for_row_columns", "live_positions", "take_with_row_columns"]
