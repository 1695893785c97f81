"""The ``lance`` Python data source: schema, reader and writers from the options Spark passes.

Options are listed in lance_fw/spark/options.py (and docs/spark.md); unknown keys raise. There is
deliberately no ``pushFilters``: Spark 4.3 either refuses it (the default) or reuses a reader's
pushed filters for later queries (wrong results).

Spark calls ``schema()`` once, when the DataFrame (or temporary view) is created, and ``reader()``
when it plans a query on it -- Spark 4.3 keeps that planned reader per DataFrame and reuses it for
later queries without a pushable filter, so a later query may read the version an earlier one
resolved (docs/spark.md). The reader resolves the version once for the whole query (every task
reads that snapshot) and checks that its columns still have the types ``schema()`` reported: an
overwrite in between that changed a type is a ``SchemaError``, never a lossy cast of the new values
to the old type. (Pinning the version in ``schema()`` instead would make every reader Spark plans
for a DataFrame read the version of its creation.)
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import InvalidArgumentError
from lance_fw.io.storage import resolve_storage
from lance_fw.spark.catalog import create_options, is_catalog_create, table_options, tag_schema, untag_schema
from lance_fw.spark.options import (
    ALLOW_PLUGIN_ENCODINGS,
    COMMIT_MESSAGE,
    DATA_STORAGE_VERSION,
    MAX_BYTES_PER_FILE,
    MAX_ROWS_PER_FILE,
    READ_OPTIONS,
    STREAM_READ_OPTIONS,
    STREAM_WRITE_OPTIONS,
    WITH_ROW_ADDRESS,
    WRITE_OPTIONS,
    bool_option,
    check_options,
    columns_option,
    dataset_uri,
    int_option,
    storage_options,
    version_options,
)
from lance_fw.spark.reader import ROW_ADDRESS, LanceReader
from lance_fw.spark.stream_reader import LanceStreamReader
from lance_fw.spark.types import spark_schema, write_schema
from lance_fw.spark.writer import LanceArrowWriter, LanceStreamWriter, StreamIdentity
from lance_fw.table.manifest import list_versions
from lance_fw.table.write import (
    COMMIT_MESSAGE_KEY,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    WritePlan,
    plan_write,
)


class LanceDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "lance"

    def schema(self) -> StructType:
        catalog = is_catalog_create(self.options)  # CREATE TABLE ... USING lance LOCATION / OPTIONS
        raw = create_options(self.options) if catalog else self.options
        # schema() cannot tell a batch read from a streaming one: accept the options of either
        options = check_options(raw, {**READ_OPTIONS, **STREAM_READ_OPTIONS}, "read")
        ds = LanceDataset(
            dataset_uri(options), storage_options=storage_options(options), **version_options(options)
        )
        arrow = ds.schema
        columns = columns_option(options)
        if columns is not None:
            missing = [c for c in columns if c not in arrow.names]
            if missing:
                raise InvalidArgumentError(
                    f"option 'columns': no column(s) {missing}; the dataset has {arrow.names}"
                )
            arrow = pa.schema([arrow.field(c) for c in columns])
        if bool_option(options, WITH_ROW_ADDRESS):
            arrow = arrow.append(pa.field(ROW_ADDRESS, pa.int64(), False))
        struct = spark_schema(arrow)
        return tag_schema(struct, options) if catalog else struct

    def reader(self, schema: StructType) -> LanceReader:
        options = check_options(table_options(schema, self.options, writing=False), READ_OPTIONS, "read")
        return LanceReader(options, untag_schema(schema))

    def streamReader(self, schema: StructType) -> LanceStreamReader:
        options = table_options(schema, self.options, writing=False)
        return LanceStreamReader(
            check_options(options, STREAM_READ_OPTIONS, "streaming read"), untag_schema(schema)
        )

    def _plan(self, options: dict[str, str], schema: StructType, overwrite: bool) -> WritePlan:
        uri = dataset_uri(options)
        storage = storage_options(options)
        existing = None
        if not overwrite and list_versions(resolve_storage(uri, storage), uri):
            existing = LanceDataset(uri, storage_options=storage).schema
        target = write_schema(schema, existing)
        return plan_write(
            uri,
            target,
            "overwrite" if overwrite else "append",
            options.get(DATA_STORAGE_VERSION) or None,
            storage,
            int_option(options, MAX_ROWS_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE) or DEFAULT_MAX_ROWS_PER_FILE,
            int_option(options, MAX_BYTES_PER_FILE, DEFAULT_MAX_BYTES_PER_FILE) or DEFAULT_MAX_BYTES_PER_FILE,
            allow_plugin_encodings=bool_option(options, ALLOW_PLUGIN_ENCODINGS),
        )

    @staticmethod
    def _properties(options: dict[str, str]) -> dict[str, str]:
        properties = {"lance_fw.writer": "spark"}
        if options.get(COMMIT_MESSAGE):
            properties[COMMIT_MESSAGE_KEY] = options[COMMIT_MESSAGE]
        return properties

    def writer(self, schema: StructType, overwrite: bool) -> LanceArrowWriter:
        options = check_options(table_options(schema, self.options, writing=True), WRITE_OPTIONS, "write")
        return LanceArrowWriter(
            self._plan(options, untag_schema(schema), overwrite), self._properties(options)
        )

    def streamWriter(self, schema: StructType, overwrite: bool) -> LanceStreamWriter:
        options = table_options(schema, self.options, writing=True)
        options = check_options(options, STREAM_WRITE_OPTIONS, "streaming write")
        return LanceStreamWriter(
            self._plan(options, untag_schema(schema), overwrite),
            self._properties(options),
            StreamIdentity.from_options(options),
        )
