"""Decoders for the byte formats inside pylance 14's full-text (``INVERTED``) index files.

Why a module of its own: the index files are ordinary Lance files, but three of their columns hold
bytes in formats of their own, learned from files pylance 14 writes (and the format notes of the
crates it uses):

* ``part_N_tokens.lance`` ``_token_fst_bytes``: a finite state transducer (the ``fst`` crate, format
  version 3) mapping each token to its token id. Nodes are addressed by their last byte and read
  backwards; outputs add up along the path.
* ``part_N_invert.lance`` ``_posting``: per token a list of blocks of ``posting_block_size`` (128)
  documents: a float32 block max score, then ``(first doc id u32, bits u8, BitPacker4x deltas)``
  and ``(bits u8, BitPacker4x frequencies)``; the last, shorter block holds varint doc id deltas
  then varint frequencies (``posting_tail_codec = varint_delta_v1``).
* ``posting_tail_codec = fixed32_v1`` (``format_version=1``): the last block holds ``u32`` doc ids,
  then ``u32`` frequencies.
* ``_compressed_position`` (``positions_layout = shared_stream_v2``): positions are not decoded
  here; phrase queries are refused by the caller.

BitPacker4x packs 128 ``u32`` as four interleaved lanes (value ``i`` in lane ``i % 4``), each lane
32 values of ``bits`` bits, little-endian bit order, one 32-bit word of each lane in turn.
"""

from __future__ import annotations

import struct

import numpy as np

from lance_fw.errors import CorruptFileError

#: Values in one BitPacker4x block.
BITPACK_BLOCK = 128
#: Lanes of BitPacker4x.
BITPACK_LANES = 4
_LANE_VALUES = BITPACK_BLOCK // BITPACK_LANES
#: Bytes before a block's doc ids: its float32 max score.
BLOCK_SCORE_BYTES = 4
#: fst crate: address 0 is the empty final state.
FST_EMPTY_ADDRESS = 0
#: fst crate: header ``version`` (u64) and ``type`` (u64); v3 ends with a crc32c checksum.
FST_HEADER_BYTES = 16
FST_CHECKSUM_VERSION = 3
FST_CHECKSUM_BYTES = 4
#: fst crate: nodes with more transitions carry a 256-byte input index (format version >= 2).
FST_TRANS_INDEX_THRESHOLD = 32
FST_TRANS_INDEX_BYTES = 256
#: fst crate: bytes stored as a 1-based index into this table save their input byte.
FST_COMMON_INPUTS = (
    b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHGWUV,YKJZXQ;)(~[]$!'*@"
    + bytes(range(0x20))
    + b' "#<>\\^`{|}'
    + bytes(range(0x7F, 0x100))
)


def _uint(data: bytes, at: int, size: int) -> int:
    return int.from_bytes(data[at : at + size], "little") if size else 0


class _FstNode:
    """One state of the transducer: whether it is final, its final output and its transitions
    (input byte, output, target address) in input order."""

    __slots__ = ("final", "final_output", "inputs", "outputs", "targets")

    def __init__(self, data: bytes, addr: int, version: int) -> None:
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.targets: list[int] = []
        self.final, self.final_output = False, 0
        if addr == FST_EMPTY_ADDRESS:
            self.final = True
            return
        state = data[addr]
        kind = state >> 6
        if kind >= 2:  # one transition: 0b11 "next" (target is the preceding node), 0b10 general
            common = state & 0x3F
            inp_len = 0 if common else 1
            inp = FST_COMMON_INPUTS[common - 1] if common else data[addr - 1]
            self.inputs.append(inp)
            if kind == 3:
                self.outputs.append(0)
                self.targets.append(addr - inp_len - 1)
                return
            sizes = data[addr - inp_len - 1]
            tsize, osize = sizes >> 4, sizes & 0x0F
            end = addr - inp_len - 1 - tsize - osize
            self.outputs.append(_uint(data, end, osize))
            delta = _uint(data, addr - inp_len - 1 - tsize, tsize)
            self.targets.append(FST_EMPTY_ADDRESS if delta == 0 else end - delta)
            return
        self.final = bool(state & 0x40)
        count, count_len = state & 0x3F, 0
        if count == 0:
            count, count_len = data[addr - 1], 1
            if count == 1:  # 256 transitions (1 is never stored here)
                count = 256
        sizes = data[addr - count_len - 1]
        tsize, osize = sizes >> 4, sizes & 0x0F
        index = FST_TRANS_INDEX_BYTES if version >= 2 and count > FST_TRANS_INDEX_THRESHOLD else 0
        base = addr - count_len - 1
        trans_bytes = count + count * tsize + index
        end = base - trans_bytes - count * osize - (osize if self.final else 0)
        for i in range(count):
            self.inputs.append(data[base - index - i - 1])
            delta = _uint(data, base - index - count - i * tsize - tsize, tsize)
            self.targets.append(FST_EMPTY_ADDRESS if delta == 0 else end - delta)
            self.outputs.append(_uint(data, base - trans_bytes - i * osize - osize, osize))
        if self.final and osize:
            self.final_output = _uint(data, base - trans_bytes - count * osize - osize, osize)


def fst_entries(data: bytes, where: str) -> dict[str, int]:
    """Every (token, token id) of an ``fst`` map.

    Raises: ``CorruptFileError`` naming ``where`` when the bytes are not a readable map.
    """
    try:
        version = _uint(data, 0, 8)
        end = len(data) - (FST_CHECKSUM_BYTES if version >= FST_CHECKSUM_VERSION else 0)
        root, length = _uint(data, end - 8, 8), _uint(data, end - 16, 8)
        out: dict[str, int] = {}
        stack: list[tuple[int, bytes, int]] = [(root, b"", 0)]
        while stack:
            addr, key, acc = stack.pop()
            node = _FstNode(data, addr, version)
            if node.final:
                out[key.decode("utf-8")] = acc + node.final_output
            for inp, output, target in zip(node.inputs, node.outputs, node.targets, strict=True):
                stack.append((target, key + bytes([inp]), acc + output))
                if len(stack) > len(data) + 1:
                    raise ValueError("the transducer has a cycle")
    except (IndexError, ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(where, f"the token map does not decode: {exc}") from exc
    if len(out) != length:
        raise CorruptFileError(where, f"the token map holds {len(out)} tokens, its footer says {length}")
    return out


def unpack_bitpacker4x(data: memoryview | bytes, bits: int) -> tuple[np.ndarray, int]:
    """128 ``uint32`` of a BitPacker4x block of ``bits`` bits and the bytes it took."""
    if bits == 0:
        return np.zeros(BITPACK_BLOCK, np.uint32), 0
    if bits > 32:
        raise ValueError(f"a bit-packed block of {bits} bits per value")
    size = BITPACK_BLOCK * bits // 8
    words = np.frombuffer(data, "<u4", count=BITPACK_LANES * bits).reshape(bits, BITPACK_LANES)
    lanes = words.T.astype(np.uint64)
    bit = np.arange(_LANE_VALUES) * bits
    word, shift = bit >> 5, (bit & 31).astype(np.uint64)
    low = lanes[:, word] >> shift
    high = lanes[:, np.minimum(word + 1, bits - 1)] << (np.uint64(32) - shift)
    values = (low | high) & np.uint64((1 << bits) - 1)
    return values.T.reshape(BITPACK_BLOCK).astype(np.uint32), size


def _varints(data: memoryview, count: int, pos: int) -> tuple[list[int], int]:
    out = []
    for _ in range(count):
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        out.append(value)
    return out, pos


def decode_posting(
    blocks: list[bytes], length: int, block_size: int, where: str, fixed_tail: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Doc ids (``uint32``, ascending) and frequencies of one token's posting list; the last block
    holds varints, or plain ``u32``s with ``fixed_tail`` (``posting_tail_codec = fixed32_v1``)."""
    if block_size % BITPACK_BLOCK:
        raise CorruptFileError(where, f"posting block size {block_size} is not a multiple of 128")
    full = length // block_size
    ids: list[np.ndarray] = []
    freqs: list[np.ndarray] = []
    try:
        for number, raw in enumerate(blocks):
            block = memoryview(raw)[BLOCK_SCORE_BYTES:]
            if number < full:
                pos = 0
                for _ in range(block_size // BITPACK_BLOCK):
                    (first,) = struct.unpack_from("<I", block, pos)
                    deltas, size = unpack_bitpacker4x(block[pos + 5 :], block[pos + 4])
                    pos += 5 + size
                    ids.append((np.uint64(first) + np.cumsum(deltas, dtype=np.uint64)).astype(np.uint32))
                    values, size = unpack_bitpacker4x(block[pos + 1 :], block[pos])
                    pos += 1 + size
                    freqs.append(values)
                continue
            rest = length - full * block_size
            if fixed_tail:
                values = np.frombuffer(block, "<u4", count=2 * rest)
                ids.append(values[:rest].astype(np.uint32))
                freqs.append(values[rest:].astype(np.uint32))
                continue
            deltas_list, pos = _varints(block, rest, 0)
            counts, pos = _varints(block, rest, pos)
            if pos != len(block):
                raise ValueError(f"{len(block) - pos} bytes after the last posting")
            ids.append(np.cumsum(np.array(deltas_list, np.uint64)).astype(np.uint32))
            freqs.append(np.array(counts, np.uint32))
    except (IndexError, ValueError, struct.error) as exc:
        raise CorruptFileError(where, f"a posting list does not decode: {exc}") from exc
    doc_ids = np.concatenate(ids) if ids else np.zeros(0, np.uint32)
    if len(doc_ids) != length:
        raise CorruptFileError(where, f"a posting list holds {len(doc_ids)} documents, not {length}")
    return doc_ids, np.concatenate(freqs) if freqs else np.zeros(0, np.uint32)
