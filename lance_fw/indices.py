"""``lance_fw.indices``: pylance's ``lance.indices`` module (``from lance.indices import IvfModel``).

The names live in ``lance_fw.api.index_models``; this module is where pylance users import them.
"""

from lance_fw.api.index_models import (
    IndexConfig,
    IndexFileVersion,
    IndexSegment,
    IndexSegmentDescription,
    IndicesBuilder,
    IvfModel,
    PqModel,
)

__all__ = [
    "IndexConfig",
    "IndexFileVersion",
    "IndexSegment",
    "IndexSegmentDescription",
    "IndicesBuilder",
    "IvfModel",
    "PqModel",
]
