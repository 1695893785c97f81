"""lance_fw: a pure-Python implementation of the Lance columnar format.

Switching from pylance is a one-line change: ``import lance_fw as lance``.
"""

__version__ = "0.1.0"

from lance_fw.api.dataset import LanceDataset, LanceFragment, dataset  # noqa: E402
from lance_fw.api.distributed import FragmentMetadata, LanceOperation, write_fragments  # noqa: E402
from lance_fw.api.write import write_dataset  # noqa: E402
from lance_fw.errors import LanceError  # noqa: E402
from lance_fw.plugin_manager import plugins  # noqa: E402
from lance_fw.query.scanner import LanceScanner  # noqa: E402
from lance_fw.table.merge_insert import MergeInsertBuilder  # noqa: E402
from lance_fw import fragment  # noqa: E402,F401  (pylance users import lance.fragment)

__all__ = ["FragmentMetadata", "LanceDataset", "LanceFragment", "LanceError", "LanceOperation", "LanceScanner",
           "MergeInsertBuilder", "dataset", "plugins", "write_dataset", "write_fragments", "__version__"]
