"""The full-text (``INVERTED``) index type: opens pylance 14's BM25 indices for ``full_text_query``.

Why a scalar index plugin: the kernel already owns what every index shares (the manifest entry, its
fragments, the ``_indices/<uuid>/`` directory), and ``create_scalar_index(col, "INVERTED")`` is how
pylance names it. The reader answers no filter (``supports`` is always False: pylance does not use
it for SQL filters either); ``query/fts_search.py`` asks it for tokens, postings and BM25 statistics.

Files pylance 14 writes (format_version 2), one partition ``N`` per build worker:

* ``metadata.lance``: schema metadata ``params`` (the tokenizer, JSON), ``partitions`` (JSON list of
  partition ids), ``token_set_format`` (``fst``), ``posting_block_size``, ``posting_tail_codec``;
* ``part_N_tokens.lance``: the token -> token id map (``index_inverted_format.fst_entries``);
* ``part_N_invert.lance``: row ``token id``: ``_posting`` blocks, ``_length`` (documents holding it),
  ``_max_score``, positions;
* ``part_N_docs.lance``: row ``doc id``: ``_rowid`` (the row address) and ``_num_tokens``.

lance_fw builds the ``format_version=1`` layout without positions (``index_inverted_build``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw._proto import index_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import Batches, IndexFileStore, IndexSearchResult, Params, ScalarQuery
from lance_fw_plugins.index_inverted_build import WRITTEN_FORMAT_VERSION, build, resolve_params
from lance_fw_plugins.index_inverted_format import decode_posting, fst_entries
from lance_fw_plugins.index_inverted_tokenizer import Analyzer

TYPE_URL = "/lance.table.InvertedIndexDetails"
#: ``IndexMetadata.index_version`` of the indices lance_fw writes (pylance 14 writes 1 for its
#: ``format_version=1`` layout, 2 for its default one).
INVERTED_INDEX_VERSION = WRITTEN_FORMAT_VERSION
METADATA_FILE = "metadata.lance"
#: ``metadata.lance`` values lance_fw decodes.
FST_TOKEN_SET = "fst"
VARINT_TAIL_CODEC = "varint_delta_v1"
FIXED32_TAIL_CODEC = "fixed32_v1"
DEFAULT_BLOCK_SIZE = 128
#: The ``InvertedIndexDetails`` fields (as ``describe_indices`` lists them) a rebuild passes back
#: to ``create_scalar_index``: the tokenizer's.
REBUILD_PARAMS = (
    "base_tokenizer",
    "language",
    "with_position",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
)


@dataclass(frozen=True)
class Postings:
    """One token's documents in an index: row addresses, term frequencies, document lengths."""

    addresses: np.ndarray
    frequencies: np.ndarray
    lengths: np.ndarray


class _Partition:
    """One ``part_N_*`` triple, its token map and documents read on first use."""

    def __init__(self, store: IndexFileStore, number: int, block_size: int, fixed_tail: bool) -> None:
        self.store, self.number, self.block_size = store, number, block_size
        self.fixed_tail = fixed_tail
        tokens_file = f"part_{number}_tokens.lance"
        table = store.read_table(tokens_file)
        if "_token_fst_bytes" in table.schema.names:
            data = table.column("_token_fst_bytes")[0].as_py()
            self.tokens = fst_entries(data, tokens_file)
        elif {"_token", "_token_id"} <= set(table.schema.names):  # the older arrow token set
            self.tokens = dict(
                zip(table.column("_token").to_pylist(), table.column("_token_id").to_pylist(), strict=True)
            )
        else:
            raise CorruptFileError(tokens_file, f"has no token map (columns {table.schema.names})")
        docs = store.read_table(f"part_{number}_docs.lance", ["_rowid", "_num_tokens"])
        self.addresses = docs.column("_rowid").to_numpy().astype(np.uint64)
        self.lengths = docs.column("_num_tokens").to_numpy().astype(np.uint32)
        self.invert = f"part_{number}_invert.lance"
        self.doc_counts = store.read_table(self.invert, ["_length"]).column(0).to_numpy()

    def doc_count(self, token: str) -> int:
        token_id = self.tokens.get(token)
        return 0 if token_id is None else int(self.doc_counts[token_id])

    def postings(self, token: str) -> Postings | None:
        token_id = self.tokens.get(token)
        if token_id is None:
            return None
        row = self.store.read_range(self.invert, token_id, token_id + 1, ["_posting", "_length"])
        blocks = row.column("_posting")[0].as_py()
        doc_ids, freqs = decode_posting(
            blocks, int(row.column("_length")[0].as_py()), self.block_size, self.invert, self.fixed_tail
        )
        if len(doc_ids) and int(doc_ids.max()) >= len(self.addresses):
            raise CorruptFileError(self.invert, f"token {token!r} names a document past the last one")
        return Postings(self.addresses[doc_ids], freqs, self.lengths[doc_ids])


#: Metadata key of the index layout version, and the version of indices written before it existed.
FORMAT_VERSION_KEY = "format_version"
LEGACY_FORMAT_VERSION = "1"


class InvertedIndexReader:
    """An opened full-text index: its analyzer, BM25 statistics and posting lists (all partitions)."""

    def __init__(self, store: IndexFileStore) -> None:
        meta = store.schema_metadata(METADATA_FILE)
        if meta.get("token_set_format", FST_TOKEN_SET) != FST_TOKEN_SET:
            raise UnsupportedFeatureError(
                f"full-text index token_set_format {meta['token_set_format']!r} is not supported"
            )
        # no codec key: an index written before it existed (no ``format_version`` either, or "1"),
        # whose last posting block holds plain u32 ids, as pylance reads such indices
        legacy = meta.get(FORMAT_VERSION_KEY, LEGACY_FORMAT_VERSION) == LEGACY_FORMAT_VERSION
        self._tail = meta.get("posting_tail_codec", FIXED32_TAIL_CODEC if legacy else VARINT_TAIL_CODEC)
        if self._tail not in (VARINT_TAIL_CODEC, FIXED32_TAIL_CODEC):
            raise UnsupportedFeatureError(
                f"full-text index posting_tail_codec {meta['posting_tail_codec']!r} is not supported"
            )
        try:
            self.params: dict[str, Any] = json.loads(meta["params"])
            numbers = [int(p) for p in json.loads(meta["partitions"])]
            block_size = int(meta.get("posting_block_size", DEFAULT_BLOCK_SIZE))
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptFileError(METADATA_FILE, f"unreadable full-text index metadata: {exc}") from exc
        self._analyzer: Analyzer | None = None
        self._store, self._numbers, self._block_size = store, numbers, block_size
        self._partitions: list[_Partition] | None = None
        self._lock = threading.Lock()

    @property
    def analyzer(self) -> Analyzer:
        """The index's text analyzer (built on first use: opening the index for a filter, which it
        never answers, must not fail on a tokenizer lance_fw does not reproduce)."""
        if self._analyzer is None:
            self._analyzer = Analyzer(self.params)
        return self._analyzer

    @property
    def with_position(self) -> bool:
        return bool(self.params.get("with_position", False))

    def _parts(self) -> list[_Partition]:
        with self._lock:
            if self._partitions is None:
                self._partitions = [
                    _Partition(self._store, n, self._block_size, self._tail == FIXED32_TAIL_CODEC)
                    for n in self._numbers
                ]
            return self._partitions

    def num_docs(self) -> int:
        """Documents indexed (rows with at least one token; rows deleted since still count)."""
        return sum(len(p.addresses) for p in self._parts())

    def total_tokens(self) -> int:
        return sum(int(p.lengths.sum(dtype=np.uint64)) for p in self._parts())

    def doc_count(self, token: str) -> int:
        """Indexed documents holding ``token``."""
        return sum(p.doc_count(token) for p in self._parts())

    def postings(self, token: str) -> Postings:
        """Every indexed document holding ``token``."""
        found = [x for p in self._parts() if (x := p.postings(token)) is not None]
        if not found:
            empty = np.zeros(0, np.uint32)
            return Postings(np.zeros(0, np.uint64), empty, empty)
        return Postings(
            np.concatenate([x.addresses for x in found]),
            np.concatenate([x.frequencies for x in found]),
            np.concatenate([x.lengths for x in found]),
        )

    # ScalarIndexReader: an inverted index answers no SQL filter
    def supports(self, query: ScalarQuery) -> bool:
        return False

    def search(self, query: ScalarQuery) -> IndexSearchResult:
        raise UnsupportedFeatureError("an INVERTED index answers full_text_query, not filters")

    def statistics(self) -> dict[str, Any]:
        """pylance's per-segment ``index_stats`` entry: tokenizer params, distinct tokens, documents."""
        parts = self._parts()
        return {
            "params": self.params,
            "num_tokens": sum(len(p.tokens) for p in parts),
            "num_docs": self.num_docs(),
        }


class InvertedIndexType:
    """``create_scalar_index(col, "INVERTED")``: a full-text index (tokens, posting lists, documents)
    answering ``full_text_query``, not filters."""

    name = "INVERTED"
    display_name = "Inverted"
    type_url = TYPE_URL
    index_version = INVERTED_INDEX_VERSION

    def holds_row_ids(self, index_version: int) -> bool:
        return True  # on a dataset with stable row ids, as pylance 14's (versions 1 and 2 alike)

    def details(self, params: Params) -> bytes:
        """pylance's ``InvertedIndexDetails`` of the parameters (``posting_format_version`` 1)."""
        full = resolve_params(params)
        details = index_pb2.InvertedIndexDetails(
            base_tokenizer=full["base_tokenizer"],
            language=json.dumps(full["language"]),
            with_position=full["with_position"],
            lower_case=full["lower_case"],
            stem=full["stem"],
            remove_stop_words=full["remove_stop_words"],
            ascii_folding=full["ascii_folding"],
            min_ngram_length=full["min_ngram_length"],
            max_ngram_length=full["max_ngram_length"],
            prefix_only=full["prefix_only"],
            block_size=full["block_size"],
            posting_format_version=WRITTEN_FORMAT_VERSION,
        )
        if full["max_token_length"] is not None:
            details.max_token_length = full["max_token_length"]
        return details.SerializeToString()

    def check(self, field: pa.Field, params: Params) -> None:
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            raise UnsupportedFeatureError(
                f"an INVERTED index on column {field.name!r} of type {field.type} is not supported "
                "by lance_fw (string columns only)"
            )
        resolve_params(params)

    def train(self, batches: Batches, field: pa.Field, params: Params, store: IndexFileStore) -> None:
        build(batches, resolve_params(params), store)

    def params_from_details(self, value: bytes) -> dict[str, Any]:
        """The ``create_scalar_index`` keywords an index's ``InvertedIndexDetails`` records, so a
        rebuild (``optimize_indices``) keeps the tokenizer it was built with."""
        from lance_fw.table.index_list import inverted_details  # the table layer: loaded on demand

        listed = inverted_details(value)
        return {key: listed[key] for key in REBUILD_PARAMS}

    def analyzer(self, params: Params) -> Analyzer:
        """The analyzer of tokenizer ``params`` (``{}``: pylance's defaults, used to search a
        column without an index)."""
        return Analyzer(params)

    def load(self, store: IndexFileStore, field: pa.Field) -> InvertedIndexReader:
        return InvertedIndexReader(store)


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """The INVERTED (full-text) index type."""
    return {"INVERTED": InvertedIndexType()}
