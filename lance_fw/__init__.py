"""lance_fw: a pure-Python implementation of the Lance columnar format.

Switching from pylance is a one-line change: ``import lance_fw as lance``.
"""

from lance_fw import (
    blob,  # noqa: F401  (pylance users import lance.blob)
    fragment,  # noqa: F401  (pylance users import lance.fragment)
    indices,  # noqa: F401  (pylance users import lance.indices)
    optimize,  # noqa: F401  (pylance users import lance.optimize)
    progress,  # noqa: F401  (pylance users import lance.progress)
    udf,  # noqa: F401  (pylance users import lance.udf)
)
from lance_fw import dataset as _dataset_module  # noqa: F401  (``from lance.dataset import ...``)
from lance_fw._version import __version__
from lance_fw.api.dataset import LanceDataset, LanceFragment, dataset
from lance_fw.api.distributed import FragmentMetadata, LanceOperation, write_fragments
from lance_fw.api.result_types import DataStatistics, FieldStatistics
from lance_fw.api.toplevel_names import (
    BlobDescriptor,
    BlobDescriptorArrayBuilder,
    CleanupCandidateFile,
    CleanupExplanation,
    CleanupReferencedBranch,
    CompactedSsTable,
    DatasetBasePath,
    DedicatedBlobWriter,
    ExecutionPlan,
    FFILanceTableProvider,
    FtsToken,
    LsmPointLookupPlanner,
    LsmScanner,
    LsmVectorSearchPlanner,
    PackedBlobWriter,
    ScanStatistics,
    ShardingField,
    ShardingSpec,
    ShardSnapshot,
    ShardWriter,
    bytes_read_counter,
    evaluate_sharding_spec,
    iops_counter,
    set_logger,
    simd_info,
    tokenize,
)
from lance_fw.api.transactions import Index, IndexFile
from lance_fw.api.write import write_dataset
from lance_fw.blob import Blob, BlobArray, BlobColumn, BlobFile, blob_array, blob_field
from lance_fw.errors import LanceError
from lance_fw.plugin_manager import plugins
from lance_fw.progress import IndexProgress
from lance_fw.query.scanner import LanceScanner
from lance_fw.schema_json import json_to_schema, schema_to_json
from lance_fw.table.cleanup import CleanupStats
from lance_fw.table.merge_insert import MergeInsertBuilder, Transaction
from lance_fw.udf import batch_udf

__all__ = [
    "Blob",
    "BlobArray",
    "BlobColumn",
    "BlobDescriptor",
    "BlobDescriptorArrayBuilder",
    "BlobFile",
    "CleanupCandidateFile",
    "CleanupExplanation",
    "CleanupReferencedBranch",
    "CleanupStats",
    "CompactedSsTable",
    "DataStatistics",
    "DatasetBasePath",
    "DedicatedBlobWriter",
    "ExecutionPlan",
    "FFILanceTableProvider",
    "FieldStatistics",
    "FragmentMetadata",
    "FtsToken",
    "Index",
    "IndexFile",
    "IndexProgress",
    "LanceDataset",
    "LanceError",
    "LanceFragment",
    "LanceOperation",
    "LanceScanner",
    "LsmPointLookupPlanner",
    "LsmScanner",
    "LsmVectorSearchPlanner",
    "MergeInsertBuilder",
    "PackedBlobWriter",
    "ScanStatistics",
    "ShardSnapshot",
    "ShardWriter",
    "ShardingField",
    "ShardingSpec",
    "Transaction",
    "__version__",
    "batch_udf",
    "blob_array",
    "blob_field",
    "bytes_read_counter",
    "dataset",
    "evaluate_sharding_spec",
    "iops_counter",
    "json_to_schema",
    "plugins",
    "schema_to_json",
    "set_logger",
    "simd_info",
    "tokenize",
    "write_dataset",
    "write_fragments",
]
