"""``lance_fw.optimize``: the module pylance users import compaction objects from
(``from lance.optimize import Compaction``) to compact a dataset across several processes.
"""

from lance_fw.api.compaction import (
    Compaction,
    CompactionMetrics,
    CompactionOptions,
    CompactionPlan,
    CompactionTask,
    RewriteResult,
)

__all__ = [
    "Compaction",
    "CompactionMetrics",
    "CompactionOptions",
    "CompactionPlan",
    "CompactionTask",
    "RewriteResult",
]
