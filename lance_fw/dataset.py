"""``lance_fw.dataset``: the module pylance users import classes from
(``from lance.dataset import LanceDataset, LanceScanner, MergeInsertBuilder``).

As in pylance, the package attribute ``lance_fw.dataset`` is the ``dataset()`` function; this module
is what ``import lance_fw.dataset`` / ``from lance_fw.dataset import ...`` load.
"""

from lance_fw.api.blobs import DEFAULT_BLOB_BUFFER_SIZE, BlobFile
from lance_fw.api.dataset import DatasetOptimizer, LanceDataset, LanceFragment, Tags
from lance_fw.api.dataset_extras import LanceStats
from lance_fw.api.dataset_names import (
    Branch,
    Branches,
    BulkCommitResult,
    ColumnOrdering,
    DatasetDelta,
    IndexInformation,
    SqlQuery,
    SqlQueryBuilder,
    VectorIndexReader,
    VectorSearchQuery,
    serialize_row_addrs,
)
from lance_fw.api.distributed import FragmentMetadata, LanceOperation
from lance_fw.api.result_types import (
    AlterColumn,
    AutoCleanupConfig,
    DatasetStats,
    DataStatistics,
    DeleteResult,
    ExecuteResult,
    FieldStatistics,
    Tag,
    UpdateResult,
    Version,
    VersionRef,
)
from lance_fw.api.scanner_builder import ScannerBuilder
from lance_fw.api.transactions import Index, IndexFile
from lance_fw.api.write import write_dataset
from lance_fw.query.scanner import LanceScanner
from lance_fw.table.cleanup import CleanupStats
from lance_fw.table.compaction import CompactionMetrics
from lance_fw.table.merge_insert import MergeInsertBuilder, Transaction
from lance_fw.table.write import COMMIT_MESSAGE_KEY as LANCE_COMMIT_MESSAGE_KEY

__all__ = [
    "DEFAULT_BLOB_BUFFER_SIZE",
    "LANCE_COMMIT_MESSAGE_KEY",
    "AlterColumn",
    "AutoCleanupConfig",
    "BlobFile",
    "Branch",
    "Branches",
    "BulkCommitResult",
    "CleanupStats",
    "ColumnOrdering",
    "CompactionMetrics",
    "DataStatistics",
    "DatasetDelta",
    "DatasetOptimizer",
    "DatasetStats",
    "DeleteResult",
    "ExecuteResult",
    "FieldStatistics",
    "FragmentMetadata",
    "Index",
    "IndexFile",
    "IndexInformation",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "LanceScanner",
    "LanceStats",
    "MergeInsertBuilder",
    "ScannerBuilder",
    "SqlQuery",
    "SqlQueryBuilder",
    "Tag",
    "Tags",
    "Transaction",
    "UpdateResult",
    "VectorIndexReader",
    "VectorSearchQuery",
    "Version",
    "VersionRef",
    "serialize_row_addrs",
    "write_dataset",
]
