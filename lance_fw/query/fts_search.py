"""``full_text_query=``: BM25 search of text columns with full-text (``INVERTED``) indices, as pylance 14.

Why a kernel module: the scores must be pylance's to the float32 rounding and the rows the same,
which depends on choices no index file records, observed from pylance 14:

* a row indexed by the index is scored with the index's own statistics (documents, tokens, and
  documents per token of the index as built: rows deleted since still count);
* rows of fragments the index does not cover (appended since) are tokenized and scored *flat* with
  the statistics of the index and those rows together;
* BM25 with k1 = 1.2, b = 0.75, ``idf = ln((N - n + 0.5) / (n + 0.5) + 1)``, every step in float32,
  the query tokens' contributions added in query order; deleted rows never come back;
* the rows come back best first, ``_score`` (float32) after the columns asked for.

The INVERTED index plugin (``plugins/index_inverted.py``) provides the analyzer, statistics and
posting lists; this module does the scoring, the flat part and the result table.

Supported: a string or ``{"query": str, "columns": [...]}`` (pylance's ``full_text_search``
keywords: one column is a match query, several a multi-match), and this module's ``MatchQuery``
(``operator``, ``boost``), ``MultiMatchQuery`` (a row scores its best column), ``BoostQuery``
(``positive - negative_boost * negative``), ``BooleanQuery`` (MUST / SHOULD / MUST_NOT), with the
signatures of pylance's ``lance.query`` classes (whose own objects keep their parameters in native
code and are refused); ``filter=`` with ``prefilter`` either way; columns without an index
(searched flat); ``PhraseQuery`` (and a string in double quotes) on indices with positions: the
rows of the AND match whose text, tokenized again, holds the phrase. Refused by name: phrase
slop > 0, fuzzy matching, indices of several segments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from lance_fw._util import sets
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.fts_queries import (
    QUERY_TYPES,
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
    occur_of,
    operator_of,
)
from lance_fw.schema import LanceField
from lance_fw.table.indices import (
    IndexHandle,
    holds_row_ids,
    index_types,
    open_index,
    type_url_of,
    usable_indices,
)
from lance_fw.table.row_ids import address_fragments, address_offsets
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.stable_rows import StableRows, row_ids_at
from lance_fw.table.take import take

#: BM25 parameters pylance 14 uses.
K1 = np.float32(1.2)
B = np.float32(0.75)
SCORE_COLUMN = "_score"
SCORE_FIELD = pa.field(SCORE_COLUMN, pa.float32())
INVERTED = "INVERTED"
INVERTED_TYPE_URL = "/lance.table.InvertedIndexDetails"
#: ``DocumentGranularity.ROW``'s value: one document per row, the only granularity lance_fw searches
ROW_GRANULARITY = "row"
#: the query classes, importable from here as from lance.query
__all__ = [
    "BooleanQuery",
    "BoostQuery",
    "FullTextOperator",
    "MatchQuery",
    "MultiMatchQuery",
    "Occur",
    "PhraseQuery",
    "parse_full_text_query",
    "run",
    "search",
]
#: the analyzer pylance 14 uses on a column without an index
FLAT_PARAMS = {
    "base_tokenizer": "simple",
    "lower_case": False,
    "stem": False,
    "remove_stop_words": False,
    "max_token_length": None,
    "ascii_folding": False,
}
#: rows read per batch by the flat part
_FLAT_BATCH_ROWS = 8192


class FullTextPostings(Protocol):
    """One token's indexed documents (``Postings`` of the INVERTED plugin)."""

    addresses: np.ndarray
    frequencies: np.ndarray
    lengths: np.ndarray


class FullTextIndexReader(Protocol):
    """What this module needs of an opened full-text index."""

    @property
    def analyzer(self) -> Any: ...

    def num_docs(self) -> int: ...

    def total_tokens(self) -> int: ...

    def doc_count(self, token: str) -> int: ...

    def postings(self, token: str) -> FullTextPostings: ...


def parse_full_text_query(snapshot: Snapshot, query: Any) -> Any:
    """pylance's ``full_text_query`` forms as a query tree (see the module doc); columns checked."""
    if isinstance(query, QUERY_TYPES):
        _check_tree(snapshot, query)
        return query
    columns: Sequence[str] | None = None
    if isinstance(query, Mapping):
        unknown = set(query) - {"query", "columns"}
        if unknown:
            raise InvalidArgumentError(f"full_text_query: unknown keys {sorted(unknown)}")
        text, columns = query.get("query"), query.get("columns")
        if isinstance(columns, str):
            columns = [columns]
    elif isinstance(query, str):
        text = query
    else:
        raise UnsupportedFeatureError(
            f"full_text_query of type {type(query).__name__} is not supported by lance_fw: pass a "
            "string, {'query': ..., 'columns': [...]}, or the query classes of "
            "lance_fw.query.fts_search (pylance's lance.query objects keep their parameters in "
            "native code)"
        )
    if not isinstance(text, str):
        raise InvalidArgumentError(f"full_text_query: the query must be a string, got {text!r}")
    if columns is None:
        columns = sorted(
            {h.field.name for h in _inverted(snapshot)}
            | {f.name for f in snapshot.lance_schema.fields if _listed_inverted(snapshot, f.name)}
        )
        if not columns:
            raise InvalidArgumentError("full_text_query: the dataset has no INVERTED index to search")
    quoted = len(text) >= 2 and text[0] == text[-1] == '"'
    if quoted and len(columns) != 1:
        raise UnsupportedFeatureError("full_text_query: a quoted phrase over several columns")
    tree: Any = (
        PhraseQuery(text[1:-1], columns[0])  # pylance: a string in double quotes is a phrase
        if quoted
        else MatchQuery(text, columns[0])
        if len(columns) == 1
        else MultiMatchQuery(text, list(columns))
    )
    _check_tree(snapshot, tree)
    return tree


def _check_column(snapshot: Snapshot, column: str) -> None:
    if column not in snapshot.schema.names:
        raise InvalidArgumentError(f"full_text_query: column {column!r} is not in the dataset")
    kind = snapshot.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise InvalidArgumentError(f"full_text_query: column {column!r} is {kind}, not a string column")


def _check_granularity(node: MatchQuery | PhraseQuery) -> None:
    """lance_fw searches string columns, one document per row: ``DocumentGranularity.ROW`` (or
    None) is what it does; list-element documents (pylance's list-of-string indices) are refused."""
    if node.document_granularity not in (None, ROW_GRANULARITY):
        raise UnsupportedFeatureError(
            f"full_text_query: document_granularity {node.document_granularity!r} is not supported by "
            "lance_fw (rows only)"
        )


def _check_tree(snapshot: Snapshot, node: Any) -> None:
    if isinstance(node, (MatchQuery, PhraseQuery)):
        _check_granularity(node)
    if isinstance(node, MatchQuery):
        _check_column(snapshot, node.column)
        if node.fuzziness != 0 or node.prefix_length != 0:
            raise UnsupportedFeatureError("full_text_query: fuzzy matching is not supported by lance_fw")
        operator_of(node.operator)
    elif isinstance(node, PhraseQuery):
        _check_column(snapshot, node.column)
        if not isinstance(node.slop, int) or node.slop < 0:
            raise InvalidArgumentError(f"full_text_query: slop must be a count, got {node.slop!r}")
        if node.slop:
            raise UnsupportedFeatureError(
                "full_text_query: phrase queries with slop > 0 are not supported by lance_fw (pylance "
                "14's sloppy matching skips some matches lance_fw cannot reproduce yet)"
            )
    elif isinstance(node, MultiMatchQuery):
        for column in node.columns:
            _check_column(snapshot, column)
        if node.boosts is not None and len(node.boosts) != len(node.columns):
            raise InvalidArgumentError("full_text_query: MultiMatchQuery needs one boost per column")
        operator_of(node.operator)
    elif isinstance(node, BoostQuery):
        _check_tree(snapshot, node.positive)
        _check_tree(snapshot, node.negative)
    elif isinstance(node, BooleanQuery):
        for occur, clause in node.queries:
            occur_of(occur)
            _check_tree(snapshot, clause)
    else:
        raise UnsupportedFeatureError(f"full_text_query: {type(node).__name__} is not supported by lance_fw")


def _inverted(snapshot: Snapshot) -> list[IndexHandle]:
    return [h for h in usable_indices(snapshot) if h.kind.name == INVERTED]


def _listed_inverted(snapshot: Snapshot, column: str) -> bool:
    """Whether the manifest lists a full-text index on ``column`` (usable or not)."""
    section = snapshot.index_section
    if section is None or column not in snapshot.schema.names:
        return False
    field_id = snapshot.lance_schema.field(column).id
    return any(type_url_of(m) == INVERTED_TYPE_URL and list(m.fields) == [field_id] for m in section.indices)


def bm25(idf: np.float32, frequencies: np.ndarray, lengths: np.ndarray, average: np.float32) -> np.ndarray:
    """pylance's per-token BM25 weight, every operation in float32 as its Rust does."""
    f = frequencies.astype(np.float32)
    norm = K1 * ((np.float32(1) - B) + (B * lengths.astype(np.float32)) / average)
    out: np.ndarray = idf * (((K1 + np.float32(1)) * f) / (f + norm))
    return out


def idf_of(containing: int, docs: int) -> np.float32:
    """``ln((N - n + 0.5) / (n + 0.5) + 1)`` in float32; 0 for a token no document holds."""
    if containing == 0:
        return np.float32(0)
    n, total = np.float32(containing), np.float32(docs)
    ratio = (total - n + np.float32(0.5)) / (n + np.float32(0.5)) + np.float32(1)
    # Rust's f32::ln is the C library's logf (correctly rounded); numpy's float32 log may be off by
    # one unit in the last place, the float64 log rounded to float32 is not
    return np.float32(np.log(np.float64(ratio)))


class _Scores:
    """Scores added up per row address, token by token in query order."""

    def __init__(self) -> None:
        self.addresses: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []

    def add(self, addresses: np.ndarray, scores: np.ndarray) -> None:
        self.addresses.append(addresses)
        self.scores.append(scores.astype(np.float32))

    def total(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.addresses:
            return np.zeros(0, np.uint64), np.zeros(0, np.float32)
        addresses = np.concatenate(self.addresses)
        scores = np.concatenate(self.scores)
        unique, inverse = np.unique(addresses, return_inverse=True)
        total = np.zeros(len(unique), np.float32)
        np.add.at(total, inverse, scores)  # element by element, in query order, as pylance adds
        return unique, total


class _NoIndex:
    """A column without a full-text index: pylance 14 searches it flat, splitting the text as the
    ``simple`` tokenizer does and nothing more (observed: no lower casing, stemming, stop words
    or length limit)."""

    def __init__(self) -> None:
        kind = index_types().get(INVERTED)
        if kind is None or not callable(getattr(kind, "analyzer", None)):
            raise UnsupportedFeatureError("full_text_query needs the INVERTED index plugin, not installed")
        self.analyzer = kind.analyzer(FLAT_PARAMS)  # type: ignore[attr-defined]

    def num_docs(self) -> int:
        return 0

    def total_tokens(self) -> int:
        return 0

    def doc_count(self, token: str) -> int:
        return 0

    def postings(self, token: str) -> FullTextPostings:
        raise AssertionError("no index")


class _ColumnSearch:
    """One column's side of a search: its index (or none), the flat part, their statistics."""

    def __init__(self, snapshot: Snapshot, column: str, batch_size: int, allowed: np.ndarray | None) -> None:
        handles = [h for h in _inverted(snapshot) if h.field.name == column]
        if not handles and _listed_inverted(snapshot, column):
            raise UnsupportedFeatureError(
                f"full_text_query: the INVERTED index on {column!r} cannot be opened by lance_fw here "
                "(a nested column); searching without it would tokenize differently"
            )
        if len(handles) > 1:
            raise UnsupportedFeatureError(
                f"full_text_query: the index on {column!r} has {len(handles)} segments; lance_fw "
                "searches an index of one segment"
            )
        self.indexed = bool(handles)
        self.snapshot, self.allowed = snapshot, allowed
        self.reader: FullTextIndexReader = open_index(snapshot, handles[0]) if handles else _NoIndex()
        live = {f.id: f for f in snapshot.fragments}
        self.covered = {i for i in handles[0].fragments if i in live} if handles else set()
        #: with stable row ids the index holds ids: the covered fragments' live rows map them
        self.rows = (
            StableRows.of(snapshot, self.covered)
            if handles and holds_row_ids(snapshot, handles[0].kind, handles[0].meta.index_version)
            else None
        )
        field = snapshot.lance_schema.field(column)
        docs, self.flat_addresses = _flat_documents(
            snapshot, field, [f for i, f in live.items() if i not in self.covered], self.reader, batch_size
        )
        if allowed is not None and len(docs):
            passing = sets.isin(self.flat_addresses, allowed)
            docs = [d for d, ok in zip(docs, passing, strict=True) if ok]
            self.flat_addresses = self.flat_addresses[passing]
        self.indexed_docs, tokens = self.reader.num_docs(), self.reader.total_tokens()
        self.index_average = (
            np.float32(tokens) / np.float32(self.indexed_docs) if self.indexed_docs else np.float32(1)
        )
        self.all_docs = self.indexed_docs + len(docs)
        all_tokens = tokens + sum(len(d) for d in docs)
        self.all_average = (
            np.float32(all_tokens) / np.float32(self.all_docs) if self.all_docs else np.float32(1)
        )
        self.flat_counts = [{t: d.count(t) for t in set(d)} for d in docs]
        self.flat_lengths = np.array([len(d) for d in docs], np.uint32)

    def token(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """Addresses and BM25 weights of the live rows holding ``token`` (index part, flat part)."""
        parts = _Scores()
        in_index = self.reader.doc_count(token)
        if in_index:
            postings = self.reader.postings(token)
            addresses = postings.addresses
            if self.rows is not None:
                keep, live_addresses = self.rows.lookup(addresses)
                addresses = np.zeros(len(keep), np.uint64)
                addresses[keep] = live_addresses
            else:
                keep = _live(self.snapshot, addresses, self.covered)
            if self.allowed is not None:
                keep &= sets.isin(addresses, self.allowed)
            idf = idf_of(in_index, self.indexed_docs)
            weights = bm25(idf, postings.frequencies[keep], postings.lengths[keep], self.index_average)
            parts.add(addresses[keep], weights)
        if self.flat_counts:
            freq = np.array([c.get(token, 0) for c in self.flat_counts], np.uint32)
            hit = freq > 0
            if hit.any():
                idf = idf_of(in_index + int(hit.sum()), self.all_docs)
                parts.add(
                    self.flat_addresses[hit], bm25(idf, freq[hit], self.flat_lengths[hit], self.all_average)
                )
        return parts.total()

    def match(
        self, text: str, operator: FullTextOperator | str, boost: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """A match query: token scores added in query order (a repeated token counts again)."""
        tokens = self.reader.analyzer.tokens(text)
        per_token = [self.token(t) for t in tokens]
        scores = _Scores()
        for addresses, weights in per_token:
            scores.add(addresses, weights)
        addresses, total = scores.total()
        if operator_of(operator) == FullTextOperator.AND:
            if not per_token:
                return addresses[:0], total[:0]
            keep = np.ones(len(addresses), bool)
            for found, _ in per_token:
                keep &= sets.isin(addresses, found)
            addresses, total = addresses[keep], total[keep]
        if boost != 1:
            total = (total * np.float32(boost)).astype(np.float32)
        return addresses, total


class _Evaluation:
    """A query tree evaluated to (sorted unique addresses, float32 scores), columns searched once."""

    def __init__(self, snapshot: Snapshot, batch_size: int, allowed: np.ndarray | None) -> None:
        self.snapshot, self.batch_size, self.allowed = snapshot, batch_size, allowed
        self.columns: dict[str, _ColumnSearch] = {}

    def column(self, name: str) -> _ColumnSearch:
        if name not in self.columns:
            self.columns[name] = _ColumnSearch(self.snapshot, name, self.batch_size, self.allowed)
        return self.columns[name]

    def phrase(self, node: PhraseQuery) -> tuple[np.ndarray, np.ndarray]:
        """Rows holding the phrase, scored as the match query of its tokens (as pylance)."""
        column = self.column(node.column)
        if column.indexed and not getattr(column.reader, "with_position", False):
            raise InvalidArgumentError(
                "full_text_query: position is not found but required for phrase queries, try "
                "recreating the index with position"
            )
        addresses, total = column.match(node.query, FullTextOperator.AND, 1.0)
        query = column.reader.analyzer.positioned(node.query)
        if not len(addresses) or not query:
            return addresses[:0], total[:0]
        texts = take(self.snapshot, addresses, [node.column], by_address=True).column(0).to_pylist()
        analyzer = column.reader.analyzer
        keep = np.array([phrase_matches(analyzer.positioned(t), query, node.slop) for t in texts], bool)
        return addresses[keep], total[keep]

    def run(self, node: Any) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(node, MatchQuery):
            return self.column(node.column).match(node.query, node.operator, node.boost)
        if isinstance(node, PhraseQuery):
            return self.phrase(node)
        if isinstance(node, MultiMatchQuery):
            boosts = node.boosts or [1.0] * len(node.columns)
            found = [
                self.column(c).match(node.query, node.operator, b)
                for c, b in zip(node.columns, boosts, strict=True)
            ]
            addresses = (
                sets.unique(np.concatenate([a for a, _ in found])) if found else np.zeros(0, np.uint64)
            )
            best = np.zeros(len(addresses), np.float32)
            for a, sc in found:
                at = np.searchsorted(addresses, a)
                best[at] = np.maximum(best[at], sc)
            return addresses, best
        if isinstance(node, BoostQuery):
            addresses, score = self.run(node.positive)
            neg_addresses, neg_score = self.run(node.negative)
            at = np.searchsorted(neg_addresses, addresses).clip(0, max(len(neg_addresses) - 1, 0))
            hit = neg_addresses[at] == addresses if len(neg_addresses) else np.zeros(len(addresses), bool)
            score = score.copy()
            score[hit] = score[hit] - np.float32(node.negative_boost) * neg_score[at[hit]]
            return addresses, score
        clauses = [(occur_of(o), self.run(q)) for o, q in node.queries]
        must = [r for o, r in clauses if o == Occur.MUST]
        should = [r for o, r in clauses if o == Occur.SHOULD]
        scoring = [r for o, r in clauses if o != Occur.MUST_NOT]
        if must:
            addresses = must[0][0]
            for a, _ in must[1:]:
                addresses = sets.intersection(addresses, a)
        else:
            addresses = (
                sets.unique(np.concatenate([a for a, _ in should])) if should else np.zeros(0, np.uint64)
            )
        for o, (a, _) in clauses:
            if o == Occur.MUST_NOT:
                addresses = sets.difference(addresses, a)
        total = np.zeros(len(addresses), np.float32)
        for a, sc in scoring:
            pos = np.searchsorted(a, addresses).clip(0, max(len(a) - 1, 0))
            hit = a[pos] == addresses if len(a) else np.zeros(len(addresses), bool)
            total[hit] = total[hit] + sc[pos[hit]]
        return addresses.astype(np.uint64), total


def phrase_matches(doc: list[tuple[str, int]], query: list[tuple[str, int]], slop: int) -> bool:
    """Whether ``doc``'s tokens hold the query's in order, each ``slop`` positions or fewer
    further from the previous one than in the query (pylance's phrase rule)."""
    where: dict[str, list[int]] = {}
    for token, position in doc:
        where.setdefault(token, []).append(position)
    candidates = where.get(query[0][0], [])
    for (token, position), (_, before) in zip(query[1:], query[:-1], strict=True):
        delta = position - before
        candidates = [
            p for p in where.get(token, []) if any(c + delta <= p <= c + delta + slop for c in candidates)
        ]
        if not candidates:
            return False
    return bool(candidates)


def search(
    snapshot: Snapshot, query: Any, batch_size: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Row addresses of every matching live row and their ``_score``, best first (ties by address),
    and whether every column searched has an index (pylance returns a flat search's rows in scan
    order).

    ``allowed`` (a prefilter: sorted addresses of the rows passing it) limits the rows returned and
    the unindexed rows counted in the flat statistics, as pylance's prefiltered flat scan does.
    """
    evaluation = _Evaluation(snapshot, batch_size, allowed)
    addresses, total = evaluation.run(query)
    order = np.lexsort((addresses, -total))
    indexed = all(c.indexed for c in evaluation.columns.values())
    return addresses[order], total[order], indexed


def _live(snapshot: Snapshot, addresses: np.ndarray, covered: set[int]) -> np.ndarray:
    """Which addresses are live rows of fragments the index covers in this version."""
    fragments = address_fragments(addresses)
    keep = sets.isin(fragments, np.array(sorted(covered), np.uint64))
    for frag in snapshot.fragments:
        if frag.id not in covered or not frag.HasField("deletion_file"):
            continue
        hit = np.flatnonzero(fragments == frag.id)
        if len(hit):
            deleted = snapshot.fragment_reader(frag).deleted
            keep[hit] &= ~sets.isin(address_offsets(addresses[hit]).astype(np.int64), deleted)
    return keep


def _flat_documents(
    snapshot: Snapshot, field: LanceField, fragments: list, reader: FullTextIndexReader, batch_size: int
) -> tuple[list[list[str]], np.ndarray]:
    """Tokens and addresses of the live rows of fragments the index does not cover; rows that are
    null or hold no token are not documents (as in the index)."""
    docs: list[list[str]] = []
    addresses: list[int] = []
    for frag in fragments:
        for batch in snapshot.read_fragment(frag, [field], None, max(batch_size, _FLAT_BATCH_ROWS), True):
            for text, address in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                if text is None:
                    continue
                tokens = reader.analyzer.tokens(text)
                if tokens:
                    docs.append(tokens)
                    addresses.append(address)
    return docs, np.array(addresses, np.uint64)


def run(
    snapshot: Snapshot,
    query: Any,
    names: list[str],
    limit: int | None,
    offset: int,
    with_row_id: bool,
    with_row_address: bool,
    batch_size: int,
    passing: np.ndarray | None = None,
    prefilter: bool = False,
) -> pa.Table:
    """The result table: ``names`` columns of the best rows, ``_score``, then _rowid / _rowaddr.

    ``passing``: sorted addresses of the rows passing ``filter=``. With ``prefilter`` only they are
    searched; otherwise (pylance's default) the best ``offset + limit`` rows are found first and
    those failing the filter dropped from them, so fewer rows may come back.
    """
    addresses, scores, indexed = search(snapshot, query, batch_size, passing if prefilter else None)
    if not indexed and limit is None:  # pylance: a flat search without a limit keeps scan order
        order = np.argsort(addresses, kind="stable")
        addresses, scores = addresses[order], scores[order]
    stop = None if limit is None else offset + limit
    if passing is not None and not prefilter:
        addresses, scores = addresses[:stop], scores[:stop]
        keep = sets.isin(addresses, passing)
        addresses, scores = addresses[keep], scores[keep]
    addresses, scores = addresses[offset:stop], scores[offset:stop]
    fields: list[pa.Field] = []
    arrays: list[Any] = []
    if names:
        taken = take(snapshot, addresses, names, by_address=True)
        fields += list(taken.schema)
        arrays += list(taken.columns)
    fields.append(SCORE_FIELD)
    arrays.append(pa.array(scores, pa.float32()))
    if with_row_id:
        fields.append(pa.field("_rowid", pa.uint64()))
        arrays.append(pa.array(row_ids_at(snapshot, addresses), pa.uint64()))
    if with_row_address:
        fields.append(pa.field("_rowaddr", pa.uint64()))
        arrays.append(pa.array(addresses, pa.uint64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
