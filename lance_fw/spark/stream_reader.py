"""Streaming reads (which lance-spark lacks): dataset versions are the offsets.

A micro-batch from version ``a`` to ``b`` reads the fragments present at ``b`` that were not at
``a`` (fragment ids are never reused), so appends stream through exactly once. Rows deleted or
rewritten in fragments already streamed are not retracted, as with any append-only source; an
overwrite streams the new contents as new rows. ``starting_version`` (default 0: everything)
chooses where a new query starts; a restarted query continues from its checkpoint.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamReader

from lance_fw.api.dataset import LanceDataset
from lance_fw.io.storage import resolve_storage
from lance_fw.spark.options import int_option
from lance_fw.spark.reader import FragmentSlice, LanceReader
from lance_fw.table.manifest import list_versions


class LanceStreamReader(DataSourceStreamReader):
    def __init__(self, options, schema):
        self._reader = LanceReader(options, schema)  # column/filter/batch options, and the Arrow target
        self._start = int_option(options, "starting_version", 0) or 0

    def _latest(self) -> int:
        """Called every trigger: lists the versions only (no manifest is read)."""
        r = self._reader
        return list_versions(resolve_storage(r.uri, r.storage_options), r.uri)[-1].version

    def initialOffset(self) -> dict:
        return {"version": self._start}

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        return {"version": self._latest()}

    def reportLatestOffset(self) -> dict:
        return {"version": self._latest()}

    def partitions(self, start: dict, end: dict) -> list[FragmentSlice]:
        first, last = int(start["version"]), int(end["version"])
        if last <= first:
            return []
        r = self._reader
        seen = set()
        if first > 0:
            seen = {f.id for f in LanceDataset(r.uri, version=first, storage_options=r.storage_options)
                    ._manifest.fragments}
        new = LanceDataset(r.uri, version=last, storage_options=r.storage_options)._manifest.fragments
        return r.slices(last, [(f.id, f.physical_rows) for f in new if f.id not in seen])

    def read(self, partition: FragmentSlice):
        return self._reader.read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: versions stay readable until cleanup_old_versions removes them."""
