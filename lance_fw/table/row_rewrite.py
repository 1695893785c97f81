"""Rewrite rows as deletions plus new fragments: the ``rewrite_rows`` write shared by ``update``,
``merge_insert`` and DuckDB's ``UPDATE`` / ``MERGE INTO`` (``duckdb/dml.py``).

``stage_rewrite`` writes one ``Update`` version's files (deletion files for the old versions of the
changed rows, new fragments holding their new versions) without committing them; ``rewrite``
commits at once, and ``update`` (``ds.update({"col": "SQL expression"}, where=...)``) is that
write for the rows a filter picks. It lives apart from ``merge_insert.py``, whose job is the
upsert builder (key join, match clauses, write-mode choice, plans): this is the storage step
beneath it, which callers that pick the rows themselves use directly, as ``column_rewrite.py``
is the ``rewrite_columns`` step beneath it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.query.scanner import LanceScanner
from lance_fw.schema import conform
from lance_fw.table import flags as feature_flags
from lance_fw.table.delete import addresses_matcher, stage_deletions
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Update, column_field_ids
from lance_fw.table.write import delete_fragment_files, plan_write

ADDRESS = "_rowaddr"


@dataclass
class StagedRewrite:
    """An ``Update`` whose files are written but not committed: the deletion files and new
    fragments, the version they were read from, and how to remove them if never committed."""

    snapshot: Snapshot
    op: Update
    read_version: int
    undo: Callable[[], None]
    new_fragments: list = field(default_factory=list)

    def commit(self) -> int:
        return self.snapshot.commit(self.op, self.undo, self.read_version)


def stage_rewrite(
    snapshot: Snapshot, delete_addresses: np.ndarray, new_rows: pa.Table | None, predicate: str = ""
) -> StagedRewrite:
    """Write the files of ``rewrite`` (deletion files, new fragments) without committing."""
    if feature_flags.has_stable_row_ids(snapshot.manifest):
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: update/merge_insert on a dataset with stable row ids "
            "(rows would need to keep their ids) is not supported yet"
        )
    fragments, plan = [], None
    if new_rows is not None and new_rows.num_rows:
        plan = plan_write(snapshot.uri, snapshot.schema, "append", storage_options=snapshot.storage_options)
        fragments = plan.write(new_rows)
    staged = stage_deletions(snapshot, addresses_matcher(delete_addresses))
    op = Update(
        fragments=fragments,
        updated=staged.updated,
        removed=staged.removed,
        expected=staged.expected,
        predicate=predicate,
        schema_fields=plan.planned_fields() if plan is not None else [],
    )

    def undo() -> None:
        staged.undo(snapshot.storage)
        delete_fragment_files(snapshot.storage, snapshot.uri, fragments)

    return StagedRewrite(snapshot, op, staged.read_version, undo, fragments)


def rewrite(
    snapshot: Snapshot, delete_addresses: np.ndarray, new_rows: pa.Table | None, predicate: str = ""
) -> int:
    """Delete rows at ``delete_addresses`` and append ``new_rows``, in one Update version."""
    return stage_rewrite(snapshot, delete_addresses, new_rows, predicate).commit()


def update(snapshot: Snapshot, updates: dict[str, str], where: str | None = None) -> tuple[int, int]:
    """``ds.update({"col": "SQL expression"}, where=...)``: returns (rows updated, new version)."""
    from lance_fw.query.projection import Projection, as_stored

    if not updates:
        raise InvalidArgumentError("update() needs at least one column to set")
    unknown = [c for c in updates if c not in snapshot.schema.names]
    if unknown:
        raise InvalidArgumentError(
            f"update(): no column(s) {unknown}; the dataset has {snapshot.schema.names}"
        )
    rows = LanceScanner(snapshot, filter=where, with_row_address=True).to_table()
    expressions = {name: updates.get(name, f"`{name}`") for name in snapshot.schema.names}
    new = Projection(expressions, snapshot.schema).apply(rows.drop_columns([ADDRESS]))  # even with no rows
    new = conform(as_stored(new, snapshot.schema, "update()"), snapshot.schema, "update()")
    staged = stage_rewrite(snapshot, rows.column(ADDRESS).to_numpy(), new, where or "")
    staged.op.preserved_fields = column_field_ids(snapshot.lance_schema.to_protos(), updates)
    return rows.num_rows, staged.commit()
