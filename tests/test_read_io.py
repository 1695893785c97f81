"""The read path's I/O shape: fragment readahead under thread races, and what a scan or take of an
``s3://`` dataset asks of the server (requests counted at s3fs's call, values checked against
pylance on the same bucket)."""

from __future__ import annotations

import collections
import concurrent.futures
import time

import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw._util.readahead import readahead
from lance_fw.errors import StorageError
from lance_fw.io.storage import resolve_storage


def test_readahead_survives_callbacks_running_after_the_consumer_wakes(monkeypatch):
    """``Future.result`` returns before the future's done-callbacks run; a consumer quick enough
    to ask again in that window once found its item's queue empty (IndexError under load)."""
    original = concurrent.futures.Future._invoke_callbacks

    def late_callbacks(self):
        time.sleep(0.02)
        original(self)

    monkeypatch.setattr(concurrent.futures.Future, "_invoke_callbacks", late_callbacks)

    def produce(i):
        for k in range(4):
            yield (i, k)

    assert list(readahead(list(range(3)), produce, ahead=2)) == [(i, k) for i in range(3) for k in range(4)]


class _Counted:
    """Counts the HTTP requests the S3 client sends, by method (at aiobotocore's HTTP session,
    which both botocore's calls and the presigned range GETs go through)."""

    def __init__(self, monkeypatch):
        from aiobotocore.httpsession import AIOHTTPSession

        self.calls: collections.Counter[str] = collections.Counter()
        original = AIOHTTPSession.send

        async def counted(session, request):
            self.calls[request.method] += 1
            return await original(session, request)

        monkeypatch.setattr(AIOHTTPSession, "send", counted)

    def take(self) -> dict[str, int]:
        out, self.calls = dict(self.calls), collections.Counter()
        return out


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "x": rng.random(rows),
            "name": pa.array([f"n{i % 977}" for i in range(rows)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 8, dtype=np.float32)), 8),
        }
    )


@pytest.fixture(scope="module")
def two_datasets(s3_server):
    """The same table written by pylance and by lance_fw, 4 fragments each, on one server."""
    import lance

    table = _table(20_000)
    opts = s3_server.storage_options
    uris = {"pylance": s3_server.new_bucket() + "/t.lance", "lance_fw": s3_server.new_bucket() + "/t.lance"}
    lance.write_dataset(table, uris["pylance"], max_rows_per_file=5_000, storage_options=opts)
    lance_fw.write_dataset(table, uris["lance_fw"], max_rows_per_file=5_000, storage_options=opts)
    return table, uris, opts


@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_scan_reads_each_fragment_in_one_round_and_reopens_from_memory(two_datasets, writer, monkeypatch):
    import lance

    table, uris, opts = two_datasets
    ds = lance_fw.dataset(uris[writer], storage_options=opts)
    counted = _Counted(monkeypatch)
    assert ds.to_table().equals(lance.dataset(uris[writer], storage_options=opts).to_table())
    first = counted.take()
    # no HEAD: a file opens with one suffix GET (its tail), then one coalesced GET of its pages
    assert first == {"GET": 4 * 2}, first
    assert ds.to_table(columns=["id", "vec"]).equals(table.select(["id", "vec"]))
    again = counted.take()
    assert again == {"GET": 4}, again  # the tails are remembered by the open dataset


def test_take_matches_pylance_and_reads_fragments_concurrently(two_datasets):
    import lance

    _, uris, opts = two_datasets
    rows = [3, 4_999, 5_000, 12_345, 19_999, 7, 5_000, 3]  # unsorted, repeats, across fragments
    for uri in uris.values():
        pl, fw = lance.dataset(uri, storage_options=opts), lance_fw.dataset(uri, storage_options=opts)
        assert fw.take(rows).equals(pl.take(rows))
        assert fw.take(rows, columns=["vec", "name"]).equals(pl.take(rows, columns=["vec", "name"]))
        assert fw.take(list(range(0, 20_000, 97))).equals(pl.take(list(range(0, 20_000, 97))))


def test_a_remembered_open_of_a_replaced_object_fails_then_reopens(s3_server):
    root = s3_server.new_bucket()
    writer = resolve_storage(root, s3_server.storage_options)
    reader_side = resolve_storage(root, s3_server.storage_options)  # another client: no shared memory
    writer.write_bytes(root + "/f", b"a" * 100_000)
    with reader_side.open_reader(root + "/f") as r:
        assert bytes(r.read_ranges([(0, 10)])[0]) == b"a" * 10
    writer.write_bytes(root + "/f", b"b" * 100_000)
    with reader_side.open_reader(root + "/f") as r:  # opened from memory: the old ETag
        with pytest.raises(StorageError, match="replaced after it was opened"):
            r.read_ranges([(0, 10)])
    with reader_side.open_reader(root + "/f") as r:  # forgotten after the failure: asks again
        assert bytes(r.read_ranges([(0, 10)])[0]) == b"b" * 10


@pytest.mark.parametrize("backend", ["local", "default"])
def test_read_into_lays_ranges_where_asked(tmp_path, backend, monkeypatch):
    """``RangeReader.read_into``: each range's bytes at its own place in the one buffer, ranges
    adjacent in the file or not, in any order; a range past the end of the file is a
    ``CorruptFileError`` naming it. ``default``: the base class's read-then-copy (an object
    store's path), through the same local reader with its override removed."""
    from lance_fw.errors import CorruptFileError
    from lance_fw.io.storage import RangeReader

    if backend == "default":
        from lance_fw_plugins import storage_local

        monkeypatch.setattr(storage_local.LocalReader, "read_into", RangeReader.read_into)
    payload = np.random.default_rng(3).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(payload)
    # (1.2 MB: a local read that large lands in a pyarrow buffer, whose memoryview is signed bytes)
    ranges = [(5_000, 1_000), (0, 5_000), (1_500_000, 1_200_000), (6_000, 0), (6_000, 12), (3_000_000, 1)]
    places, total = {}, 0
    for index in (3, 1, 0, 4, 2, 5):  # laid out in another order than asked or stored
        places[index] = total
        total += ranges[index][1]
    at = [places[i] for i in range(len(ranges))]
    out = np.zeros(total + 16, np.uint8)
    with resolve_storage(str(tmp_path)).open_reader(str(path)) as reader:
        reader.read_into(ranges, memoryview(out), at)
        for (off, length), where in zip(ranges, at):
            assert out[where : where + length].tobytes() == payload[off : off + length]
        assert not out[total:].any()
        with pytest.raises(CorruptFileError, match="f.bin"):
            reader.read_into([(len(payload) - 10, 20)], memoryview(out), [0])


def test_joined_bytes_views_adjacent_pieces_and_copies_others():
    """``take.joined_bytes``: pieces lying end to end in one buffer (a run's pages read by
    ``_read_run``) come back as a view of it; pieces with a gap, out of order or of other buffers
    come back copied, with the same bytes."""
    from lance_fw_plugins.encodings_v2_1.take import joined_bytes

    base = np.arange(1_000, dtype=np.uint32).view(np.uint8)
    view = memoryview(base)
    adjacent = [view[100:200], view[200:200], view[200:1_000], view[1_000:1_004]]
    joined = joined_bytes(adjacent)
    assert np.shares_memory(joined, base) and joined.tobytes() == base[100:1_004].tobytes()
    for pieces in (
        [view[100:200], view[201:300]],  # a gap
        [view[200:300], view[100:200]],  # out of order
        [view[100:200], memoryview(base.copy())[200:300]],  # another buffer
        [view[100:200], bytes(base[200:300])],
    ):
        joined = joined_bytes(pieces)
        assert not np.shares_memory(joined, base)
        assert joined.tobytes() == b"".join(bytes(p) for p in pieces)


def test_local_read_into_of_more_adjacent_ranges_than_one_preadv_takes(tmp_path):
    """More adjacent ranges than ``IOV_MAX`` buffers: read in several ``os.preadv`` calls, each
    range still where asked (laid out in reverse, so that no call's buffers are contiguous)."""
    from lance_fw_plugins.storage_local import IOV_MAX

    count = 2 * IOV_MAX + 7
    payload = np.random.default_rng(5).integers(0, 256, count * 10, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(payload)
    ranges = [(10 * i, 10) for i in range(count)]
    at = [10 * (count - 1 - i) for i in range(count)]
    out = np.zeros(count * 10, np.uint8)
    with resolve_storage(str(tmp_path)).open_reader(str(path)) as reader:
        reader.read_into(ranges, memoryview(out), at)
    assert out.reshape(count, 10)[::-1].tobytes() == payload


def test_local_read_into_bridges_small_gaps_in_one_preadv(tmp_path, monkeypatch):
    """Ranges at most ``LOCAL_COALESCE_GAP`` apart are read in one ``os.preadv`` (the bytes between them
    into scratch, never into ``out``); wider gaps, overlapping ranges and more buffers than
    ``IOV_MAX`` start new calls. Every range's bytes land where asked, and nothing else does."""
    import os

    from lance_fw_plugins.storage_local import IOV_MAX, LOCAL_COALESCE_GAP

    payload = np.random.default_rng(11).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(payload)
    calls: list[int] = []
    original = os.preadv

    def counting(fd, views, offset, *rest):
        calls.append(len(views))
        return original(fd, views, offset, *rest)

    monkeypatch.setattr(os, "preadv", counting)

    def read(ranges):
        at = list(np.cumsum([0] + [length for _, length in ranges[:-1]]))
        total = sum(length for _, length in ranges)
        out = np.zeros(total + 64, np.uint8)
        calls.clear()
        with resolve_storage(str(tmp_path)).open_reader(str(path)) as reader:
            reader.read_into(ranges, memoryview(out), at)
        for (off, length), where in zip(ranges, at):
            assert out[where : where + length].tobytes() == payload[off : off + length]
        assert not out[total:].any()
        return list(calls)

    # a page's 32-byte buffer padded to 64, its next buffer, the next page right after it
    assert read([(0, 32), (64, 21_632), (21_696, 32), (21_760, 64_640)]) == [6]  # 2 gaps
    assert read([(0, 10), (10 + LOCAL_COALESCE_GAP, 10)]) == [3]  # a gap of LOCAL_COALESCE_GAP: bridged
    assert len(read([(0, 10), (11 + LOCAL_COALESCE_GAP, 10)])) == 2  # one byte more: two calls
    assert len(read([(0, 100), (50, 100)])) == 2  # overlapping: never bridged
    many = [(40 * i, 10) for i in range(IOV_MAX + 3)]  # each with a gap: two buffers a range
    counts = read(many)
    assert all(n <= IOV_MAX for n in counts) and len(counts) == 3
