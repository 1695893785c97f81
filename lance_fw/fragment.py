"""``lance_fw.fragment``: the module pylance users import ``write_fragments`` and
``FragmentMetadata`` from (``from lance.fragment import write_fragments``)."""

from lance_fw.api.dataset import LanceFragment
from lance_fw.api.distributed import FragmentMetadata, write_fragments
from lance_fw.api.fragment_metadata import DeletionFile, RowDatasetVersionMeta, RowIdMeta
from lance_fw.api.fragment_records import FragmentSession, RowIdSequence
from lance_fw.api.transactions import DataFile
from lance_fw.table.write import DEFAULT_MAX_BYTES_PER_FILE

__all__ = [
    "DEFAULT_MAX_BYTES_PER_FILE",
    "DataFile",
    "DeletionFile",
    "FragmentMetadata",
    "FragmentSession",
    "LanceFragment",
    "RowDatasetVersionMeta",
    "RowIdMeta",
    "RowIdSequence",
    "write_fragments",
]
