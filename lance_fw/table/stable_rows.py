"""Stable row ids to row addresses: what an index (scalar or vector) built on a dataset with stable
row ids answers in, and what ``_take_rows`` is given there.

With the feature, a fragment stores the ids of its physical rows (``row_ids.py``); an index stores
those ids, so a row moved by an update or a compaction keeps its entry. Mapping ids back to the
rows of this version needs every live row of the fragments concerned, built once per version and
set of fragments (``Snapshot.cache``): a scan that consults an index per query would otherwise
read every fragment's sequence each time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lance_fw._util import sets
from lance_fw.table.row_ids import address_fragments, address_offsets, row_addresses

if TYPE_CHECKING:
    from lance_fw.table.snapshot import Snapshot


@dataclass(frozen=True)
class StableRows:
    """The live rows of some fragments: their stable ids, sorted, and each id's row address."""

    ids: np.ndarray  # uint64, sorted
    addresses: np.ndarray  # uint64, the address of ids[i]

    @staticmethod
    def of(snapshot: Snapshot, fragment_ids: Collection[int] | None = None) -> StableRows:
        """The live rows of the version's fragments (those of ``fragment_ids`` only, when given),
        cached on the version. A fragment without a sequence (no stable ids) has its addresses
        as ids."""
        key = None if fragment_ids is None else frozenset(fragment_ids)
        return snapshot.cache.stable_rows.get_or_load(key, lambda: StableRows._build(snapshot, key))

    @staticmethod
    def _build(snapshot: Snapshot, fragment_ids: frozenset[int] | None) -> StableRows:
        ids, addresses = [], []
        for frag in snapshot.fragments:
            if fragment_ids is not None and frag.id not in fragment_ids:
                continue
            reader = snapshot.fragment_reader(frag)
            offsets = reader.live_offsets()
            sequence = reader.row_ids
            frag_addresses = row_addresses(frag.id, offsets).astype(np.uint64)
            ids.append(frag_addresses if sequence is None else sequence[offsets].astype(np.uint64))
            addresses.append(frag_addresses)
        if not ids:
            return StableRows(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
        all_ids, all_addresses = np.concatenate(ids), np.concatenate(addresses)
        order = np.argsort(all_ids, kind="stable")
        return StableRows(all_ids[order], all_addresses[order])

    def address_of(self, ids: np.ndarray) -> np.ndarray:
        """Addresses of ``ids``, every one a live row here (the caller checked, ``allowed``)."""
        return self.addresses[np.searchsorted(self.ids, ids)]

    def found(self, ids: np.ndarray) -> np.ndarray:
        """Addresses of those of ``ids`` that are live rows here, in the order asked (an id of a
        deleted row, or of a row outside these fragments, gives nothing)."""
        return self.lookup(ids)[1]

    def lookup(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``ids`` are live rows here (a bool mask), and those rows' addresses."""
        if not len(self.ids):
            return np.zeros(len(ids), bool), np.zeros(0, np.uint64)
        pos = np.searchsorted(self.ids, ids).clip(0, len(self.ids) - 1)
        live = self.ids[pos] == ids
        return live, self.addresses[pos[live]]

    def allowed(self, passing: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray]:
        """A vector index's row filter: ids that are live rows here (and in ``passing``, the ids
        a prefilter let through, when given)."""

        def allowed(ids: np.ndarray) -> np.ndarray:
            keep = sets.isin(ids, self.ids)
            if passing is not None:
                keep &= sets.isin(ids, passing)
            return keep

        return allowed


def row_ids_at(snapshot: Snapshot, addresses: np.ndarray) -> np.ndarray:
    """The ``_rowid`` of each row address: its stable id where its fragment has them, else the
    address itself."""
    out = np.array(addresses, np.uint64)
    fragments = address_fragments(out)
    for frag in snapshot.fragments:
        hit = np.flatnonzero(fragments == frag.id)
        if len(hit):
            sequence = snapshot.fragment_reader(frag).row_ids
            if sequence is not None:
                out[hit] = sequence[address_offsets(out[hit]).astype(np.int64)]
    return out
