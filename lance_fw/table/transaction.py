"""Operations and the commit loop.

A write first stores its data files, then builds the next manifest from the latest one and asks
the commit handler to create it only if absent. If another writer won the race, the operation is
rebased on the new latest version (appends and overwrites always rebase; creating a dataset that
now exists fails) and retried, so no concurrent append is ever lost or overwritten.
"""

from __future__ import annotations

import itertools
import random
import time
import uuid as uuidlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import ClassVar

from lance_fw._proto import file_pb2, table_pb2, transaction_pb2
from lance_fw._version import __version__
from lance_fw.errors import CommitConflictError, CommitStuckError, DatasetExistsError
from lance_fw.file.legacy_v0_1_manifest import dictionary_prefix
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table import flags as feature_flags
from lance_fw.table.commit import CommitHandler, CommitLockHandler, handler_label, resolve_commit_handler
from lance_fw.table.deletion import deletion_file_id
from lance_fw.table.index_section import indices_on_live_fields, without_fragments
from lance_fw.table.manifest import (
    encode_manifest,
    find_version,
    latest_version,
    list_versions,
    manifest_name,
    read_manifest,
    write_hint,
)
from lance_fw.table.new_fragments import (
    assign_ids,
    assign_row_ids,
    check_new_fragments,
    drop_files_without_fields,
    next_fragment_id,
    tidy_fragments,
)
from lance_fw.table.paths import TRANSACTION_SUFFIX, TRANSACTIONS_DIR, VERSIONS_DIR

MAX_RETRIES = 100
#: ``file_pb2.Field.parent_id`` of a top-level column.
TOP_LEVEL_PARENT = -1

#: How long the commit handler may keep refusing one version while no manifest of it appears before
#: the commit stops retrying and reports the version as stuck (``CommitStuckError``). A live writer
#: between claiming a version and writing its manifest takes well under this.
STUCK_AFTER_SECONDS = 30.0


#: Attribute set on an exception that ``commit`` let through once its manifest was (or may have
#: been) published: the files that version references must then never be cleaned up.
PUBLISHED_ATTR = "lance_fw_version_may_be_published"
#: A version's index section (None: no index).
Indices = table_pb2.IndexSection | None


@dataclass
class Operation:
    """What a commit does to the manifest; subclasses fill ``apply`` and the transaction message."""

    fragments: list = field(default_factory=list)  # new DataFragment messages (ids assigned at commit)
    properties: dict = field(default_factory=dict)
    #: plugins (name -> distribution) whose non-pylance-readable encodings the new files use
    plugin_encodings: dict = field(default_factory=dict)
    #: the new fragments as published (ids assigned), set by ``apply``; not an argument
    _added: list[table_pb2.DataFragment] = field(default_factory=list, init=False, repr=False, compare=False)
    #: whether the commit orders the new manifest's fragments and drops tombstone-only files
    #: (``tidy_fragments``), as pylance does for every operation but a restore
    tidies_fragments: ClassVar[bool] = True

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        raise NotImplementedError

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        raise NotImplementedError

    def stable_after(self, base: table_pb2.Manifest | None) -> bool:
        """Whether the version this makes has stable row ids: what ``base`` has (``Overwrite``
        decides otherwise when it creates the dataset)."""
        return feature_flags.has_stable_row_ids(base)

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        """The index section of the new version, from the base's (kept as is by default: an
        index answers for the fragments in its ``fragment_bitmap``; newer rows are scanned)."""
        return indices


def check_unchanged(
    base: table_pb2.Manifest | None,
    expected: dict[int, object],
    what: str,
    state: Callable[[table_pb2.DataFragment], object] = deletion_file_id,
) -> None:
    """Each fragment id in ``expected`` must still exist in the ``state`` (by default: the deletion
    file id) it was planned against; otherwise a concurrent commit changed rows this operation
    rewrites or deletes."""
    current = {f.id: state(f) for f in base.fragments} if base is not None else {}
    for frag_id, planned in expected.items():
        if current.get(frag_id) != planned:
            raise CommitConflictError(
                f"fragment {frag_id} was changed by a concurrent commit; re-run the {what}"
            )


def files_and_deletions(frag: table_pb2.DataFragment) -> tuple:
    """What a rewrite of a fragment depends on: its deletions and every data file (a concurrent
    ``add_columns`` adds a file whose column the rewritten rows would otherwise lose)."""
    return deletion_file_id(frag), tuple(f.path for f in frag.files)


def check_written_schema(base: table_pb2.Manifest | None, schema_fields: list | None, what: str) -> None:
    """New fragments written with ``schema_fields`` fit only a base with that same schema: after a
    concurrent overwrite or ``add_columns`` they would lack columns or name the wrong field ids."""
    if schema_fields and base is not None and _shape(base.fields) != _shape(schema_fields):
        raise CommitConflictError(
            f"the dataset's schema changed since this {what} was planned "
            "(a concurrent overwrite or schema change); re-run it"
        )


def _shape(fields: Iterable[file_pb2.Field]) -> list[tuple]:
    return [(f.id, f.parent_id, f.name, f.logical_type) for f in fields]


@dataclass
class Append(Operation):
    """Add fragments. ``schema_fields`` (when given) is the schema the files were written with; a
    concurrent overwrite that changed it makes the append a conflict instead of a corrupt version."""

    schema_fields: list = field(default_factory=list)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_written_schema(base, self.schema_fields, "append")
        self._added = assign_ids(new, self.fragments, next_fragment_id(base))
        if feature_flags.has_stable_row_ids(base):
            assign_row_ids(new, self._added)

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.append.fragments.extend(fragments)


@dataclass
class Overwrite(Operation):
    """Create or overwrite: the new version holds only ``fragments`` and the given schema."""

    schema_fields: list = field(default_factory=list)
    schema_metadata: dict = field(default_factory=dict)
    data_format_version: str = "2.0"
    create_only: bool = False
    #: pylance's ``enable_stable_row_ids``: honoured when the write creates the dataset; an
    #: overwrite keeps what the dataset has (with stable row ids the new rows' ids continue)
    stable_row_ids: bool = False

    def stable_after(self, base: table_pb2.Manifest | None) -> bool:
        """Whether the version this makes has stable row ids (as pylance 14 decides it)."""
        return self.stable_row_ids if base is None else feature_flags.has_stable_row_ids(base)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        if self.create_only and base is not None:
            raise DatasetExistsError(
                "Dataset already exists (mode='create'); use mode='append' or 'overwrite'"
            )
        stable = self.stable_after(base)
        new.ClearField("fragments")
        new.ClearField("index_section")
        if not stable:
            new.ClearField("next_row_id")
        _set_schema(new, self.schema_fields, self.schema_metadata)
        new.data_format.file_format = "lance"
        new.data_format.version = self.data_format_version
        self._added = assign_ids(new, self.fragments, next_fragment_id(base), keep_given=False)
        if stable:
            assign_row_ids(new, self._added)

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        return None  # pylance 14 drops every index of an overwritten dataset

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.overwrite.fragments.extend(fragments)
        txn.overwrite.schema.extend(self.schema_fields)
        for k, v in self.schema_metadata.items():
            txn.overwrite.schema_metadata[k] = v


@dataclass
class Delete(Operation):
    """Replace fragments' deletion files (``updated``) and drop fully deleted ones (``removed``).

    ``expected`` maps fragment id -> the deletion file id (0: none) the delete was planned
    against; a concurrent change to one of those fragments cannot be rebased.
    """

    updated: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    expected: dict = field(default_factory=dict)
    predicate: str = ""

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_unchanged(base, self.expected, "delete")
        replaced = {f.id: f for f in self.updated}
        removed = set(self.removed)
        kept = []
        for frag in new.fragments:
            if frag.id in removed:
                continue
            copy = table_pb2.DataFragment()
            copy.CopyFrom(frag)  # the base's fragment: files a concurrent add_columns gave it stay
            if frag.id in replaced and replaced[frag.id].HasField("deletion_file"):
                copy.deletion_file.CopyFrom(replaced[frag.id].deletion_file)
            kept.append(copy)
        new.ClearField("fragments")
        new.fragments.extend(kept)
        self._added = []

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.delete.updated_fragments.extend(self.updated)
        txn.delete.deleted_fragment_ids.extend(self.removed)
        txn.delete.predicate = self.predicate


def column_field_ids(schema_fields: list[file_pb2.Field], names: Iterable[str] | None = None) -> list[int]:
    """The field ids of the top-level columns ``names`` (None: all), each followed by those of its
    nested fields, in schema order: what pylance records as an ``Update``'s
    ``fields_for_preserving_frag_bitmap`` (``update``: the columns it sets; ``merge_insert``
    rewriting rows: every column)."""
    tops = [f for f in schema_fields if f.parent_id == TOP_LEVEL_PARENT]
    out: list[int] = []
    for top in tops if names is None else [t for name in names for t in tops if t.name == name]:
        ids = {top.id}
        for f in schema_fields:  # pre-order: a nested field follows its parent
            if f.parent_id in ids:
                ids.add(f.id)
        out.extend(f.id for f in schema_fields if f.id in ids)
    return out


@dataclass
class Update(Delete):
    """Rows rewritten or inserted: deletion files for the old rows (as ``Delete``) plus ``fragments``
    holding the new rows, in one version (pylance's ``Update`` with ``rewrite_rows``).
    ``schema_fields``: the schema ``fragments`` were written with (checked as for ``Append``).
    ``preserved_fields``: pylance's ``fields_for_preserving_frag_bitmap`` (``column_field_ids``)."""

    schema_fields: list = field(default_factory=list)
    preserved_fields: list[int] = field(default_factory=list)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_written_schema(base, self.schema_fields if self.fragments else None, "update")
        super().apply(base, new)
        self._added = assign_ids(new, self.fragments, next_fragment_id(base))

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.update.removed_fragment_ids.extend(self.removed)
        txn.update.updated_fragments.extend(self.updated)
        txn.update.new_fragments.extend(fragments)
        txn.update.fields_for_preserving_frag_bitmap.extend(self.preserved_fields)


@dataclass
class Rewrite(Operation):
    """Compaction: each group of old fragments is replaced by new fragments holding the same live
    rows. As in pylance 14, the new fragments follow every kept fragment (concurrent appends
    included), group after group, and the commit then orders all by id (``tidy_fragments``: ids
    reserved before a concurrent append come before its fragments). A concurrent change to an
    old fragment (deleted, or new deletions) is a conflict; concurrent appends rebase."""

    groups: list = field(default_factory=list)  # [(old DataFragments, new DataFragments)]
    #: ids reserved for the new fragments by an earlier ``ReserveFragments`` commit (pylance's way),
    #: in order; None: the next free ids at commit
    fragment_ids: list[int] | None = None

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_unchanged(
            base,
            {f.id: files_and_deletions(f) for old, _ in self.groups for f in old},
            "compaction",
            files_and_deletions,
        )
        ids = (
            iter(self.fragment_ids)
            if self.fragment_ids is not None
            else itertools.count(next_fragment_id(base))
        )
        dropped: set[int] = set()
        self._added = []
        self._assigned: list[tuple[list, list[table_pb2.DataFragment]]] = []
        for old, fresh in self.groups:
            assigned = []
            for frag in fresh:
                copy = table_pb2.DataFragment()
                copy.CopyFrom(frag)
                copy.id = next(ids)
                assigned.append(copy)
            dropped.update(f.id for f in old)
            self._added.extend(assigned)
            self._assigned.append((old, assigned))
        kept = []
        for frag in new.fragments:
            if frag.id not in dropped:
                copy = table_pb2.DataFragment()
                copy.CopyFrom(frag)
                kept.append(copy)
        new.ClearField("fragments")
        new.fragments.extend(kept + self._added)

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        return without_fragments(indices, {f.id for old, _ in self.groups for f in old})

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        for old, assigned in self._assigned:
            group = txn.rewrite.groups.add()
            group.old_fragments.extend(old)
            group.new_fragments.extend(assigned)


def _check_schema_unchanged(base: table_pb2.Manifest | None, read_fields: list | None, what: str) -> None:
    """A ``Merge``/``Project`` replaces the whole schema with one derived from ``read_fields``; if
    a concurrent commit changed the schema since (added, renamed or dropped a column), publishing
    it would silently undo that change, so it is a conflict (as in pylance), never rebased."""
    if read_fields is not None and base is not None and _shape(base.fields) != _shape(read_fields):
        raise CommitConflictError(
            f"the schema changed since this {what} was planned (a concurrent schema "
            "change); re-open the dataset and retry"
        )


def _check_metadata_unchanged(
    base: table_pb2.Manifest | None, read_fields: list | None, read_metadata: Mapping[str, bytes]
) -> None:
    """A ``Merge`` republishes the schema and field metadata it planned on: a concurrent schema or
    field metadata update (``UpdateConfig``) would be silently undone, so it is a conflict, as in
    pylance (which refuses a ``Merge`` over such an update)."""
    if read_fields is None or base is None:
        return
    planned = {f.id: dict(f.metadata) for f in read_fields}
    changed = dict(base.schema_metadata) != dict(read_metadata) or any(
        f.id in planned and dict(f.metadata) != planned[f.id] for f in base.fields
    )
    if changed:
        raise CommitConflictError(
            "the schema or field metadata changed since these columns were planned (a concurrent "
            "metadata update); re-open the dataset and retry"
        )


def _set_schema(
    new: table_pb2.Manifest, fields: Iterable[file_pb2.Field], metadata: Mapping[str, str] | None
) -> None:
    new.ClearField("fields")
    new.fields.extend(fields)
    new.schema_metadata.clear()
    for k, v in (metadata or {}).items():
        new.schema_metadata[k] = v


@dataclass
class _SchemaChange(Operation):
    """An operation that publishes a new schema (``Merge``, ``Project``): the schema, its metadata,
    and the schema it was planned on, which must still be the base's (checked first)."""

    schema_fields: list = field(default_factory=list)
    schema_metadata: dict = field(default_factory=dict)
    read_fields: list | None = None  # the schema the change was planned on (None: not checked)

    #: the calls that make this operation, named in a conflict
    calls: ClassVar[str] = ""

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        _check_schema_unchanged(base, self.read_fields, self.calls)
        self._apply_data(base, new)
        _set_schema(new, self.schema_fields, self.schema_metadata)
        self._added = []

    def _apply_data(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        """What the change does besides the schema, once the planned schema is found unchanged."""


@dataclass
class Merge(_SchemaChange):
    """New columns (``add_columns``): the new schema, and every fragment with its new data file.

    ``fragments`` must be all of the base's fragments, unchanged but for the added files: a
    concurrent append (rows without the new column) or delete (a newer deletion file) is a
    conflict. ``fragments=None`` (columns of nulls, no data) keeps the base's fragments and rebases.
    """

    # None here means "keep the base's fragments", which a plain list cannot say; apply() and
    # fill_transaction() handle it, so the narrower base type does not hold for Merge.
    fragments: list | None = None  # type: ignore[assignment]

    calls: ClassVar[str] = "add_columns/alter_columns"

    def _apply_data(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        _check_metadata_unchanged(base, self.read_fields, self.schema_metadata)
        if self.fragments is not None:
            planned = {f.id: deletion_file_id(f) for f in self.fragments}
            if base is None or {f.id: deletion_file_id(f) for f in base.fragments} != planned:
                raise CommitConflictError(
                    "fragments changed since the new columns were computed (a concurrent "
                    "append or delete); re-run add_columns"
                )
            new.ClearField("fragments")
            new.fragments.extend(self.fragments)

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.merge.fragments.extend(self.fragments if self.fragments is not None else [])
        txn.merge.schema.extend(self.schema_fields)
        for k, v in self.schema_metadata.items():
            txn.merge.schema_metadata[k] = v
        txn.merge.preserves_nullability = True


@dataclass
class Project(_SchemaChange):
    """A schema change without data (``drop_columns``): data files keep the dropped columns, and a
    file left with none of the schema's fields leaves its fragments (as in pylance)."""

    calls: ClassVar[str] = "alter_columns/drop_columns"

    def _apply_data(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        drop_files_without_fields(new, {f.id for f in self.schema_fields})

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.project.schema.extend(self.schema_fields)
        txn.project.preserves_nullability = True


def mark_maybe_published(exc: BaseException, version: int) -> None:
    """Flag ``exc`` as raised once ``version``'s manifest may be published, so the files of the
    attempt are kept (``may_be_published``); commit handlers flag their own failures with it."""
    try:
        setattr(exc, PUBLISHED_ATTR, version)
    except AttributeError:  # an exception type without a __dict__: nothing to flag it with
        pass


def may_be_published(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a ``commit`` whose version was (or may have been) published."""
    return getattr(exc, PUBLISHED_ATTR, None) is not None


@contextmanager
def undo_unless_published(undo: Callable[[], None]) -> Iterator[None]:
    """Run ``undo`` (delete the files an attempt wrote) on a failure known to precede publication.

    Once a manifest is published it references those files, and a failure after that point
    (a lost reply, Ctrl-C while writing the version hint) must not delete them."""
    try:
        yield
    except BaseException as exc:
        if not may_be_published(exc):
            with suppress(Exception):
                undo()
        raise


def remove_quietly(storage: Storage, path: str) -> None:
    """Delete a file no version names (a failed attempt's transaction, a staging file); if that
    fails too, a leftover file is only clutter, and the original failure is what to report."""
    with suppress(Exception):
        storage.delete(path)


def _published_state(storage: Storage, path: str, data: bytes) -> bool | None:
    """True if ``path`` holds exactly our manifest, False if it is absent or another writer's,
    None if storage cannot tell us."""
    try:
        return storage.exists(path) and storage.read_bytes(path) == data
    except Exception:
        return None


def _unpublished_refusal(
    storage: Storage,
    base_uri: str,
    handler: CommitHandler,
    version: int,
    refused: tuple[int, int, float] | None,
    last: bool,
    cause: CommitConflictError,
) -> tuple[int, int, float] | None:
    """After the handler refused ``version``: None if a manifest of it exists (an ordinary conflict:
    rebase and retry), or if the handler repaired its claim. Otherwise the refusal is tracked as
    (version, refusals, first refusal time) and, once it has lasted ``STUCK_AFTER_SECONDS`` or
    retries run out, reported as ``CommitStuckError`` instead of as conflicting commits."""
    if any(entry.version == version for entry in list_versions(storage, base_uri)):
        return None
    repair = getattr(handler, "repair", None)
    if repair is not None and repair(base_uri, version):
        return None
    count, since = (
        (refused[1] + 1, refused[2]) if refused and refused[0] == version else (1, time.monotonic())
    )
    waited = time.monotonic() - since
    if last or waited >= STUCK_AFTER_SECONDS:
        raise CommitStuckError(
            f"{base_uri}: the commit handler {handler_label(handler)} refused version {version} {count} time(s) "
            f"over {waited:.1f} s although no manifest of version {version} exists: a claim left by a writer "
            f"that crashed between claiming the version and writing its manifest (or one still in between). "
            f"The handler could not repair it (CommitHandler.repair); no commit can pass version {version - 1} "
            f"until the claim is cleared. Last refusal: {cause}"
        ) from cause
    return version, count, since


def commit(
    storage: Storage,
    base_uri: str,
    operation: Operation,
    read_version: int | None = None,
    max_retries: int = MAX_RETRIES,
    commit_lock: Callable[[int], object] | None = None,
) -> int:
    """Commit ``operation`` on top of the latest version; return the version created.

    ``commit_lock``: pylance's ``CommitLock`` (see ``CommitLockHandler``); when given, it replaces
    the scheme's commit handler, as in pylance.

    An exception from here either precedes publication (the caller may delete the files it
    wrote), or is flagged (``may_be_published``) because the manifest is, or may be, in place.
    A handler that fails after placing our exact manifest committed: its error is dropped.
    A version the handler keeps refusing while no manifest of it appears is ``CommitStuckError``."""
    handler = (
        CommitLockHandler(storage, commit_lock)
        if commit_lock is not None
        else resolve_commit_handler(storage, base_uri)
    )
    refused: tuple[int, int, float] | None = None
    txn_uuid = str(uuidlib.uuid4())
    for attempt in range(max_retries):
        latest = latest_version(storage, base_uri)
        if latest is not None:
            base, index_section = read_manifest(storage, latest.path)
            feature_flags.check_writable(base_uri, base.writer_feature_flags, base.config)
            use_v2_names = latest.v2_name
        else:
            base, index_section, use_v2_names = None, None, True
        if read_version is None:
            read_version = base.version if base is not None else 0
        new = table_pb2.Manifest()
        if base is not None:
            new.CopyFrom(base)
        new.version = (base.version if base is not None else 0) + 1
        operation.apply(base, new)
        if operation.tidies_fragments:
            tidy_fragments(new)
        new_indices = indices_on_live_fields(new, operation.apply_indices(base, index_section))
        feature_flags.record_plugin_encodings(
            new, operation.plugin_encodings, isinstance(operation, Overwrite)
        )
        check_new_fragments(new, operation._added)
        if new.fragments:
            new.max_fragment_id = max(max(f.id for f in new.fragments), new.max_fragment_id)
        new.writer_version.library = "lance_fw"
        new.writer_version.version = __version__
        new.timestamp.GetCurrentTime()
        flags = feature_flags.flags_for(new, operation.stable_after(base))
        new.reader_feature_flags = flags & ~feature_flags.TABLE_CONFIG
        new.writer_feature_flags = flags
        txn = transaction_pb2.Transaction(read_version=read_version, uuid=txn_uuid)
        for k, v in operation.properties.items():
            txn.transaction_properties[k] = str(v)
        # the new fragments as given (unnumbered, or a caller's ids): pylance's transaction file
        # records them so and numbers them only in the manifest
        operation.fill_transaction(txn, list(operation.fragments or []))
        txn_name = f"{read_version}-{txn_uuid}{TRANSACTION_SUFFIX}"
        txn_path = join_uri(base_uri, TRANSACTIONS_DIR, txn_name)
        storage.write_bytes(txn_path, txn.SerializeToString())
        new.transaction_file = txn_name
        prefix = dictionary_prefix(storage, latest.path if latest is not None else None, base, new)
        data = encode_manifest(new, txn, new_indices, prefix)
        path = join_uri(base_uri, VERSIONS_DIR, manifest_name(new.version, use_v2_names))
        try:
            handler.commit(path, data)
        except CommitConflictError as exc:
            remove_quietly(storage, txn_path)  # this attempt's transaction file: no manifest will name it
            refused = _unpublished_refusal(
                storage, base_uri, handler, new.version, refused, attempt == max_retries - 1, exc
            )
            time.sleep(random.uniform(0, min(0.5, 0.01 * 2 ** min(attempt, 6))))
            continue
        except BaseException as exc:
            state = _published_state(storage, path, data)
            if not (state and isinstance(exc, Exception)):
                if state is False and not may_be_published(exc):
                    remove_quietly(storage, txn_path)  # no manifest will ever name it
                else:  # in place, unknown, or a handler that may still publish it (a repairable claim)
                    mark_maybe_published(exc, new.version)
                raise
        try:
            write_hint(storage, base_uri, new.version)
        except BaseException as exc:  # write_hint swallows errors; this is Ctrl-C and the like
            mark_maybe_published(exc, new.version)
            raise
        return new.version
    raise CommitConflictError(f"{base_uri}: gave up after {max_retries} conflicting concurrent commits")


def latest_manifest(
    storage: Storage, base_uri: str, version: int | None = None
) -> tuple[table_pb2.Manifest, table_pb2.IndexSection | None]:
    entry = find_version(storage, base_uri, version)
    return read_manifest(storage, entry.path)
