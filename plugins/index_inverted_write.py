"""Encoders for the files of a full-text (``INVERTED``) index, in the layout pylance 14 writes with
``format_version=1`` (the duals of ``index_inverted_format``).

Why format 1: it is the layout pylance 14 still writes on request and reads, and its posting tail is
plain ``u32`` (``fixed32_v1``); with positions as per-document lists. The token map is an ``fst``
map (format version 3) written as an unminimized trie: one node per distinct prefix, every node in
the general "any transitions" layout, the token id as the final output of its last node. Readers
follow transitions and do not need shared suffixes.
"""

from __future__ import annotations

import struct

import numpy as np

from lance_fw_plugins.index_inverted_format import (
    BITPACK_BLOCK,
    BITPACK_LANES,
    FST_CHECKSUM_VERSION,
    FST_TRANS_INDEX_BYTES,
    FST_TRANS_INDEX_THRESHOLD,
)

#: fst map type written in the header (0: a plain map)
FST_TYPE = 0
#: ``state`` byte flag of a final "any transitions" node
_FINAL_FLAG = 0x40
_STATE_NTRANS_MAX = 0x3F
#: crc32c (Castagnoli) polynomial, reflected: the fst crate's checksum
_CRC32C_POLY = 0x82F63B78
_CRC_TABLE = [0] * 256
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _CRC32C_POLY if _c & 1 else _c >> 1
    _CRC_TABLE[_i] = _c


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _pack_size(value: int) -> int:
    size = 1
    while value >= 1 << (8 * size):
        size += 1
    return size


def fst_bytes(tokens: dict[str, int]) -> bytes:
    """An ``fst`` map of ``tokens`` (token -> id) as the fst crate reads it."""
    trie: dict = {}
    for token in tokens:
        node = trie
        for byte in token.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = tokens[token]
    out = bytearray(struct.pack("<QQ", FST_CHECKSUM_VERSION, FST_TYPE))

    def compile_node(node: dict) -> int:
        """Write the children, then this node; return its address (the address of its last byte)."""
        children = sorted(k for k in node if k is not None)
        targets = [compile_node(node[k]) for k in children]
        final = None in node
        final_output = node.get(None) or 0
        start = len(out)
        count = len(children)
        tsize = max((_pack_size(start - t) for t in targets), default=0)
        osize = _pack_size(final_output) if final_output else 0
        if final and osize:
            out.extend(final_output.to_bytes(osize, "little"))
        # transition outputs are all zero: no output bytes for them when osize is 0; with a final
        # output they are written as zeros of osize bytes each
        if osize:
            out.extend(bytes(osize * count))
        for target in reversed(targets):
            out.extend((start - target).to_bytes(tsize, "little"))
        out.extend(reversed(children))
        if count > FST_TRANS_INDEX_THRESHOLD:
            index = bytearray([0xFF] * FST_TRANS_INDEX_BYTES)
            for i, byte in enumerate(children):
                index[byte] = i
            out.extend(index)
        out.append((tsize << 4) | osize)
        state = _FINAL_FLAG if final else 0
        if 0 < count <= _STATE_NTRANS_MAX:
            state |= count
        else:
            out.append(1 if count == 256 else count)
        out.append(state)
        return len(out) - 1

    root = compile_node(trie)
    out.extend(struct.pack("<QQ", len(tokens), root))
    out.extend(struct.pack("<I", crc32c(bytes(out))))
    return bytes(out)


def pack_bitpacker4x(values: np.ndarray) -> tuple[int, bytes]:
    """(bits, bytes) of 128 ``uint32`` packed as BitPacker4x does."""
    values = values.astype(np.uint64)
    top = int(values.max()) if len(values) else 0
    bits = top.bit_length()
    if bits == 0:
        return 0, b""
    lanes = values.reshape(BITPACK_BLOCK // BITPACK_LANES, BITPACK_LANES).T  # lane x value
    words = np.zeros((BITPACK_LANES, bits + 1), np.uint64)  # one spare word for the last spill
    bit = np.arange(BITPACK_BLOCK // BITPACK_LANES, dtype=np.uint64) * np.uint64(bits)
    word, shift = (bit >> np.uint64(5)).astype(np.intp), bit & np.uint64(31)
    shifted = lanes << shift  # up to 63 bits: the low word's part and the spill into the next
    rows = np.repeat(np.arange(BITPACK_LANES), len(word))
    np.bitwise_or.at(words, (rows, np.tile(word, BITPACK_LANES)), (shifted & np.uint64(0xFFFFFFFF)).ravel())
    np.bitwise_or.at(words, (rows, np.tile(word + 1, BITPACK_LANES)), (shifted >> np.uint64(32)).ravel())
    words = words[:, :bits]
    return bits, words.T.astype("<u4").tobytes()


def posting_blocks(
    doc_ids: np.ndarray, frequencies: np.ndarray, block_max: np.ndarray, block_size: int
) -> list[bytes]:
    """Blocks of one posting list: full blocks bit-packed, the shorter last one as ``u32``s."""
    out = []
    for number, lo in enumerate(range(0, len(doc_ids), block_size)):
        ids, freqs = doc_ids[lo : lo + block_size], frequencies[lo : lo + block_size]
        block = bytearray(struct.pack("<f", float(block_max[number])))
        if len(ids) == block_size:
            for at in range(0, block_size, BITPACK_BLOCK):
                part = ids[at : at + BITPACK_BLOCK].astype(np.int64)
                deltas = np.diff(part, prepend=part[0]).astype(np.uint32)
                bits, packed = pack_bitpacker4x(deltas)
                block += struct.pack("<IB", int(part[0]), bits) + packed
                bits, packed = pack_bitpacker4x(freqs[at : at + BITPACK_BLOCK].astype(np.uint32))
                block += bytes([bits]) + packed
        else:
            block += ids.astype("<u4").tobytes() + freqs.astype("<u4").tobytes()
        out.append(bytes(block))
    return out


def position_lists(positions: list[int]) -> list[bytes]:
    """One document's positions of a token as ``format_version=1`` stores them: the count (u32),
    each full block of 128 bit-packed as deltas from its first position, the rest as ``u32``s."""
    out = [struct.pack("<I", len(positions))]
    full = len(positions) // BITPACK_BLOCK * BITPACK_BLOCK
    for lo in range(0, full, BITPACK_BLOCK):
        chunk = np.array(positions[lo : lo + BITPACK_BLOCK], np.int64)
        bits, packed = pack_bitpacker4x(np.diff(chunk, prepend=chunk[0]).astype(np.uint32))
        out.append(struct.pack("<IB", int(chunk[0]), bits) + packed)
    if full < len(positions):
        out.append(np.array(positions[full:], "<u4").tobytes())
    return out
