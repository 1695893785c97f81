"""Decoding chosen rows of a 2.1/2.2 page, reading only the bytes they need.

* mini-block: the chunk metadata gives each chunk's byte size and value count; for list columns
  the repetition index gives the rows each chunk completes. Only the chunks holding the wanted
  rows are read and decoded (laid end to end, they decode like a small page).
* full-zip: the repetition index (or the fixed row width) locates each wanted row's bytes.
* constant pages are tiny: they are decoded whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import UINT_BY_BITS, UINT_BY_BYTES, as_u8, gather_rows, pool_empty
from lance_fw.file.encoding import PageInput
from lance_fw.interfaces import shared_file_ranges

from . import chunked, fullzip_layout, layouts, point
from .decoded_values import DecodedValues
from .layouts import ChunkTable, PageLevels
from .repdef import LIST_LAYERS


def read_joined(requests: Sequence[tuple[PageInput, Sequence[tuple[int, int, int]]]]) -> np.ndarray:
    """The pieces ``(buffer, offset, length)`` of each page's buffers, in order, read and laid end
    to end in one array. Where every page reads through one file reader, each piece is read
    straight into its place (``RangeReader.read_into``); else the pieces are read, then joined.

    Why: a take of many rows over a column of small pages (pylance's streamed pages; 10% of a
    vector column's rows hit nearly every chunk) read its pages' chunks as coalesced blobs, then
    copied them end to end, so every byte was copied twice; that copy was as long as the read."""
    shared = shared_file_ranges(requests)
    if shared is None:
        return joined_bytes([piece for page, parts in requests for piece in page.read_parts(parts)])
    reader, ranges = shared
    at = exclusive_cumsum(np.fromiter((length for _, length in ranges), np.int64, len(ranges)))
    out = pool_empty(int(at[-1]), np.uint8)
    reader.read_into(ranges, out.data, at[:-1].tolist())
    return out


def joined_bytes(parts: Sequence[bytes | memoryview]) -> np.ndarray:
    """Byte pieces laid end to end as one array: a view where they lie end to end in one buffer
    already (a run's pages read so, ``LanceFileReader._read_run``), else one copy."""
    if len(parts) == 1:
        return as_u8(parts[0])
    if len(parts) <= ADJACENT_CHECK_PARTS:
        adjacent = _adjacent(parts)
        if adjacent is not None:
            return adjacent
    return np.frombuffer(b"".join(parts), np.uint8)  # one copy, without a numpy view per piece


#: Pieces up to which ``joined_bytes`` looks whether they lie end to end (a numpy view each: a
#: take's thousands of chunk pieces never do).
ADJACENT_CHECK_PARTS = 512


def _adjacent(parts: Sequence[bytes | memoryview]) -> np.ndarray | None:
    """The pieces as one view of the buffer they all lie in, end to end; else None."""
    if not parts:
        return None
    first = parts[0]
    if not isinstance(first, memoryview) or first.obj is None:
        return None
    base = first.obj
    if not all(isinstance(p, memoryview) and p.obj is base and p.c_contiguous for p in parts):
        return None
    # (pyarrow's view of a buffer tells its address in a third of numpy's time: pages of a run)
    first_at = address = pa.py_buffer(first).address
    for p in parts:
        view = pa.py_buffer(p)
        if view.address != address:
            return None
        address += view.size
    try:
        whole = np.frombuffer(memoryview(base), np.uint8)
    except ValueError:  # a buffer numpy cannot view as bytes (not contiguous)
        return None
    start, stop = first_at - whole.ctypes.data, address - whole.ctypes.data
    return whole[start:stop] if 0 <= start and stop <= whole.size else None


def exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    """0, x[0], x[0] + x[1], ... as int64 (``np.add.accumulate``: ``np.cumsum``'s wrapper costs
    three times the sum of a page's few chunks, and a take calls this ~80 times)."""
    out = np.zeros(len(x) + 1, np.int64)
    np.add.accumulate(x, dtype=np.int64, out=out[1:])
    return out


# --- mini-block ---------------------------------------------------------------------------------


#: Chunk tables are cached (``page_chunk_table``) up to this many entries (each table under two keys)
#: and this many bytes of tables and keys in all, least recently used dropped first. Bounded by
#: bytes, not by a metadata size: pylance's pages of a 32-float vector column hold ~20,000 chunks
#: (78 KiB of metadata, a 0.6 MiB table), and a take re-read and re-parsed them on every call
#: while it kept the tables of narrower columns.
CHUNK_TABLE_CACHE_ENTRIES = 1024
CHUNK_TABLE_CACHE_BYTES = 64 << 20


def _table_bytes(entry: tuple[ChunkTable, int]) -> int:
    table, key_bytes = entry
    return key_bytes + sum(a.nbytes for a in (table.starts, table.sizes, table.counts, table.ends))


#: Keys: a page's identity (``PageInput.key``: valid while its file's parsed tail is), and the
#: page's chunk metadata bytes with what else the table depends on (valid forever). Values: the
#: table and the bytes its key holds.
_CHUNK_TABLES: LruCache[tuple, tuple[ChunkTable, int]] = LruCache(
    CHUNK_TABLE_CACHE_ENTRIES, CHUNK_TABLE_CACHE_BYTES, _table_bytes
)


def page_chunk_table(layout: pb.MiniBlockLayout, page: PageInput) -> ChunkTable:
    """The page's chunk table (``layouts.chunk_table``). A point lookup reads the same pages'
    tables call after call, so they are kept: by the page's identity (a hit reads and parses
    nothing), and by their bytes, so that a dataset opened again (a new parsed tail: the bench
    and DuckDB open one per query) reads the page's chunk metadata but does not parse it (~70 us
    a page of 2,000 chunks; a take of 100 rows touches a hundred pages)."""
    if page.key is not None:
        found = _CHUNK_TABLES.get(page.key)
        if found is not None:
            return found[0]
    size = page.buffer_size(0)
    meta = as_u8(page.read_parts([(0, 0, size)])[0])
    total = page.buffer_size(1)

    def parse() -> tuple[ChunkTable, int]:
        starts, sizes, counts = layouts.chunk_table(layout, meta, total, page.where)
        table = ChunkTable(starts, sizes, counts, np.cumsum(counts))
        for array in (table.starts, table.sizes, table.counts, table.ends):
            array.setflags(write=False)
        return table, size

    entry = _CHUNK_TABLES.get_or_load(
        (meta.tobytes(), layout.has_large_chunk, layout.num_items, total), parse
    )
    if page.key is not None:
        _CHUNK_TABLES.put(page.key, (entry[0], 0))
    return entry[0]


def mini_block_rows(
    layout: pb.MiniBlockLayout, page: PageInput, rows: np.ndarray
) -> tuple[PageLevels, np.ndarray | None]:
    """Levels of the chunks holding ``rows``, and where each wanted row sits among their rows
    (None: the levels hold exactly the wanted rows, in order)."""
    where = page.where
    if len(page.buffers) < 2:
        raise CorruptFileError(where, f"mini-block page has {len(page.buffers)} buffers, needs at least 2")
    has_dict = layout.HasField("dictionary")
    has_rep = layout.HasField("rep_compression")
    wanted = ([2] if has_dict else []) + ([3 if has_dict else 2] if has_rep else [])
    if max(wanted, default=1) >= len(page.buffers):
        raise CorruptFileError(
            where, f"mini-block page has {len(page.buffers)} buffers, needs {max(wanted) + 1}"
        )
    small = dict(zip(wanted, page.read_parts([(i, 0, page.buffer_size(i)) for i in wanted])))
    table = page_chunk_table(layout, page)
    starts, sizes, counts = table.starts, table.sizes, table.counts
    dictionary = layouts.mini_block_dictionary(layout, small[2], where) if has_dict else None
    if has_rep:
        chosen, completed, run_start, start_chunk = _chunks_by_rep_index(
            as_u8(small[wanted[-1]]), len(starts), rows, page.num_rows, where
        )
        data, local_starts = _read_chunks(page, starts[chosen], sizes[chosen])
        run = layouts.ChunkRun(layout, data, local_starts, sizes[chosen], counts[chosen], dictionary, where)
        levels, num_levels = layouts.chunk_levels(run, 0)
        return levels, _rep_positions(
            levels, layout, chosen, num_levels, completed, run_start, start_chunk, rows, where
        )
    if len(rows) == 1 and dictionary is None:
        one = point.one_row(layout, page, int(rows[0]), table)
        if one is not None:
            return one, None
    if len(rows) > RUN_MIN_ROWS and int(rows[-1]) - int(rows[0]) + 1 == len(rows):
        data, local_starts, sizes, counts, positions = _run_chunks(
            layout, page, int(rows[0]), len(rows), table
        )
        run = layouts.ChunkRun(layout, data, local_starts, sizes, counts, dictionary, where)
    else:
        data, local_starts, sizes, counts, k, within = _chosen_chunks(layout, page, rows, table)
        run = layouts.ChunkRun(layout, data, local_starts, sizes, counts, dictionary, where)
        compact = levels_at(run, k, within)
        if compact is not None:
            return compact, None
        positions = exclusive_cumsum(counts)[k] + within  # each row's place among the chunks' values
    levels, _ = layouts.chunk_levels(run, 0, needed=positions)
    levels.num_rows = int(np.sum(counts))
    return levels, positions


#: Rows in a row above which a take decodes the chunks from the first row's to the last's whole
#: and hands back where the rows start among them, with no work per row (an index's answer
#: ``id BETWEEN 1000 AND 200000`` read from a 1M-row page: 199k rows a column).
RUN_MIN_ROWS = 1024


def _run_chunks(
    layout: pb.MiniBlockLayout, page: PageInput, first: int, n: int, table: ChunkTable
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks holding rows ``first`` to ``first + n`` of a page without repetition, read and
    laid end to end: (their bytes, where each starts there, their sizes, their value counts, each
    row's place among their values), as ``_chosen_chunks`` with no work per row."""
    check_items(layout, page)
    if first + n > int(table.ends[-1]):
        raise IndexError(f"row {first + n - 1} of a page of {int(table.ends[-1])} rows")
    lo, hi = np.searchsorted(table.ends, [first, first + n - 1], side="right")
    chosen = np.arange(lo, hi + 1)
    data, local_starts = _read_chunks(page, table.starts[chosen], table.sizes[chosen])
    at = first - int(table.ends[lo] - table.counts[lo])
    return data, local_starts, table.sizes[chosen], table.counts[chosen], np.arange(at, at + n)


def _chosen_chunks(
    layout: pb.MiniBlockLayout,
    page: PageInput,
    rows: np.ndarray,
    table: ChunkTable,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks holding ``rows`` (sorted, distinct) of a page without repetition, read and laid
    end to end: (their bytes, where each starts there, their sizes, their value counts, each
    row's chunk among them, each row's place in its chunk)."""
    check_items(layout, page)
    chosen, k, within = choose_chunks(table.ends, table.counts, rows)
    data, local_starts = _read_chunks(page, table.starts[chosen], table.sizes[chosen])
    return data, local_starts, table.sizes[chosen], table.counts[chosen], k, within


def check_items(layout: pb.MiniBlockLayout, page: PageInput) -> None:
    """A page without repetition holds one value per row: its chunk counts add up to
    ``num_items`` (``chunk_table``), which must be its rows."""
    if layout.num_items != page.num_rows:
        raise CorruptFileError(
            page.where, f"mini-block chunks hold {layout.num_items} values for {page.num_rows} rows"
        )


#: Rows per chunk above which ``choose_chunks`` finds each chunk's rows rather than each row's chunk.
ROWS_PER_CHUNK_SEARCH = 8


def choose_chunks(
    ends: np.ndarray, counts: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks (values ``counts``, the last value of each before ``ends``) holding ``rows``
    (sorted, distinct): (the chosen chunks, each row's chunk among them, each row's place in
    its chunk)."""
    if len(rows) > len(ends) // ROWS_PER_CHUNK_SEARCH and len(rows) > 1:
        # many rows: each chunk's rows found by searching its end among them, not each row
        # among the ends (199k rows of 1024 chunks: 2.4 ms -> 0.3)
        per_chunk = np.diff(np.searchsorted(rows, ends), prepend=0)
        if per_chunk.sum() == len(rows):  # (else a row past the last chunk: the search below)
            chosen = np.flatnonzero(per_chunk)
            k = np.repeat(np.arange(len(chosen)), per_chunk[chosen])
            return chosen, k, rows - (ends - counts)[chosen[k]]
    chunk_of = np.searchsorted(ends, rows, side="right")
    within = rows - ends[chunk_of] + counts[chunk_of]
    if len(rows) == 1:
        return chunk_of, np.zeros(1, np.int64), within
    new_chunk = np.empty(len(chunk_of), bool)  # rows are sorted: so are their chunks
    new_chunk[:1] = True
    np.not_equal(chunk_of[1:], chunk_of[:-1], out=new_chunk[1:])
    return chunk_of[new_chunk], np.cumsum(new_chunk) - 1, within


#: Share of their chunks' values above which taken rows are decoded with their chunks whole
#: rather than one by one (``levels_at``): a bitpacked value unpacked alone costs ~55 ns, a
#: chunk's whole ~5-8 ns a value (199k rows in a row of a 1M-row page: 55 -> 14 ms a column).
PER_VALUE_MAX_SHARE = 1 / 8


def levels_at(run: layouts.ChunkRun, chunk: np.ndarray, within: np.ndarray) -> PageLevels | None:
    """Levels of only the rows ``within[i]`` of chunk ``chunk[i]`` of ``run``, one level and one
    value per row (a layout without repetition): a take of a few rows builds, validates and copies
    those rows, not every row of their chunks.
    None where the values' encoding has no such path (``chunked.decode_chunk_values_at``), or
    where the rows are more than ``PER_VALUE_MAX_SHARE`` of their chunks' values (the caller
    decodes the chunks whole)."""
    # callers hand over layouts without repetition: the chunk headers hold no repetition sizes
    layout, data, counts, dictionary, where = run.layout, run.data, run.counts, run.dictionary, run.where
    if len(chunk) > PER_VALUE_MAX_SHARE * int(np.sum(counts)):
        return None
    chunks, plain = run.parsed(dictionary is None)
    enc = layout.value_compression
    if plain is not None:
        values: DecodedValues | None = _plain_at(data, chunks.bufs[0], counts, chunk, within, *plain, where)
    else:
        values = chunked.decode_chunk_values_at(enc, data, chunks.bufs, counts, chunk, within, where)
    if values is None:
        return None
    if dictionary is not None:
        values = layouts.look_up_dictionary(dictionary, values, where)
    defs = None
    if layout.HasField("def_compression"):
        if (chunks.num_levels != counts).any():
            raise CorruptFileError(where, "mini-block chunks hold other numbers of levels than of values")
        all_defs = layouts._chunk_levels(layout.def_compression, data, chunks.defs, chunks.num_levels, where)
        defs = all_defs[exclusive_cumsum(counts)[chunk] + within]
    return PageLevels(list(layout.layers), len(chunk), None, defs, values)


def _plain_at(
    data: np.ndarray,
    buf: tuple[np.ndarray, np.ndarray],
    counts: np.ndarray,
    chunk: np.ndarray,
    within: np.ndarray,
    bits: int,
    per_list: int | None,
    where: str,
) -> DecodedValues:
    """Values of whole bytes (or fixed-size lists of them) stored plainly: each wanted one is
    copied from where it lies in its chunk."""
    width = bits * (per_list or 1) // 8
    starts, sizes = buf
    if (sizes != counts * width).any():
        raise CorruptFileError(where, "mini-block value buffers do not hold their chunks' values")
    raw = gather_rows(data, starts[chunk] + within * width, width).reshape(-1)
    n = len(chunk) * (per_list or 1)
    values = DecodedValues("fixed", n, raw.view(UINT_BY_BITS[bits]) if bits in UINT_BY_BITS else raw, bits)
    return values if per_list is None else DecodedValues("fsl", len(chunk), dimension=per_list, inner=values)


#: Share of the bytes between the first and the last chosen chunk above which that whole span is
#: read at once (one read, no joining of thousands of pieces) rather than each chunk.
SPAN_READ_SHARE = 0.25


def _read_chunks(page: PageInput, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chosen chunks (in page order) and where each starts in the returned bytes
    (``chunk_parts``)."""
    parts, span_starts = chunk_parts(starts, sizes)
    if span_starts is not None:
        return as_u8(page.read_parts(parts)[0]), span_starts
    return read_joined([(page, parts)]), exclusive_cumsum(sizes)[:-1]


def chunk_parts(
    starts: np.ndarray, sizes: np.ndarray
) -> tuple[list[tuple[int, int, int]], np.ndarray | None]:
    """The pieces of the chunk buffer (1) to read for the chosen chunks (in page order), and where
    each chunk starts in the one piece when it is one: the span from the first to the last when
    they fill most of it (a take of 10% of a page's rows touches nearly every chunk), else each
    chunk (laid end to end once read; None)."""
    lo, hi = int(starts[0]), int(starts[-1] + sizes[-1])
    if len(starts) > 1 and int(sizes.sum()) >= SPAN_READ_SHARE * (hi - lo):
        return [(1, lo, hi - lo)], starts - lo
    if len(starts) == 1:
        return [(1, lo, hi - lo)], np.zeros(1, np.int64)
    return [(1, a, b) for a, b in zip(starts.tolist(), sizes.tolist())], None


def _chunks_by_rep_index(
    index: np.ndarray, nchunks: int, rows: np.ndarray, num_rows: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunks holding ``rows`` of a list column, from the repetition index.

    Per chunk the index holds the rows completing in it and the levels left over after its last
    completed row (a row continuing into the next chunk). A row starts in the chunk completing
    the row before it, unless that chunk ends exactly there. Returns the chosen chunks, the rows
    completed before each chunk, the chosen chunks that start a run of consecutive chunks, and
    each row's first chunk.
    """
    if len(index) != 16 * nchunks:
        raise CorruptFileError(where, f"repetition index of {len(index)} bytes for {nchunks} chunks")
    pairs = index.view("<u8").reshape(nchunks, 2).astype(np.int64)
    done, leftover = pairs[:, 0], pairs[:, 1]
    completed = exclusive_cumsum(done)  # rows completed before chunk c
    if completed[-1] != num_rows:
        raise CorruptFileError(
            where, f"repetition index completes {completed[-1]} rows, the page has {num_rows}"
        )
    end_chunk = np.searchsorted(completed, rows, side="right") - 1
    prev = rows - 1
    prev_chunk = np.searchsorted(completed, np.maximum(prev, 0), side="right") - 1
    ends_there = (completed[prev_chunk + 1] == rows) & (leftover[prev_chunk] == 0)
    start_chunk = np.where(rows == 0, 0, prev_chunk + ends_there)
    marks = np.zeros(nchunks + 1, np.int64)
    np.add.at(marks, start_chunk, 1)
    np.add.at(marks, end_chunk + 1, -1)
    chosen = np.flatnonzero(np.cumsum(marks)[:-1] > 0)
    run_start = chosen[np.r_[True, np.diff(chosen) > 1]] if len(chosen) else chosen
    return chosen, completed, run_start, start_chunk


def _rep_positions(
    levels: PageLevels,
    layout: pb.MiniBlockLayout,
    chosen: np.ndarray,
    num_levels: np.ndarray,
    completed: np.ndarray,
    run_start: np.ndarray,
    start_chunk: np.ndarray,
    rows: np.ndarray,
    where: str,
) -> np.ndarray:
    """Make every run of chunks start a row (a run may begin with the tail of a row from a chunk
    not read: it becomes a row of its own), then place each wanted row among the decoded rows:
    the rows of a run starting at chunk f are those from ``completed[f]`` on."""
    depth = sum(1 for layer in layout.layers if layer in LIST_LAYERS)
    if levels.rep is None:
        raise CorruptFileError(where, "a list column's mini-block chunks without repetition levels")
    rep = levels.rep.astype(np.uint16, copy=True)
    level_start = exclusive_cumsum(num_levels)
    run_level = level_start[np.searchsorted(chosen, run_start)]
    if len(rep) and len(run_level):
        rep[run_level] = depth
    levels.rep = rep
    row_levels = np.flatnonzero(rep == depth)
    levels.num_rows = len(row_levels)
    rows_before_run = np.searchsorted(row_levels, run_level)
    run_of_row = np.searchsorted(run_start, start_chunk, side="right") - 1
    first = run_start[run_of_row]
    out = rows_before_run[run_of_row] + rows - completed[first]
    if len(out) and (out.min() < 0 or out.max() >= levels.num_rows):
        raise CorruptFileError(where, "the repetition index does not match the chunks' repetition levels")
    return out


# --- full-zip -----------------------------------------------------------------------------------


def full_zip_rows(layout: pb.FullZipLayout, page: PageInput, rows: np.ndarray) -> PageLevels:
    """Levels of exactly ``rows`` (in order), reading only their bytes."""
    where = page.where
    if not len(page.buffers):
        raise CorruptFileError(where, "full-zip page without a data buffer")
    stride = fullzip_layout.fixed_stride(layout, where)
    if stride is not None:
        data = read_joined([(page, [(0, int(r) * stride, stride) for r in rows])])
        return fullzip_layout.zipped_levels(layout, data, None, len(rows), where)
    if len(page.buffers) < 2:
        raise CorruptFileError(where, "full-zip page without its repetition index")
    width = fullzip_layout.index_width(page.buffer_size(1), page.num_rows, where)
    pairs = read_joined([(page, [(1, int(r) * width, 2 * width) for r in rows])])
    bounds = pairs.view(UINT_BY_BYTES[width]).astype(np.int64).reshape(-1, 2)
    lengths = bounds[:, 1] - bounds[:, 0]
    if (lengths < 0).any():
        raise CorruptFileError(where, "full-zip repetition index is not ascending")
    data = read_joined([(page, [(0, int(a), int(n)) for a, n in zip(bounds[:, 0], lengths)])])
    return fullzip_layout.zipped_levels(layout, data, exclusive_cumsum(lengths), len(rows), where)
