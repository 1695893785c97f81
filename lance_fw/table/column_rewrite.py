"""``merge_insert``'s column rewrite: update some columns of matched rows where the rows are.

pylance 14 patches columns instead of moving rows when a partial-schema source is joined through a
scalar index on the key (``write_mode="auto"``), or when asked (``write_mode="rewrite_columns"``).
Each fragment holding an updated row gains one data file with the source's non-key columns for
*every* physical row (the old values where no row changed, so offsets line up), and its older data
files name those columns' field ids as ``TOMBSTONE`` (a file left naming only tombstones stays
in the transaction and leaves the manifest, as in pylance). Nothing is deleted, so rows keep their order and addresses; rows the source inserts go to
new fragments that hold only the source's columns (the others read as nulls). The commit is an
``Update`` with ``update_mode`` REWRITE_COLUMNS and ``fields_modified``; indices on a modified field
no longer cover the patched fragments (their index entries hold the old values), as in pylance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw._util import sets
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.schema import LanceSchema
from lance_fw.table import flags as feature_flags
from lance_fw.table.index_section import without_fragments
from lance_fw.table.new_fragments import TOMBSTONE
from lance_fw.table.row_ids import address_fragments, address_offsets
from lance_fw.table.schema_evolution import write_fragment_columns
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import (
    Indices,
    Operation,
    assign_ids,
    check_unchanged,
    check_written_schema,
    files_and_deletions,
    next_fragment_id,
)
from lance_fw.table.write import delete_fragment_files, plan_write, refuse_blob_columns

#: ``Transaction.Update.update_mode`` of an update that patched columns inside fragments.
REWRITE_COLUMNS = transaction_pb2.Transaction.REWRITE_COLUMNS


@dataclass
class ColumnUpdate(Operation):
    """pylance's ``Update`` with ``update_mode`` REWRITE_COLUMNS: ``updated`` are whole fragments
    (new data file added, tombstones set) replacing theirs; ``fragments`` hold inserted rows.

    ``expected``: per patched fragment, its deletion file and data files when planned; a concurrent
    commit that changed them (a delete, ``add_columns``) conflicts instead of being overwritten.
    ``schema_fields``: the schema planned on (a concurrent schema change conflicts)."""

    updated: list = field(default_factory=list)
    expected: dict = field(default_factory=dict)
    fields_modified: list[int] = field(default_factory=list)
    schema_fields: list = field(default_factory=list)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_written_schema(base, self.schema_fields, "merge_insert")
        check_unchanged(base, self.expected, "merge_insert", files_and_deletions)
        patched = {f.id: f for f in self.updated}
        kept = []
        for frag in new.fragments:
            copy = table_pb2.DataFragment()
            copy.CopyFrom(patched.get(frag.id, frag))
            kept.append(copy)
        new.ClearField("fragments")
        new.fragments.extend(kept)
        self._added = assign_ids(new, self.fragments, next_fragment_id(base))

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        """Indices on a modified field drop the patched fragments from their ``fragment_bitmap``
        (scans read those fragments unindexed until ``optimize_indices``); others keep theirs."""
        if indices is None or not self.updated:
            return indices
        modified, touched = set(self.fields_modified), {f.id for f in self.updated}
        out = table_pb2.IndexSection()
        for meta in indices.indices:
            if set(meta.fields) & modified:
                one = table_pb2.IndexSection()
                one.indices.add().CopyFrom(meta)
                pruned = without_fragments(one, touched)
                assert pruned is not None  # a section in, a section out
                meta = pruned.indices[0]
            out.indices.add().CopyFrom(meta)
        return out

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        txn.update.updated_fragments.extend(self.updated)
        txn.update.new_fragments.extend(fragments)
        txn.update.fields_modified.extend(self.fields_modified)
        txn.update.update_mode = REWRITE_COLUMNS


def refuse_unsupported(snapshot: Snapshot, columns: list[str]) -> None:
    """What lance_fw cannot patch yet: a typed error before anything is written."""
    if feature_flags.has_stable_row_ids(snapshot.manifest):
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: merge_insert rewriting columns of a dataset with stable row ids "
            "(pylance also records per-row update versions) is not supported yet"
        )
    refuse_blob_columns(snapshot.lance_schema.project(columns), snapshot.uri)


def _patcher(offsets: np.ndarray, values: pa.Table) -> Callable[[pa.Table], pa.Table]:
    """``compute`` for ``write_fragment_columns``: called on consecutive chunks of physical rows,
    it replaces the rows at ``offsets`` (sorted) with the matching rows of ``values``."""
    position = [0]

    def compute(rows: pa.Table) -> pa.Table:
        start = position[0]
        stop = start + rows.num_rows
        position[0] = stop
        lo, hi = np.searchsorted(offsets, [start, stop])
        if lo == hi:
            return rows
        picks = np.arange(rows.num_rows, dtype=np.int64)
        picks[offsets[lo:hi] - start] = rows.num_rows + np.arange(hi - lo, dtype=np.int64)
        patch = values.slice(int(lo), int(hi - lo))
        columns = [
            pa.chunked_array(rows.column(i).chunks + patch.column(i).chunks, rows.schema.field(i).type)
            .take(pa.array(picks))
            .combine_chunks()
            for i in range(rows.num_columns)
        ]
        return pa.Table.from_arrays(columns, schema=rows.schema)

    return compute


def _tombstoned(frag: table_pb2.DataFragment, drop_dead: bool = True) -> table_pb2.DataFragment:
    """The fragment with its last (new) data file's field ids tombstoned in the older files, and
    (``drop_dead``) older files left naming no live field dropped. As in pylance, merge_insert's
    ``Update`` keeps those (its transaction names them; the commit drops them from the manifest),
    where ``LanceFragment.update_columns`` returns the fragment without them."""
    newest = frag.files[-1]
    replaced = set(newest.fields)
    files = []
    for data_file in frag.files[:-1]:
        ids = [TOMBSTONE if fid in replaced else fid for fid in data_file.fields]
        if drop_dead and all(fid == TOMBSTONE for fid in ids):
            continue
        copy = table_pb2.DataFile()
        copy.CopyFrom(data_file)
        copy.ClearField("fields")
        copy.fields.extend(ids)
        files.append(copy)
    files.append(newest)
    out = table_pb2.DataFragment()
    out.CopyFrom(frag)
    out.ClearField("files")
    out.files.extend(files)
    return out


def rewrite_columns(
    snapshot: Snapshot,
    columns: list[str],
    addresses: np.ndarray,
    values: pa.Table,
    inserted: pa.Table | None,
) -> int:
    """Set ``columns`` (non-key source columns, in source order) of the rows at ``addresses`` to
    the rows of ``values`` (aligned with ``addresses``), append ``inserted`` (source columns only)
    as new fragments, and commit one REWRITE_COLUMNS ``Update``. Returns the new version."""
    refuse_unsupported(snapshot, columns)
    schema = snapshot.lance_schema
    update_schema = schema.project(columns)
    order = np.argsort(addresses, kind="stable")
    addresses = addresses[order]
    values = values.select(columns).take(pa.array(order))
    frag_of = address_fragments(addresses).astype(np.int64)
    offset_of = address_offsets(addresses).astype(np.int64)
    by_id = {f.id: f for f in snapshot.manifest.fragments}
    updated: list[table_pb2.DataFragment] = []
    written: list[table_pb2.DataFragment] = []  # the new files only, for undo
    fresh: list[table_pb2.DataFragment] = []

    def undo() -> None:
        delete_fragment_files(snapshot.storage, snapshot.uri, written + fresh)

    try:
        for frag_id in sets.unique(frag_of):
            frag = by_id[int(frag_id)]
            if not columns:  # a key-only source: pylance lists the fragment, unchanged
                updated.append(frag)
                continue
            lo, hi = np.searchsorted(frag_of, [frag_id, frag_id + 1])
            compute = _patcher(offset_of[lo:hi], values.slice(int(lo), int(hi - lo)))
            patched = write_fragment_columns(snapshot, frag, update_schema.fields, update_schema, compute)
            written.append(_last_file(patched))
            updated.append(_tombstoned(patched, drop_dead=False))
        schema_fields = schema.to_protos()
        if inserted is not None and inserted.num_rows:
            fresh = _write_inserted(snapshot, inserted)
    except BaseException:
        undo()
        raise
    op = ColumnUpdate(
        fragments=fresh,
        updated=updated,
        expected={f.id: files_and_deletions(by_id[f.id]) for f in updated},
        fields_modified=[f.id for f in update_schema.walk()] if written else [],
        schema_fields=schema_fields,
    )
    return snapshot.commit(op, undo, snapshot.version)


def _last_file(frag: table_pb2.DataFragment) -> table_pb2.DataFragment:
    """The fragment's newest data file alone, as a fragment (what ``delete_fragment_files`` takes)."""
    only = table_pb2.DataFragment()
    only.files.append(frag.files[-1])
    return only


def _write_inserted(snapshot: Snapshot, rows: pa.Table) -> list[table_pb2.DataFragment]:
    """New fragments holding only the source's columns, in the source's order (as pylance writes
    them); the dataset's other columns read as nulls there."""
    plan = plan_write(
        snapshot.uri, rows.schema, "append", storage_options=snapshot.storage_options, allow_subset=True
    )
    ordered = LanceSchema(
        [snapshot.lance_schema.field(n) for n in rows.column_names], plan.lance_schema.metadata
    )
    plan = dataclasses.replace(plan, lance_schema=ordered, arrow_schema=ordered.to_arrow())
    return plan.write(rows)
