"""Batch reads: one Spark input partition per fragment (large fragments split into row ranges).

Partitions are small picklable descriptions (uri, pinned version, fragment id, row range); ``read``
runs on an executor, opens that version's table ``Snapshot`` (table/snapshot.py) there, decodes only
the requested and filter columns, applies the Lance SQL filter exactly (query/filter_plan.py, late
materialised as ``to_table(filter=...)`` is) and yields Arrow batches relabelled to the schema Spark
expects. It goes through the layers' public API (Snapshot, filter_plan) and ``LanceDataset``'s public
members, never the dataset object's private attributes (issue 21).

There is deliberately no ``pushFilters``: Spark 4.3 caches the reader's planning result (the
pickled reader and its partitions) on the DataFrame's table object and replaces it only when a later
query on that DataFrame has a filter it can push, so a query without one reuses the previous query's
reader, pushed filters included (``df.filter("id < 100").count()`` then ``df.count()`` gives 100).
Nothing in the data source runs between the two queries, so it cannot tell them apart; the
``filter`` option (and ``lance_fw.spark.read(filter=...)``) is part of the options of every plan and
is therefore safe.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import InvalidArgumentError, SchemaError
from lance_fw.io.storage import resolve_storage
from lance_fw.query.filter import parse_filter
from lance_fw.query.filter_plan import filter_plan
from lance_fw.spark.options import (
    BATCH_SIZE,
    COLUMNS,
    FILTER,
    PATH,
    ROWS_PER_PARTITION,
    STORAGE_OPTIONS,
    VERSION,
    WITH_ROW_ADDRESS,
    bool_option,
    dataset_uri,
    int_option,
    storage_options,
    version_options,
)
from lance_fw.spark.types import relabel, spark_schema, type_mismatches
from lance_fw.table.manifest import find_version, read_manifest
from lance_fw.table.rows import DEFAULT_BATCH_SIZE
from lance_fw.table.snapshot import Snapshot

ROW_ADDRESS = "_rowaddr"
#: Fragments with more physical rows than this are read by several tasks.
DEFAULT_ROWS_PER_PARTITION = 1 << 20


@dataclass
class FragmentSlice(InputPartition):
    """Physical rows [start, stop) of one fragment of one dataset version."""

    uri: str
    version: int
    fragment_id: int
    start: int
    stop: int


def open_snapshot(uri: str, version: int, storage_options: dict | None) -> Snapshot:
    """The published ``version`` of the table at ``uri`` as a ``Snapshot``. Not cached across tasks:
    a dataset deleted and created again at the same uri has another manifest for the same number."""
    storage = resolve_storage(uri, storage_options)
    manifest, index_section = read_manifest(storage, find_version(storage, uri, version).path)
    return Snapshot(uri, storage, manifest, index_section, storage_options=storage_options)


class LanceReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType):
        """``options`` as checked by ``check_options``; ``schema``: what Spark planned the query with."""
        self.uri = dataset_uri(options)
        self.storage_options = storage_options(options)
        self.filter = options.get(FILTER) or None
        self.batch_size = int_option(options, BATCH_SIZE, DEFAULT_BATCH_SIZE) or DEFAULT_BATCH_SIZE
        self.rows_per_partition = (
            int_option(options, ROWS_PER_PARTITION, DEFAULT_ROWS_PER_PARTITION) or DEFAULT_ROWS_PER_PARTITION
        )
        self.with_row_address = bool_option(options, WITH_ROW_ADDRESS)
        # Pin the snapshot now: every task reads the same version even if writers commit meanwhile.
        ds = LanceDataset(self.uri, storage_options=self.storage_options, **version_options(options))
        self.version = ds.version
        self.columns = [f.name for f in schema.fields if f.name != ROW_ADDRESS]
        self.schema = schema
        check_read_schema(ds, schema, self.columns)
        if self.filter:
            parse_filter(self.filter, ds.schema)  # fail at planning time, not in every task
        from pyspark.sql.pandas.types import to_arrow_schema

        self.target = to_arrow_schema(schema, timezone="UTC")
        self._fragments = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]

    def partitions(self) -> list[FragmentSlice]:
        out = self.slices(self.version, self._fragments)
        return out or [FragmentSlice(self.uri, self.version, -1, 0, 0)]  # Spark needs one partition

    def slices(self, version: int, fragments: list[tuple[int, int]]) -> list[FragmentSlice]:
        """Row ranges of at most ``rows_per_partition`` over ``(fragment id, physical rows)``."""
        return [
            FragmentSlice(self.uri, version, frag_id, start, min(start + self.rows_per_partition, rows))
            for frag_id, rows in fragments
            for start in range(0, max(rows, 1), self.rows_per_partition)
        ]

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        if partition.start >= partition.stop:
            return
        snapshot = open_snapshot(partition.uri, partition.version, self.storage_options)
        fragment = next((f for f in snapshot.fragments if f.id == partition.fragment_id), None)
        if fragment is None:
            return
        # A schema of no columns (``columns=[]``, ``.schema("")``): read the row addresses so the
        # batches know their rows, then hand Spark batches of no columns with that many rows
        # (``from_arrays([])`` would make every batch, and so the DataFrame, empty).
        bare = not self.target.names
        for batch in snapshot.read_fragment(
            fragment,
            snapshot.fields(self.columns),
            filter_plan(snapshot, self.filter),
            self.batch_size,
            self.with_row_address or bare,
            start=partition.start,
            stop=partition.stop,
        ):
            yield _rows_only(batch.num_rows) if bare else relabel(batch, self.target)


def _rows_only(rows: int) -> pa.RecordBatch:
    """A batch of ``rows`` rows and no columns."""
    return pa.RecordBatch.from_struct_array(
        pa.StructArray.from_buffers(pa.struct([]), rows, [None], children=[])
    )


def check_read_schema(ds: LanceDataset, schema: StructType, columns: list[str]) -> None:
    """Refuse to read version ``ds`` as ``schema`` (what Spark planned) unless every column exists
    there with the same Spark type: reading a changed column would need a lossy cast."""
    missing = [c for c in columns if c not in ds.schema.names]
    if missing:
        raise InvalidArgumentError(
            f"{ds.uri}: no column(s) {missing} at version {ds.version}; the dataset has {ds.schema.names}"
        )
    stored = spark_schema(pa.schema([ds.schema.field(c) for c in columns]))
    for name, stored_type, planned in type_mismatches(stored, {c: schema[c].dataType for c in columns}):
        raise SchemaError(
            f"{ds.uri}: column {name!r} is {stored_type.simpleString()} at version "
            f"{ds.version} but the query expects {planned.simpleString()} (the schema changed "
            "after the DataFrame was planned, or .schema() names another type); "
            "create the DataFrame again"
        )


def read(
    spark: SparkSession,
    path: str,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    version: int | str | None = None,
    storage_options: dict[str, str] | None = None,
) -> DataFrame:
    """A DataFrame over one version of the dataset at ``path`` that reads only ``columns`` (all for
    None) and only the rows matching ``filter`` (Lance SQL, as ``to_table(filter=...)``; applied
    exactly on the executors, late materialised).

    Why a function: Spark's Python data sources get neither column pruning nor (safely) filter
    pushdown, so ``spark.read.format("lance").load(p).select("a").filter(...)`` decodes every column
    of every row. The version is pinned here (the latest when None), so every query on the DataFrame
    reads the same rows, and ``count()`` without a filter is answered from the manifest (fragment row
    counts minus deletion counts) instead of a scan.
    """
    ds = LanceDataset(path, version=version, storage_options=storage_options)
    if columns is not None:
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of column names, not a string")
        missing = [c for c in columns if c not in ds.schema.names]
        if missing:
            raise InvalidArgumentError(f"{path}: no column(s) {missing}; the dataset has {ds.schema.names}")
    if filter is not None:
        if not isinstance(filter, str):
            raise InvalidArgumentError(f"filter must be a Lance SQL string, not {type(filter).__name__}")
        parse_filter(filter, ds.schema)  # a bad filter fails here, before Spark plans anything
    options = {PATH: ds.uri, VERSION: str(ds.version)}
    if columns is not None:
        options[COLUMNS] = json.dumps(list(columns))
    if filter:
        options[FILTER] = filter
    if storage_options:
        options[STORAGE_OPTIONS] = json.dumps(storage_options)
    df = spark.read.format("lance").options(**options).load()
    if not filter:
        df.__class__ = _with_metadata_count(type(df))
        df._lance_count_from = (ds.uri, ds.version, storage_options)  # type: ignore[attr-defined]
    return df


#: Spark's DataFrame class -> its subclass with the metadata count (one per class, made on first use).
_COUNTING_CLASSES: dict[type, type] = {}


def _with_metadata_count(base: type) -> type:
    """``base`` (Spark's DataFrame class) whose ``count()`` reads the pinned version's manifest.

    Only the DataFrame ``read`` returns gets it: any transformation (``filter``, ``select``,
    ``limit``...) makes a plain DataFrame again, whose ``count()`` Spark computes."""

    def count(self: Any) -> int:
        uri, version, options = self._lance_count_from
        return LanceDataset(uri, version=version, storage_options=options).count_rows()

    count.__doc__ = "Rows of the pinned dataset version, from the manifest (no Spark job)."
    if base not in _COUNTING_CLASSES:
        _COUNTING_CLASSES[base] = type(f"Lance{base.__name__}", (base,), {"count": count})
    return _COUNTING_CLASSES[base]
