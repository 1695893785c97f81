"""The 2.1/2.2 column encoder: path arrays -> mini-block, full-zip or constant pages.

Choices follow pylance 14 where it matters for size and random access:
* wide values (>= 256 bytes, e.g. 128-d vectors, long text) -> full-zip, so a single-row take
  reads one value;
* an all-null page, or one with no visible values -> constant layout (levels only);
* a constant fixed-width page at 2.2 -> constant layout with an inline value;
* otherwise mini-block chunks (power-of-two value counts, <= 4096 values, ~4 KiB of values):
  integers and floats that fit in fewer bits use FastLanes inline bitpacking, others flat;
  strings use ``variable`` offsets; fixed-size lists ``fixed_size_list``.
* strings (not binary) get FSST in both layouts under pylance's rule (:func:`value_encode.fsst_applies`).
Rep/def levels are stored ``flat16`` (valid in both grammars).

This module chooses each page's layout and assembles its chunks (headers, metadata words,
repetition index) or zipped values; what bytes the values and levels become is ``value_encode.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TypeAlias, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import InvalidUserInputError, UnsupportedFeatureError
from lance_fw.file import fsst_encode
from lance_fw.file.buffer_compression import FSST, NO_COMPRESSION, ZSTD, compress_each, compression_hint
from lance_fw.file.buffers import UINT_BY_BYTES, headed, offsets_and_data
from lance_fw.file.encoding import ColumnSpec, EncodedPage, pack_any

from .layouts import CHUNK_LOG2_BITS, CHUNK_META_DTYPE, CHUNK_SIZE_UNIT
from .shred import Shredded, shred
from .value_encode import (
    BSS_META_KEY,
    BSS_MODES,
    CHUNK_TARGET_BYTES,
    DICT_FIXED_BITS_V2_1,
    DICT_FIXED_BITS_V2_2,
    GENERAL_SCHEMES,
    MAX_CHUNK_VALUES,
    ChunkBuffers,
    ContiguousChunks,
    bss_plan,
    bss_wanted,
    dictionary_block,
    dictionary_of,
    fixed_bytes,
    fixed_full_zip_values,
    flat,
    fsst_applies,
    fsst_compressed,
    general_compressed,
    length_prefixed,
    level_block,
    levels_plan,
    pow2_at_most,
    value_bits,
    value_plan,
    zstd_pays,
)

WIDE_VALUE_BYTES = 256
#: Rows of a page compared before all of them when looking for a constant page.
_CONSTANT_PROBES = 64
ZSTD_VALUE_BYTES = 32 * 1024  # full-zip pages with values this large compress each value (as pylance)
COMPRESSED_CHUNK_BYTES = 16 * 1024  # zstd string chunks (2.2): fewer, larger frames decode faster
#: Field metadata choosing a column's structural encoding (pylance honours it, in any case, where a
#: page is not dictionary-encoded or constant): mini-block or full-zip whatever the values' width.
STRUCTURAL_ENCODING_META_KEY = "lance-encoding:structural-encoding"
MINI_BLOCK = "miniblock"
FULL_ZIP = "fullzip"
#: Field hints pylance 14 honours that lance_fw does not (its run-length and dictionary rules are
#: its own): refused by name rather than ignored.
UNHONOURED_HINTS = (
    "lance-encoding:rle-threshold",
    "lance-encoding:dict-divisor",
    "lance-encoding:dict-size-ratio",
)
#: The zstd level full-zip values record when their field asks for compression but no level
#: (pylance writes ``level: 0``, zstd's "default level").
ZSTD_DEFAULT_LEVEL = 0
MAX_CHUNK_LEVELS = {False: 4096, True: 8192}  # 2.1 chunks are capped at 32 KiB in all
CHUNK_PAD = b"\xfe"


_PADS = [CHUNK_PAD * k for k in range(8)]
#: One mini-block chunk: its ``(first, stop)`` values and ``(first, stop)`` rep/def levels.
ChunkBounds: TypeAlias = tuple[tuple[int, int], tuple[int, int]]


def _assemble_chunks(
    bounds: list[ChunkBounds],
    level_parts: list[list[bytes]],
    chunk_buffers: Sequence[ChunkBuffers],
    large: bool,
    has_levels: bool,
) -> tuple[bytes, bytes | memoryview]:
    """(chunk metadata words, concatenated chunks). Each chunk is ``u16 num_levels | u16 level
    buffer sizes | value buffer sizes (u16 in 2.1, u32 in 2.2) | pad 8 | each buffer, padded to 8``.
    Headers, sizes and metadata words are computed for all chunks at once; the bytes are joined once.
    """
    n = len(bounds)
    contiguous = chunk_buffers if isinstance(chunk_buffers, ContiguousChunks) and not level_parts else None
    parts: list[Sequence[bytes | memoryview]] = list(level_parts)
    if contiguous is not None:  # its parts are listed below only when not strided
        sizes = np.diff(contiguous.edges).reshape(n, 1)
    else:
        if chunk_buffers:
            parts += [list(col) for col in zip(*chunk_buffers)]
        sizes = np.array([[len(b) for b in column] for column in parts], np.int64).T.reshape(n, len(parts))
    n_level_parts = len(level_parts)
    width = 4 if large else 2
    head = 2 + 2 * n_level_parts + width * (sizes.shape[1] - n_level_parts)
    head_padded = head + (-head % 8)
    header = np.zeros((n, head_padded), np.uint8)
    header[:, head:] = CHUNK_PAD[0]
    levels = np.array([b - a for _, (a, b) in bounds], np.int64) if has_levels else np.zeros(n, np.int64)
    header[:, 0:2] = levels.astype("<u2").view(np.uint8).reshape(n, 2)
    for k in range(n_level_parts):
        header[:, 2 + 2 * k : 4 + 2 * k] = (
            np.ascontiguousarray(sizes[:, k]).astype("<u2").view(np.uint8).reshape(n, 2)
        )
    value_sizes = np.ascontiguousarray(sizes[:, n_level_parts:].astype("<u4" if large else "<u2"))
    header[:, 2 + 2 * n_level_parts : head] = value_sizes.view(np.uint8).reshape(n, -1)
    pads = -sizes % 8
    chunk_bytes = head_padded + (sizes + pads).sum(axis=1)
    counts = np.array([b - a for (a, b), _ in bounds], np.int64)
    log2 = np.zeros(n, np.int64)
    log2[:-1] = np.log2(counts[:-1]).astype(np.int64)
    meta = ((chunk_bytes // CHUNK_SIZE_UNIT - 1) << CHUNK_LOG2_BITS) | log2
    meta_bytes = meta.astype(CHUNK_META_DTYPE[large]).tobytes()
    if contiguous is not None:
        strided = _strided_body(header, sizes[:, 0], chunk_bytes, contiguous)
        if strided is not None:
            return meta_bytes, strided
        parts = [[view for (view,) in contiguous]]
    headers = header.reshape(-1).data
    # per chunk: header, then each buffer and its pad -- interleaved by zip, joined once
    streams: list[Sequence[bytes | memoryview]] = [
        [headers[c * head_padded : (c + 1) * head_padded] for c in range(n)]
    ]
    for k, column in enumerate(parts):
        streams += [column, [_PADS[p] for p in pads[:, k].tolist()]]
    body = b"".join(itertools.chain.from_iterable(zip(*streams)))
    return meta_bytes, body


#: Runs of equally sized chunks up to which ``ContiguousChunks`` are laid out as strided blocks
#: (fixed-width chunks are all one size but the last, or the halved ones of ``_flat_bounds``).
MAX_STRIDED_RUNS = 8


def _strided_body(
    header: np.ndarray, sizes: np.ndarray, chunk_bytes: np.ndarray, chunks: ContiguousChunks
) -> memoryview | None:
    """The chunks of :func:`_assemble_chunks` (each its header, its one buffer, the pad) copied
    as one ``(chunks, bytes)`` block per run of equally sized chunks: a few copies that release
    the GIL, where a join took Python objects per chunk. None when there are too many runs."""
    n = len(sizes)
    run_firsts = np.flatnonzero(np.diff(sizes, prepend=-1)).tolist()
    if len(run_firsts) > MAX_STRIDED_RUNS:
        return None
    ends = np.zeros(n + 1, np.int64)
    np.cumsum(chunk_bytes, out=ends[1:])
    body = np.empty(int(ends[-1]), np.uint8)
    head = header.shape[1]
    edges = chunks.edges
    for first, stop in itertools.pairwise([*run_firsts, n]):
        size, span, count = int(sizes[first]), int(chunk_bytes[first]), stop - first
        rows = body[int(ends[first]) : int(ends[stop])].reshape(count, span)
        rows[:, :head] = header[first:stop]
        rows[:, head : head + size] = chunks.raw[int(edges[first]) : int(edges[stop])].reshape(count, size)
        rows[:, head + size :] = CHUNK_PAD[0]
    return body.data


def _repetition_index(sh: Shredded, level_spans: list[tuple[int, int]]) -> bytes:
    """Per chunk: rows that complete in it, and levels left over after its last completed row."""
    row_ends = sh.row_starts[1:] - 1
    starts = np.array([a for a, _ in level_spans], np.int64)
    stops = np.array([b for _, b in level_spans], np.int64)
    done_lo = np.searchsorted(row_ends, starts)
    done_hi = np.searchsorted(row_ends, stops)
    last_end = np.where(done_hi > 0, row_ends[np.maximum(done_hi - 1, 0)] + 1, 0)
    leftover = stops - np.maximum(last_end, starts)
    return np.stack([done_hi - done_lo, leftover], axis=1).astype("<u8").tobytes()


class V21ColumnEncoder:
    """Encodes the path arrays of one leaf column at file version 2.1 or 2.2."""

    pylance_readable = True  # pages are the trees pylance 14 decodes at this version
    #: pages after a column's first may encode at once (the writer's ``CONCURRENT_PAGES``): the
    #: only state kept between pages is the FSST table of the first page
    concurrent_pages = True

    def __init__(self, spec: ColumnSpec):
        self.spec = spec
        self.large_chunks = spec.version >= (2, 2)
        #: the widths of repeating values pylance 14 gives a page dictionary: 128-bit at 2.1, 64-
        #: and 128-bit from 2.2 on
        self.fixed_width_dictionaries = (
            DICT_FIXED_BITS_V2_2 if spec.version >= (2, 2) else DICT_FIXED_BITS_V2_1
        )
        self.fsst = fsst_encode.ColumnCompressor()  # the column's pages share a trained codebook
        column = spec.column_name
        #: ``lance-encoding:compression`` / ``-level``, checked before any page is encoded
        self.compression, self.level = compression_hint(spec.metadata, f"column {column!r}")
        # pylance reads it from the top-level field (a list's or struct's, for their leaves)
        root = spec.path[0] if spec.path else spec.field
        hint = root.metadata.get(STRUCTURAL_ENCODING_META_KEY)
        self.structural = hint.decode().lower() if isinstance(hint, bytes) else hint and hint.lower()
        unhonoured = [key for key in UNHONOURED_HINTS if key in spec.metadata or key in root.metadata]
        if unhonoured:
            raise UnsupportedFeatureError(
                f"column {column!r}: lance_fw does not honour the field metadata {', '.join(unhonoured)} "
                "(pylance tunes its run-length and dictionary encodings by it); drop it to write with lance_fw"
            )
        self.bss = spec.metadata.get(BSS_META_KEY, "auto").lower()
        if self.bss not in BSS_MODES:
            raise InvalidUserInputError(
                f"column {column!r}: {BSS_META_KEY}={self.bss!r} is none of {', '.join(BSS_MODES)}"
            )
        if self.structural not in (None, MINI_BLOCK, FULL_ZIP):
            raise InvalidUserInputError(
                f"column {column!r}: cannot determine the structural encoding from "
                f"{STRUCTURAL_ENCODING_META_KEY}={self.structural!r} ({MINI_BLOCK} or {FULL_ZIP})"
            )

    def encode(self, array: pa.Array) -> EncodedPage:
        try:
            return self._encode(array)
        finally:  # the first page (encoded alone) is the only one whose FSST table is kept
            self.fsst.freeze()

    def _encode(self, array: pa.Array) -> EncodedPage:
        sh = _shred(array, self.spec.path)
        num_rows = len(array)
        values = sh.values
        if values.null_count == len(values):  # no value at all: levels only (as pylance writes it)
            layout = self._all_null(sh)
            return EncodedPage(layout[1], pack_any(layout[0]), num_rows)
        if self.large_chunks and sh.rep is None and sh.defs is None:
            inline = _constant_value(values)
            if inline is not None:
                page = pb.PageLayout(
                    constant_layout=pb.ConstantLayout(layers=_layers(sh), inline_value=inline)
                )
                return EncodedPage([], pack_any(page), num_rows)
        # full-zip for wide values (``_is_wide``), unless the field's
        # ``lance-encoding:structural-encoding`` says otherwise: full-zip then for all but values
        # a page dictionary takes (found once, and handed on to the mini-block page), mini-block
        # for all
        coded = None
        if not pa.types.is_dictionary(values.type) and self.structural != MINI_BLOCK:
            if self.structural == FULL_ZIP:
                coded = dictionary_of(values, self.fixed_width_dictionaries)
                if coded[1] is None:
                    return self._full_zip(sh, num_rows)
            elif _is_wide(values):
                return self._full_zip(sh, num_rows)
        return self._mini_block(sh, num_rows, coded)

    # -- constant ---------------------------------------------------------------------------
    def _all_null(self, sh: Shredded) -> tuple[pb.PageLayout, list[bytes]]:
        """A page without values. Levels are written unless the page is one plain nullable item
        layer whose every level is null (pylance writes them as soon as there are two layers)."""
        layout = pb.ConstantLayout(layers=_layers(sh))
        count = len(sh.defs) if sh.defs is not None else len(sh.rep) if sh.rep is not None else len(sh.values)
        defs = sh.defs if sh.defs is not None else np.zeros(count, np.uint16)
        if sh.rep is None and len(sh.layers) == 1 and (defs == 1).all():
            return pb.PageLayout(constant_layout=layout), []
        rep_buf = def_buf = b""
        if self.large_chunks:  # 2.2 compresses constant-page levels (2.1 keeps them raw)
            if sh.rep is not None:
                rep_enc, rep_buf = level_block(sh.rep)
                layout.rep_compression.CopyFrom(rep_enc)
                layout.num_rep_values = count
            def_enc, def_buf = level_block(defs)
            layout.def_compression.CopyFrom(def_enc)
            layout.num_def_values = count
        else:
            rep_buf = sh.rep.astype("<u2").tobytes() if sh.rep is not None else b""
            def_buf = defs.astype("<u2").tobytes()
        return pb.PageLayout(constant_layout=layout), [rep_buf, def_buf]

    # -- mini-block -------------------------------------------------------------------------
    def _mini_block(
        self, sh: Shredded, num_rows: int, coded: tuple[pa.Array, pa.Array | None] | None = None
    ) -> EncodedPage:
        """``coded``: the page's ``dictionary_of``, where the caller already has it."""
        values, dictionary = coded or dictionary_of(sh.values, self.fixed_width_dictionaries)
        symbol_table = None
        compression = self.compression
        if dictionary is None and fsst_applies(values, compression):  # chunks cut by compressed size
            values, symbol_table = fsst_compressed(values, self.fsst)
        asked = self._asked_scheme(symbol_table is None)
        if asked is not None and bss_wanted(values, self.bss):  # pylance's first choice then
            value_enc, chunk_values, encode_chunks = bss_plan(values)
        else:
            value_enc, chunk_values, encode_chunks = value_plan(
                values, general=symbol_table is None and compression is None
            )
        if symbol_table is not None:
            value_enc = pb.CompressiveEncoding(fsst=pb.Fsst(symbol_table=symbol_table, values=value_enc))
        levels_count = (
            len(sh.defs) if sh.defs is not None else (len(sh.rep) if sh.rep is not None else len(values))
        )
        # every level is a visible value without rep/def levels (no index array needed)
        visible_pos = None if sh.rep is None and sh.defs is None else _visible_positions(sh, levels_count)
        compressed = self.large_chunks and (
            value_enc.WhichOneof("compression") == "general"
            or (asked is not None and value_enc.WhichOneof("compression") == "variable")
        )
        bounds = _chunk_bounds(
            values,
            chunk_values,
            visible_pos,
            levels_count,
            MAX_CHUNK_LEVELS[self.large_chunks],
            COMPRESSED_CHUNK_BYTES if compressed else CHUNK_TARGET_BYTES,
        )
        if bounds is None:  # too many empty/null lists between two values for one chunk
            return self._full_zip(sh, num_rows)
        rep_enc, pack_rep = levels_plan(sh.rep)
        def_enc, pack_def = levels_plan(sh.defs)
        chunk_buffers = encode_chunks(values, [b[0] for b in bounds])
        if asked is not None:  # the field's compression, where pylance would apply it
            wrapped = general_compressed(value_enc, chunk_buffers, asked, self.level)
            if wrapped is not None:
                value_enc, chunk_buffers = wrapped
        level_spans = [b[1] for b in bounds]
        level_parts: list[list[bytes]] = []  # per chunk: the packed rep and def buffers that exist
        if sh.rep is not None:
            level_parts.append([pack_rep(sh.rep[a:b]) for a, b in level_spans])
        if sh.defs is not None:
            level_parts.append([pack_def(sh.defs[a:b]) for a, b in level_spans])
        meta, data = _assemble_chunks(
            bounds, level_parts, chunk_buffers, self.large_chunks, sh.rep is not None or sh.defs is not None
        )
        nbuf = len(chunk_buffers[0]) if chunk_buffers else 0
        rep_index = _repetition_index(sh, level_spans) if sh.rep is not None else None
        layout = pb.MiniBlockLayout(
            value_compression=value_enc, layers=_layers(sh), num_buffers=nbuf, num_items=len(values)
        )
        if sh.rep is not None:
            layout.rep_compression.CopyFrom(rep_enc)
            layout.repetition_index_depth = 1
        if sh.defs is not None:
            layout.def_compression.CopyFrom(def_enc)
        if self.large_chunks:
            layout.has_large_chunk = True
        buffers = [meta, data]
        if dictionary is not None:
            enc, buf = dictionary_block(dictionary)
            layout.dictionary.CopyFrom(enc)
            layout.num_dictionary_items = len(dictionary)
            buffers.append(buf)
        if rep_index is not None:
            buffers.append(rep_index)
        return EncodedPage(buffers, pack_any(pb.PageLayout(mini_block_layout=layout)), num_rows)

    def _asked_scheme(self, plain_values: bool) -> str | None:
        """The general compression (zstd or LZ4) the field asks for, or None: none asked, or
        the values are FSST codes."""
        if not plain_values or self.compression in (None, NO_COMPRESSION, FSST):
            return None
        return self.compression

    # -- full-zip ---------------------------------------------------------------------------
    def _full_zip(self, sh: Shredded, num_rows: int) -> EncodedPage:
        values = sh.values
        if pa.types.is_struct(values.type):  # only from _mini_block, when the levels do not chunk
            column = self.spec.column_name
            raise UnsupportedFeatureError(
                f"packed struct column {column!r}: more empty or null lists between two "
                f"values than a mini-block chunk holds ({MAX_CHUNK_LEVELS[self.large_chunks]} levels); "
                "lance_fw does not write packed structs full-zip yet"
            )
        n_levels = (
            len(sh.defs) if sh.defs is not None else (len(sh.rep) if sh.rep is not None else len(values))
        )
        rep = sh.rep.astype(np.int64) if sh.rep is not None else np.zeros(n_levels, np.int64)
        defs = sh.defs.astype(np.int64) if sh.defs is not None else np.zeros(n_levels, np.int64)
        bits_rep = int(rep.max()).bit_length() if sh.rep is not None and n_levels else 0
        bits_def = int(defs.max()).bit_length() if sh.defs is not None and n_levels else 0
        if sh.rep is not None:
            bits_rep = max(bits_rep, 1)
        ctrl = 0 if bits_rep + bits_def == 0 else next(w for w in (1, 2, 4) if bits_rep + bits_def <= 8 * w)
        words = (rep << bits_def) | defs
        visible = _visible_positions(sh, n_levels)
        is_visible = np.zeros(n_levels, bool)
        is_visible[visible] = True
        layout = pb.FullZipLayout(
            bits_rep=bits_rep,
            bits_def=bits_def,
            num_items=n_levels,
            num_visible_items=len(values),
            layers=_layers(sh),
        )
        if pa.types.is_fixed_size_list(values.type) or value_bits(values.type):
            enc, raw, width = fixed_full_zip_values(values)
            layout.bits_per_value = width * 8
            layout.value_compression.CopyFrom(enc)
            payload_sizes = np.where(is_visible, width, 0)
            payload = raw
        else:
            large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
            len_bytes = 8 if large else 4
            layout.bits_per_offset = 8 * len_bytes
            layout.value_compression.CopyFrom(
                pb.CompressiveEncoding(variable=pb.Variable(offsets=flat(8 * len_bytes)))
            )
            has_value = np.zeros(n_levels, bool)
            has_value[visible[values.is_valid().to_numpy(zero_copy_only=False)]] = True
            offsets, data = offsets_and_data(values)
            longest = int(np.diff(offsets).max()) if len(offsets) > 1 else 0
            compression = self.compression
            if compression == NO_COMPRESSION:
                pass
            elif longest < ZSTD_VALUE_BYTES and fsst_applies(values, compression):
                symbol_table, offsets, data = self.fsst.compress(offsets, data)
                layout.value_compression.CopyFrom(
                    pb.CompressiveEncoding(
                        fsst=pb.Fsst(symbol_table=symbol_table, values=layout.value_compression)
                    )
                )
            # long values are few per page, so one zstd frame each is affordable when it pays
            elif len(offsets) > 1 and (
                compression in GENERAL_SCHEMES or longest >= ZSTD_VALUE_BYTES or zstd_pays(values)
            ):
                # zstd value by value whichever scheme the field asks for (as pylance); at the
                # level it asks for, its level 0 (zstd's default) recorded when it asks for none
                asked = compression in GENERAL_SCHEMES
                level = (self.level if self.level is not None else ZSTD_DEFAULT_LEVEL) if asked else None
                offsets, data = compress_each(data, offsets, ZSTD, level)
                layout.value_compression.CopyFrom(
                    pb.CompressiveEncoding(
                        general=pb.General(
                            compression=pb.BufferCompression(scheme=GENERAL_SCHEMES[ZSTD], level=level),
                            values=layout.value_compression,
                        )
                    )
                )
            lengths = np.diff(offsets)[values.is_valid().to_numpy(zero_copy_only=False)]
            payload_sizes = np.zeros(n_levels, np.int64)
            payload_sizes[has_value] = len_bytes + lengths
            valid_idx = np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))
            payload = length_prefixed(offsets, data, valid_idx, len_bytes)
        sizes = ctrl + payload_sizes
        starts = np.zeros(n_levels + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        if ctrl:  # each level's control word, then its value's bytes
            out = headed(
                words.astype(UINT_BY_BYTES[ctrl]).view(np.uint8).reshape(-1, ctrl), payload_sizes, payload
            )
        else:  # the values' bytes as they lie
            out = payload.reshape(-1)
        if out.size != int(starts[-1]):  # never write a page whose values and sizes disagree
            raise AssertionError(f"full-zip page: {out.size} bytes laid out, {int(starts[-1])} expected")
        buffers = [out.tobytes()]
        if sh.rep is not None or layout.HasField("bits_per_offset"):
            row_offsets = starts[sh.row_starts] if sh.rep is not None else starts[: num_rows + 1]
            width = next(w for w in (1, 2, 4, 8) if int(row_offsets[-1]) < 2 ** (8 * w))
            buffers.append(row_offsets.astype(UINT_BY_BYTES[width]).tobytes())
        return EncodedPage(buffers, pack_any(pb.PageLayout(full_zip_layout=layout)), num_rows)


def _layers(sh: Shredded) -> list[pb.RepDefLayer]:
    """The shredded layers (ints) typed as the protobuf enum values they are."""
    return cast("list[pb.RepDefLayer]", sh.layers)


def _is_wide(values: pa.Array) -> bool:
    """Full-zip for values of >= 256 bytes: fixed-width ones (vectors: a take reads one value), and
    strings or binaries as soon as the page's longest value is that long, as pylance 14 chooses
    (observed on 2.1 and 2.2: a page of 20-byte strings with one of 256 bytes is full-zip, with
    one of 255 mini-block)."""
    t = values.type
    if pa.types.is_struct(t):  # a packed struct: fixed-width rows in mini-block chunks
        return False
    if pa.types.is_fixed_size_list(t):
        return value_bits(t.value_type) * t.list_size >= WIDE_VALUE_BYTES * 8
    if value_bits(t):
        return value_bits(t) >= WIDE_VALUE_BYTES * 8
    longest = pc.max(pc.binary_length(values)).as_py()
    return longest is not None and longest >= WIDE_VALUE_BYTES


def _constant_value(values: pa.Array) -> bytes | None:
    """The inline value of an all-equal, all-valid fixed-width page (at most 32 bytes)."""
    bits = value_bits(values.type)
    if bits < 8 or bits > 256 or values.null_count or pa.types.is_fixed_size_list(values.type):
        return None
    raw = fixed_bytes(values)
    width = bits // 8
    rows = raw.reshape(-1, width)
    if not len(rows):
        return None
    # a few evenly spaced rows first: a page that is not constant (most) is told without
    # comparing (and allocating a mask as long as) all of it
    if not (rows[:: max(1, len(rows) // _CONSTANT_PROBES)] == rows[0]).all():
        return None
    if (rows == rows[0]).all():
        return rows[0].tobytes()
    return None


def _shred(array: pa.Array, path: tuple) -> Shredded:
    """:func:`shred`, but a top-level column of one layer without nulls (most columns) is
    one all-valid item layer over the array as it is: shredding it built five index and level
    arrays as long as the page (36 MiB of temporaries for an 8 MiB int64 page) to find that.
    ``row_starts`` is left empty: it is read only for pages with repetition levels."""
    t = array.type
    nested = pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)
    if len(path) <= 1 and not nested and array.null_count == 0:
        return Shredded([pb.REPDEF_ALL_VALID_ITEM], None, None, array, np.zeros(0, np.int64))
    return shred(array, path)


def _visible_positions(sh: Shredded, levels: int) -> np.ndarray:
    from .repdef import visible_levels

    return np.flatnonzero(visible_levels(sh.layers, sh.defs, levels))


def _flat_bounds(n: int, per_chunk: int, max_levels: int) -> list[ChunkBounds]:
    """``_chunk_bounds`` of fixed-width values with one visible level each (a flat column), computed
    at once (a 1M-row vector column has ~31k chunks, which the general loop walked one by one): the
    same chunks it makes, levels spanning what values span. Chunks of ``per_chunk`` values, halved
    while more than ``max_levels``; once the rest fits ``max_levels`` (and ``per_chunk``) it is one
    last chunk."""
    count = per_chunk
    while count > 2 and count > max_levels:
        count //= 2
    if count == per_chunk:
        starts = list(range(0, n, count))
    else:  # halved chunks until the rest fits one chunk
        full = max(0, -(-(n - max_levels) // count))
        starts = list(range(0, min(full * count, n), count))
        if not starts or starts[-1] + count < n:
            starts.append(min(full * count, n))
    stops = [*starts[1:], n]
    return [((a, b), (a, b)) for a, b in zip(starts, stops) if b > a]


def _chunk_bounds(
    values: pa.Array,
    per_chunk: int | None,
    visible_pos: np.ndarray | None,
    n_levels: int,
    max_levels: int,
    target_bytes: int = 4096,
) -> list[ChunkBounds] | None:
    """[((v0, v1), (l0, l1))] per chunk, or None when the levels cannot be chunked.

    Non-final chunks hold a power-of-two number (>= 2) of values; variable-width chunks aim at
    ``target_bytes`` of data; invisible levels travel with the next visible value.
    """
    n = len(values)
    if per_chunk is not None and n_levels == n and (visible_pos is None or len(visible_pos) == n):
        return _flat_bounds(n, per_chunk, max_levels)
    cap = 1024 if max_levels <= 4096 else MAX_CHUNK_VALUES  # values in a byte-cut chunk
    fits_from: list[int] | None = None  # byte-cut chunks: values from v that fit target_bytes
    if per_chunk is None:
        offs, _ = offsets_and_data(values)
        cum = offs - offs[0]
        if visible_pos is None and n_levels == n and cap <= max_levels:
            return _byte_cut_bounds(cum, target_bytes, cap)
        # for every start at once (one searchsorted per chunk was ~10 us, ~4,000 chunks a page)
        ends = np.searchsorted(cum, cum[:n] + target_bytes, side="right")
        fits_from = (ends - 1 - np.arange(n)).tolist()
    if visible_pos is None:  # one visible level per value
        visible_pos = np.arange(n)
    edges = np.append(visible_pos, n_levels)

    def levels(a: int, b: int) -> int:
        return int((edges[b] if b < n else n_levels) - (edges[a] if a else 0))

    bounds = []
    v0 = 0
    while v0 < n:
        if fits_from is not None:
            count = pow2_at_most(min(fits_from[v0], cap))
        else:
            assert per_chunk is not None  # fixed-width values: a count per chunk
            count = per_chunk
        while count > 2 and levels(v0, min(v0 + count, n)) > max_levels:
            count //= 2
        if n - v0 <= count or n - v0 < 2:
            count = n - v0
        if levels(v0, v0 + count) > max_levels and (count > 2 or v0 + count < n):
            return None
        bounds.append((v0, v0 + count))
        v0 += count
    out: list[ChunkBounds] = []
    for i, (a, b) in enumerate(bounds):
        l0 = 0 if i == 0 else int(visible_pos[a])
        l1 = n_levels if i == len(bounds) - 1 else int(visible_pos[b])
        out.append(((a, b), (l0, l1)))
    return out


def _byte_cut_bounds(cum: np.ndarray, target_bytes: int, cap: int) -> list[ChunkBounds]:
    """``_chunk_bounds`` of byte-cut values with one visible level each (no level can overflow a
    chunk of at most ``cap`` values), from the values' cumulative sizes ``cum`` (n + 1 of them).

    A chunk holds the most values, a power of two from 2 to ``cap``, whose bytes fit
    ``target_bytes`` (the last one the rest); it is found by probing from the previous chunk's
    count, which a page's alike values make right within a probe or two (a search for every
    value's fit took ~80 ns a value: 15 ms for a page of 190k short strings)."""
    n = len(cum) - 1
    limit = min(cap, MAX_CHUNK_VALUES)
    bounds: list[ChunkBounds] = []
    v0 = 0
    count = 2
    while v0 < n:
        budget = cum.item(v0) + target_bytes  # the chunk's values end at or before this byte
        if v0 + count <= n and cum.item(v0 + count) <= budget:
            while count < limit and v0 + 2 * count <= n and cum.item(v0 + 2 * count) <= budget:
                count *= 2
        else:
            while count > 2 and (v0 + count > n or cum.item(v0 + count) > budget):
                count //= 2
        take = n - v0 if n - v0 <= count or n - v0 < 2 else count
        bounds.append(((v0, v0 + take), (v0, v0 + take)))
        v0 += take
    return bounds
