"""pylance's ``lance.udf``: ``batch_udf``, ``BatchUDF``, ``BatchUDFCheckpoint``, ``normalize_transform``.

Why a module of its own: pylance users write ``@lance.batch_udf(output_schema=..., checkpoint_file=...)``
and ``from lance.udf import BatchUDF``; both must work after ``import lance_fw as lance``. A
``BatchUDF`` is the function plus two things ``add_columns`` reads: the ``output_schema`` (else
taken from the result of the first row) and a checkpoint, a SQLite file of results computed but not
committed, so a failed ``add_columns`` run again with the same checkpoint computes only what is
missing (``lance_fw.table.schema_evolution`` does the resume; this module only stores). The SQLite
tables are pylance's (``batches``, ``fragments``); a fragment is saved as lance_fw's JSON of the
``DataFragment`` message, so a checkpoint is resumed by the library that wrote it.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw.errors import SchemaError, UnsupportedFeatureError
from lance_fw.table.schema_evolution import BatchInfo as _BatchInfo
from lance_fw.table.schema_evolution import infer_udf_schema, udf_batch

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset, LanceFragment

#: What ``add_columns`` calls a UDF with and what it may return (RecordBatch, Table, dict, DataFrame)
UdfFunction = Callable[[pa.RecordBatch], Any]

_SPECIAL_COLUMNS = ("_rowid", "_rowaddr")


class BatchUDF:
    """A UDF for ``LanceDataset.add_columns``: made by the ``batch_udf`` decorator."""

    def __init__(
        self,
        func: UdfFunction,
        output_schema: pa.Schema | None = None,
        checkpoint_file: str | Path | None = None,
    ) -> None:
        self.func = func
        self.output_schema = output_schema
        self.cache: BatchUDFCheckpoint | None = (
            BatchUDFCheckpoint(checkpoint_file) if checkpoint_file is not None else None
        )

    def __call__(self, batch: pa.RecordBatch) -> Any:
        """The wrapped function itself, as written (pylance: so users can test it directly)."""
        return self.func(batch)

    def _call(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The result as a RecordBatch, checked against ``output_schema`` (pylance's private helper)."""
        if self.output_schema is None:
            raise SchemaError("BatchUDF: output_schema must be known before the UDF is applied")
        return udf_batch(self.func, batch, self.output_schema)


def batch_udf(
    output_schema: pa.Schema | None = None,
    checkpoint_file: str | Path | None = None,
) -> Callable[[UdfFunction], BatchUDF]:
    """Decorator: ``@batch_udf(output_schema=..., checkpoint_file=...)`` over ``RecordBatch ->
    new columns``. Without ``output_schema`` the schema of the first result is used; with a
    ``checkpoint_file`` a failed ``add_columns`` resumes where it stopped (the file is removed
    once the columns are committed)."""

    def inner(func: UdfFunction) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return inner


class BatchUDFCheckpoint:
    """A SQLite file of a UDF's results not yet committed: batches of the fragment being written,
    and finished fragments (their JSON). One connection per call: SQLite connections are not
    shared between threads, and closing each one releases the file (Windows locks it)."""

    BatchInfo = _BatchInfo  # pylance names the key type here

    def __init__(self, path: str | Path) -> None:
        self.path = path
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS batches (fragment_id INT, batch_index INT, result BLOB)")
            conn.execute("CREATE TABLE IF NOT EXISTS fragments (fragment_id INT, data BLOB)")
            conn.commit()

    def cleanup(self) -> None:
        os.remove(self.path)

    def get_batch(self, info: _BatchInfo) -> pa.RecordBatch | None:
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute(
                "SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                (info.fragment_id, info.batch_index),
            ).fetchone()
        # the file is the user's own, written by this class: unpickling it is unpickling their data
        return pickle.loads(row[0]) if row is not None else None

    def insert_batch(self, info: _BatchInfo, batch: pa.RecordBatch) -> None:
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute(
                "INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                (info.fragment_id, info.batch_index, pickle.dumps(batch)),
            )
            conn.commit()

    def get_fragment(self, fragment_id: int) -> str | None:
        """The saved fragment's JSON text, or None."""
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT data FROM fragments WHERE fragment_id = ?", (fragment_id,)).fetchone()
        return row[0] if row is not None else None

    def insert_fragment(self, fragment_id: int, fragment: str) -> None:
        """Save a finished fragment; its batches are no longer needed."""
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("INSERT INTO fragments (fragment_id, data) VALUES (?, ?)", (fragment_id, fragment))
            conn.execute("DELETE FROM batches WHERE fragment_id = ?", (fragment_id,))
            conn.commit()


def normalize_transform(
    udf_like: dict[str, str] | BatchUDF | UdfFunction,
    data_source: LanceDataset | LanceFragment,
    read_columns: list[str] | None = None,
    reader_schema: pa.Schema | None = None,
) -> dict[str, str] | BatchUDF:
    """pylance's check of ``add_columns``' transforms: a dict of SQL strings as is, a ``BatchUDF``
    with its ``output_schema`` filled in, any other callable wrapped in one (TypeError if it fails
    on the first row). Readers of new column values are not supported by lance_fw."""
    if isinstance(udf_like, BatchUDF):
        if udf_like.output_schema is None:
            infer_udf_schema(udf_like, _first_batch(data_source, read_columns))  # sets it
        return udf_like
    if isinstance(udf_like, dict):
        for key, value in udf_like.items():
            if not isinstance(key, str):
                raise TypeError(f"Column names must be a string. Got {type(key)}")
            if not isinstance(value, str):
                raise TypeError(f"Column expressions must be a string. Got {type(value)}")
        return udf_like
    if callable(udf_like):
        return BatchUDF(
            udf_like, output_schema=infer_udf_schema(udf_like, _first_batch(data_source, read_columns))
        )
    raise UnsupportedFeatureError(
        f"normalize_transform: new column values from a reader ({type(udf_like).__name__}"
        f"{', reader_schema' if reader_schema is not None else ''}) are not supported by lance_fw; "
        "pass {name: SQL expression} or a function of a RecordBatch"
    )


def _first_batch(source: LanceDataset | LanceFragment, read_columns: list[str] | None) -> pa.RecordBatch:
    columns = [c for c in read_columns if c not in _SPECIAL_COLUMNS] if read_columns is not None else None
    with_row_id = read_columns is not None and "_rowid" in read_columns
    with_row_address = read_columns is not None and "_rowaddr" in read_columns
    batches = source.to_batches(
        limit=1, columns=columns, with_row_id=with_row_id, with_row_address=with_row_address
    )
    return next(iter(batches))


__all__ = ["BatchUDF", "BatchUDFCheckpoint", "batch_udf", "normalize_transform"]
