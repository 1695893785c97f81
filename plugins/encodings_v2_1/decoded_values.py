"""The decoded value stream of one mini-block chunk or block (``DecodedValues``) and what the
layouts do with it once decoded: concatenate a page's chunks, split packed-struct rows.

Kept apart from ``compressive`` (which turns encoded buffers into these values) so that the
layouts, ``repdef`` and ``shred`` that only consume decoded values need not know any encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa

from lance_fw.errors import UnsupportedEncodingError
from lance_fw.file.buffers import UINT_BY_BITS

_T = TypeVar("_T")


def present(value: _T | None, what: str) -> _T:
    """A ``DecodedValues`` field its kind always sets (``data`` of fixed / variable values,
    ``offsets`` of variable ones, ``inner`` of fixed-size lists ...): None there is a decoder bug."""
    if value is None:
        raise TypeError(f"decoded values without their {what}")
    return value


@dataclass
class DecodedValues:
    """The decoded value stream of one chunk / block.

    ``kind == "fixed"``: ``data`` holds ``num_values`` raw values of ``bits_per_value``
    bits: a ``uint8/16/32/64`` array for 8/16/32/64 bits, a bit-packed (LSB first) uint8
    array of ``ceil(n/8)`` bytes for 1 bit, otherwise a flat uint8 array of
    ``n * bits/8`` bytes (e.g. 96-bit packed structs, 128-bit decimals).

    ``kind == "variable"``: ``offsets`` int64 (``num_values + 1``, starting at 0) into
    ``data`` (uint8 array).

    ``kind == "fsl"``: ``dimension`` items per value, ``inner`` holds the
    ``num_values * dimension`` items, ``validity`` (np.bool_, one per item) or None.
    """

    kind: str
    num_values: int
    data: np.ndarray | None = None
    bits_per_value: int = 0
    offsets: np.ndarray | None = None
    dimension: int = 0
    validity: np.ndarray | None = None
    inner: DecodedValues | None = None
    packed_struct_bits: tuple[int, ...] = field(default=())
    array: pa.Array | None = None  # kind "arrow": values that decode straight to Arrow

    def fixed_bytes(self) -> np.ndarray:
        """The fixed values as a flat uint8 array (``ceil(n * bits / 8)`` bytes)."""
        if self.kind != "fixed":
            raise TypeError(f"fixed_bytes() on a {self.kind} DecodedValues")
        return np.ascontiguousarray(self.data).reshape(-1).view(np.uint8)

    def strings(self) -> list[bytes]:
        """Variable values as a list of bytes (convenience for tests; not vectorised)."""
        d = np.asarray(self.data, np.uint8).tobytes()
        o = present(self.offsets, "offsets").tolist()
        return [d[o[i] : o[i + 1]] for i in range(self.num_values)]


def concat(parts: Sequence[DecodedValues]) -> DecodedValues:
    """Concatenate the chunks of a page (same kind and width)."""
    if not parts:
        raise ValueError("concat() of no DecodedValues")
    first = parts[0]
    n = sum(p.num_values for p in parts)
    if first.kind == "fixed":
        if first.bits_per_value == 1:
            bits = np.concatenate(
                [np.unpackbits(p.fixed_bytes(), bitorder="little")[: p.num_values] for p in parts]
            )
            return DecodedValues("fixed", n, np.packbits(bits, bitorder="little"), 1)
        return DecodedValues(
            "fixed",
            n,
            np.concatenate([present(p.data, "data").reshape(-1) for p in parts]),
            first.bits_per_value,
            packed_struct_bits=first.packed_struct_bits,
        )
    if first.kind == "variable":
        offsets = [present(p.offsets, "offsets") for p in parts]
        sizes = np.array([o[-1] for o in offsets], np.int64)
        shift = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        offs = np.concatenate([np.zeros(1, np.int64)] + [o[1:] + s for o, s in zip(offsets, shift)]).astype(
            np.int64
        )
        return DecodedValues(
            "variable", n, np.concatenate([np.asarray(p.data, np.uint8) for p in parts]), offsets=offs
        )
    if first.kind == "fsl":
        validity = None
        if any(p.validity is not None for p in parts):
            validity = np.concatenate(
                [
                    p.validity if p.validity is not None else np.ones(p.num_values * p.dimension, bool)
                    for p in parts
                ]
            )
        return DecodedValues(
            "fsl",
            n,
            dimension=first.dimension,
            validity=validity,
            inner=concat([present(p.inner, "items") for p in parts]),
        )
    raise ValueError(f"unknown kind {first.kind!r}")


def split_packed_struct(dv: DecodedValues) -> list[np.ndarray]:
    """Split row-major packed-struct rows into per-field arrays (byte-aligned fields)."""
    widths = dv.packed_struct_bits
    if any(w % 8 for w in widths):
        raise UnsupportedEncodingError("packed struct with a field that is not byte aligned")
    rows = dv.fixed_bytes().reshape(dv.num_values, -1)
    out, pos = [], 0
    for w in widths:
        col = np.ascontiguousarray(rows[:, pos : pos + w // 8]).reshape(-1)
        out.append(col.view(UINT_BY_BITS[w]) if w in UINT_BY_BITS else col)
        pos += w // 8
    return out
