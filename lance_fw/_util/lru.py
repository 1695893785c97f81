"""A small thread-safe least-recently-used cache: the one cache type of the kernel.

Why: several readers keep immutable things they parsed once (a data file's metadata, a deletion
vector, an opened index) so that the next query on the same version does not parse them again.
Each needs a bound (a dataset of many files must not grow memory without limit) and safety under
the scan's reader threads; one class gives both.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``max_entries`` values; the least recently used one is dropped first.

    With ``weigh`` (a value's size, e.g. its bytes), the values also weigh at most ``max_weight``
    in all: a cache of parsed tables that range from a few KiB to MiBs is then bounded by the
    memory it holds, not only by their number. A value heavier than ``max_weight`` is not kept.
    """

    def __init__(
        self,
        max_entries: int,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"an LruCache holds at least one entry, not {max_entries}")
        if (max_weight is None) != (weigh is None):
            raise ValueError("an LruCache bounded by weight needs both max_weight and weigh")
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._weigh = weigh
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def weight(self) -> int:
        """What the values held weigh in all (0 for a cache without ``weigh``)."""
        return self._weight

    def get(self, key: K) -> V | None:
        """The value cached under ``key`` (now the most recently used), or None."""
        with self._lock:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                return None
            return self._entries[key]

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        """The value cached under ``key``, or ``load()``'s, cached. ``load`` runs outside the lock:
        two threads missing the same key both load it (the values must be equal; the later one is
        kept), and a slow load never blocks readers of other keys.

        Raises:
            Whatever ``load`` raises; nothing is cached then.
        """
        with self._lock:
            try:
                self._entries.move_to_end(key)
                return self._entries[key]
            except KeyError:
                pass
        value = load()
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Cache ``value`` under ``key`` (replacing what was there), as the most recently used;
        the least recently used values are dropped until the bounds hold again."""
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._drop(key)
            if self.max_weight is not None and weight > self.max_weight:
                return
            self._entries[key] = value
            self._weights[key] = weight
            self._weight += weight
            while len(self._entries) > self.max_entries or (
                self.max_weight is not None and self._weight > self.max_weight
            ):
                self._drop(next(iter(self._entries)))

    def _drop(self, key: K) -> None:
        """Forget ``key`` (if held); the caller holds the lock."""
        if key in self._entries:
            del self._entries[key]
            self._weight -= self._weights.pop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weights.clear()
            self._weight = 0


__all__ = ["LruCache"]
