"""The ZONEMAP scalar index (pylance's ``create_scalar_index(col, "ZONEMAP")``), byte-compatible with
pylance 14.0.2 both ways.

One file, ``zonemap.lance``, one row per zone: ``min``, ``max`` (the column's type, nullable),
``null_count`` / ``nan_count`` (u32), ``fragment_id``, ``zone_start``, ``zone_length`` (u64); schema
metadata ``rows_per_zone``. A zone is ``rows_per_zone`` consecutive *live* rows of one fragment (zones
never cross fragments); ``zone_start`` is the offset of its first live row and ``zone_length`` the
span to its last live row, so deleted rows inside a zone are covered by the span but not counted.

Why a zone map answers with whole zones: it only knows each zone's bounds, so every row of every zone
that may hold a match is a candidate (``exact=False``) and the kernel re-checks the filter. It must
never miss a match, so every doubt (NaN, a query value that is not exactly representable in the
column type, a zone whose bounds were not recorded) keeps the zone.

pylance also stores the exact null rows as a RowAddrTreeMap global buffer (metadata
``null_bitmap = "<buffer index>"``, details ``has_null_bitmap``). The kernel's ``IndexFileStore`` has
no global buffers, so this module writes the legacy shape without it (pylance then answers
``IS NULL`` from the zones' ``null_count``), and ignores it when reading pylance's files.
"""

from __future__ import annotations

import datetime
import decimal
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw import interfaces as ix
from lance_fw._proto import index_pb2
from lance_fw._util import sets
from lance_fw.errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import Batches, Params

#: The one file of a zone map index.
ZONEMAP_FILE = "zonemap.lance"
#: Schema metadata key holding the zone size (decimal string).
ROWS_PER_ZONE_KEY = "rows_per_zone"
#: Schema metadata key pylance sets to the global-buffer index of its null-row bitmap.
NULL_BITMAP_KEY = "null_bitmap"
#: pylance's default zone size: one zone every two 4096-row batches.
DEFAULT_ROWS_PER_ZONE = 8192
#: ``IndexMetadata.index_version`` pylance 14 writes for zone maps.
ZONEMAP_INDEX_VERSION = 0
TYPE_URL = "/lance.table.ZoneMapIndexDetails"
#: A row address is ``fragment_id << 32 | row offset``.
FRAGMENT_SHIFT = 32
OFFSET_MASK = (1 << FRAGMENT_SHIFT) - 1
MAX_U64 = (1 << 64) - 1
#: Parameters this type implements (pylance's ``IndexConfig("zonemap", {...})`` keys).
PARAMS = ("rows_per_zone", "use_seeds")

_COUNT_COLUMNS = ("null_count", "nan_count")
_BOUND_COLUMNS = ("fragment_id", "zone_start", "zone_length")


def _kind(t: pa.DataType) -> str | None:
    """How values of ``t`` are reduced and compared; ``None``: not supported."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return "temporal"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return "decimal"
    if pa.types.is_fixed_size_binary(t):
        return "opaque"  # pylance 14 records no bounds for it (null min/max)
    return None


def _storage_int(t: pa.DataType) -> pa.DataType:
    """The integer type a temporal type is stored as (same width)."""
    return pa.int32() if t.bit_width == 32 else pa.int64()


_FLOAT_BITS: dict[int, tuple[Any, Any]] = {
    16: (np.float16, np.int16),
    32: (np.float32, np.int32),
    64: (np.float64, np.int64),
}


def _float_keys(values: np.ndarray) -> np.ndarray:
    """Integers ordered as the floats' total order (-0.0 < 0.0), as pylance's min/max are."""
    _, itype = _FLOAT_BITS[values.dtype.itemsize * 8]
    bits = values.view(itype)
    mask = np.iinfo(itype).max
    return bits ^ ((bits >> (values.dtype.itemsize * 8 - 1)) & mask)


def _float_from_keys(keys: np.ndarray, ftype: type) -> np.ndarray:
    mask = np.iinfo(keys.dtype).max
    return (keys ^ ((keys >> (keys.dtype.itemsize * 8 - 1)) & mask)).view(ftype)


def _reduce(values: pa.Array, valid: np.ndarray, starts: np.ndarray, kind: str) -> tuple[pa.Array, pa.Array]:
    """Per segment (``starts``: first index of each), the min and max of the ``valid`` values, null
    where a segment has none. Numbers reduce with ``numpy.*.reduceat``; strings, binaries and decimals
    with one ``pyarrow`` min_max per segment (a segment is a zone, so the calls are few)."""
    t = values.type
    counts = np.add.reduceat(valid.astype(np.int64), starts) if len(values) else np.zeros(0, np.int64)
    empty = counts == 0
    if kind == "opaque":
        nulls = pa.nulls(len(starts), t)
        return nulls, nulls
    if kind in ("string", "binary", "decimal"):
        ends = np.append(starts[1:], len(values))
        mins: list[Any] = []
        maxs: list[Any] = []
        for s, e in zip(starts.tolist(), ends.tolist()):
            mm = pc.min_max(values.slice(s, e - s))
            mins.append(mm["min"].as_py())
            maxs.append(mm["max"].as_py())
        return pa.array(mins, t), pa.array(maxs, t)
    if kind == "temporal":
        keys = values.view(_storage_int(t)).fill_null(0).to_numpy()
    elif kind == "bool":
        keys = values.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)
    elif kind == "float":
        keys = _float_keys(values.to_numpy(zero_copy_only=False))  # nulls come as NaN: not valid
    else:
        keys = values.fill_null(0).to_numpy()
    info = np.iinfo(keys.dtype)
    lo = np.minimum.reduceat(np.where(valid, keys, info.max), starts)
    hi = np.maximum.reduceat(np.where(valid, keys, info.min), starts)
    out = []
    for k in (lo, hi):
        if kind == "temporal":
            out.append(pa.array(k, _storage_int(t), mask=empty).view(t))
        elif kind == "bool":
            out.append(pa.array(k.astype(bool), t, mask=empty))
        elif kind == "float":
            out.append(pa.array(_float_from_keys(k, _FLOAT_BITS[t.bit_width][0]), t, mask=empty))
        else:
            out.append(pa.array(k, t, mask=empty))
    return out[0], out[1]


class _Trainer:
    """Cuts (value, row address) batches into zones; keeps per-batch partial zones and merges the
    partials of a zone that spans batches at the end, so memory is one row per partial zone."""

    def __init__(self, field: pa.Field, rows_per_zone: int) -> None:
        self.type = field.type
        self.kind = _kind(field.type) or "opaque"
        self.rpz = rows_per_zone
        self.last_addr = -1
        self.last_frag = -1
        self.frag_rows = 0  # live rows of ``last_frag`` seen so far
        self.parts: list[dict[str, Any]] = []

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        values = batch.column("value")
        if values.type != self.type:
            raise InvalidArgumentError(f"zone map training: column type {values.type} is not {self.type}")
        addr = batch.column("_rowaddr").to_numpy(zero_copy_only=False).astype(np.uint64)
        if int(addr[0]) <= self.last_addr or (len(addr) > 1 and bool(np.any(addr[1:] <= addr[:-1]))):
            raise InvalidArgumentError("zone map training: row addresses are not strictly increasing")
        self.last_addr = int(addr[-1])
        frag = (addr >> np.uint64(FRAGMENT_SHIFT)).astype(np.int64)
        off = (addr & np.uint64(OFFSET_MASK)).astype(np.int64)
        n = len(addr)
        idx = np.arange(n, dtype=np.int64)
        new_frag = np.empty(n, dtype=bool)
        new_frag[0] = frag[0] != self.last_frag
        new_frag[1:] = frag[1:] != frag[:-1]
        group_start = np.maximum.accumulate(np.where(new_frag, idx, 0))
        pos = idx - group_start
        if not new_frag[0]:
            pos[group_start == 0] += self.frag_rows
        zone = pos // self.rpz
        cut = new_frag.copy()
        cut[0] = True  # a batch starts a partial zone; finish() merges partials of one zone
        cut[1:] |= zone[1:] != zone[:-1]
        starts = np.flatnonzero(cut)
        ends = np.append(starts[1:], n) - 1
        null = values.is_null().to_numpy(zero_copy_only=False)
        nan = np.zeros(n, dtype=bool)
        if self.kind == "float":
            nan = pc.is_nan(values).fill_null(False).to_numpy(zero_copy_only=False)
        mins, maxs = _reduce(values, ~null & ~nan, starts, self.kind)
        self.parts.append(
            {
                "frag": frag[starts],
                "zone": zone[starts],
                "first": off[starts],
                "last": off[ends],
                "null": np.add.reduceat(null.astype(np.int64), starts),
                "nan": np.add.reduceat(nan.astype(np.int64), starts),
                "min": mins,
                "max": maxs,
            }
        )
        self.last_frag = int(frag[-1])
        self.frag_rows = int(pos[-1]) + 1

    def finish(self) -> pa.Table:
        """The zone table pylance writes (columns and nullability as in its files)."""
        if self.parts:
            keys = ("frag", "zone", "first", "last", "null", "nan")
            cat = {k: np.concatenate([p[k] for p in self.parts]) for k in keys}
            pmin = pa.concat_arrays([p["min"] for p in self.parts])
            pmax = pa.concat_arrays([p["max"] for p in self.parts])
            cut = np.ones(len(cat["frag"]), dtype=bool)
            cut[1:] = (cat["frag"][1:] != cat["frag"][:-1]) | (cat["zone"][1:] != cat["zone"][:-1])
            starts = np.flatnonzero(cut)
            ends = np.append(starts[1:], len(cut)) - 1
            mins, _ = _reduce(pmin, pmin.is_valid().to_numpy(zero_copy_only=False), starts, self.kind)
            _, maxs = _reduce(pmax, pmax.is_valid().to_numpy(zero_copy_only=False), starts, self.kind)
            frag, first, last = cat["frag"][starts], cat["first"][starts], cat["last"][ends]
            null_count, nan_count = np.add.reduceat(cat["null"], starts), np.add.reduceat(cat["nan"], starts)
        else:
            mins = maxs = pa.array([], self.type)
            frag = first = last = null_count = nan_count = np.zeros(0, np.int64)
        if self.kind == "float" and np.any(nan_count > 0):
            # pylance's max is NaN whenever the zone holds a NaN (DataFusion's max surfaced it)
            nan_max = pa.array(np.full(len(maxs), np.nan, _FLOAT_BITS[self.type.bit_width][0]), self.type)
            maxs = pc.if_else(pa.array(nan_count > 0), nan_max, maxs)
        return pa.table(
            [
                mins,
                maxs,
                pa.array(null_count, pa.uint32()),
                pa.array(nan_count, pa.uint32()),
                pa.array(frag, pa.uint64()),
                pa.array(first, pa.uint64()),
                pa.array(last - first + 1, pa.uint64()),
            ],
            schema=_file_schema(self.type),
        )


def _file_schema(t: pa.DataType) -> pa.Schema:
    return pa.schema(
        [pa.field("min", t), pa.field("max", t)]
        + [pa.field(c, pa.uint32(), nullable=False) for c in _COUNT_COLUMNS]
        + [pa.field(c, pa.uint64(), nullable=False) for c in _BOUND_COLUMNS]
    )


# --- search ------------------------------------------------------------------------------------------


class _Key:
    """A query value in the column's comparison domain: every column value the value may equal (under
    any coercion of the literal) lies in ``[lo, hi]``; ``exact`` when that is one value."""

    def __init__(self, lo: Any, hi: Any, exact: bool) -> None:
        self.lo, self.hi, self.exact = lo, hi, exact


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, decimal.Decimal, np.integer, np.floating))


class ZoneMapReader(ix.ScalarIndexReader):
    """An opened zone map: the zones, sorted by row address, with bounds in a comparable form."""

    def __init__(self, table: pa.Table, field: pa.Field, rows_per_zone: int) -> None:
        self.type = field.type
        self.kind = _kind(field.type)
        self.rows_per_zone = rows_per_zone
        order = np.lexsort((table.column("zone_start").to_numpy(), table.column("fragment_id").to_numpy()))
        table = table.take(pa.array(order, pa.int64()))
        self.num_zones = table.num_rows
        self.frag = table.column("fragment_id").to_numpy().astype(np.uint64)
        self.start = table.column("zone_start").to_numpy().astype(np.uint64)
        self.length = table.column("zone_length").to_numpy().astype(np.uint64)
        self.nulls = table.column("null_count").to_numpy().astype(np.int64)
        self.nans = table.column("nan_count").to_numpy().astype(np.int64)
        ends = self.frag * np.uint64(1 << FRAGMENT_SHIFT) + self.start + self.length
        starts = self.frag * np.uint64(1 << FRAGMENT_SHIFT) + self.start
        self.disjoint = bool(np.all(starts[1:] >= ends[:-1]))
        mins, maxs = table.column("min").combine_chunks(), table.column("max").combine_chunks()
        has_ext = pc.and_(mins.is_valid(), maxs.is_valid()).to_numpy(zero_copy_only=False)
        if self.kind is None or self.kind == "opaque" or mins.type != self.type:
            has_ext[:] = False
        self.has_ext = has_ext
        #: the zones with both bounds; ``mins`` / ``maxs`` hold their bounds, in this order
        self.ext_idx = np.flatnonzero(has_ext)
        #: zones whose bounds were not recorded but that may hold a non-null, non-NaN value
        self.unbounded = ~has_ext & (self.length.astype(np.int64) > self.nulls + self.nans)
        take = pa.array(self.ext_idx, pa.int64())
        self.mins, self.maxs = self._comparable(mins.take(take)), self._comparable(maxs.take(take))

    def _comparable(self, bounds: pa.Array) -> np.ndarray:
        """Non-null bounds as a numpy array comparable with ``_Key`` values."""
        kind, t = self.kind, self.type
        if kind == "int":
            return bounds.fill_null(0).to_numpy()
        if kind == "bool":
            return bounds.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int8)
        if kind == "temporal":
            return bounds.view(_storage_int(t)).fill_null(0).to_numpy()
        if kind == "float":
            return bounds.to_numpy(zero_copy_only=False).astype(np.float64)  # NaN: see _bounds
        objs = np.empty(len(bounds), dtype=object)
        objs[:] = bounds.to_pylist()
        return objs

    # -- ix.ScalarIndexReader ---------------------------------------------------------------------------
    def supports(self, query: ix.ScalarQuery) -> bool:
        if isinstance(query, ix.PrefixQuery):
            return self.kind == "string"
        return isinstance(query, (ix.EqualsQuery, ix.InQuery, ix.RangeQuery, ix.IsNullQuery))

    def search(self, query: ix.ScalarQuery) -> ix.IndexSearchResult:
        if isinstance(query, ix.IsNullQuery):
            mask = self.nulls > 0
        elif isinstance(query, ix.EqualsQuery):
            mask = self._equals(query.value)
        elif isinstance(query, ix.InQuery):
            mask = np.zeros(self.num_zones, dtype=bool)
            for v in query.values:
                mask |= self._equals(v)
        elif isinstance(query, ix.RangeQuery):
            mask = self._range(query)
        elif isinstance(query, ix.PrefixQuery) and self.kind == "string":
            mask = self._prefix(query.prefix)
        else:
            raise UnsupportedFeatureError(f"a ZONEMAP index cannot answer {type(query).__name__}")
        return ix.IndexSearchResult(self._addresses(mask), exact=False)

    def statistics(self) -> dict[str, Any]:
        return {"num_zones": self.num_zones, "rows_per_zone": self.rows_per_zone}

    # -- zone selection ------------------------------------------------------------------------------
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Comparable (min, max); a float zone's NaN bound means 'unknown' and is widened to ±inf."""
        if self.kind != "float":
            return self.mins, self.maxs
        lo, hi = self.mins.copy(), self.maxs.copy()
        lo[np.isnan(lo)], hi[np.isnan(hi)] = -np.inf, np.inf
        return lo, hi

    def _scatter(self, hit: np.ndarray) -> np.ndarray:
        """Zones kept: those with bounds where ``hit`` (over ``ext_idx``), and every unbounded one."""
        mask = self.unbounded.copy()
        mask[self.ext_idx] |= hit
        return mask

    def _comparable_zones(self) -> np.ndarray:
        """Zones that may hold a non-null, non-NaN value (kept for a value we cannot compare)."""
        return self.has_ext | self.unbounded

    def _equals(self, value: Any) -> np.ndarray:
        if value is None:
            return self.nulls > 0
        if self.kind == "float" and _is_number(value) and _isnan(value):
            return self.nans > 0
        key = self._key(value)
        if key is None:
            return self._comparable_zones()
        lo_b, hi_b = self._bounds()
        with np.errstate(invalid="ignore"):
            hit = (hi_b >= key.lo) & (lo_b <= key.hi)
        return self._scatter(hit)

    def _range(self, q: ix.RangeQuery) -> np.ndarray:
        floats = self.kind == "float"
        if floats and q.lower is not None and _is_number(q.lower) and _isnan(q.lower):
            return self.nans > 0  # only NaN may sort at or above NaN
        upper = q.upper
        if floats and upper is not None and _is_number(upper) and _isnan(upper):
            upper = None  # below NaN: every value
        lo_b, hi_b = self._bounds()
        hit = np.ones(len(self.ext_idx), dtype=bool)
        for bound, strict, is_lower in (
            (q.lower, not q.lower_inclusive, True),
            (upper, not q.upper_inclusive, False),
        ):
            if bound is None:
                continue
            key = self._key(bound)
            if key is None:
                return self._comparable_zones() | ((self.nans > 0) & floats)
            with np.errstate(invalid="ignore"):
                if is_lower:
                    hit &= (hi_b > key.lo) if (strict and key.exact) else (hi_b >= key.lo)
                else:
                    hit &= (lo_b < key.hi) if (strict and key.exact) else (lo_b <= key.hi)
        mask = self._scatter(hit)
        if floats:  # NaN (either sign) sorts outside every bound in a total order: keep those zones
            mask |= self.nans > 0
        return mask

    def _prefix(self, prefix: str) -> np.ndarray:
        if not isinstance(prefix, str):
            return self._comparable_zones()
        hit = np.asarray(self.maxs >= prefix, dtype=bool)
        nxt = _next_prefix(prefix)
        if nxt is not None:
            hit &= np.asarray(self.mins < nxt, dtype=bool)
        return self._scatter(hit)

    def _addresses(self, mask: np.ndarray) -> np.ndarray:
        sel = np.flatnonzero(mask)
        lengths = self.length[sel].astype(np.int64)
        total = int(lengths.sum())
        first = (self.frag[sel] << np.uint64(FRAGMENT_SHIFT)) | self.start[sel]
        before = np.cumsum(lengths) - lengths
        out = np.arange(total, dtype=np.uint64)
        out += np.repeat(first - before.astype(np.uint64), lengths)
        return out if self.disjoint else sets.unique(out)

    # -- query values ----------------------------------------------------------------------------------
    def _key(self, v: Any) -> _Key | None:
        """``v`` in the column's comparison domain, or ``None`` when it cannot be compared (the caller
        then keeps every zone that may hold a value)."""
        kind, t = self.kind, self.type
        if isinstance(v, np.generic):
            v = v.item()
        if kind in ("int", "bool"):
            if not _is_number(v) or (isinstance(v, float) and math.isnan(v)):
                return None
            info = np.iinfo(t.to_pandas_dtype()) if kind == "int" else None
            lo_lim, hi_lim = (int(info.min), int(info.max)) if info is not None else (0, 1)
            if isinstance(v, float) and math.isinf(v):
                lo = hi = lo_lim if v < 0 else hi_lim
                return _Key(lo, hi, False)
            if isinstance(v, decimal.Decimal) and not v.is_finite():
                return None
            lo, hi = math.floor(v), math.ceil(v)
            exact = lo == hi and lo_lim <= lo <= hi_lim
            return _Key(min(max(lo, lo_lim), hi_lim), min(max(hi, lo_lim), hi_lim), exact)
        if kind == "float":
            if not _is_number(v):
                return None
            return _float_key(v, _FLOAT_BITS[t.bit_width][0])
        if kind == "temporal":
            return self._temporal_key(v)
        if kind == "string":
            return _Key(v, v, True) if isinstance(v, str) else None
        if kind == "binary":
            return _Key(bytes(v), bytes(v), True) if isinstance(v, (bytes, bytearray, memoryview)) else None
        if kind == "decimal":
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
                d = decimal.Decimal(v)
                return _Key(d, d, True) if d.is_finite() else None
        return None

    def _temporal_key(self, v: Any) -> _Key | None:
        t = self.type
        if pa.types.is_date(t):
            ok = isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
        elif pa.types.is_timestamp(t):
            ok = isinstance(v, datetime.datetime) and ((v.tzinfo is None) == (t.tz is None))
        elif pa.types.is_time(t):
            ok = isinstance(v, datetime.time)
        else:
            ok = isinstance(v, datetime.timedelta)
        if not ok:
            return None
        try:
            n = pa.scalar(v, type=t).cast(_storage_int(t)).as_py()
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            return None
        return _Key(n - 1, n + 1, False)  # the literal may carry a finer unit than the column


def _float_key(v: Any, ftype: Any) -> _Key:
    """A number as a float column sees it: exact when the column type holds it, else the two
    neighbours of its rounding (whichever way a literal is coerced, the value lies between)."""
    try:
        f = float(v)
    except OverflowError:
        f = math.inf if v > 0 else -math.inf
    with np.errstate(over="ignore"):
        c = ftype(f)
    cf = float(c)
    if _same_number(cf, v):
        return _Key(cf, cf, True)
    return _Key(float(np.nextafter(c, ftype(-np.inf))), float(np.nextafter(c, ftype(np.inf))), False)


def _isnan(v: Any) -> bool:
    if isinstance(v, decimal.Decimal):
        return v.is_nan()
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def _same_number(f: float, v: Any) -> bool:
    """Whether float ``f`` is exactly ``v`` (no rounding), compared without float conversion."""
    if isinstance(v, decimal.Decimal):
        return decimal.Decimal(f) == v
    return bool(f == v)


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with ``prefix`` (``None``: no such string)."""
    stem = prefix.rstrip(chr(sys.maxunicode))
    return stem[:-1] + chr(ord(stem[-1]) + 1) if stem else None


def _rows_per_zone(params: Mapping[str, Any]) -> int:
    rpz = params.get("rows_per_zone", DEFAULT_ROWS_PER_ZONE)
    if isinstance(rpz, bool) or not isinstance(rpz, (int, np.integer)) or not 0 < int(rpz) <= MAX_U64:
        raise InvalidArgumentError(f"ZONEMAP rows_per_zone must be a positive integer, not {rpz!r}")
    return int(rpz)


class ZoneMapIndexType:
    """``ScalarIndexType`` for ZONEMAP."""

    name = "ZONEMAP"
    display_name = "ZoneMap"
    type_url = TYPE_URL
    index_version = ZONEMAP_INDEX_VERSION

    def details(self, params: Params) -> bytes:
        """``ZoneMapIndexDetails`` as pylance writes it, except ``has_null_bitmap`` is false (no
        null bitmap buffer is written, see the module doc) and ``use_seeds`` defaults to false:
        pylance defaults it to true for string, binary, decimal and nested columns, a hint for its
        own writer to embed zone seeds in later data files, which only speeds up its index updates."""
        return index_pb2.ZoneMapIndexDetails(
            rows_per_zone=_rows_per_zone(params),
            use_seeds=bool(params.get("use_seeds", False)),
            has_null_bitmap=False,
        ).SerializeToString()

    def check(self, field: pa.Field, params: Params) -> None:
        if _kind(field.type) is None:
            raise UnsupportedFeatureError(
                f"a ZONEMAP index on column {field.name!r} of type {field.type} is not supported "
                "(integers, floats, booleans, dates, times, timestamps, durations, strings, binaries, "
                "decimals and fixed-size binaries are)"
            )
        unknown = sorted(set(params) - set(PARAMS))
        if unknown:
            raise InvalidArgumentError(
                f"ZONEMAP index parameter(s) {unknown} not supported (supported: {list(PARAMS)})"
            )
        _rows_per_zone(params)
        if "use_seeds" in params and not isinstance(params["use_seeds"], bool):
            raise InvalidArgumentError(f"ZONEMAP use_seeds must be a bool, not {params['use_seeds']!r}")

    def train(self, batches: Batches, field: pa.Field, params: Params, store: ix.IndexFileStore) -> None:
        self.check(field, params)
        rpz = _rows_per_zone(params)
        trainer = _Trainer(field, rpz)
        for batch in batches:
            trainer.add(batch)
        store.write_table(ZONEMAP_FILE, trainer.finish(), {ROWS_PER_ZONE_KEY: str(rpz)})

    def load(self, store: ix.IndexFileStore, field: pa.Field) -> ZoneMapReader:
        if not store.exists(ZONEMAP_FILE):
            raise CorruptFileError(ZONEMAP_FILE, "missing: not a ZONEMAP index directory")
        table = store.read_table(ZONEMAP_FILE)
        for f in _file_schema(field.type):
            got = table.schema.field(f.name).type if f.name in table.column_names else None
            if got is None or (f.name not in ("min", "max") and got != f.type):
                raise CorruptFileError(
                    ZONEMAP_FILE, f"not a zone map: column {f.name!r} is {got}, not {f.type}"
                )
        meta = store.schema_metadata(ZONEMAP_FILE)
        try:
            rpz = int(meta.get(ROWS_PER_ZONE_KEY, DEFAULT_ROWS_PER_ZONE))
        except ValueError:
            rpz = DEFAULT_ROWS_PER_ZONE  # pylance falls back to the default as well
        return ZoneMapReader(table, field, rpz)


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """The ZONEMAP index type."""
    return {"ZONEMAP": ZoneMapIndexType()}
