"""Streaming reads (which lance-spark lacks): dataset versions are the offsets.

A micro-batch from version ``a`` to ``b`` walks the versions in ``(a, b]`` and emits what each
one's transaction added, read at that version:

- Append: its new fragments (fragment ids are never reused);
- Overwrite (and the create that makes version 1): all of the new contents;
- Update / merge_insert: the fragments holding the new versions of updated and inserted rows
  (the old versions are not retracted); an update that rewrote columns in place is refused;
- Delete: nothing (rows already emitted are not retracted, as with any append-only source);
- Rewrite (compaction), CreateIndex, Merge / Project (schema evolution), DataReplacement,
  UpdateConfig and the like: nothing, because no row was added. Comparing fragment ids between
  ``a`` and ``b`` instead re-emitted every compacted row.
- Restore and Clone are refused: the rows they bring back may or may not have been emitted.

Reading an intermediate version needs its manifest: a stream that fell behind
``cleanup_old_versions`` fails with the versions named. ``starting_version`` (default 0:
everything) chooses where a new query starts; a restarted query continues from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from lance_fw.api.dataset import LanceDataset
from lance_fw.errors import DatasetNotFoundError, UnsupportedFeatureError
from lance_fw.io.storage import Storage, resolve_storage
from lance_fw.spark.options import STARTING_VERSION, int_option
from lance_fw.spark.reader import FragmentSlice, LanceReader, check_read_schema
from lance_fw.table.manifest import find_version, list_versions, read_manifest, read_transaction

#: Transactions that add no row.
_EMIT_NOTHING = {
    "delete",
    "rewrite",
    "create_index",
    "merge",
    "project",
    "update_config",
    "data_replacement",
    "reserve_fragments",
    "update_mem_wal_state",
    "update_bases",
}
#: Transactions whose new fragment ids hold new rows.
_EMIT_NEW_FRAGMENTS = {"append", "update"}
#: ``Transaction.Update.update_mode`` of an update that rewrote columns inside existing fragments.
_REWRITE_COLUMNS = 1


class LanceStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._reader = LanceReader(options, schema)  # column/filter/batch options, and the Arrow target
        self._start = int_option(options, STARTING_VERSION, 0) or 0

    def _latest(self) -> int:
        """Called every trigger: lists the versions only (no manifest is read)."""
        r = self._reader
        return find_version(resolve_storage(r.uri, r.storage_options), r.uri, None).version

    def initialOffset(self) -> dict:
        return {"version": self._start}

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        return {"version": self._latest()}

    def reportLatestOffset(self) -> dict:
        return {"version": self._latest()}

    def partitions(self, start: dict, end: dict) -> list[FragmentSlice]:
        first, last = int(start["version"]), int(end["version"])
        if last <= first:
            return []
        r = self._reader
        storage = resolve_storage(r.uri, r.storage_options)
        entries = {e.version: e for e in list_versions(storage, r.uri) if first <= e.version <= last}
        gone = [v for v in range(max(first, 1), last + 1) if v not in entries]
        if gone:
            raise DatasetNotFoundError(
                f"{r.uri}: versions {gone} were removed (cleanup_old_versions) before this "
                f"stream read them; restart the query with a later starting_version"
            )
        seen = (
            {f.id for f in read_manifest(storage, entries[first].path)[0].fragments} if first > 0 else set()
        )
        out: list[FragmentSlice] = []
        for version in range(first + 1, last + 1):
            manifest = read_manifest(storage, entries[version].path)[0]
            ids = {f.id for f in manifest.fragments}
            emit = self._emitted(storage, entries[version].path, version, ids, seen)
            if emit:
                check_read_schema(
                    LanceDataset(r.uri, version=version, storage_options=r.storage_options),
                    r.schema,
                    r.columns,
                )
                out += r.slices(
                    version, [(f.id, f.physical_rows) for f in manifest.fragments if f.id in emit]
                )
            seen = ids
        return out

    def _emitted(
        self, storage: Storage, path: str, version: int, ids: set[int], before: set[int]
    ) -> set[int]:
        """Ids of the fragments of ``version`` whose rows the stream emits (see the module docstring)."""
        txn = read_transaction(storage, self._reader.uri, path)
        if txn is None:
            raise UnsupportedFeatureError(
                f"{self._reader.uri}: version {version} records no transaction, so a "
                "stream cannot tell which rows it added"
            )
        kind = txn.WhichOneof("operation")
        if kind == "overwrite":
            return ids
        if kind in _EMIT_NOTHING:
            return set()
        if kind in _EMIT_NEW_FRAGMENTS:
            if kind == "update" and txn.update.update_mode == _REWRITE_COLUMNS:
                raise UnsupportedFeatureError(
                    f"{self._reader.uri}: version {version} updated columns in place; "
                    "a stream cannot emit the changed rows"
                )
            return ids - before
        raise UnsupportedFeatureError(
            f"{self._reader.uri}: version {version} is a {kind}, which may bring back rows "
            "the stream already emitted; restart the query with a later starting_version"
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self._reader.read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: versions stay readable until cleanup_old_versions removes them."""
