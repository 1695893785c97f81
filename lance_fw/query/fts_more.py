"""pylance's newer ``lance.query`` names: ``DocumentGranularity``, ``MinHashQuery`` (records) and
``CombinedFieldsQuery`` (refused).

Why ``CombinedFieldsQuery`` is refused rather than approximated: it scores BM25F, blending term
statistics across the columns as one virtual field; lance_fw's full-text search scores each column
with its own index's statistics (``fts_search``), so its scores and row order would differ from
pylance's without saying so. ``MinHashQuery`` is a plain record in pylance too; searching with it
needs a MinHash LSH index, which lance_fw does not build or read, and is refused where it is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from lance_fw._util.refusals import refused_function

#: The module pylance users import these from
_MODULE = "lance.query"
#: Why ``CombinedFieldsQuery`` is refused
COMBINED_FIELDS = (
    "BM25F scoring (term statistics blended across columns) is not implemented; lance_fw scores "
    "each column with its own index's statistics (use MultiMatchQuery)"
)


class DocumentGranularity(str, Enum):  # noqa: UP042  (pylance's str(): "DocumentGranularity.ROW")
    """The unit one full-text document is (pylance's enum): a row, or one element of a list."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


@dataclass
class MinHashQuery:
    """A MinHash similarity search's query text and column (pylance's record)."""

    text: str
    column: str


CombinedFieldsQuery = refused_function(_MODULE, "CombinedFieldsQuery", COMBINED_FIELDS)

__all__ = ["COMBINED_FIELDS", "CombinedFieldsQuery", "DocumentGranularity", "MinHashQuery"]
