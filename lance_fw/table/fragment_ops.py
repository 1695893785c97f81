"""Operations a driver commits from fragments its workers changed (pylance's hand-built
``LanceOperation.Update`` and ``DataReplacement``).

Why a module of its own: lance_fw's own updates stage their operation with what they read
(``merge_insert``'s ``Update``, ``column_rewrite.ColumnUpdate``); these come from a caller's
``FragmentMetadata`` instead, so each records, per fragment it replaces, the data files and
deletion file it had at the read version: a concurrent commit that changed one of them is a
conflict instead of being silently undone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw.errors import CommitConflictError, InvalidArgumentError, UnsupportedFeatureError
from lance_fw.table.column_rewrite import ColumnUpdate
from lance_fw.table.transaction import Indices, Operation, Rewrite, check_unchanged, files_and_deletions

#: ``Transaction.Update.update_mode`` by pylance's names ('' is pylance's default: rows)
UPDATE_MODES = {
    "": transaction_pb2.Transaction.REWRITE_ROWS,
    "rewrite_rows": transaction_pb2.Transaction.REWRITE_ROWS,
    "rewrite_columns": transaction_pb2.Transaction.REWRITE_COLUMNS,
}


def planned_states(read: table_pb2.Manifest, ids: list[int], what: str) -> dict[int, tuple]:
    """Each fragment's data files and deletion file at the read version (what ``apply`` checks).

    Raises:
        InvalidArgumentError: a fragment id the read version does not have.
    """
    by_id = {f.id: f for f in read.fragments}
    missing = sorted(set(ids) - set(by_id))
    if missing:
        raise InvalidArgumentError(f"{what}: fragments {missing} do not exist at version {read.version}")
    return {i: files_and_deletions(by_id[i]) for i in ids}


@dataclass
class FragmentsUpdate(ColumnUpdate):
    """pylance's ``Update`` as a caller builds it: ``updated`` fragments replace theirs whole,
    ``removed`` ids go, ``fragments`` are added; indices on ``fields_modified`` stop covering the
    updated fragments (their index entries may hold old values). As in pylance, an index keeps a
    removed fragment's id in its ``fragment_bitmap`` (ids are never reused: it covers no rows)."""

    removed: list[int] = field(default_factory=list)
    update_mode: transaction_pb2.Transaction.UpdateMode = transaction_pb2.Transaction.REWRITE_ROWS
    fields_for_preserving_frag_bitmap: list[int] = field(default_factory=list)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        check_unchanged(base, self.expected, "update", files_and_deletions)
        gone = set(self.removed)
        kept = [f for f in new.fragments if f.id not in gone]
        new.ClearField("fragments")
        new.fragments.extend(kept)
        super().apply(base, new)

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        super().fill_transaction(txn, fragments)
        txn.update.removed_fragment_ids.extend(self.removed)
        txn.update.fields_for_preserving_frag_bitmap.extend(self.fields_for_preserving_frag_bitmap)
        txn.update.update_mode = self.update_mode


@dataclass
class CallerRewrite(Rewrite):
    """pylance's ``Rewrite`` as a caller builds it (no ``rewritten_indices``): as in pylance, the
    indices keep their ``fragment_bitmap`` (the old ids then cover no rows, and the new fragments
    are read unindexed until ``optimize_indices``), where lance_fw's own compaction drops them."""

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        return indices


@dataclass
class DataReplacement(Operation):
    """pylance's ``DataReplacement``: per fragment, a new data file taking the place of the one
    holding exactly the same field ids (its position kept). Other shapes (a file replacing parts
    of several) are refused."""

    replacements: list[tuple[int, table_pb2.DataFile]] = field(default_factory=list)

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        by_id = {f.id: f for f in new.fragments}
        for frag_id, data_file in self.replacements:
            frag = by_id.get(frag_id)
            if frag is None:
                raise CommitConflictError(f"DataReplacement: fragment {frag_id} does not exist (any more)")
            same = [i for i, f in enumerate(frag.files) if list(f.fields) == list(data_file.fields)]
            if len(same) != 1:
                raise UnsupportedFeatureError(
                    f"DataReplacement: fragment {frag_id} has no data file with exactly the fields "
                    f"{list(data_file.fields)}; replacing part of a file is not supported yet"
                )
            frag.files[same[0]].CopyFrom(data_file)
        self._added = []

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        out = txn.data_replacement
        out.SetInParent()
        for frag_id, data_file in self.replacements:
            out.replacements.add(fragment_id=frag_id, new_file=data_file)


__all__ = ["UPDATE_MODES", "CallerRewrite", "DataReplacement", "FragmentsUpdate", "planned_states"]
