"""Scalar indices of a table: build, drop, optimize and open them through the index-type plugins.

Why the kernel owns this and not the plugins: which rows an index covers (the live rows of the
fragments in its ``fragment_bitmap``), the ``_indices/<uuid>/`` directory, the manifest's
``IndexMetadata`` and the ``CreateIndex`` transaction are the same for every index type and decide
whether results stay exact after appends, deletes and updates. A plugin (``ScalarIndexType``) only
turns (value, row address) pairs into files and answers queries from them; everything it returns is
checked here before a scan trusts it.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyroaring

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw._util.lru import LruCache
from lance_fw.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    CorruptFileError,
    IndexContractError,
    IndexNotFoundError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from lance_fw.interfaces import (
    IndexSearchResult,
    ScalarIndexType,
    ScalarQuery,
    VectorIndexType,
)
from lance_fw.plugin_manager import owner
from lance_fw.schema import LanceField
from lance_fw.table import flags as feature_flags
from lance_fw.table.deletion import live_rows
from lance_fw.table.index_files import IndexFiles, index_dir
from lance_fw.table.index_paths import (
    child_values,
    default_index_name,
    nested_field,
    pruned_parent,
    quoted_path,
    struct_paths,
)
from lance_fw.table.index_types import index_type_named, index_types
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.stable_rows import StableRows
from lance_fw.table.transaction import Indices, Operation

#: ``IndexMetadata`` default name: pylance's ``<column>_idx``.
DEFAULT_NAME_SUFFIX = "_idx"
#: Rows per training batch handed to a plugin.
TRAIN_BATCH_ROWS = 1 << 16
#: The full-text index type's name (``usable_indices`` leaves nested ones to the scan).
INVERTED_NAME = "INVERTED"
#: Opened indices kept per process (index files never change: a uuid names one build).
OPEN_CACHE_SIZE = 32
_MS_PER_S = 1000
_HOOK = "lance_index_types"


# --- the plugins: lance_fw.table.index_types ---------------------------------------------------


def type_url_of(meta: table_pb2.IndexMetadata) -> str:
    return meta.index_details.type_url if meta.HasField("index_details") else ""


# --- what a version has -------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexHandle:
    """One index segment of a version that a plugin can open: its metadata, type and column."""

    meta: table_pb2.IndexMetadata
    kind: ScalarIndexType
    field: LanceField
    #: fragment ids the index answers for (its bitmap, limited to the version's fragments)
    fragments: frozenset[int]
    #: names from the top-level column down to ``field`` (``("p", "a")`` for ``p.a``); empty
    #: for a top-level column
    path: tuple[str, ...] = ()

    @property
    def column(self) -> tuple[str, ...]:
        """The indexed column's path from the top level (``("id",)``, ``("p", "a")``)."""
        return self.path or (self.field.name,)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def uuid(self) -> str:
        return str(uuidlib.UUID(bytes=self.meta.uuid.uuid))


def fragment_bitmap(meta: table_pb2.IndexMetadata, where: str) -> pyroaring.BitMap:
    try:
        return (
            pyroaring.BitMap.deserialize(meta.fragment_bitmap) if meta.fragment_bitmap else pyroaring.BitMap()
        )
    except Exception as exc:
        raise CorruptFileError(where, f"index {meta.name!r}: fragment bitmap does not parse: {exc}") from exc


def usable_indices(snapshot: Snapshot, nested_full_text: bool = False) -> list[IndexHandle]:
    """The version's indices a scan may consult: a known scalar type on one column, top-level or
    a struct's child (pylance indexes ``p.a`` as the column ``get_field(p, 'a')``).

    Others (vector, a type no plugin provides, a nested full-text index, fields under lists) are
    skipped: the scan then reads the data, which is always exact. On a dataset with stable row ids
    an index holds row ids, not addresses: ``search`` maps them.
    ``nested_full_text``: keep a nested full-text index too (statistics read it; full-text search
    looks its indices up by top-level name and would take it for a top-level column's).
    """
    section = snapshot.index_section
    if section is None or not len(section.indices):
        return []
    by_url = {k.type_url: k for k in index_types().values()}
    paths = struct_paths(snapshot.lance_schema.fields)
    live = {f.id for f in snapshot.fragments}
    out = []
    for meta in section.indices:
        kind = by_url.get(type_url_of(meta))
        if kind is None or len(meta.fields) != 1 or meta.fields[0] not in paths:
            continue
        path = paths[meta.fields[0]]
        # full-text search looks its indices up by top-level name: a nested one would be taken
        # for a top-level column of the same name
        if len(path) > 1 and kind.name.upper() == INVERTED_NAME and not nested_full_text:
            continue
        names = tuple(f.name for f in path) if len(path) > 1 else ()
        covered = frozenset(int(i) for i in fragment_bitmap(meta, snapshot.uri)) & live
        out.append(IndexHandle(meta, kind, path[-1], frozenset(covered), names))
    return out


def holds_row_ids(snapshot: Snapshot, kind: Any, index_version: int) -> bool:
    """Whether an index of ``kind`` written as ``index_version`` holds row ids rather than row
    addresses: only on a dataset with stable row ids, as the type's ``holds_row_ids`` says (a type
    without it holds addresses)."""
    ask = getattr(kind, "holds_row_ids", None)
    if not feature_flags.has_stable_row_ids(snapshot.manifest) or ask is None:
        return False
    answer = ask(index_version)
    if not isinstance(answer, bool):
        raise IndexContractError(
            f"{owner(_HOOK, kind.name)}: holds_row_ids must return a bool, got {answer!r}"
        )
    return answer


def written_index_version(snapshot: Snapshot, kind: Any) -> int:
    """The ``index_version`` a new index of ``kind`` is written with (``stable_index_version`` on a
    dataset with stable row ids, where the type has one)."""
    version = (
        getattr(kind, "stable_index_version", kind.index_version)
        if feature_flags.has_stable_row_ids(snapshot.manifest)
        else kind.index_version
    )
    if not isinstance(version, int) or isinstance(version, bool):
        raise IndexContractError(f"{owner(_HOOK, kind.name)}: index_version must be an int, got {version!r}")
    return version


#: Opened indices by (dataset uri, index uuid): index files are immutable.
_OPEN: LruCache[tuple[str, str], Any] = LruCache(OPEN_CACHE_SIZE)


def open_index(snapshot: Snapshot, handle: Any) -> Any:
    """The opened index of ``handle`` (its ``uuid``, ``kind`` and ``field``; scalar or vector),
    cached per dataset and uuid: index files are immutable."""

    def load() -> Any:
        store = IndexFiles(snapshot.storage, index_dir(snapshot.uri, handle.uuid))
        return handle.kind.load(store, handle.field.to_arrow())

    return _OPEN.get_or_load((snapshot.uri, handle.uuid), load)


def search(snapshot: Snapshot, handle: IndexHandle, query: ScalarQuery) -> IndexSearchResult:
    """``query`` answered by the index, checked: sorted unique ``uint64`` addresses of covered fragments
    (on a dataset with stable row ids, of the live rows of covered fragments with the ids found)."""
    result = open_index(snapshot, handle).search(query)
    who = owner(_HOOK, handle.kind.name) or "an index plugin"
    if not isinstance(result, IndexSearchResult) or not isinstance(result.exact, bool):
        raise IndexContractError(f"{who}: search on index {handle.name!r} returned {type(result).__name__}")
    addresses = result.addresses
    if not isinstance(addresses, np.ndarray) or addresses.dtype != np.uint64 or addresses.ndim != 1:
        raise IndexContractError(
            f"{who}: search on index {handle.name!r} must return a 1-d uint64 array of row addresses"
        )
    if len(addresses) > 1 and not bool((addresses[1:] > addresses[:-1]).all()):
        raise IndexContractError(f"{who}: search on index {handle.name!r} returned unsorted or repeated rows")
    if holds_row_ids(snapshot, handle.kind, handle.meta.index_version):  # ids: map to live rows
        found = StableRows.of(snapshot, handle.fragments).found(addresses)
        return IndexSearchResult(np.sort(found), result.exact)
    return result


# --- building -----------------------------------------------------------------------------------


@dataclass
class CreateIndex(Operation):
    """pylance's ``CreateIndex`` transaction: add ``new`` index segments, remove ``removed`` ones
    (by uuid). A concurrent commit that removed one of ``removed`` (or added an index of the same
    name) is a conflict; concurrent appends rebase (their fragments are simply not covered)."""

    new: list[table_pb2.IndexMetadata] = field(default_factory=list)
    removed: list[table_pb2.IndexMetadata] = field(default_factory=list)
    #: index names present when the build was planned (a concurrent new index of one of the new
    #: names conflicts instead of giving two indices one name)
    planned_names: frozenset[str] = frozenset()

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        if base is None:
            raise CommitConflictError("the dataset was removed while an index was being built")
        self._added = []

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        current = list(indices.indices) if indices is not None else []
        present = {m.uuid.uuid for m in current}
        for meta in self.removed:
            if meta.uuid.uuid not in present:
                raise CommitConflictError(
                    f"index {meta.name!r} was changed by a concurrent commit; re-run the index operation"
                )
        gone = {m.uuid.uuid for m in self.removed}
        kept = [m for m in current if m.uuid.uuid not in gone]
        clash = {m.name for m in kept} & {m.name for m in self.new}
        if clash - self.planned_names or (clash and not self.removed):
            raise CommitConflictError(
                f"an index named {sorted(clash)[0]!r} was created by a concurrent commit"
            )
        out = table_pb2.IndexSection()
        out.indices.extend(kept + list(self.new))
        return out

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.create_index.new_indices.extend(self.new)
        txn.create_index.removed_indices.extend(self.removed)


def training_batches(
    snapshot: Snapshot, field: LanceField, fragments: list, row_ids: bool = False
) -> Iterator[pa.RecordBatch]:
    """``value`` and ``_rowaddr`` of every live row of ``fragments``, in row-address order
    (``row_ids``: ``_rowid`` instead, what a vector index stores on a dataset with stable ids).

    A struct's child is read through its top-level column; a row whose parent (or any struct
    above) is null has a null value, as pylance indexes it (``p.a IS NULL`` finds those rows)."""
    name = "_rowid" if row_ids else "_rowaddr"
    schema = pa.schema([pa.field("value", field.arrow_type()), pa.field(name, pa.uint64(), False)])
    path = struct_paths(snapshot.lance_schema.fields).get(field.id, [field])
    read = [pruned_parent(path)]
    for frag in fragments:
        for batch in snapshot.read_fragment(frag, read, None, TRAIN_BATCH_ROWS, not row_ids, row_ids):
            values = child_values(batch.column(0), path)
            yield pa.RecordBatch.from_arrays([values, batch.column(name)], schema=schema)


def _check_column(snapshot: Snapshot, column: Any, nested: bool = False) -> LanceField:
    """The field ``column`` names: a top-level name (any case) or, with ``nested``, a path to a
    struct's child (``p.a``, ```p`.`x.y```)."""
    if isinstance(column, (list, tuple)):
        if len(column) != 1:
            raise UnsupportedFeatureError("lance_fw builds scalar indices on one column only")
        column = column[0]
    if not isinstance(column, str):
        raise InvalidArgumentError(f"column must be a column name, got {column!r}")
    if nested and column not in snapshot.schema.names and ("." in column or "`" in column):
        return nested_field(snapshot, column)
    if column not in snapshot.schema.names:
        found = [f.name for f in snapshot.lance_schema.fields if f.name.lower() == column.lower()]
        if not found:
            raise ColumnNotFoundError(f"column {column!r} is not in the dataset's schema")
        column = found[0]
    return snapshot.lance_schema.field(column)


def _metadata(
    snapshot: Snapshot,
    kind: ScalarIndexType | VectorIndexType,
    params: Mapping[str, Any],
    name: str,
    field_id: int,
    uuid: uuidlib.UUID,
    fragments: pyroaring.BitMap,
    dataset_version: int,
    files: list[tuple[str, int]],
    index_version: int,
) -> table_pb2.IndexMetadata:
    meta = table_pb2.IndexMetadata(name=name, dataset_version=dataset_version)
    meta.uuid.uuid = uuid.bytes
    meta.fields.append(field_id)
    meta.fragment_bitmap = fragments.serialize()
    meta.index_details.type_url = kind.type_url
    details = kind.details(params)
    if not isinstance(details, bytes):
        raise IndexContractError(f"{owner(_HOOK, kind.name)}: details() must return bytes")
    meta.index_details.value = details
    meta.index_version = index_version
    meta.created_at = int(time.time() * _MS_PER_S)
    for path, size in files:
        meta.files.add(path=path, size_bytes=size)
    return meta


def build_index(
    snapshot: Snapshot,
    kind: ScalarIndexType | VectorIndexType,
    field: LanceField,
    name: str,
    params: Mapping[str, Any],
    dataset_version: int | None = None,
    run_optimized: bool = False,
    trained: bool = True,
) -> tuple[table_pb2.IndexMetadata, IndexFiles]:
    """Train ``kind`` over every live row of the version's fragments into a new ``_indices/<uuid>/``.
    Returns the metadata to commit and the store (whose files the caller removes if the commit fails).
    On a dataset with stable row ids the index holds the rows' ids or addresses as its type says
    (``holds_row_ids``), and records the ``index_version`` that tells them apart.
    ``trained`` False: over no fragment at all (pylance's ``train=False``: the index type writes
    its files for zero rows, and the index covers no fragment)."""
    uuid = uuidlib.uuid4()
    store = IndexFiles(snapshot.storage, index_dir(snapshot.uri, str(uuid)))
    fragments = list(snapshot.fragments) if trained else []
    index_version = written_index_version(snapshot, kind)
    try:
        row_ids = holds_row_ids(snapshot, kind, index_version)
        kind.train(training_batches(snapshot, field, fragments, row_ids), field.to_arrow(), params, store)
    except BaseException:
        remove_index_files(store)
        raise
    if not store.written:
        raise IndexContractError(f"{owner(_HOOK, kind.name)}: train() wrote no index file")
    bitmap = pyroaring.BitMap(f.id for f in fragments)
    if run_optimized:
        bitmap.run_optimize()
    meta = _metadata(
        snapshot,
        kind,
        params,
        name,
        field.id,
        uuid,
        bitmap,
        snapshot.version if dataset_version is None else dataset_version,
        store.written,
        index_version,
    )
    return meta, store


def remove_index_files(store: IndexFiles) -> None:
    store.close()
    for name, _ in store.written:
        try:
            store.storage.delete(store._path(name))
        except Exception:  # best effort: an unreferenced file is harmless, cleanup removes it later
            pass


def check_new_index(
    snapshot: Snapshot,
    kind: ScalarIndexType | VectorIndexType,
    field: LanceField,
    name: str | None,
    replace: bool,
    params: Mapping[str, Any],
) -> tuple[str, list[table_pb2.IndexMetadata]]:
    """The checks every ``create_*index`` makes before building, scalar or vector: the name (the
    column's ``<name>_idx`` by default), the index type's own parameter check, an existing index of
    that name (refused unless ``replace``) and rows to index. Returns the name and the segments
    of an index it replaces.

    Raises:
        InvalidArgumentError: a bad name, a taken one without ``replace``, or an empty dataset.
    """
    if name is None:
        path = struct_paths(snapshot.lance_schema.fields).get(field.id, [field])
        name = quoted_path([f.name for f in path]) + DEFAULT_NAME_SUFFIX
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name must be a non-empty string, got {name!r}")
    kind.check(field.to_arrow(), params)
    existing = [
        m for m in (snapshot.index_section.indices if snapshot.index_section else []) if m.name == name
    ]
    if existing and not replace:
        raise InvalidArgumentError(f"Index name '{name}' already exists")
    if not len(snapshot.fragments):
        raise InvalidArgumentError(f"{snapshot.uri}: cannot create an index on a dataset with no rows")
    return name, existing


@dataclass(frozen=True)
class IndexRequest:
    """What pylance's ``create_scalar_index`` / ``create_index`` ask for, checked by the façade:
    the column, the index type's name (any case), the index name (None: ``<column>_idx``), whether
    an index of that name is replaced, the index type's parameters, and whether it is trained."""

    column: Any
    index_type: str
    name: str | None
    replace: bool
    params: Mapping[str, Any]
    #: False: pylance's ``train=False``, an index of no rows (its fragment bitmap empty) that
    #: queries pass over and ``optimize_indices`` fills
    train: bool = True


def commit_new_index(
    snapshot: Snapshot,
    meta: table_pb2.IndexMetadata,
    existing: list[table_pb2.IndexMetadata],
    store: IndexFiles,
) -> int:
    """Commit a built index segment (``existing``: the segments it replaces); on a failed commit
    its files are removed. Returns the new version."""
    planned = (
        frozenset(m.name for m in snapshot.index_section.indices) if snapshot.index_section else frozenset()
    )
    operation = CreateIndex(new=[meta], removed=existing, planned_names=planned)
    return snapshot.commit(operation, lambda: remove_index_files(store))


def create_scalar_index(snapshot: Snapshot, request: IndexRequest) -> int:
    """pylance's ``create_scalar_index``: build and commit; returns the new version."""
    kind = index_type_named(request.index_type)
    field = _check_column(snapshot, request.column, nested=True)
    requested = request.name
    if requested is None:
        indices = list(snapshot.index_section.indices) if snapshot.index_section else []
        requested = default_index_name(snapshot, field, kind.type_url, DEFAULT_NAME_SUFFIX, indices)
    name, existing = check_new_index(snapshot, kind, field, requested, request.replace, request.params)
    if any(list(m.fields) != [field.id] for m in existing):
        raise InvalidArgumentError(f"Index name '{name}' already exists on another column")
    meta, store = build_index(snapshot, kind, field, name, request.params, trained=request.train)
    return commit_new_index(snapshot, meta, existing, store)


def drop_index(snapshot: Snapshot, name: str) -> int:
    """pylance's ``drop_index``: a ``CreateIndex`` removing every segment named ``name``."""
    existing = [
        m for m in (snapshot.index_section.indices if snapshot.index_section else []) if m.name == name
    ]
    if not existing:
        raise IndexNotFoundError(f"Index not found: {name!r}")
    return snapshot.commit(CreateIndex(removed=existing), lambda: None)


def rebuild_params(kind: Any, meta: table_pb2.IndexMetadata) -> dict[str, Any]:
    """The parameters an index was built with, as far as its details record them (an index type
    may offer ``params_from_details(bytes)``; a full-text index's tokenizer lives there), so a
    rebuild does not silently fall back to the defaults."""
    read = getattr(kind, "params_from_details", None)
    if read is None:
        return {}
    params = read(meta.index_details.value)
    if not isinstance(params, dict):
        raise IndexContractError(f"{owner(_HOOK, kind.name)}: params_from_details must return a dict")
    return params


def optimize_indices(
    snapshot: Snapshot, index_names: list[str] | None = None, retrain: bool = False
) -> int | None:
    """pylance's ``optimize_indices``: each index that misses some fragment is rebuilt over every
    fragment as one new segment (pylance merges old and new rows; the rows indexed, and so every
    answer, are the same); a vector index keeps its model (``vector_indices.VectorRebuild``). Returns the new
    version, or None (nothing to do).

    ``retrain``: a scalar index is rebuilt from its column whichever way, so it changes nothing
    there (pylance too leaves an index that covers every fragment as it is); a vector index would
    get a new model, which lance_fw does not train here, so it is refused.

    Raises:
        UnsupportedFeatureError: ``retrain`` with a vector index to rebuild, or an index lance_fw
            cannot rebuild."""
    from lance_fw.table import vector_indices  # it builds through this module

    by_url: dict[str, Any] = {k.type_url: k for k in index_types().values()}
    groups: dict[str, list[table_pb2.IndexMetadata]] = {}
    for meta in snapshot.index_section.indices if snapshot.index_section else []:
        if index_names is None or meta.name in index_names:
            groups.setdefault(meta.name, []).append(meta)
    live = {f.id for f in snapshot.fragments}
    new, removed, stores = [], [], []
    try:
        for name, metas in sorted(groups.items()):
            kind: Any = by_url.get(type_url_of(metas[0])) or vector_indices.vector_rebuild(snapshot, metas[0])
            if kind is None:
                raise UnsupportedFeatureError(
                    f"index {name!r} ({type_url_of(metas[0]) or 'no details'}): lance_fw cannot optimize it"
                )
            if retrain and isinstance(kind, vector_indices.VectorRebuild):
                raise UnsupportedFeatureError(
                    f"optimize_indices: retrain=True for vector index {name!r} (a new IVF model) is "
                    "not supported by lance_fw; optimize without retrain keeps its model"
                )
            covered = set().union(*(set(fragment_bitmap(m, snapshot.uri)) for m in metas))
            if live <= covered and len(metas) == 1:
                continue
            path = struct_paths(snapshot.lance_schema.fields).get(metas[0].fields[0])
            if path is None:
                raise UnsupportedFeatureError(
                    f"index {name!r}: its column is neither a top-level column nor a struct's child"
                )
            field = path[-1]
            meta, store = build_index(
                snapshot,
                kind,
                field,
                name,
                rebuild_params(kind, metas[0]),
                dataset_version=metas[0].dataset_version,
                run_optimized=True,
            )
            new.append(meta)
            removed.extend(metas)
            stores.append(store)
    except BaseException:
        for store in stores:
            remove_index_files(store)
        raise
    if not new:
        return None

    def undo() -> None:
        for store in stores:
            remove_index_files(store)

    return snapshot.commit(CreateIndex(new=new, removed=removed, planned_names=frozenset(groups)), undo)


def index_statistics(snapshot: Snapshot, name: str) -> dict[str, Any]:
    """pylance's ``stats.index_stats(name)`` for a scalar or vector index."""
    metas = [m for m in (snapshot.index_section.indices if snapshot.index_section else []) if m.name == name]
    if not metas:
        raise IndexNotFoundError(f"Index not found: {name!r}")
    from lance_fw.table import vector_indices  # it builds through this module

    vector = vector_indices.vector_rebuild(snapshot, metas[0])
    if vector is not None:
        display = vector.kind.display_name
        per_segment = [vector_indices.vector_statistics(snapshot, vector.kind, m) for m in metas]
    else:
        handles = [h for h in usable_indices(snapshot, nested_full_text=True) if h.name == name]
        if len(handles) != len(metas):
            raise UnsupportedFeatureError(f"index {name!r}: lance_fw cannot open this index type")
        display = handles[0].kind.display_name
        per_segment = [open_index(snapshot, h).statistics() for h in handles]
    covered: set[int] = set()
    for meta in metas:
        covered |= set(fragment_bitmap(meta, snapshot.uri))
    indexed = [f for f in snapshot.fragments if f.id in covered]
    unindexed = [f for f in snapshot.fragments if f.id not in covered]
    return {
        "index_type": display,
        "name": name,
        "num_indices": len(metas),
        "num_segments": len(metas),
        "indices": per_segment,
        "segments": per_segment,
        "num_indexed_fragments": len(indexed),
        "num_indexed_rows": sum(live_rows(f) for f in indexed),
        "num_unindexed_fragments": len(unindexed),
        "num_unindexed_rows": sum(live_rows(f) for f in unindexed),
        "num_indexed_rows_per_delta": [
            sum(live_rows(f) for f in snapshot.fragments if f.id in set(fragment_bitmap(m, snapshot.uri)))
            for m in metas
        ],
        "updated_at_timestamp_ms": max(m.created_at for m in metas),
    }
