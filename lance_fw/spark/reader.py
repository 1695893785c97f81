"""Batch reads: one Spark input partition per fragment (large fragments split into row ranges).

Partitions are small picklable descriptions (uri, pinned version, fragment id, row range, columns,
filter); ``read`` runs on an executor, opens the dataset there, decodes only the requested and
filter columns, applies the Lance SQL filter exactly and yields Arrow batches relabelled to the
schema Spark expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import InvalidArgumentError, SchemaError
from lance_fw.query.filter import parse_filter
from lance_fw.spark.options import (
    BATCH_SIZE,
    FILTER,
    ROWS_PER_PARTITION,
    WITH_ROW_ADDRESS,
    bool_option,
    dataset_uri,
    int_option,
    storage_options,
    version_options,
)
from lance_fw.spark.types import relabel, same_spark_type, spark_schema
from lance_fw.table.fragment import DEFAULT_BATCH_SIZE

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


class LanceReader(DataSourceReader):
    def __init__(self, options: dict, schema):
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
        self._fragments = [(f.id, f.physical_rows) for f in ds._manifest.fragments]

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

    def read(self, partition: FragmentSlice) -> Iterator[pa.RecordBatch]:
        ds = LanceDataset(partition.uri, version=partition.version, storage_options=self.storage_options)
        fragment = next((f for f in ds._manifest.fragments if f.id == partition.fragment_id), None)
        if fragment is None or partition.start >= partition.stop:
            return
        fields = [ds.lance_schema.field(n) for n in self.columns]
        for batch in ds._read_fragment(
            fragment,
            fields,
            ds._filter_plan(self.filter),
            self.batch_size,
            self.with_row_address,
            start=partition.start,
            stop=partition.stop,
        ):
            yield relabel(batch, self.target)


def check_read_schema(ds: LanceDataset, schema, columns: list[str]) -> None:
    """Refuse to read version ``ds`` as ``schema`` (what Spark planned) unless every column exists
    there with the same Spark type: reading a changed column would need a lossy cast."""
    missing = [c for c in columns if c not in ds.schema.names]
    if missing:
        raise InvalidArgumentError(
            f"{ds.uri}: no column(s) {missing} at version {ds.version}; the dataset has {ds.schema.names}"
        )
    stored = spark_schema(pa.schema([ds.schema.field(c) for c in columns]))
    for field in stored.fields:
        planned = schema[field.name].dataType
        if not same_spark_type(planned, field.dataType):
            raise SchemaError(
                f"{ds.uri}: column {field.name!r} is {field.dataType.simpleString()} at version "
                f"{ds.version} but the query expects {planned.simpleString()} (the schema changed "
                "after the DataFrame was planned, or .schema() names another type); "
                "create the DataFrame again"
            )
