"""What DuckDB scans for one ``lance_scan`` call: a ``pyarrow.dataset.Dataset`` over one snapshot."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import LanceError
from lance_fw.options import Columns, Filter
from lance_fw.query.scanner import LanceScanner

#: Fragments DuckDB scans decode at once (worker threads; see ``query.scanner.readahead``).
READAHEAD = min(4, os.cpu_count() or 1)
#: Rows per batch handed to DuckDB when it does not ask for a size (it never does). DuckDB needs no
#: pylance batch boundaries, and every batch costs a Python round trip (a pull under the GIL, a
#: readahead handoff, a decode call per column), which 8192-row batches paid ~250 times per 2M rows:
#: ``ORDER BY value DESC LIMIT 10`` over 2M rows went from ~40 to ~31 ms with 64Ki rows. Larger gained
#: nothing measurable and cost memory (64Ki rows of a 32-float vector column are 8 MiB); it is also
#: the filter's probe size (``table.fragment.PROBE_ROWS``), so filtered scans decode no more per pull.
#: A ``LIMIT`` still stops after the first batch that fills it.
BATCH_SIZE = 65536


class DuckDBDataset(pads.Dataset):
    """DuckDB calls ``scanner(columns=[...], filter=Expression)`` then ``to_reader()``; the filter is
    applied exactly (DuckDB does not re-check it).

    A ``LanceError`` raised while DuckDB reads reaches the user wrapped in a DuckDB error that keeps only
    its text; ``on_error`` hears it first, so the statement runner can raise the typed error instead.
    """

    def __init__(self, ds: LanceDataset, on_error: Callable[[LanceError], None] | None = None) -> None:
        # pyarrow's Dataset has no Python-level constructor to call.
        self._lance = ds
        self._on_error = on_error or (lambda exc: None)

    @property
    def schema(self) -> pa.Schema:
        return self._lance.schema

    def scanner(
        self, columns: Columns | None = None, filter: Filter | None = None, batch_size: int | None = None
    ) -> _ReportingScanner:
        """Fragments are decoded up to ``READAHEAD`` at a time in worker threads, lazily and with
        bounded buffers (DuckDB stops pulling at a LIMIT, so little is read ahead)."""
        try:
            scanner = self._lance.scanner(
                columns=columns,
                filter=filter,
                batch_size=batch_size or BATCH_SIZE,
                fragment_readahead=READAHEAD,
            )
        except LanceError as exc:
            self._on_error(exc)
            raise
        return _ReportingScanner(scanner, self._on_error)

    def count_rows(self, filter: Filter | None = None) -> int:
        if filter is None:
            return self._lance.count_rows()
        return sum(batch.num_rows for batch in self.scanner(columns=[], filter=filter).to_reader())


class _ReportingScanner:
    """A lance_fw scanner whose reader reports a ``LanceError`` before DuckDB wraps it."""

    def __init__(self, scanner: LanceScanner, on_error: Callable[[LanceError], None]) -> None:
        self._scanner = scanner
        self._on_error = on_error

    @property
    def projected_schema(self) -> pa.Schema:
        return self._scanner.projected_schema

    def to_reader(self) -> pa.RecordBatchReader:
        # the scanner's own batches, not its pyarrow reader, which would turn a LanceError into OSError
        inner = self._scanner.to_batches()

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from inner
            except LanceError as exc:
                self._on_error(exc)
                raise
            finally:  # a generator: closing it stops its fragment readahead now, not when collected
                close = getattr(inner, "close", None)
                if close is not None:
                    close()

        return pa.RecordBatchReader.from_batches(self._scanner.projected_schema, batches())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scanner, name)
