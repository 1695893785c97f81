"""``LanceDataset.scanner(...)``: pylance's scan options over the dataset's batch stream.

Lazy: batches are produced on demand, so ``limit`` stops reading fragments early.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from lance_fw.errors import InvalidArgumentError
from lance_fw.query.projection import Projection


class LanceScanner:
    def __init__(self, ds, columns=None, filter=None, limit: int | None = None, offset: int | None = None,
                 with_row_id: bool = False, with_row_address: bool = False, batch_size: int | None = None,
                 fragments=None, **_ignored):
        self.projection = Projection(columns, ds.schema) if isinstance(columns, dict) else None
        if (limit is not None and limit < 0) or (offset is not None and offset < 0):
            raise InvalidArgumentError("limit and offset must not be negative")
        self._ds, self.columns, self.filter = ds, columns, filter
        self.limit, self.offset = limit, offset or 0
        self.with_row_id, self.with_row_address = with_row_id, with_row_address
        self.batch_size, self.fragments = batch_size, fragments

    @property
    def _read_columns(self) -> list[str] | None:
        return self.projection.columns if self.projection is not None else self.columns

    @property
    def projected_schema(self) -> pa.Schema:
        fields = list(self.projection.schema) if self.projection is not None else \
            [f.to_arrow() for f in self._ds._fields(self.columns)]
        if self.with_row_id:
            fields.append(pa.field("_rowid", pa.uint64()))
        if self.with_row_address:
            fields.append(pa.field("_rowaddr", pa.uint64()))
        return pa.schema(fields)

    def _raw(self) -> Iterator[pa.RecordBatch]:
        ids = None if self.fragments is None else {getattr(f, "fragment_id", f) for f in self.fragments}
        extra = [n for n, on in (("_rowid", self.with_row_id), ("_rowaddr", self.with_row_address)) if on]
        for batch in self._ds.to_batches(self._read_columns, self.filter, self.batch_size, self.with_row_address,
                                         fragment_ids=ids, with_row_id=self.with_row_id):
            if self.projection is not None:
                tail = [batch.column(n) for n in extra]
                projected = self.projection.apply(batch.drop_columns(extra))
                batch = pa.RecordBatch.from_arrays([c.combine_chunks() for c in projected.columns] + tail,
                                                   names=projected.column_names + extra)
            yield batch

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        skip, left = self.offset, self.limit
        for batch in self._raw():
            if skip:
                cut = min(skip, batch.num_rows)
                batch, skip = batch.slice(cut), skip - cut
            if left is not None:
                batch = batch.slice(0, left)
                left -= batch.num_rows
            if batch.num_rows:
                yield batch
            if left == 0:
                return  # stop reading: the generator chain is closed here

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self.to_batches())
