"""``lance_fw.dataset(uri)`` and ``LanceDataset``: pylance's read surface.

A ``LanceDataset`` object shows one version. Its mutating calls (``delete``, ``update``,
``merge_insert``, ``add/alter/drop_columns``, ``optimize.compact_files``) move *that object* to the
version they committed, as pylance does; everything derived from the old version is dropped then.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from lance_fw.api._forwarding import derived_method, same_options
from lance_fw.api.dataset_extras import DatasetExtras, TakeRangeError
from lance_fw.api.dataset_metadata import MetadataMethods
from lance_fw.api.distributed import commit
from lance_fw.api.fragment import LanceFragment
from lance_fw.api.indices import IndexMethods
from lance_fw.api.lance_schema import LanceSchema
from lance_fw.api.optimizer import DatasetOptimizer
from lance_fw.api.row_columns import asks_for_row_columns, take_with_row_columns
from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError
from lance_fw.file.version import parse_version
from lance_fw.io.storage import Storage, resolve_storage
from lance_fw.options import Columns, CommitLock, Filter, Unsupported, Uri, refuse, uri_string
from lance_fw.plugin_manager import get_plugin_manager
from lance_fw.query.column_paths import has_nested_paths, prune_to_paths, top_level_columns
from lance_fw.query.filter_plan import FilterPlan, filter_plan
from lance_fw.query.projection import Projection
from lance_fw.query.scanner import LanceScanner
from lance_fw.schema import LanceField
from lance_fw.table import cleanup as table_cleanup
from lance_fw.table import flags as feature_flags
from lance_fw.table.commit import CommitHandler
from lance_fw.table.deletion import live_rows
from lance_fw.table.manifest import find_version, latest_version, list_versions, read_manifest, version_entry
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.tags import Tags
from lance_fw.table.take import addresses_of, live_addresses
from lance_fw.table.take import take as take_rows

#: ``default_scan_options`` keys lance_fw merges into every ``scanner()`` call. They cannot change
#: which rows or columns a scan returns, so internal scans (merge_insert, update) may see them too.
DEFAULT_SCAN_OPTIONS = (
    "batch_size",
    "batch_readahead",
    "fragment_readahead",
    "scan_in_order",
    "use_stats",
    "io_buffer_size",
    "late_materialization",
    "use_scalar_index",
    "prefilter",
)

#: pylance's defaults for ``delete`` / ``update``'s commit retry settings
DEFAULT_CONFLICT_RETRIES = 10
DEFAULT_RETRY_TIMEOUT = timedelta(seconds=30)

if TYPE_CHECKING:
    from lance_fw.table.index_list import IndexDescription
    from lance_fw.table.merge_insert import MergeInsertBuilder

T = TypeVar("T")

#: Row positions / ids for take: a list, numpy array or Arrow array of integers (checked by _index_array)
IndexArg: TypeAlias = Sequence[int] | np.ndarray | pa.Array | pa.ChunkedArray


def dataset(
    uri: Uri | None = None,
    version: int | str | None = None,
    asof: datetime | str | None = None,
    block_size: int | None = None,
    commit_lock: CommitLock | None = None,
    index_cache_size: int | None = None,
    storage_options: dict | None = None,
    default_scan_options: dict | None = None,
    metadata_cache_size_bytes: int | None = None,
    index_cache_size_bytes: int | None = None,
    read_params: dict | None = None,
    session: Unsupported = None,
    namespace_client: Any = None,
    table_id: list | None = None,
    base_store_params: dict | None = None,
) -> LanceDataset:
    """Open a dataset at its latest version, a given ``version`` (number or tag), or the version
    current ``asof``. Cache and block sizes only tune pylance's caches and are accepted as such."""
    refuse(
        "dataset",
        {
            "read_params": read_params,
            "session": session,
            "base_store_params": base_store_params,
        },
    )
    if namespace_client is not None or table_id is not None:
        if uri is not None or namespace_client is None or table_id is None:
            raise InvalidArgumentError("dataset: give either uri, or namespace_client and table_id")
        from lance_fw.namespace import resolve_table_uri  # the same rank: imported when used

        uri, found = resolve_table_uri(namespace_client, table_id)
        storage_options = storage_options or found
    if uri is None:
        raise InvalidArgumentError("dataset: uri (or namespace_client and table_id) is required")
    return LanceDataset(
        uri,
        version=version,
        asof=asof,
        storage_options=storage_options,
        default_scan_options=default_scan_options,
        commit_lock=commit_lock,
    )


def finish_claimed_versions(storage: Storage, uri: str) -> None:
    """Publish versions claimed after the newest listed one whose writer died before publishing them.

    A commit handler that claims a version before writing its manifest (an external manifest store)
    can be left holding a claim whose manifest is staged but not listed; its optional
    ``CommitHandler.repair`` finishes such a claim. A reader asks it for the versions after the newest
    listed one, so it opens the newest claimed version, as store-backed readers do in pylance. Costs
    nothing for handlers without ``repair`` (the put-if-absent ones, which never leave a claim).
    """
    handler = get_plugin_manager().hook.lance_commit_handler(
        storage=storage, uri=uri, options=getattr(storage, "options", {})
    )
    if handler is None or type(handler).repair is CommitHandler.repair:
        return  # no handler commits here, or none that can leave a claim unpublished
    while True:
        latest = latest_version(storage, uri)
        version = latest.version + 1 if latest is not None else 1
        # go on only while a repair publishes the version: a handler may also "repair" by dropping a
        # dead claim (True, no manifest), and asking it again would never end
        if not handler.repair(uri, version) or not any(
            e.version == version for e in list_versions(storage, uri)
        ):
            return


def _check_default_scan_options(options: dict | None) -> dict:
    """pylance applies each key as a scanner setting (unknown keys: ``ValueError``). lance_fw takes
    the keys that cannot change a result; those that would (columns, filter, limit...) also have
    to hold for lance_fw's own internal scans, so they are refused rather than half applied."""
    options = dict(options or {})
    if not options:  # every open: the scanner's signature costs ~0.2 ms, a tenth of a point lookup
        return options
    known = set(inspect.signature(LanceScanner.__init__).parameters) - {"self", "ds"}
    for key in options:
        if key not in known:
            raise InvalidArgumentError(f"default_scan_options: unknown option {key!r}")
        if key not in DEFAULT_SCAN_OPTIONS:
            refuse("dataset", {f"default_scan_options[{key!r}]": options[key]})
    return options


class _FromSnapshot(Generic[T]):
    """A read-only attribute of this version that the ``Snapshot`` already holds (``ds.schema`` ...)."""

    def __init__(self, read: Callable[[Snapshot], T]) -> None:
        self._read, self._name = read, ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __set__(self, ds: LanceDataset, value: object) -> None:
        raise AttributeError(
            f"property {self._name!r} of 'LanceDataset' object has no setter"
        )  # as @property

    @overload
    def __get__(self, ds: None, owner: type | None = None) -> _FromSnapshot[T]: ...
    @overload
    def __get__(self, ds: LanceDataset, owner: type | None = None) -> T: ...
    def __get__(self, ds: LanceDataset | None, owner: type | None = None) -> T | _FromSnapshot[T]:
        return self if ds is None else self._read(ds._snapshot)


def _cleanup_old_versions(ds: LanceDataset, options: dict[str, Any]) -> table_cleanup.CleanupStats:
    return table_cleanup.cleanup_old_versions(ds._storage, ds.uri, read_version=ds.version, **options)


def _scan(ds: LanceDataset, options: dict[str, Any]) -> LanceScanner:
    """``LanceScanner(**options)`` over ``ds``'s version, its ``default_scan_options`` filling those None."""
    for key, value in ds._default_scan_options.items():
        if options[key] is None:
            options[key] = value
    return LanceScanner(ds._snapshot, **options)


def _scan_batches(ds: LanceDataset, options: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    return ds.scanner(**options).to_batches()


def _scan_table(ds: LanceDataset, options: dict[str, Any]) -> pa.Table:
    """A table of every column carries the schema metadata, as pylance's ``to_table``."""
    table = ds.scanner(**options).to_table()
    return table.replace_schema_metadata(ds.schema.metadata) if options["columns"] is None else table


def _unpickle(
    uri: str, version: int, storage_options: dict | None, default_scan_options: dict | None
) -> LanceDataset:
    return LanceDataset(
        uri, version=version, storage_options=storage_options, default_scan_options=default_scan_options
    )


def _scan_head(ds: LanceDataset, options: dict[str, Any]) -> pa.Table:
    return ds.scanner(limit=options.pop("num_rows"), **options).to_table()


class LanceDataset(DatasetExtras, MetadataMethods, IndexMethods, pads.Dataset):
    """One version of a Lance dataset; mutating calls move this object to the version they commit.

    A ``pyarrow.dataset.Dataset``, as pylance's is, so code that takes one (DuckDB's replacement
    scans and ``register``, polars' ``scan_pyarrow_dataset``) scans it through ``scanner(columns=,
    filter=<pyarrow expression>)``. pyarrow's C++ dataset behind that base is never built: every
    method of the base is overridden here or refused (``DatasetExtras``), never reached.
    """

    def __reduce__(self) -> tuple[Callable[..., LanceDataset], tuple[Any, ...]]:
        """Pickle by reference: the uri, the version and the options reopen it (a commit lock and
        opened files stay behind, as pylance's do)."""
        return _unpickle, (self.uri, self.version, self._storage_options, self._default_scan_options)

    def __copy__(self) -> LanceDataset:
        """The same version over the same open storage (``copy.copy`` does not reopen, as
        pickling must)."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def __init__(
        self,
        uri: Uri,
        version: int | str | None = None,
        asof: datetime | str | None = None,
        storage_options: dict | None = None,
        default_scan_options: dict | None = None,
        commit_lock: CommitLock | None = None,
        _storage: Storage | None = None,
    ) -> None:
        self._uri = uri_string(uri).rstrip("/")
        self._commit_lock = commit_lock  # pylance's CommitLock: every commit through this object uses it
        self._storage_options = storage_options
        self._default_scan_options = _check_default_scan_options(default_scan_options)
        self._storage = _storage or resolve_storage(self.uri, storage_options)
        if asof is not None:
            version = self._version_asof(asof)
        if isinstance(version, str):
            version = Tags(self._storage, self.uri).get_version(version)
        if version is not None and not isinstance(version, int):
            raise InvalidArgumentError(f"version must be an int or a tag name, got {version!r}")
        if version is None:
            finish_claimed_versions(self._storage, self.uri)
        entry = find_version(self._storage, self.uri, version)
        self._manifest, self._index_section = read_manifest(self._storage, entry.path)
        feature_flags.check_readable(self.uri, self._manifest.reader_feature_flags, self._manifest.config)

    def _reopen(self, version: int | str | None) -> LanceDataset:
        """Another version of this dataset, with this object's options."""
        return LanceDataset(
            self.uri,
            version=version,
            storage_options=self._storage_options,
            default_scan_options=self._default_scan_options,
            commit_lock=self._commit_lock,
            _storage=self._storage,
        )

    def _move_to(self, version: int | None) -> None:
        """Show ``version`` (just committed through this object; None: the latest), as pylance's
        mutating calls do. Every attribute is replaced, cached ones (``lance_schema``) included, so
        nothing of the old version survives; fragments handed out before keep their own snapshot."""
        fresh = self._reopen(version)
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)

    @property
    def uri(self) -> str:
        """The dataset's location (without a trailing slash)."""
        return self._uri

    # -- versions ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._manifest.version

    @property
    def latest_version(self) -> int:
        finish_claimed_versions(self._storage, self.uri)
        return find_version(self._storage, self.uri, None).version  # none left: DatasetNotFoundError

    def versions(self) -> list[dict]:
        return [
            version_entry(read_manifest(self._storage, e.path)[0])
            for e in list_versions(self._storage, self.uri)
        ]

    def get_version(self) -> dict:
        """This object's version as a ``versions()`` entry (version, timestamp, metadata)."""
        return version_entry(self._manifest)

    def version_refs(self) -> list[dict[str, int]]:
        """``{"version": n}`` for every version, oldest first (no manifest is read)."""
        return [{"version": e.version} for e in list_versions(self._storage, self.uri)]

    def _version_asof(self, asof: datetime | str) -> int:
        when = datetime.fromisoformat(asof) if isinstance(asof, str) else asof
        if when.tzinfo is not None:
            when = when.astimezone().replace(tzinfo=None)
        chosen = None
        for v in self.versions():
            if v["timestamp"] <= when:
                chosen = v["version"]
        if chosen is None:
            raise DatasetNotFoundError(f"{self.uri}: no version existed at {asof}")
        return chosen

    @property
    def tags(self) -> Tags:
        """``ds.tags.create(name, version)``, ``.update``, ``.delete``, ``.list()``, ``.list_ordered()``
        (tags name versions; like pylance, they do not move this object)."""
        return Tags(self._storage, self.uri)

    def checkout_version(self, version: int | str) -> LanceDataset:
        return self._reopen(version)

    def restore(self) -> None:
        """Make this object's version the latest again (a new version with its contents) and move
        this object there, as pylance."""
        from lance_fw.table.restore import restore

        self._move_to(restore(self._snapshot, self.latest_version))

    def checkout_latest(self) -> None:
        """Move this object to the latest version (pylance's in-place checkout; returns None)."""
        self._move_to(None)

    #: pylance's ``LanceDataset.commit`` (``lance_fw.api.distributed.commit``: the distributed write's
    #: driver side, next to ``write_fragments`` and ``LanceOperation``)
    commit = staticmethod(commit)

    @cached_property
    def _snapshot(self) -> Snapshot:
        """This version as the layers below the façade take it (table.snapshot): built once per
        version; ``_move_to`` drops it with every other attribute."""
        return Snapshot(
            self.uri,
            self._storage,
            self._manifest,
            self._index_section,
            storage_options=self._storage_options,
            commit_lock=self._commit_lock,
        )

    # -- schema -----------------------------------------------------------------------------
    lance_schema = _FromSnapshot(lambda snapshot: LanceSchema(snapshot.lance_schema))
    schema = _FromSnapshot(lambda snapshot: snapshot.schema)
    data_storage_version = _FromSnapshot(lambda snapshot: snapshot.data_storage_version)
    max_field_id = _FromSnapshot(lambda snapshot: snapshot.max_field_id)

    # -- fragments --------------------------------------------------------------------------
    def get_fragments(self, filter: Filter | None = None) -> list[LanceFragment]:
        if filter is not None:
            raise InvalidArgumentError("get_fragments() does not support filter yet")  # as pylance
        snapshot = copy.copy(self)  # fragments keep this version when the object moves on
        return [LanceFragment(snapshot, f) for f in self._manifest.fragments]

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        for f in self._manifest.fragments:
            if f.id == fragment_id:
                return LanceFragment(copy.copy(self), f)
        return None

    # -- reading ----------------------------------------------------------------------------
    def count_rows(self, filter: Filter | None = None) -> int:
        if filter is not None:
            return LanceScanner(self._snapshot, columns=[], filter=filter).count_rows()
        return sum(live_rows(f) for f in self._manifest.fragments)

    def __len__(self) -> int:
        return self.count_rows()

    def _fields(self, columns: Sequence[str] | None) -> list[LanceField]:
        return self._snapshot.fields(columns)

    scanner = same_options(
        LanceScanner,
        _scan,
        "scanner",
        """pylance's scanner (see ``LanceScanner`` for what is refused); ``default_scan_options``
        given to ``dataset()`` fill the options left None.""",
    )
    to_batches = same_options(
        scanner,
        _scan_batches,
        "to_batches",
        "``scanner(...).to_batches()`` (pylance's list, or more: every ``scanner()`` option).",
    )
    to_table = same_options(
        scanner,
        _scan_table,
        "to_table",
        "``scanner(...).to_table()`` (pylance's list, or more: every ``scanner()`` option).",
    )
    head = derived_method(
        scanner,
        _scan_head,
        "head",
        "The first ``num_rows`` rows; the other arguments are ``scanner()``'s (pylance passes them on).",
        drop=("limit",),
        first=(inspect.Parameter("num_rows", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="int"),),
    )

    def take(self, indices: IndexArg, columns: Columns | None = None) -> pa.Table:
        """Rows at positions ``indices`` over the live rows (any order, repeats allowed); ``columns``
        may be names or ``{name: SQL expression}`` as in ``scanner``."""
        wanted = _index_array(indices, np.int64, "take: indices")
        total = self.count_rows()
        if len(wanted) and (wanted.min() < 0 or wanted.max() >= total):
            raise TakeRangeError(
                f"take: indices must lie in [0, {total}), got {wanted.min()}..{wanted.max()}"
            )
        return self._projected_take(wanted, columns, by_address=False)

    def _take_rows(
        self, row_ids: IndexArg, columns: Columns | None = None, *, ignore_deletions: bool = False
    ) -> pa.Table:
        """Rows by row id: the row address (``fragment_id << 32 | offset``) without stable row ids;
        with them, ids are looked up in the fragments' sequences. Ids of deleted rows give nothing
        unless ``ignore_deletions`` (then their stored values come back, as in pylance)."""
        wanted = _index_array(row_ids, np.uint64, "_take_rows: row_ids")
        if self._manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS:
            wanted = addresses_of(self._snapshot, wanted)
        elif not ignore_deletions:
            wanted = live_addresses(self._snapshot, wanted)
        return self._projected_take(wanted, columns, by_address=True)

    def _projected_take(self, wanted: np.ndarray, columns: Columns | None, by_address: bool) -> pa.Table:
        if asks_for_row_columns(columns):  # _rowid / _rowaddr / _rowoffset by name (api/row_columns)
            return take_with_row_columns(
                self._snapshot,
                wanted,
                list(columns or ()),
                by_address,
                lambda names: self._projected_take(wanted, names, by_address),
            )
        if isinstance(columns, dict):
            projection = Projection(columns, self.schema)
            return projection.apply(take_rows(self._snapshot, wanted, projection.columns, by_address))
        names = columns if columns is None or isinstance(columns, list) else list(columns)
        if names is not None and has_nested_paths(names, self.schema):  # "p.a": struct p pruned to a
            whole = take_rows(self._snapshot, wanted, top_level_columns(names, self.schema), by_address)
            return prune_to_paths(whole, names, self.schema)
        return take_rows(self._snapshot, wanted, names, by_address)

    def _filter_plan(self, filter: Filter | None) -> FilterPlan | None:
        """query.filter_plan over this version (kept for callers not yet given the snapshot)."""
        return filter_plan(self._snapshot, filter)

    def delete(
        self,
        predicate: Filter,
        *,
        conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
        retry_timeout: timedelta = DEFAULT_RETRY_TIMEOUT,
    ) -> dict:
        """Delete the rows matching ``predicate`` (a Lance SQL string or pyarrow expression) in a
        new version; this object then shows that version, as in pylance. The retry settings only
        bound how long a conflicting commit is retried; lance_fw's commit rebases on its own."""
        from lance_fw.table.delete import delete_rows, expression_matcher

        version, rows = delete_rows(
            self._snapshot,
            expression_matcher(self._snapshot, predicate),
            predicate if isinstance(predicate, str) else str(predicate),
        )
        self._move_to(version)
        return {"num_deleted_rows": rows}

    def update(
        self,
        updates: dict[str, str],
        where: str | None = None,
        conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
        retry_timeout: timedelta = DEFAULT_RETRY_TIMEOUT,
        data_storage_version: str | None = None,
    ) -> dict:
        """Set columns to SQL expressions (``{"name": "upper(name)"}``) on the rows matching ``where``
        (retry settings as ``delete``; rewritten rows keep the dataset's file version)."""
        from lance_fw.table.row_rewrite import update

        refuse("update", {"data_storage_version": data_storage_version})
        rows, version = update(self._snapshot, updates, where)
        self._move_to(version)
        return {"num_rows_updated": rows}

    def merge_insert(self, on: str | list[str]) -> MergeInsertBuilder:
        """Upsert builder: ``.when_matched_update_all().when_not_matched_insert_all().execute(data)``."""
        from lance_fw.table.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(lambda: self._snapshot, on, self._move_to)

    def add_columns(
        self,
        transforms: Any,
        read_columns: list[str] | None = None,
        reader_schema: pa.Schema | None = None,
        batch_size: int | None = None,
    ) -> None:
        """New columns from ``{name: SQL expression}`` or a UDF (``RecordBatch`` -> new columns; one
        new data file per fragment, nothing rewritten) or from pyarrow fields (all null, metadata
        only). A ``lance_fw.batch_udf`` gives the output schema, and with ``checkpoint_file`` a
        failed run resumes from the results it saved. Readers of new data (``reader_schema``) are
        not supported."""
        from lance_fw.table.schema_evolution import add_columns

        refuse("add_columns", {"reader_schema": reader_schema})
        self._move_to(add_columns(self._snapshot, transforms, read_columns, batch_size))

    def alter_columns(self, *alterations: dict) -> None:
        """Rename (``name``), change ``nullable`` (metadata only) or cast (``data_type``) columns."""
        from lance_fw.table.schema_evolution import alter_columns

        self._move_to(alter_columns(self._snapshot, *alterations))

    def drop_columns(self, columns: list[str]) -> None:
        """Remove columns from the schema (metadata only; cleanup reclaims nothing until rewrite)."""
        from lance_fw.table.schema_evolution import drop_columns

        self._move_to(drop_columns(self._snapshot, columns))

    # -- indices (read only: listed from the manifest; see lance_fw.table.index_list) ---------
    def describe_indices(self) -> list[IndexDescription]:
        """Every index of this version (pylance's ``IndexDescription`` attributes), by name."""
        from lance_fw.table.index_list import describe_indices

        return describe_indices(self._snapshot)

    def list_indices(self) -> list[dict[str, Any]]:
        """Deprecated in pylance (as here): one dict per index segment; use ``describe_indices``."""
        from lance_fw.table.index_list import list_indices

        warnings.warn(
            "The 'list_indices' method is deprecated. It may be removed in a future "
            "version. Use describe_indices() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return list_indices(self._snapshot)

    @property
    def has_index(self) -> bool:
        return len(self.describe_indices()) > 0

    @property
    def optimize(self) -> DatasetOptimizer:
        """``ds.optimize.compact_files(target_rows_per_fragment=..., materialize_deletions=...)``."""
        return DatasetOptimizer(self)

    cleanup_old_versions = derived_method(
        table_cleanup.cleanup_old_versions,
        _cleanup_old_versions,
        "cleanup_old_versions",
        """pylance's signature and semantics: the given limits combine with AND (none: two weeks);
        this object's version and later ones are never removed. See ``lance_fw.table.cleanup``.""",
        skip=2,  # the storage and uri: this dataset's
        drop=("read_version",),  # this object's version
    )


def _index_array(values: IndexArg, dtype: type[np.integer], what: str) -> np.ndarray:
    """A flat array of integer positions or ids (pylance refuses nested lists and non-integers)."""
    array = np.asarray(
        values.to_numpy(zero_copy_only=False) if isinstance(values, (pa.Array, pa.ChunkedArray)) else values
    )
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise InvalidArgumentError(f"{what} must be a flat list of integers, got {values!r:.80}")
    return array.astype(dtype)


__all__ = ["DatasetOptimizer", "LanceDataset", "LanceFragment", "dataset", "parse_version"]
