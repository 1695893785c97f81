"""``LanceDataset`` methods that are thin wrappers over what lance_fw already does, and the typed
refusals of the pylance names it does not implement.

Why a module of its own: ``dataset.py`` keeps the version handling and the read path; these are
pylance conveniences (``insert`` is ``write_dataset`` into this dataset, ``slice`` an offset/limit
scan, ``merge`` an ``add_columns`` whose UDF looks the new columns up by key ...), each a few
lines, and the list of refused names is long. ``DatasetExtras`` is a mixin of ``LanceDataset``.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util.refusals import (
    BRANCHES,
    INDEX_SEGMENTS,
    IO_STATS,
    MEM_WAL,
    NotImplementedInPylanceError,
    refusing,
)
from lance_fw.api import blobs, transactions
from lance_fw.api._forwarding import derived_method
from lance_fw.api.blobs import DEFAULT_BLOB_BUFFER_SIZE, BlobFile, take_blobs
from lance_fw.api.indices import DatasetStats
from lance_fw.api.result_types import DataStatistics, FieldStatistics
from lance_fw.api.write import write_dataset
from lance_fw.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError
from lance_fw.file.read_support import FileMetadata, read_metadata
from lance_fw.io.storage import join_uri
from lance_fw.options import Columns, refuse
from lance_fw.query.scanner import LanceScanner
from lance_fw.table import file_listing
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import deleted_rows
from lance_fw.table.paths import DATA_DIR

if TYPE_CHECKING:
    import pandas as pd

    from lance_fw._proto import table_pb2
    from lance_fw.api.dataset import LanceDataset
    from lance_fw.table.merge_insert import Transaction
    from lance_fw.table.snapshot import Snapshot

#: the data storage version of datasets of the legacy (pre-2.0) file format
LEGACY_STORAGE_VERSION = "0.1"
#: why ``session()`` is refused: pylance's ``Session`` reports and bounds caches in bytes
_NO_SESSION = (
    "sessions are not implemented: lance_fw's caches are per dataset version (deletion vectors) "
    "and process-wide (parsed data file metadata, opened indices, per-page decode state), bounded "
    "by entry count or bytes, so no Session could report size_bytes()/index_cache_size_bytes() or "
    "take byte capacities meaning what pylance's do"
)
#: pylance's ``dataset_stats`` default: a fragment with fewer rows than this is a "small file"
DEFAULT_MAX_ROWS_PER_GROUP = 1024

_NOT_IN_PYLANCE = "pylance does not implement it either (a pyarrow Dataset method)"
#: pyarrow ``Dataset`` methods of the base class that would reach its (never built) C++ dataset;
#: pylance's reach it and fail (``filter``) or crash the process (``sort_by``).
_PYARROW_DATASET = "this pyarrow Dataset method is not implemented; use scanner(filter=...) or to_table()"


def _table(data: Any, schema: pa.Schema | None) -> pa.Table:
    """``merge``'s input as one table: a table, batch, reader, an object with ``to_table()``
    (a pyarrow or Lance dataset or scanner) or ``to_arrow()`` (polars), a pandas DataFrame, or
    anything ``pa.table`` takes; ``schema`` casts it."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, pa.RecordBatchReader):
        data = data.read_all()
    elif not isinstance(data, pa.Table):
        if hasattr(data, "to_table"):
            data = data.to_table()
        elif hasattr(data, "to_arrow"):
            data = data.to_arrow()
        elif hasattr(data, "to_numpy"):
            data = pa.Table.from_pandas(data, preserve_index=False)
        else:
            data = pa.table(data)
    return data.cast(schema) if schema is not None else data


#: pylance's positional parameters of ``LanceDataset.to_pandas`` (the rest are keyword-only)
PANDAS_POSITIONAL = (
    "columns",
    "filter",
    "limit",
    "offset",
    "nearest",
    "batch_size",
    "batch_readahead",
    "fragment_readahead",
    "scan_in_order",
)

_DATA = inspect.Parameter("data", inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _signature(*parameters: inspect.Parameter) -> Callable[..., None]:
    """A stand-in whose signature is ``parameters``: what ``derived_method`` copies an option
    list from when no existing function has exactly pylance's list."""

    def stand_in(*args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    stand_in.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]
    return stand_in


def _keyword_only(parameters: list[inspect.Parameter], *drop: str) -> list[inspect.Parameter]:
    return [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in parameters if p.name not in drop]


def positional_first(
    options: Callable[..., object], positional: Sequence[str], new: Mapping[str, object], skip: int
) -> Callable[..., None]:
    """``options``' parameters (after the first ``skip``) in pylance's order for a method whose
    list differs from its source's: ``positional`` first and positional (``new`` ones added with
    their defaults), the rest keyword-only."""
    source = {p.name: p for p in list(inspect.signature(options).parameters.values())[skip:]}
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    first = [
        source[n].replace(kind=kind) if n in source else inspect.Parameter(n, kind, default=new[n])
        for n in positional
    ]
    rest = [p for p in source.values() if p.name not in positional]
    return _signature(*first, *_keyword_only(rest))


def _insert(ds: DatasetExtras, options: dict[str, Any]) -> None:
    """The dataset's own storage options and commit lock unless the call gives others."""
    if options["storage_options"] is None:
        options["storage_options"] = ds._storage_options
    if options["commit_lock"] is None:
        options["commit_lock"] = ds._commit_lock
    written = write_dataset(options.pop("data"), ds._ds(), **options)
    ds._move_to(written.version)


def _to_pandas(ds: DatasetExtras, options: dict[str, Any]) -> pd.DataFrame:
    return ds._ds().scanner(**without_blob_mode(options)).to_table().to_pandas()


def without_blob_mode(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` less pylance's ``blob_mode``, refused unless lazy (the default)."""
    refuse("to_pandas", {"blob_mode": options.pop("blob_mode")}, {"blob_mode": "lazy"})
    return options


class TakeRangeError(InvalidArgumentError, OSError):
    """``take`` of a position past the live rows. Also an ``OSError``, the class pylance raises."""


class MergeSchemaError(SchemaError, OSError):
    """``merge``'s data does not fit: no join column, or a column the dataset already has. Also an
    ``OSError``, the class pylance raises there."""


class _KeyLookup:
    """``merge``'s UDF: the ``data`` rows whose ``right_on`` equals each row's ``left_on`` value
    (null columns where none does). ``output_schema`` tells ``add_columns`` the new columns."""

    def __init__(self, data: pa.Table, left_on: str, right_on: str) -> None:
        data = data.filter(pc.is_valid(data.column(right_on)))  # a null key matches no row (pylance)
        if len(pc.unique(data.column(right_on))) != data.num_rows:
            raise InvalidArgumentError(f"merge: the join column {right_on!r} holds duplicate keys")
        self.left_on, self.keys = left_on, data.column(right_on).combine_chunks()
        self.values = data.drop_columns([right_on])
        self.output_schema = self.values.schema

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        rows = pc.index_in(batch.column(self.left_on), value_set=self.keys)
        taken = self.values.take(rows)
        return pa.RecordBatch.from_arrays(
            [c.combine_chunks() for c in taken.columns], schema=self.output_schema
        )


def _column_bytes(snapshot: Snapshot, data_file: table_pb2.DataFile) -> Iterator[tuple[int, int]]:
    """(field id, bytes) for each column of a data file: the sum of its pages' buffer sizes
    (column-level buffers do not count, as in pylance). A column no field of the file names
    belongs to the last field named before it (pylance's rule)."""
    if data_file.base_id:
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: data file {data_file.path} lives under base path {data_file.base_id}; "
            "multi-base datasets are not supported yet"
        )
    path = join_uri(snapshot.uri, DATA_DIR, data_file.path)

    def load() -> FileMetadata:
        reader = snapshot.storage.open_reader(path)
        try:
            return read_metadata(reader)
        finally:
            reader.close()

    columns = snapshot.cache.files.get_or_load(path, load).tail.columns
    owner = {column: fid for fid, column in zip(data_file.fields, data_file.column_indices) if column >= 0}
    field_id = 0
    for number, column in enumerate(columns):
        field_id = owner.get(number, field_id)
        yield field_id, sum(sum(page.buffer_sizes) for page in column.pages)


class LanceStats(DatasetStats):
    """pylance's ``ds.stats``: ``dataset_stats()``, ``index_stats(name)`` and ``data_stats()``."""

    def dataset_stats(self, max_rows_per_group: int = DEFAULT_MAX_ROWS_PER_GROUP) -> dict[str, int]:
        """Deleted rows, fragments, and fragments of fewer than ``max_rows_per_group`` rows."""
        fragments = self._ds._manifest.fragments
        return {
            "num_deleted_rows": sum(deleted_rows(f) for f in fragments),
            "num_fragments": len(fragments),
            "num_small_files": sum(f.physical_rows < max_rows_per_group for f in fragments),
        }

    def data_stats(self) -> DataStatistics:
        """Bytes on disk per field of the schema (nested ones included, pre-order): the page
        buffers of its columns in every data file of this version, deleted rows included (they
        still take the space). Legacy (0.1) datasets give zeros, as in pylance; a dropped field's
        columns count for nothing."""
        snapshot = self._ds._snapshot
        ids = [f.id for f in snapshot.lance_schema.walk()]
        sizes = dict.fromkeys(ids, 0)
        if snapshot.data_storage_version != LEGACY_STORAGE_VERSION:
            for fragment in snapshot.fragments:
                for data_file in fragment.files:
                    for field_id, size in _column_bytes(snapshot, data_file):
                        if field_id in sizes:
                            sizes[field_id] += size
        return DataStatistics([FieldStatistics(i, sizes[i]) for i in ids])


@refusing(
    {
        BRANCHES: ("add_bases", "base_paths", "create_branch"),
        INDEX_SEGMENTS: (
            "centroids",
            "get_ivf_model",
            "create_index_uncommitted",
            "commit_existing_index_segments",
            "merge_existing_index_segments",
            "merge_index_metadata",
        ),
        "index remapping is not implemented": ("remap_row_addrs",),
        MEM_WAL: ("initialize_mem_wal", "mem_wal_index_details", "mem_wal_writer"),
        IO_STATS: ("io_stats_incremental", "io_stats_snapshot"),
        "committing several transactions at once is not implemented": ("commit_batch",),
        "cloning datasets is not implemented": ("deep_clone", "shallow_clone"),
        "version deltas are not implemented": ("delta",),
        "deleting a whole dataset is not implemented; remove its directory": ("drop",),
        "cleanup explanations are not implemented": ("explain_cleanup_old_versions",),
        "roaring Bitmap results are not implemented; use get_fragments()": ("fragment_ids",),
        "pydantic schemas are not implemented": ("from_pydantic_model",),
        "manifest path migration is not implemented": ("migrate_manifest_paths_v2",),
        "file sessions are not implemented; use lance_fw.file": ("new_file_session",),
        _NO_SESSION: ("session",),
        "SQL queries over a dataset are not implemented (see lance_fw.duckdb)": ("sql",),
        "storage option providers are not implemented": ("storage_options_accessor",),
        "listing every file under the root is not implemented (tracked_files() is)": ("all_files",),
        _PYARROW_DATASET: (
            "filter",
            "sort_by",
            "join_asof",
            "_get_fragments",
            "_scan_options",
            "_scanner_options",
        ),
    },
    properties={BRANCHES: ("branches",)},
)
@refusing(
    {_NOT_IN_PYLANCE: ("join", "replace_schema")},
    properties={_NOT_IN_PYLANCE: ("partition_expression",)},
    error=NotImplementedInPylanceError,
)
class DatasetExtras:
    """pylance conveniences of ``LanceDataset`` built on its other methods."""

    _manifest: Any
    _storage_options: dict | None
    _commit_lock: Any

    def _move_to(self, version: int | None) -> None:  # provided by LanceDataset
        raise NotImplementedError

    def _ds(self) -> LanceDataset:
        return self  # type: ignore[return-value]

    # -- writing ----------------------------------------------------------------------------
    insert = derived_method(
        _signature(
            _DATA,
            inspect.Parameter("mode", inspect.Parameter.KEYWORD_ONLY, default="append"),
            *_keyword_only(list(inspect.signature(write_dataset).parameters.values())[2:], "mode"),
        ),
        _insert,
        "insert",
        """``write_dataset(data, this dataset, mode=mode, ...)`` (``write_dataset``'s options by name);
        this object then shows the version written, as in pylance.""",
        skip=0,
    )

    def truncate_table(self) -> None:
        """Delete every row in a new version (the schema, indices and config stay)."""
        self._ds().delete("true")

    def merge(self, data_obj: Any, left_on: str, right_on: str | None = None, schema: Any = None) -> None:
        """Add ``data_obj``'s other columns to each row whose ``left_on`` equals its ``right_on``
        (default: the same name); rows without a match get nulls, rows of ``data_obj`` with a null
        key match nothing, duplicate keys are refused (pylance picks one of them). One new data file per fragment,
        as ``add_columns`` (nothing is rewritten)."""
        ds = self._ds()
        data = _table(data_obj, schema)
        right_on = right_on or left_on
        if right_on not in data.column_names:
            raise MergeSchemaError(f"merge: the new data has no column {right_on!r}")
        clash = sorted(set(data.column_names) - {right_on} & set(ds.schema.names))
        if clash:
            raise MergeSchemaError(f"merge: columns {clash} exist on both sides")
        ds.add_columns(_KeyLookup(data, left_on, right_on), read_columns=[left_on])

    # -- reading ----------------------------------------------------------------------------
    def slice(self, start: int, end: int, columns: Columns | None = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position: an offset/limit scan."""
        if start < 0:
            raise InvalidArgumentError(f"slice: start must be non-negative, got {start}")
        if end < start:
            raise InvalidArgumentError(f"slice: end ({end}) must be >= start ({start})")
        return self._ds().scanner(columns=columns, offset=start, limit=end - start).to_table()

    def sample(self, num_rows: int, columns: Columns | None = None, randomize_order: bool = True) -> pa.Table:
        """``num_rows`` distinct rows drawn at random (``take`` of random positions; sorted
        positions unless ``randomize_order``). Like pylance, uses Python's ``random``."""
        positions = random.sample(range(self._ds().count_rows()), num_rows)
        return self._ds().take(positions if randomize_order else sorted(positions), columns)

    to_pandas = derived_method(
        positional_first(
            LanceScanner.__init__, (*PANDAS_POSITIONAL, "blob_mode"), {"blob_mode": "lazy"}, skip=2
        ),
        _to_pandas,
        "to_pandas",
        """``scanner(...).to_table().to_pandas()``: every ``scanner()`` option, pylance's first nine
        positional; ``blob_mode`` (pylance's lazy blob handles) only at its default.""",
        skip=0,
    )

    def take_blobs(
        self,
        blob_column: str,
        ids: Sequence[int] | None = None,
        addresses: Sequence[int] | None = None,
        indices: Sequence[int] | None = None,
        *,
        buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE,
    ) -> list[BlobFile | None]:
        """File-like ``BlobFile`` handles of a blob column's values at stable row ids, row
        addresses or live positions (exactly one); None for a null value (see api/blobs.py)."""
        return take_blobs(self._ds()._snapshot, blob_column, ids, addresses, indices, buffer_size)

    def read_blobs(
        self,
        blob_column: str,
        ids: Sequence[int] | pa.Array | None = None,
        addresses: Sequence[int] | pa.Array | None = None,
        indices: Sequence[int] | pa.Array | None = None,
        *,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, bytes | None]]:
        """pylance's ``read_blobs``: ``(row address, bytes)`` of each selected row (see api/blobs.py)."""
        return blobs.read_blobs(
            self._ds()._snapshot, blob_column, ids, addresses, indices, io_buffer_size, preserve_order
        )

    def read_blob_ranges(
        self,
        blob_column: str,
        requests: Sequence[tuple[int, int, int]],
        *,
        selector: str,
        io_buffer_size: int | None = None,
        preserve_order: bool | None = None,
    ) -> list[tuple[int, int, bytes | None]]:
        """pylance's ``read_blob_ranges``: ``(request index, row address, bytes)`` of each
        ``(row, offset, length)`` request (see api/blobs.py)."""
        return blobs.read_blob_ranges(
            self._ds()._snapshot, blob_column, requests, selector, io_buffer_size, preserve_order
        )

    # -- state ------------------------------------------------------------------------------
    @property
    def has_stable_row_ids(self) -> bool:
        """Whether row ids survive compaction and updates (the stable row ids feature flag)."""
        return bool(self._manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS)

    @property
    def initial_storage_options(self) -> dict | None:
        """The storage options this dataset was opened with (None: none given)."""
        return self._storage_options

    def latest_storage_options(self) -> dict | None:
        """As ``initial_storage_options``: lance_fw has no provider that refreshes them."""
        return self._storage_options

    @property
    def stats(self) -> LanceStats:
        """pylance's ``ds.stats``: ``dataset_stats()``, ``index_stats(name)``."""
        return LanceStats(self._ds())

    # -- transactions -----------------------------------------------------------------------
    def read_transaction(self, version: int) -> Transaction | None:
        """The ``Transaction`` that created ``version`` (its read version, uuid, properties and
        ``LanceOperation``), or None when that version records none."""
        snapshot = self._ds()._snapshot
        return transactions.read_transaction(snapshot.storage, snapshot.uri, version)

    def get_transactions(self, recent_transactions: int = 10) -> list[Transaction | None]:
        """The transactions of this version and the ones before it, newest first (at least one;
        fewer where older versions are gone)."""
        snapshot = self._ds()._snapshot
        return transactions.get_transactions(
            snapshot.storage, snapshot.uri, snapshot.version, recent_transactions
        )

    # -- files ------------------------------------------------------------------------------
    def validate(self) -> None:
        """Check that this version's data and deletion files are there and agree with the
        manifest; raises (``OSError`` classes, as pylance) when they do not."""
        file_listing.validate(self._ds()._snapshot)

    def tracked_files(
        self, *, min_version: int | None = None, progress: Callable[[int, int | None], object] | None = None
    ) -> pa.RecordBatchReader:
        """Every file any version references (from ``min_version``): rows ``version``,
        ``base_uri``, ``path`` (relative), ``type`` (``manifest``, ``data file`` ...), with
        ``progress(done, total)`` called after each manifest, as pylance's."""
        snapshot = self._ds()._snapshot
        rows = list(file_listing.tracked_files(snapshot.storage, snapshot.uri, min_version, progress))
        kinds = [f.kind for _, f in rows]
        table = pa.table(
            {
                "version": pa.array([v for v, _ in rows], pa.int64()),
                "base_uri": pa.DictionaryArray.from_arrays(
                    pa.array([0] * len(rows), pa.int32()), pa.array([snapshot.uri])
                ),
                "path": pa.array([f.path for _, f in rows], pa.string()),
                "type": pa.array(kinds, pa.string())
                .dictionary_encode()
                .cast(pa.dictionary(pa.int8(), pa.string())),
            },
            schema=TRACKED_FILES_SCHEMA,
        )
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())


#: pylance's schema of ``tracked_files()`` (every column non-null)
TRACKED_FILES_SCHEMA = pa.schema(
    [
        pa.field("version", pa.int64(), nullable=False),
        pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("type", pa.dictionary(pa.int8(), pa.string()), nullable=False),
    ]
)


__all__ = ["DatasetExtras", "LanceStats", "MergeSchemaError", "TakeRangeError"]
