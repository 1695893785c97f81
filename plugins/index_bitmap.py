"""The BITMAP and LABEL_LIST scalar index types, byte-compatible with pylance 14.

Both write one file, ``bitmap_page_lookup.lance``: column ``keys`` (the column's type; for LABEL_LIST
the list's item type), one row per distinct value with the null key first and the rest ascending, and
column ``bitmaps`` (binary): each key's row addresses as a ``RowAddrTreeMap`` (see
``index_bitmap_format``). Schema metadata ``lance:index_stats = {"num_bitmaps":K}``. LABEL_LIST also
records the rows whose *list* is null (a null item is the null key; an empty list is in no bitmap) as a
``RowAddrTreeMap`` in global buffer 1, named by the metadata ``lance:label_list_nulls = "1"``: pylance
answers ``NOT array_has_any(...)`` from it, so a file without it would give wrong answers there.

Why load reads only ``keys``: a query touches a few keys, and their bitmaps are taken by row, so an index
over millions of rows opens without decoding every bitmap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw import interfaces as ix
from lance_fw._util import sets
from lance_fw.errors import (
    CorruptFileError,
    IndexColumnTypeError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import Batches, Params
from lance_fw_plugins.index_bitmap_format import (
    binary_parts,
    decode_row_addr_map,
    decode_row_addr_maps,
    encode_row_addr_map,
    encode_row_addr_maps,
    group_keys,
    sortable,
)
from lance_fw_plugins.index_common import EMPTY_ADDRESSES, is_key_type

#: The one file of a bitmap / label-list index.
LOOKUP_FILE = "bitmap_page_lookup.lance"
KEYS_COLUMN = "keys"
BITMAPS_COLUMN = "bitmaps"
#: Schema metadata: ``{"num_bitmaps":K}``.
INDEX_STATS_KEY = "lance:index_stats"
#: Schema metadata of LABEL_LIST: the global buffer number holding the null lists' row addresses.
LABEL_LIST_NULLS_KEY = "lance:label_list_nulls"
#: Global buffer 0 is the file descriptor; the null-lists map is appended as the next one.
LABEL_LIST_NULLS_BUFFER = 1
#: ``IndexMetadata.index_version`` pylance 14 writes (read from its manifests).
BITMAP_INDEX_VERSION = 0
LABEL_LIST_INDEX_VERSION = 1
#: Binary offsets are int32: all bitmaps of one index file must fit below this many bytes.
MAX_BINARY_BYTES = 2**31 - 1


def _same_value(stored: Any, value: Any) -> bool:
    """Whether converting ``value`` to the key type kept it (NaN stays NaN)."""
    if isinstance(value, float) and value != value:
        return isinstance(stored, float) and stored != stored
    try:
        return bool(stored == value)
    except TypeError:  # e.g. an aware and a naive datetime
        return False


def _refuse_params(name: str, params: Mapping[str, Any]) -> None:
    if params:
        raise InvalidArgumentError(
            f"{name} index takes no parameters; lance_fw does not implement {', '.join(sorted(params))}"
        )


def _stats_metadata(num_bitmaps: int) -> dict[str, str]:
    return {INDEX_STATS_KEY: json.dumps({"num_bitmaps": num_bitmaps}, separators=(",", ":"))}


def _training_table(batches: Iterable[pa.RecordBatch], field: pa.Field) -> tuple[pa.Array, np.ndarray]:
    """The ``value`` column (one array) and the rows' identifiers (``_rowaddr``, or ``_rowid`` on a
    dataset with stable row ids) as uint64, in ascending order."""
    batches = list(batches)
    if not batches:
        return pa.array([], field.type), EMPTY_ADDRESSES
    table = pa.Table.from_batches(batches)
    values = table.column("value").combine_chunks()
    addrs = np.asarray(table.column(1).to_numpy(), dtype=np.uint64)
    if len(addrs) > 1 and not bool(np.all(addrs[1:] > addrs[:-1])):
        order = np.argsort(addrs, kind="stable")
        values, addrs = values.take(pa.array(order)), addrs[order]
    return values, addrs


def _write_bitmaps(
    store: ix.IndexFileStore,
    codes: np.ndarray,
    addrs: np.ndarray,
    keys: pa.Array,
    metadata: dict[str, str],
    global_buffers: Sequence[bytes] = (),
) -> None:
    """Group ``addrs`` by key number ``codes`` and write the lookup file (duplicate pairs dropped;
    ``global_buffers``: the file's buffers 1, 2, ...)."""
    order = np.lexsort((addrs, codes))
    codes, addrs = codes[order], addrs[order]
    if len(codes) > 1:
        keep = np.ones(len(codes), dtype=bool)
        keep[1:] = (codes[1:] != codes[:-1]) | (addrs[1:] != addrs[:-1])
        codes, addrs = codes[keep], addrs[keep]
    offsets, data = encode_row_addr_maps(codes, addrs, len(keys))
    if offsets[-1] > MAX_BINARY_BYTES:
        raise UnsupportedFeatureError(
            f"bitmap index: {int(offsets[-1])} bytes of bitmaps exceed one binary column (2 GiB)"
        )
    bitmaps = pa.Array.from_buffers(
        pa.binary(), len(keys), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )
    schema = pa.schema([pa.field(KEYS_COLUMN, keys.type), pa.field(BITMAPS_COLUMN, pa.binary())])
    store.write_table(
        LOOKUP_FILE, pa.Table.from_arrays([keys, bitmaps], schema=schema), metadata, global_buffers
    )


# --- the reader ---------------------------------------------------------------------------------


class BitmapIndexReader:
    """An opened BITMAP or LABEL_LIST index: the keys in memory, bitmaps taken per query."""

    def __init__(self, store: ix.IndexFileStore, keys: pa.Array, label_list: bool) -> None:
        self.store = store
        self.label_list = label_list
        self.key_type = keys.type
        self.num_bitmaps = len(keys)
        nulls = np.flatnonzero(np.asarray(keys.is_null(), dtype=bool))
        #: File row of the null key (rows whose value, or for LABEL_LIST an item, is null).
        self.null_row: int | None = int(nulls[0]) if len(nulls) else None
        present = np.flatnonzero(~np.asarray(keys.is_null(), dtype=bool))
        values = sortable(keys.take(pa.array(present)))
        order = np.argsort(values, kind="stable")
        self._rows = present[order]
        self._sorted = values[order]
        self._list_nulls: np.ndarray | None = None

    # -- keys ---------------------------------------------------------------------------------
    def _probe(self, value: Any) -> Any | None:
        """``value`` in the keys' sortable form, or None when the key type cannot hold it exactly."""
        try:
            converted = pa.array([value], self.key_type)
        except (
            pa.ArrowInvalid,
            pa.ArrowTypeError,
            pa.ArrowNotImplementedError,
            TypeError,
            ValueError,
            OverflowError,
        ):
            return None
        if converted.null_count or not _same_value(converted[0].as_py(), value):
            return None  # e.g. 1.5 on an int column: pyarrow would truncate it
        return sortable(converted)[0]

    def _search(self, probe: Any, side: Literal["left", "right"]) -> int:
        """Where ``probe`` goes among the sorted keys (NaN last, -0.0 equal to 0.0)."""
        return int(np.searchsorted(self._sorted, probe, side))

    def _equal_rows(self, value: Any) -> np.ndarray:
        if value is None:
            return np.array([] if self.null_row is None else [self.null_row], dtype=np.int64)
        probe = self._probe(value)
        lo = self._search(probe, "left")
        hi = self._search(probe, "right")
        return self._rows[lo:hi]

    def _range_rows(self, q: ix.RangeQuery) -> np.ndarray:
        lo, hi = 0, len(self._sorted)
        if q.lower is not None:
            lo = int(self._search(self._probe(q.lower), "left" if q.lower_inclusive else "right"))
        if q.upper is not None:
            hi = int(self._search(self._probe(q.upper), "right" if q.upper_inclusive else "left"))
        return self._rows[lo:hi] if hi > lo else self._rows[:0]

    def _prefix_rows(self, prefix: str) -> np.ndarray:
        lo = int(self._search(prefix, "left"))
        stem = prefix.rstrip(chr(0x10FFFF))
        hi = len(self._sorted)
        if stem:  # the least string above every string that starts with the prefix (code-point order)
            hi = int(self._search(stem[:-1] + chr(ord(stem[-1]) + 1), "left"))
        return self._rows[lo:hi] if hi > lo else self._rows[:0]

    def _union(self, rows: np.ndarray) -> np.ndarray:
        """Sorted unique row addresses of the keys at file rows ``rows`` (one vectorised decode)."""
        if not len(rows):
            return EMPTY_ADDRESSES
        wanted = sets.unique(np.asarray(rows, dtype=np.int64))
        column = self.store.take_rows(LOOKUP_FILE, wanted, [BITMAPS_COLUMN]).column(BITMAPS_COLUMN)
        bitmaps = column.combine_chunks()
        if bitmaps.null_count:
            raise CorruptFileError(LOOKUP_FILE, "a key has a null bitmap")
        return sets.unique(decode_row_addr_maps(*binary_parts(bitmaps), LOOKUP_FILE))

    # -- ScalarIndexReader ----------------------------------------------------------------------
    def supports(self, query: ix.ScalarQuery) -> bool:
        """Which queries the index answers exactly (values the key type cannot hold: scan instead)."""
        if self.label_list:
            if isinstance(query, ix.ContainsAnyQuery | ix.ContainsAllQuery):
                return bool(query.values) and all(
                    v is None or self._probe(v) is not None for v in query.values
                )
            return False
        if isinstance(query, ix.EqualsQuery):
            return self._probe(query.value) is not None
        if isinstance(query, ix.InQuery):
            return bool(query.values) and all(self._probe(v) is not None for v in query.values)
        if isinstance(query, ix.RangeQuery):
            return all(b is None or self._probe(b) is not None for b in (query.lower, query.upper))
        if isinstance(query, ix.IsNullQuery):
            return True
        if isinstance(query, ix.PrefixQuery):
            return pa.types.is_string(self.key_type) or pa.types.is_large_string(self.key_type)
        return False

    def search(self, query: ix.ScalarQuery) -> ix.IndexSearchResult:
        """Rows matching ``query`` among the indexed rows (exact)."""
        if not self.supports(query):
            raise UnsupportedFeatureError(
                f"{'LABEL_LIST' if self.label_list else 'BITMAP'} index cannot answer {query!r}"
            )
        if isinstance(query, ix.ContainsAllQuery):
            result: np.ndarray | None = None
            for value in dict.fromkeys(query.values):
                found = self._union(self._equal_rows(value))
                result = found if result is None else np.intersect1d(result, found, assume_unique=True)
                if not len(result):
                    break
            return ix.IndexSearchResult(EMPTY_ADDRESSES if result is None else result.astype(np.uint64), True)
        if isinstance(query, ix.ContainsAnyQuery | ix.InQuery):
            rows = np.concatenate([self._equal_rows(v) for v in query.values])
        elif isinstance(query, ix.EqualsQuery):
            rows = self._equal_rows(query.value)
        elif isinstance(query, ix.RangeQuery):
            rows = self._range_rows(query)
        elif isinstance(query, ix.IsNullQuery):
            rows = self._equal_rows(None)
        else:
            assert isinstance(query, ix.PrefixQuery)
            rows = self._prefix_rows(query.prefix)
        return ix.IndexSearchResult(self._union(rows), True)

    def statistics(self) -> dict[str, Any]:
        """pylance's ``{"num_bitmaps": K}`` (the null key counts); an empty index reports ``{}``."""
        return {"num_bitmaps": self.num_bitmaps} if self.num_bitmaps else {}

    def list_null_addresses(self) -> np.ndarray:
        """LABEL_LIST: row addresses whose list is null (pylance's ``NOT array_has_any`` leaves them
        out as NULL); empty for BITMAP or a file without the buffer."""
        if self._list_nulls is None:
            number = self.store.schema_metadata(LOOKUP_FILE).get(LABEL_LIST_NULLS_KEY)
            if not self.label_list or number is None:
                self._list_nulls = EMPTY_ADDRESSES
            else:
                try:
                    index = int(number)
                except ValueError:
                    raise CorruptFileError(
                        LOOKUP_FILE, f"{LABEL_LIST_NULLS_KEY} = {number!r} is no buffer number"
                    ) from None
                self._list_nulls = decode_row_addr_map(
                    self.store.global_buffer(LOOKUP_FILE, index), LOOKUP_FILE
                )
        return self._list_nulls


def _load(store: ix.IndexFileStore, label_list: bool) -> BitmapIndexReader:
    if not store.exists(LOOKUP_FILE):
        raise CorruptFileError(LOOKUP_FILE, "missing: not a bitmap / label-list index directory")
    table = store.read_table(LOOKUP_FILE, [KEYS_COLUMN])
    return BitmapIndexReader(store, table.column(KEYS_COLUMN).combine_chunks(), label_list)


# --- the types ----------------------------------------------------------------------------------


class BitmapIndexType:
    """``create_scalar_index(col, "BITMAP")``: one bitmap of row addresses per distinct value."""

    name = "BITMAP"
    display_name = "Bitmap"
    type_url = "/lance.table.BitmapIndexDetails"
    index_version = BITMAP_INDEX_VERSION

    def holds_row_ids(self, index_version: int) -> bool:
        return True  # on a dataset with stable row ids, as pylance 14's

    def details(self, params: Params) -> bytes:
        """``BitmapIndexDetails`` (and ``LabelListIndexDetails``) is an empty message."""
        return b""

    #: the refusal of a key type ``is_key_type`` does not take, after the column's name
    key_refusal = (
        "has type {}; it must be an integer, float, bool, string, binary, decimal, fixed-size binary "
        "or temporal column"
    )

    def key_type(self, field: pa.Field) -> pa.DataType:
        """The type of the values the bitmaps are keyed by: the column's own."""
        return field.type

    def check(self, field: pa.Field, params: Params) -> None:
        """Keys of a type pylance's bitmaps take (scalars, see ``key_type``); no parameters."""
        key = self.key_type(field)
        if not is_key_type(key):
            raise IndexColumnTypeError(
                f"{self.name} index column {field.name} " + self.key_refusal.format(key)
            )
        _refuse_params(self.name, params)

    def train(self, batches: Batches, field: pa.Field, params: Params, store: ix.IndexFileStore) -> None:
        """Check, read the column with its row addresses, and write the bitmaps (``write``)."""
        self.check(field, params)
        values, addrs = _training_table(batches, field)
        self.write(store, values, addrs)

    def write(self, store: ix.IndexFileStore, values: pa.Array, addrs: np.ndarray) -> None:
        """Group the row addresses by value and write ``bitmap_page_lookup.lance``."""
        codes, keys = group_keys(values)
        _write_bitmaps(store, codes, addrs, keys, _stats_metadata(len(keys)))

    def load(self, store: ix.IndexFileStore, field: pa.Field) -> BitmapIndexReader:
        """Open a bitmap index (reads the keys)."""
        return _load(store, label_list=False)


class LabelListIndexType(BitmapIndexType):
    """``create_scalar_index(col, "LABEL_LIST")`` on a list column: one bitmap per distinct item."""

    name = "LABEL_LIST"
    display_name = "LabelList"
    type_url = "/lance.table.LabelListIndexDetails"
    index_version = LABEL_LIST_INDEX_VERSION

    key_refusal = (
        "has items of type {}; lance_fw indexes lists of integer, float, bool, string, binary, "
        "decimal or temporal items"
    )

    def key_type(self, field: pa.Field) -> pa.DataType:
        """The items' type of a list or large list column (anything else refused)."""
        t = field.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise IndexColumnTypeError(
                f"LABEL_LIST index column {field.name} has type {t}; it must be a list or large list"
            )
        return t.value_type

    def write(self, store: ix.IndexFileStore, values: pa.Array, addrs: np.ndarray) -> None:
        """Group row addresses by list item (a row once per distinct item), record the null lists."""
        items = pc.list_flatten(values)
        parents = np.asarray(pc.list_parent_indices(values).to_numpy(zero_copy_only=False), dtype=np.int64)
        codes, keys = group_keys(items)
        list_nulls = addrs[np.asarray(values.is_null(), dtype=bool)] if values.null_count else EMPTY_ADDRESSES
        metadata = _stats_metadata(len(keys))
        metadata[LABEL_LIST_NULLS_KEY] = str(LABEL_LIST_NULLS_BUFFER)
        _write_bitmaps(store, codes, addrs[parents], keys, metadata, [encode_row_addr_map(list_nulls)])

    def load(self, store: ix.IndexFileStore, field: pa.Field) -> BitmapIndexReader:
        """Open a label-list index (reads the keys; the null lists on demand)."""
        return _load(store, label_list=True)


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """BITMAP and LABEL_LIST."""
    return {"BITMAP": BitmapIndexType(), "LABEL_LIST": LabelListIndexType()}
