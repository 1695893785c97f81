"""The shared byte helpers: range coalescing (``io.storage``), range gathers, row addresses and
fragment readahead give exactly what the one-off code they replace gave."""

from __future__ import annotations

import numpy as np
import pytest

from lance_fw.io.storage import COALESCE_GAP, coalesce_ranges


def _coalesce_reference(ranges, gap):
    """The merge as first written (one pass over the ranges sorted by offset): the specification."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    merged = []
    for i in order:
        off, length = ranges[i]
        if merged and off <= merged[-1][0] + merged[-1][1] + gap:
            start, mlen, idx = merged[-1]
            merged[-1] = (start, max(mlen, off + length - start), idx + [i])
        else:
            merged.append((off, length, [i]))
    return merged


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("gap", [0, 16, COALESCE_GAP])
def test_coalesce_ranges_matches_the_one_pass_merge(seed, gap):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    offs = rng.integers(0, 1 << int(rng.integers(4, 22)), n)
    lens = rng.integers(0, 1 << int(rng.integers(1, 18)), n) * rng.integers(0, 2, n)  # zero-length ones too
    ranges = [(int(o), int(n_)) for o, n_ in zip(offs, lens)]
    ranges += ranges[: n // 5]  # duplicates: equal offsets keep input order
    assert coalesce_ranges(ranges, gap) == _coalesce_reference(ranges, gap)


def test_coalesce_ranges_edges():
    assert coalesce_ranges([]) == []
    assert coalesce_ranges([(5, 0)]) == [(5, 0, [0])]
    # a range inside an earlier long one does not shorten the request; adjacency merges at gap 0
    assert coalesce_ranges([(0, 100), (10, 5), (100, 1), (102, 1)], 0) == [(0, 101, [0, 1, 2]), (102, 1, [3])]
    for args in ([(0, 100), (10, 5), (100, 1), (102, 1)], [(7, 3), (0, 2)]):
        assert coalesce_ranges(args, 0) == _coalesce_reference(args, 0)


def test_coalesce_ranges_many_is_not_quadratic():
    """40k ranges (a take of 40k rows) merge in well under the old quadratic time; no timing
    assertion, only that the result is right for a size where the old code copied 800M list items."""
    ranges = [(i * 10, 8) for i in range(40_000)][::-1]
    (start, length, idx), = coalesce_ranges(ranges, 16)
    assert (start, length) == (0, 399_998) and idx == list(range(39_999, -1, -1))


def test_readahead_keeps_order_bound_and_closes():
    """Items come out in order; an item not yet reached holds at most ``depth`` batches; closing
    the consumer closes every producer started (no worker left blocked)."""
    import threading

    from lance_fw.query.scanner import readahead

    lock = threading.Lock()
    made: dict[int, int] = {}
    closed: list[int] = []

    def produce(item):
        try:
            for k in range(6):
                with lock:
                    made[item] = made.get(item, 0) + 1
                yield (item, k)
        finally:
            closed.append(item)

    assert list(readahead(list(range(7)), produce, ahead=3)) == [(i, k) for i in range(7) for k in range(6)]
    assert sorted(closed) == list(range(7))
    made.clear(), closed.clear()
    stream = readahead(list(range(7)), produce, ahead=3, depth=2)
    assert next(stream) == (0, 0)
    import time

    deadline = time.time() + 5
    while (made.get(1), made.get(2)) != (2, 2) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert set(made) == {0, 1, 2} and made[1] == made[2] == 2 and made[0] <= 3  # bounded, lazy
    stream.close()
    deadline = time.time() + 5
    while sorted(closed) != [0, 1, 2] and time.time() < deadline:
        time.sleep(0.01)
    assert sorted(closed) == [0, 1, 2]


def test_readahead_first_alone_starts_nothing_beside_the_first_batch():
    """``first_alone``: the first batch is produced by itself, on the consumer's thread, and
    nothing else starts until the consumer asks again; then the items go on as usual (in order,
    each started once); a first item without batches hands the role to the next; closing after
    the first batch closes its producer. Failed before: the first batch was produced beside the
    next items' (DuckDB's ``LIMIT 10`` waited for them)."""
    import threading
    import time

    from lance_fw.query.scanner import readahead

    lock = threading.Lock()
    made: list[tuple[int, int, str]] = []
    closed: list[int] = []

    def produce(item):
        try:
            for k in range(0 if item == 0 else 3):
                with lock:
                    made.append((item, k, threading.current_thread().name))
                yield (item, k)
        finally:
            closed.append(item)

    stream = readahead(list(range(5)), produce, ahead=3, first_alone=True)
    assert next(stream) == (1, 0)  # item 0 has no batches: item 1's first goes alone
    time.sleep(0.1)
    assert [(i, k) for i, k, _ in made] == [(1, 0)] and made[0][2] == threading.current_thread().name
    assert list(stream) == [(1, 1), (1, 2)] + [(i, k) for i in range(2, 5) for k in range(3)]
    assert sorted((i, k) for i, k, _ in made) == [(i, k) for i in range(1, 5) for k in range(3)]
    assert sorted(closed) == list(range(5))
    made.clear(), closed.clear()
    stream = readahead(list(range(1, 5)), produce, ahead=3, first_alone=True)
    assert next(stream) == (1, 0)
    stream.close()
    assert closed == [1] and [(i, k) for i, k, _ in made] == [(1, 0)]


def test_readahead_reuses_its_pool_and_a_nested_readahead_cannot_deadlock():
    """Scans share one pool per ``ahead`` (its threads outlive a scan); a producer that reads
    ahead itself, on one of those threads, gets a pool of its own: on the shared one, every worker
    would be an outer producer waiting on inner steps queued behind them."""
    import threading

    from lance_fw.query.scanner import readahead

    seen: set[str] = set()
    both_running = threading.Barrier(2, timeout=10)  # the first two outer steps hold both workers

    def inner(item):
        seen.add(threading.current_thread().name)
        yield item

    def outer(item):
        seen.add(threading.current_thread().name)
        if item < 2:
            both_running.wait()
        yield from readahead([(item, k) for k in range(4)], inner, ahead=2)

    done: list[list] = []
    runner = threading.Thread(target=lambda: done.append(list(readahead(list(range(6)), outer, ahead=2))))
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "nested readahead deadlocked"
    assert done == [[(i, k) for i in range(6) for k in range(4)]]
    outer_threads = {n for n in seen if "nested" not in n}
    assert outer_threads and all(n.startswith("lance_fw-readahead-2") for n in outer_threads)
    assert any("nested" in n for n in seen)
    before = {t.name for t in threading.enumerate()}
    assert list(readahead(list(range(6)), outer, ahead=2)) == done[0]
    after = {t.name for t in threading.enumerate() if t.name.startswith("lance_fw-readahead-2_")}
    assert after and after <= before  # the second scan ran on the same threads

@pytest.mark.parametrize("mean", [3, 200])  # short ranges: one index array; long ones: slices
def test_range_positions_and_gather_ranges_match_slicing(mean):
    from lance_fw.file.buffers import gather_ranges, range_positions

    rng = np.random.default_rng(mean)
    data = rng.integers(0, 256, 100_000).astype(np.uint8)
    lengths = rng.integers(0, 2 * mean, 300)
    starts = rng.integers(0, len(data) - 2 * mean, 300)
    expected = [np.arange(a, a + n) for a, n in zip(starts, lengths)]
    got = range_positions(starts, lengths)
    assert got.dtype == np.int64 and got.tolist() == np.concatenate(expected).tolist()
    assert gather_ranges(data, starts, lengths).tobytes() == b"".join(data[a:a + n].tobytes()
                                                                       for a, n in zip(starts, lengths))
    assert range_positions(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
    assert gather_ranges(data, starts[:0], lengths[:0]).dtype == np.uint8


@pytest.mark.parametrize("gap", [0, 1, 5, 400])  # dense ordered ranges (a mask of the span) and sparse ones
def test_gather_ranges_of_ordered_ranges_match_slicing(gap):
    from lance_fw.file.buffers import gather_ranges

    rng = np.random.default_rng(gap)
    lengths = rng.integers(0, 300, 5000)
    lengths[::7] = 0  # empty ranges, some starting where the one before ends
    gaps = rng.integers(0, gap + 1, 5000)
    starts = np.cumsum(gaps) + np.concatenate([[0], np.cumsum(lengths[:-1])])
    data = rng.integers(0, 256, int(starts[-1] + lengths[-1]) + 3).astype(np.uint8)
    want = b"".join(data[a:a + n].tobytes() for a, n in zip(starts, lengths))
    assert gather_ranges(data, starts, lengths).tobytes() == want


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.int64, np.uint16])
def test_gather_ranges_of_wider_items(dtype):
    """Ranges of wider items (a page's offset words, one range per chunk) keep their dtype and
    values, taken as ranges of their bytes."""
    from lance_fw.file import buffers

    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    lengths = rng.integers(0, 900, 3000)
    starts = np.cumsum(rng.integers(0, 3, 3000)) + np.concatenate([[0], np.cumsum(lengths[:-1])])
    data = rng.integers(0, np.iinfo(dtype).max, int(starts[-1] + lengths[-1]) + 2, dtype=dtype, endpoint=True)
    got = buffers.gather_ranges(data, starts, lengths)
    assert got.dtype == data.dtype
    assert np.array_equal(got, np.concatenate([data[a:a + n] for a, n in zip(starts, lengths)]))
    taken = buffers._ordered_take(data, starts, lengths)  # the byte-range take answered, not a fallback
    assert taken is not None and np.array_equal(taken, got)
    assert buffers._ordered_take(data, starts[::-1].copy(), lengths[::-1].copy()) is None  # out of order


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_pool_concatenate_matches_numpy(dtype):
    """Pieces joined into pool memory (large ones from pyarrow's pool) as ``np.concatenate`` joins
    them: values, dtype, numpy's result type for mixed pieces, no pieces."""
    from lance_fw.file import buffers

    rng = np.random.default_rng(7)
    for sizes in ([3, 0, 5], [buffers.POOL_BYTES, 17, 1 << 16]):  # under and over the pool size
        pieces = [rng.integers(0, 200, n).astype(dtype) for n in sizes]
        got = buffers.pool_concatenate(pieces)
        assert got.dtype == np.dtype(dtype) and np.array_equal(got, np.concatenate(pieces))
    mixed = [np.arange(3, dtype=np.uint8), np.arange(2, dtype=np.uint32)]
    assert buffers.pool_concatenate(mixed).dtype == np.concatenate(mixed).dtype
    assert buffers.pool_concatenate([], np.uint16).dtype == np.uint16
    assert buffers.pool_concatenate([], np.uint16).size == 0


@pytest.mark.parametrize("width", [0, 1, 4, 8])
def test_headed_lays_each_head_before_its_bytes(width):
    """``headed`` (full-zip pages: control word, length, bytes per value) against slicing."""
    from lance_fw.file.buffers import headed

    rng = np.random.default_rng(width)
    sizes = rng.integers(0, 40, 3000)
    sizes[::5] = 0  # values without bytes (nulls of a full-zip page)
    heads = rng.integers(0, 256, (3000, width)).astype(np.uint8)
    body = rng.integers(0, 256, int(sizes.sum()) + 7).astype(np.uint8)  # more bytes than used
    at = np.concatenate([[0], np.cumsum(sizes)])
    want = b"".join(heads[i].tobytes() + body[at[i]:at[i + 1]].tobytes() for i in range(3000))
    assert headed(heads, sizes, body).tobytes() == want
    assert headed(heads[:0], sizes[:0], body).tobytes() == b""
    with pytest.raises(ValueError, match="headed"):  # never reads past the bytes it was given
        headed(heads, sizes, body[: int(sizes.sum()) - 1])


def test_validity_bitmaps_and_fixed_bits():
    import pyarrow as pa

    from lance_fw.file.buffers import fixed_bits, validity_bitmap, validity_or_none

    valid = np.array([True, False, True] * 5)
    buf, nulls = validity_bitmap(valid)
    assert nulls == 5
    array = pa.Array.from_buffers(pa.int8(), 15, [buf, pa.py_buffer(bytes(15))], null_count=nulls)
    assert array.is_valid().to_pylist() == valid.tolist()
    assert validity_or_none(np.ones(4, bool)) == (None, 0) and validity_bitmap(np.ones(4, bool))[1] == 0
    assert [fixed_bits(t) for t in (pa.bool_(), pa.int16(), pa.binary(3), pa.string(), pa.list_(pa.int8(), 2))] == \
        [1, 16, 24, None, None]


def test_row_addresses_round_trip():
    from lance_fw.table.row_ids import address_fragments, address_offsets, row_addresses

    addresses = row_addresses(7, np.array([0, 5, 2**32 - 1]))
    assert addresses.dtype == np.uint64 and addresses.tolist() == [7 << 32, (7 << 32) | 5, (8 << 32) - 1]
    assert address_fragments(addresses).tolist() == [7, 7, 7] and address_offsets(addresses).tolist() == [0, 5, 2**32 - 1]
