"""Byte formats of the bitmap index (BITMAP and LABEL_LIST): row-address maps and key order.

Why its own module: both index types share ``bitmap_page_lookup.lance``, whose ``bitmaps`` values
(and LABEL_LIST's list-nulls global buffer) are pylance's ``RowAddrTreeMap`` serialization::

    u32 n_fragments, then per fragment (ascending id):
        u32 fragment_id | u32 nbytes | nbytes of a portable 32-bit roaring bitmap of row offsets
    (nbytes = 0 would mean "the whole fragment"; pylance never writes it for a trained index)

pylance 14 writes the roaring bitmaps without run containers (cookie 12346): array containers up to
4096 values, bitset containers above. ``encode_row_addr_maps`` writes exactly those bytes for all keys
at once with numpy (one pass over the sorted addresses, no Python loop per key or per container), so
1M rows train in about a second whatever the number of distinct keys. Decoding is vectorised the same
way over all the bitmaps a query needs; only a bitmap with run containers (which pylance does not write)
goes through pyroaring.

Keys are sorted as pylance's ``BTreeMap<ScalarValue, _>`` sorts them: the null key first, then
ascending; floats in IEEE total order (-0.0 before 0.0 as distinct keys, NaN last); strings and
binaries bytewise.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lance_fw._util import sets
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError

#: Portable roaring cookie of a bitmap with no run containers (what pylance 14 writes).
ROARING_COOKIE_NO_RUNS = 12346
#: An array container holds at most this many values; a fuller container is a bitset.
ROARING_ARRAY_MAX = 4096
#: Bytes of a bitset container (2^16 bits).
ROARING_BITSET_BYTES = 8192
#: A ``RowAddrTreeMap`` entry whose byte count is 0 covers its whole fragment.
WHOLE_FRAGMENT_NBYTES = 0

#: Bitset containers decoded together (each unpacks to 64 Ki bytes).
BITSET_DECODE_CHUNK = 256


def _put(out: np.ndarray, pos: np.ndarray, values: np.ndarray, nbytes: int) -> None:
    """Store little-endian ``nbytes``-byte ``values`` at byte positions ``pos`` of ``out``."""
    little = np.asarray(values).astype(f"<u{nbytes}").view(np.uint8).reshape(-1, nbytes)
    out[np.asarray(pos, dtype=np.int64)[:, None] + np.arange(nbytes)] = little


def _starts(*keys: np.ndarray) -> np.ndarray:
    """Boolean per element: True where any of ``keys`` differs from the previous element."""
    n = len(keys[0])
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
        for k in keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def encode_row_addr_maps(
    groups: np.ndarray, addrs: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Serialize one ``RowAddrTreeMap`` per group.

    ``groups``: int64 group id per address, non-decreasing; ``addrs``: uint64 row addresses, strictly
    increasing within a group. Groups with no address get an empty map (4 bytes). Returns
    (``offsets``: int64, ``n_groups + 1`` byte offsets; ``data``: uint8 bytes of every map in order).
    """
    groups = np.asarray(groups, dtype=np.int64)
    addrs = np.asarray(addrs, dtype=np.uint64)
    frag = (addrs >> np.uint64(32)).astype(np.int64)
    low = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    hi16, lo16 = low >> 16, low & 0xFFFF
    n = len(addrs)
    c_new = _starts(groups, frag, hi16)
    f_new = _starts(groups, frag)
    c_first = np.flatnonzero(c_new)  # first element of each container
    f_first = np.flatnonzero(f_new)  # first element of each fragment entry
    card = np.diff(np.append(c_first, n))
    c_size = np.where(card > ROARING_ARRAY_MAX, ROARING_BITSET_BYTES, 2 * card)
    c_frag = np.cumsum(f_new)[c_first] - 1  # fragment entry of each container
    f_nc = np.bincount(c_frag, minlength=len(f_first))
    f_payload = np.bincount(c_frag, weights=c_size, minlength=len(f_first)).astype(np.int64)
    f_roaring = 8 + 8 * f_nc + f_payload
    f_group = groups[f_first]
    g_bytes = 4 + np.bincount(f_group, weights=8 + f_roaring, minlength=n_groups).astype(np.int64)
    g_nfrag = np.bincount(f_group, minlength=n_groups)
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(g_bytes, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    _put(out, offsets[:-1], g_nfrag, 4)
    # fragment entries: start = group start + 4 + entry bytes of the group's earlier entries
    f_cum = np.cumsum(8 + f_roaring) - (8 + f_roaring)
    g_first_entry = np.searchsorted(f_group, np.arange(n_groups))
    f_start = offsets[f_group] + 4 + f_cum - f_cum[g_first_entry[f_group]]
    _put(out, f_start, frag[f_first], 4)
    _put(out, f_start + 4, f_roaring, 4)
    rs = f_start + 8  # roaring start
    _put(out, rs, np.full(len(rs), ROARING_COOKIE_NO_RUNS), 4)
    _put(out, rs + 4, f_nc, 4)
    # containers: rank within their entry, header slot, offset slot and data start
    f_first_c = np.searchsorted(c_frag, np.arange(len(f_first)))
    c_rank = np.arange(len(c_first)) - f_first_c[c_frag]
    c_size_cum = np.cumsum(c_size) - c_size
    c_data_rel = 8 + 8 * f_nc[c_frag] + c_size_cum - c_size_cum[f_first_c[c_frag]]
    c_hdr = rs[c_frag] + 8 + 4 * c_rank
    _put(out, c_hdr, hi16[c_first], 2)
    _put(out, c_hdr + 2, card - 1, 2)
    _put(out, rs[c_frag] + 8 + 4 * f_nc[c_frag] + 4 * c_rank, c_data_rel, 4)
    c_data = rs[c_frag] + c_data_rel
    elem_c = np.cumsum(c_new) - 1
    is_array = (card <= ROARING_ARRAY_MAX)[elem_c]
    rank = np.arange(n) - c_first[elem_c]
    arr = np.flatnonzero(is_array)
    _put(out, c_data[elem_c[arr]] + 2 * rank[arr], lo16[arr], 2)
    bits = np.flatnonzero(~is_array)
    if len(bits):
        byte_pos = c_data[elem_c[bits]] + (lo16[bits] >> 3)
        masks = (np.int64(1) << (lo16[bits] & 7)).astype(np.uint8)
        first = np.flatnonzero(_starts(byte_pos))
        out[byte_pos[first]] = np.bitwise_or.reduceat(masks, first)
    return offsets, out


def encode_row_addr_map(addrs: np.ndarray) -> bytes:
    """One ``RowAddrTreeMap`` of sorted unique ``addrs`` (uint64)."""
    _, data = encode_row_addr_maps(np.zeros(len(addrs), dtype=np.int64), addrs, 1)
    return data.tobytes()


def _u16(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return data[pos].astype(np.int64) | (data[pos + 1].astype(np.int64) << 8)


def _u32(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return _u16(data, pos) | (_u16(data, pos + 2) << 16)


def _check(ok: np.ndarray | bool, where: str, what: str) -> None:
    if not np.all(ok):
        raise CorruptFileError(where, f"bad row-address bitmap: {what}")


def _roaring_slow(data: np.ndarray, start: int, nbytes: int, fid: int, where: str) -> np.ndarray:
    """One roaring bitmap in any portable layout (run containers too), through pyroaring."""
    try:
        bitmap = BitMap.deserialize(data[start : start + nbytes].tobytes())
    except (ValueError, OverflowError) as exc:
        raise CorruptFileError(where, f"bad roaring bitmap of fragment {fid}: {exc}") from None
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.uint64) | np.uint64(fid << 32)


def decode_row_addr_maps(offsets: np.ndarray, data: np.ndarray, where: str) -> np.ndarray:
    """The row addresses of every ``RowAddrTreeMap`` ``data[offsets[i]:offsets[i + 1]]``, concatenated
    (uint64, not sorted across maps).

    Vectorised over all maps (a range over many keys decodes in one pass); bitmaps with run
    containers, which pylance does not write, go through pyroaring one by one.

    Raises: ``CorruptFileError`` (``where`` names the file) on bad bytes; ``UnsupportedFeatureError``
    for a whole-fragment entry, whose rows cannot be listed without the fragment's length.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    _check(ends - starts >= 4, where, "a map is shorter than its 4-byte count")
    n_frag = _u32(data, starts) if len(starts) else np.zeros(0, dtype=np.int64)
    pos = starts + 4
    fids, roaring, sizes = [], [], []
    for k in range(int(n_frag.max()) if len(n_frag) else 0):
        live = np.flatnonzero(n_frag > k)
        p = pos[live]
        _check(p + 8 <= ends[live], where, "a fragment entry runs past its map")
        fid, nbytes = _u32(data, p), _u32(data, p + 4)
        whole = nbytes == WHOLE_FRAGMENT_NBYTES
        if whole.any():
            raise UnsupportedFeatureError(
                f"{where}: a bitmap covers the whole of fragment {int(fid[whole][0])}; lance_fw's bitmap "
                "index cannot list its rows without the fragment's length"
            )
        _check(p + 8 + nbytes <= ends[live], where, "a fragment's bitmap runs past its map")
        fids.append(fid)
        roaring.append(p + 8)
        sizes.append(nbytes)
        pos[live] = p + 8 + nbytes
    if not fids:
        return np.zeros(0, dtype=np.uint64)
    fid, rs, nb = np.concatenate(fids), np.concatenate(roaring), np.concatenate(sizes)
    _check(nb >= 8, where, "a roaring bitmap is shorter than its header")
    parts = []
    fast = _u32(data, rs) == ROARING_COOKIE_NO_RUNS
    for e in np.flatnonzero(~fast):
        parts.append(_roaring_slow(data, int(rs[e]), int(nb[e]), int(fid[e]), where))
    fid, rs, nb = fid[fast], rs[fast], nb[fast]
    nc = _u32(data, rs + 4)
    _check(8 + 8 * nc <= nb, where, "a roaring header runs past its bitmap")
    ce = np.repeat(np.arange(len(rs)), nc)  # entry of each container
    rank = np.arange(len(ce)) - np.repeat(np.cumsum(nc) - nc, nc)
    header = rs[ce] + 8 + 4 * rank
    key, card = _u16(data, header), _u16(data, header + 2) + 1
    rel = _u32(data, rs[ce] + 8 + 4 * nc[ce] + 4 * rank)
    bitset = card > ROARING_ARRAY_MAX
    _check(
        rel + np.where(bitset, ROARING_BITSET_BYTES, 2 * card) <= nb[ce],
        where,
        "a container runs past its bitmap",
    )
    base = (fid[ce].astype(np.uint64) << np.uint64(32)) | (key.astype(np.uint64) << np.uint64(16))
    start = rs[ce] + rel
    arrays = np.flatnonzero(~bitset)
    el = np.repeat(arrays, card[arrays])
    el_rank = np.arange(len(el)) - np.repeat(np.cumsum(card[arrays]) - card[arrays], card[arrays])
    parts.append(base[el] | _u16(data, start[el] + 2 * el_rank).astype(np.uint64))
    bitsets = np.flatnonzero(bitset)
    span = np.arange(ROARING_BITSET_BYTES)
    for chunk in range(0, len(bitsets), BITSET_DECODE_CHUNK):
        which = bitsets[chunk : chunk + BITSET_DECODE_CHUNK]
        bits = np.unpackbits(data[start[which][:, None] + span], axis=1, bitorder="little")
        row, low = np.nonzero(bits)
        _check(np.bincount(row, minlength=len(which)) == card[which], where, "a bitset's count is wrong")
        parts.append(base[which][row] | low.astype(np.uint64))
    return np.concatenate(parts)


def decode_row_addr_map(data: bytes | memoryview, where: str) -> np.ndarray:
    """Sorted unique uint64 row addresses of one serialized ``RowAddrTreeMap`` (see the plural)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    return sets.unique(decode_row_addr_maps(np.array([0, len(raw)], dtype=np.int64), raw, where))


def binary_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets, uint8 data) of a binary array without nulls, for ``decode_row_addr_maps``."""
    values = values.cast(pa.large_binary())
    _, offsets, data = values.buffers()
    off = np.frombuffer(offsets, dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    return off, (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8))


# --- keys ---------------------------------------------------------------------------------------


def _float_order(values: np.ndarray) -> np.ndarray:
    """Signed integers ordered as IEEE total order orders ``values`` (-NaN < -inf < -0 < 0 < NaN)."""
    width = values.dtype.itemsize * 8
    signed = values.view(f"i{values.dtype.itemsize}").astype(np.int64)
    if width < 64:
        flip = (signed >> (width - 1)) & ((1 << (width - 1)) - 1)
    else:
        flip = (signed >> 63) & np.int64(0x7FFFFFFFFFFFFFFF)
    return signed ^ flip


def group_keys(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(int64 key number of each value, the keys in pylance's order: null first, then ascending).

    Floats are grouped by bit pattern (so -0.0 and 0.0 are two keys, as pylance keeps them).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    valid = ~np.asarray(values.is_null(), dtype=bool) if values.null_count else np.ones(len(values), bool)
    present = values.filter(pa.array(valid)) if values.null_count else values
    if pa.types.is_floating(values.type):
        arr = present.to_numpy(zero_copy_only=False)
        bits = arr.view(f"u{arr.dtype.itemsize}")
        uniq, inverse = np.unique(bits, return_inverse=True)
        order = np.argsort(_float_order(uniq.view(arr.dtype)), kind="stable")
        dictionary = pa.array(uniq.view(arr.dtype)[order], type=values.type)
    else:
        encoded = pc.dictionary_encode(present)
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        inverse = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        order = pc.sort_indices(encoded.dictionary).to_numpy().astype(np.int64)
        dictionary = encoded.dictionary.take(pa.array(order))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    has_null = values.null_count > 0
    codes = np.zeros(len(values), dtype=np.int64)
    codes[valid] = rank[inverse.reshape(-1)] + (1 if has_null else 0)
    if has_null:
        dictionary = pa.concat_arrays([pa.nulls(1, values.type), dictionary.cast(values.type)])
    return codes, dictionary.cast(values.type)


def sortable(values: pa.Array) -> np.ndarray:
    """``values`` (no nulls) as a numpy array that ``np.searchsorted`` orders as the index's keys are
    ordered, with IEEE equality: -0.0 equals 0.0 and NaN sorts last (as pylance's filters compare)."""
    t = values.type
    if pa.types.is_floating(t):
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if pa.types.is_boolean(t):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.uint8)
    if pa.types.is_integer(t):
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if pa.types.is_temporal(t):
        width = t.bit_width
        return np.asarray(
            values.view(pa.int64() if width == 64 else pa.int32()).to_numpy(zero_copy_only=False)
        )
    # strings (code point order = UTF-8 byte order), binaries, decimals: Python objects
    out = np.empty(len(values), dtype=object)
    out[:] = values.to_pylist()
    return out
