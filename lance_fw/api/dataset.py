"""``lance_fw.dataset(uri)`` and ``LanceDataset``: pylance's read surface."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import DatasetNotFoundError, InvalidArgumentError
from lance_fw.file.version import parse_version
from lance_fw.io.storage import Storage, resolve_storage
from lance_fw.query.filter import filter_columns, parse_filter
from lance_fw.query.scanner import LanceScanner, readahead
from lance_fw.schema import LanceSchema
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import deleted_rows, live_rows
from lance_fw.table.fragment import DEFAULT_BATCH_SIZE, FragmentReader, Matcher, matcher_for, with_row_columns
from lance_fw.table.manifest import find_version, list_versions, read_manifest
from lance_fw.table.tags import Tags


def dataset(uri: str, version: int | None = None, asof: datetime | str | None = None,
            storage_options: dict | None = None, **_ignored) -> "LanceDataset":
    """Open a dataset at its latest version, a given ``version``, or the version current ``asof``."""
    return LanceDataset(uri, version=version, asof=asof, storage_options=storage_options)


def _to_datetime(ts) -> datetime:
    return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9)


class LanceDataset:
    """One version of a Lance dataset (a read-only snapshot; writes go through ``write_dataset``)."""

    def __init__(self, uri: str, version: int | None = None, asof: datetime | str | None = None,
                 storage_options: dict | None = None, _storage: Storage | None = None):
        self.uri = str(uri).rstrip("/")
        self._storage_options = storage_options
        self._storage = _storage or resolve_storage(self.uri, storage_options)
        if asof is not None:
            version = self._version_asof(asof)
        if isinstance(version, str):
            version = Tags(self._storage, self.uri).get_version(version)
        if version is not None and not isinstance(version, int):
            raise InvalidArgumentError(f"version must be an int or a tag name, got {version!r}")
        entry = find_version(self._storage, self.uri, version)
        self._manifest, self._index_section = read_manifest(self._storage, entry.path)
        feature_flags.check_readable(self.uri, self._manifest.reader_feature_flags)

    # -- versions ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._manifest.version

    @property
    def latest_version(self) -> int:
        return list_versions(self._storage, self.uri)[-1].version

    def versions(self) -> list[dict]:
        out = []
        for entry in list_versions(self._storage, self.uri):
            manifest, _ = read_manifest(self._storage, entry.path)
            out.append({"version": manifest.version, "timestamp": _to_datetime(manifest.timestamp),
                        "metadata": dict(manifest.tag and {"tag": manifest.tag} or {})})
        return out

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
        """``ds.tags.create(name, version)``, ``.update``, ``.delete``, ``.list()``, ``.list_ordered()``."""
        return Tags(self._storage, self.uri)

    def checkout_version(self, version: int | str) -> "LanceDataset":
        return LanceDataset(self.uri, version=version, _storage=self._storage)

    @staticmethod
    def commit(base_uri, operation, read_version: int | None = None, storage_options: dict | None = None,
               **kwargs) -> "LanceDataset":
        """Commit ``LanceOperation.Append(fragments)`` / ``Overwrite(schema, fragments)`` of fragments
        from ``lance_fw.fragment.write_fragments`` (pylance's distributed write) as one version."""
        from lance_fw.api.distributed import commit

        version = commit(base_uri, operation, read_version, storage_options, **kwargs)
        return LanceDataset(getattr(base_uri, "uri", None) or str(base_uri), version=version,
                            storage_options=storage_options)

    def checkout_latest(self) -> "LanceDataset":
        return LanceDataset(self.uri, _storage=self._storage)

    # -- schema -----------------------------------------------------------------------------
    @cached_property
    def lance_schema(self) -> LanceSchema:
        return LanceSchema.from_protos(self._manifest.fields, self._manifest.schema_metadata)

    @property
    def schema(self) -> pa.Schema:
        return self.lance_schema.to_arrow()

    @property
    def data_storage_version(self) -> str:
        return self._manifest.data_format.version or "0.1"

    @property
    def max_field_id(self) -> int:
        return self.lance_schema.max_field_id()

    # -- fragments --------------------------------------------------------------------------
    def get_fragments(self) -> list["LanceFragment"]:
        return [LanceFragment(self, f) for f in self._manifest.fragments]

    def get_fragment(self, fragment_id: int) -> "LanceFragment | None":
        for f in self._manifest.fragments:
            if f.id == fragment_id:
                return LanceFragment(self, f)
        return None

    # -- reading ----------------------------------------------------------------------------
    def count_rows(self, filter=None) -> int:
        if filter is not None:
            probe = (self._filter_columns(filter) or self.schema.names)[:1]
            return sum(b.num_rows for b in self.to_batches(columns=probe, filter=filter))
        return sum(live_rows(f) for f in self._manifest.fragments)

    def __len__(self) -> int:
        return self.count_rows()

    def _fields(self, columns):
        if columns is None:
            return self.lance_schema.fields
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of column names")
        return [self.lance_schema.field(c) for c in columns]

    def scanner(self, columns=None, filter=None, limit: int | None = None, offset: int | None = None,
                **kwargs) -> LanceScanner:
        """pylance's scanner: ``with_row_id``, ``with_row_address``, ``batch_size``, ``fragments``."""
        return LanceScanner(self, columns, filter, limit, offset, **kwargs)

    def to_batches(self, columns: list[str] | None = None, filter=None, batch_size: int | None = None,
                   with_row_address: bool = False, fragment_ids=None, **kwargs) -> Iterator[pa.RecordBatch]:
        with_row_id = bool(kwargs.pop("with_row_id", False))
        if kwargs.get("limit") is not None or kwargs.get("offset") or isinstance(columns, dict):
            yield from self.scanner(columns, filter, batch_size=batch_size, with_row_address=with_row_address,
                                    with_row_id=with_row_id,
                                    **kwargs).to_batches()
            return
        fields = self._fields(columns)
        plan = self._filter_plan(filter)
        size = batch_size or DEFAULT_BATCH_SIZE

        def fragment_batches(frag) -> Iterator[pa.RecordBatch]:
            return self._read_fragment(frag, fields, plan, size, with_row_address, with_row_id)
        chosen = [f for f in self._manifest.fragments if fragment_ids is None or f.id in fragment_ids]
        yield from readahead(chosen, fragment_batches, int(kwargs.get("fragment_readahead") or 0))

    def _filter_plan(self, filter) -> tuple[Matcher, list] | None:
        """How a filter is evaluated per batch, and the fields it reads (None: no filter)."""
        if filter is None:
            return None
        expression = _expression(filter, self.schema)
        filter_fields = self._fields(self._filter_columns(filter))
        if not _binds(expression, filter_fields):  # columns guessed from an expression's text fell short
            filter_fields = list(self.lance_schema.fields)
        return matcher_for(expression), filter_fields

    def _read_fragment(self, frag, fields, plan, batch_size: int, with_row_address: bool = False,
                       with_row_id: bool = False, start: int = 0, stop: int | None = None) -> Iterator[pa.RecordBatch]:
        """Live rows of physical rows [start, stop) of one fragment; with a ``_filter_plan``, late
        materialised (the filter's columns first, the rest only for matches)."""
        reader = FragmentReader(self._storage, self.uri, frag, self.lance_schema)
        span = dict(with_row_address=with_row_address, with_row_id=with_row_id, start=start, stop=stop)
        try:
            if plan is None:
                yield from reader.batches(fields, batch_size, **span)
            else:
                yield from reader.filtered_batches(fields, plan[1], plan[0], batch_size, **span)
        finally:
            reader.close()

    def to_table(self, columns: list[str] | None = None, filter=None, limit: int | None = None,
                 offset: int | None = None, **kwargs) -> pa.Table:
        table = self.scanner(columns, filter, limit, offset, **kwargs).to_table()
        return table.replace_schema_metadata(self.schema.metadata) if columns is None else table

    def head(self, num_rows: int, **kwargs) -> pa.Table:
        return self.to_table(limit=num_rows, **kwargs)

    def take(self, indices, columns: list[str] | None = None, **_ignored) -> pa.Table:
        """Rows at positions ``indices`` over the live rows (any order, repeats allowed)."""
        wanted = np.asarray(indices, dtype=np.int64).reshape(-1)
        total = self.count_rows()
        if len(wanted) and (wanted.min() < 0 or wanted.max() >= total):
            raise InvalidArgumentError(f"take: indices must lie in [0, {total}), got {wanted.min()}..{wanted.max()}")
        return self._take(wanted, columns, by_address=False)

    def _take_rows(self, row_ids, columns: list[str] | None = None, **_ignored) -> pa.Table:
        """Rows by row id: the row address (``fragment_id << 32 | offset``) without stable row ids;
        with them, ids are looked up in the fragments' sequences (ids of deleted rows give nothing)."""
        wanted = np.asarray(row_ids, dtype=np.uint64).reshape(-1)
        if self._manifest.reader_feature_flags & feature_flags.STABLE_ROW_IDS:
            wanted = self._addresses_of(wanted)
        return self._take(wanted, columns, by_address=True)

    def _addresses_of(self, row_ids: np.ndarray) -> np.ndarray:
        """Row addresses of the live rows with these stable ids, in the order asked."""
        ids, addresses = [], []
        for frag in self._manifest.fragments:
            reader = FragmentReader(self._storage, self.uri, frag, self.lance_schema)
            offsets = reader.live_offsets()
            seq = reader.row_ids
            ids.append(offsets.astype(np.uint64) if seq is None else seq[offsets])
            addresses.append(offsets.astype(np.uint64) | np.uint64(frag.id << 32))
        if not ids:
            return np.zeros(0, np.uint64)
        all_ids, all_addresses = np.concatenate(ids), np.concatenate(addresses)
        order = np.argsort(all_ids, kind="stable")
        pos = np.searchsorted(all_ids[order], row_ids).clip(0, max(len(order) - 1, 0))
        found = all_ids[order][pos] == row_ids if len(order) else np.zeros(len(row_ids), bool)
        return all_addresses[order][pos[found]]

    def _take(self, wanted: np.ndarray, columns, by_address: bool) -> pa.Table:
        fields = self._fields(columns)
        schema = pa.schema([f.to_arrow() for f in fields])
        parts, order = [], []
        base = 0
        for frag in self._manifest.fragments:
            reader = FragmentReader(self._storage, self.uri, frag, self.lance_schema)
            try:
                if by_address:
                    hit = np.flatnonzero((wanted >> np.uint64(32)) == frag.id)
                    offsets = (wanted[hit] & np.uint64(0xFFFFFFFF)).astype(np.int64)
                else:
                    live = live_rows(frag)
                    hit = np.flatnonzero((wanted >= base) & (wanted < base + live))
                    offsets = reader.physical_of_live(wanted[hit] - base)
                    base += live
                if not len(hit):
                    continue
                unique, inverse = np.unique(offsets, return_inverse=True)
                arrays = reader.take_physical(fields, unique)
                parts.append(pa.Table.from_arrays(arrays, schema=schema).take(pa.array(inverse)))
                order.append(hit)
            finally:
                reader.close()
        if not parts:
            return schema.empty_table()
        table = pa.concat_tables(parts)
        positions = np.concatenate(order)
        return table.take(pa.array(np.argsort(positions, kind="stable")))

    def _filter_columns(self, filter) -> list[str]:
        if isinstance(filter, str):
            return filter_columns(filter, self.schema) or self.schema.names[:1]
        return [n for n in self.schema.names if n in str(filter)] or self.schema.names[:1]

    def delete(self, predicate) -> dict:
        """Delete the rows matching ``predicate`` (a Lance SQL string or pyarrow expression) in a
        new version; this object then shows that version, as in pylance."""
        from lance_fw.table.delete import delete_rows, expression_matcher

        version, rows = delete_rows(self, expression_matcher(self, predicate),
                                    predicate if isinstance(predicate, str) else str(predicate))
        self._move_to(version)
        return {"num_deleted_rows": rows}

    def _move_to(self, version: int) -> None:
        """Show ``version`` (just committed through this object), as pylance's mutating calls do."""
        self.__init__(self.uri, version=version, _storage=self._storage)

    def update(self, updates: dict[str, str], where: str | None = None) -> dict:
        """Set columns to SQL expressions (``{"name": "upper(name)"}``) on the rows matching ``where``."""
        from lance_fw.table.merge_insert import update

        rows, version = update(self, updates, where)
        self._move_to(version)
        return {"num_rows_updated": rows}

    def merge_insert(self, on: str | list[str]):
        """Upsert builder: ``.when_matched_update_all().when_not_matched_insert_all().execute(data)``."""
        from lance_fw.table.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    def add_columns(self, transforms, read_columns: list[str] | None = None, batch_size: int | None = None,
                    **_ignored) -> None:
        """New columns from ``{name: SQL expression}`` (one new data file per fragment, nothing
        rewritten) or from pyarrow fields (all null, metadata only)."""
        from lance_fw.table.schema_evolution import add_columns

        self._move_to(add_columns(self, transforms, read_columns, batch_size))

    def alter_columns(self, *alterations: dict) -> None:
        """Rename (``name``), change ``nullable`` (metadata only) or cast (``data_type``) columns."""
        from lance_fw.table.schema_evolution import alter_columns

        self._move_to(alter_columns(self, *alterations))

    def drop_columns(self, columns: list[str]) -> None:
        """Remove columns from the schema (metadata only; cleanup reclaims nothing until rewrite)."""
        from lance_fw.table.schema_evolution import drop_columns

        self._move_to(drop_columns(self, columns))

    @property
    def optimize(self) -> "DatasetOptimizer":
        """``ds.optimize.compact_files(target_rows_per_fragment=..., materialize_deletions=...)``."""
        return DatasetOptimizer(self)

    def cleanup_old_versions(self, older_than=None, retain_versions: int | None = None, *,
                             delete_unverified: bool = False, error_if_tagged_old_versions: bool = True,
                             delete_rate_limit: int | None = None, versions: list[int] | None = None,
                             delete_concurrency: int | None = None):
        """pylance's signature and semantics: the given limits combine with AND (none: two weeks);
        this object's version and later ones are never removed. See ``lance_fw.table.cleanup``."""
        from lance_fw.table.cleanup import cleanup_old_versions

        return cleanup_old_versions(self._storage, self.uri, older_than, retain_versions,
                                    delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions,
                                    delete_rate_limit=delete_rate_limit, versions=versions,
                                    delete_concurrency=delete_concurrency, read_version=self.version)


def _binds(expression: pc.Expression, fields) -> bool:
    """Whether ``expression`` can be evaluated on a batch of ``fields`` (plus _rowid, _rowaddr)."""
    schema = with_row_columns(pa.schema([f.to_arrow() for f in fields]), True, True)
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return False
    return True


def _expression(filter, schema: pa.Schema) -> pc.Expression:
    """A Lance SQL filter string or a pyarrow expression, as a pyarrow expression."""
    if isinstance(filter, pc.Expression):
        return filter
    if isinstance(filter, str):
        return parse_filter(filter, schema)
    raise InvalidArgumentError(f"filter must be a SQL string or a pyarrow.compute.Expression, not "
                               f"{type(filter).__name__}")


class DatasetOptimizer:
    """pylance's ``ds.optimize`` namespace."""

    def __init__(self, ds: LanceDataset):
        self._ds = ds

    def compact_files(self, target_rows_per_fragment: int = 1024 * 1024, materialize_deletions: bool = True,
                      materialize_deletions_threshold: float = 0.1, **kwargs):
        """Merge small fragments and drop deleted rows in one new version; returns the metrics."""
        from lance_fw.table.compaction import compact_files

        metrics, version = compact_files(self._ds, target_rows_per_fragment, materialize_deletions,
                                         materialize_deletions_threshold, **kwargs)
        self._ds._move_to(version)
        return metrics


class LanceFragment:
    """One fragment of a dataset version (pylance's ``LanceFragment`` names)."""

    def __init__(self, ds: LanceDataset, metadata):
        self._ds, self.metadata = ds, metadata

    @property
    def fragment_id(self) -> int:
        return self.metadata.id

    @property
    def physical_rows(self) -> int:
        return self.metadata.physical_rows

    @property
    def num_deletions(self) -> int:
        return deleted_rows(self.metadata)

    def count_rows(self, filter=None) -> int:
        if filter is not None:
            probe = (self._ds._filter_columns(filter) or self._ds.schema.names)[:1]
            return sum(b.num_rows for b in self.to_batches(columns=probe, filter=filter))
        return self.physical_rows - self.num_deletions

    def data_files(self) -> list:
        return list(self.metadata.files)

    def deletion_file(self):
        return self.metadata.deletion_file if self.metadata.HasField("deletion_file") else None

    def to_batches(self, columns=None, filter=None, batch_size: int | None = None, **kwargs):
        yield from self._ds.to_batches(columns, filter, batch_size, kwargs.get("with_row_address", False),
                                       with_row_id=kwargs.get("with_row_id", False),
                                       fragment_ids={self.fragment_id})

    def to_table(self, columns=None, filter=None, **kwargs) -> pa.Table:
        schema = with_row_columns(pa.schema([f.to_arrow() for f in self._ds._fields(columns)]),
                                  kwargs.get("with_row_id", False), kwargs.get("with_row_address", False))
        return pa.Table.from_batches(list(self.to_batches(columns, filter, **kwargs)), schema=schema)

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"


__all__ = ["LanceDataset", "LanceFragment", "dataset", "parse_version"]
