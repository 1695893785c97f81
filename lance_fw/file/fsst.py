"""FSST (spec §5.4, ``Fsst{symbol_table, values}``): whole-array numpy decoder and encoder.

Symbol table (always 2312 bytes)::

    u64 header: byte0 n_symbols, byte1 terminator, byte2 suffix_lim, byte3 encoder_switch,
                bytes 4..7 "TSSF"
    n_symbols x 8-byte symbols, then n_symbols x u8 lengths (packed right after the
    symbols, verified on pylance 14 bytes), zero filled to 2312 bytes

Compressed bytes: a code ``c != 255`` emits ``symbol[c][:len[c]]``; ``255`` is the escape
and emits the following byte literally.  With ``encoder_switch == 0`` the strings are
stored raw.

Decoding: escapes make a byte stream sequential only locally (inside a run of 255 bytes the
even positions are escapes and the odd ones literals), so the escapes are found from the few
255 bytes alone; every code then names one entry of a 512-entry table (its symbol, or the
escaped byte as entry 256 + b, or nothing for the escape itself), and pyarrow's ``take`` of
those entries out of the table as a binary array lays their bytes end to end with the
offsets of each code's output: the strings' offsets are read off at their first codes.
(One C++ pass; the numpy cumsum-and-scatter of 8-byte words it replaced ran ~1.5x slower.)
Pages of longer strings are taken two codes at a time from a 131,072-entry table of code pairs
(and of pairs whose first byte is an escaped literal), built per symbol table and cached:
``take``'s cost is mostly per entry, so pairs halve it.

Encoding lives in ``fsst_encode``. Both live in the file layer because both encoding families
use them: 2.1+ mini-block and full-zip pages, and 2.0's ``Fsst`` array encoding.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util import pools
from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import RawBytes, as_u8, binary_array, binary_views, pool_empty

SYMBOL_TABLE_SIZE = 2312
MAGIC = b"TSSF"
ESCAPE = 255
#: Bytes one code may expand to (a symbol is at most one 8-byte word).
MAX_SYMBOL_LEN = 8
#: Rows of the decode table: 256 codes, then the 256 literal bytes (escaped byte b is row 256 + b).
_TABLE_ROWS = 512
#: ``BYTE_MASKS[k]`` keeps the low k bytes of a little-endian u64.
BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(MAX_SYMBOL_LEN + 1)], np.uint64)


# --- decoding --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # identity: a parsed table keys the cache of its pair table
class SymbolTable:
    """A parsed table: ``words[c]`` is code c's symbol as a little-endian u64 (row 256 + b is the
    literal byte b) and ``lengths[c]`` its length. The escape and the codes past ``n_symbols``
    have length 0: a well-formed stream emits nothing for an escape, and a code without a symbol
    is found by counting the zero lengths."""

    n_symbols: int
    encoder_switch: bool
    words: np.ndarray  # (512,) uint64
    lengths: np.ndarray  # (512,) uint8

    @cached_property
    def entries(self) -> pa.LargeBinaryArray:
        """The 512 entries as a binary array, what ``take`` expands codes with (``_entries``)."""
        return _entries(self.words, self.lengths)

    @cached_property
    def symbols(self) -> tuple[bytes, ...]:
        """Each code's symbol as bytes (the loop of ``_decompress_looped``). Built on first use:
        a scan of pages with a table each (pylance's pages cut small) never loops, and building
        it was a third of parsing a table."""
        raw = self.words[: self.n_symbols].astype("<u8").tobytes()
        return tuple(raw[8 * c : 8 * c + n] for c, n in enumerate(self.lengths[: self.n_symbols].tolist()))


def parse_symbol_table(raw: bytes, where: str = "fsst symbol table") -> SymbolTable:
    raw = bytes(raw)
    try:
        return _parse_cached(raw)
    except CorruptFileError as exc:
        raise CorruptFileError(where, exc.detail) from None


#: Parsed symbol tables kept (``_parse_cached``), each about 10-20 KiB once its entries and
#: symbols are built. pylance's pages cut small hold a table each: a 2M-row string column has
#: 234, and with 64 kept a take of 100 rows parsed again and rebuilt the symbols of every page
#: it touched (13 of its 41 ms).
SYMBOL_TABLES_CACHED = 1024


@lru_cache(maxsize=SYMBOL_TABLES_CACHED)
def _parse_cached(raw: bytes) -> SymbolTable:
    where = "fsst symbol table"
    if len(raw) != SYMBOL_TABLE_SIZE:
        raise CorruptFileError(where, f"FSST symbol table is {len(raw)} bytes, expected {SYMBOL_TABLE_SIZE}")
    if raw[4:8] != MAGIC:
        raise CorruptFileError(where, f"FSST symbol table has bad magic {raw[4:8]!r} (expected {MAGIC!r})")
    n_symbols, encoder_switch = raw[0], raw[3]
    if n_symbols > ESCAPE:
        raise CorruptFileError(where, f"FSST symbol table claims {n_symbols} symbols (at most {ESCAPE})")
    syms = np.frombuffer(raw, "<u8", n_symbols, 8)
    lens = np.frombuffer(raw, np.uint8, n_symbols, 8 + 8 * n_symbols)
    if lens.max(initial=0) > MAX_SYMBOL_LEN:
        raise CorruptFileError(where, f"FSST symbol length {int(lens.max())} > {MAX_SYMBOL_LEN}")
    words = np.zeros(_TABLE_ROWS, np.uint64)
    words[:n_symbols] = syms & BYTE_MASKS[lens]
    words[256:] = np.arange(256, dtype=np.uint64)
    lengths = np.ones(_TABLE_ROWS, np.uint8)
    lengths[:256] = 0
    lengths[:n_symbols] = lens
    return SymbolTable(int(n_symbols), bool(encoder_switch), words, lengths)


def decompress(
    symbol_table: bytes | SymbolTable,
    offsets: np.ndarray,
    data: RawBytes,
    where: str = "fsst",
    offsets_checked: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Decompress FSST strings.

    ``symbol_table``: the 2312 raw bytes or a :class:`SymbolTable`.
    ``offsets``: n+1 offsets into ``data`` (need not start at 0).
    ``offsets_checked``: the caller already checked that the offsets never go down (a page's
    decoder does, as it lays its chunks' values end to end); the check is then not repeated.
    Returns ``(offsets int64 starting at 0, data uint8)``.
    """
    st = symbol_table if isinstance(symbol_table, SymbolTable) else parse_symbol_table(symbol_table, where)
    offsets = np.asarray(offsets, dtype=np.int64)
    buf = as_u8(data)
    if offsets.size == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo < 0 or hi > buf.size:
        raise _not_monotone(lo, hi, buf.size, where)
    if hi - lo <= LOOP_CODES and offsets.size <= LOOP_CODES + 1 and st.encoder_switch:
        # a few strings: integer arithmetic and a loop (numpy's calls cost more than the work)
        bounds = [at - lo for at in offsets.tolist()]
        if not offsets_checked and any(b < a for a, b in itertools.pairwise(bounds)):
            raise _not_monotone(lo, hi, buf.size, where)
        return _decompress_looped(st, buf[lo:hi].tobytes(), bounds, where)
    if not offsets_checked and offsets.size > 1 and np.any(offsets[1:] < offsets[:-1]):
        raise _not_monotone(lo, hi, buf.size, where)
    codes = buf[lo:hi]
    rel = offsets - lo if lo else offsets  # read only below: no copy of a million offsets
    if not st.encoder_switch:
        return rel.copy() if rel is offsets else rel, codes.copy()
    if codes.size == 0:
        return rel, np.zeros(0, np.uint8)
    pairs = (
        _pair_entries(st)
        if codes.size >= PAIR_MIN_CODES and codes.size >= PAIR_MIN_CODES_PER_STRING * (rel.size - 1)
        else None
    )
    parts = min(pools.workers(), codes.size // PARALLEL_PART_BYTES)
    if parts > 1:
        return _decompress_in_parts(st, codes, rel, parts, pairs, where)
    return _decompress_codes(st, codes, rel, pairs, where)


def decompress_tables(
    symbol_tables: Sequence[bytes], offsets: np.ndarray, data: RawBytes, cuts: Sequence[int], where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Decompress FSST strings, strings ``cuts[i]`` to ``cuts[i + 1]`` with table
    ``symbol_tables[i]`` (``cuts`` from 0 to the number of strings): consecutive pages of a column,
    each with its own table, whose codes lie end to end in ``data`` at ``offsets`` (n+1, need not
    start at 0). Returns what :func:`decompress` does.

    Why: a page of pylance's pages cut small holds ~25,000 strings, and decoding page by page
    paid each page's numpy and Arrow calls. Here every table's 512 entries are laid end to end and
    one ``take`` expands the codes of all pages, each code keyed into its page's rows."""
    tables = [parse_symbol_table(raw, where) for raw in symbol_tables]
    offsets = np.asarray(offsets, dtype=np.int64)
    few = offsets.size and int(offsets[-1]) - int(offsets[0]) <= LOOP_CODES * len(tables)
    if len(tables) < 2 or few:  # a take's few rows
        parts = [
            decompress(st, offsets[a : b + 1], data, where)
            for st, (a, b) in zip(tables, itertools.pairwise(cuts))
        ]
        return _joined_parts(parts)
    buf = as_u8(data)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo < 0 or hi > buf.size or (offsets.size > 1 and np.any(offsets[1:] < offsets[:-1])):
        raise _not_monotone(lo, hi, buf.size, where)
    codes, rel = buf[lo:hi], offsets - lo
    code_cuts = rel[np.asarray(cuts, np.int64)].tolist()
    literals = [
        _literals(codes[a:b], rel[s : e + 1] - a, st.n_symbols, where) + a
        for st, (a, b), (s, e) in zip(tables, itertools.pairwise(code_cuts), itertools.pairwise(cuts))
        if st.encoder_switch
    ]
    key = pool_empty(codes.size, np.uint32)
    key[...] = codes
    if literals:
        key[np.concatenate(literals)] += 256
    for i, (st, (a, b)) in enumerate(zip(tables, itertools.pairwise(code_cuts))):
        # each page's codes into its rows (a slice each: a per-code np.repeat cost ~4x more); a
        # page stored raw (pylance's encoder switched off, as for a column's small last page) is
        # all literal bytes, rows 256 + b of its table
        shift = _TABLE_ROWS * i + (0 if st.encoder_switch else 256)
        if shift and b > a:
            key[a:b] += shift
    entries = _entries(
        np.concatenate([st.words for st in tables]), np.concatenate([st.lengths for st in tables])
    )
    out_offsets, out_data = binary_views(pc.take(entries, pa.array(key)))
    return out_offsets[rel], out_data


def _joined_parts(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Decompressed (offsets from 0, data) parts laid end to end."""
    if len(parts) == 1:
        return parts[0]
    sizes = [int(part_offsets[-1]) for part_offsets, _ in parts]
    data = pool_empty(sum(sizes), np.uint8)
    np.concatenate([part_data for _, part_data in parts], out=data)
    offsets = pool_empty(sum(len(part_offsets) - 1 for part_offsets, _ in parts) + 1, np.int64)
    at = shift = 0
    for (part_offsets, _), size in zip(parts, sizes, strict=True):
        count = len(part_offsets) - 1
        np.add(part_offsets[:-1], shift, out=offsets[at : at + count])
        at, shift = at + count, shift + size
    offsets[-1] = shift
    return offsets, data


def _not_monotone(lo: int, hi: int, size: int, where: str) -> CorruptFileError:
    return CorruptFileError(where, f"FSST offsets [{lo}, {hi}] are not monotone within the {size}-byte data")


#: Compressed bytes per part above which a page is decoded as several parts in parallel threads
#: (every numpy step here releases the GIL; one part runs ~6 steps over every code). Parts pay
#: where one large page would leave a core idle (pylance's text body: one 17 MB page); a scan
#: already decodes pages of a few MB side by side, and splitting those too cost their joins and
#: handoffs (at 512 KiB: lance_fw's text table, 1.4 MB pages, scanned in 279 ms, at 1 MiB in 232;
#: its 2M names 82 -> 74 ms; pylance's files unchanged: 199 -> 204 and 87 -> 86 ms).
PARALLEL_PART_BYTES = 1 << 20
#: The pool parts are decoded on (never the caller's own: a column decode may run on a pool).
_FSST_POOL = "fsst-decode"


def _decompress_in_parts(
    st: SymbolTable, codes: np.ndarray, rel: np.ndarray, parts: int, pairs: pa.Array | None, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decompress_codes` over ``parts`` runs of whole strings (an escape never ends a
    string, so no escape pair is split), side by side; their outputs laid end to end."""
    # int64 targets: float ones would make numpy cast all of ``rel`` (a million offsets) to float
    targets = np.arange(1, parts, dtype=np.int64) * codes.size // parts
    cuts = np.searchsorted(rel, targets).tolist()
    bounds = [0, *sorted(set(cuts) - {0, len(rel) - 1}), len(rel) - 1]

    def run(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        a, b = span
        return _decompress_codes(st, codes[rel[a] : rel[b]], rel[a : b + 1] - rel[a], pairs, where)

    return _joined_parts(list(pools.pool(_FSST_POOL).map(run, itertools.pairwise(bounds))))


#: Codes up to which strings are decoded by a Python loop: a point lookup's one value, or the few
#: rows a take wants of each of many pages (each page has its own symbol table, so they are
#: decoded page by page). The array path costs ~120 us of calls on today's box whatever the
#: length, the loop ~17 us plus ~0.5 us a code (crossover near 200 codes, measured).
LOOP_CODES = 128


def _decompress_looped(
    st: SymbolTable, codes: bytes, bounds: list[int], where: str
) -> tuple[np.ndarray, np.ndarray]:
    """The strings ``codes[bounds[i]:bounds[i+1]]`` decompressed one by one."""
    symbols = st.symbols
    if not codes or max(codes) < st.n_symbols:  # no escape, no code without a symbol
        parts = [b"".join([symbols[c] for c in codes[a:b]]) for a, b in itertools.pairwise(bounds)]
    else:
        parts = [_decompress_one(st, codes[a:b], where) for a, b in itertools.pairwise(bounds)]
    offsets = np.array(list(itertools.accumulate(map(len, parts), initial=0)), np.int64)
    return offsets, np.frombuffer(b"".join(parts), np.uint8)


def _decompress_one(st: SymbolTable, codes: bytes, where: str) -> bytes:
    """One string's codes decompressed, with :func:`_decompress_codes`' checks."""
    out = bytearray()
    i, n = 0, len(codes)
    while i < n:
        code = codes[i]
        if code == ESCAPE:
            if i + 1 >= n:
                raise CorruptFileError(where, "FSST data has an escape byte (255) at the end of a string")
            out.append(codes[i + 1])
            i += 2
            continue
        if code >= st.n_symbols:
            raise CorruptFileError(
                where, f"FSST data uses a code beyond the {st.n_symbols} symbols of its table"
            )
        out += st.symbols[code]
        i += 1
    return bytes(out)


def _decompress_codes(
    st: SymbolTable, codes: np.ndarray, rel: np.ndarray, pairs: pa.Array | None, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Decompress ``codes`` (the strings at offsets ``rel``, from 0) with an encoder's table, two
    codes at a time when given its ``pairs`` (:func:`_pair_entries`)."""
    literals = _literals(codes, rel, st.n_symbols, where)
    if pairs is not None:
        return _decompress_pairs(st, codes, rel, literals, pairs)
    key = pool_empty(codes.size, np.uint16)
    key[...] = codes
    key[literals] += 256
    offsets, data = binary_views(pc.take(st.entries, pa.array(key)))
    return offsets[rel], data


def _entries(words: np.ndarray, lengths_u8: np.ndarray) -> pa.LargeBinaryArray:
    """The decode table's 512 entries as a binary array (``take`` input): code c's symbol, the
    escape's nothing, then the 256 single bytes escaped bytes stand for (several tables' entries
    laid end to end: 512 each)."""
    raw = words.astype("<u8").view(np.uint8).reshape(-1, MAX_SYMBOL_LEN)
    lengths = lengths_u8.astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return binary_array(offsets, raw[np.arange(MAX_SYMBOL_LEN)[None, :] < lengths[:, None]])


def _literals(codes: np.ndarray, rel: np.ndarray, n_symbols: int, where: str) -> np.ndarray:
    """Positions of the escaped bytes (sorted), the codes checked: no code in ``[n_symbols, 255)``
    (it names no symbol) and no escape ending a string.

    One pass over the codes finds every byte >= ``n_symbols``: the escapes (255) and the codes
    without a symbol, both rare; a byte among them that an escape makes a literal is neither.
    (A separate range check of every decode key cost as much as finding the escapes.)"""
    rare = np.flatnonzero(codes >= n_symbols)
    literals = np.zeros(0, np.int64)
    if not rare.size:
        return literals
    is_255 = codes[rare] == ESCAPE
    esc_candidates = rare[is_255]
    if esc_candidates.size:
        # runs of consecutive 255 bytes: the first of a run is an escape (the byte before it is
        # not one, or it would be in the run), then they alternate escape / literal
        new_run = np.ones(esc_candidates.size, bool)
        new_run[1:] = esc_candidates[1:] != esc_candidates[:-1] + 1
        run_first = np.flatnonzero(new_run)
        k = np.arange(esc_candidates.size) - np.repeat(run_first, np.diff(np.append(run_first, new_run.size)))
        escapes = esc_candidates[(k & 1) == 0]
        ends = rel[1:][rel[1:] > rel[:-1]] - 1  # last byte of each non-empty string
        is_end = np.zeros(codes.size, bool)
        is_end[ends] = True
        if is_end[escapes].any():
            raise CorruptFileError(where, "FSST data has an escape byte (255) at the end of a string")
        literals = escapes + 1
    beyond = rare[~is_255]
    if beyond.size and not np.isin(beyond, literals).all():
        raise CorruptFileError(where, f"FSST data uses a code beyond the {n_symbols} symbols of its table")
    return literals


#: Codes of a page from which its strings are decoded two codes at a time, and the mean codes per
#: string. ``take`` copies one table entry per key, at a cost mostly per entry rather than per
#: byte: the body page of the pylance-written text table (17.5M codes) takes 194 ms one code at a
#: time and 75-80 ms in pairs (in isolation); the text table's single-threaded scan went from
#: 337 to 232-261 ms of CPU (lance_fw-written) and 333-359 to 287-310 (pylance-written). Each
#: string that starts at an odd code needs its start fixed, so short strings gain nothing: 2M
#: names of 3.3 codes scanned 10% slower in pairs; 40-byte titles (~7 codes) gain.
PAIR_MIN_CODES = 256 << 10
PAIR_MIN_CODES_PER_STRING = 5
#: Pair tables kept (each ~2 MiB, built in a few ms): a scan decodes each page with its own table.
PAIR_TABLES_CACHED = 8
#: ``_pair_entries`` rows: a code pair ``a + 256 b`` first, then ``PAIR_LITERAL_FIRST + lit + 256 b``
#: for a pair whose first byte is an escaped literal.
PAIR_LITERAL_FIRST = 1 << 16


@cache
def _pair_rows() -> tuple[pa.Array, pa.Array]:
    """For each pair-table row, the two decode-table entries (``_entries``) it joins.

    Rows ``a + 256 b`` (codes a then b): a's symbol then b's, except that after an escape (a =
    255) b is the escaped byte (entry 256 + b); an escape second adds nothing (its literal starts
    the next pair). Rows ``PAIR_LITERAL_FIRST + lit + 256 b``: the literal byte, then b's symbol."""
    a = np.tile(np.arange(256, dtype=np.int32), 256)
    b = np.repeat(np.arange(256, dtype=np.int32), 256)
    first = np.concatenate([a, 256 + a])
    second = np.concatenate([np.where(a == ESCAPE, 256 + b, b), b])
    return pa.array(first), pa.array(second)


@lru_cache(maxsize=PAIR_TABLES_CACHED)
def _pair_entries(st: SymbolTable) -> pa.LargeBinaryArray:
    """What each pair of codes decodes to (rows as in :func:`_pair_rows`)."""
    first, second = _pair_rows()
    nothing_between = pa.scalar(b"", pa.large_binary())
    return pc.binary_join_element_wise(
        pc.take(st.entries, first), pc.take(st.entries, second), nothing_between
    )


def _decompress_pairs(
    st: SymbolTable, codes: np.ndarray, rel: np.ndarray, literals: np.ndarray, pairs: pa.Array
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decompress_codes` two codes at a time: bytes 2i and 2i+1 are one row of ``pairs``
    (an odd count padded with an escape, which adds nothing). A string starting at an odd code
    starts after the first code of its pair: the output of that code (a literal's 1 byte, else
    its symbol) is added to where the pair's output starts. (A string never starts with a
    literal: an escape never ends the string before it.)"""
    n = codes.size
    padded = pool_empty(n + (n & 1), np.uint8)
    padded[:n] = codes
    padded[n:] = ESCAPE
    key = pool_empty(padded.size // 2, np.int32)  # pool memory: a big page's keys fault in no pages
    key[...] = padded.view("<u2")
    first_literals = literals[(literals & 1) == 0]
    key[first_literals >> 1] += PAIR_LITERAL_FIRST
    pair_offsets, data = binary_views(pc.take(pairs, pa.array(key)))
    starts = pair_offsets[rel >> 1]
    odd = np.flatnonzero(rel & 1)
    if odd.size:
        before = rel[odd] - 1  # the first code of its pair: a symbol or a literal
        shift = st.lengths[codes[before]].astype(np.int64)
        if first_literals.size:
            shift[key[before >> 1] >= PAIR_LITERAL_FIRST] = 1
        starts[odd] += shift
    return starts, data
