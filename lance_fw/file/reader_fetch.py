"""What a ``LanceFileReader`` reads ahead of decoding for a scan: the pages of a scan's next rows
fetched in one call where that pays (an object store), and a run of pages read into one buffer
laid out as its decoder joins them.

Apart from ``reader`` so that each module keeps to one job: ``reader`` plans which pages are
decoded where, this module fetches their bytes.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import numpy as np

from lance_fw._proto import file2_pb2
from lance_fw.file.buffers import pool_empty

if TYPE_CHECKING:
    import threading

    import pyarrow as pa

    from lance_fw.file.container import FileTail
    from lance_fw.file.read_support import PageSetup
    from lance_fw.io.storage import RangeReader
    from lance_fw.schema import LanceField

#: Where each buffer group of a run read into one buffer (``_read_run``) starts: a multiple of
#: this many bytes. Pages' chunk buffers are whole 8-byte words, but the group of their small
#: chunk tables before them is not: a run of pylance's streamed pages had its chunk data 4 bytes
#: off, so every 64-bit unpack copied the run's data to realign it first.
RUN_BUFFER_ALIGN = 64


class PageFetches:
    """The fetching half of ``LanceFileReader`` (its only user), which provides what is declared here."""

    if TYPE_CHECKING:
        tail: FileTail
        _lock: threading.Lock
        _reader: RangeReader
        _prefetched: dict[tuple[int, int], list[memoryview]]

        @property
        def num_rows(self) -> int: ...

        def _cached(self, col: int, page: int) -> pa.Array | None: ...
        def _known(self, col: int, page: int) -> bool: ...
        def _check_page(self, col: int, p: int, meta: file2_pb2.ColumnMetadata.Page) -> None: ...
        def _row_columns(self, fields: list[LanceField]) -> list[tuple[int, LanceField]]: ...
        def _starts(self, col: int, field: LanceField) -> list[int]: ...

    @property
    def fetches_pay(self) -> bool:
        """Whether fetching several ranges at once pays (an object store: a round trip a request)
        rather than reading each where it is needed (local files)."""
        return self._reader.prefetch_pays

    def prefetch(self, fields: list[LanceField], start: int, stop: int) -> None:
        """Fetch, in one ``read_ranges`` call, the buffers of every page the columns of ``fields``
        need for rows [start, stop) that is not decoded yet; the next reads of those rows decode
        from them. Reading column by column costs a round trip per column and page, which on an
        object store dominates a scan; together the ranges coalesce across columns (adjacent in
        the file) and the store fetches them concurrently.

        Columns whose rows are not the file's rows (under a 2.0 list) are left to the read; and
        nothing is fetched where the file's reader says it does not pay (local files)."""
        stop = min(stop, self.num_rows)
        if stop <= start or not self._reader.prefetch_pays:
            return
        wanted: list[tuple[int, int]] = []  # (column, page)
        for col, field in self._row_columns(fields):
            starts = self._starts(col, field)
            first = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_left(starts, stop) - 1
            wanted += [
                (col, p)
                for p in range(max(first, 0), min(last, len(starts) - 2) + 1)
                if (col, p) not in self._prefetched and not self._known(col, p)
            ]
        if not wanted:
            return
        metas = [self.tail.columns[col].pages[p] for col, p in wanted]
        for (col, p), meta in zip(wanted, metas):
            self._check_page(col, p, meta)
        ranges = [(off, size) for m in metas for off, size in zip(m.buffer_offsets, m.buffer_sizes)]
        blobs = iter(self._reader.read_ranges(ranges))
        fetched = {key: [next(blobs) for _ in meta.buffer_offsets] for key, meta in zip(wanted, metas)}
        with self._lock:
            self._prefetched.update(fetched)

    def _read_run(self, setups: list[PageSetup]) -> list[list[memoryview]]:
        """The buffers of a run of pages, read into one buffer laid out buffer by buffer: every
        page's buffer 0, then every page's buffer 1, and so on. A run's decoder joins the pages'
        value buffers end to end; adjacent already, they are joined without a copy
        (``take.joined_bytes``; a 128 MiB vector column: one copy of four gone). The pages'
        buffer places come from their setups' tuples, not from their protobuf messages, whose
        every field read costs a call (hundreds of pages a run)."""
        ranges: list[tuple[int, int]] = []
        at: list[int] = []
        of_page: list[list[int]] = [[] for _ in setups]  # each page's ranges, in buffer order
        total = 0
        for b in range(max(len(setup.offsets) for setup in setups)):
            total = -(-total // RUN_BUFFER_ALIGN) * RUN_BUFFER_ALIGN
            for mine, setup in zip(of_page, setups):
                if b < len(setup.offsets):
                    size = setup.sizes[b]
                    mine.append(len(ranges))
                    ranges.append((setup.offsets[b], size))
                    at.append(total)
                    total += size
        out = pool_empty(total, np.uint8).data
        self._reader.read_into(ranges, out, at)
        return [[out[at[k] : at[k] + ranges[k][1]] for k in ks] for ks in of_page]
