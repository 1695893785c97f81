"""The ``lance`` Python data source: schema, reader and writers from the options Spark passes.

Read options: ``version``, ``columns`` (JSON list or comma-separated), ``filter`` (Lance SQL,
applied exactly), ``batch_size``, ``rows_per_partition``, ``with_row_address``,
``storage_options`` (JSON). Write options: ``max_rows_per_file``, ``max_bytes_per_file``,
``data_storage_version``, ``commit_message``; streaming adds ``stream_id`` (defaults to the
query id kept in the checkpoint). Streaming reads take ``starting_version``. There is deliberately no ``pushFilters``: Spark 4.3 either
refuses it (the default) or reuses a reader's pushed filters for later queries (wrong results).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource

from lance_fw.api.dataset import LanceDataset
from lance_fw.table.write import (COMMIT_MESSAGE_KEY, DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, WritePlan,
                                plan_write)
from lance_fw.errors import InvalidArgumentError
from lance_fw.io.storage import resolve_storage
from lance_fw.spark.options import bool_option, columns_option, dataset_uri, int_option, storage_options
from lance_fw.spark.reader import ROW_ADDRESS, LanceReader
from lance_fw.spark.stream_reader import LanceStreamReader
from lance_fw.spark.types import spark_schema, write_schema
from lance_fw.spark.writer import LanceArrowWriter, LanceStreamWriter, stream_identity
from lance_fw.table.manifest import list_versions


class LanceDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "lance"

    def schema(self):
        ds = LanceDataset(dataset_uri(self.options), version=int_option(self.options, "version"),
                          storage_options=storage_options(self.options))
        arrow = ds.schema
        columns = columns_option(self.options)
        if columns is not None:
            missing = [c for c in columns if c not in arrow.names]
            if missing:
                raise InvalidArgumentError(f"option 'columns': no column(s) {missing}; the dataset has {arrow.names}")
            arrow = pa.schema([arrow.field(c) for c in columns])
        if bool_option(self.options, "with_row_address"):
            arrow = arrow.append(pa.field(ROW_ADDRESS, pa.int64(), False))
        return spark_schema(arrow)

    def reader(self, schema) -> LanceReader:
        return LanceReader(self.options, schema)

    def streamReader(self, schema) -> LanceStreamReader:
        return LanceStreamReader(self.options, schema)

    def _plan(self, schema, overwrite: bool) -> WritePlan:
        uri = dataset_uri(self.options)
        options = storage_options(self.options)
        existing = None
        if not overwrite and list_versions(resolve_storage(uri, options), uri):
            existing = LanceDataset(uri, storage_options=options).schema
        target = write_schema(schema, existing)
        return plan_write(uri, target, "overwrite" if overwrite else "append",
                          self.options.get("data_storage_version") or None, options,
                          int_option(self.options, "max_rows_per_file", DEFAULT_MAX_ROWS_PER_FILE) or
                          DEFAULT_MAX_ROWS_PER_FILE,
                          int_option(self.options, "max_bytes_per_file", DEFAULT_MAX_BYTES_PER_FILE) or
                          DEFAULT_MAX_BYTES_PER_FILE)

    def _properties(self) -> dict:
        properties = {"lance_fw.writer": "spark"}
        if self.options.get("commit_message"):
            properties[COMMIT_MESSAGE_KEY] = self.options["commit_message"]
        return properties

    def writer(self, schema, overwrite: bool) -> LanceArrowWriter:
        return LanceArrowWriter(self._plan(schema, overwrite), self._properties())

    def streamWriter(self, schema, overwrite: bool) -> LanceStreamWriter:
        return LanceStreamWriter(self._plan(schema, overwrite), self._properties(), stream_identity(self.options))
