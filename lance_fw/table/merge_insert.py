"""``merge_insert`` (upsert): rewrite rows as deletions plus new fragments (``table/row_rewrite.py``,
which ``update`` shares).

It commits one ``Update`` version, as pylance does: old versions of changed rows get deletion files,
the new rows (rewritten and inserted, in source order) are appended as new fragments. The key join
is a pyarrow hash join over the target's key columns and row addresses (memory bounded by the keys
and the source). As pylance 14: NULL keys never match; a target row matched by two source rows is
an error; a source without some columns updates only those it has, and inserts nulls for others.

pylance 14 picks how merged rows are written (``write_mode``): ``rewrite_rows`` as above, or
``rewrite_columns`` (``table/column_rewrite.py``: the source's columns patched in place). ``auto``
patches exactly where pylance's indexed join runs on a partial source: one key column with a BTREE
or BITMAP index, ``use_index`` on, no ``when_not_matched_by_source_delete``, matched rows kept, a
non-empty source. pylance joins a full source through such an index too (a partial one only to
patch); that join drops source rows whose key is NULL (neither matched nor inserted), as here.
"""

from __future__ import annotations

import json
import time
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util import sets
from lance_fw._util.refusals import BRANCHES, MEM_WAL, refusing
from lance_fw.errors import InvalidArgumentError, InvalidUserInputError, SchemaError, UnsupportedFeatureError
from lance_fw.file.version import parse_version, requested_version, version_name
from lance_fw.query.filter import FilterError, parse_filter
from lance_fw.query.scanner import LanceScanner
from lance_fw.schema import conform
from lance_fw.table.column_rewrite import rewrite_columns
from lance_fw.table.index_list import SCALAR_TYPES
from lance_fw.table.matcher import matcher_for
from lance_fw.table.row_rewrite import ADDRESS, StagedRewrite, stage_rewrite
from lance_fw.table.rows import WHOLE_READ_BATCH_SIZE
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Update, column_field_ids
from lance_fw.table.write import as_reader

_SOURCE_ROW = "__lance_fw_source_row"
#: ``write_mode`` values pylance 14 accepts
WRITE_MODES = ("auto", "rewrite_rows", "rewrite_columns")
#: index details type urls whose index pylance 14's merge_insert joins through (exact equality)
_EXACT_INDEX_TYPES = frozenset(url for url, kind in SCALAR_TYPES.items() if kind in ("BTree", "Bitmap"))


@dataclass
class UpdateOperation:
    """pylance's ``LanceOperation.Update`` as ``execute_uncommitted`` returns it: the fragments
    removed, those with new deletion files, and the new ones (``DataFragment`` messages). lance_fw
    commits the operation it staged (``staged``), which also carries the deletion files it expects
    to replace, so a concurrent change to those fragments is a conflict."""

    removed_fragment_ids: list[int] = field(default_factory=list)
    updated_fragments: list = field(default_factory=list)
    new_fragments: list = field(default_factory=list)
    fields_modified: list[int] = field(default_factory=list)
    fields_for_preserving_frag_bitmap: list[int] = field(default_factory=list)
    update_mode: str = "rewrite_rows"
    updated_fragment_offsets: dict[int, bytes] | None = None
    staged: Update | None = field(default=None, repr=False, compare=False)


@dataclass
class Transaction:
    """pylance's ``Transaction``: an operation read from ``read_version``, committed later with
    ``LanceDataset.commit(uri, transaction, read_version=transaction.read_version)``."""

    read_version: int
    operation: UpdateOperation
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    transaction_properties: dict[str, str] | None = field(default_factory=dict)


@refusing({BRANCHES: ("target_bases", "target_all_bases"), MEM_WAL: ("mark_sstables_as_compacted",)})
class MergeInsertBuilder:
    """pylance's builder: ``ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    .execute(data)`` -> ``{num_inserted_rows, num_updated_rows, num_deleted_rows}``.

    It sits below the façade, so it never holds the ``LanceDataset``: ``current`` gives the snapshot
    the dataset shows now (read again at ``execute``, so a builder made before another mutation of
    that dataset object sees it, as in pylance), ``advance`` moves the dataset to the version committed."""

    def __init__(
        self, current: Callable[[], Snapshot], on: str | list[str], advance: Callable[[int], None]
    ) -> None:
        self._current, self._advance = current, advance
        ds = current()
        self._on = [on] if isinstance(on, str) else list(on)
        if not self._on:
            raise InvalidArgumentError("merge_insert needs at least one key column")
        missing = [k for k in self._on if k not in ds.schema.names]
        if missing:
            raise InvalidArgumentError(
                f"merge_insert: key column(s) {missing} not in the dataset {ds.schema.names}"
            )
        self._matched: str | None = None  # "update" | "delete" | "fail"
        self._condition: str | None = None
        self._insert = False
        self._by_source: tuple[bool, str | None] = (False, None)
        self._use_index = True
        self._write_mode = "auto"
        self._file_version: tuple[int, int] | None = None  # data_storage_version(): checked at execute

    def when_matched_update_all(self, condition: str | None = None) -> MergeInsertBuilder:
        self._matched, self._condition = "update", condition
        return self

    def when_matched_delete(self) -> MergeInsertBuilder:
        self._matched = "delete"
        return self

    def when_matched_fail(self) -> MergeInsertBuilder:
        self._matched = "fail"
        return self

    def when_not_matched_insert_all(self) -> MergeInsertBuilder:
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> MergeInsertBuilder:
        self._by_source = (True, expr)
        return self

    def conflict_retries(self, max_retries: int) -> MergeInsertBuilder:
        """Accepted as pylance's: lance_fw's commit rebases the merge over concurrent commits that
        do not touch its rows and fails with ``CommitConflictError`` when one does."""
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(
                f"conflict_retries: max_retries must be a non-negative int, got {max_retries!r}"
            )
        return self

    def retry_timeout(self, timeout: object) -> MergeInsertBuilder:
        return self

    def use_index(self, use_index: bool) -> MergeInsertBuilder:
        """False: never join through an index on the key (so never patch columns in ``auto``)."""
        self._use_index = bool(use_index)
        return self

    def write_mode(self, mode: str) -> MergeInsertBuilder:
        """``auto`` | ``rewrite_rows`` | ``rewrite_columns``: see the module docstring."""
        if mode not in WRITE_MODES:
            raise InvalidArgumentError(
                f"Invalid write_mode: {mode}. Expected one of 'auto', 'rewrite_rows', 'rewrite_columns'"
            )
        self._write_mode = mode
        return self

    # -- execution ----------------------------------------------------------------------------
    def _source(self, data: Any, schema: pa.Schema | None) -> pa.Table:
        source_schema, batches = as_reader(data, schema)
        source = pa.Table.from_batches(list(batches), schema=source_schema)
        target = self._current().schema
        extra = [n for n in source.column_names if n not in target.names]
        if extra:
            raise SchemaError(f"merge_insert: source column(s) {extra} are not in the dataset {target.names}")
        missing_keys = [k for k in self._on if k not in source.column_names]
        if missing_keys:
            raise SchemaError(f"merge_insert: the source lacks key column(s) {missing_keys}")
        absent = [n for n in target.names if n not in source.column_names]
        required = [n for n in absent if not target.field(n).nullable]
        if self._insert and required:  # pylance's words; nullable ones are inserted as nulls
            raise InvalidUserInputError(
                "Cannot insert rows with a partial-schema source: target column(s) "
                f"{json.dumps(required)} are non-nullable and not provided by the source. Either add "
                "them to the source or set when_not_matched to DoNothing."
            )
        partial = pa.schema([target.field(n) for n in source.column_names])
        return conform(source, partial, "merge_insert").append_column(
            _SOURCE_ROW, pa.array(np.arange(source.num_rows, dtype=np.int64))
        )

    def _indexed_join(self, ds: Snapshot) -> bool:
        """Whether pylance joins through an index on the key: one key column with a BTREE or
        BITMAP index, ``use_index`` on, and no delete of rows the source does not match."""
        if not self._use_index or self._by_source[0] or len(self._on) != 1 or ds.index_section is None:
            return False
        key = ds.lance_schema.field(self._on[0]).id
        return any(
            list(meta.fields) == [key] and meta.index_details.type_url in _EXACT_INDEX_TYPES
            for meta in ds.index_section.indices
        )

    def _rewrites_columns(self, ds: Snapshot, names: list[str], partial: bool) -> bool:
        """pylance's choice between patching columns and rewriting rows (module docstring);
        ``rewrite_columns`` on a merge it cannot express is pylance's error."""
        if self._write_mode == "rewrite_rows":
            return False
        if self._write_mode == "auto":
            return partial and self._matched != "delete" and self._indexed_join(ds)
        reasons = []
        if not partial:
            reasons.append("the source covers every dataset column, so there is nothing to skip")
        elif all(n in self._on for n in names):
            reasons.append("the source carries no column besides the join key")
        if self._matched != "update":
            reasons.append("when_matched must update rather than delete or do nothing")
        if self._insert:
            reasons.append("inserting unmatched source rows adds rows, which patching cannot do")
        if self._by_source[0]:
            reasons.append("deleting target rows unmatched by the source removes rows")
        if reasons:
            raise InvalidUserInputError(
                "MergeInsertWriteMode::RewriteColumns cannot express this merge insert: "
                f"{'; '.join(reasons)}. Use MergeInsertWriteMode::Auto or RewriteRows instead."
            )
        return True

    def data_storage_version(self, version: str) -> MergeInsertBuilder:
        """The file version of the files written: lance_fw writes the dataset's own version only,
        so another one (pylance would mix versions in one dataset) is refused when executing."""
        self._file_version = requested_version(version)
        return self

    def _check_configured(self, ds: Snapshot) -> None:
        if self._matched is None and not self._insert and not self._by_source[0]:
            raise InvalidArgumentError(
                "merge_insert: the merge insert job is not configured to change the data in any way"
            )
        if self._file_version is not None and self._file_version != parse_version(ds.data_storage_version):
            raise UnsupportedFeatureError(
                f"merge_insert: data_storage_version {version_name(self._file_version)}: lance_fw writes "
                f"the dataset's own file version ({ds.data_storage_version}) only"
            )

    def execute(self, data_obj: Any, *, schema: pa.Schema | None = None) -> dict:
        """Merge ``data_obj`` and commit: ``{num_inserted_rows, num_updated_rows, num_deleted_rows}``."""
        staged, stats = self._stage(data_obj, schema, uncommitted=False)
        if staged is not None:
            self._advance(staged.commit())  # like pylance, even a no-op commits a version
        return stats

    def execute_batches(self, new_data: Any) -> dict:
        """pylance's ``execute`` for in-memory data (a Table, batches): the same merge here."""
        return self.execute(new_data)

    def execute_uncommitted(
        self, data_obj: Any, *, schema: pa.Schema | None = None
    ) -> tuple[Transaction, dict]:
        """Write the merge's files without committing: ``(Transaction, stats)``; commit with
        ``LanceDataset.commit(uri, transaction, read_version=transaction.read_version)``. Patching
        columns in place (``write_mode("rewrite_columns")``, or ``auto`` choosing it) is refused."""
        staged, stats = self._stage(data_obj, schema, uncommitted=True)
        assert staged is not None  # _stage refuses the patch path when uncommitted
        op = staged.op
        operation = UpdateOperation(
            removed_fragment_ids=list(op.removed),
            updated_fragments=list(op.updated),
            new_fragments=list(op.fragments),
            fields_for_preserving_frag_bitmap=list(op.preserved_fields),
            staged=op,
        )
        return Transaction(staged.read_version, operation), stats

    def execute_uncommitted_batches(self, new_data: Any) -> tuple[Transaction, dict]:
        """``execute_uncommitted`` for in-memory data (pylance's name)."""
        return self.execute_uncommitted(new_data)

    def _header(self) -> str:
        """pylance's first plan line: the merge's configuration in its words."""
        on = f"on=[{', '.join(self._on)}]"
        matched = {None: "DoNothing", "update": "UpdateAll", "delete": "Delete", "fail": "Fail"}[
            self._matched
        ]
        if self._matched == "update" and self._condition is not None:
            matched = "UpdateIf(MergeCondition)"
        inserted = "InsertAll" if self._insert else "DoNothing"
        if self._matched == "delete" and not self._insert and not self._by_source[0]:
            return f"DeleteOnlyMergeInsert: {on}, when_matched=Delete, when_not_matched={inserted}"
        by_source = (
            "Keep" if not self._by_source[0] else "Delete" if self._by_source[1] is None else "DeleteIf"
        )
        return f"MergeInsert: {on}, when_matched={matched}, when_not_matched={inserted}, when_not_matched_by_source={by_source}"

    def explain_plan(self, schema: pa.Schema | None = None, verbose: bool = False) -> str:
        """pylance's first line (the merge's configuration), then lance_fw's own plan: a hash
        join of the target's key columns and row addresses with the source (pylance's lines below
        the first are DataFusion's, which lance_fw does not run)."""
        ds = self._current()
        self._check_configured(ds)
        names = list(schema.names) if schema is not None else ds.schema.names
        unknown = [n for n in names if n not in ds.schema.names]
        if unknown or any(k not in names for k in self._on):
            raise UnsupportedFeatureError(  # pylance: OSError "does not support explain_plan"
                f"merge_insert.explain_plan: a source schema {names} that is not a subset of the "
                f"dataset's holding the key {self._on}"
            )
        if self._condition is not None:  # planned against the source's columns, as pylance does
            sides = {"target": ds.schema, "source": pa.schema([ds.schema.field(n) for n in names])}
            pair = pa.schema([pa.field(side, pa.struct(list(fields))) for side, fields in sides.items()])
            try:
                parse_filter(self._condition, pair)
            except FilterError as exc:
                raise InvalidUserInputError(f"merge_insert.explain_plan: {exc}") from None
        join = "Right" if self._insert else "Inner"
        if self._by_source[0]:
            join = "Full" if self._insert else "Left"
        lines = [
            self._header(),
            f"  HashJoin: join_type={join}, on=[{', '.join(self._on)}]",
            f"    LanceRead: uri={ds.uri}, projection=[{', '.join(self._on)}], "
            f"num_fragments={len(ds.manifest.fragments)}, row_addr=true",
            f"    SourceTable: projection=[{', '.join(names)}]",
        ]
        if verbose:
            lines.append(f"  write_mode={self._write_mode}, use_index={str(self._use_index).lower()}")
        return "\n".join(lines) + "\n"

    def analyze_plan(self, data_obj: Any, *, schema: pa.Schema | None = None) -> str:
        """Run the merge without committing (its files are removed again) and report pylance's
        counters on the first line's node; the dataset is unchanged."""
        started = time.perf_counter()
        staged, stats = self._stage(data_obj, schema, uncommitted=True)
        assert staged is not None
        staged.undo()
        elapsed = (time.perf_counter() - started) * 1000
        files = sum(len(f.files) for f in staged.new_fragments)
        node, _, rest = self._header().partition(": ")
        metrics = ", ".join(
            [
                f"num_deleted_rows={_count(stats['num_deleted_rows'])}",
                f"num_files_written={_count(files)}",
                f"num_inserted_rows={_count(stats['num_inserted_rows'])}",
                f"num_updated_rows={_count(stats['num_updated_rows'])}",
            ]
        )
        return f"{node}: elapsed={elapsed:.6f}ms, {rest}, metrics=[{metrics}]\n"

    def analyze_plan_batches(self, new_data: Any) -> str:
        """``analyze_plan`` for in-memory data (pylance's name)."""
        return self.analyze_plan(new_data)

    def _stage(
        self, data_obj: Any, schema: pa.Schema | None, uncommitted: bool
    ) -> tuple[StagedRewrite | None, dict]:
        """The merge's files written, not committed, and its counts; None for the files when it
        patched columns in place (that path commits itself, and is refused when ``uncommitted``)."""
        ds = self._current()
        self._check_configured(ds)
        source = self._source(data_obj, schema)
        names = source.column_names[:-1]  # without _SOURCE_ROW
        partial = source.num_rows > 0 and len(names) < len(ds.schema.names)  # pylance: empty is full
        patch = self._rewrites_columns(ds, names, partial)
        if self._indexed_join(ds) and (patch or not partial):  # a partial source probes only to patch
            source = _without_null_keys(source, self._on)
        if patch:  # pylance's target side holds only the source's columns (for the condition too)
            target_columns = names if self._condition is not None else self._on
        else:
            need_all_columns = self._condition is not None or partial
            target_columns = ds.schema.names if need_all_columns else self._on
        target = LanceScanner(
            ds, columns=target_columns, with_row_address=True, batch_size=WHOLE_READ_BATCH_SIZE
        ).to_table()
        keys = target.select([*self._on, ADDRESS])
        pairs = keys.join(
            source.select([*self._on, _SOURCE_ROW]), self._on, join_type="inner", use_threads=False
        )
        matched_addresses = pairs.column(ADDRESS).to_numpy()
        if len(sets.unique(matched_addresses)) != len(matched_addresses):
            raise InvalidArgumentError(
                "merge_insert: ambiguous merge: multiple source rows match the same target "
                f"row on {self._on}; each target row may match at most one source row"
            )
        matched_sources = pairs.column(_SOURCE_ROW).to_numpy()
        if self._matched == "fail" and len(matched_addresses):
            first = source.take([int(matched_sources[0])]).select(self._on).to_pylist()[0]
            raise InvalidUserInputError(  # pylance raises OSError here
                f"merge_insert: when_matched_fail: found a matching row with key {first}"
            )
        if self._condition is not None and len(matched_addresses):
            try:
                keep = self._condition_mask(
                    self._condition, target, source, matched_addresses, matched_sources
                )
            except FilterError as exc:
                if not patch:
                    raise
                raise InvalidUserInputError(  # pylance: "Error during planning" (an OSError)
                    f"merge_insert: {exc}; when patching columns the target side holds only the "
                    f"source's columns {names}"
                ) from None
            chosen_addresses, chosen_sources = matched_addresses[keep], matched_sources[keep]
        else:
            chosen_addresses, chosen_sources = matched_addresses, matched_sources
        if patch:
            if uncommitted:
                raise UnsupportedFeatureError(
                    "merge_insert: execute_uncommitted / analyze_plan of a merge that patches columns "
                    "in place (write_mode rewrite_columns, or auto with a partial source joined through "
                    "a key index); use write_mode('rewrite_rows')"
                )
            return None, self._patch(ds, source, names, chosen_addresses, chosen_sources, matched_sources)

        delete = [np.zeros(0, np.uint64)]
        new_parts: list[tuple[np.ndarray, pa.Table]] = []
        stats = {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}
        if self._matched in ("update", "delete"):
            delete.append(chosen_addresses)
        if self._matched == "update" and len(chosen_sources):
            stats["num_updated_rows"] = len(chosen_sources)
            new_parts.append(
                (chosen_sources, self._updated_rows(target, source, chosen_addresses, chosen_sources))
            )
        elif self._matched == "delete":
            stats["num_deleted_rows"] += len(chosen_addresses)
        if self._insert:
            unmatched = sets.difference(np.arange(source.num_rows), matched_sources)
            stats["num_inserted_rows"] = len(unmatched)
            inserted = source.take(pa.array(unmatched)).drop_columns([_SOURCE_ROW])
            new_parts.append((unmatched, _with_null_columns(inserted, ds.schema)))
        if self._by_source[0]:
            gone = self._not_matched_by_source(target, matched_addresses)
            stats["num_deleted_rows"] += len(gone)
            delete.append(gone)

        # pylance's order: rewritten rows, then inserted rows, each in source order
        parts = [
            table.select(ds.schema.names).take(pa.array(np.argsort(order, kind="stable")))
            for order, table in new_parts
            if table.num_rows
        ]
        new_rows = conform(pa.concat_tables(parts), ds.schema, "merge_insert") if parts else None
        addresses = sets.unique(np.concatenate(delete))
        staged = stage_rewrite(ds, addresses, new_rows)
        staged.op.preserved_fields = column_field_ids(ds.lance_schema.to_protos())  # as pylance: all
        return staged, stats

    def _patch(
        self,
        ds: Snapshot,
        source: pa.Table,
        names: list[str],
        addresses: np.ndarray,
        sources: np.ndarray,
        matched_sources: np.ndarray,
    ) -> dict:
        """The ``rewrite_columns`` path: matched rows patched in place, unmatched ones appended."""
        stats = {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}
        if self._matched != "update":  # insert-only, or when_matched_fail that found no match
            addresses, sources = addresses[:0], sources[:0]
        stats["num_updated_rows"] = len(sources)
        columns = [n for n in names if n not in self._on]
        values = source.take(pa.array(sources)).select(columns)
        inserted = None
        if self._insert:
            unmatched = sets.difference(np.arange(source.num_rows), matched_sources)
            stats["num_inserted_rows"] = len(unmatched)
            inserted = source.take(pa.array(unmatched)).drop_columns([_SOURCE_ROW])
        version = rewrite_columns(ds, columns, addresses, values, inserted)
        self._advance(version)
        return stats

    def _condition_mask(
        self, condition: str, target: pa.Table, source: pa.Table, addresses: np.ndarray, sources: np.ndarray
    ) -> np.ndarray:
        """Evaluate a ``target.x < source.x`` style condition over the matched pairs: each side is
        a struct column, so the filter dialect's struct-field access does the rest."""
        by_address = pc.index_in(pa.array(addresses), target.column(ADDRESS))
        sides = {
            "target": target.drop_columns([ADDRESS]).take(by_address),
            "source": source.drop_columns([_SOURCE_ROW]).take(pa.array(sources)),
        }
        pair = pa.RecordBatch.from_arrays(
            [
                pa.StructArray.from_arrays([c.combine_chunks() for c in t.columns], names=t.column_names)
                for t in sides.values()
            ],
            names=list(sides),
        )
        kept = np.zeros(len(addresses), dtype=bool)
        kept[matcher_for(parse_filter(condition, pair.schema))(pair)] = True
        return kept

    def _updated_rows(
        self, target: pa.Table, source: pa.Table, addresses: np.ndarray, sources: np.ndarray
    ) -> pa.Table:
        rows = source.take(pa.array(sources)).drop_columns([_SOURCE_ROW])
        schema = self._current().schema
        missing = [n for n in schema.names if n not in rows.column_names]
        if missing:  # a partial source: keep the target's values for the other columns
            by_address = pc.index_in(pa.array(addresses), target.column(ADDRESS))
            kept = target.select(missing).take(by_address)
            for name in missing:
                rows = rows.append_column(schema.field(name), kept.column(name))
        return rows

    def _not_matched_by_source(self, target: pa.Table, matched_addresses: np.ndarray) -> np.ndarray:
        """Target rows no source row matched (and, given ``expr``, for which it holds)."""
        expr = self._by_source[1]
        if expr is not None:
            target = LanceScanner(
                self._current(),
                columns=self._on,
                filter=expr,
                with_row_address=True,
                batch_size=WHOLE_READ_BATCH_SIZE,
            ).to_table()
        return sets.difference(target.column(ADDRESS).to_numpy(), matched_addresses)


def _count(n: int) -> str:
    """A counter as DataFusion prints it in an analyzed plan: ``999``, ``2.18 K``, ``1.50 M``."""
    for scale, unit in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return str(n)


def _without_null_keys(source: pa.Table, keys: list[str]) -> pa.Table:
    """``source`` without rows whose key is NULL, renumbered (``_SOURCE_ROW`` is a position)."""
    valid = pc.is_valid(source.column(keys[0]))
    for key in keys[1:]:
        valid = pc.and_(valid, pc.is_valid(source.column(key)))
    if pc.all(valid).as_py() is not False:
        return source
    kept = source.filter(valid).drop_columns([_SOURCE_ROW])
    return kept.append_column(_SOURCE_ROW, pa.array(np.arange(kept.num_rows, dtype=np.int64)))


def _with_null_columns(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Inserted rows of a partial source: the dataset's other columns as nulls (pylance's rule)."""
    for name in schema.names:
        if name not in rows.column_names:
            rows = rows.append_column(schema.field(name), pa.nulls(rows.num_rows, schema.field(name).type))
    return rows
