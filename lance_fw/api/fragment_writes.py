"""pylance's uncommitted fragment writes: ``LanceFragment.create`` / ``create_from_file`` (a new
fragment's metadata) and a fragment's ``update_columns``, ``merge`` and ``delete_rows`` (the changed
fragment's metadata). A driver commits what its workers return with ``LanceDataset.commit``
(``Append``/``Overwrite``, ``Update``, ``Merge``, ``Delete``), as with pylance.

Why a module of its own: ``api/fragment_extras.py`` holds the fragment's reading conveniences;
these write files and check pylance's options.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.api.distributed import FragmentMetadata, WriteProgressAdapter
from lance_fw.api.lance_schema import LanceSchema
from lance_fw.api.write import plan_data_write
from lance_fw.errors import InvalidArgumentError, InvalidUserInputError, SchemaError, UnsupportedFeatureError
from lance_fw.options import refuse, uri_string
from lance_fw.table import fragment_update
from lance_fw.table.write import as_reader

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset

#: The modes ``LanceFragment.create`` takes (``create`` and ``overwrite`` both write the data's schema)
CREATE_MODES = ("append", "create", "overwrite")
#: ``Field.parent_id`` of a top-level field
TOP_LEVEL_PARENT = -1
#: No file roll: ``LanceFragment.create`` writes all the data into one data file.
_ONE_FILE = sys.maxsize


def create(
    dataset_uri: Any,
    data: Any,
    fragment_id: int | None = None,
    schema: pa.Schema | None = None,
    max_rows_per_group: int | None = 1024,
    progress: Any = None,
    mode: str = "append",
    *,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    storage_options: dict | None = None,
    namespace_client: Any = None,
    table_id: list | None = None,
    session: Any = None,
) -> FragmentMetadata:
    """One new fragment (one data file) of all of ``data``, uncommitted, with id ``fragment_id``
    (0 by default; a commit assigns the final id). ``append`` writes the dataset's schema (the
    data must match it), ``create``/``overwrite`` the data's. ``progress`` hears ``begin`` with the
    file's name and ``complete`` once it is written.

    Raises:
        InvalidArgumentError: an unknown ``mode``, or a negative ``fragment_id``.
        InvalidUserInputError: no rows in ``data`` (an ``OSError``, as pylance's).
    """
    refuse(
        "LanceFragment.create",
        {"namespace_client": namespace_client, "table_id": table_id, "session": session},
    )
    if mode not in CREATE_MODES:
        raise InvalidArgumentError(f"Invalid mode {mode}")
    frag_id = 0 if fragment_id is None else int(fragment_id)
    if frag_id < 0:
        raise InvalidArgumentError(f"fragment_id must not be negative, got {fragment_id}")
    arguments = {
        "use_legacy_format": use_legacy_format,
        "data_storage_version": data_storage_version,
        "storage_options": storage_options,
        "max_rows_per_file": _ONE_FILE,
        "max_bytes_per_file": _ONE_FILE,
        "max_page_bytes": None,
        "allow_plugin_encodings": False,
    }
    if schema is None and _bare_batches(data):
        raise InvalidArgumentError("Must provide schema to write dataset from RecordBatch iterable")
    incoming, stream = as_reader(data, schema)
    reader = pa.RecordBatchReader.from_batches(incoming, stream)
    write_mode = "overwrite" if mode == "create" else mode  # nothing is committed: create is overwrite
    try:
        plan, batches = plan_data_write(reader, uri_string(dataset_uri), incoming, write_mode, arguments)
    except SchemaError as exc:  # pylance's append: the schema check is an OSError
        raise InvalidUserInputError(f"Append with different schema: {exc}") from None
    if plan.mode == "append":
        expected = [f.name for f in plan.planned_fields() if f.parent_id == TOP_LEVEL_PARENT]
        if incoming.names != expected:  # a fragment holds every column, in the dataset's order
            raise InvalidUserInputError(
                f"Append with different schema: expected columns {expected}, the data has {incoming.names}"
            )
    tracker = None if progress is None else WriteProgressAdapter(progress, frag_id, True, plan.version)
    written = plan.write(batches, tracker)
    if not written:
        raise InvalidUserInputError("Invalid user input: Input data was empty.")
    if len(written) > 1:  # cannot happen with one unbounded file; never hand back a partial fragment
        raise InvalidArgumentError("LanceFragment.create: the data did not fit one data file")
    written[0].id = frag_id
    return FragmentMetadata(written[0])


def create_from_file(filename: str, dataset: LanceDataset, fragment_id: int) -> FragmentMetadata:
    """A fragment of one existing data file under the dataset's ``data/`` (written by a
    ``LanceFileWriter`` with the dataset's columns, in its order), uncommitted; its size is left
    unknown, as pylance leaves it.

    Raises:
        InvalidUserInputError: the file's columns are not the dataset's (an ``OSError``, as pylance's).
        UnsupportedFeatureError: nested columns.
    """
    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import join_uri
    from lance_fw.table.paths import DATA_DIR

    if int(fragment_id) < 0:
        raise InvalidArgumentError(f"fragment_id must not be negative, got {fragment_id}")
    snapshot = dataset._snapshot
    reader = LanceFileReader(snapshot.storage, join_uri(snapshot.uri, DATA_DIR, filename))
    try:
        names, rows, version = [f.name for f in reader.schema.fields], reader.num_rows, reader.tail.version
    finally:
        reader.close()
    schema = snapshot.lance_schema
    expected = [f.name for f in schema.fields]
    if names != expected:
        raise InvalidUserInputError(
            f"Append with different schema: the file's columns {names} are not the dataset's {expected}"
        )
    if any(f.children for f in schema.fields):
        raise UnsupportedFeatureError(
            "LanceFragment.create_from_file with nested columns is not supported yet"
        )
    frag = table_pb2.DataFragment(id=int(fragment_id), physical_rows=rows)
    frag.files.add(
        path=filename,
        fields=[f.id for f in schema.fields],
        column_indices=list(range(len(names))),
        file_major_version=version[0],
        file_minor_version=version[1],
    )
    return FragmentMetadata(frag)


def _bare_batches(data: Any) -> bool:
    """An iterator or list of record batches: pylance needs their schema given."""
    if isinstance(data, pa.RecordBatchReader):
        return False
    if isinstance(data, list):
        return bool(data) and all(isinstance(b, pa.RecordBatch) for b in data)
    return isinstance(data, Iterator)


def _right_side(
    data: Any, schema: pa.Schema | None, left_on: str, right_on: str | None
) -> tuple[pa.Table, str, str]:
    """The new columns' rows as one table, and the join keys (``right_on`` defaults to ``left_on``,
    as in pylance)."""
    arrow_schema, batches = as_reader(data, schema)
    right = pa.Table.from_batches(list(batches), schema=arrow_schema)
    return right, left_on, left_on if right_on is None else right_on


def update_columns(
    ds: LanceDataset,
    frag: table_pb2.DataFragment,
    data: Any,
    left_on: str,
    right_on: str | None,
    schema: pa.Schema | None,
    with_offsets: bool,
) -> tuple[FragmentMetadata, list[int]] | tuple[FragmentMetadata, list[int], bytes]:
    """See ``LanceFragment.update_columns``."""
    updated, fields, offsets = fragment_update.update_columns(
        ds._snapshot, frag, *_right_side(data, schema, left_on, right_on)
    )
    if with_offsets:
        from lance_fw.table.deletion import BITMAP, codec

        return FragmentMetadata(updated), fields, codec(BITMAP).encode(np.asarray(offsets, np.uint32))
    return FragmentMetadata(updated), fields


def merge(
    ds: LanceDataset,
    frag: table_pb2.DataFragment,
    data: Any,
    left_on: str,
    right_on: str | None,
    schema: pa.Schema | None,
) -> tuple[FragmentMetadata, LanceSchema]:
    """See ``LanceFragment.merge``."""
    merged, new_schema = fragment_update.merge_columns(
        ds._snapshot, frag, *_right_side(data, schema, left_on, right_on)
    )
    return FragmentMetadata(merged), LanceSchema(new_schema)


def delete_rows(ds: LanceDataset, frag: table_pb2.DataFragment, offsets: Any) -> FragmentMetadata | None:
    """See ``LanceFragment.delete_rows``."""
    wanted = np.fromiter((int(o) for o in offsets), dtype=np.int64)
    changed, _ = fragment_update.delete_offsets(ds._snapshot, frag, wanted)
    return None if changed is None else FragmentMetadata(changed)


__all__ = ["create", "create_from_file", "delete_rows", "merge", "update_columns"]
