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
