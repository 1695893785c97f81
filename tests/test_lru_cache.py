"""The kernel's one cache type (``lance_fw._util.lru.LruCache``): bounded by entries, and where a
weight is given, by what its values weigh in all (the chunk tables a take keeps range from a few
KiB to MiBs, so a count alone bounds nothing)."""

from __future__ import annotations

import pytest

from lance_fw._util.lru import LruCache


def test_least_recently_used_entry_goes_first():
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_weight_bounds_the_cache():
    cache: LruCache[str, bytes] = LruCache(100, max_weight=10, weigh=len)
    cache.put("a", b"xxxx")
    cache.put("b", b"yyyy")
    assert cache.weight == 8
    cache.put("c", b"zzzz")  # 12 > 10: the oldest goes
    assert cache.get("a") is None and cache.get("b") == b"yyyy" and cache.get("c") == b"zzzz"
    assert cache.weight == 8


def test_replacing_a_value_replaces_its_weight():
    cache: LruCache[str, bytes] = LruCache(100, max_weight=10, weigh=len)
    cache.put("a", b"xxxxxxxx")
    cache.put("a", b"xx")
    assert cache.weight == 2 and len(cache) == 1
    cache.put("b", b"yyyyyyyy")  # fits beside the lighter "a"
    assert cache.get("a") == b"xx" and cache.weight == 10


def test_a_value_heavier_than_the_bound_is_not_kept():
    cache: LruCache[str, bytes] = LruCache(100, max_weight=10, weigh=len)
    cache.put("a", b"xx")
    cache.put("big", b"x" * 11)
    assert cache.get("big") is None and cache.get("a") == b"xx" and cache.weight == 2
    cache.put("a", b"x" * 11)  # replaced by a value too heavy: the old one is gone too
    assert cache.get("a") is None and cache.weight == 0 and len(cache) == 0


def test_clear_forgets_the_weight():
    cache: LruCache[str, bytes] = LruCache(100, max_weight=10, weigh=len)
    cache.put("a", b"xxxx")
    cache.clear()
    assert cache.weight == 0 and len(cache) == 0
    cache.put("b", b"x" * 10)
    assert cache.get("b") == b"x" * 10


@pytest.mark.parametrize("kwargs", [{"max_weight": 10}, {"weigh": len}])
def test_weight_needs_both_its_bound_and_its_measure(kwargs):
    with pytest.raises(ValueError, match="max_weight and weigh"):
        LruCache(10, **kwargs)


def test_at_least_one_entry():
    with pytest.raises(ValueError, match="at least one entry"):
        LruCache(0)
