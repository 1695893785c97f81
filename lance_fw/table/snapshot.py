"""``Snapshot``: one published version of a table, as the layers below the façade see it.

Why: ``table/`` and ``query/`` used to take a ``LanceDataset`` and read its private attributes
(``ds._manifest``, ``ds._storage``, ``ds._filter_plan``), so the façade was where the library lived and
the layers depended on it upward. A snapshot is a frozen value — the manifest, the storage it was read
from, the uri and the options a commit needs — that ``api/`` builds once per version and hands down.
Nothing in it changes when the ``LanceDataset`` that made it moves to another version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.errors import InvalidArgumentError
from lance_fw.io.storage import Storage
from lance_fw.schema import LanceField, LanceSchema
from lance_fw.table.fragment import FragmentReader
from lance_fw.table.matcher import Matcher
from lance_fw.table.rows import Rows, Skip
from lance_fw.table.transaction import Operation, commit, undo_unless_published
from lance_fw.table.version_cache import VersionCache


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of the table at ``uri``: what reads and commits below ``api/`` need."""

    uri: str
    storage: Storage
    manifest: table_pb2.Manifest
    index_section: table_pb2.IndexSection | None = None
    #: The options ``storage`` was resolved with: writers resolving new files pass them on.
    storage_options: dict | None = None
    #: pylance's ``commit_lock`` given to ``dataset()``: every commit from this snapshot runs under it.
    commit_lock: Any = field(default=None)
    #: What reads of this version parse once (data file metadata, deletion vectors).
    cache: VersionCache = field(default_factory=VersionCache, compare=False, repr=False)

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def fragments(self) -> Sequence[table_pb2.DataFragment]:
        return self.manifest.fragments

    @cached_property
    def lance_schema(self) -> LanceSchema:
        return LanceSchema.from_protos(self.manifest.fields, self.manifest.schema_metadata)

    @cached_property
    def schema(self) -> pa.Schema:
        return self.lance_schema.to_arrow()

    def commit(self, operation: Operation, undo: Callable[[], None], read_version: int | None = None) -> int:
        """Commit ``operation`` on top of this version (or ``read_version``), under this snapshot's
        ``commit_lock``; ``undo`` removes the files the operation wrote unless the version may have
        been published (``transaction.undo_unless_published``). Returns the version created."""
        with undo_unless_published(undo):
            return commit(
                self.storage,
                self.uri,
                operation,
                commit_lock=self.commit_lock,
                read_version=self.version if read_version is None else read_version,
            )

    @property
    def data_storage_version(self) -> str:
        """The file format version of the table's data files ("0.1" when the manifest names none)."""
        return self.manifest.data_format.version or "0.1"

    @property
    def max_field_id(self) -> int:
        return self.lance_schema.max_field_id()

    def fields(self, columns: Sequence[str] | None) -> list[LanceField]:
        """The schema fields of ``columns`` (all for None); an unknown name raises here, before any read."""
        if columns is None:
            return list(self.lance_schema.fields)
        if isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of column names")
        return [self.lance_schema.field(c) for c in columns]

    def fragment_reader(self, frag: table_pb2.DataFragment) -> FragmentReader:
        return FragmentReader(self.storage, self.uri, frag, self.lance_schema, self.cache)

    def read_fragment(
        self,
        frag: table_pb2.DataFragment,
        fields: list[LanceField],
        plan: tuple[Matcher, list[LanceField]] | tuple[Matcher, list[LanceField], Any] | None,
        batch_size: int,
        with_row_address: bool = False,
        with_row_id: bool = False,
        start: int = 0,
        stop: int | None = None,
        live: tuple[int, int] | None = None,
        whole: bool = False,
        first_batch: int | None = None,
        most: int | None = None,
        skip: Skip | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Live rows of physical rows [start, stop) of one fragment, or its live rows [lo, hi) given
        as ``live``; with a filter ``plan`` (query.filter_plan), late materialised (the filter's
        columns first, the rest only for matches). When the plan's scalar indices cover the
        fragment, only their candidate rows are read (and re-checked by the filter). ``whole``:
        the caller takes every batch (``Rows.whole``); ``first_batch``: a short first batch
        (``Rows.first_batch``; plain reads only); ``most``: the rows the consumer may use at most
        (``Rows.most``; filtered reads); ``skip``: rows to drop first (``Rows.skip``; filtered reads
        without an index drop them before fetching their columns)."""
        reader = self.fragment_reader(frag)
        if live is not None and live[1] > live[0]:
            first, last = reader.physical_of_live(np.array([live[0], live[1] - 1]))
            start, stop = int(first), int(last) + 1
        try:
            rows = Rows(
                fields, batch_size, with_row_address, with_row_id, start, stop, whole, first_batch, most, skip
            )
            index = None if plan is None else _index_of(plan)
            if plan is None:
                yield from reader.batches(rows)
            elif index is not None and index.exact and (excluded := index.excluded(frag.id)) is not None:
                yield from reader.exact_batches_except(rows, excluded)  # (most rows: never listed)
            elif index is not None and (candidates := index.candidates(frag.id)) is not None:
                yield from reader.candidate_batches(rows, plan[1], plan[0], candidates, index.exact)
            else:
                yield from reader.filtered_batches(rows, plan[1], plan[0])
        finally:
            reader.close()


def _index_of(plan: tuple) -> Any:
    """A filter plan's index part (``query.index_plan.IndexPlan``), None without one."""
    return plan[2] if len(plan) > 2 else None
