"""``LanceFragment``: one fragment of one dataset version, with pylance's names.

A fragment keeps the dataset version it was taken from (``get_fragments`` hands it a snapshot of
the dataset object), so a later mutation of that object does not change what it reads. Its scans
take pylance's fragment-scan options and ignore the dataset's ``default_scan_options``, as pylance.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.options import Columns, Filter, Unsupported
from lance_fw.query.scanner import LanceScanner
from lance_fw.table.deletion import deleted_rows, deletion_path

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


class LanceFragment:
    """One fragment of a dataset version (pylance's ``LanceFragment`` names)."""

    def __init__(self, ds: LanceDataset, metadata: table_pb2.DataFragment) -> None:
        self._ds, self.metadata = ds, metadata

    @property
    def fragment_id(self) -> int:
        return self.metadata.id

    @property
    def physical_rows(self) -> int:
        return self.metadata.physical_rows

    @property
    def num_deletions(self) -> int:
        return deleted_rows(self.metadata)

    def count_rows(self, filter: Filter | None = None) -> int:
        if filter is not None:
            return self.scanner(columns=[], filter=filter).count_rows()
        return self.physical_rows - self.num_deletions

    def data_files(self) -> list:
        return list(self.metadata.files)

    def deletion_file(self) -> str | None:
        """The deletion file's path relative to the dataset root (pylance's form), or None."""
        if not self.metadata.HasField("deletion_file"):
            return None
        d = self.metadata.deletion_file
        return deletion_path("", self.fragment_id, d.read_version, d.id, d.file_type).lstrip("/")

    def head(self, num_rows: int) -> pa.Table:
        return self.scanner(limit=num_rows).to_table()

    def scanner(
        self,
        *,
        columns: Columns | None = None,
        batch_size: int | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = 16,
        blob_handling: str | None = None,
        order_by: Unsupported = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: Unsupported = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> LanceScanner:
        """A scan of this fragment only; ``offset``/``limit`` count its live (or matching) rows."""
        return LanceScanner(
            self._ds._snapshot,
            columns,
            filter,
            limit,
            offset,
            batch_size=batch_size,
            batch_size_bytes=batch_size_bytes,
            batch_readahead=batch_readahead,
            fragments=[self],
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            blob_handling=blob_handling,
            use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows,
            strict_batch_size=strict_batch_size,
            order_by=order_by,
        )

    def to_batches(
        self,
        *,
        columns: Columns | None = None,
        batch_size: int | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = 16,
        blob_handling: str | None = None,
        order_by: Unsupported = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: Unsupported = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(**{k: v for k, v in locals().items() if k != "self"}).to_batches()

    def to_table(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_handling: str | None = None,
        order_by: Unsupported = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: Unsupported = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> pa.Table:
        return self.scanner(**{k: v for k, v in locals().items() if k != "self"}).to_table()

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"
