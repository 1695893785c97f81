"""Which rows an IVF search keeps: pylance's top-k heap, replayed step by step.

pylance 14 searches the probed partitions of a segment in probe order (nearest centroid first)
through one Rust ``std::collections::BinaryHeap`` of ``k`` (distance, row id) entries ordered by
distance alone. The first ``k`` rows are pushed; after that a row enters only when it is strictly
nearer than the heap's largest, which it replaces (``pop`` then ``push``). The k rows found are
then sorted by (distance, row id).

So when rows tie at the k-th distance, which of them survive depends on the heap's sift order:
neither the lowest nor the first row id. PQ codes of few sub-vectors tie often (two rows with the
same codes have the same distance), and a search that broke such ties its own way would return
other rows than pylance. This module replays the heap operation by operation, with the standard
library's sift rules:

* ``push`` appends and sifts up while the new entry is strictly larger than its parent;
* ``pop`` moves the last entry to the root, sifts that hole down to the bottom (always into the
  larger child, the right one when the two are equal), then sifts up from there.

Only rows that enter the heap cost Python steps: a partition's distances are screened in numpy
against the heap's current largest, in blocks that double in size (a row nearer than the k-th
so far is rarer the more rows were seen).
"""

from __future__ import annotations

import numpy as np

#: rows screened against the heap's largest at once, at first and at most
FIRST_BLOCK = 256
LARGEST_BLOCK = 65536


class ProbeHeap:
    """The ``k`` nearest rows of the partitions fed so far, kept as pylance's heap keeps them."""

    def __init__(self, k: int) -> None:
        self.k = k
        self._dist: list[float] = []
        self._ids: list[int] = []

    @property
    def full(self) -> bool:
        """Whether ``k`` rows were found (a row must now be strictly nearer than ``kth``)."""
        return len(self._dist) >= self.k

    @property
    def kth(self) -> float:
        """The largest distance held (infinite until the heap is full)."""
        return self._dist[0] if self.full and self._dist else float("inf")

    def feed(self, distances: np.ndarray, row_ids: np.ndarray) -> None:
        """Offer one partition's rows, in storage order.

        Args:
            distances: float32 distance of each row (no NaN).
            row_ids: uint64 row id of each row.
        """
        rows = len(distances)
        start = min(rows, self.k - len(self._dist)) if not self.full else 0
        for dist, row in zip(distances[:start].tolist(), row_ids[:start].tolist(), strict=True):
            self._dist.append(dist)
            self._ids.append(row)
            self._sift_up(len(self._dist) - 1)
        block = max(FIRST_BLOCK, self.k)
        while start < rows and self.k:
            part = distances[start : start + block]
            hits = np.flatnonzero(part < self._dist[0])
            if len(hits):
                for dist, row in zip(part[hits].tolist(), row_ids[start + hits].tolist(), strict=True):
                    if dist < self._dist[0]:
                        self._replace_largest(dist, row)
            start += len(part)
            block = min(block * 2, LARGEST_BLOCK)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, float32 distances) of the rows held, sorted by (distance, row id)."""
        ids = np.array(self._ids, np.uint64)
        dist = np.array(self._dist, np.float32)
        order = np.lexsort((ids, dist))
        return ids[order], dist[order]

    # -- the standard library's sift rules ---------------------------------------------------------

    def _sift_up(self, pos: int) -> None:
        dist, ids = self._dist, self._ids
        moving, moving_id = dist[pos], ids[pos]
        while pos > 0:
            parent = (pos - 1) // 2
            if moving <= dist[parent]:
                break
            dist[pos], ids[pos] = dist[parent], ids[parent]
            pos = parent
        dist[pos], ids[pos] = moving, moving_id

    def _replace_largest(self, new: float, new_id: int) -> None:
        """``pop`` (the largest) then ``push`` (the new row)."""
        dist, ids = self._dist, self._ids
        last, last_id = dist.pop(), ids.pop()
        if dist:
            end, pos, child = len(dist), 0, 1
            while child <= end - 2:
                child += dist[child] <= dist[child + 1]
                dist[pos], ids[pos] = dist[child], ids[child]
                pos, child = child, 2 * child + 1
            if child == end - 1:
                dist[pos], ids[pos] = dist[child], ids[child]
                pos = child
            dist[pos], ids[pos] = last, last_id
            self._sift_up(pos)
        dist.append(new)
        ids.append(new_id)
        self._sift_up(len(dist) - 1)
