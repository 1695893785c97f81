"""Sets of row addresses that an index plan combines, held as the rows in the set or as the rows
of the plan's universe *not* in it.

Why: a ``NOT`` over an index answer (``id != k``, ``NOT (x < 10)``) is nearly every row of the
fragments the indices cover. Built as a list, it cost an array of every row address (2M rows:
~20 ms to make, ~20 ms more to take the few matches out of it) before a count or a scan could
start, where pylance counts it from the index alone (0.3 ms). Held as its complement, a ``NOT``
costs nothing, ``AND`` / ``OR`` work on the small sides, and the rows are listed only per
fragment and only when a scan reads that fragment (``IndexPlan.candidates``), or counted as the
fragment's rows less the complement (``IndexPlan.excluded``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lance_fw._util import sets

_NO_ROWS = np.zeros(0, np.uint64)


@dataclass(frozen=True)
class AddressSet:
    """``values``: sorted, distinct row addresses; ``inverted``: the set is every row of the
    universe (the fragments the plan covers) except ``values``, rather than ``values``."""

    values: np.ndarray
    inverted: bool = False

    @classmethod
    def of(cls, addresses: np.ndarray) -> AddressSet:
        """The set of ``addresses`` (any order, repeats allowed)."""
        return cls(sets.unique(np.asarray(addresses, np.uint64)))

    @classmethod
    def everything(cls) -> AddressSet:
        """Every row of the universe."""
        return cls(_NO_ROWS, inverted=True)

    def __invert__(self) -> AddressSet:
        return AddressSet(self.values, not self.inverted)

    def __and__(self, other: AddressSet) -> AddressSet:
        if not self.inverted and not other.inverted:
            return AddressSet(sets.intersection(self.values, other.values))
        if self.inverted and other.inverted:  # neither excluded set: the union of the exclusions
            return AddressSet(sets.union(self.values, other.values), inverted=True)
        kept, dropped = (other, self) if self.inverted else (self, other)
        return AddressSet(sets.difference(kept.values, dropped.values))

    def __or__(self, other: AddressSet) -> AddressSet:
        return ~(~self & ~other)  # (De Morgan: the work happens on the sets as held)

    def __sub__(self, other: AddressSet) -> AddressSet:
        return self & ~other
