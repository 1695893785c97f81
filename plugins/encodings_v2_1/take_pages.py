"""Chosen rows of several consecutive mini-block pages of one column, decoded together.

A take touching many pages of a column (a writer's pages of a few MiB each; pylance's pages cut
as its input batches came: tens to hundreds a column) would otherwise pay, page by page, the
choice of chunks, a read request, the decode and Arrow's build and checks. Here the chunks of all
pages are chosen in one pass over their chunk tables laid end to end, fetched in one request
(``read_pages_parts``) and decoded as runs of pages whose values decode alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError
from lance_fw.file import fsst
from lance_fw.file.encoding import PageInput
from lance_fw.interfaces import read_pages_parts

from . import layouts, take
from .compressive import _name
from .decoded_values import DecodedValues, concat, present
from .layouts import PageLevels

#: Bytes of chosen chunks a take lays end to end to decode them as one run: beyond, the pages
#: decode in groups of about this size (joining a 10% take's 128 MiB of vector chunks cost more
#: than the whole decode). Not for a scan: its run is read end to end already (the reader's
#: ``_read_run``, sized by its scan jobs), and groups would only be joined again afterwards
#: (a copy of every value of an 8 MiB run of pylance's 8192-row pages).
JOIN_BYTES = 8 << 20


def mini_block_pages_rows(
    page_layouts: Sequence[pb.MiniBlockLayout],
    pages: Sequence[PageInput],
    rows: Sequence[np.ndarray] | None,
    alike: bool = False,
) -> PageLevels | None:
    """Levels of rows ``rows[i]`` (sorted, distinct, at least one) of page ``pages[i]``, for
    every i, laid end to end; ``rows`` None: every row of every page (a scan). ``alike``: the
    caller found that the pages share one ``join_key`` (not checked again).

    Consecutive pages whose values decode alike (one value encoding; FSST pages each with their
    own symbol table, ``_Chosen.decompress``) decode as one run: a writer that cuts pages as its
    input batches come (pylance) switches encoding only now and then (its last, small page of a
    column is often stored plainly).

    Pages with a dictionary each have their own: their indices decode as one run and each
    page's rows are looked up in its dictionary (``_Chosen.look_up``).

    None unless every page has no repetition, and all have the same definition encoding, layers
    and chunk layout (else the caller decodes page by page)."""
    if rows is None and any(page.num_rows == 0 for page in pages):
        return None  # a page without chunks: nothing to join
    if not alike:
        keys = {join_key(layout) for layout in page_layouts}
        if None in keys or len(keys) != 1:
            return None
    where = f"{pages[0].where} (and the {len(pages) - 1} pages after it)"
    chosen = _Chosen(page_layouts, pages, rows)
    groups: list[PageLevels | None] = []
    at = 0
    while at < len(pages):  # pages decoding alike (a take: about JOIN_BYTES of chunks), decoded together
        layout = page_layouts[at]
        has_dictionary = layout.HasField("dictionary")
        tables_apart = _name(layout.value_compression) == "fsst" and not has_dictionary
        stop, total = at + 1, int(chosen.page_bytes[at])
        while (
            stop < len(pages)
            and (rows is None or total + int(chosen.page_bytes[stop]) <= JOIN_BYTES)
            and page_layouts[stop].HasField("dictionary") == has_dictionary
            and _same_values(page_layouts[stop].value_compression, layout.value_compression, tables_apart)
        ):
            total += int(chosen.page_bytes[stop])
            stop += 1
        if has_dictionary:
            indices = chosen.decode(_without_dictionary(layout), at, stop, where)
            groups.append(None if indices is None else chosen.look_up(indices, page_layouts, at, stop))
        elif tables_apart:
            codes = chosen.decode(_without_fsst(layout), at, stop, where)
            tables = [later.value_compression.fsst.symbol_table for later in page_layouts[at:stop]]
            groups.append(None if codes is None else chosen.decompress(codes, at, stop, tables))
        else:
            groups.append(chosen.decode(layout, at, stop, where))
        at = stop
    if any(levels is None for levels in groups):
        return None
    done = [levels for levels in groups if levels is not None]
    if len(done) == 1:
        return done[0]
    shapes = {
        (g.values.kind, g.values.bits_per_value, getattr(g.values.data, "dtype", None))
        for g in done
        if g.values
    }
    if len(shapes) != 1:  # groups of other value encodings decoded to other shapes: page by page
        return None
    defs = None if done[0].defs is None else np.concatenate([present(g.defs, "defs") for g in done])
    values = concat([present(g.values, "values") for g in done])
    return PageLevels(done[0].layers, sum(g.num_rows for g in done), None, defs, values)


def join_key(layout: pb.MiniBlockLayout) -> tuple | None:
    """What pages must share to decode as one run (``mini_block_pages_rows``): the definition
    encoding, the layers and the chunk layout; None for a page with repetition (never joined)."""
    if layout.HasField("rep_compression"):
        return None
    return (
        layout.def_compression.SerializeToString(deterministic=True),
        tuple(layout.layers),
        layout.num_buffers,
        layout.has_large_chunk,
    )


class _Chosen:
    """The chunks holding the wanted rows of consecutive pages, chosen in one pass over their
    chunk tables laid end to end (``choose_chunks``), and the pieces of each page's chunk buffer
    to read for them (``chunk_parts``: a span, or each chunk), not read yet. Without wanted
    rows (None): every chunk of every page, and ``k`` and ``within`` are None.

    Arrays over chosen chunks (``sizes``, ``counts``, ``joined_at``: where each starts once every
    page's pieces are laid end to end) and over wanted rows (``k``: each row's chosen chunk,
    ``within``: its place there) run in page order; ``chunk_cut[i]`` / ``row_cut[i]`` are page
    i's first chosen chunk and first wanted row."""

    def __init__(
        self,
        page_layouts: Sequence[pb.MiniBlockLayout],
        pages: Sequence[PageInput],
        rows: Sequence[np.ndarray] | None,
    ) -> None:
        tables = []
        for layout, page in zip(page_layouts, pages):
            needed = 3 if layout.HasField("dictionary") else 2
            if len(page.buffers) < needed:
                raise CorruptFileError(
                    page.where, f"mini-block page has {len(page.buffers)} buffers, needs at least {needed}"
                )
            take.check_items(layout, page)
            tables.append(take.page_chunk_table(layout, page))
        self.pages = pages
        chunks_of = np.array([len(t.counts) for t in tables], np.int64)
        chunk_base = take.exclusive_cumsum(chunks_of)
        row_base = take.exclusive_cumsum(np.array([page.num_rows for page in pages], np.int64))
        counts = np.concatenate([t.counts for t in tables])
        self.k: np.ndarray | None = None
        self.within: np.ndarray | None = None
        if rows is None:
            self.row_cut = row_base
            picked = np.arange(len(counts))
        else:
            self.row_cut = take.exclusive_cumsum(np.array([len(r) for r in rows], np.int64))
            # the pages' chunks as one table: each page's rows counted on from the pages before it
            ends = np.concatenate([t.ends for t in tables]) + np.repeat(row_base[:-1], chunks_of)
            wanted = np.concatenate(rows) + np.repeat(row_base[:-1], np.diff(self.row_cut))
            picked, self.k, self.within = take.choose_chunks(ends, counts, wanted)
        page_of = np.searchsorted(chunk_base, picked, side="right") - 1
        self.chunk_cut = np.searchsorted(page_of, np.arange(len(pages) + 1))
        starts = np.concatenate([t.starts for t in tables])[picked]  # in its page's chunk buffer
        self.sizes = np.concatenate([t.sizes for t in tables])[picked]
        self.counts = counts[picked]
        self.parts: list[list[tuple[int, int, int]]] = []
        if rows is None:  # every chunk: each page's chunk buffer up to its last chunk, in one piece
            ends = starts + self.sizes
            cut = self.chunk_cut
            self.page_bytes = np.where(cut[1:] > cut[:-1], ends[np.maximum(cut[1:] - 1, 0)], 0)
            self.parts = [[(1, 0, n)] for n in self.page_bytes.tolist()]
            self.page_at = take.exclusive_cumsum(self.page_bytes)
            self.joined_at = starts + self.page_at[page_of]
            return
        at = np.zeros(len(picked), np.int64)  # where each chunk starts in its page's pieces
        bytes_of: list[int] = []
        cuts, starts_at, sizes_of = self.chunk_cut.tolist(), starts.tolist(), self.sizes.tolist()
        for i in range(len(pages)):
            a, b = cuts[i], cuts[i + 1]
            if b - a == 1:  # a take's usual page: one chunk, read alone (no numpy calls)
                self.parts.append([(1, starts_at[a], sizes_of[a])])
                bytes_of.append(sizes_of[a])
                continue
            parts, span_starts = take.chunk_parts(starts[a:b], self.sizes[a:b])
            self.parts.append(parts)
            at[a:b] = take.exclusive_cumsum(self.sizes[a:b])[:-1] if span_starts is None else span_starts
            bytes_of.append(sum(length for _, _, length in parts))
        self.page_bytes = np.array(bytes_of, np.int64)
        self.page_at = take.exclusive_cumsum(self.page_bytes)
        self.joined_at = at + self.page_at[page_of]

    def decode(self, layout: pb.MiniBlockLayout, a: int, b: int, where: str) -> PageLevels | None:
        """The wanted rows of pages ``[a, b)``: their chunks read straight into place, end to end
        (``take.read_joined``; chunk sizes are whole CHUNK_SIZE_UNITs, so each page's chunks stay
        aligned after the others'), then decoded as one run of ``layout``."""
        data = take.read_joined([(self.pages[i], self.parts[i]) for i in range(a, b)])
        c0, c1 = int(self.chunk_cut[a]), int(self.chunk_cut[b])
        r0, r1 = int(self.row_cut[a]), int(self.row_cut[b])
        starts = self.joined_at[c0:c1] - self.page_at[a]
        run = layouts.ChunkRun(layout, data, starts, self.sizes[c0:c1], self.counts[c0:c1], None, where)
        if self.k is None or self.within is None:  # every row: the chunks decode whole
            return layouts.chunk_levels(run, r1 - r0)[0]
        return take.levels_at(run, self.k[r0:r1] - c0, self.within[r0:r1])

    def decompress(self, codes: PageLevels, a: int, b: int, tables: Sequence[bytes]) -> PageLevels:
        """``codes``' values (the wanted rows of pages ``[a, b)``, still FSST-compressed) each
        decompressed with its own page's symbol table, laid end to end."""
        values = present(codes.values, "values")
        if values.kind != "variable":
            raise CorruptFileError(
                self.pages[a].where, f"FSST values decoded to {values.kind}, expected variable"
            )
        offsets, data = present(values.offsets, "offsets"), present(values.data, "data")
        r0 = int(self.row_cut[a])
        cuts = [int(cut) - r0 for cut in self.row_cut[a : b + 1]]
        where = f"{self.pages[a].where} (and the {b - a - 1} pages after it)"
        offs, chars = fsst.decompress_tables(tables, offsets, data, cuts, where)
        decompressed = DecodedValues("variable", cuts[-1], chars, offsets=offs)
        return PageLevels(codes.layers, codes.num_rows, codes.rep, codes.defs, decompressed)

    def look_up(
        self, indices: PageLevels, page_layouts: Sequence[pb.MiniBlockLayout], a: int, b: int
    ) -> PageLevels:
        """``indices``' values (the wanted rows of pages ``[a, b)``, dictionary indices) each
        looked up in its own page's dictionary (buffer 2, all fetched in one request; decoded
        dictionaries are kept per page, ``_DICTIONARIES``), laid end to end."""
        values = present(indices.values, "values")
        if values.kind != "fixed":
            raise CorruptFileError(self.pages[a].where, f"dictionary indices decoded to {values.kind}")
        found: dict[int, DecodedValues] = {}
        for i in range(a, b):
            key = self.pages[i].key
            hit = _DICTIONARIES.get(key) if key is not None else None
            if hit is not None:
                found[i] = hit
        missing = [i for i in range(a, b) if i not in found]
        raw = read_pages_parts([(self.pages[i], [(2, 0, self.pages[i].buffer_size(2))]) for i in missing])
        for i, (buffer,) in zip(missing, raw):
            page = self.pages[i]
            dictionary = layouts.mini_block_dictionary(page_layouts[i], buffer, page.where)
            found[i] = dictionary
            if page.key is not None:
                _DICTIONARIES.put(page.key, dictionary)
        data = present(values.data, "data")
        r0 = int(self.row_cut[a])
        parts = []
        for i in range(a, b):
            lo, hi = int(self.row_cut[i]) - r0, int(self.row_cut[i + 1]) - r0
            page_indices = DecodedValues("fixed", hi - lo, data[lo:hi], values.bits_per_value)
            parts.append(layouts.look_up_dictionary(found[i], page_indices, self.pages[i].where))
        if len({(p.kind, p.bits_per_value) for p in parts}) != 1:
            raise CorruptFileError(self.pages[a].where, "the pages' dictionaries hold values of other kinds")
        return PageLevels(indices.layers, indices.num_rows, indices.rep, indices.defs, concat(parts))


#: Decoded page dictionaries a take keeps (by page identity), at most this many bytes in all.
DICTIONARY_CACHE_BYTES = 32 << 20


def _dictionary_bytes(values: DecodedValues) -> int:
    return sum(np.asarray(x).nbytes for x in (values.data, values.offsets) if x is not None) + 64


_DICTIONARIES: LruCache[tuple, DecodedValues] = LruCache(4096, DICTIONARY_CACHE_BYTES, _dictionary_bytes)


def _without_dictionary(layout: pb.MiniBlockLayout) -> pb.MiniBlockLayout:
    """The layout without its dictionary: its chunks then decode to the indices."""
    inner = pb.MiniBlockLayout()
    inner.CopyFrom(layout)
    inner.ClearField("dictionary")
    return inner


def _same_values(a: pb.CompressiveEncoding, b: pb.CompressiveEncoding, tables_apart: bool) -> bool:
    """Whether two pages' values decode alike (``tables_apart``: FSST over the same inner
    encoding, whatever the symbol tables)."""
    if not tables_apart:
        return a == b
    return _name(a) == "fsst" and a.fsst.values == b.fsst.values


def _without_fsst(layout: pb.MiniBlockLayout) -> pb.MiniBlockLayout:
    """The layout with its values' FSST wrapper taken off: its chunks then decode to the codes."""
    inner = pb.MiniBlockLayout()
    inner.CopyFrom(layout)
    inner.value_compression.CopyFrom(layout.value_compression.fsst.values)
    return inner
