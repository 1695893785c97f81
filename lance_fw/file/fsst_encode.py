"""FSST encoding (the decoder, and the symbol table layout, are in ``fsst``).

Encoding (the reader's only contract is the table and the codes, so the table need not be
pylance's): :func:`train` builds a table from a sample of the page by a few deterministic
rounds of "tokenise, count tokens and adjacent token pairs, keep the 255 best by
count x length"; :func:`compress` tokenises every string in parallel, one token per string
segment per numpy step (segments of at most :data:`SEGMENT_BYTES`, so the number of steps is
bounded whatever the string lengths).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util import sets
from lance_fw.file.buffers import binary_array, binary_views
from lance_fw.file.fsst import BYTE_MASKS, ESCAPE, MAGIC, MAX_SYMBOL_LEN, SYMBOL_TABLE_SIZE

#: Longest string piece tokenised on its own (bounds the numpy steps; a symbol never spans two).
SEGMENT_BYTES = 256
#: Pieces of the training sample: shorter than SEGMENT_BYTES, so that a training round (a few
#: hundred segments, where each numpy step costs its call overhead) takes fewer steps.
TRAIN_SEGMENT_BYTES = 64
#: Segments tokenised together (an 8 MiB page of 256-byte pieces is one block). Alone, blocks of
#: 8192-16384 run ~25% faster (a step's gather of windows then hits cache); but pages are encoded
#: in two or more threads, and numpy steps on 8192 elements spend enough of their time holding the
#: GIL that two threads ran at 1.0-1.25x one; at 65536 they run at 1.8x (writing the bench's text
#: table: 16384 and 65536 within noise of each other, 8192 slower).
BLOCK_SEGMENTS = 65536
#: Bytes of sample the table is trained on, and the longest piece of one string in it.
SAMPLE_BYTES = 32 * 1024
SAMPLE_STRING_BYTES = 512
TRAIN_ROUNDS = 5
#: Symbols an encoder's table holds: the format's most (code 255 is the escape).
MAX_SYMBOLS = 255
#: Token code of an escaped byte (never a symbol's code: a table holds at most 255 symbols).
_ESC_TOKEN = ESCAPE
#: ``_IMASKS[k]`` keeps the low k bytes of a little-endian i64 (the tokeniser works on int64
#: windows so that masked words index tables without a conversion).
_IMASKS = BYTE_MASKS.view(np.int64)
_PREFIX3 = (1 << 24) - 1
_PREFIX2 = (1 << 16) - 1
#: A symbol of >= 3 bytes is looked up by a multiplicative (Fibonacci) hash of its first three
#: bytes into 2**_SLOT_BITS slots: 64 Ki entries stay in cache and are built per page in
#: microseconds (a table indexed by the three bytes themselves took 16 MiB to allocate and fill
#: per codebook). Of two symbols sharing a slot only the better one is kept.
_SLOT_BITS = 16
#: 2**64 / golden ratio, as the int64 it wraps to (the product wraps too: only its top bits count)
_SLOT_MULT = np.int64(0x9E3779B97F4A7C15 - (1 << 64))
_SLOT_SHIFT = 64 - _SLOT_BITS


def _slot(prefix3: np.ndarray) -> np.ndarray:
    """Lookup slot of int64 values (a symbol's or a window's first three bytes): the product's
    top bits, arithmetic-shifted, so in ``[-2**15, 2**15)``: a table of 2**16 entries is indexed
    from both ends."""
    return (prefix3 * _SLOT_MULT) >> _SLOT_SHIFT


@dataclass(frozen=True)
class Codebook:
    """An encoder's table and the lookups its tokeniser uses.

    A token is the one symbol of >= 3 bytes in the slot of the next three bytes (``long_code``)
    when it matches in full, else the best code of <= 2 bytes for the next two (``short_code``).
    Bytes past the end of a string read as 0, so no multi-byte symbol ends in a 0 byte (it
    could match there). Lookups hold ``intp`` codes so that the next lookups index with them as
    they are (numpy converts a uint8 index array before every gather).
    """

    words: np.ndarray  # (n,) uint64, bytes past the length are 0
    lengths: np.ndarray  # (n,) uint8
    long_code: np.ndarray  # (2**_SLOT_BITS,) intp, _ESC_TOKEN where no symbol of >= 3 bytes is
    short_code: np.ndarray  # (2**16,) intp
    token_lengths: np.ndarray  # (256,) intp: bytes a token consumes (_ESC_TOKEN: 1)
    token_words: np.ndarray  # (256,) int64
    token_masks: np.ndarray  # (256,) int64: _IMASKS of the token's length

    def symbol_table(self) -> bytes:
        """The 2312-byte table (encoder switch on; terminator and suffix limit are encoder-only)."""
        n = len(self.words)
        raw = bytearray(SYMBOL_TABLE_SIZE)
        raw[0] = n
        raw[3] = 1
        raw[4:8] = MAGIC
        raw[8 : 8 + 8 * n] = self.words.astype("<u8").tobytes()
        raw[8 + 8 * n : 8 + 9 * n] = self.lengths.tobytes()
        return bytes(raw)


def _usable(words: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate symbols (best first) a codebook can hold: no multi-byte symbol ending in 0, and
    of the >= 3-byte symbols sharing a lookup slot only the first."""
    last = (words >> (np.uint64(8) * (lengths.astype(np.uint64) - np.uint64(1)))) & np.uint64(0xFF)
    keep = (lengths == 1) | (last != 0)
    long_idx = np.flatnonzero(keep & (lengths >= 3))
    if long_idx.size:
        first = sets.first_indices(_slot(words[long_idx].astype(np.int64) & _PREFIX3))
        keep[long_idx] = False
        keep[long_idx[first]] = True
    return words[keep], lengths[keep]


def _codebook(words: np.ndarray, lengths: np.ndarray) -> Codebook:
    """Lookups for at most MAX_SYMBOLS symbols that :func:`_usable` keeps."""
    words = np.asarray(words, np.uint64)
    lengths = np.asarray(lengths, np.uint8)
    n = len(words)
    assert n <= MAX_SYMBOLS
    byte_code = np.full(256, _ESC_TOKEN, np.intp)
    one = np.flatnonzero(lengths == 1)
    byte_code[words[one].astype(np.int64)] = one
    short_code = np.tile(byte_code, 256)  # b0 | b1 << 8 -> the 1-byte symbol of b0
    two = np.flatnonzero(lengths == 2)
    short_code[words[two].astype(np.int64)] = two
    long_code = np.full(1 << _SLOT_BITS, _ESC_TOKEN, np.intp)
    long_idx = np.flatnonzero(lengths >= 3)[::-1]  # the first of a slot is written last and stays
    long_code[_slot(words[long_idx].astype(np.int64) & _PREFIX3)] = long_idx
    token_lengths = np.ones(256, np.intp)
    token_lengths[:n] = lengths
    token_words = np.zeros(256, np.int64)
    token_words[:n] = words.view(np.int64)
    token_masks = _IMASKS[token_lengths]
    token_words[_ESC_TOKEN] = -1  # never matches a masked 1-byte window: falls to short_code
    return Codebook(words, lengths, long_code, short_code, token_lengths, token_words, token_masks)


@dataclass(frozen=True)
class Segments:
    """The pieces of at most ``piece`` bytes strings are tokenised in (a symbol never spans two):
    ``start``/``end`` of each piece in order, and ``of_string[i]`` the first piece of string i
    (``n + 1`` entries; an empty string has none, so its entry is the next string's)."""

    start: np.ndarray
    end: np.ndarray
    of_string: np.ndarray


def _segments(offsets: np.ndarray, piece: int) -> Segments:
    """Every string of ``offsets`` cut into pieces of at most ``piece`` bytes."""
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    if lengths.size and 0 < int(lengths.min()) and int(lengths.max()) <= piece:  # one piece each
        return Segments(starts, ends, np.arange(offsets.size, dtype=np.int64))
    pieces = (lengths + piece - 1) // piece
    of_string = np.zeros(offsets.size, np.int64)
    np.cumsum(pieces, out=of_string[1:])
    first = np.repeat(starts, pieces)
    k = np.arange(first.size) - np.repeat(of_string[:-1], pieces)
    seg_start = first + k * piece
    return Segments(seg_start, np.minimum(seg_start + piece, np.repeat(ends, pieces)), of_string)


def _windows(data: np.ndarray, extra: int = 0) -> np.ndarray:
    """``w[p]``: the 8 bytes from position p as a little-endian int64 (zeros past the end), for
    p up to ``data.size + extra``."""
    padded = np.zeros(data.size + extra + MAX_SYMBOL_LEN, np.uint8)
    padded[: data.size] = data
    return np.ndarray((data.size + extra + 1,), "<i8", padded, 0, (1,))


@dataclass(frozen=True)
class Tokens:
    """A tokenised byte string: ``codes`` (uint8, ``_ESC_TOKEN`` for an escaped byte) in byte
    order, ``seg_first[j]`` the index of segment j's first token (one more entry: the count), and
    per tokenising step (``_tokenise``), keyed by its block's first segment and its number in the
    block, the segments it advanced, their positions and the codes it found (``positions`` places
    any token's byte from them)."""

    codes: np.ndarray
    seg_first: np.ndarray
    steps: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]

    def positions(self, which: np.ndarray) -> np.ndarray:
        """Byte position of tokens ``which``: token ``seg_first[j] + k`` of segment j was found
        at step k of j's block, whose segments are in order."""
        seg = np.searchsorted(self.seg_first, which, "right") - 1
        step = which - self.seg_first[seg]
        out = np.empty(which.size, np.int64)
        if not which.size:
            return out
        span = int(step.max()) + 1
        key = seg // BLOCK_SEGMENTS * span + step
        order = np.argsort(key, kind="stable")
        key = key[order]
        cuts = [0, *(np.flatnonzero(key[1:] != key[:-1]) + 1).tolist(), key.size]
        for a, b in itertools.pairwise(cuts):  # the tokens of one step
            at = order[a:b]
            block, k = divmod(int(key[a]), span)
            segs, pos, _ = self.steps[block * BLOCK_SEGMENTS, k]
            out[at] = pos[np.searchsorted(segs, seg[at])]
        return out

    def all_positions(self, book: Codebook, segments: Segments) -> np.ndarray:
        """Byte position of every token: its segment's start plus the lengths of the tokens
        before it in the segment."""
        before = np.zeros(self.codes.size + 1, np.int64)  # token bytes before each token
        np.cumsum(book.token_lengths[self.codes], out=before[1:])
        counts = np.diff(self.seg_first)
        return before[:-1] + np.repeat(segments.start - before[self.seg_first[:-1]], counts)


def _lookup(book: Codebook, word: np.ndarray) -> np.ndarray:
    """The code (intp) of the token each window (int64, the next bytes) starts with."""
    code = book.long_code[_slot(word & _PREFIX3)]
    full = (word & book.token_masks[code]) == book.token_words[code]
    # where no long symbol matches, the best of <= 2 bytes (looked up for those alone: most
    # tokens of text are long symbols, and the lookup and select cost every one)
    miss = np.flatnonzero(~full)
    code[miss] = book.short_code[word[miss] & _PREFIX2]
    return code


#: Share of a block's tracked segments that may have finished before they are dropped from the
#: step arrays. Dropping costs three boolean selections (about a lookup's work per segment) and a
#: few percent of segments finish each step, so a finished segment rides along a few steps,
#: looking up the zeros past the data, rather than being dropped at once (10-15% of a page).
FINISHED_SHARE = 0.125
#: Most steps between two drops: bounds how far a finished segment reads into the zero pad.
MAX_RIDE = 16
#: ``end`` of a finished segment: no token reaches it.
_FINISHED = np.iinfo(np.int64).max


def _tokenise(book: Codebook, data: np.ndarray, segments: Segments) -> Tokens:
    """``data``'s segments tokenised: every segment advances one token per step; the segments
    go in blocks of BLOCK_SEGMENTS.

    Each step keeps its codes and the segments it advanced; a segment's token count is the step
    it finished at, and once every count is known each step's codes are placed at once. (Marking
    codes in an array as long as the data and picking them out by ``flatnonzero`` cost more: a
    pass over every byte of an 8 MiB page.) A finished segment moves to the zero pad past the
    data and stays in the step arrays until FINISHED_SHARE of them have finished (or MAX_RIDE
    steps): the codes it gets there are placed too, at its later steps, so they fall on tokens
    of the segments after it, which steps placed later, last step first, overwrite."""
    n_seg = segments.start.size
    pad_at = data.size + 1  # where finished segments read (a 1-byte token of zeros a step)
    words = _windows(data, 1 + MAX_RIDE)
    window = np.ndarray(words.shape, "V8", words.base, 0, (1,))  # fast to gather
    steps: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # Tokens.steps
    counts = np.zeros(n_seg, np.int64)
    for first in range(0, n_seg, BLOCK_SEGMENTS):
        pos = segments.start[first : first + BLOCK_SEGMENTS]
        end = segments.end[first : first + BLOCK_SEGMENTS].copy()  # finished ones are marked
        seg = np.arange(first, first + pos.size)
        live = pos.size  # segments not finished (every segment has a byte: at least one step)
        step = riding = 0
        while live:
            word = window[pos].view(np.int64)
            code = _lookup(book, word)
            after = pos + book.token_lengths[code]
            finished = np.flatnonzero(after >= end)
            if finished.size:
                # a token reaching past its segment's end: looked up again with the bytes past
                # the end as 0 (what every token's window once was: masking all cost 4 numpy
                # steps; a token within the end is the same either way, as it matches the same
                # bytes)
                over = finished[after[finished] > end[finished]]
                if over.size:
                    near = word[over] & _IMASKS[end[over] - pos[over]]
                    code[over] = _lookup(book, near)
                    after[over] = pos[over] + book.token_lengths[code[over]]
                    finished = finished[after[finished] == end[finished]]
            steps[first, step] = seg, pos, code.astype(np.uint8)
            step += 1
            if finished.size:
                counts[seg[finished]] = step
                after[finished] = pad_at
                end[finished] = _FINISHED
                live -= finished.size
            pos = after
            riding += 1
            if live and (pos.size - live > FINISHED_SHARE * pos.size or riding == MAX_RIDE):
                keep = end != _FINISHED
                pos, end, seg = pos[keep], end[keep], seg[keep]
                riding = 0
    seg_first = np.zeros(n_seg + 1, np.int64)
    np.cumsum(counts, out=seg_first[1:])
    total = int(seg_first[-1])
    # a finished segment's codes at step k land at most k places past the last token
    codes = np.empty(total + max((k for _, k in steps), default=0) + 1, np.uint8)
    firsts: dict[int, np.ndarray] = {}  # steps between two drops share their segment array
    for block_first, step in sorted(steps, key=lambda key: -key[1]):
        seg, _, code = steps[block_first, step]
        at = firsts.get(id(seg))
        if at is None:
            at = firsts[id(seg)] = seg_first[seg]
        codes[at + step] = code
    return Tokens(codes[:total], seg_first, steps)


#: Strings of a page from which it is checked for repeated strings, which are then tokenised once:
#: a string's tokens depend only on its bytes and the table, so the codes are the same. 1M names
#: of 5000 values: 103 -> 19 ms of CPU. The check counts the distinct values of an evenly spaced
#: sample, so a page of unique strings pays only that; the hash pass over a page costs ~20 ns a
#: string, against ~30 ns a token for tokenising.
DEDUPE_MIN_STRINGS = 4096
DEDUPE_SAMPLE = 2048
#: Distinct strings in the sample, as a fraction of it, up to which a page is deduplicated: a
#: sample of unique strings is all distinct, one from a page of ~10,000 values (uniform) 90%.
DEDUPE_SAMPLE_DISTINCT = 0.9


def compress(
    book: Codebook, offsets: np.ndarray, data: np.ndarray, piece: int = SEGMENT_BYTES
) -> tuple[np.ndarray, np.ndarray]:
    """FSST-compress the strings ``data[offsets[i]:offsets[i+1]]`` with ``book``: (offsets int64
    from 0, codes uint8)."""
    offsets = np.asarray(offsets, np.int64)
    data = np.asarray(data, np.uint8)
    if offsets.size - 1 >= DEDUPE_MIN_STRINGS:
        strings = binary_array(offsets, data)
        sample = strings.take(np.linspace(0, len(strings) - 1, DEDUPE_SAMPLE).astype(np.int64))
        if pc.count_distinct(sample).as_py() <= DEDUPE_SAMPLE_DISTINCT * DEDUPE_SAMPLE:
            return _compress_distinct(book, strings, piece)
    return _compress_each(book, offsets, data, piece)


def _compress_distinct(
    book: Codebook, strings: pa.LargeBinaryArray, piece: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compress` tokenising each distinct string once, then laying out every string's codes."""
    encoded = pc.dictionary_encode(strings)
    codes_offsets, codes = _compress_each(book, *binary_views(encoded.dictionary), piece)
    return binary_views(pc.take(binary_array(codes_offsets, codes), encoded.indices))


#: Escapes per token above which their bytes are found from every token's position (one pass
#: over all tokens) rather than looked up step by step (``Tokens.positions``).
MANY_ESCAPES = 1 / 16


def _compress_each(
    book: Codebook, offsets: np.ndarray, data: np.ndarray, piece: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compress`, every string tokenised."""
    base = offsets - offsets[0]
    body = data[int(offsets[0]) : int(offsets[-1])]
    segments = _segments(base, piece)
    tokens = _tokenise(book, body, segments)
    code = tokens.codes
    first = tokens.seg_first[segments.of_string]  # each string's first token (its first piece's)
    escaped = np.flatnonzero(code == _ESC_TOKEN)
    if not escaped.size:  # one byte per token
        return first, code
    # an escaped byte follows its escape code; strings start later by the escapes before them
    many = escaped.size > code.size * MANY_ESCAPES
    at = tokens.all_positions(book, segments)[escaped] if many else tokens.positions(escaped)
    out = np.insert(code, escaped + 1, body[at])
    return first + np.searchsorted(escaped, first), out


def _sample(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Evenly spaced strings (each cut to SAMPLE_STRING_BYTES) adding up to about SAMPLE_BYTES."""
    n = len(offsets) - 1
    lengths = np.minimum(offsets[1:] - offsets[:-1], SAMPLE_STRING_BYTES)
    total = int(lengths.sum())
    if total > SAMPLE_BYTES:
        step = total / SAMPLE_BYTES
        pick = np.unique(np.minimum((np.arange(int(n / step) + 1) * step).astype(np.int64), n - 1))
    else:
        pick = np.arange(n)
    lens = lengths[pick]
    starts = offsets[:-1][pick]
    at = np.zeros(pick.size + 1, np.int64)
    np.cumsum(lens, out=at[1:])
    idx = np.repeat(starts - at[:-1], lens) + np.arange(int(at[-1]))
    return at, data[idx]


def train(offsets: np.ndarray, data: np.ndarray) -> Codebook:
    """A codebook for the strings ``data[offsets[i]:offsets[i+1]]``, deterministic for the data."""
    return _train_on(*_sample(np.asarray(offsets, np.int64), np.asarray(data, np.uint8)))


def _train_on(s_off: np.ndarray, sample: np.ndarray) -> Codebook:
    """A codebook for a sample's strings.

    Each round tokenises the sample with the current table and scores every token and every
    pair of adjacent tokens of a segment (when together <= 8 bytes) by count x length; the best
    255 become the next table, so symbols grow by merging across rounds. The first table is
    empty: every byte is a token of its own."""
    book = _codebook(np.zeros(0, np.uint64), np.zeros(0, np.uint8))
    if not sample.size:
        return book
    window = _windows(sample)
    segments = _segments(s_off, TRAIN_SEGMENT_BYTES)
    for round_ in range(TRAIN_ROUNDS):
        if round_ == 0:
            pos = np.arange(sample.size)
            lens = np.ones(sample.size, np.int64)
            seg_first = segments.start
        else:
            tokens = _tokenise(book, sample, segments)
            pos = tokens.all_positions(book, segments)
            lens = book.token_lengths[tokens.codes]
            seg_first = tokens.seg_first[:-1]
        starts_segment = np.zeros(pos.size, bool)  # no pair across two segments
        starts_segment[seg_first] = True
        pair = ~starts_segment[1:] & (lens[:-1] + lens[1:] <= MAX_SYMBOL_LEN)
        all_pos = np.concatenate([pos, pos[:-1][pair]])
        all_lens = np.concatenate([lens, (lens[:-1] + lens[1:])[pair]])
        all_vals = (window[all_pos] & _IMASKS[all_lens]).view(np.uint64)
        u_vals, u_lens, counts = _distinct_tokens(all_vals, all_lens)
        gain = counts * u_lens
        # best gain first; ties: longer, then smaller value (deterministic)
        order = np.lexsort((u_vals, -u_lens, -gain))
        words, lengths = _usable(u_vals[order], u_lens[order].astype(np.uint8))
        book = _codebook(words[:MAX_SYMBOLS], lengths[:MAX_SYMBOLS])
    return book


#: A token of fewer than 8 bytes has its top byte free: its length goes there, so that tokens are
#: counted by sorting one uint64 key (a two-key lexsort of the same cost 37% of training).
_LEN_SHIFT = np.uint64(56)
_VALUE_BITS = np.uint64((1 << 56) - 1)


def _distinct_tokens(values: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (value, length) tokens (uint64 values zero past the length), and how often
    each occurs: 8-byte tokens by their value, shorter ones by value and length in one key."""
    full = lengths == MAX_SYMBOL_LEN
    short = ~full
    keys = values[short] | (lengths[short].astype(np.uint64) << _LEN_SHIFT)
    short_keys, short_counts = np.unique(keys, return_counts=True)  # (the sorting path)
    long_values, long_counts = np.unique(values[full], return_counts=True)
    return (
        np.concatenate([short_keys & _VALUE_BITS, long_values]),
        np.concatenate(
            [(short_keys >> _LEN_SHIFT).astype(np.int64), np.full(long_values.size, MAX_SYMBOL_LEN)]
        ),
        np.concatenate([short_counts, long_counts]),
    )


#: Bytes of strings below which lance's FSST compressor stores them as they are, under
#: RAW_SYMBOL_TABLE (a table does not pay there; pylance's 2.0 ``Fsst`` pages of 32000 bytes are
#: raw, of 32768 compressed). pylance's 2.1+ encoder picks FSST only for pages of this size.
MIN_INPUT_BYTES = 32 * 1024
#: The table of strings stored as they are: no symbols, encoder switch off (as pylance writes it).
RAW_SYMBOL_TABLE = bytes(4) + MAGIC + bytes(SYMBOL_TABLE_SIZE - 4 - len(MAGIC))


def compress_or_store(offsets: np.ndarray, data: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
    """:func:`compress_strings`, or below MIN_INPUT_BYTES the strings as they are (as lance's
    compressor does): (symbol table bytes, offsets from 0, codes)."""
    offsets = np.asarray(offsets, np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    if last - first < MIN_INPUT_BYTES:
        return RAW_SYMBOL_TABLE, offsets - first, np.asarray(data, np.uint8)[first:last]
    return compress_strings(offsets, data)


def compress_strings(offsets: np.ndarray, data: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Train on the strings and compress them: (symbol table bytes, offsets from 0, codes)."""
    book = train(offsets, data)
    new_offsets, codes = compress(book, offsets, data)
    return book.symbol_table(), new_offsets, codes


#: A column's first codebook is kept for a later page while it compresses that page's sample to
#: no more than this factor of what it achieved on the first page's sample.
REUSE_SLACK = 1.1


class ColumnCompressor:
    """FSST for the pages of one column: pages of a column are alike, so the symbols trained on
    its first page are reused for the next ones where they still do well on the page's sample
    (else the page gets a table of its own). Every page's table depends only on the first page
    and itself, so pages after the first may be compressed concurrently, in any order, and a
    file's bytes do not depend on thread timing; the first page must be compressed alone
    (the writer encodes a column's first page before any other of its pages), and
    :meth:`freeze` called after it."""

    def __init__(self) -> None:
        self._first: tuple[np.ndarray, np.ndarray, float] | None = None  # words, lengths, ratio
        self._frozen = False

    def freeze(self) -> None:
        """Keep no table from now on (called once the column's first page is encoded: a later
        page, whichever thread gets to it first, must not become the table of the others)."""
        self._frozen = True

    def compress(self, offsets: np.ndarray, data: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
        """(symbol table bytes, offsets from 0, codes) of the strings ``data[offsets[i]:offsets[i+1]]``."""
        offsets = np.asarray(offsets, np.int64)
        data = np.asarray(data, np.uint8)
        s_off, sample = _sample(offsets, data)
        first = self._first
        if first is not None:
            book = _codebook(first[0], first[1])
            if _ratio(book, s_off, sample) <= first[2] * REUSE_SLACK:
                return (book.symbol_table(), *compress(book, offsets, data))
        book = _train_on(s_off, sample)
        if first is None and not self._frozen:
            self._first = (book.words, book.lengths, _ratio(book, s_off, sample))
        return (book.symbol_table(), *compress(book, offsets, data))


def _ratio(book: Codebook, s_off: np.ndarray, sample: np.ndarray) -> float:
    """Compressed / raw bytes of a sample."""
    return compress(book, s_off, sample, TRAIN_SEGMENT_BYTES)[1].size / max(1, sample.size)


def compress_simple(strings: list[bytes], symbols: list[bytes]) -> tuple[bytes, np.ndarray, bytes]:
    """Test helper: greedy longest-match encoder with a given symbol list (<= 255 symbols).

    Returns ``(symbol_table_bytes, offsets, data)``.  Not a real FSST trainer.
    """
    assert len(symbols) <= 255 and all(1 <= len(s) <= 8 for s in symbols)
    raw = bytearray(SYMBOL_TABLE_SIZE)
    raw[0] = len(symbols)
    raw[3] = 1
    raw[4:8] = MAGIC
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
