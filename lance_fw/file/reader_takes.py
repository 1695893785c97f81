"""What a ``LanceFileReader`` does for a take: chosen rows of a field, each page decoded row by
row (only the chunks or byte ranges its rows need) unless most of its rows are wanted, and the
pages of a column a take spreads over decoded together where their decoder can.

Apart from ``reader`` so that each module keeps to one job: ``reader`` opens files and reads
row ranges (scans), this module answers takes.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw._proto import file2_pb2
from lance_fw._util import sets
from lance_fw.errors import CorruptFileError
from lance_fw.file import structure_v2_0, structure_v2_1
from lance_fw.file.buffers import range_positions
from lance_fw.file.encoding import PageBuffers, PageInput, decode_page, row_decoder
from lance_fw.file.read_support import checked_page, concat_pages, guarded
from lance_fw.plugin_manager import registry
from lance_fw.schema import LanceField

if TYPE_CHECKING:
    import threading

    from lance_fw.file.container import FileTail
    from lance_fw.file.read_support import HeldFirst, PageSetup
    from lance_fw.io.storage import RangeReader

#: A page is decoded whole (not row by row) once more than this share of its rows is wanted.
WHOLE_PAGE_SHARE = 0.25

#: Page buffers up to this size are fetched ahead for a take (``prefetch_small_buffers``):
#: metadata-like buffers a row decoder reads before it knows which chunks to read.
SMALL_BUFFER = 64 * 1024


class RowTakes:
    """The take half of ``LanceFileReader`` (its only user), which provides what is declared here."""

    if TYPE_CHECKING:
        path: str
        tail: FileTail
        _cache: dict[int, tuple[int, pa.Array]]
        _lock: threading.Lock
        _small: dict[int, memoryview]
        _held_first: HeldFirst
        _reader: RangeReader

        @property
        def num_rows(self) -> int: ...

        def _cached(self, col: int, page: int) -> pa.Array | None: ...
        def _check_page(self, col: int, p: int, meta: file2_pb2.ColumnMetadata.Page) -> None: ...
        def _column(self, field: LanceField) -> int: ...
        def _num_items(self, col: int, page: int) -> int: ...
        def _page_setup(self, col: int, p: int, field: LanceField) -> PageSetup: ...
        def _row_columns(self, fields: list[LanceField]) -> list[tuple[int, LanceField]]: ...
        def _starts(self, col: int, field: LanceField) -> list[int]: ...

        def _read_column(
            self, col: int, start: int, stop: int, arrow_type: pa.DataType, field: LanceField
        ) -> pa.Array: ...

        def _decode_pages(
            self, col: int, pages: list[int], arrow_type: pa.DataType, field: LanceField
        ) -> list[pa.Array]: ...

    def prefetch_small_buffers(self, fields: list[LanceField], rows: np.ndarray) -> None:
        """Fetch, in one ``read_ranges`` call, every buffer of at most SMALL_BUFFER bytes of the
        pages holding ``rows`` (sorted) in the columns of ``fields``; ``take_field`` then finds
        them in memory.

        A take decodes each page row by row in two dependent rounds: first a small buffer (chunk
        metadata, repetition index, dictionary), then the chunks it points to. Fetching the
        small buffers of every column together turns a round trip per column into one per file."""
        if not len(rows):
            return
        ranges: list[tuple[int, int]] = []
        for col, field in self._row_columns(fields):
            starts = np.asarray(self._starts(col, field), np.int64)
            pages = sets.unique(np.searchsorted(starts, rows, side="right") - 1)
            for p in pages.tolist():
                if not 0 <= p < len(self.tail.columns[col].pages):
                    continue
                meta = self.tail.columns[col].pages[p]
                self._check_page(col, p, meta)
                ranges += [
                    (off, size)
                    for off, size in zip(meta.buffer_offsets, meta.buffer_sizes)
                    if 0 < size <= SMALL_BUFFER and off not in self._small
                ]
        if ranges:
            held = dict(zip((off for off, _ in ranges), self._reader.read_ranges(ranges)))
            with self._lock:
                self._small.update(held)

    def take_field(self, field: LanceField, rows: np.ndarray) -> pa.Array:
        """Rows ``rows`` (sorted, distinct) of a field. Pages holding few of them are decoded row
        by row (only the chunks / byte ranges those rows need are read); see ``file.encoding.PageRowDecoder``."""
        rows = np.asarray(rows, np.int64)
        if len(rows) and (rows[0] < 0 or rows[-1] >= self.num_rows):
            raise CorruptFileError(
                self.path, f"row {int(rows[-1])} asked of a file with {self.num_rows} rows"
            )
        return self._take_field(field, rows)

    def _take_field(self, field: LanceField, rows: np.ndarray) -> pa.Array:
        if self.tail.version != (2, 0):
            chains = structure_v2_1.leaf_paths(field)
            arrays = [
                self._take_column(self._column(chain[-1]), rows, structure_v2_1.path_type(chain), chain[-1])
                for chain in chains
            ]
            return structure_v2_1.merge(field, arrays, self.path)
        col = self._column(field)
        if field.is_struct and not field.is_packed:
            children = [self._take_field(c, rows) for c in field.children]
            return (
                pa.StructArray.from_arrays(children, fields=[c.to_arrow() for c in field.children])
                if children
                else pa.nulls(len(rows), field.arrow_type())
            )
        if field.is_list:
            counts, valid, firsts = self._list_rows(col, rows, field)
            if valid is not None:  # the items under a null row are not needed
                counts = np.where(valid, counts, 0)
            item_rows = range_positions(firsts, counts)
            items = self._take_field(field.children[0], item_rows)
            return structure_v2_0.lengths_to_list(
                field.arrow_type(), counts, valid, items, self.path, field.name
            )
        return self._take_column(col, rows, field.arrow_type(), field)

    def _take_column(
        self, col: int, rows: np.ndarray, arrow_type: pa.DataType, field: LanceField
    ) -> pa.Array:
        starts = self._starts(col, field)
        if not len(rows):
            return pa.array([], arrow_type)
        if rows[-1] >= starts[-1]:
            raise CorruptFileError(
                self.path, f"column {col} ({field.name!r}) has {starts[-1]} rows, need {int(rows[-1]) + 1}"
            )
        p = bisect.bisect_right(starts, int(rows[0])) - 1
        if int(rows[-1]) < starts[p + 1]:  # one page (a point lookup, a limit's rows): no arrays
            page_list, cuts, locals_all = [p], [], rows - starts[p]
        else:
            first_rows = np.asarray(starts, np.int64)
            page_of = np.searchsorted(first_rows, rows, side="right") - 1
            cut_at = np.flatnonzero(page_of[1:] != page_of[:-1]) + 1
            # per page only slices (a take over many small pages: numpy calls cost microseconds each)
            locals_all = rows - first_rows[page_of]
            cuts = cut_at.tolist()
            page_list = page_of[np.append(0, cut_at)].tolist()
        pages_meta = self.tail.columns[col].pages
        pieces: list[pa.Array] = []
        run: list[tuple[int, np.ndarray]] = []  # pages to decode row by row, in order
        for p, lo, hi in zip(page_list, [0] + cuts, cuts + [len(rows)]):
            local = locals_all[lo:hi]
            whole = self._cached(col, p)
            if whole is None and hi - lo > WHOLE_PAGE_SHARE * pages_meta[p].length:
                whole = self._decode_pages(col, [p], arrow_type, field)[0]
                with self._lock:
                    self._cache[col] = (p, whole)
            if whole is None:
                run.append((p, local))
                continue
            pieces += self._decode_run(col, run, arrow_type, field)
            run = []
            pieces.append(whole.take(pa.array(local)))
        return concat_pages(pieces + self._decode_run(col, run, arrow_type, field), arrow_type)

    def _decode_run(
        self,
        col: int,
        run: list[tuple[int, np.ndarray]],
        arrow_type: pa.DataType,
        field: LanceField,
    ) -> list[pa.Array]:
        """Rows ``run[i][1]`` of pages ``run[i][0]``: all in one call of the page decoder's
        ``decode_pages_rows`` (``PageRowDecoder``) where it has one and accepts them (a take
        spread over many pages then decodes, builds and checks once), else page by page."""
        first = self._row_page(col, run[0][0], arrow_type, field) if len(run) > 1 else None
        decoder = registry.page_decoders.get(first[1].type_url) if first else None
        batch = getattr(decoder, "decode_pages_rows", None)
        if first is not None and batch is not None:
            pages = [first] + [self._row_page(col, p, arrow_type, field) for p, _ in run[1:]]
            if all(encoding.type_url == first[1].type_url for _, encoding in pages):
                args = [(encoding, page, local) for (page, encoding), (_, local) in zip(pages, run)]
                where = f"{first[0].where} to {run[-1][0]}"
                total = sum(len(local) for _, local in run)
                out = guarded(lambda: batch(args), where, first[1])
                if out is not None:  # the decoder took them: checked as one page's rows are
                    return [checked_page(lambda: out, where, arrow_type, total, first[1])]
        return [self._decode_rows(col, p, local, arrow_type, field) for p, local in run]

    def _row_page(
        self, col: int, p: int, arrow_type: pa.DataType, field: LanceField
    ) -> tuple[PageInput, any_pb2.Any]:
        """Page ``p`` of column ``col`` as a row decoder reads it (buffers read on demand), and its encoding.

        What does not depend on the rows (the page's checks, encoding, buffer places) is kept per
        page (``_page_setup``): a point lookup reads the same pages query after query."""
        key = (self.tail.token, col, p)
        setup = self._page_setup(col, p, field)
        source = self._held_first if self._small else self._reader
        buffers = PageBuffers(source, setup.offsets, setup.sizes, setup.where)
        return PageInput(buffers, setup.meta.length, arrow_type, setup.where, key), setup.encoding

    def _decode_rows(
        self, col: int, p: int, local: np.ndarray, arrow_type: pa.DataType, field: LanceField
    ) -> pa.Array:
        page, encoding = self._row_page(col, p, arrow_type, field)
        by_rows = row_decoder(encoding)
        if by_rows is None:  # no row-range capability: the whole page, checked before ``take`` reads it
            whole = checked_page(
                lambda: decode_page(encoding, page), page.where, arrow_type, page.num_rows, encoding
            )
            return whole.take(pa.array(local))
        return checked_page(
            lambda: by_rows(encoding, page, local), page.where, arrow_type, len(local), encoding
        )

    def _list_rows(
        self, col: int, rows: np.ndarray, field: LanceField
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """A 2.0 list column's item counts and validity at ``rows``, and each row's first item."""
        starts = np.asarray(self._starts(col, field), np.int64)
        items_before = np.zeros(len(starts), np.int64)
        page_of = np.searchsorted(starts, rows, side="right") - 1
        pages = sets.unique(page_of)
        if len(pages):
            np.cumsum(
                [self._num_items(col, p) for p in range(int(pages[-1]))],
                out=items_before[1 : int(pages[-1]) + 1],
            )
        counts, valids, firsts = [], [], []
        for p in pages.tolist():
            local = rows[page_of == p] - starts[p]
            page = self._read_column(
                col, int(starts[p]), int(starts[p + 1]), structure_v2_0.LIST_PAGE_TYPE, field
            )
            page_counts, page_valid = structure_v2_0.item_counts(page)
            counts.append(page_counts[local])
            valids.append(np.ones(len(local), bool) if page_valid is None else page_valid[local])
            firsts.append(items_before[p] + np.cumsum(page_counts)[local] - page_counts[local])
        if not counts:
            return np.zeros(0, np.int64), None, np.zeros(0, np.int64)
        valid = np.concatenate(valids)
        return np.concatenate(counts), (None if valid.all() else valid), np.concatenate(firsts)
