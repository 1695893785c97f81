"""``LanceFragment``: one fragment of one dataset version, with pylance's names.

A fragment keeps the dataset version it was taken from (``get_fragments`` hands it a snapshot of
the dataset object), so a later mutation of that object does not change what it reads. Its scans
take pylance's fragment-scan options and ignore the dataset's ``default_scan_options``, as pylance.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.api._forwarding import derived_method, same_options
from lance_fw.api.fragment_extras import FragmentExtras
from lance_fw.api.fragment_metadata import FragmentMetadata
from lance_fw.options import Columns, Filter, Unsupported
from lance_fw.query.scanner import LanceScanner
from lance_fw.table.deletion import deleted_rows, deletion_path

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


def _scan_batches(fragment: LanceFragment, options: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    return fragment.scanner(**options).to_batches()


def _scan_table(fragment: LanceFragment, options: dict[str, Any]) -> pa.Table:
    return fragment.scanner(**options).to_table()


class LanceFragment(FragmentExtras):
    """One fragment of a dataset version (pylance's ``LanceFragment`` names)."""

    def __init__(self, ds: LanceDataset, metadata: table_pb2.DataFragment) -> None:
        self._ds, self._message = ds, metadata

    @property
    def metadata(self) -> FragmentMetadata:
        """pylance's ``FragmentMetadata`` of this fragment (the manifest's ``DataFragment``)."""
        return FragmentMetadata(self._message)

    @property
    def fragment_id(self) -> int:
        return self._message.id

    @property
    def physical_rows(self) -> int:
        return self._message.physical_rows

    @property
    def num_deletions(self) -> int:
        return deleted_rows(self._message)

    def count_rows(self, filter: Filter | None = None) -> int:
        if filter is not None:
            return self.scanner(columns=[], filter=filter).count_rows()
        return self.physical_rows - self.num_deletions

    def data_files(self) -> list:
        return list(self._message.files)

    def deletion_file(self) -> str | None:
        """The deletion file's path relative to the dataset root (pylance's form), or None."""
        if not self._message.HasField("deletion_file"):
            return None
        d = self._message.deletion_file
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
        options = {k: v for k, v in locals().items() if k != "self"}
        return LanceScanner(self._ds._snapshot, fragments=[self], **options)

    to_batches = same_options(
        scanner, _scan_batches, "to_batches", "``scanner(...).to_batches()``, with pylance's options."
    )
    to_table = derived_method(
        scanner,
        _scan_table,
        "to_table",
        "``scanner(...).to_table()``: pylance's list is ``scanner``'s, positional, less the batch sizes.",
        drop=("batch_size", "batch_readahead"),
        positional=True,
    )

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"
