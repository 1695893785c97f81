"""``lance_fw._util.sets`` (sorted-set operations used instead of numpy's hash-based ones) against
numpy's own functions, the oracle for set semantics: the same values, order and dtype, over
random integer arrays of every width, with repeats, empties, and row addresses above 2**53
where a uint64 array meets an int64 one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lance_fw._util import sets

DTYPES = [np.int32, np.int64, np.uint32, np.uint64, np.uint8]


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    high = draw(st.sampled_from([3, 300, 70_000, int(np.iinfo(dtype).max)]))
    elements = st.integers(0, min(high, int(np.iinfo(dtype).max)))
    shape = st.integers(0, 400)
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    b = draw(hnp.arrays(dtype, shape, elements=elements))
    return a, b


def _same(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.dtype == theirs.dtype
    assert np.array_equal(ours, theirs)


@settings(max_examples=200, deadline=None)
@given(pairs())
def test_like_numpy(pair):
    a, b = pair
    _same(sets.unique(a), np.unique(a))
    _same(sets.union(a, b), np.union1d(a, b))
    _same(sets.isin(a, b), np.isin(a, b))
    _same(sets.difference(a, b), np.setdiff1d(a, b))
    _same(sets.intersection(a, b), np.intersect1d(a, b))
    _same(sets.first_indices(a), np.unique(a, return_index=True)[1])


def test_uint64_addresses_against_int64_offsets():
    """Row addresses above 2**53 are never rounded: numpy would compare uint64 with int64 as
    float64, where 2**60 + 1 equals 2**60 + 2."""
    addresses = np.array([2**60 + 1, 2**60 + 2, 5, 2**63 + 7], np.uint64)
    found = np.array([2**60 + 2, -1, 5], np.int64)
    assert sets.isin(addresses, found).tolist() == [False, True, True, False]
    offsets = np.array([-3, 2**60 + 1, 7], np.int64)
    assert sets.isin(offsets, np.array([2**60 + 1, 2**63 + 7], np.uint64)).tolist() == [False, True, False]


@pytest.mark.parametrize("n", [0, 1, 5000, 300_000])
def test_large_arrays(n):
    """Past 4096 values (numpy's hash path) and with many repeats."""
    rng = np.random.default_rng(n)
    a = rng.integers(0, max(n // 3, 1), n).astype(np.int64)
    b = rng.integers(0, max(n // 2, 1), n // 2).astype(np.int64)
    _same(sets.unique(a), np.unique(a))
    _same(sets.union(a, b), np.union1d(a, b))
    _same(sets.isin(a, b), np.isin(a, b))
    _same(sets.difference(a, b), np.setdiff1d(a, b))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**40),
    st.integers(0, 3000),
    st.lists(st.integers(-5, 3100), max_size=200),
    st.sampled_from([np.int64, np.uint64]),
)
def test_range_without_like_setdiff1d(base, length, removed, dtype):
    """A range less some values (deleted offsets, row-id holes: any order, repeats, values outside
    the range), as np.setdiff1d gives it."""
    start, stop = base, base + length
    gone = np.array([base + r for r in removed if base + r >= 0], dtype=dtype)
    _same(sets.range_without(start, stop, gone, dtype), np.setdiff1d(np.arange(start, stop, dtype=dtype), gone))
