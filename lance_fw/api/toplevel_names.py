"""pylance's top-level names beyond datasets: ``lance.tokenize``, ``lance.DatasetBasePath``,
``lance.set_logger``, and the native-only ones lance_fw refuses by name.

Why here: code written for pylance reaches these as ``lance.X``. The ones lance_fw can answer
exactly (the full-text analyzer, a base-path record, Python logging) behave as pylance's; the rest
need what lance_fw does not have (IO counters, native SIMD kernels, the MemWAL / LSM sharding
machinery, DataFusion's FFI, cleanup explanations) and raise ``UnsupportedFeatureError`` saying
which, instead of an ``AttributeError`` that reads like a typo.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from lance_fw._util.refusals import IO_STATS, MEM_WAL, Refused, refused_function
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.table.indices import index_types

#: The module pylance users reach these names in
_MODULE = "lance"
#: pylance's ``tokenize`` keyword defaults that lance_fw's analyzer takes as they are
DEFAULT_MAX_TOKEN_LENGTH = 40
#: The full-text analyzer lance_fw reproduces (pylance's ``analyzer="text"``)
_TEXT_ANALYZER = "text"
#: The index type whose analyzer ``tokenize`` uses
_INVERTED = "INVERTED"
#: pylance's ``set_logger`` defaults
DEFAULT_LOG_FILE = "pylance.log"
DEFAULT_LOGGER_NAME = "pylance"
DEFAULT_LOG_FORMAT = "%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d %(funcName)s : %(message)s"

#: Why the cleanup explanation records are refused
CLEANUP_EXPLANATION = "cleanup explanations (explain_cleanup_old_versions) are not implemented"
#: Why the SIMD report is refused
SIMD = "lance_fw has no native SIMD kernels to report on (it computes with numpy)"
#: Why the DataFusion table provider is refused
FFI_PROVIDER = "lance_fw is pure Python: it exposes no DataFusion FFI table provider"


@dataclass(frozen=True)
class FtsToken:
    """One token of ``tokenize``: its text and its position (pylance's ``FtsToken``)."""

    text: str
    position: int

    def __repr__(self) -> str:
        return f'FtsToken(text="{self.text}", position={self.position})'


def tokenize(
    query: str,
    *,
    analyzer: str | None = None,
    base_tokenizer: str | None = None,
    language: str | None = None,
    max_token_length: int | None = DEFAULT_MAX_TOKEN_LENGTH,
    lower_case: bool | None = None,
    stem: bool | None = None,
    remove_stop_words: bool | None = None,
    custom_stop_words: list[str] | None = None,
    ascii_folding: bool | None = None,
    min_ngram_length: int | None = None,
    max_ngram_length: int | None = None,
    prefix_only: bool | None = None,
    split_identifiers: bool | None = None,
    split_on_numerics: bool | None = None,
    preserve_original: bool | None = None,
    index_operators: bool | None = None,
) -> list[FtsToken]:
    """The tokens a full-text index with these tokenizer options makes of ``query``, as pylance's
    ``lance.tokenize``: the INVERTED index plugin's analyzer (the same one searches use, so a
    token here is a token the index holds).

    Positions count from the first token kept (pylance's: leading stop words and over-long words
    move no later position), and dropped words in between leave gaps.

    Raises:
        UnsupportedFeatureError: options the analyzer does not reproduce (the ``code`` analyzer,
            n-grams, identifier splitting, other languages, custom stop words), or non-ASCII text.
    """
    if analyzer not in (None, _TEXT_ANALYZER):
        raise UnsupportedFeatureError(f"tokenize: analyzer {analyzer!r} is not supported by lance_fw")
    unsupported = {
        "min_ngram_length": min_ngram_length,
        "max_ngram_length": max_ngram_length,
        "prefix_only": prefix_only,
        "split_identifiers": split_identifiers,
        "split_on_numerics": split_on_numerics,
        "preserve_original": preserve_original,
        "index_operators": index_operators,
    }
    given = sorted(k for k, v in unsupported.items() if v is not None)
    if given:
        raise UnsupportedFeatureError(f"tokenize: {', '.join(given)} not supported by lance_fw")
    params: dict[str, Any] = {"max_token_length": max_token_length}
    chosen = {
        "base_tokenizer": base_tokenizer,
        "language": language,
        "lower_case": lower_case,
        "stem": stem,
        "remove_stop_words": remove_stop_words,
        "custom_stop_words": custom_stop_words,
        "ascii_folding": ascii_folding,
    }
    params.update({k: v for k, v in chosen.items() if v is not None})
    kind = index_types().get(_INVERTED)
    if kind is None or not callable(getattr(kind, "analyzer", None)):
        raise UnsupportedFeatureError("tokenize needs the INVERTED index plugin, which is not loaded")
    positioned: list[tuple[str, int]] = kind.analyzer(params).positioned(query)  # type: ignore[attr-defined]
    first = positioned[0][1] if positioned else 0
    return [FtsToken(text, position - first) for text, position in positioned]


class DatasetBasePath:
    """A base path a multi-base dataset may write to (pylance's ``DatasetBasePath``): a record.

    lance_fw reads and writes single-base datasets only (``add_bases`` is refused), so this is
    what a user builds to describe one; its fields read back as given."""

    def __init__(
        self, path: str, name: str | None = None, is_dataset_root: bool = False, id: int | None = None
    ) -> None:
        self._path, self._name = path, name
        self._is_dataset_root, self._id = bool(is_dataset_root), 0 if id is None else int(id)

    @property
    def id(self) -> int:
        return self._id

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_dataset_root(self) -> bool:
        return self._is_dataset_root

    def __repr__(self) -> str:
        name = "None" if self._name is None else f'Some("{self._name}")'
        root = str(self._is_dataset_root).lower()
        return f"DatasetBasePath(id={self._id}, name={name}, path={self._path}, is_dataset_root={root})"


def set_logger(
    file_path: str | None = DEFAULT_LOG_FILE,
    name: str = DEFAULT_LOGGER_NAME,
    level: int = logging.INFO,
    format_string: str | None = None,
    log_handler: logging.Handler | None = None,
) -> None:
    """Send logger ``name``'s records at ``level`` to ``log_handler`` (default: a file handler on
    ``file_path``), formatted as pylance's ``set_logger`` formats them. Plain Python logging, as in
    pylance, where it configures the Python side only."""
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = log_handler if log_handler is not None else logging.FileHandler(str(file_path))
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(format_string or DEFAULT_LOG_FORMAT))
    logger.addHandler(handler)


@dataclass
class ShardingField:
    """One MemWAL sharding field (pylance's record). lance_fw has no MemWAL: the record is kept for
    code that builds specs; evaluating or using one is refused (``evaluate_sharding_spec``)."""

    field_id: str
    source_ids: list[int]
    transform: str | None = None
    expression: str | None = None
    result_type: str = ""
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass
class ShardingSpec:
    """How MemWAL shard routing values are derived (pylance's record; see ``ShardingField``)."""

    spec_id: int
    fields: list[ShardingField]


@dataclass
class CompactedSsTable:
    """An SSTable compacted into the base table (pylance's record, the argument of the refused
    ``MergeInsertBuilder.mark_sstables_as_compacted``)."""

    shard_id: str
    generation: int


def _refused(name: str, why: str) -> Refused:
    return refused_function(_MODULE, name, why)


bytes_read_counter = _refused("bytes_read_counter", IO_STATS)
iops_counter = _refused("iops_counter", IO_STATS)
ScanStatistics = _refused("ScanStatistics", f"{IO_STATS} (scan_stats_callback is refused)")
simd_info = _refused("simd_info", SIMD)
FFILanceTableProvider = _refused("FFILanceTableProvider", FFI_PROVIDER)
CleanupCandidateFile = _refused("CleanupCandidateFile", CLEANUP_EXPLANATION)
CleanupExplanation = _refused("CleanupExplanation", CLEANUP_EXPLANATION)
CleanupReferencedBranch = _refused("CleanupReferencedBranch", CLEANUP_EXPLANATION)
ExecutionPlan = _refused("ExecutionPlan", f"{MEM_WAL} (an ExecutionPlan is a MemWAL LSM plan)")
LsmPointLookupPlanner = _refused("LsmPointLookupPlanner", MEM_WAL)
LsmScanner = _refused("LsmScanner", MEM_WAL)
LsmVectorSearchPlanner = _refused("LsmVectorSearchPlanner", MEM_WAL)
ShardSnapshot = _refused("ShardSnapshot", MEM_WAL)
ShardWriter = _refused("ShardWriter", MEM_WAL)
evaluate_sharding_spec = _refused("evaluate_sharding_spec", f"{MEM_WAL} (sharding specs route MemWAL writes)")
#: pylance's low-level blob v2 writers (descriptor arrays and sidecar files built by hand)
BLOB_WRITERS = (
    "writing blob descriptors and sidecar files by hand is not implemented; write blob_array values "
    "with write_dataset (lance_fw writes the descriptors and sidecars)"
)
BlobDescriptor = _refused("BlobDescriptor", BLOB_WRITERS)
BlobDescriptorArrayBuilder = _refused("BlobDescriptorArrayBuilder", BLOB_WRITERS)
DedicatedBlobWriter = _refused("DedicatedBlobWriter", BLOB_WRITERS)
PackedBlobWriter = _refused("PackedBlobWriter", BLOB_WRITERS)

__all__ = [
    "BlobDescriptor",
    "BlobDescriptorArrayBuilder",
    "CleanupCandidateFile",
    "CleanupExplanation",
    "CleanupReferencedBranch",
    "CompactedSsTable",
    "DatasetBasePath",
    "DedicatedBlobWriter",
    "ExecutionPlan",
    "FFILanceTableProvider",
    "FtsToken",
    "LsmPointLookupPlanner",
    "LsmScanner",
    "LsmVectorSearchPlanner",
    "PackedBlobWriter",
    "ScanStatistics",
    "ShardSnapshot",
    "ShardWriter",
    "ShardingField",
    "ShardingSpec",
    "bytes_read_counter",
    "evaluate_sharding_spec",
    "iops_counter",
    "set_logger",
    "simd_info",
    "tokenize",
]
