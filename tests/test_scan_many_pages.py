"""Scans over many small pages of a column equal pylance's.

pylance, given a stream of small batches, cuts a page per batch: a column of tens to hundreds of
pages of a few KiB to a few hundred KiB, each FSST page with its own symbol table and each
dictionary page with its own dictionary, the last small page often stored plainly. A scan reads
runs of such pages together (``LanceFileReader._decode_together``, the page decoder's
``decode_pages``; FSST pages through ``fsst.decompress_tables``). These tests check every row,
the schema and the row order against pylance's scan of the same dataset, through whole scans,
other batch sizes, row ranges (offset / limit), filters and DuckDB.
"""

from __future__ import annotations

import threading
import time

import lance
import pyarrow as pa
import pytest
from conftest import assert_tables_equal
from test_take_many_pages import BATCH, _table

import lance_fw
import lance_fw.duckdb as fw_duckdb

#: Rows of the dataset: one file of 300,000 rows written from 1024-row batches (pylance cuts
#: 20 to 300 pages a column there; with fewer rows a file it cuts a few) and one of 50,000.
ROWS = 350_000
FIRST_FILE_ROWS = 300_000


def _pylance_from_batches(uri: str, version: str) -> None:
    table = _table(ROWS)
    for mode, part in (
        ("create", table.slice(0, FIRST_FILE_ROWS)),
        ("append", table.slice(FIRST_FILE_ROWS)),
    ):
        reader = pa.RecordBatchReader.from_batches(table.schema, part.to_batches(max_chunksize=BATCH))
        lance.write_dataset(reader, uri, mode=mode, data_storage_version=version)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_scans_of_pylance_pages_cut_per_batch(uri, version):
    _pylance_from_batches(uri, version)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    assert_tables_equal(pl.to_table(), fw.to_table())
    for columns in (["name"], ["id", "value"], ["country", "maybe"], ["note", "vector"]):
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns))
    for batch_size in (1_000, 7_777, 70_000):
        got = list(fw.to_batches(columns=["name", "maybe_f"], batch_size=batch_size))
        want = list(pl.to_batches(columns=["name", "maybe_f"], batch_size=batch_size))
        assert [b.num_rows for b in got] == [b.num_rows for b in want]
        assert_tables_equal(pa.Table.from_batches(want), pa.Table.from_batches(got))
    for offset, limit in ((0, 10), (BATCH - 3, 5), (33_333, 140_000), (299_990, 20), (ROWS - 7, 100)):
        assert_tables_equal(
            pl.to_table(offset=offset, limit=limit), fw.to_table(offset=offset, limit=limit)
        )
    for where in ("category < 5", "name LIKE 'item-00%'", "maybe IS NULL AND id > 260000"):
        assert_tables_equal(pl.to_table(filter=where), fw.to_table(filter=where))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_scans_of_small_lance_fw_pages(uri, version):
    """lance_fw's writer with small pages: the same columns read as runs of dozens of pages."""
    lance_fw.write_dataset(_table(ROWS), uri, data_storage_version=version, max_page_bytes=64 * 1024)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    assert_tables_equal(pl.to_table(), fw.to_table())
    assert_tables_equal(
        pl.to_table(columns=["name", "value"], offset=12_345, limit=54_321),
        fw.to_table(columns=["name", "value"], offset=12_345, limit=54_321),
    )


def test_duckdb_over_pylance_pages_cut_per_batch(uri):
    import duckdb

    from lance_fw import duckdb as fw_duckdb

    _pylance_from_batches(uri, "2.2")
    sql = (
        "SELECT country, count(*) AS n, min(value) AS lo, max(value) AS hi, max(name) AS m,"
        " count(maybe) AS k FROM {t} GROUP BY country ORDER BY country"
    )
    con = duckdb.connect()
    con.register("pl", lance.dataset(uri))
    want = con.sql(sql.format(t="pl")).to_arrow_table()
    got = fw_duckdb.connect().sql(sql.format(t=f"lance_scan('{uri}')")).to_arrow_table()
    assert want.num_rows == 5
    assert_tables_equal(want, got)


def test_scan_decodes_runs_of_pages(uri):
    """What the tests above rely on: each column's pages are many, and a scan decodes them in
    runs (the page decoder's ``decode_pages`` answering for every column), not page by page; and
    FSST runs decode with one table per page (tables that differ: one table for all would fail
    the comparisons above)."""
    from test_take_many_pages import _mini_block

    from lance_fw.file import fsst
    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import resolve_storage
    from lance_fw_plugins.encodings_v2_1 import take_pages as page_take

    _pylance_from_batches(uri, "2.2")
    fragment = lance.dataset(uri).get_fragments()[0]
    path = f"{uri}/data/{fragment.data_files()[0].path}"
    file = LanceFileReader(resolve_storage(path), path)
    assert min(len(column.pages) for column in file.tail.columns) >= 20
    name_column = file.tail.columns[list(_table(1).column_names).index("name")]
    tables = {bytes(_mini_block(p).value_compression.fsst.symbol_table) for p in name_column.pages}
    assert len(tables) > 10, "the name column's pages should each have their own FSST table"

    runs: list[tuple[int, bool]] = []
    tables_runs: list[int] = []
    original, original_tables = page_take.mini_block_pages_rows, fsst.decompress_tables

    def counting(page_layouts, pages, rows, **kwargs):
        out = original(page_layouts, pages, rows, **kwargs)
        if rows is None:
            runs.append((len(pages), out is not None))
        return out

    def counting_tables(symbol_tables, *args):
        tables_runs.append(len(symbol_tables))
        return original_tables(symbol_tables, *args)

    page_take.mini_block_pages_rows, fsst.decompress_tables = counting, counting_tables
    try:
        assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    finally:
        page_take.mini_block_pages_rows, fsst.decompress_tables = original, original_tables
    assert runs and all(done for _, done in runs), runs
    assert max(n for n, _ in runs) >= 10, runs
    assert max(tables_runs) >= 10, tables_runs



def test_runs_of_64_bit_pages_unpack_without_copies(uri, monkeypatch):
    """A run of pages is read into one buffer, every page's small chunk table first and then every
    page's chunk data; that data must start on a word boundary, or each 64-bit unpack copies the
    whole run to realign it (``chunked._inline_words``' fallback, timed at ~6% of a 2-column
    scan of pylance's streamed pages, whose chunk tables summed to 4 bytes past a word). Pages
    ending in a short block are unpacked segment by segment into place (``_unpacked_end_to_end``),
    not into a padded grid whose values are then copied out (``_without_padding``)."""
    from lance_fw_plugins.encodings_v2_1 import chunked

    _pylance_from_batches(uri, "2.2")
    realigned: list[int] = []
    segments: list[int] = []
    cut: list[int] = []
    original, original_segments, original_cut = (
        chunked.gather_ranges,
        chunked._unpacked_end_to_end,
        chunked.pool_concatenate,
    )

    def counting(data, starts, lengths):
        realigned.append(len(data))
        return original(data, starts, lengths)

    def counting_segments(words, packed, widths, t, counts, short):
        segments.append(len(short) + 1)
        return original_segments(words, packed, widths, t, counts, short)

    def counting_cut(pieces):
        cut.append(len(pieces))
        return original_cut(pieces)

    monkeypatch.setattr(chunked, "gather_ranges", counting)
    monkeypatch.setattr(chunked, "_unpacked_end_to_end", counting_segments)
    monkeypatch.setattr(chunked, "pool_concatenate", counting_cut)
    columns = ["id", "value"]
    assert_tables_equal(lance.dataset(uri).to_table(columns=columns), lance_fw.dataset(uri).to_table(columns=columns))
    assert not realigned, f"{len(realigned)} runs copied to realign their chunk data"
    # 10,000-row batches: pylance cuts pages of 40,000 to 140,000 rows, each ending in a short block
    long_pages = f"{uri}-10k"
    table = _table(ROWS).select(columns)
    lance.write_dataset(
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=10_000)),
        long_pages,
        data_storage_version="2.2",
    )
    for batch_size in (None, 33_333):
        options = {} if batch_size is None else {"batch_size": batch_size}
        want = pa.Table.from_batches(list(lance.dataset(long_pages).to_batches(**options)))
        got = pa.Table.from_batches(list(lance_fw.dataset(long_pages).to_batches(**options)))
        assert_tables_equal(want, got)
    # pages that end in a short block, inside a run: unpacked straight into place, not cut from a grid
    assert segments and max(segments) > 1, segments
    assert not cut, f"{len(cut)} runs cut out of a padded grid"


def test_runs_of_plain_pages_copy_their_chunks_strided(uri, monkeypatch):
    """Plain fixed-width values (a vector column) of a run of pylance's streamed pages: each page's
    chunks but its last are one size at one spacing, so the run's values are copied as strided
    runs of chunks plus the chunks between them (``layouts._chunk_bytes``), not gathered chunk
    by chunk; every value against pylance's, whole scans and cut into other batch sizes."""
    from lance_fw_plugins.encodings_v2_1 import layouts

    table = _table(ROWS).select(["id", "vector"])
    lance.write_dataset(
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=10_000)),
        uri,
        data_storage_version="2.2",
    )
    gathered: list[int] = []
    original = layouts.gather_ranges

    def counting(data, starts, lengths):
        gathered.append(len(starts))
        return original(data, starts, lengths)

    monkeypatch.setattr(layouts, "gather_ranges", counting)
    for batch_size in (None, 33_333):
        options = {} if batch_size is None else {"batch_size": batch_size}
        want = pa.Table.from_batches(list(lance.dataset(uri).to_batches(columns=["vector"], **options)))
        got = pa.Table.from_batches(list(lance_fw.dataset(uri).to_batches(columns=["vector"], **options)))
        assert_tables_equal(want, got)
    assert not gathered, f"runs of chunks gathered one by one: {gathered}"


def _scaled_down_pages(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pylance's pages of 1,000-row batches (2.2, two files), with the reader's run and decode
    ahead thresholds scaled down to match: 2 MB columns of pylance's 8192-row pages in small."""
    from lance_fw.file import reader_ahead as file_reader

    table = _table(ROWS)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1_000))
    lance.write_dataset(reader, uri, data_storage_version="2.2", max_rows_per_file=FIRST_FILE_ROWS)
    monkeypatch.setattr(file_reader, "DECODE_AHEAD_BYTES", 16 << 10)
    monkeypatch.setattr(file_reader, "SMALL_PAGES_RUN_BYTES", 256 << 10)
    monkeypatch.setattr(file_reader, "NEXT_RUN_MIN_BYTES", 8 << 10)


@pytest.mark.parametrize("slice_below", [2, 1024])
def test_scans_of_odd_sized_pages_in_split_runs(uri, monkeypatch, slice_below):
    """Pages of 1,000-row batches end in a block short of 1,024 values, in the middle of a run:
    the values are cut out of the unpacked blocks by slices (``slice_below`` 1024) or by a mask
    (2: any run with two short blocks or more). With the reader's thresholds scaled down, every
    column's pages split into runs by half of what is left (``_small_pages_after``) and a run
    decoded beside the next one (``_next_run``), as 2 MB columns of pylance's 8192-row pages are."""
    from lance_fw_plugins.encodings_v2_1 import chunked

    _scaled_down_pages(uri, monkeypatch)
    monkeypatch.setattr(chunked, "SLICE_SHORT_BLOCKS_BELOW", slice_below)
    short_blocks: list[int] = []
    original = chunked._without_padding

    def counting(grid, counts, short):
        short_blocks.append(int((counts[:-1] != 1024).sum()))
        return original(grid, counts, short)

    monkeypatch.setattr(chunked, "_without_padding", counting)
    pl, fw = lance.dataset(uri), lance_fw.dataset(uri)
    assert_tables_equal(pl.to_table(), fw.to_table())
    for columns in (["id"], ["id", "value"], ["category"]):
        assert_tables_equal(pl.to_table(columns=columns), fw.to_table(columns=columns))
    got = list(fw.to_batches(columns=["id", "category"], batch_size=7_777))
    want = list(pl.to_batches(columns=["id", "category"], batch_size=7_777))
    assert_tables_equal(pa.Table.from_batches(want), pa.Table.from_batches(got))
    assert max(short_blocks) >= 2  # runs with short blocks inside them were decoded


@pytest.mark.parametrize("columns", [["vector"], ["id"], None])
def test_a_scan_decodes_each_page_once(uri, monkeypatch, columns):
    """A scan decodes every page once: pages decoded ahead (``decode_ahead``'s next run of a
    column) wait for the read that reaches them. Found: a read whose first pages were decoded
    ahead dropped them as "jumped past" and decoded them again on the reading thread (pylance's
    8192-row vector pages: a third of the second file's pages twice). Thresholds scaled down as
    in the test above, so that 1,000-row pages behave like pylance's 1 MB vector pages."""
    from lance_fw.file import reader as file_reader
    from lance_fw.file import reader_ahead

    _scaled_down_pages(uri, monkeypatch)
    monkeypatch.setattr(reader_ahead, "RUN_PAGE_BYTES", 32 << 10)
    decoded: list[tuple[str, int, int]] = []
    original = file_reader.LanceFileReader._decode_pages

    def counting(self, col, pages, arrow_type, field):
        decoded.extend((self.path, col, p) for p in pages)
        return original(self, col, pages, arrow_type, field)

    monkeypatch.setattr(file_reader.LanceFileReader, "_decode_pages", counting)
    got = lance_fw.dataset(uri).to_table(columns=columns)
    assert_tables_equal(lance.dataset(uri).to_table(columns=columns), got)
    twice = sorted({key for key in decoded if decoded.count(key) > 1})
    assert not twice, f"{len(twice)} pages decoded more than once, first {twice[:5]}"
    assert len(decoded) > 40  # many pages: the runs and the pages ahead were exercised


def test_reads_end_at_wide_pages_before_a_short_last_page(uri, monkeypatch):
    """A scan's reads end at the pages of its widest column where they are wide
    (``WIDE_PAGE_BYTES`` on average), so that a read slices one page rather than copying several
    into one array. The average leaves out a file's last page: pylance's 1 MiB vector pages
    ending in a short page fell under it, and every read of that file copied 8 pages. Scaled
    down: ``WIDE_PAGE_BYTES`` is one full page of the vector column here."""
    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import resolve_storage
    from lance_fw.table import fragment as fragment_module

    rows = 100_500  # pages of ~9,000 rows (pylance joins the 1,000-row batches), a short last one
    table = _table(rows).select(["id", "vector"])
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1_000))
    lance.write_dataset(reader, uri, data_storage_version="2.2")
    data_file = lance.dataset(uri).get_fragments()[0].data_files()[0].path
    path = f"{uri}/data/{data_file}"
    pages = LanceFileReader(resolve_storage(path), path).tail.columns[1].pages
    assert len(pages) > 5 and pages[-1].length < pages[0].length
    monkeypatch.setattr(fragment_module, "WIDE_PAGE_BYTES", sum(pages[0].buffer_sizes))
    spans: list[tuple[int, int]] = []
    original = fragment_module.FragmentReader.read_range

    def recording(self, fields, start, stop, until=None, alone=False):
        spans.append((start, stop))
        return original(self, fields, start, stop, until, alone)

    monkeypatch.setattr(fragment_module.FragmentReader, "read_range", recording)
    got = lance_fw.dataset(uri).to_table(columns=["vector"], batch_size=1_000)
    assert_tables_equal(lance.dataset(uri).to_table(columns=["vector"]), got)
    starts = {0}
    for page in pages:
        starts.add(max(starts) + page.length)
    assert spans and all(start in starts and stop in starts for start, stop in spans), spans[:5]


def test_a_read_s_jobs_are_balanced_over_the_pool(uri, monkeypatch):
    """A read waits for all the jobs it decodes ahead, so the largest sets its time: runs are
    halved while the largest holds more than one worker's share (``_balanced``), and the scan
    still returns what pylance's does."""
    from lance_fw._util import pools
    from lance_fw.file import reader_ahead

    _scaled_down_pages(uri, monkeypatch)
    monkeypatch.setattr(reader_ahead, "SMALL_PAGES_RUN_BYTES", 1 << 20)  # long runs to halve
    calls: list[tuple[int, int, list[int]]] = []  # (jobs in, jobs out, sizes out)
    original = reader_ahead.AheadDecodes._balanced

    def recording(self, jobs):
        count = len(jobs)
        out = original(self, jobs)
        sizes = [self._pages_bytes(col, pages) for col, pages, _, _ in out]
        calls.append((count, len(out), sizes))
        # the largest within a worker's share, or a job that cannot be halved
        assert sizes[0] * pools.workers() <= sum(sizes) or len(self._halves(out[0])) < 2
        return out

    monkeypatch.setattr(reader_ahead.AheadDecodes, "_balanced", recording)
    assert_tables_equal(lance.dataset(uri).to_table(), lance_fw.dataset(uri).to_table())
    assert any(out > count for count, out, _ in calls), calls  # some run was halved
    for _, _, sizes in calls:
        assert sizes == sorted(sizes, reverse=True)  # largest first


def test_a_scan_s_queue_decodes_ahead_of_its_reads(uri, monkeypatch):
    """A scan's reads wait only for their own pages: the scan's queue (``_scan_ahead``) keeps the
    pool decoding the pages after them, each page once, on the pool; the whole scan still equals
    pylance's (bit-packed, dictionary and nullable numbers). A streamed scan (``to_batches``)
    decodes nothing past its first run before its second read: one batch taken and the scan
    closed (a LIMIT) decoded only that run, which reaches past the first batch. A scan with a
    string column stays read by read."""
    from lance_fw.file import reader as file_reader
    from lance_fw.file import reader_ahead

    _pylance_from_batches(uri, "2.2")
    queued: list[bool] = []
    original_ahead = reader_ahead.AheadDecodes._scan_ahead

    def recording_ahead(self, *args):
        queued.append(original_ahead(self, *args))
        return queued[-1]

    runs: list[list[int]] = []
    original_runs = file_reader.LanceFileReader.scan_runs

    def recording_runs(self, fields, start, until, first_stop):
        runs.append(original_runs(self, fields, start, until, first_stop))
        return runs[-1]

    decoded: list[tuple[str, int, int, str]] = []  # (file, column, page's first row, thread)
    original = file_reader.LanceFileReader._decode_pages

    def counting(self, col, pages, arrow_type, field):
        starts = self._starts(col, field)
        decoded.extend((self.path, col, starts[p], threading.current_thread().name) for p in pages)
        return original(self, col, pages, arrow_type, field)

    monkeypatch.setattr(reader_ahead.AheadDecodes, "_scan_ahead", recording_ahead)
    monkeypatch.setattr(file_reader.LanceFileReader, "scan_runs", recording_runs)
    monkeypatch.setattr(file_reader.LanceFileReader, "_decode_pages", counting)
    columns = ["id", "value", "category", "maybe", "maybe_f"]
    scan = lance_fw.dataset(uri).to_batches(columns=columns, batch_size=1_000)
    first = next(iter(scan))
    scan.close()
    assert first.num_rows == 1_000 and queued and queued[0]
    assert len(runs[0]) >= 2 and runs[0][1] >= 1_000  # the first run holds the first batch
    assert decoded and max(row for _, _, row, _ in decoded) < runs[0][1]  # and nothing after it
    assert all(name.startswith("lance_fw-column-decode") for *_, name in decoded)

    decoded.clear()
    got = lance_fw.dataset(uri).to_table(columns=columns)
    assert_tables_equal(lance.dataset(uri).to_table(columns=columns), got)
    keys = [key[:3] for key in decoded]
    assert len(keys) == len(set(keys)) and len(keys) > 100  # every page once
    assert all(name.startswith("lance_fw-column-decode") for *_, name in decoded)

    queued.clear()
    lance_fw.dataset(uri).to_table(columns=["id", "name"])
    assert queued and not any(queued)


def test_closing_a_scan_leaves_its_file_open_until_its_jobs_end(uri, monkeypatch):
    """A scan closed while its queue's jobs run (a consumer stopping early) does not wait for
    them: its file stays open until the last one ends, then closes; nothing reads a closed file."""
    from lance_fw.file import reader as file_reader

    _pylance_from_batches(uri, "2.2")
    release = threading.Event()
    started = threading.Event()
    seen: list[tuple[object, bool]] = []  # (the file's range reader, whether it was open after)
    released: list[bool] = []  # a held job let go by the test, not by its timeout
    original = file_reader.LanceFileReader._decode_pages

    def held(self, col, pages, arrow_type, field):
        if self._starts(col, field)[pages[0]] >= 100_000:  # jobs past the first reads wait
            started.set()
            released.append(release.wait(10))  # a close waiting for the job times this out
        out = original(self, col, pages, arrow_type, field)
        seen.append((self._reader, self._reader._fd >= 0))
        return out

    monkeypatch.setattr(file_reader.LanceFileReader, "_decode_pages", held)
    scan = iter(lance_fw.dataset(uri).to_batches(columns=["id", "value"], batch_size=1_000))
    while not started.is_set():  # read on until a job past the first reads is under way
        next(scan)
    scan.close()  # returns with that job still held
    assert not release.is_set()
    release.set()
    for _ in range(200):  # the held jobs end, then the file closes
        if seen and all(r._fd < 0 for r, _ in seen):
            break
        threading.Event().wait(0.01)
    assert seen and all(still_open for _, still_open in seen) and released and all(released)
    assert all(r._fd < 0 for r, _ in seen)


def test_a_scan_s_queue_raises_a_job_s_error_at_the_read(uri, monkeypatch):
    """A page that fails to decode on the pool, ahead of the reads, fails the scan with the
    page's own error when a read reaches it (not a hang, not a silently short table)."""
    from lance_fw.errors import CorruptFileError
    from lance_fw.file import reader as file_reader

    _pylance_from_batches(uri, "2.2")
    original = file_reader.LanceFileReader._decode_pages

    def failing(self, col, pages, arrow_type, field):  # the page holding row 150,000 of the first file
        starts = self._starts(col, field)
        if starts[pages[0]] <= 150_000 < starts[pages[-1] + 1]:
            raise CorruptFileError(self.path, f"column {col} page holding row 150000: damaged (test)")
        return original(self, col, pages, arrow_type, field)

    monkeypatch.setattr(file_reader.LanceFileReader, "_decode_pages", failing)
    with pytest.raises(CorruptFileError, match="row 150000: damaged"):
        lance_fw.dataset(uri).to_table(columns=["id", "value"])


def test_a_scan_reads_from_run_to_run(uri, monkeypatch):
    """Where a scan's queue applies, its reads go from one run of pages the queue decodes to the
    next (``scan_runs``), however long, rather than every ``SCAN_READ_ROWS``: a read within a run
    slices it, so the only pages copied together are those of the batch across a run's start,
    read alone. The scan equals pylance's, batch for batch."""
    from lance_fw.file import reader as file_reader
    from lance_fw.table import fragment as fragment_module

    _pylance_from_batches(uri, "2.2")
    runs: list[list[int]] = []
    original_runs = file_reader.LanceFileReader.scan_runs

    def recording_runs(self, fields, start, until, first_stop):
        runs.append(original_runs(self, fields, start, until, first_stop))
        return runs[-1]

    spans: list[tuple[int, int, int]] = []  # (fragment, first row, end)
    original_read = fragment_module.FragmentReader.read_range

    def recording_read(self, fields, start, stop, until=None, alone=False):
        spans.append((self.fragment.id, start, stop))
        return original_read(self, fields, start, stop, until, alone)

    joined: list[int] = []  # rows of each read copied together from several pages
    original_concat = file_reader.concat_pages

    def recording_concat(pieces, arrow_type):
        if len(pieces) > 1:  # (one piece is handed back as it is)
            joined.append(sum(len(piece) for piece in pieces))
        return original_concat(pieces, arrow_type)

    monkeypatch.setattr(file_reader.LanceFileReader, "scan_runs", recording_runs)
    monkeypatch.setattr(fragment_module.FragmentReader, "read_range", recording_read)
    monkeypatch.setattr(file_reader, "concat_pages", recording_concat)
    columns = ["id", "value", "category"]
    batch = 1_000
    got = list(lance_fw.dataset(uri).to_batches(columns=columns, batch_size=batch))
    expected = list(lance.dataset(uri).to_batches(columns=columns, batch_size=batch))
    assert [b.num_rows for b in got] == [b.num_rows for b in expected]
    assert_tables_equal(pa.Table.from_batches(expected), pa.Table.from_batches(got))

    first_file = runs[0]
    assert len(first_file) >= 2 and first_file[0] == 0  # the queue cut the file into runs
    reads_of_first = [(a, b) for fragment_id, a, b in spans if fragment_id == 0]
    # a read a run (up to its last whole batch) and one for the batch across the next run's start
    assert len(reads_of_first) <= 2 * len(first_file), (reads_of_first, first_file)
    assert max(b - a for a, b in reads_of_first) > fragment_module.SCAN_READ_ROWS
    for a, b in reads_of_first:
        inside = [r for r in first_file if a < r < b]
        assert not inside or b - a <= batch, (a, b, inside)  # only a lone batch crosses a run start
    assert joined and max(joined) <= batch


def test_a_stream_hands_out_a_short_first_batch_read_alone(uri, monkeypatch, duckdb_pulls):
    """``LanceScanner.stream`` (DuckDB's feed): the scan's first rows as a short batch of their
    own, read before anything else starts, then batches of up to ``batch_size`` (the second
    fragment's first one too); the rows, in order, are pylance's scan's, deleted rows left out.
    DuckDB's ``LIMIT 10`` pulls that short batch, not a 256Ki-row one. Failed before: each
    fragment's first batch was short, and the second fragment started beside the first batch."""
    import pyarrow.compute as pc

    from lance_fw.duckdb import dataset as duckdb_dataset
    from lance_fw.table import snapshot as snapshot_module

    _pylance_from_batches(uri, "2.2")
    lance.dataset(uri).delete("id % 7 = 3")
    columns = ["id", "value", "category"]
    started: list[int] = []  # fragments whose read began
    original_read = snapshot_module.Snapshot.read_fragment

    def recording_read(self, frag, *args, **kwargs):
        started.append(frag.id)
        return original_read(self, frag, *args, **kwargs)

    monkeypatch.setattr(snapshot_module.Snapshot, "read_fragment", recording_read)
    scanner = lance_fw.dataset(uri).scanner(columns=columns, batch_size=50_000, fragment_readahead=2)
    stream = scanner.stream(1_000)
    first = next(stream)
    time.sleep(0.2)  # (anything started beside it would have begun by now)
    assert first.num_rows == sum(1 for i in range(1_000) if i % 7 != 3)
    assert len(started) == 1
    batches = [first, *stream]
    assert len(started) == 2
    assert_tables_equal(lance.dataset(uri).to_table(columns=columns), pa.Table.from_batches(batches))
    sizes = [b.num_rows for b in batches]
    live_first = FIRST_FILE_ROWS - sum(1 for i in range(FIRST_FILE_ROWS) if i % 7 == 3)
    second = next(i for i in range(len(sizes)) if sum(sizes[:i]) == live_first)
    first_ids = pc.min(batches[second].column("id")).as_py()
    assert sizes[second] == sum(1 for i in range(first_ids, first_ids + 50_000) if i % 7 != 3)
    assert max(sizes) <= 50_000 and len(sizes) > 4

    con = fw_duckdb.connect()
    got = con.sql(f"SELECT id, value FROM lance_scan('{uri}') LIMIT 10").to_arrow_table()
    assert got.num_rows == 10
    assert duckdb_pulls and duckdb_pulls[0] <= duckdb_dataset.FIRST_BATCH_SIZE
    assert sum(duckdb_pulls) < duckdb_dataset.BATCH_SIZE


def test_a_stream_s_later_fragments_read_as_whole_scans(uri, monkeypatch):
    """A stream (DuckDB's feed) reads the fragments after the first only once its consumer has
    asked past the first batch, so their reads plan for every batch (no ``first_stop``: no short
    first run, the pool given the next pages from the first read on); the first fragment, read
    from a short first batch taken alone, does too. Rows as pylance's. Failed before: each later
    fragment was planned as a stream's start."""
    from lance_fw.file import reader as file_reader

    _pylance_from_batches(uri, "2.2")
    planned: dict[str, list[int | None]] = {}  # each file's scans' first_stop
    original = file_reader.LanceFileReader.scan_runs

    def recording(self, fields, start, until, first_stop):
        planned.setdefault(self.path, []).append(first_stop)
        return original(self, fields, start, until, first_stop)

    monkeypatch.setattr(file_reader.LanceFileReader, "scan_runs", recording)
    columns = ["id", "value", "category"]
    scanner = lance_fw.dataset(uri).scanner(columns=columns, batch_size=20_000, fragment_readahead=2)
    batches = list(scanner.stream(1_000))
    assert_tables_equal(lance.dataset(uri).to_table(columns=columns), pa.Table.from_batches(batches))
    assert len(planned) == 2, planned  # both files were scanned
    assert all(stop is None for stops in planned.values() for stop in stops), planned

    planned.clear()  # a plain to_batches still plans its start as a stream's
    list(lance_fw.dataset(uri).to_batches(columns=columns, batch_size=20_000))
    assert any(stop is not None for stops in planned.values() for stop in stops), planned
