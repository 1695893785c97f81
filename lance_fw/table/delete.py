"""Deleting rows: evaluate a predicate per fragment, write new deletion files, commit once.

Deletion files hold the *whole* deleted set of a fragment (pylance rewrites it on every delete):
an Arrow IPC file below 5000 rows, a roaring bitmap from 5000 on. A fragment whose every row is
deleted is dropped from the manifest instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow.compute as pc

from lance_fw._proto import table_pb2
from lance_fw._util import sets
from lance_fw.io.storage import Storage
from lance_fw.query.filter_plan import filter_plan
from lance_fw.table.deletion import (
    ARROW_ARRAY,
    BITMAP,
    BITMAP_THRESHOLD,
    codec,
    deletion_file_id,
    deletion_path,
)
from lance_fw.table.fragment import PROBE_ROWS, FragmentReader
from lance_fw.table.row_ids import address_fragments, address_offsets
from lance_fw.table.rows import Rows
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Delete

#: (fragment reader, fragment proto) -> uint32 offsets of live rows that match the predicate
Matcher = Callable[[FragmentReader, table_pb2.DataFragment], np.ndarray]


@dataclass
class StagedDeletions:
    """New deletion files written for a delete, not yet committed (``written`` paths undo them)."""

    read_version: int
    updated: list = field(default_factory=list)  # fragments with their new deletion file
    removed: list = field(default_factory=list)  # ids of fragments with every row deleted
    expected: dict = field(default_factory=dict)  # fragment id -> deletion file id planned against
    written: list = field(default_factory=list)
    rows: int = 0

    def undo(self, storage: Storage) -> None:
        for path in self.written:
            storage.delete(path)


def stage_deletions(
    snapshot: Snapshot, matcher: Matcher, fragments: Sequence[table_pb2.DataFragment] | None = None
) -> StagedDeletions:
    """Write the deletion files for the rows ``matcher`` selects in each fragment of ``snapshot``
    (or of ``fragments``, some of them: pylance's uncommitted ``LanceFragment.delete``)."""
    staged = StagedDeletions(snapshot.version)
    try:
        for frag in snapshot.fragments if fragments is None else fragments:
            reader = snapshot.fragment_reader(frag)
            try:
                hits = matcher(reader, frag)
                if not len(hits):
                    continue
                before = reader.deleted.astype(np.uint32)
                deleted = sets.union(before, hits.astype(np.uint32))
            finally:
                reader.close()
            staged.rows += len(deleted) - len(before)
            staged.expected[frag.id] = deletion_file_id(frag)
            if len(deleted) >= frag.physical_rows:
                staged.removed.append(frag.id)
                continue
            file_type = ARROW_ARRAY if len(deleted) < BITMAP_THRESHOLD else BITMAP
            file_id = random.getrandbits(63)
            path = deletion_path(snapshot.uri, frag.id, staged.read_version, file_id, file_type)
            snapshot.storage.write_bytes(path, codec(file_type).encode(deleted))
            staged.written.append(path)
            copy = table_pb2.DataFragment()
            copy.CopyFrom(frag)
            copy.deletion_file.file_type = file_type
            copy.deletion_file.read_version = staged.read_version
            copy.deletion_file.id = file_id
            copy.deletion_file.num_deleted_rows = len(deleted)
            staged.updated.append(copy)
    except BaseException:
        staged.undo(snapshot.storage)
        raise
    return staged


def delete_rows(snapshot: Snapshot, matcher: Matcher, predicate_text: str) -> tuple[int, int]:
    """Delete the rows ``matcher`` selects from ``snapshot``; return the new version and how many
    rows it deleted."""
    staged = stage_deletions(snapshot, matcher)
    if not staged.updated and not staged.removed:
        return snapshot.version, 0
    op = Delete(
        updated=staged.updated, removed=staged.removed, expected=staged.expected, predicate=predicate_text
    )
    version = snapshot.commit(op, lambda: staged.undo(snapshot.storage), staged.read_version)
    return version, staged.rows


def addresses_matcher(addresses: np.ndarray) -> Matcher:
    """Rows given as row addresses (``fragment id << 32 | offset``), as a scan with ``_rowaddr`` or an
    engine evaluating the predicate itself (DuckDB's ``UPDATE``/``DELETE``) finds them."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    fragments = address_fragments(addresses).astype(np.int64)
    offsets = address_offsets(addresses).astype(np.uint32)
    return offsets_matcher({int(f): np.sort(offsets[fragments == f]) for f in sets.unique(fragments)})


def offsets_matcher(by_fragment: dict[int, np.ndarray]) -> Matcher:
    """Rows given as physical offsets per fragment id (from row addresses found by a scan)."""
    return lambda reader, frag: by_fragment.get(frag.id, np.zeros(0, np.uint32))


def expression_matcher(snapshot: Snapshot, predicate: str | pc.Expression | None) -> Matcher:
    """Rows where a Lance SQL filter or ``pyarrow.compute.Expression`` is true (NULL counts as
    false), found by the scan's own late-materialised filter path (``query.filter_plan``)."""
    plan = filter_plan(snapshot, predicate)
    if plan is None:  # pylance's error class for delete(None)
        raise TypeError("predicate must be a SQL string or a pyarrow.compute.Expression")
    matcher, filter_fields = plan.matcher, plan.fields

    def match(reader: FragmentReader, frag: table_pb2.DataFragment) -> np.ndarray:
        # one batch of addresses per filter probe (in pylance's 8192-row batches, 245 out of 2M rows)
        hits = [
            batch.column("_rowaddr").to_numpy()
            for batch in reader.filtered_batches(
                Rows([], with_row_address=True, batch_size=PROBE_ROWS), filter_fields, matcher
            )
        ]
        addresses = np.concatenate(hits) if hits else np.zeros(0, np.uint64)
        return address_offsets(addresses).astype(np.uint32)

    return match


__all__ = [
    "StagedDeletions",
    "addresses_matcher",
    "delete_rows",
    "expression_matcher",
    "offsets_matcher",
    "stage_deletions",
]
