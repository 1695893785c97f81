"""``ds.restore()``: make an older version the latest again, as a new version.

The new manifest takes the old version's schema, fragments, format and configuration; what must
stay monotonic across versions (``max_fragment_id``, ``next_row_id``) keeps the latest value, so
fragment and row ids used by the versions in between are never handed out again (pylance
continues fragment ids the same way). The old version's indices come back with it (as in pylance).
The transaction records ``Restore(version)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Indices, Operation, commit


@dataclass
class Restore(Operation):
    old: table_pb2.Manifest | None = None
    tidies_fragments: ClassVar[bool] = False  # the old version's fragments come back as they were
    #: the old version's indices: restored with it, as in pylance 14
    old_indices: table_pb2.IndexSection | None = None

    def apply(self, base: table_pb2.Manifest | None, new: table_pb2.Manifest) -> None:
        old = self.old
        # restore() always sets ``old`` and runs on an existing dataset (there is a latest version)
        assert base is not None and old is not None
        for name in ("fields", "fragments", "schema_metadata", "config", "table_metadata", "base_paths"):
            new.ClearField(name)
        new.fields.extend(old.fields)
        new.fragments.extend(old.fragments)
        new.schema_metadata.update(old.schema_metadata)
        new.config.update(old.config)
        new.table_metadata.update(old.table_metadata)
        new.base_paths.extend(old.base_paths)
        new.data_format.CopyFrom(old.data_format)
        new.next_row_id = max(base.next_row_id, old.next_row_id)
        self._added = []

    def apply_indices(self, base: table_pb2.Manifest | None, indices: Indices) -> Indices:
        return self.old_indices

    def fill_transaction(self, txn: transaction_pb2.Transaction, fragments: list) -> None:
        assert self.old is not None  # set by restore()
        txn.restore.version = self.old.version


def restore(snapshot: Snapshot, latest_version: int) -> int:
    """Commit ``snapshot``'s version as the newest one (on top of ``latest_version``); returns the
    version created."""
    return commit(
        snapshot.storage,
        snapshot.uri,
        Restore(old=snapshot.manifest, old_indices=snapshot.index_section),
        commit_lock=snapshot.commit_lock,
        read_version=latest_version,
    )
