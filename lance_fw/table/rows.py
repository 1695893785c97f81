"""What a fragment read is asked for (``Rows``) and the row columns its batches may carry.

Apart from ``fragment`` (which reads) so that the scan, the Spark reader and the DuckDB adapter
can name a read's shape without the reader, and so that each module keeps to one job."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lance_fw.schema import LanceField

#: Rows a read hands on per batch unless asked otherwise (pylance's default).
DEFAULT_BATCH_SIZE = 8192
#: Rows per batch of a read whose batches nobody sees, only the table they make (merge_insert's
#: join keys and row addresses): each batch is a read and a slice of its own, and the rows of a
#: fragment read at once decode as one run. Keys and addresses of 2M rows: 27.5 ms in 8192-row
#: batches, 14.1 in these.
WHOLE_READ_BATCH_SIZE = 1 << 20
#: The row columns a read may add (pylance's names).
ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"


def with_row_columns(schema: pa.Schema, with_row_id: bool, with_row_address: bool) -> pa.Schema:
    """``schema`` followed by the ``_rowid`` / ``_rowaddr`` columns a scan was asked for."""
    if with_row_id:
        schema = schema.append(pa.field(ROW_ID, pa.uint64()))
    if with_row_address:
        schema = schema.append(pa.field(ROW_ADDRESS, pa.uint64()))
    return schema


@dataclass
class Skip:
    """A count of rows still to drop from the start of a scan's output, shared by the scan and
    its first fragment's read (``Rows.skip``)."""

    rows: int


@dataclass(frozen=True)
class Rows:
    """What a fragment read emits: ``fields`` of physical rows [start, stop) (live ones only), in
    batches of ``batch_size``, with the ``_rowid`` / ``_rowaddr`` columns asked for."""

    fields: list[LanceField]
    batch_size: int = DEFAULT_BATCH_SIZE
    with_row_address: bool = False
    with_row_id: bool = False
    start: int = 0
    stop: int | None = None
    #: The consumer takes every batch (``to_table``), or has taken a stream's first batch (the
    #: fragments after the first, ``LanceScanner._pieces``): the reads decode for the whole, not
    #: to hand out the first batch soon (``LanceFileReader.scan_runs``).
    whole: bool = False
    #: A first batch (or filter probe) of this many rows (at most ``batch_size``), read alone
    #: (``FragmentReader.read_range``), then ``batch_size``: for a consumer that may stop after
    #: one batch and needs no pylance batch boundaries (DuckDB).
    first_batch: int | None = None
    #: The consumer uses at most this many of the rows (a limit's ``offset + limit``): a filtered
    #: read fetches the other columns of no more matches, and stops once it has that many.
    most: int | None = None
    #: Rows the consumer drops first (a scan's ``offset``, given to its first fragment): a
    #: filtered read drops that many matches before fetching their columns, lowering the count.
    skip: Skip | None = None

    def schema(self) -> pa.Schema:
        return with_row_columns(
            pa.schema([f.to_arrow() for f in self.fields]), self.with_row_id, self.with_row_address
        )


def probe_schema(filter_fields: list[LanceField]) -> pa.Schema:
    """A filter's probe batch: its columns, ``_rowid`` and ``_rowaddr`` (filters may read both)."""
    return Rows(filter_fields, with_row_address=True, with_row_id=True).schema()


def filter_schema(filter_fields: list[LanceField]) -> pa.Schema:
    """A probe of a filter that names no row column: its columns only."""
    return Rows(filter_fields).schema()
