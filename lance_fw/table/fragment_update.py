"""One fragment rewritten without a commit: pylance's ``LanceFragment.update_columns``, ``merge``
and ``delete_rows``, whose results a driver later commits (``Update``, ``Merge``, ``Delete``).

Why a module of its own: these are per-fragment joins on a key column (a left-outer hash join of
the fragment's rows with a table), which neither the whole-table ``merge``/``merge_insert`` nor
``add_columns`` do. Each writes one data file holding a value for every physical row of the
fragment (deleted rows included, so file offsets line up with the fragment's) through
``schema_evolution.write_fragment_columns``; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._proto import table_pb2
from lance_fw._util import sets
from lance_fw.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError
from lance_fw.schema import LanceSchema
from lance_fw.table import flags as feature_flags
from lance_fw.table.column_rewrite import _tombstoned
from lance_fw.table.delete import stage_deletions
from lance_fw.table.fragment import FragmentReader
from lance_fw.table.rows import ROW_ID
from lance_fw.table.schema_evolution import fragment_columns, write_fragment_columns
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.write import refuse_blob_columns

#: The virtual column a fragment's rows can be joined on: its row ids.
#: A row address is ``fragment id << ADDRESS_SHIFT | offset`` (the row id without stable row ids).
ADDRESS_SHIFT = 32


def _right_keys(right: pa.Table, right_on: str, key_type: pa.DataType) -> pa.Array:
    """The right side's join keys as one array of the left key's type."""
    if right_on not in right.column_names:
        raise InvalidArgumentError(
            f"Invalid user input: Column {right_on} does not exist in the right side fragment"
        )
    keys = right.column(right_on).combine_chunks()
    if keys.type != key_type:
        try:
            keys = keys.cast(key_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(
                f"join keys of type {keys.type} do not match the fragment's {key_type}: {exc}"
            ) from None
    return keys


def _matches(keys: pa.Array | pa.ChunkedArray, right_keys: pa.Array) -> pa.Array:
    """For each left key, the index of a right row with that key (null: none; a null key matches
    nothing). Of several right rows with one key, the first (pylance: any one of them)."""
    return pc.index_in(keys, value_set=right_keys, skip_nulls=True)


def _check_stable_ids(snapshot: Snapshot, what: str) -> None:
    if feature_flags.has_stable_row_ids(snapshot.manifest):
        raise UnsupportedFeatureError(
            f"{snapshot.uri}: LanceFragment.{what} on a dataset with stable row ids "
            "(pylance also records per-row versions) is not supported yet"
        )


def update_columns(
    snapshot: Snapshot, frag: table_pb2.DataFragment, right: pa.Table, left_on: str, right_on: str
) -> tuple[table_pb2.DataFragment, list[int], np.ndarray]:
    """``frag`` with one new data file of the right side's other columns (the matched rows' new
    values, every other row's old one) whose field ids are tombstoned in the older files; the
    field ids modified; the physical offsets that matched.

    Raises:
        InvalidArgumentError: a join column missing on either side, a right column the fragment
            lacks, or no column to update.
        SchemaError: a right column whose type differs from the fragment's.
    """
    _check_stable_ids(snapshot, "update_columns")
    schema = snapshot.lance_schema
    if left_on != ROW_ID and left_on not in schema.to_arrow().names:
        raise InvalidArgumentError(
            f"Invalid user input: Column {left_on} does not exist in the left side fragment"
        )
    key_field = None if left_on == ROW_ID else schema.field(left_on)
    key_type = pa.uint64() if key_field is None else key_field.to_arrow().type
    right_keys = _right_keys(right, right_on, key_type)
    columns = [n for n in right.column_names if n != right_on]
    for name in columns:
        if name not in snapshot.schema.names:
            raise InvalidArgumentError(
                f"Invalid user input: Column {name} in right side fragment does not exist in left side fragment"
            )
        if name in (ROW_ID, left_on):
            raise InvalidArgumentError(f"update_columns: the column {name!r} cannot be updated")
    if not columns:
        raise InvalidArgumentError("update_columns: the data has no column to update besides the join key")
    targets = schema.project(columns)
    target_arrow = targets.to_arrow()
    for name in columns:
        if right.schema.field(name).type != target_arrow.field(name).type:
            raise SchemaError(
                f"Attempt to project field by different types: {target_arrow.field(name).type} "
                f"and {right.schema.field(name).type}"
            )
    refuse_blob_columns(targets, snapshot.uri)
    values = {n: right.column(n).combine_chunks() for n in columns}
    reader = snapshot.fragment_reader(frag)
    try:  # deleted rows keep their values: pylance joins the fragment's live rows only
        deleted = np.asarray(reader.deleted, dtype=np.int64)
    finally:
        reader.close()
    matched: list[np.ndarray] = []
    position = [0]

    def compute(rows: pa.Table) -> pa.Table:
        start = position[0]
        position[0] += rows.num_rows
        if key_field is None:
            offsets = np.arange(start, start + rows.num_rows, dtype=np.uint64)
            keys: pa.Array | pa.ChunkedArray = pa.array((frag.id << ADDRESS_SHIFT) + offsets, pa.uint64())
        else:
            keys = rows.column(left_on)
        index = _matches(keys, right_keys)
        found = pc.is_valid(index).to_numpy(zero_copy_only=False)
        lo, hi = np.searchsorted(deleted, [start, start + rows.num_rows])
        found[deleted[lo:hi] - start] = False
        hit = pa.array(found, pa.bool_())
        matched.append(start + np.flatnonzero(found))
        out = [pc.if_else(hit, values[n].take(index), rows.column(n)) for n in columns]
        return pa.Table.from_arrays(out, schema=target_arrow)

    needed = ([] if key_field is None else [key_field]) + list(targets.fields)
    patched = write_fragment_columns(snapshot, frag, needed, targets, compute)
    offsets = np.concatenate(matched) if matched else np.zeros(0, np.int64)
    # the ids the new file holds (leaf fields from format 2.1 on), as pylance reports them
    return _tombstoned(patched), list(patched.files[-1].fields), offsets.astype(np.uint32)


def merge_columns(
    snapshot: Snapshot, frag: table_pb2.DataFragment, right: pa.Table, left_on: str, right_on: str
) -> tuple[table_pb2.DataFragment, LanceSchema]:
    """``frag`` with one new data file of the right side's other columns joined on the key (nulls
    where no right row matches), and the schema with them (new field ids follow the largest).

    Raises:
        InvalidArgumentError: a join column missing, or no new column.
    """
    _check_stable_ids(snapshot, "merge")
    if left_on not in snapshot.schema.names:
        raise InvalidArgumentError(
            f"Invalid user input: Column {left_on} does not exist in the left side fragment"
        )
    key_type = snapshot.schema.field(left_on).type
    right_keys = _right_keys(right, right_on, key_type)
    columns = [n for n in right.column_names if n != right_on]
    if not columns:
        raise InvalidArgumentError("merge: the data has no column besides the join key")
    values = [right.column(n).combine_chunks() for n in columns]
    out_schema = right.select(columns).schema

    def joined(batch: pa.RecordBatch) -> pa.RecordBatch:
        index = _matches(batch.column(0), right_keys)
        return pa.record_batch([v.take(index) for v in values], schema=out_schema)

    return fragment_columns(snapshot, frag, joined, [left_on])


def delete_offsets(
    snapshot: Snapshot, frag: table_pb2.DataFragment, offsets: np.ndarray
) -> tuple[table_pb2.DataFragment | None, Callable[[], None]]:
    """``frag`` with the rows at physical ``offsets`` deleted as well (a new deletion file, as in
    pylance even when none is new; the fragment itself when it has no deletions and no offsets are
    given; None when no row is left), and how to remove the deletion file written.

    Raises:
        InvalidArgumentError: an offset outside the fragment.
    """
    offsets = sets.unique(np.asarray(offsets, dtype=np.int64))
    if len(offsets) and (offsets[0] < 0 or offsets[-1] >= frag.physical_rows):
        bad = offsets[0] if offsets[0] < 0 else offsets[-1]
        raise InvalidArgumentError(
            f"Invalid user input: delete_rows offset {bad} is out of range for fragment {frag.id} "
            f"with {frag.physical_rows} rows"
        )

    def matcher(reader: FragmentReader, _: table_pb2.DataFragment) -> np.ndarray:
        # as pylance: a new deletion file even when no offset is new (or none is given)
        return offsets.astype(np.uint32) if len(offsets) else reader.deleted.astype(np.uint32)

    staged = stage_deletions(snapshot, matcher, [frag])
    undo = lambda: staged.undo(snapshot.storage)  # noqa: E731
    if staged.removed:
        return None, undo
    return (staged.updated[0] if staged.updated else frag), undo


__all__ = ["ROW_ID", "delete_offsets", "merge_columns", "update_columns"]
