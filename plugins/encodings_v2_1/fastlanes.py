"""FastLanes bit packing, as used by Lance 2.1/2.2 (spec §5.4 "FastLanes layout").

A block holds 1024 values of a T-bit type (T in 8/16/32/64) packed to W bits each.
With ``LANES = 1024 // T`` the packed block is ``W * LANES`` T-bit words; word ``w`` of
lane ``l`` sits at ``packed[LANES * w + l]``.  Lane ``l`` holds T values (rows
``r = 0..T-1``); row ``r``'s W bits start at bit ``r * W`` of the lane's word stream
(LSB first) and may straddle two words.  The logical index of (row r, lane l) is
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l`` with ``FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]``.

Two framings:

* out-of-line (:func:`unpack` / :func:`pack`): a fixed W for every block, no header,
  the last block zero-padded to 1024 values;
* inline (:func:`unpack_inline` / :func:`pack_inline`): every 1024-value block starts
  with one T-bit word holding its own W, followed by its ``1024 * W / T`` words.

Everything is vectorised over blocks and values: the per-(T, W) gather plan (which
word(s) and shift feed each logical value) is computed once and cached.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from lance_fw.errors import CorruptFileError
from lance_fw.file.buffers import RawBytes, gather_rows, pool_empty

BLOCK = 1024
FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
_UTYPES: dict[int, np.dtype] = {
    8: np.dtype("<u1"),
    16: np.dtype("<u2"),
    32: np.dtype("<u4"),
    64: np.dtype("<u8"),
}


def utype(bits: int) -> np.dtype:
    try:
        return _UTYPES[bits]
    except KeyError:
        raise ValueError(f"FastLanes type width must be 8, 16, 32 or 64 bits, not {bits}") from None


@cache
def _row_lane(t: int) -> tuple[np.ndarray, np.ndarray]:
    """For each logical index 0..1023, its (row, lane)."""
    lanes = BLOCK // t
    r = np.arange(t)
    base = np.array([FL_ORDER[x // 8] * 16 + (x % 8) * 128 for x in r])
    logical = (base[:, None] + np.arange(lanes)[None, :]).ravel()  # index by (r, l)
    rows = np.empty(BLOCK, dtype=np.int64)
    lanes_of = np.empty(BLOCK, dtype=np.int64)
    rows[logical] = np.repeat(r, lanes)
    lanes_of[logical] = np.tile(np.arange(lanes), t)
    return rows, lanes_of


@cache
def _row_plan(t: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.generic]:
    """How each (row, lane) of a block unpacks, listed in the order the values come out: the
    row's first and second word, the right shift of the first and the left shift of the second
    (shapes (T,) and (1, T, LANES): the shifts repeated over the lanes, so that a shift of a
    round's (blocks, T, LANES) values runs over 1024 contiguous pairs a block rather than 16 at
    a time, 55 -> 42 us a 64-block round), and the W-bit mask.

    A block's output, seen as (T, LANES), holds at place ``k`` the row of logical index
    ``k * LANES`` (``_row_lane``). A row whose bits lie within one word takes its second word's
    bits above W (the shift is then under T), which the mask clears; the last word stands in
    for a second word past the end."""
    rows = _row_lane(t)[0][:: BLOCK // t]  # the row at each output place
    start = rows * w
    first, shift = start // t, start % t
    second = np.minimum(first + 1, w - 1)
    dt = utype(t)
    lanes = BLOCK // t
    return (
        first,
        second,
        np.repeat(shift.astype(dt), lanes).reshape(1, t, lanes),
        np.repeat((t - shift).astype(dt), lanes).reshape(1, t, lanes),
        dt.type((1 << w) - 1),
    )


def unpack(
    packed: np.ndarray, bit_width: int, uncompressed_bits: int, num_values: int, where: str = "fastlanes"
) -> np.ndarray:
    """Unpack out-of-line FastLanes data (fixed ``bit_width``) to ``num_values`` unsigned ints.

    ``packed`` may be any array/buffer; it is reinterpreted as little-endian T-bit words.
    """
    t = uncompressed_bits
    dt = utype(t)
    w = int(bit_width)
    if not 0 <= w <= t:
        raise CorruptFileError(where, f"FastLanes bit width {w} is not within 0..{t}")
    nblocks = -(-num_values // BLOCK)
    if w == 0 or num_values == 0:
        return np.zeros(num_values, dtype=dt)
    words = _as_words(packed, dt)
    need = nblocks * w * (BLOCK // t)
    full, rest = divmod(num_values, BLOCK)
    full_words = full * w * (BLOCK // t)
    if rest and words.size == full_words + rest:
        # the last partial block stored raw (see pack_out_of_line); this wins over a packed
        # block of the same length, as in pylance, where a tie is written raw
        tail = words[full_words : full_words + rest]
        if not full:
            return tail.copy()
        head = _unpack_blocks(words[:full_words].reshape(full, -1), t, w).reshape(-1)
        return np.concatenate([head, tail])
    if words.size < need:
        raise CorruptFileError(
            where,
            f"FastLanes buffer has {words.size} {t}-bit words; {num_values} values at {w} bits need {need}",
        )
    blocks = words[:need].reshape(nblocks, w * (BLOCK // t))
    return _unpack_blocks(blocks, t, w).reshape(-1)[:num_values]


def _as_words(data: RawBytes, dt: np.dtype) -> np.ndarray:
    if isinstance(data, np.ndarray) and data.dtype == dt:
        return data.reshape(-1)
    buf = data.view(np.uint8).reshape(-1) if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    usable = buf.size - buf.size % dt.itemsize
    return buf[:usable].view(dt)


#: Blocks unpacked per round of :func:`_unpack_blocks`: their output (8 KiB a block) and the
#: second words stay in a core's cache between its six numpy calls.
UNPACK_ROUND_BLOCKS = 64


def empty_blocks(nblocks: int, t: int) -> np.ndarray:
    """An uninitialised (nblocks, 1024) grid of T-bit values to unpack into, from pyarrow's pool
    (``pool_empty``): a run of pages unpacked into fresh numpy memory faulted in every page of
    it first (a third of a 2-column scan's decode time)."""
    return pool_empty(nblocks * BLOCK, utype(t)).reshape(nblocks, BLOCK)


def _unpack_blocks(blocks: np.ndarray, t: int, w: int, out: np.ndarray | None = None) -> np.ndarray:
    """blocks: (nblocks, W*LANES) words (any strides) -> (nblocks, 1024) values, written to ``out``
    when given (a C-contiguous row range of a larger output: no copy afterwards).

    Every lane of a row starts at the same word and shift, so a round of blocks is six whole-array
    calls (``_row_plan``): gather each row's first words straight into the output, in output
    order, shift them, gather and shift the second words, join, mask.

    Why not row by row: T rows of three calls each over (nblocks, LANES) planes made ~200 small
    numpy calls a block group, and two threads decoding side by side fought over the GIL between
    them (two 62-bit columns of 475k values: 7.1 ms on two threads, 4.4 ms in rounds)."""
    dt = utype(t)
    lanes = BLOCK // t
    nblocks = blocks.shape[0]
    if out is None:
        out = empty_blocks(nblocks, t)
    if w == 0:
        out[...] = 0
        return out
    if w == t:  # stored unpacked: only the FastLanes order to undo (one strided copy)
        _unshuffle(blocks.reshape(nblocks, t, lanes), t, out)
        return out
    first, second, shift, back, mask = _row_plan(t, w)
    words = blocks.reshape(nblocks, w, lanes)
    values = out.reshape(nblocks, t, lanes)
    high = np.empty((min(UNPACK_ROUND_BLOCKS, nblocks), t, lanes), dt)
    # np.take copies a source that is not C-contiguous (blocks of mini-block chunks lie between
    # their chunks' headers) before every gather: copied here once a round for both gathers
    staged = None if words.flags.c_contiguous else np.empty((min(UNPACK_ROUND_BLOCKS, nblocks), w, lanes), dt)
    for lo in range(0, nblocks, UNPACK_ROUND_BLOCKS):
        hi = min(nblocks, lo + UNPACK_ROUND_BLOCKS)
        into, spare, source = values[lo:hi], high[: hi - lo], words[lo:hi]
        if staged is not None:
            np.copyto(staged[: hi - lo], source)
            source = staged[: hi - lo]
        np.take(source, first, axis=1, out=into, mode="clip")  # (in range: unbuffered)
        np.right_shift(into, shift, out=into)
        np.take(source, second, axis=1, out=spare, mode="clip")
        np.left_shift(spare, back, out=spare)
        np.bitwise_or(into, spare, out=into)
        np.bitwise_and(into, mask, out=into)
    return out


def _unshuffle(rows: np.ndarray, t: int, out: np.ndarray) -> None:
    """Values stored at full width, (nblocks, T rows, LANES): row ``r = 8a + b`` of every lane goes
    to logical ``FL_ORDER[a] * 16 + b * 128 + lane``, i.e. output slot ``(b, FL_ORDER[a] * 16 //
    LANES)`` of an (8, T/8, LANES) view of each block."""
    lanes = BLOCK // t
    grid = out.reshape(out.shape[0], 8, t // 8, lanes)
    for a in range(t // 8):
        grid[:, :, FL_ORDER[a] * 16 // lanes, :] = rows[:, 8 * a : 8 * a + 8, :]


#: Groups of fewer than ``T * GATHER_BELOW_PER_BIT`` blocks of one width are unpacked by a per-value
#: gather: the plane-wise unpacker's ~2T numpy calls per group cost more than gathering 1024 values
#: per block (measured crossover: about T/2 blocks for every T).
GATHER_BELOW_PER_BIT = 0.5


@cache
def _plan_table(t: int) -> tuple[np.ndarray, ...]:
    """:func:`_plan` for every width 0..T stacked, (T+1, 1024) each: (lo, hi, shift, hshift,
    mask), ``hi == lo`` and ``hshift`` zeroing where a value does not straddle two words."""
    dt = utype(t)
    rows, lane = _row_lane(t)
    lanes = BLOCK // t
    lo = np.zeros((t + 1, BLOCK), np.int64)
    hi = np.zeros((t + 1, BLOCK), np.int64)
    shift = np.zeros((t + 1, BLOCK), dt)
    hshift = np.zeros((t + 1, BLOCK), dt)
    keep = np.zeros((t + 1, BLOCK), dt)
    for w in range(1, t + 1):
        start = rows * w
        w0, sh = start // t, start % t
        straddle = sh + w > t
        lo[w] = w0 * lanes + lane
        hi[w] = np.where(straddle, w0 + 1, w0) * lanes + lane
        shift[w] = sh
        hshift[w] = np.where(straddle, t - sh, 0)
        keep[w] = np.where(straddle, dt.type(~dt.type(0)), dt.type(0))
    masks = np.array([(1 << w) - 1 for w in range(t + 1)], dtype=object).astype(dt)
    return lo, hi, shift, hshift, keep, masks


def _unpack_gathered(words: np.ndarray, starts: np.ndarray, widths: np.ndarray, t: int) -> np.ndarray:
    """Whole blocks of any widths, (n, 1024), each value gathered from its one or two words."""
    lo, hi, shift, hshift, keep, masks = _plan_table(t)
    base = starts[:, None]
    value = words[base + lo[widths]] >> shift[widths]
    high = (words[base + hi[widths]] << hshift[widths]) & keep[widths]
    value |= high
    value &= masks[widths][:, None]
    return value


def unpack_inline_blocks(
    words: np.ndarray, starts: np.ndarray, widths: np.ndarray, t: int, out: np.ndarray
) -> np.ndarray:
    """Unpack inline-bitpacked blocks lying anywhere in ``words`` (block ``i``'s packed words start
    at ``starts[i]``, at width ``widths[i]``) into the rows of ``out`` (nblocks, 1024).

    Blocks of one width that sit evenly spaced (consecutive mini-block chunks of equal width are
    the common case) are read through one strided view, without copying them together first;
    others are gathered. The caller has checked that every block lies within ``words``."""
    lanes = BLOCK // t
    isz = words.itemsize
    # blocks per width by a count over 0..T (np.unique and np.isin cost ~100 us a call: a
    # scan unpacks each run of pages in one call, a run of a few blocks as often as not)
    per_width = np.bincount(widths, minlength=t + 1)
    uniq = np.flatnonzero(per_width)
    small = (per_width[uniq] < t * GATHER_BELOW_PER_BIT) & (uniq > 0)
    if small.any():  # one gather for all small groups
        is_small = np.zeros(t + 1, bool)
        is_small[uniq[small]] = True
        sel = np.flatnonzero(is_small[widths])
        out[sel] = _unpack_gathered(words, starts[sel], widths[sel], t)
        uniq = uniq[~small]
    for w in uniq.tolist():
        sel = np.flatnonzero(widths == w)
        contiguous = sel[-1] - sel[0] + 1 == len(sel)
        target = out[sel[0] : sel[-1] + 1] if contiguous else None
        if w == 0:
            if target is not None:
                target[...] = 0
            else:
                out[sel] = 0
            continue
        s = starts[sel]
        step = int(s[1] - s[0]) if len(s) > 1 else 0
        if len(s) == 1 or (step > 0 and (np.diff(s) == step).all()):
            grid = np.lib.stride_tricks.as_strided(
                words[int(s[0]) :], shape=(len(s), w * lanes), strides=(step * isz, isz), writeable=False
            )
        else:
            grid = gather_rows(words, s, w * lanes)
        if target is not None:
            _unpack_blocks(grid, t, w, target)
        else:
            out[sel] = _unpack_blocks(grid, t, w)
    return out


def pack(values: np.ndarray, bit_width: int, uncompressed_bits: int) -> np.ndarray:
    """Inverse of :func:`unpack`: returns the packed T-bit words (last block zero-padded)."""
    t = uncompressed_bits
    dt = utype(t)
    w = int(bit_width)
    vals = np.asarray(values).astype(dt, copy=False).reshape(-1)
    nblocks = -(-vals.size // BLOCK)
    if w == 0 or nblocks == 0:
        return np.zeros(0, dtype=dt)
    padded = np.zeros(nblocks * BLOCK, dtype=dt)
    padded[: vals.size] = vals
    return _pack_blocks(padded.reshape(nblocks, BLOCK), t, w).reshape(-1)


def pack_out_of_line(values: np.ndarray, bit_width: int, uncompressed_bits: int) -> np.ndarray:
    """Out-of-line bitpacking as pylance lays it out: whole 1024-value blocks packed; a last
    partial block of ``r`` values is zero-padded and packed only when the padding costs fewer bits
    than packing saves (``w * (1024 - r) < (t - w) * r``), else appended raw. A reader tells the
    two apart by length alone, so the rule (a tie goes raw) must be pylance's exactly."""
    t, w = uncompressed_bits, int(bit_width)
    vals = np.asarray(values).astype(utype(t), copy=False).reshape(-1)
    full, rest = divmod(vals.size, BLOCK)
    if w == 0 or not rest or w * (BLOCK - rest) < (t - w) * rest:
        return pack(vals, w, t)
    head = pack(vals[: full * BLOCK], w, t)
    return np.concatenate([head, vals[full * BLOCK :]])


def _pack_blocks(vals: np.ndarray, t: int, w: int, out: np.ndarray | None = None) -> np.ndarray:
    """Pack ``(nblocks, 1024)`` values ``w`` bits each into ``(nblocks, w * lanes)`` words.
    ``out``: a zeroed ``(nblocks, w, lanes)`` view to pack into, given by a caller whose values
    are known to fit ``w`` bits (they are not masked then)."""
    dt = utype(t)
    lanes = BLOCK // t
    nblocks = vals.shape[0]
    if out is None:
        if w < t:
            vals = vals & dt.type((1 << w) - 1)
        out = np.zeros((nblocks, w, lanes), dtype=dt)
    for r in range(t):  # <= 64 rows; each row touches one or two words per lane
        base = FL_ORDER[r // 8] * 16 + (r % 8) * 128
        v = vals[:, base : base + lanes]
        start = r * w
        w0, s = divmod(start, t)
        out[:, w0, :] |= v << dt.type(s)
        if s + w > t:
            out[:, w0 + 1, :] |= v >> dt.type(t - s)
    return out.reshape(nblocks, w * lanes)


def _inline_block_offsets(
    words: np.ndarray, t: int, nblocks: int, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Walk the per-block bit-width words of the inline form (a loop over blocks only)."""
    lanes = BLOCK // t
    if nblocks > words.size:  # each block has at least its width word: refuse before allocating
        raise CorruptFileError(
            where, f"inline bitpacking: {nblocks} blocks cannot fit {words.size} {t}-bit words"
        )
    n = words.size
    if nblocks and n:  # the common case, one width throughout: check it without walking
        stride = 1 + int(words[0]) * lanes
        if (
            int(words[0]) <= t
            and nblocks * stride <= n
            and (words[: nblocks * stride : stride] == words[0]).all()
        ):
            starts = np.arange(nblocks, dtype=np.int64) * stride + 1
            return starts, np.full(nblocks, int(words[0]), np.int64)
    starts = np.empty(nblocks, dtype=np.int64)
    widths = np.empty(nblocks, dtype=np.int64)
    pos = 0
    for b in range(nblocks):
        if pos >= n:
            raise CorruptFileError(
                where,
                f"inline bitpacking: block {b} of {nblocks} starts past the "
                f"end of the buffer ({n} {t}-bit words)",
            )
        wb = int(words[pos])
        if wb > t:
            raise CorruptFileError(where, f"inline bitpacking: block {b} has bit width {wb} > {t}")
        starts[b] = pos + 1
        widths[b] = wb
        pos += 1 + wb * lanes
    if pos > n:
        raise CorruptFileError(
            where, f"inline bitpacking: buffer has {n} {t}-bit words, its blocks need {pos}"
        )
    return starts, widths


def unpack_inline(
    data: RawBytes, uncompressed_bits: int, num_values: int, where: str = "inline bitpacking"
) -> np.ndarray:
    """Decode the inline form: per 1024 values one T-bit width word, then the packed words."""
    t = uncompressed_bits
    dt = utype(t)
    lanes = BLOCK // t
    if num_values == 0:
        return np.zeros(0, dtype=dt)
    words = _as_words(data, dt)
    nblocks = -(-num_values // BLOCK)
    if nblocks == 1:  # the mini-block case: one block per chunk
        if words.size < 1:
            raise CorruptFileError(where, "inline bitpacking: empty buffer")
        w = int(words[0])
        if w > t:
            raise CorruptFileError(where, f"inline bitpacking: bit width {w} > {t}")
        if words.size < 1 + w * lanes:
            raise CorruptFileError(
                where, f"inline bitpacking: buffer has {words.size} {t}-bit words, needs {1 + w * lanes}"
            )
        if w == 0:
            return np.zeros(num_values, dtype=dt)
        return _unpack_blocks(words[1 : 1 + w * lanes].reshape(1, -1), t, w).reshape(-1)[:num_values]
    starts, widths = _inline_block_offsets(words, t, nblocks, where)
    out = empty_blocks(nblocks, t)
    return unpack_inline_blocks(words, starts, widths, t, out).reshape(-1)[:num_values]


def pack_inline(values: np.ndarray, uncompressed_bits: int) -> np.ndarray:
    """Inverse of :func:`unpack_inline` (each block uses the minimal bit width)."""
    packed = b"".join(pack_inline_blocks(values, uncompressed_bits))
    return np.frombuffer(packed, dtype=utype(uncompressed_bits))


def pack_inline_blocks(values: np.ndarray, uncompressed_bits: int) -> list[bytes]:
    """Every 1024-value block in the inline form (its width word, then its packed words), one
    bytes object per block. Blocks of equal width are packed in one vectorised call."""
    t = uncompressed_bits
    dt = utype(t)
    vals = np.asarray(values).astype(dt, copy=False).reshape(-1)
    full = vals.size // BLOCK  # whole blocks are packed from the values as they are
    out = _inline_blocks(vals[: full * BLOCK].reshape(full, BLOCK), t)
    if vals.size > full * BLOCK:  # the last, partial block zero-padded on its own
        last = np.zeros((1, BLOCK), dtype=dt)
        last[0, : vals.size - full * BLOCK] = vals[full * BLOCK :]
        out += _inline_blocks(last, t)
    return out


def _inline_blocks(blocks: np.ndarray, t: int) -> list[bytes]:
    """:func:`pack_inline_blocks` of whole ``(nblocks, 1024)`` blocks."""
    dt = utype(t)
    nblocks = blocks.shape[0]
    widths = (
        np.array([int(m).bit_length() for m in blocks.max(axis=1).tolist()], np.int64)
        if nblocks
        else np.zeros(0, np.int64)
    )
    lanes = BLOCK // t
    out: list[bytes] = [b""] * nblocks
    for w in np.unique(widths).tolist():
        sel = np.flatnonzero(widths == w)
        # each block's width word and packed words side by side: one copy per block to bytes
        rows = np.zeros((sel.size, 1 + w * lanes), dtype=dt)
        rows[:, 0] = w
        if w:  # a block's values fit its width (the width of its largest)
            packed = np.lib.stride_tricks.as_strided(
                rows[:, 1:], (sel.size, w, lanes), (rows.strides[0], lanes * dt.itemsize, dt.itemsize)
            )
            _pack_blocks(blocks if sel.size == nblocks else blocks[sel], t, w, packed)
        for i, row in zip(sel.tolist(), rows):
            out[i] = row.tobytes()
    return out


def unpack_inline_at(
    data: RawBytes,
    uncompressed_bits: int,
    num_blocks: int,
    block_of: np.ndarray,
    position: np.ndarray,
    where: str = "inline bitpacking",
) -> np.ndarray:
    """Only the values at ``position`` (0..1023) of blocks ``block_of`` of inline-bitpacked data:
    each is gathered from its one or two packed words (random access needs a few values of a
    block, not all 1024)."""
    words = _as_words(data, utype(uncompressed_bits))
    starts, widths = _inline_block_offsets(words, uncompressed_bits, num_blocks, where)
    return unpack_at(words, starts, widths, uncompressed_bits, block_of, position)


def unpack_one(words: np.ndarray, start: int, width: int, t: int, position: int) -> int:
    """:func:`unpack_at` of one value, in Python integers (a point lookup: a dozen array steps
    on one element cost ~25 us, this ~3 us). The high word's shift can pass ``t`` bits here; the
    ``keep`` mask drops what a ``t``-bit shift would have."""
    if width == 0:  # no packed words: the value is 0
        return 0
    lo, hi, shift, hshift, keep, masks = _plan_table(t)
    value = int(words[start + lo[width, position]]) >> int(shift[width, position])
    value |= (int(words[start + hi[width, position]]) << int(hshift[width, position])) & int(
        keep[width, position]
    )
    return value & int(masks[width])


def unpack_at(
    words: np.ndarray,
    starts: np.ndarray,
    widths: np.ndarray,
    t: int,
    block_of: np.ndarray,
    position: np.ndarray,
) -> np.ndarray:
    """The values at ``position`` (0..1023) of blocks ``block_of``, for inline blocks whose packed
    words start at ``starts`` with widths ``widths`` (checked by the caller to lie in ``words``):
    each value is gathered from its one or two words, all widths at once (``_plan_table``), so
    a take of a few values costs a dozen array operations whatever the widths of their blocks."""
    lo, hi, shift, hshift, keep, masks = _plan_table(t)
    w = widths[block_of]
    base = starts[block_of]
    at_lo, at_hi = base + lo[w, position], base + hi[w, position]
    empty = w == 0
    if empty.any():  # a block of width 0 has no packed words to read: its values are 0 (mask 0)
        at_lo[empty] = at_hi[empty] = 0
    value = words[at_lo] >> shift[w, position]
    value |= (words[at_hi] << hshift[w, position]) & keep[w, position]
    value &= masks[w]
    return value
