"""The BTREE scalar index type (issue 13), byte-compatible with pylance 14's ``create_scalar_index(col,
"BTREE")``.

Files (both ordinary Lance files), as pylance 14 writes them:

* ``page_data.lance``: ``values`` (the column's type, nullable) and ``ids`` (``uint64`` row
  addresses, not null), every indexed row once, sorted by value with nulls first (floats in
  IEEE total order: ``-NaN, -inf, ..., -0.0, 0.0, ..., inf, NaN``). pylance's order among equal
  values is not the row-address order; lance_fw writes ties in row-address order.
* ``page_lookup.lance``: one row per page of ``batch_size`` consecutive rows of ``page_data``:
  ``min``, ``max`` (the column's type; ``min`` is null when the page holds a null, both when it
  holds only nulls), ``null_count`` (``uint32``) and ``page_idx`` (``uint32``); schema metadata
  ``batch_size`` (``"4096"``, or the ``zone_size`` parameter) and ``range_partitioned = "false"``.

The manifest's ``index_details`` is an empty ``/lance.table.BTreeIndexDetails`` and its
``index_version`` 0. Training sorts in memory with numpy / pyarrow (a million rows in about a
second); the reader is in ``index_btree_reader``, the key order in ``index_btree_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw.errors import IndexColumnTypeError, InvalidArgumentError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import Batches, IndexFileStore, Params
from lance_fw_plugins.index_btree_keys import domain_for
from lance_fw_plugins.index_btree_reader import (
    BATCH_SIZE_KEY,
    DEFAULT_BATCH_SIZE,
    IDS_COLUMN,
    LOOKUP_FILE,
    MAX_COLUMN,
    MIN_COLUMN,
    NULL_COUNT_COLUMN,
    PAGE_IDX_COLUMN,
    PAGES_FILE,
    RANGE_PARTITIONED_KEY,
    VALUES_COLUMN,
    BTreeReader,
)

#: The parameter pylance 14 honours for a BTREE (``IndexConfig("btree", {"zone_size": n})``):
#: rows per page, written as ``batch_size``. Its other field, ``range_id``, is deprecated and ignored
#: by pylance 14 (it logs a warning); lance_fw refuses it rather than ignore it.
ZONE_SIZE_PARAM = "zone_size"
RANGE_ID_PARAM = "range_id"


class BTreeIndexType:
    """``ScalarIndexType`` for BTREE (see the module docstring)."""

    name = "BTREE"
    display_name = "BTree"
    type_url = "/lance.table.BTreeIndexDetails"
    index_version = 0
    #: pylance 14 writes 1 on a dataset with stable row ids, holding row addresses there (0: ids)
    stable_index_version = 1

    def holds_row_ids(self, index_version: int) -> bool:
        return index_version < self.stable_index_version

    def details(self, params: Params) -> bytes:
        """The empty ``BTreeIndexDetails`` message."""
        return b""

    def check(self, field: pa.Field, params: Params) -> None:
        """Refuse a column type without a key order here (lists, structs, intervals ...) and any
        parameter but a positive integer ``zone_size``."""
        if domain_for(field.type) is None:
            raise IndexColumnTypeError(
                f"a BTREE index on column {field.name!r} of type {field.type} is not supported "
                "(integer, float, boolean, string, binary, decimal and temporal columns are)"
            )
        _batch_size(params)

    def train(self, batches: Batches, field: pa.Field, params: Params, store: IndexFileStore) -> None:
        """Sort (value, row address) pairs by value, nulls first, ties in address order, and write
        ``page_data.lance`` and ``page_lookup.lance``."""
        self.check(field, params)
        batch_size = _batch_size(params)
        domain = domain_for(field.type)
        assert domain is not None
        values_parts: list[pa.Array] = []
        addr_parts: list[np.ndarray] = []
        for batch in batches:
            values_parts.append(batch.column("value"))
            addr_parts.append(
                np.asarray(batch.column("_rowaddr").to_numpy(zero_copy_only=False), dtype=np.uint64)
            )
        values = (
            pa.chunked_array(values_parts, type=field.type).combine_chunks()
            if values_parts
            else pa.array([], field.type)
        )
        addrs = np.concatenate(addr_parts) if addr_parts else np.zeros(0, dtype=np.uint64)
        nulls = np.flatnonzero(~np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
        order = np.concatenate([nulls, domain.sort_order(values)]).astype(np.int64)
        sorted_values = values.take(pa.array(order, pa.int64()))
        data = pa.Table.from_arrays(
            [sorted_values, pa.array(addrs[order], pa.uint64())],
            schema=pa.schema(
                [pa.field(VALUES_COLUMN, field.type), pa.field(IDS_COLUMN, pa.uint64(), nullable=False)]
            ),
        )
        store.write_table(PAGES_FILE, data)
        store.write_table(
            LOOKUP_FILE,
            _lookup(sorted_values, len(nulls), batch_size, field.type),
            {BATCH_SIZE_KEY: str(batch_size), RANGE_PARTITIONED_KEY: "false"},
        )

    def load(self, store: IndexFileStore, field: pa.Field) -> BTreeReader:
        """Open a BTREE index (pylance's or lance_fw's files); reads the page lookup only."""
        return BTreeReader(store, field)


def _lookup(sorted_values: pa.Array, num_nulls: int, batch_size: int, value_type: pa.DataType) -> pa.Table:
    """One row per page: nulls sort first, so a page's first value is its min (null when the page
    holds a null) and its last value its max."""
    n = len(sorted_values)
    starts = np.arange(0, n, batch_size, dtype=np.int64)
    ends = np.minimum(starts + batch_size, n)
    null_counts = np.clip(num_nulls - starts, 0, ends - starts).astype(np.uint32)
    return pa.Table.from_arrays(
        [
            sorted_values.take(pa.array(starts)),
            sorted_values.take(pa.array(ends - 1)),
            pa.array(null_counts, pa.uint32()),
            pa.array(np.arange(len(starts), dtype=np.uint32), pa.uint32()),
        ],
        schema=pa.schema(
            [
                pa.field(MIN_COLUMN, value_type),
                pa.field(MAX_COLUMN, value_type),
                pa.field(NULL_COUNT_COLUMN, pa.uint32(), nullable=False),
                pa.field(PAGE_IDX_COLUMN, pa.uint32(), nullable=False),
            ]
        ),
    )


def _batch_size(params: Mapping[str, Any]) -> int:
    """Rows per page from ``params`` (``zone_size``); refuses every other parameter by name."""
    for key in params:
        if key == RANGE_ID_PARAM:
            raise InvalidArgumentError(
                "BTREE parameter 'range_id' is not supported (pylance 14 ignores it as deprecated)"
            )
        if key != ZONE_SIZE_PARAM:
            raise InvalidArgumentError(
                f"unknown BTREE parameter {key!r} (the only one is {ZONE_SIZE_PARAM!r})"
            )
    size = params.get(ZONE_SIZE_PARAM)
    if size is None:
        return DEFAULT_BATCH_SIZE
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or not 0 < int(size) < 2**32:
        raise InvalidArgumentError(
            f"BTREE parameter {ZONE_SIZE_PARAM!r} must be a positive integer, not {size!r}"
        )
    return int(size)


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """The BTREE index type."""
    return {BTreeIndexType.name: BTreeIndexType()}
