"""What DuckDB scans for one ``lance_scan`` call: a ``pyarrow.dataset.Dataset`` over one snapshot."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import LanceError, SchemaError, UnsupportedFeatureError
from lance_fw.options import Columns, Filter
from lance_fw.query.scanner import LanceScanner
from lance_fw.table.rows import DEFAULT_BATCH_SIZE

#: Fragments DuckDB scans decode at once (worker threads; see ``query.scanner.readahead``).
READAHEAD = min(4, os.cpu_count() or 1)
#: Most rows per batch handed to DuckDB when it does not ask for a size (it never does). DuckDB needs
#: no pylance batch boundaries, and every batch costs a Python round trip (a pull under the GIL, a
#: readahead handoff, a decode call per column, and with a filter one probe of the filter's columns,
#: ``table.fragment.PROBE_ROWS`` or the batch size if larger), which 8192-row batches paid ~250 times
#: per 2M rows. Measured over 2M rows, same process, against 64Ki rows / 16 MiB: ``id = k`` 16 -> 13
#: ms, ``sum(value) WHERE category < 5`` 29 -> 23, group-by 21 -> 19; ``SELECT * LIMIT 10`` and
#: wide filtered scans unchanged, because ``BATCH_BYTES`` keeps their batches small.
BATCH_SIZE = 262144
#: Bytes a DuckDB batch aims at, so wide rows get fewer rows: ``SELECT * ... LIMIT 10`` decodes
#: only its first batch's pages (256Ki rows of all columns made it 4x slower), and the batches
#: readahead holds (``READAHEAD`` fragments, two batches each) stay bounded (a 1536-float vector
#: is 6 KiB a row).
BATCH_BYTES = 8 * 2**20
#: Fewest rows per batch: the scanner's default, what DuckDB was given before ``BATCH_SIZE``.
MIN_BATCH_SIZE = DEFAULT_BATCH_SIZE
#: Rows of the scan's first batch (``LanceScanner.stream``): DuckDB pulls exactly one batch for
#: ``SELECT ... LIMIT 10``, which at ``BATCH_SIZE`` rows decoded a 256Ki-row batch of each of
#: ``READAHEAD`` fragments (2 numeric columns of pylance's 8192-row pages: 32 ms, pylance 7.6 ms).
#: One DuckDB vector: the batch is taken (only the chunks holding it decoded), and a full scan
#: pays that take besides its pages (2 columns: 1.3 ms at 2048 rows, 2.3 at 8192; 5: 3.5 / 7.2).
FIRST_BATCH_SIZE = 2048
#: Rows an index lookup finds up to which DuckDB is handed them read (``_ReportingScanner.to_reader``).
EAGER_ROWS = 8192
#: Bytes assumed for one value of a variable-width type (string, binary, list): only an estimate
#: for sizing batches, never used to read.
VARIABLE_WIDTH_BYTES = 32


def batch_rows(schema: pa.Schema, columns: Columns | None) -> int:
    """Rows per batch for a DuckDB scan of ``columns``: ``BATCH_BYTES`` of estimated row width,
    within [``MIN_BATCH_SIZE``, ``BATCH_SIZE``]."""
    names = columns if isinstance(columns, list) else schema.names
    width = sum(_value_bytes(schema.field(n).type) for n in names if schema.get_field_index(n) >= 0)
    return max(MIN_BATCH_SIZE, min(BATCH_SIZE, BATCH_BYTES // max(width, 1)))


def _value_bytes(t: pa.DataType) -> int:
    if isinstance(t, pa.FixedSizeListType):
        return t.list_size * _value_bytes(t.value_type)
    if isinstance(t, pa.StructType):
        return sum(_value_bytes(t.field(i).type) for i in range(t.num_fields))
    try:
        return (t.bit_width + 7) // 8
    except ValueError:  # not fixed width
        return VARIABLE_WIDTH_BYTES


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
                batch_size=batch_size or batch_rows(self.schema, columns),
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


class LiveDataset(pads.Dataset):
    """What a statement offers DuckDB under a ``lance_scan`` name: ``resolve()`` gives the dataset of the
    statement reading it (its snapshot, opened at the first ask), so the object DuckDB holds on to
    (a relation keeps the one it was created with) reads the latest version at every statement.

    DuckDB reads ``schema`` when it binds; a relation bound once and fetched later does not ask again.
    If the version a later fetch reads has another schema, the scan raises ``SchemaError`` rather than
    hand DuckDB columns that differ from those it bound.
    """

    def __init__(self, resolve: Callable[[], DuckDBDataset]) -> None:
        self._resolve = resolve
        self._declared: pa.Schema | None = None

    @property
    def schema(self) -> pa.Schema:
        schema = self._resolve().schema
        self._declared = schema
        return schema

    def scanner(
        self, columns: Columns | None = None, filter: Filter | None = None, batch_size: int | None = None
    ) -> _ReportingScanner:
        dataset = self._resolve()
        if self._declared is not None and not dataset.schema.equals(self._declared):
            error = SchemaError(
                f"lance_scan: the dataset's schema changed since this statement was bound (now version "
                f"{dataset._lance.version}); create the relation again to read it"
            )
            dataset._on_error(error)
            raise error
        return dataset.scanner(columns=columns, filter=filter, batch_size=batch_size)

    def count_rows(self, filter: Filter | None = None) -> int:
        return self._resolve().count_rows(filter)


#: The one column DuckDB reads from a ``LiveRowCount``: nulls, one a row (a name no macro's body
#: should happen to name).
ROWS_COLUMN = "__lance_fw_rows__"
#: Rows per batch of nulls (a ``NullArray`` holds no buffers: batches are free, DuckDB counts them).
NULL_BATCH_ROWS = 1 << 20


class LiveRowCount(pads.Dataset):
    """What a query that reads none of a ``lance_scan``'s columns scans in its place
    (``SELECT count(*) FROM lance_scan('p')``, ``names.direct_reads``): as many rows as the
    statement's snapshot holds (its live rows, from the manifest and deletion files), each a null,
    so DuckDB computes the query itself over no data read.
    """

    SCHEMA = pa.schema([pa.field(ROWS_COLUMN, pa.null())])

    def __init__(self, resolve: Callable[[], DuckDBDataset]) -> None:
        self._resolve = resolve

    @property
    def schema(self) -> pa.Schema:
        self._resolve()  # opened while DuckDB binds, as ``LiveDataset`` is: a missing dataset fails there
        return self.SCHEMA

    def scanner(
        self, columns: Columns | None = None, filter: Filter | None = None, batch_size: int | None = None
    ) -> _NullRows:
        if filter is not None or (columns is not None and list(columns) not in ([], [ROWS_COLUMN])):
            # a query that names no column gives DuckDB nothing to push down
            raise UnsupportedFeatureError(
                f"lance_scan: a scan of rows alone asked for columns {columns} with filter {filter}"
            )
        return _NullRows(self._resolve().count_rows(), batch_size or NULL_BATCH_ROWS)

    def count_rows(self, filter: Filter | None = None) -> int:
        return self._resolve().count_rows(filter)


class _NullRows:
    """``rows`` nulls in batches of ``batch_rows``."""

    def __init__(self, rows: int, batch_rows: int) -> None:
        self._rows = rows
        self._batch_rows = batch_rows

    @property
    def projected_schema(self) -> pa.Schema:
        return LiveRowCount.SCHEMA

    def to_reader(self) -> pa.RecordBatchReader:
        batches = (
            pa.record_batch([pa.nulls(min(self._batch_rows, self._rows - start))], schema=LiveRowCount.SCHEMA)
            for start in range(0, self._rows, self._batch_rows)
        )
        return pa.RecordBatchReader.from_batches(LiveRowCount.SCHEMA, batches)


class _ReportingScanner:
    """A lance_fw scanner whose reader reports a ``LanceError`` before DuckDB wraps it."""

    def __init__(self, scanner: LanceScanner, on_error: Callable[[LanceError], None]) -> None:
        self._scanner = scanner
        self._on_error = on_error

    @property
    def projected_schema(self) -> pa.Schema:
        return self._scanner.projected_schema

    def to_reader(self) -> pa.RecordBatchReader:
        found = self._scanner.index_rows()
        if found is not None and found <= EAGER_ROWS:
            # an index lookup's few rows, read now: DuckDB's threads then pull them from Arrow's own
            # reader, never waiting on the GIL for a Python one (a B-tree point lookup: ~0.5 ms)
            try:
                table = self._scanner.to_table()
            except LanceError as exc:
                self._on_error(exc)
                raise
            return table.to_reader()
        # the scanner's own batches, not its pyarrow reader, which would turn a LanceError into
        # OSError; the scan's first batch short and read alone: DuckDB pulls one batch for a LIMIT 10
        inner = self._scanner.stream(FIRST_BATCH_SIZE)

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
