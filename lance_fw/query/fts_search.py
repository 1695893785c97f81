"""``full_text_query=``: BM25 search of a column with a full-text (``INVERTED``) index, as pylance 14.

Why a kernel module: the scores must be pylance's to the float32 rounding and the rows the same,
which depends on choices no index file records, observed from pylance 14:

* a row indexed by the index is scored with the index's own statistics (documents, tokens, and
  documents per token of the index as built: rows deleted since still count);
* rows of fragments the index does not cover (appended since) are tokenized and scored *flat* with
  the statistics of the index and those rows together;
* BM25 with k1 = 1.2, b = 0.75, ``idf = ln((N - n + 0.5) / (n + 0.5) + 1)``, every step in float32,
  the query tokens' contributions added in query order; deleted rows never come back;
* the rows come back best first, ``_score`` (float32) after the columns asked for.

The index plugin (``lance_fw_plugins.index_inverted``) provides the analyzer, statistics and
posting lists; this module does the scoring, the flat part and the result table.

Supported: a string (every query token, OR), or a dict ``{"query": str, "columns": [one column]}``
(pylance's ``full_text_search`` keywords). Refused by name: ``lance.query`` objects (pylance keeps
their parameters in native code), several indexed columns, ``filter=`` with a full-text query,
datasets with stable row ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.schema import LanceField
from lance_fw.table.indices import IndexHandle, index_types, open_index, usable_indices
from lance_fw.table.row_ids import address_fragments, address_offsets
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.take import take

#: BM25 parameters pylance 14 uses.
K1 = np.float32(1.2)
B = np.float32(0.75)
SCORE_COLUMN = "_score"
SCORE_FIELD = pa.field(SCORE_COLUMN, pa.float32())
INVERTED = "INVERTED"
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


@dataclass(frozen=True)
class FullTextQuery:
    """A checked ``full_text_query``: the text and the one column searched."""

    text: str
    column: str


def parse_full_text_query(snapshot: Snapshot, query: Any) -> FullTextQuery:
    """pylance's ``full_text_query`` forms lance_fw answers (see the module doc)."""
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
            f"full_text_query of type {type(query).__name__} is not supported by lance_fw (pass a "
            "string or {'query': ..., 'columns': [...]})"
        )
    if not isinstance(text, str):
        raise InvalidArgumentError(f"full_text_query: the query must be a string, got {text!r}")
    indexed = sorted({h.field.name for h in _inverted(snapshot)})
    if columns is None:
        if not indexed:
            raise InvalidArgumentError("full_text_query: the dataset has no INVERTED index to search")
        columns = indexed
    if len(columns) != 1:
        raise UnsupportedFeatureError(
            f"full_text_query over several columns ({', '.join(columns)}) is not supported by lance_fw"
        )
    column = columns[0]
    if column not in snapshot.schema.names:
        raise InvalidArgumentError(f"full_text_query: column {column!r} is not in the dataset")
    kind = snapshot.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise InvalidArgumentError(f"full_text_query: column {column!r} is {kind}, not a string column")
    return FullTextQuery(text, column)


def _inverted(snapshot: Snapshot) -> list[IndexHandle]:
    return [h for h in usable_indices(snapshot) if h.kind.name == INVERTED]


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


def search(
    snapshot: Snapshot, query: FullTextQuery, batch_size: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Row addresses of every matching live row and their ``_score``, best first (ties by address),
    and whether an index was used (pylance returns a flat search's rows in scan order).

    ``allowed`` (a prefilter: sorted addresses of the rows passing it) limits the rows returned and
    the unindexed rows counted in the flat statistics, as pylance's prefiltered flat scan does.
    """
    handles = [h for h in _inverted(snapshot) if h.field.name == query.column]
    if len(handles) > 1:
        raise UnsupportedFeatureError(
            f"full_text_query: the index on {query.column!r} has {len(handles)} segments; lance_fw "
            "searches an index of one segment"
        )
    reader: FullTextIndexReader = (
        open_index(snapshot, handles[0]) if handles else _NoIndex()  # type: ignore[assignment]
    )
    tokens = reader.analyzer.tokens(query.text)
    live = {f.id: f for f in snapshot.fragments}
    covered = {i for i in handles[0].fragments if i in live} if handles else set()
    field = snapshot.lance_schema.field(query.column)
    flat_docs, flat_addresses = _flat_documents(
        snapshot, field, [f for i, f in live.items() if i not in covered], reader, batch_size
    )
    if allowed is not None and len(flat_docs):
        passing = np.isin(flat_addresses, allowed)
        flat_docs = [d for d, ok in zip(flat_docs, passing, strict=True) if ok]
        flat_addresses = flat_addresses[passing]
    indexed_docs, indexed_tokens = reader.num_docs(), reader.total_tokens()
    index_average = np.float32(indexed_tokens) / np.float32(indexed_docs) if indexed_docs else np.float32(1)
    all_docs = indexed_docs + len(flat_docs)
    all_tokens = indexed_tokens + sum(len(d) for d in flat_docs)
    all_average = np.float32(all_tokens) / np.float32(all_docs) if all_docs else np.float32(1)
    flat_counts = [{t: d.count(t) for t in set(d)} for d in flat_docs]
    flat_lengths = np.array([len(d) for d in flat_docs], np.uint32)
    scores = _Scores()
    for token in tokens:
        in_index = reader.doc_count(token)
        if in_index:
            postings = reader.postings(token)
            keep = _live(snapshot, postings.addresses, covered)
            if allowed is not None:
                keep &= np.isin(postings.addresses, allowed)
            weight = bm25(
                idf_of(in_index, indexed_docs),
                postings.frequencies[keep],
                postings.lengths[keep],
                index_average,
            )
            scores.add(postings.addresses[keep], weight)
        if flat_docs:
            freq = np.array([c.get(token, 0) for c in flat_counts], np.uint32)
            hit = freq > 0
            if hit.any():
                idf = idf_of(in_index + int(hit.sum()), all_docs)
                scores.add(flat_addresses[hit], bm25(idf, freq[hit], flat_lengths[hit], all_average))
    addresses, total = scores.total()
    order = np.lexsort((addresses, -total))
    return addresses[order], total[order], bool(handles)


def _live(snapshot: Snapshot, addresses: np.ndarray, covered: set[int]) -> np.ndarray:
    """Which addresses are live rows of fragments the index covers in this version."""
    fragments = address_fragments(addresses)
    keep = np.isin(fragments, np.array(sorted(covered), np.uint64))
    for frag in snapshot.fragments:
        if frag.id not in covered or not frag.HasField("deletion_file"):
            continue
        hit = np.flatnonzero(fragments == frag.id)
        if len(hit):
            deleted = snapshot.fragment_reader(frag).deleted
            keep[hit] &= ~np.isin(address_offsets(addresses[hit]).astype(np.int64), deleted)
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
    query: FullTextQuery,
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
        keep = np.isin(addresses, passing)
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
    for name, on in (("_rowid", with_row_id), ("_rowaddr", with_row_address)):
        if on:
            fields.append(pa.field(name, pa.uint64()))
            arrays.append(pa.array(addresses, pa.uint64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
