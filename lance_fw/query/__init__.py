"""Query side: the Lance SQL filter dialect, projections, the scanner, scalar-index planning and
the vector / full-text searches.

The package also stands in for pylance's ``lance.query`` module: code switching with
``import lance_fw as lance`` finds the full-text query objects at ``lance.query.MatchQuery`` etc.
"""

from lance_fw.query.fts_more import CombinedFieldsQuery, DocumentGranularity, MinHashQuery
from lance_fw.query.fts_queries import (
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    FullTextQuery,
    FullTextQueryType,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)

__all__ = [
    "BooleanQuery",
    "BoostQuery",
    "CombinedFieldsQuery",
    "DocumentGranularity",
    "FullTextOperator",
    "FullTextQuery",
    "FullTextQueryType",
    "MatchQuery",
    "MinHashQuery",
    "MultiMatchQuery",
    "Occur",
    "PhraseQuery",
]
