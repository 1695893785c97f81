"""The interfaces plugins implement, in the plugin kernel's layer.

Why here: ``hookspecs`` names what each hook returns, and the layers that *use* those objects
(``file/`` decodes pages, ``table/`` commits manifests and reads deletion files) sit above the kernel.
Keeping the interface types in the kernel lets ``hookspecs`` and ``plugin_manager`` name and check them
without importing upward; ``file.encoding``, ``table.commit`` and ``table.deletion`` re-export them
under their old names, so plugins importing them from there keep working.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw.errors import CorruptFileError
from lance_fw.io.storage import RangeReader, Storage
from lance_fw.schema import LanceField

# --- encodings (used by file/) -------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnSpec:
    """What an encoder-selection hook sees about one column of a data file.

    ``role`` is ``"leaf"`` for a value column, ``"struct"`` / ``"list"`` for the 2.0 columns of a
    struct or list parent (whose array is a null array / int64 list lengths, see ``file.shred``).
    A packed struct is one ``"leaf"`` column of struct type (its fields have no columns), in 2.0
    as in 2.1+.
    """

    field: LanceField
    arrow_type: pa.DataType
    metadata: Mapping[str, str]
    version: tuple[int, int]
    role: str = "leaf"
    #: 2.1+: the fields from the top-level field down to this leaf (their nullability matters)
    path: tuple = ()

    @property
    def column_name(self) -> str:
        """The column as errors name it: its fields' dotted path (2.1+), else its field's name."""
        return ".".join(f.name for f in self.path) or self.field.name


@dataclass
class EncodedPage:
    """One encoded page: its buffers in order, the page encoding as a protobuf Any, its rows."""

    buffers: list[Any]  # bytes-like
    encoding: any_pb2.Any
    num_rows: int


class ColumnEncoder(Protocol):
    """Encodes the pages of one column of one data file (returned by ``lance_select_encoder``).

    ``pylance_readable`` declares whether pylance 14 reads the pages this encoder writes. It
    defaults to False (an encoder without the attribute counts as not readable), because a page
    pylance cannot decode breaks every pylance read of the dataset; lance_fw then writes with the
    encoder only under the write option ``allow_plugin_encodings=True`` and records the plugin in
    the manifest (``table/flags.py``). The writer verifies a True claim: each page's type URL must
    be the one pylance decodes at the file's version (``PYLANCE_PAGE_TYPE_URLS``).
    """

    pylance_readable: bool

    def encode(self, array: pa.Array) -> EncodedPage:
        """Encode one page worth of a column (the writer has already split pages by size)."""


class PageBuffers(Sequence):
    """A page's buffers read on demand, so a decoder of a few rows reads only the bytes they need.

    Indexing reads (and keeps) a whole buffer, so decoders written for eagerly read buffers work
    unchanged; ``read_parts`` reads pieces of buffers in one coalesced request.
    """

    def __init__(self, reader: RangeReader, offsets: Sequence[int], sizes: Sequence[int], where: str) -> None:
        self._reader, self.where = reader, where
        # kept as given when already tuples (a reader's page setups): no copy per page of a take
        self._offsets = offsets if isinstance(offsets, tuple) else tuple(offsets)
        self._sizes = sizes if isinstance(sizes, tuple) else tuple(sizes)
        self._whole: dict[int, memoryview] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if i not in self._whole:
            self._whole[i] = self.read_parts([(i, 0, self._sizes[i])])[0]
        return self._whole[i]

    def size(self, i: int) -> int:
        return self._sizes[i]

    def read_parts(self, parts: Sequence[tuple[int, int, int]]) -> list[memoryview]:
        """Bytes ``[offset, offset + length)`` of buffer ``index`` for each ``(index, offset, length)``."""
        return self._reader.read_ranges(self.file_ranges(parts))

    @property
    def reader(self) -> RangeReader:
        """The file reader the buffers are read through."""
        return self._reader

    def file_ranges(self, parts: Sequence[tuple[int, int, int]]) -> list[tuple[int, int]]:
        """The file's ``(offset, length)`` of each ``(index, offset, length)`` piece of a buffer.

        Raises:
            CorruptFileError: a piece lies outside its buffer.
        """
        ranges = []
        for index, offset, length in parts:
            if (
                not 0 <= index < len(self._sizes)
                or offset < 0
                or length < 0
                or offset + length > self._sizes[index]
            ):
                raise CorruptFileError(
                    self._reader.path,
                    f"{self.where}: bytes [{offset}, {offset + length}) of "
                    f"page buffer {index} lie outside the buffer",
                )
            ranges.append((self._offsets[index] + offset, length))
        return ranges


@dataclass
class PageInput:
    """What a page decoder receives: the page's buffers and how to read them.

    ``buffers`` is either the buffers themselves or a ``PageBuffers`` (read on demand, used when
    only some rows of the page are wanted); ``buffer_size`` and ``read_parts`` work on both.
    """

    buffers: Sequence[memoryview]
    num_rows: int
    arrow_type: pa.DataType
    where: str  # "file X, column N (field f), page P" for error messages
    #: Names the page's bytes for caches of what decoders derive from them (a chunk table read
    #: call after call by point lookups): the reader's (file metadata token, column, page); None
    #: where the page has no such identity (nothing derived from it is then kept).
    key: tuple[int, int, int] | None = None

    def buffer_size(self, i: int) -> int:
        self._check_buffer(i)
        return self.buffers.size(i) if isinstance(self.buffers, PageBuffers) else len(self.buffers[i])

    def _check_buffer(self, i: int) -> None:
        """Raise ``CorruptFileError`` naming the page unless it has a buffer ``i`` (a negative
        ``i`` included: Python's indexing would wrap it around to another buffer)."""
        if not 0 <= i < len(self.buffers):
            raise CorruptFileError(
                self.where, f"the page has {len(self.buffers)} buffers, buffer {i} was asked for"
            )

    def read_parts(self, parts: Sequence[tuple[int, int, int]]) -> list[memoryview]:
        """Pieces ``(buffer index, offset, length)`` of the page's buffers, in the order asked.
        (Buffers in memory are checked here without ``buffer_size``: a scan's run of pages asks
        this of every page.)"""
        buffers = self.buffers
        if isinstance(buffers, PageBuffers):
            return buffers.read_parts(parts)
        out = []
        for index, offset, length in parts:
            self._check_buffer(index)
            buffer = memoryview(buffers[index])
            if offset < 0 or length < 0 or offset + length > len(buffer):
                raise CorruptFileError(
                    self.where,
                    f"bytes [{offset}, {offset + length}) of page buffer {index} lie outside the buffer",
                )
            out.append(buffer[offset : offset + length])
        return out


def shared_file_ranges(
    requests: Sequence[tuple[PageInput, Sequence[tuple[int, int, int]]]],
) -> tuple[RangeReader, list[tuple[int, int]]] | None:
    """The one file reader every page of ``requests`` reads through, and the file's ``(offset,
    length)`` of every ``(page, parts)`` piece, in order; None where a page holds its buffers in
    memory or the pages read through different readers (or there are none).

    Raises:
        CorruptFileError: a piece lies outside its buffer (``PageBuffers.file_ranges``).
    """
    held = [page.buffers for page, _ in requests if isinstance(page.buffers, PageBuffers)]
    if not held or len(held) != len(requests) or any(b.reader is not held[0].reader for b in held):
        return None
    return held[0].reader, [r for b, (_, parts) in zip(held, requests) for r in b.file_ranges(parts)]


def read_pages_parts(
    requests: Sequence[tuple[PageInput, Sequence[tuple[int, int, int]]]],
) -> list[list[memoryview]]:
    """``page.read_parts(parts)`` of every ``(page, parts)``, in order. Where every page is read
    through one file reader, all their pieces go to it in one ``read_ranges`` call: a take over
    the many pages of a wide column (a writer's pages of a few MiB each) then costs one coalesced
    request, not one per page (a take of 100 rows touched 16 pages of a vector column per file).
    """
    shared = shared_file_ranges(requests) if len(requests) > 1 else None
    if shared is None:
        return [page.read_parts(parts) for page, parts in requests]
    reader, ranges = shared
    blobs = reader.read_ranges(ranges)
    out, at = [], 0
    for _, parts in requests:
        out.append(blobs[at : at + len(parts)])
        at += len(parts)
    return out


PageDecoder = Callable[[any_pb2.Any, PageInput], pa.Array]
KindDecoder = Callable[[Any, PageInput, int, pa.DataType], pa.Array]


class PageRowDecoder(Protocol):
    """A page decoder that can also decode just some rows of a page (optional capability).

    ``decode_rows(encoding, page, rows)`` gets sorted, distinct page-local row numbers and returns
    exactly those rows, in that order. ``page.buffers`` is then a ``PageBuffers``: the decoder
    reads only the byte ranges the rows need (``page.read_parts``) so random access (``take``)
    does not decode whole pages. Page decoders without it are run on the whole page.
    """

    def __call__(self, encoding: any_pb2.Any, page: PageInput) -> pa.Array: ...

    def decode_rows(self, encoding: any_pb2.Any, page: PageInput, rows: np.ndarray) -> pa.Array: ...

    # Optional too: ``decode_pages_rows(pages)`` gets ``(encoding, page, rows)`` for consecutive
    # pages of one column and returns all their rows in order, or None to have the reader decode
    # them page by page (a take spread over many pages then decodes, builds and checks once).
    # And ``decode_pages(pages)`` gets ``(encoding, page)`` (buffers in memory) for consecutive
    # pages of one column and returns every row of them in order, or None: a scan of small pages
    # (a writer's pages cut per input batch) decodes them in runs. The reader checks either
    # result as one page's (type, row count, full validation) before cutting it into pages.


# --- commits (used by table/commit.py) ---------------------------------------------------------


class CommitHandler(abc.ABC):
    """Publishes manifests for one storage, each exactly once.

    Thread-safety: one handler may be used by several threads (and its storage by other processes
    and machines) at once; :meth:`commit` must be safe under that concurrency, which is its point.
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    @abc.abstractmethod
    def commit(self, path: str, data: bytes) -> None:
        """Publish ``data`` as the manifest at ``path`` unless a manifest is already there.

        Args:
            path: the manifest's full path or URI (``<dataset>/_versions/<name>.manifest``).
            data: the whole manifest.
        Returns:
            None once a reader listing ``_versions`` sees the whole manifest at ``path``.
        Raises:
            CommitConflictError: another writer holds this version (its manifest exists, or the
                handler has another claim on it); nothing was published. The commit loop re-reads
                the latest version and retries on it.
            StorageError: anything else. The manifest may or may not be in place: the loop checks
                (a failure after our exact manifest was published counts as committed).

        Atomicity: of several concurrent calls for one ``path`` -- threads, processes, machines --
        exactly one returns normally, and no reader ever sees a partial manifest.
        """

    def repair(self, base_uri: str, version: int) -> bool:
        """Resolve a claim on ``version`` whose manifest never appeared (optional).

        Called by the commit loop when :meth:`commit` raised ``CommitConflictError`` for
        ``version`` but no manifest of that version is listed: a handler that claims a version
        before writing the manifest (an external store, a lock table) may hold a claim left by a
        writer that crashed in between. A handler that can tell a dead claim from a live one (a
        lease that expired, a staged manifest it can finish publishing) repairs it here.

        Args:
            base_uri: the dataset's root URI.
            version: the version that was refused.
        Returns:
            True when the claim was finished (the manifest is now published) or dropped, so the
            loop should retry at once; False when nothing was repaired (the default): the claim may
            belong to a live writer, and the loop waits, then reports the version as stuck.
        Raises:
            StorageError: the handler's store failed; the commit fails with it.

        Thread-safety: may run concurrently with ``commit`` and ``repair`` calls of other writers;
        it must never drop a claim whose writer can still publish.
        """
        return False


# --- deletion files (used by table/deletion.py) ------------------------------------------------


class DeletionCodec(abc.ABC):
    extension: str

    @abc.abstractmethod
    def decode(self, data: bytes, path: str) -> np.ndarray:
        """Sorted unique uint32 row offsets."""

    @abc.abstractmethod
    def encode(self, offsets: np.ndarray) -> bytes: ...


# --- scalar indices (used by table/indices.py and query/index_plan.py) ------------------------------
#
# An index type is a plugin returned by ``lance_index_types`` (keyed by pylance's upper-case name,
# e.g. "BTREE"). The kernel owns everything around the index files: which rows are indexed (live rows of
# the covered fragments, deleted rows excluded), the ``_indices/<uuid>/`` directory, the manifest's
# ``IndexMetadata`` and ``fragment_bitmap``, the ``CreateIndex`` commit, and re-checking every candidate
# row against the full filter. A plugin only turns (value, row address) pairs into files and answers
# ``ScalarQuery`` objects from them.


class ScalarQuery:
    """A question one index answers about one column; values are Python scalars as ``as_py()`` gives
    them for the column's Arrow type, never ``None`` (nulls are asked with ``IsNullQuery``)."""


@dataclass(frozen=True)
class EqualsQuery(ScalarQuery):
    """``column = value``."""

    value: Any


@dataclass(frozen=True)
class ValuesQuery(ScalarQuery):
    """A query about a set of values (the base of ``InQuery`` and the list queries)."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class InQuery(ValuesQuery):
    """``column IN (values...)``."""


@dataclass(frozen=True)
class RangeQuery(ScalarQuery):
    """``lower <(=) column <(=) upper``; a ``None`` bound is unbounded (``BETWEEN`` is both inclusive)."""

    lower: Any = None
    lower_inclusive: bool = True
    upper: Any = None
    upper_inclusive: bool = True


@dataclass(frozen=True)
class IsNullQuery(ScalarQuery):
    """``column IS NULL``."""


@dataclass(frozen=True)
class PrefixQuery(ScalarQuery):
    """``column LIKE 'prefix%'`` (no other wildcard in ``prefix``; string columns)."""

    prefix: str


@dataclass(frozen=True)
class ContainsAnyQuery(ValuesQuery):
    """``array_has_any(column, [values])`` / ``array_contains(column, value)`` on a list column."""


@dataclass(frozen=True)
class ContainsAllQuery(ValuesQuery):
    """``array_has_all(column, [values])`` on a list column."""


#: ``train``'s input: batches of ``value`` and ``_rowaddr`` (``uint64``) in row-address order.
Batches = Iterable[pa.RecordBatch]
#: The keyword arguments ``create_scalar_index`` / ``create_index`` pass on to an index type.
Params = Mapping[str, Any]
#: Schema metadata of an index file a plugin writes (None: none)
SchemaMeta = Mapping[str, str] | None
#: What an index type's ``load`` opens (``ScalarIndexReader`` or ``VectorIndexReader``).
_Reader = TypeVar("_Reader", covariant=True)


@dataclass(frozen=True)
class IndexSearchResult:
    """Row addresses (``fragment_id << 32 | offset``) an index found for a query.

    ``addresses``: sorted, unique ``uint64``; may name rows deleted since the index was built (the
    kernel drops them). ``exact``: every address matches and no indexed row that matches is missing;
    ``False`` means a superset (a zone map), which the kernel narrows by re-checking the filter.
    """

    addresses: np.ndarray
    exact: bool


class IndexFileStore(Protocol):
    """One index's directory (``_indices/<uuid>/``), given to a plugin by the kernel.

    Files are ordinary Lance files written in the version pylance 14 uses for index files; names are
    relative to the directory (``"page_data.lance"``) and must not contain ``/`` or ``..``.
    """

    def write_table(
        self, name: str, table: pa.Table, metadata: SchemaMeta = None, global_buffers: Sequence[bytes] = ()
    ) -> None:
        """Write ``table`` (and schema ``metadata``) as Lance file ``name``; ``global_buffers`` become
        the file's global buffers 1, 2, ... (0 is the schema), as pylance's LABEL_LIST null lists.

        Raises: ``StorageError`` on I/O failure; the file is not part of any version until the
        kernel commits the index, so a failed build leaves only unreferenced files.
        """

    def read_table(self, name: str, columns: Sequence[str] | None = None) -> pa.Table:
        """Read all rows of Lance file ``name`` (``columns``: a subset, in that order).

        Raises: ``CorruptFileError`` / ``StorageError`` naming the file.
        """

    def read_range(self, name: str, start: int, stop: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows [start, stop) of Lance file ``name``: only the pages holding them are read and decoded
        (several times cheaper than ``take_rows`` of the same rows)."""

    def take_rows(self, name: str, rows: np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at positions ``rows`` (sorted ``int64``) of Lance file ``name``, reading only the
        pages they live in (a B-tree reads one page of ``page_data.lance`` per lookup)."""

    def global_buffer(self, name: str, number: int) -> bytes:
        """Global buffer ``number`` (1, 2, ...) of Lance file ``name``.

        Raises: ``CorruptFileError`` naming the file when it has no such buffer.
        """

    def schema_metadata(self, name: str) -> dict[str, str]:
        """The schema metadata of Lance file ``name``."""

    def num_rows(self, name: str) -> int:
        """The row count of Lance file ``name``."""

    def exists(self, name: str) -> bool:
        """Whether file ``name`` exists in the directory."""


class ScalarIndexReader(Protocol):
    """An opened index: answers queries from its files (caching what it read)."""

    def supports(self, query: ScalarQuery) -> bool:
        """Whether ``search(query)`` can answer (the planner scans for what it cannot)."""

    def search(self, query: ScalarQuery) -> IndexSearchResult:
        """The rows matching ``query`` among the indexed rows.

        Raises: ``UnsupportedFeatureError`` only when ``supports`` said ``False``.
        """

    def statistics(self) -> dict[str, Any]:
        """The type-specific part of pylance's ``index_statistics`` (e.g. ``{"num_pages": 3}``)."""


class IndexType(Protocol[_Reader]):
    """What a scalar and a vector index type (a plugin's value from ``lance_index_types`` or
    ``lance_vector_index_types``) share: how it is named and matched in a manifest, its details
    message, its refusals, its training and how an index of it is opened (a ``_Reader``)."""

    #: pylance's ``index_type`` argument ("BTREE", "IVF_PQ") and ``describe_indices`` /
    #: ``index_stats`` name ("BTree").
    name: str
    display_name: str
    #: ``IndexMetadata.index_details`` type url, e.g. ``"/lance.table.BTreeIndexDetails"`` (every
    #: vector index: ``/lance.index.pb.VectorIndexDetails``): how an index in a manifest is matched to
    #: its plugin.
    type_url: str
    #: ``IndexMetadata.index_version`` pylance 14 writes for this type.
    index_version: int
    #: The ``index_version`` written on a dataset with stable row ids (pylance 14's BTREE: 1); a
    #: type without the attribute writes ``index_version`` there too.
    stable_index_version: int

    def holds_row_ids(self, index_version: int) -> bool:
        """Whether an index of this type written as ``index_version`` on a dataset with stable row
        ids holds the rows' ids (else their addresses; without stable row ids every index holds
        addresses). pylance 14: BTREE ids below version 1, INVERTED ids from version 2, BITMAP,
        LABEL_LIST and vector indices ids, ZONEMAP addresses. Optional: a type without it holds
        addresses."""

    def details(self, params: Params) -> bytes:
        """The serialized ``index_details`` message (``b""`` for the empty scalar details)."""

    def check(self, field: pa.Field, params: Params) -> None:
        """Refuse a column type or a parameter this type does not implement.

        Raises: ``UnsupportedFeatureError`` (type), ``InvalidArgumentError`` (unknown or bad
        parameter): never ignore a parameter.
        """

    def train(self, batches: Batches, field: pa.Field, params: Params, store: IndexFileStore) -> None:
        """Write the index files for ``batches``: columns ``value`` (the column, type ``field.type``)
        and ``_rowaddr`` (``uint64``; ``_rowid``, the row id, where the index holds ids: see
        ``holds_row_ids``), every live row of the covered fragments once, in
        row-address order. Files go to ``store``; nothing else may be written."""

    def load(self, store: IndexFileStore, field: pa.Field) -> _Reader:
        """Open an index of this type (built by lance_fw or pylance) from ``store``.

        Raises: ``CorruptFileError`` naming the file when the files are not this type's.
        """


class ScalarIndexType(IndexType[ScalarIndexReader], Protocol):
    """One scalar index type (a plugin's value from ``lance_index_types``)."""


# --- vector indices (used by table/indices.py and query/vector_index_search.py) -------------------
#
# A vector index type is a plugin returned by ``lance_vector_index_types`` (keyed by pylance's name,
# e.g. "IVF_PQ"). Every vector index of pylance 14 has the same ``index_details`` type url
# (``/lance.index.pb.VectorIndexDetails``); the kernel matches an index to its plugin by the name the
# details spell (``IVF_`` + ``HNSW_``? + the compression: ``PQ``, ``SQ``, ``RQ`` or ``FLAT``). As for
# scalar indices the kernel owns the rows (live rows of covered fragments), the directory, the
# manifest and the commit; the plugin turns (vector, row id) pairs into files and answers
# ``VectorQuery`` objects with approximate candidates, which the kernel refines and merges.


@dataclass(frozen=True)
class VectorQuery:
    """One query vector asked of one index segment.

    ``vector``: 1-d, the column's element type cast to float32. ``k``: how many candidates to
    return (the caller asks ``k * refine_factor`` when it re-ranks). ``minimum_nprobes`` /
    ``maximum_nprobes``: partitions to search (``None``: the index's own policy, at least one; at
    most all). ``allowed``: row ids -> bool mask of the rows that may be returned (deleted rows,
    rows of fragments no longer in the version, and with a prefilter the rows failing the filter
    are not allowed); an index keeps probing past ``minimum_nprobes`` while it has fewer than ``k``
    allowed candidates, up to ``maximum_nprobes``.
    """

    vector: np.ndarray
    k: int
    minimum_nprobes: int | None = None
    maximum_nprobes: int | None = None
    allowed: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class VectorSearchResult:
    """Candidates of one ``VectorQuery``: ``row_ids`` (``uint64``, as the index stores them: row
    addresses without stable row ids) with their approximate ``distances`` (``float32``, in the
    metric pylance reports for the index), nearest first, at most ``k``."""

    row_ids: np.ndarray
    distances: np.ndarray
    partitions_searched: int = 0


class VectorIndexReader(Protocol):
    """An opened vector index segment: answers queries from its files (caching what it read)."""

    #: the metric the index was built for (``"l2"``, ``"cosine"``, ``"dot"``)
    metric: str

    def search(self, query: VectorQuery) -> VectorSearchResult:
        """The ``query.k`` allowed indexed rows nearest ``query.vector`` by the index's estimate."""

    def statistics(self) -> dict[str, Any]:
        """The type-specific part of pylance's ``index_statistics`` (partitions, sub index)."""


class VectorIndexType(IndexType[VectorIndexReader], Protocol):
    """One vector index type (a plugin's value from ``lance_vector_index_types``).

    ``train`` receives the kernel's training batches (``value``: the vector column, ``_rowaddr``:
    ``uint64``, every live row of the covered fragments in row-address order) and must store the
    row addresses as the index's row ids; null vectors are the plugin's to skip. ``params`` are
    pylance's ``create_index`` keyword arguments that were given (``metric`` always, lower case).
    """

    def rebuild(self, batches: Batches, field: pa.Field, old: IndexFileStore, store: IndexFileStore) -> None:
        """Index ``batches`` into ``store`` with the model (centroids, codebooks, bounds) of the
        index in ``old``, without training: ``optimize_indices`` after appends, as pylance merges
        new rows into an index. The index details stay those of ``old``."""
