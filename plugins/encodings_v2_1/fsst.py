"""Vectorised FSST decompression (spec §5.4, ``Fsst{symbol_table, values}``).

Symbol table (always 2312 bytes)::

    u64 header: byte0 n_symbols, byte1 terminator, byte2 suffix_lim, byte3 encoder_switch,
                bytes 4..7 "TSSF"
    n_symbols x 8-byte symbols, then n_symbols x u8 lengths (packed right after the
    symbols, verified on pylance 14 bytes), zero filled to 2312 bytes

Compressed bytes: a code ``c != 255`` emits ``symbol[c][:len[c]]``; ``255`` is the escape
and emits the following byte literally.  With ``encoder_switch == 0`` the strings are
stored raw.

Escapes make a byte stream sequential, but only locally: inside a run of 255 bytes the
even positions are escapes and the odd ones literals, and the byte after an escape is a
literal.  Those masks, per-byte output lengths, a cumsum and one gather decode the whole
buffer without a Python loop over values.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lance_fw.errors import CorruptFileError

SYMBOL_TABLE_SIZE = 2312
_COLS = np.arange(8)
ESCAPE = 255


@dataclass(frozen=True)
class SymbolTable:
    n_symbols: int
    encoder_switch: bool
    table: np.ndarray  # (512, 8) uint8: rows 0..255 symbols, 256 + b = literal byte b
    lengths: np.ndarray  # (512,) int64: symbol lengths; 256.. -> 1; ESCAPE -> 0


def parse_symbol_table(raw: bytes, where: str = "fsst symbol table") -> SymbolTable:
    raw = bytes(raw)
    try:
        return _parse_cached(raw)
    except CorruptFileError as exc:
        raise CorruptFileError(where, exc.detail) from None


@lru_cache(maxsize=64)
def _parse_cached(raw: bytes) -> SymbolTable:
    where = "fsst symbol table"
    if len(raw) != SYMBOL_TABLE_SIZE:
        raise CorruptFileError(where, f"FSST symbol table is {len(raw)} bytes, expected {SYMBOL_TABLE_SIZE}")
    if raw[4:8] != b"TSSF":
        raise CorruptFileError(where, f"FSST symbol table has bad magic {raw[4:8]!r} (expected b'TSSF')")
    n_symbols, encoder_switch = raw[0], raw[3]
    # n symbols back to back, then their n lengths; the rest of the 2312 bytes is zero
    syms = np.frombuffer(raw, np.uint8, 8 * n_symbols, 8).reshape(n_symbols, 8)
    lens = np.frombuffer(raw, np.uint8, n_symbols, 8 + 8 * n_symbols).astype(np.int64)
    if lens.max(initial=0) > 8:
        raise CorruptFileError(where, f"FSST symbol length {int(lens.max())} > 8")
    table = np.zeros((512, 8), np.uint8)
    table[:n_symbols] = syms
    table[256:, 0] = np.arange(256, dtype=np.uint8)
    lengths = np.ones(512, np.int64)
    lengths[:256] = 0
    lengths[:n_symbols] = lens
    return SymbolTable(int(n_symbols), bool(encoder_switch), table, lengths)


def decompress(symbol_table, offsets: np.ndarray, data, where: str = "fsst") -> tuple[np.ndarray, np.ndarray]:
    """Decompress FSST strings.

    ``symbol_table``: the 2312 raw bytes or a :class:`SymbolTable`.
    ``offsets``: n+1 offsets into ``data`` (need not start at 0).
    Returns ``(offsets int64 starting at 0, data uint8)``.
    """
    st = symbol_table if isinstance(symbol_table, SymbolTable) else parse_symbol_table(symbol_table, where)
    offsets = np.asarray(offsets, dtype=np.int64)
    buf = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    buf = buf.reshape(-1).view(np.uint8)
    if offsets.size == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo < 0 or hi > buf.size or (offsets.size > 1 and np.any(np.diff(offsets) < 0)):
        raise CorruptFileError(
            where, f"FSST offsets [{lo}, {hi}] are not monotone within the {buf.size}-byte data"
        )
    c = buf[lo:hi]
    rel = offsets - lo
    if not st.encoder_switch:
        return rel, c.copy()
    n = c.size
    if n == 0:
        return rel, np.zeros(0, np.uint8)
    is_esc_byte = c == ESCAPE
    # position of each byte inside its run of 255s: k = i - run_start
    idx = np.arange(n, dtype=np.int64)
    prev = np.empty(n, bool)
    prev[0] = False
    prev[1:] = is_esc_byte[:-1]
    run_start = np.where(is_esc_byte & ~prev, idx, 0)
    np.maximum.accumulate(run_start, out=run_start)
    escape = is_esc_byte & (((idx - run_start) & 1) == 0)
    literal = np.empty(n, bool)
    literal[0] = False
    literal[1:] = escape[:-1]
    # an escape may not be the last byte of a string
    ends = rel[1:][rel[1:] > rel[:-1]] - 1
    if escape[ends].any():
        raise CorruptFileError(where, "FSST data has an escape byte (255) at the end of a string")
    key = c.astype(np.int64)
    if st.n_symbols < ESCAPE and np.any((c >= st.n_symbols) & ~escape & ~literal):
        raise CorruptFileError(where, f"FSST data uses a code beyond the {st.n_symbols} symbols of its table")
    key[literal] += 256
    out_len = st.lengths[key]
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(out_len, out=starts[1:])
    # every input byte expands to its (<= 8 byte) symbol row; keep the first len bytes
    rows = st.table[key]
    keep = _COLS[None, :] < out_len[:, None]
    out = rows[keep]
    return starts[rel], out


def compress_simple(strings: list[bytes], symbols: list[bytes]) -> tuple[bytes, np.ndarray, bytes]:
    """Test helper: greedy longest-match encoder with a given symbol list (<= 255 symbols).

    Returns ``(symbol_table_bytes, offsets, data)``.  Not a real FSST trainer.
    """
    assert len(symbols) <= 255 and all(1 <= len(s) <= 8 for s in symbols)
    raw = bytearray(SYMBOL_TABLE_SIZE)
    raw[0] = len(symbols)
    raw[3] = 1
    raw[4:8] = b"TSSF"
    for i, s in enumerate(symbols):
        raw[8 + 8 * i : 8 + 8 * i + len(s)] = s
        raw[8 + 8 * len(symbols) + i] = len(s)
    by_len = sorted(range(len(symbols)), key=lambda i: -len(symbols[i]))
    out = bytearray()
    offs = [0]
    for s in strings:
        i = 0
        while i < len(s):
            for code in by_len:
                sym = symbols[code]
                if s.startswith(sym, i):
                    out.append(code)
                    i += len(sym)
                    break
            else:
                out += bytes([ESCAPE, s[i]])
                i += 1
        offs.append(len(out))
    return bytes(raw), np.array(offs, np.int64), bytes(out)
