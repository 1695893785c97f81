"""A bloom-filter scalar index: per zone of rows, a bit set that says "this value may be here".

Why an example: it shows every piece a third-party index needs — an entry point, a
``ScalarIndexType`` (check / train / load / details), files written through the kernel's
``IndexFileStore`` and inexact answers the kernel re-checks — in one small module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import EqualsQuery, IndexFileStore, IndexSearchResult, InQuery, ScalarQuery

FILE = "bloom.lance"
#: Defaults of the two parameters ``create_scalar_index`` accepts.
ROWS_PER_ZONE = 8192
BITS_PER_VALUE = 10
#: Hash functions per value (k); 7 is optimal near 10 bits per value.
NUM_HASHES = 7
_PARAMS = {"rows_per_zone": ROWS_PER_ZONE, "bits_per_value": BITS_PER_VALUE}
_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)


def _hashes(values: pa.Array) -> np.ndarray:
    """Two 64-bit hashes per value (uint64, shape (n, 2)); strings hash their UTF-8 bytes."""
    if pa.types.is_integer(values.type):
        base = np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False)).view(np.uint64)
    else:
        encoded = (
            pc.dictionary_encode(values).combine_chunks()
            if isinstance(values, pa.ChunkedArray)
            else pc.dictionary_encode(values)
        )
        words = [
            int.from_bytes(s.encode()[:8].ljust(8, b"\0"), "little") ^ (len(s) * 0x100000001B3) ^ hash_tail(s)
            for s in encoded.dictionary.to_pylist()
        ]
        base = np.asarray(words, np.uint64)[encoded.indices.to_numpy(zero_copy_only=False)]
    with np.errstate(over="ignore"):
        h1 = (base ^ (base >> np.uint64(31))) * np.uint64(_MIX[0])
        h2 = (base ^ (base >> np.uint64(29))) * np.uint64(_MIX[1]) | np.uint64(1)
    return np.stack([h1, h2], axis=1)


def hash_tail(s: str) -> int:
    """Bytes past the first eight folded in, so long strings sharing a prefix hash apart."""
    out = 0
    for i, b in enumerate(s.encode()[8:]):
        out = (out * 31 + b + i) & 0xFFFFFFFFFFFFFFFF
    return out


def _bit_positions(hashes: np.ndarray, nbits: int) -> np.ndarray:
    """Bit positions (n, k): double hashing h1 + i*h2 mod nbits."""
    i = np.arange(NUM_HASHES, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (hashes[:, :1] + i * hashes[:, 1:]) % np.uint64(nbits)


class BloomReader:
    def __init__(self, table: pa.Table) -> None:
        self.fragments = table.column("fragment_id").to_numpy()
        self.starts = table.column("zone_start").to_numpy()
        self.lengths = table.column("zone_length").to_numpy()
        self.bits = [np.frombuffer(b, np.uint8) for b in table.column("bits").to_pylist()]

    def supports(self, query: ScalarQuery) -> bool:
        return isinstance(query, (EqualsQuery, InQuery))

    def search(self, query: ScalarQuery) -> IndexSearchResult:
        values = [query.value] if isinstance(query, EqualsQuery) else list(query.values)  # type: ignore[attr-defined]
        array = pa.array(values)
        hashes = _hashes(array if not pa.types.is_floating(array.type) else array.cast(pa.int64()))
        parts = []
        for zone, bits in enumerate(self.bits):
            positions = _bit_positions(hashes, len(bits) * 8)
            present = (bits[positions >> np.uint64(3)] >> (positions & np.uint64(7)).astype(np.uint8)) & 1
            if present.all(axis=1).any():
                offsets = np.arange(
                    self.starts[zone], self.starts[zone] + self.lengths[zone], dtype=np.uint64
                )
                parts.append(offsets | np.uint64(int(self.fragments[zone]) << 32))
        addresses = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
        return IndexSearchResult(np.unique(addresses), exact=False)

    def statistics(self) -> dict[str, Any]:
        return {"num_zones": len(self.bits), "num_bytes": sum(len(b) for b in self.bits)}


class BloomIndex:
    name = "LF_BLOOM"
    display_name = "LfBloom"
    type_url = "/lance_fw_bloom.BloomIndexDetails"
    index_version = 0

    def details(self, params: Mapping[str, Any]) -> bytes:
        return b""

    def check(self, field: pa.Field, params: Mapping[str, Any]) -> None:
        if not (pa.types.is_integer(field.type) or pa.types.is_string(field.type)):
            raise UnsupportedFeatureError(f"LF_BLOOM indexes integer and string columns, not {field.type}")
        for key, value in params.items():
            if key not in _PARAMS:
                raise InvalidArgumentError(f"LF_BLOOM: unknown parameter {key!r} (known: {sorted(_PARAMS)})")
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"LF_BLOOM: {key} must be a positive integer, got {value!r}")

    def train(
        self,
        batches: Iterable[pa.RecordBatch],
        field: pa.Field,
        params: Mapping[str, Any],
        store: IndexFileStore,
    ) -> None:
        rows_per_zone = int(params.get("rows_per_zone", ROWS_PER_ZONE))
        bits_per_value = int(params.get("bits_per_value", BITS_PER_VALUE))
        table = pa.Table.from_batches(list(batches))
        addresses = table.column("_rowaddr").to_numpy()
        fragments = (addresses >> np.uint64(32)).astype(np.int64)
        offsets = (addresses & np.uint64(0xFFFFFFFF)).astype(np.int64)
        zone_key = fragments * (1 << 32) + offsets // rows_per_zone
        cuts = np.flatnonzero(np.diff(zone_key)) + 1 if len(zone_key) else np.zeros(0, np.int64)
        values = table.column("value").combine_chunks()
        out: dict[str, list[Any]] = {"fragment_id": [], "zone_start": [], "zone_length": [], "bits": []}
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(zone_key)]):
            if hi <= lo:
                continue
            zone_values = values.slice(int(lo), int(hi - lo)).drop_null()
            nbits = max(64, (len(zone_values) * bits_per_value + 7) // 8 * 8)
            bits = np.zeros(nbits // 8, np.uint8)
            if len(zone_values):
                positions = _bit_positions(_hashes(zone_values), nbits).ravel()
                np.bitwise_or.at(
                    bits, positions >> np.uint64(3), (1 << (positions & np.uint64(7))).astype(np.uint8)
                )
            first = int(offsets[lo]) // rows_per_zone * rows_per_zone
            out["fragment_id"].append(int(fragments[lo]))
            out["zone_start"].append(first)
            out["zone_length"].append(int(offsets[hi - 1]) + 1 - first)
            out["bits"].append(bits.tobytes())
        schema = pa.schema(
            [
                ("fragment_id", pa.uint64()),
                ("zone_start", pa.uint64()),
                ("zone_length", pa.uint64()),
                ("bits", pa.binary()),
            ]
        )
        store.write_table(FILE, pa.table(out, schema=schema), {"rows_per_zone": str(rows_per_zone)})

    def load(self, store: IndexFileStore, field: pa.Field) -> BloomReader:
        return BloomReader(store.read_table(FILE))


@hookimpl
def lance_index_types() -> Mapping[str, Any]:
    """The LF_BLOOM index type."""
    return {"LF_BLOOM": BloomIndex()}
