"""Building a full-text (``INVERTED``) index pylance 14 reads: one partition, ``format_version=1``.

Why these choices: the files are the ones pylance 14 writes when asked for ``format_version=1``
(``fixed32_v1`` posting tails, no impact column, positions per document as ``_position`` when
``with_position``), which it reads and searches like its own; documents are the rows with at least one token, numbered in row-address order; token ids in
order of first appearance. The BM25 statistics pylance needs (document lengths, tokens per
document, documents per token) are all in these files; the per-block and per-list maximum scores
(``idf * max(doc weight)``, float32, pylance's upper bounds for pruning) are computed with the
statistics of the index as built.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyroaring

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.interfaces import IndexFileStore
from lance_fw_plugins.index_inverted_tokenizer import DEFAULT_MAX_TOKEN_LENGTH, Analyzer
from lance_fw_plugins.index_inverted_write import fst_bytes, position_lists, posting_blocks

#: ``format_version`` lance_fw writes (pylance 14 writes 2 by default and reads both).
WRITTEN_FORMAT_VERSION = 1
FIXED32_TAIL_CODEC = "fixed32_v1"
BLOCK_SIZE = 128
K1 = np.float32(1.2)
B = np.float32(0.75)
#: pylance's tokenizer parameters in the order its ``params`` JSON lists them, with its defaults.
DEFAULT_PARAMS: dict[str, Any] = {
    "lance_tokenizer": "text",
    "base_tokenizer": "simple",
    "language": "English",
    "with_position": False,
    "max_token_length": DEFAULT_MAX_TOKEN_LENGTH,
    "lower_case": True,
    "stem": True,
    "remove_stop_words": True,
    "custom_stop_words": None,
    "ascii_folding": True,
    "min_ngram_length": 3,
    "max_ngram_length": 3,
    "prefix_only": False,
    "block_size": BLOCK_SIZE,
    "split_identifiers": False,
    "split_on_numerics": False,
    "preserve_original": False,
    "index_operators": False,
}
#: create_scalar_index keywords lance_fw honours when building
BUILD_PARAMS = (
    "with_position",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
)


def resolve_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """pylance's full parameter set for ``create_scalar_index(..., "INVERTED", **params)``.

    Raises: ``InvalidArgumentError`` for an unknown keyword, ``UnsupportedFeatureError`` for one
    lance_fw does not build (positions, other tokenizers, ngram settings, block sizes).
    """
    unknown = set(params) - set(DEFAULT_PARAMS)
    if unknown:
        raise InvalidArgumentError(f"INVERTED index: unknown parameters {sorted(unknown)}")
    out = dict(DEFAULT_PARAMS)
    for key, value in params.items():
        if value == DEFAULT_PARAMS[key]:
            continue
        if key not in BUILD_PARAMS:
            raise UnsupportedFeatureError(f"building an INVERTED index with {key}={value!r} is not supported")
        out[key] = value
    Analyzer(out)  # refuses what the analyzer does not reproduce
    return out


def _weights(idf: np.float32, freqs: np.ndarray, lengths: np.ndarray, average: np.float32) -> np.ndarray:
    f = freqs.astype(np.float32)
    norm = K1 * ((np.float32(1) - B) + (B * lengths.astype(np.float32)) / average)
    out: np.ndarray = idf * (((K1 + np.float32(1)) * f) / (f + norm))
    return out


def _bound(scores: np.ndarray) -> np.ndarray:
    """Upper bounds pylance may prune with: the maxima raised by two float32 units in the last
    place, as pylance's own build rounds some of them one unit higher than this module's."""
    up = np.float32(np.inf)
    out: np.ndarray = np.nextafter(np.nextafter(scores, up), up)
    return out


def build(batches: Iterable[pa.RecordBatch], params: Mapping[str, Any], store: IndexFileStore) -> None:
    """Tokenize ``batches`` (``value``, ``_rowaddr``) and write the index files to ``store``."""
    analyzer = Analyzer(params)
    token_ids: dict[str, int] = {}
    doc_addresses: list[int] = []
    doc_lengths: list[int] = []
    post_docs: list[list[int]] = []
    post_freqs: list[list[int]] = []
    with_position = bool(params.get("with_position"))
    post_positions: list[list[list[bytes]]] = []
    for batch in batches:
        texts = batch.column(0).to_pylist()
        addresses = batch.column(1).to_pylist()
        for text, address in zip(texts, addresses, strict=True):
            if text is None:
                continue
            tokens = analyzer.positioned(text)
            if not tokens:
                continue
            doc = len(doc_addresses)
            doc_addresses.append(address)
            doc_lengths.append(len(tokens))
            where: dict[str, list[int]] = {}
            for token, position in tokens:
                where.setdefault(token, []).append(position)
            for token, positions in where.items():
                tid = token_ids.setdefault(token, len(token_ids))
                if tid == len(post_docs):
                    post_docs.append([])
                    post_freqs.append([])
                    post_positions.append([])
                post_docs[tid].append(doc)
                post_freqs[tid].append(len(positions))
                if with_position:
                    post_positions[tid].append(position_lists(positions))
    lengths = np.array(doc_lengths, np.uint32)
    num_docs = len(doc_addresses)
    total_tokens = int(lengths.sum(dtype=np.uint64))
    average = np.float32(total_tokens) / np.float32(num_docs) if num_docs else np.float32(1)
    postings, max_scores, sizes = [], [], []
    for docs, freqs in zip(post_docs, post_freqs, strict=True):
        ids, hits = np.array(docs, np.uint32), np.array(freqs, np.uint32)
        n = np.float32(len(ids))
        ratio = (np.float32(num_docs) - n + np.float32(0.5)) / (n + np.float32(0.5)) + np.float32(1)
        idf = np.float32(np.log(np.float64(ratio)))
        weights = _weights(idf, hits, lengths[ids], average)
        starts = np.arange(0, len(ids), BLOCK_SIZE)
        block_max = _bound(np.maximum.reduceat(weights, starts))
        postings.append(posting_blocks(ids, hits, block_max, BLOCK_SIZE))
        max_scores.append(float(block_max.max()))
        sizes.append(len(ids))
    _write(
        store,
        params,
        token_ids,
        doc_addresses,
        lengths,
        total_tokens,
        postings,
        max_scores,
        sizes,
        post_positions if with_position else None,
    )


def _write(
    store: IndexFileStore,
    params: Mapping[str, Any],
    token_ids: dict[str, int],
    doc_addresses: list[int],
    lengths: np.ndarray,
    total_tokens: int,
    postings: list[list[bytes]],
    max_scores: list[float],
    sizes: list[int],
    positions: list[list[list[bytes]]] | None,
) -> None:
    columns = {
        "_posting": pa.array(postings, pa.list_(pa.large_binary())),
        "_max_score": pa.array(max_scores, pa.float32()),
        "_length": pa.array(sizes, pa.uint32()),
    }
    fields = [
        pa.field("_posting", pa.list_(pa.large_binary()), False),
        pa.field("_max_score", pa.float32(), False),
        pa.field("_length", pa.uint32(), False),
    ]
    if positions is not None:  # per token, per document: position_lists
        kind = pa.list_(pa.list_(pa.large_binary()))
        columns["_position"] = pa.array(positions, kind)
        fields.append(pa.field("_position", kind, False))
    invert = pa.table(columns, schema=pa.schema(fields))
    store.write_table(
        "part_0_invert.lance",
        invert,
        {"format_version": str(WRITTEN_FORMAT_VERSION), "posting_block_size": str(BLOCK_SIZE)},
    )
    tokens = pa.table(
        {
            "_token_fst_bytes": pa.array([fst_bytes(token_ids)], pa.large_binary()),
            "_token_next_id": pa.array([len(token_ids)], pa.uint32()),
            "_token_total_length": pa.array([sum(len(t.encode()) for t in token_ids)], pa.uint64()),
        },
        schema=pa.schema(
            [
                pa.field("_token_fst_bytes", pa.large_binary(), False),
                pa.field("_token_next_id", pa.uint32(), False),
                pa.field("_token_total_length", pa.uint64(), False),
            ]
        ),
    )
    store.write_table("part_0_tokens.lance", tokens)
    docs = pa.table(
        {
            "_rowid": pa.array(np.array(doc_addresses, np.uint64), pa.uint64()),
            "_num_tokens": pa.array(lengths, pa.uint32()),
        },
        schema=pa.schema(
            [pa.field("_rowid", pa.uint64(), False), pa.field("_num_tokens", pa.uint32(), False)]
        ),
    )
    store.write_table("part_0_docs.lance", docs, {"total_tokens": str(total_tokens)})
    meta = pa.table(
        {"deleted_fragments": pa.array([pyroaring.BitMap().serialize()], pa.binary())},
        schema=pa.schema([pa.field("deleted_fragments", pa.binary(), False)]),
    )
    store.write_table(
        "metadata.lance",
        meta,
        {
            "params": json.dumps(dict(params), separators=(",", ":")),
            "partitions": "[0]",
            "token_set_format": "fst",
            "posting_tail_codec": FIXED32_TAIL_CODEC,
            "posting_block_size": str(BLOCK_SIZE),
            "format_version": str(WRITTEN_FORMAT_VERSION),
        },
    )
