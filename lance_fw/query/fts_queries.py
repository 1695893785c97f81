"""The query objects of ``full_text_query=`` (pylance's ``lance.query`` classes, same signatures).

Why lance_fw's own classes: pylance's query objects keep their parameters in native code, out of
reach of a pure-Python reader; these take the same arguments and ``query/fts_search.py`` runs them.
Import them from ``lance_fw.query.fts_search`` (re-exported) or from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar


class FullTextOperator(StrEnum):
    """How a match query's tokens combine (pylance's ``lance.query.FullTextOperator``)."""

    AND = "AND"
    OR = "OR"


class Occur(StrEnum):
    """A boolean query clause's role (pylance's ``lance.query.Occur``)."""

    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


class FullTextQueryType(StrEnum):
    """What kind a query object is (pylance's ``lance.query.FullTextQueryType``)."""

    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextQuery:
    """The base of every query object (pylance's ``lance.query.FullTextQuery``)."""

    #: the kind, as each class's ``query_type()`` reports it (given as ``kind=`` in its class line)
    QUERY_TYPE: ClassVar[FullTextQueryType]

    def __init_subclass__(cls, *, kind: FullTextQueryType, **rest: Any) -> None:
        super().__init_subclass__(**rest)
        cls.QUERY_TYPE = kind

    def query_type(self) -> FullTextQueryType:
        """This query's kind (a method, as in pylance)."""
        return self.QUERY_TYPE


@dataclass(frozen=True)
class MatchQuery(FullTextQuery, kind=FullTextQueryType.MATCH):
    """Rows holding the query's tokens in ``column`` (any: ``OR``, all: ``AND``); score times
    ``boost``. pylance's ``lance.query.MatchQuery`` (whose parameters live in native code, so
    lance_fw takes its own objects with the same signature)."""

    query: str
    column: str
    boost: float = field(default=1.0, kw_only=True)
    fuzziness: int | None = field(default=0, kw_only=True)
    max_expansions: int = field(default=50, kw_only=True)
    operator: FullTextOperator | str = field(default=FullTextOperator.OR, kw_only=True)
    prefix_length: int = field(default=0, kw_only=True)
    #: pylance's ``DocumentGranularity`` (``lance_fw.query.fts_more``): rows only (see fts_search)
    document_granularity: Any = field(default=None, kw_only=True)


@dataclass(frozen=True)
class PhraseQuery(FullTextQuery, kind=FullTextQueryType.MATCH_PHRASE):
    """pylance's phrase query (refused: lance_fw does not decode token positions)."""

    query: str
    column: str
    slop: int = field(default=0, kw_only=True)
    document_granularity: Any = field(default=None, kw_only=True)


@dataclass(frozen=True)
class BoostQuery(FullTextQuery, kind=FullTextQueryType.BOOST):
    """Rows of ``positive``; those also matching ``negative`` lose ``negative_boost`` times its score."""

    positive: Any
    negative: Any
    negative_boost: float = field(default=0.5, kw_only=True)


@dataclass(frozen=True)
class MultiMatchQuery(FullTextQuery, kind=FullTextQueryType.MULTI_MATCH):
    """A match query on each column; a row scores its best column (times that column's boost)."""

    query: str
    columns: list[str]
    boosts: list[float] | None = field(default=None, kw_only=True)
    operator: FullTextOperator | str = field(default=FullTextOperator.OR, kw_only=True)


@dataclass(frozen=True)
class BooleanQuery(FullTextQuery, kind=FullTextQueryType.BOOLEAN):
    """Rows matching every MUST clause (or, without one, any SHOULD clause) and no MUST_NOT clause;
    the score adds the MUST and matching SHOULD scores in clause order."""

    queries: list[tuple[Occur | str, Any]]


def operator_of(value: Any) -> FullTextOperator:
    """``FullTextOperator`` from lance_fw's, pylance's enum or its string."""
    return FullTextOperator(getattr(value, "value", value))


def occur_of(value: Any) -> Occur:
    return Occur(getattr(value, "value", value))


QUERY_TYPES = (MatchQuery, PhraseQuery, BoostQuery, MultiMatchQuery, BooleanQuery)
