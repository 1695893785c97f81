"""The 2.1/2.2 column encoder: path arrays -> mini-block, full-zip or constant pages.

Choices follow pylance 14 where it matters for size and random access:
* wide values (>= 256 bytes, e.g. 128-d vectors, long text) -> full-zip, so a single-row take
  reads one value;
* an all-null page, or one with no visible values -> constant layout (levels only);
* a constant fixed-width page at 2.2 -> constant layout with an inline value;
* otherwise mini-block chunks (power-of-two value counts, <= 4096 values, ~4 KiB of values):
  integers and floats that fit in fewer bits use FastLanes inline bitpacking, others flat;
  strings use ``variable`` offsets; fixed-size lists ``fixed_size_list``.
* strings (not binary) get FSST in both layouts under pylance's rule (:func:`_fsst_applies`).
Rep/def levels are stored ``flat16`` (valid in both grammars).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file.buffers import UINT_BY_BYTES, fixed_bits, gather_ranges, range_positions
from lance_fw.file.encoding import ColumnSpec, EncodedPage, pack_any

from . import fastlanes, fsst
from .compressive import RLE_VALUES_LENGTH, VARIABLE_BLOCK_HEADER_32, ZSTD_SIZE_PREFIX
from .layouts import CHUNK_LOG2_BITS, CHUNK_META_DTYPE, CHUNK_SIZE_UNIT
from .shred import Shredded, shred

WIDE_VALUE_BYTES = 256
ZSTD_VALUE_BYTES = 32 * 1024  # full-zip pages with values this large compress each value (as pylance)
CHUNK_TARGET_BYTES = 4096
COMPRESSED_CHUNK_BYTES = 16 * 1024  # zstd string chunks (2.2): fewer, larger frames decode faster
MAX_CHUNK_VALUES = 4096
MAX_CHUNK_LEVELS = {False: 4096, True: 8192}  # 2.1 chunks are capped at 32 KiB in all
CHUNK_PAD = b"\xfe"
#: pylance's FSST rule (lance-encoding, both layouts): string pages of at least this many bytes
#: whose longest value has at least FSST_MIN_LONGEST bytes; below that FSST does not pay.
FSST_MIN_PAGE_BYTES = 32 * 1024
FSST_MIN_LONGEST = 5
#: Field metadata naming a column's compression, as pylance reads it: "none" stores values as
#: they are, "fsst" asks for FSST whatever the rule says.
COMPRESSION_META_KEY = "lance-encoding:compression"
_UINT_DTYPE: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _flat(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits))


_PADS = [CHUNK_PAD * k for k in range(8)]


def _assemble_chunks(
    bounds, level_parts: list[list[bytes]], chunk_buffers: list[list], large: bool, has_levels: bool
) -> tuple[bytes, bytes]:
    """(chunk metadata words, concatenated chunks). Each chunk is ``u16 num_levels | u16 level
    buffer sizes | value buffer sizes (u16 in 2.1, u32 in 2.2) | pad 8 | each buffer, padded to 8``.
    Headers, sizes and metadata words are computed for all chunks at once; the bytes are joined once.
    """
    n = len(bounds)
    parts = level_parts + [list(col) for col in zip(*chunk_buffers)] if chunk_buffers else level_parts
    sizes = np.array([[len(b) for b in column] for column in parts], np.int64).T.reshape(n, len(parts))
    n_level_parts = len(level_parts)
    width = 4 if large else 2
    head = 2 + 2 * n_level_parts + width * (len(parts) - n_level_parts)
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
    headers = header.reshape(-1).data
    out: list = []
    for c in range(n):
        out.append(headers[c * head_padded : (c + 1) * head_padded])
        for k, column in enumerate(parts):
            out.append(column[c])
            out.append(_PADS[pads[c, k]])
    return meta.astype(CHUNK_META_DTYPE[large]).tobytes(), b"".join(out)


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

    def __init__(self, spec: ColumnSpec):
        self.spec = spec
        self.large_chunks = spec.version >= (2, 2)
        self.fsst = fsst.ColumnCompressor()  # the column's pages share a trained codebook

    def encode(self, array: pa.Array) -> EncodedPage:
        sh = shred(array, self.spec.path)
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
        if not pa.types.is_dictionary(values.type) and _is_wide(values, self.large_chunks):
            return self._full_zip(sh, num_rows)
        return self._mini_block(sh, num_rows)

    # -- constant ---------------------------------------------------------------------------
    def _all_null(self, sh: Shredded):
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
                rep_enc, rep_buf = _level_block(sh.rep)
                layout.rep_compression.CopyFrom(rep_enc)
                layout.num_rep_values = count
            def_enc, def_buf = _level_block(defs)
            layout.def_compression.CopyFrom(def_enc)
            layout.num_def_values = count
        else:
            rep_buf = sh.rep.astype("<u2").tobytes() if sh.rep is not None else b""
            def_buf = defs.astype("<u2").tobytes()
        return pb.PageLayout(constant_layout=layout), [rep_buf, def_buf]

    # -- mini-block -------------------------------------------------------------------------
    def _mini_block(self, sh: Shredded, num_rows: int) -> EncodedPage:
        values, dictionary = _dictionary_of(sh.values)
        symbol_table = None
        compression = self.spec.metadata.get(COMPRESSION_META_KEY)
        if dictionary is None and _fsst_applies(values, compression):  # chunks cut by compressed size
            values, symbol_table = _fsst_compressed(values, self.fsst)
        value_enc, chunk_values, encode_chunks = _value_plan(
            values, general=symbol_table is None and compression != "none"
        )
        if symbol_table is not None:
            value_enc = pb.CompressiveEncoding(fsst=pb.Fsst(symbol_table=symbol_table, values=value_enc))
        levels_count = (
            len(sh.defs) if sh.defs is not None else (len(sh.rep) if sh.rep is not None else len(values))
        )
        visible_pos = _visible_positions(sh, levels_count)
        compressed = value_enc.WhichOneof("compression") == "general" and self.large_chunks
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
        rep_enc, pack_rep = _levels_plan(sh.rep)
        def_enc, pack_def = _levels_plan(sh.defs)
        chunk_buffers = encode_chunks(values, [b[0] for b in bounds])
        level_spans = [b[1] for b in bounds]
        level_parts = []  # per chunk: the packed rep and def buffers that exist
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
            enc, buf = _dictionary_block(dictionary)
            layout.dictionary.CopyFrom(enc)
            layout.num_dictionary_items = len(dictionary)
            buffers.append(buf)
        if rep_index is not None:
            buffers.append(rep_index)
        return EncodedPage(buffers, pack_any(pb.PageLayout(mini_block_layout=layout)), num_rows)

    # -- full-zip ---------------------------------------------------------------------------
    def _full_zip(self, sh: Shredded, num_rows: int) -> EncodedPage:
        values = sh.values
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
        if pa.types.is_fixed_size_list(values.type) or _fixed_bits(values.type):
            enc, raw, width = _fixed_full_zip_values(values)
            layout.bits_per_value = width * 8
            layout.value_compression.CopyFrom(enc)
            payload_sizes = np.where(is_visible, width, 0)
            payload = raw
        else:
            large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
            len_bytes = 8 if large else 4
            layout.bits_per_offset = 8 * len_bytes
            layout.value_compression.CopyFrom(
                pb.CompressiveEncoding(variable=pb.Variable(offsets=_flat(8 * len_bytes)))
            )
            has_value = np.zeros(n_levels, bool)
            has_value[visible[values.is_valid().to_numpy(zero_copy_only=False)]] = True
            offsets, data = _offsets_and_data(values)
            longest = int(np.diff(offsets).max()) if len(offsets) > 1 else 0
            compression = self.spec.metadata.get(COMPRESSION_META_KEY)
            if compression == "none":
                pass
            elif longest < ZSTD_VALUE_BYTES and _fsst_applies(values, compression):
                symbol_table, offsets, data = self.fsst.compress(offsets, data)
                layout.value_compression.CopyFrom(
                    pb.CompressiveEncoding(
                        fsst=pb.Fsst(symbol_table=symbol_table, values=layout.value_compression)
                    )
                )
            # long values are few per page, so one zstd frame each is affordable when it pays
            elif len(offsets) > 1 and (longest >= ZSTD_VALUE_BYTES or _zstd_pays(values)):
                offsets, data = _zstd_per_value(offsets, data)
                layout.value_compression.CopyFrom(
                    pb.CompressiveEncoding(
                        general=pb.General(
                            compression=pb.BufferCompression(scheme=pb.COMPRESSION_ALGORITHM_ZSTD),
                            values=layout.value_compression,
                        )
                    )
                )
            lengths = np.diff(offsets)[values.is_valid().to_numpy(zero_copy_only=False)]
            payload_sizes = np.zeros(n_levels, np.int64)
            payload_sizes[has_value] = len_bytes + lengths
            valid_idx = np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))
            payload = _length_prefixed(offsets, data, valid_idx, len_bytes)
        sizes = ctrl + payload_sizes
        starts = np.zeros(n_levels + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        out = np.zeros(int(starts[-1]), np.uint8)
        if ctrl:
            ctrl_bytes = words.astype(UINT_BY_BYTES[ctrl]).view(np.uint8).reshape(-1, ctrl)
            out[starts[:-1, None] + np.arange(ctrl)[None, :]] = ctrl_bytes
        body_starts = starts[:-1] + ctrl
        has_payload = payload_sizes > 0
        lens = payload_sizes[has_payload]
        out[range_positions(body_starts[has_payload], lens)] = payload
        buffers = [out.tobytes()]
        if sh.rep is not None or layout.HasField("bits_per_offset"):
            row_offsets = starts[sh.row_starts] if sh.rep is not None else starts[: num_rows + 1]
            width = next(w for w in (1, 2, 4, 8) if int(row_offsets[-1]) < 2 ** (8 * w))
            buffers.append(row_offsets.astype(UINT_BY_BYTES[width]).tobytes())
        return EncodedPage(buffers, pack_any(pb.PageLayout(full_zip_layout=layout)), num_rows)


# --- values ---------------------------------------------------------------------------------------


def _layers(sh: Shredded) -> list[pb.RepDefLayer]:
    """The shredded layers (ints) typed as the protobuf enum values they are."""
    return cast("list[pb.RepDefLayer]", sh.layers)


def _fixed_bits(t: pa.DataType) -> int:
    if pa.types.is_dictionary(t):  # stored through a page dictionary, never as raw indices
        return 0
    return fixed_bits(t) or 0


def _is_wide(values: pa.Array, large_chunks: bool) -> bool:
    """Full-zip for fixed values of >= 256 bytes (vectors: a take reads one value) and for strings
    that are long on average or too long for a chunk (2.1 chunks hold at most 32 KiB);
    mid-length text stays in (compressible) mini-block chunks."""
    t = values.type
    if pa.types.is_struct(t):  # a packed struct: fixed-width rows in mini-block chunks
        return False
    if pa.types.is_fixed_size_list(t):
        return _fixed_bits(t.value_type) * t.list_size >= WIDE_VALUE_BYTES * 8
    if _fixed_bits(t):
        return _fixed_bits(t) >= WIDE_VALUE_BYTES * 8
    lengths = pc.binary_length(values)
    longest = pc.max(lengths).as_py()
    if longest is None:
        return False
    mean = pc.mean(lengths).as_py() or 0
    return mean >= WIDE_VALUE_BYTES or longest >= (ZSTD_VALUE_BYTES if large_chunks else 8 * 1024)


def _constant_value(values: pa.Array) -> bytes | None:
    """The inline value of an all-equal, all-valid fixed-width page (at most 32 bytes)."""
    bits = _fixed_bits(values.type)
    if bits < 8 or bits > 256 or values.null_count or pa.types.is_fixed_size_list(values.type):
        return None
    raw = _fixed_bytes(values)
    width = bits // 8
    rows = raw.reshape(-1, width)
    if len(rows) and (rows == rows[0]).all():
        return rows[0].tobytes()
    return None


def _fixed_bytes(values: pa.Array) -> np.ndarray:
    """Raw little-endian bytes of a fixed-width array (bit-packed for bools), offset applied."""
    t = values.type
    if pa.types.is_boolean(t):
        return np.packbits(pc.fill_null(values, False).to_numpy(zero_copy_only=False), bitorder="little")
    if pa.types.is_fixed_size_list(t):
        items = values.values.slice(values.offset * t.list_size, len(values) * t.list_size)
        return _fixed_bytes(items)
    width = t.bit_width // 8
    buf = values.buffers()[1]
    if buf is None:
        return np.zeros(len(values) * width, np.uint8)
    return np.frombuffer(buf, np.uint8, count=len(values) * width, offset=values.offset * width)


def _offsets_and_data(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    offs = np.frombuffer(
        values.buffers()[1],
        np.int64 if large else np.int32,
        count=len(values) + 1,
        offset=values.offset * (8 if large else 4),
    ).astype(np.int64)
    data = values.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offs, data


def _length_prefixed(offsets: np.ndarray, data: np.ndarray, which: np.ndarray, width: int) -> np.ndarray:
    """``length (u32 or u64) | bytes`` for each selected value, concatenated."""
    lengths = (offsets[1:] - offsets[:-1])[which]
    prefixes = lengths.astype("<u4" if width == 4 else "<u8").view(np.uint8).reshape(-1, width)
    sizes = width + lengths
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else np.zeros(0, np.int64)
    out = np.zeros(int(sizes.sum()), np.uint8)
    if len(sizes):
        out[starts[:, None] + np.arange(width)[None, :]] = prefixes
        out[range_positions(starts + width, lengths)] = gather_ranges(data, offsets[:-1][which], lengths)
    return out


def _zstd_per_value(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value becomes ``u64 uncompressed size | zstd frame`` (one codec call per value: pages
    that get here hold few, large values)."""
    codec = pa.Codec("zstd")
    parts = []
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        if b == a:
            parts.append(b"")
            continue
        frame = codec.compress(pa.py_buffer(data[a:b])).to_pybytes()
        parts.append(ZSTD_SIZE_PREFIX.pack(b - a) + frame)
    sizes = np.fromiter((len(p) for p in parts), np.int64, len(parts))
    new_offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    return new_offsets, np.frombuffer(b"".join(parts), np.uint8)


def _fixed_full_zip_values(values: pa.Array):
    t = values.type
    if pa.types.is_struct(t):
        return _packed_struct_plan(values)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        items = values.values.slice(values.offset * dim, len(values) * dim)
        item_bits = _fixed_bits(t.value_type)
        width = item_bits * dim // 8
        raw = (
            _fixed_bytes(items).reshape(len(values), width) if len(values) else np.zeros((0, width), np.uint8)
        )
        fsl = pb.FixedSizeList(items_per_value=dim, values=_flat(item_bits))
        if items.null_count:
            bitmap = np.packbits(
                items.is_valid().to_numpy(zero_copy_only=False).reshape(-1, dim), axis=1, bitorder="little"
            )
            raw = np.concatenate([bitmap, raw], axis=1)
            width += bitmap.shape[1]
            fsl.has_validity = True
        return pb.CompressiveEncoding(fixed_size_list=fsl), raw.reshape(-1), width
    bits = _fixed_bits(t)
    return _flat(bits), _fixed_bytes(values), bits // 8


def _levels_plan(levels: np.ndarray | None):
    """Rep/def levels: FastLanes bitpacking at the page's widest level (a chunk's last partial
    1024-level block is stored raw where padding it would not pay, as pylance does)."""
    if levels is None or not len(levels):
        return _flat(16), lambda chunk: chunk.astype("<u2").tobytes()
    width = max(1, int(levels.max()).bit_length())
    enc = pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(uncompressed_bits_per_value=16, values=_flat(width))
    )

    def pack(chunk: np.ndarray) -> bytes:
        return fastlanes.pack_out_of_line(chunk.astype(np.uint16), width, 16).astype("<u2").tobytes()

    return enc, pack


def _runs(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run values, u8 run lengths) with runs split at 255."""
    if not len(vals):
        return vals[:0], np.zeros(0, np.uint8)
    starts = np.flatnonzero(np.concatenate([[True], vals[1:] != vals[:-1]]))
    lengths = np.diff(np.append(starts, len(vals)))
    pieces = (lengths + 254) // 255
    run_values = np.repeat(vals[starts], pieces)
    run_lengths = np.full(int(pieces.sum()), 255, np.int64)
    run_lengths[np.cumsum(pieces) - 1] = lengths - (pieces - 1) * 255
    return run_values, run_lengths.astype(np.uint8)


def _level_block(levels: np.ndarray) -> tuple[pb.CompressiveEncoding, bytes]:
    """A whole buffer of u16 levels, as the smaller of block-form RLE (``u64 values_byte_len |
    values | u8 run lengths``) and FastLanes bitpacking."""
    values, lengths = _runs(levels.astype("<u2"))
    rle = RLE_VALUES_LENGTH.pack(values.nbytes) + values.tobytes() + lengths.tobytes()
    enc, _pack = _levels_plan(levels)
    packed = fastlanes.pack_out_of_line(
        levels.astype(np.uint16), enc.out_of_line_bitpacking.values.flat.bits_per_value, 16
    )
    if packed.nbytes < len(rle):
        return enc, packed.tobytes()
    return pb.CompressiveEncoding(rle=pb.Rle(values=_flat(16), run_lengths=_flat(8))), rle


def _rle_plan(values: pa.Array, bits: int):
    """RLE (flat values + u8 run lengths, runs split at 255) when runs are long enough to pay."""
    raw = _fixed_bytes(values).view(_UINT_DTYPE[bits])
    if len(raw) < 64:
        return None
    changes = int(np.count_nonzero(raw[1:] != raw[:-1])) + 1
    if changes * (bits // 8 + 1) * 8 > raw.nbytes:  # runs must save at least 8x over raw values
        return None
    enc = pb.CompressiveEncoding(rle=pb.Rle(values=_flat(bits), run_lengths=_flat(8)))

    def rle_chunk(chunk: pa.Array) -> list[bytes]:
        run_values, run_lengths = _runs(_fixed_bytes(chunk).view(raw.dtype))
        return [run_values.tobytes(), run_lengths.tobytes()]

    return enc, MAX_CHUNK_VALUES, _per_chunk(rle_chunk)


def _dictionary_of(values: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """(chunk values, page dictionary): Arrow dictionaries, and low-cardinality strings, are stored
    as u32 indices into a per-page dictionary (nulls travel in the def levels)."""
    if pa.types.is_dictionary(values.type):
        indices, dictionary = values.indices, values.dictionary
    elif (pa.types.is_string(values.type) or pa.types.is_binary(values.type)) and len(values) >= 64:
        sample = values.slice(0, 4096)
        if pc.count_distinct(sample).as_py() * 4 > len(sample):
            return values, None
        encoded = pc.dictionary_encode(values)
        if len(encoded.dictionary) * 4 > len(values):
            return values, None
        indices, dictionary = encoded.indices, encoded.dictionary
    else:
        return values, None
    return pc.fill_null(indices, 0).cast(pa.uint32()), dictionary


def _dictionary_block(dictionary: pa.Array) -> tuple[pb.CompressiveEncoding, bytes]:
    """A dictionary page buffer: variable values in block form (``u32 32 | u32 data_start |
    offsets | data``) or flat fixed-width values."""
    bits = _fixed_bits(dictionary.type)
    if bits:
        return _flat(bits), _fixed_bytes(dictionary).tobytes()
    offs, data = _offsets_and_data(dictionary)
    rel = (offs - offs[0]).astype("<u4")
    start = VARIABLE_BLOCK_HEADER_32.size + rel.nbytes
    body = VARIABLE_BLOCK_HEADER_32.pack(32, start) + rel.tobytes() + data[offs[0] : offs[-1]].tobytes()
    return pb.CompressiveEncoding(variable=pb.Variable(offsets=_flat(32))), body


def _value_plan(values: pa.Array, general: bool = True):
    """(value encoding, values per chunk or None for byte-sized chunks, ``(page, spans) -> value
    buffers of each chunk``) for a mini-block page. ``general=False``: strings stay plain
    ``variable`` (FSST's grammar wants Variable values, not zstd over them)."""
    t = values.type
    if pa.types.is_struct(t):
        return _packed_struct_plan(values)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        item_bits = _fixed_bits(t.value_type)
        has_validity = values.values.null_count > 0
        fsl = pb.FixedSizeList(items_per_value=dim, values=_flat(item_bits), has_validity=has_validity)

        def fsl_chunk(chunk: pa.Array) -> list[bytes]:
            items = chunk.values.slice(chunk.offset * dim, len(chunk) * dim)
            bufs = [_fixed_bytes(items).tobytes()]
            if has_validity:
                bufs.insert(
                    0,
                    np.packbits(items.is_valid().to_numpy(zero_copy_only=False), bitorder="little").tobytes(),
                )
            return bufs

        if not has_validity and item_bits % 8 == 0:
            width = item_bits * dim // 8

            def fsl_page(page: pa.Array, spans: list) -> list[list[memoryview]]:
                return _slice_bytes(_fixed_bytes(page), spans, width)

            per_chunk = _pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, item_bits * dim))
            return pb.CompressiveEncoding(fixed_size_list=fsl), per_chunk, fsl_page
        per_chunk = _pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, item_bits * dim))
        return pb.CompressiveEncoding(fixed_size_list=fsl), per_chunk, _per_chunk(fsl_chunk)
    bits = _fixed_bits(t)
    if bits:
        rle = _rle_plan(values, bits) if bits in (8, 16, 32, 64) and not pa.types.is_boolean(t) else None
        if rle is not None:
            return rle
        if bits in (8, 16, 32, 64) and not pa.types.is_boolean(t) and _bitpacking_pays(values, bits):
            enc = pb.CompressiveEncoding(
                inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=bits)
            )
            dtype = _UINT_DTYPE[bits]

            def packed_page(page: pa.Array, spans: list) -> list[list[bytes]]:
                raw = _fixed_bytes(page).view(dtype)
                if all(b - a == fastlanes.BLOCK for a, b in spans[:-1]):
                    # chunks are whole 1024-value blocks, so the page packs in one vectorised pass
                    return [[b] for b in fastlanes.pack_inline_blocks(raw, bits)]
                # a chunk cut short (its values' lists hold more levels than a chunk may) is
                # a block of its own
                return [fastlanes.pack_inline_blocks(raw[a:b], bits) for a, b in spans]

            return enc, fastlanes.BLOCK, packed_page
        if not pa.types.is_boolean(t):
            width = bits // 8
            return (
                _flat(bits),
                _pow2_at_most(CHUNK_TARGET_BYTES * 8 // bits),
                lambda page, spans: _slice_bytes(_fixed_bytes(page), spans, width),
            )
        per_chunk = _pow2_at_most(CHUNK_TARGET_BYTES * 8 // bits)
        return _flat(bits), per_chunk, _per_chunk(lambda chunk: [_fixed_bytes(chunk).tobytes()])
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    off_bits = 64 if large else 32
    enc = pb.CompressiveEncoding(variable=pb.Variable(offsets=_flat(off_bits)))

    def variable_chunk(chunk: pa.Array) -> list[bytes]:
        offs, data = _offsets_and_data(chunk)
        header = (len(chunk) + 1) * off_bits // 8
        rel = (offs - offs[0] + header).astype("<u8" if large else "<u4")
        body = data[offs[0] : offs[-1]].tobytes()
        buf = rel.tobytes() + body
        return [buf + b"\x00" * (-len(buf) % (off_bits // 8))]  # padded to the offset width

    if not general or not _zstd_pays(values):
        return enc, None, _per_chunk(variable_chunk)
    codec = pa.Codec("zstd")

    def zstd_chunk(chunk: pa.Array) -> list[bytes]:
        raw = variable_chunk(chunk)[0]
        return [ZSTD_SIZE_PREFIX.pack(len(raw)) + codec.compress(pa.py_buffer(raw)).to_pybytes()]

    general = pb.CompressiveEncoding(
        general=pb.General(compression=pb.BufferCompression(scheme=pb.COMPRESSION_ALGORITHM_ZSTD), values=enc)
    )
    return general, None, _per_chunk(zstd_chunk)


def _packed_struct_plan(values: pa.StructArray):
    """A struct of fixed-width fields (``lance-encoding:packed``) as pylance stores it: each row's
    field values side by side, ``PackedStruct`` over a Flat of the summed width. Like pylance,
    only whole-byte fields without nulls of their own (the struct itself may be null)."""
    fields = [values.type.field(i) for i in range(values.type.num_fields)]
    children = values.flatten()  # (sliced like the struct; the struct's nulls are theirs too)
    rows_valid = values.is_valid().to_numpy(zero_copy_only=False)
    widths = [_fixed_bits(f.type) for f in fields]
    for f, child, bits in zip(fields, children, widths):
        if not bits or bits % 8 or pa.types.is_fixed_size_list(f.type):
            raise UnsupportedFeatureError(
                f"packed struct field {f.name!r} ({f.type}): lance-encoding:packed "
                "needs fixed-width fields of whole bytes"
            )
        if child.null_count and (rows_valid & ~child.is_valid().to_numpy(zero_copy_only=False)).any():
            raise UnsupportedFeatureError(
                f"packed struct field {f.name!r} holds nulls: lance-encoding:packed "
                "stores none (as in pylance)"
            )
    rows = (
        np.concatenate(
            [_fixed_bytes(c).reshape(len(values), bits // 8) for c, bits in zip(children, widths)], axis=1
        )
        if fields
        else np.zeros((len(values), 0), np.uint8)
    )
    total = sum(widths)
    enc = pb.CompressiveEncoding(packed_struct=pb.PackedStruct(bits_per_value=widths, values=_flat(total)))

    def packed_page(page: pa.Array, spans: list) -> list[list[memoryview]]:
        return _slice_bytes(rows.reshape(-1), spans, total // 8)

    return enc, _pow2_at_most(CHUNK_TARGET_BYTES * 8 // max(1, total)), packed_page


def _fsst_applies(values: pa.Array, compression: str | None) -> bool:
    """pylance's rule: FSST for string (not binary) pages of >= 32 KiB whose longest value has
    >= 5 bytes, unless the field names another compression; always when it names "fsst"."""
    t = values.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if not len(values) or not (text or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return False
    if compression is not None:
        return compression == "fsst"
    if not text:
        return False
    offs, _ = _offsets_and_data(values)
    if int(offs[-1] - offs[0]) < FSST_MIN_PAGE_BYTES:
        return False
    return int(np.diff(offs).max()) >= FSST_MIN_LONGEST


def _fsst_compressed(values: pa.Array, compressor: fsst.ColumnCompressor) -> tuple[pa.Array, bytes]:
    """The page's strings FSST-compressed, as a binary array of the same length and offset width
    (nulls travel in the def levels), and the symbol table."""
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    offs, data = _offsets_and_data(values)
    table, new_offs, codes = compressor.compress(offs, data)
    compressed = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        len(values),
        [None, pa.py_buffer(new_offs.astype(np.int64 if large else np.int32)), pa.py_buffer(codes)],
    )
    return compressed, table


def _zstd_pays(values: pa.Array) -> bool:
    """Compress string chunks (binary, or strings FSST leaves out) when a sample of the data
    shrinks by at least a quarter."""
    offs, data = _offsets_and_data(values.slice(0, 2048))
    sample = data[offs[0] : min(int(offs[-1]), int(offs[0]) + 64 * 1024)].tobytes()  # not the whole buffer
    if len(sample) < 1024:
        return False
    return len(pa.Codec("zstd").compress(pa.py_buffer(sample))) * 4 < len(sample) * 3


def _per_chunk(encode):
    """Lift a chunk encoder to the page form ``(page, spans) -> buffers per chunk`` that encodings
    vectorising across chunks implement directly."""
    return lambda page, spans: [encode(page.slice(a, b - a)) for a, b in spans]


def _slice_bytes(raw: np.ndarray, spans: list[tuple[int, int]], width: int) -> list[list[memoryview]]:
    """Plain fixed-width chunks: consecutive byte ranges of the page's values."""
    view = np.ascontiguousarray(raw).data.cast("B")
    return [[view[a * width : b * width]] for a, b in spans]


def _bitpacking_pays(values: pa.Array, bits: int) -> bool:
    raw = _fixed_bytes(values).view(_UINT_DTYPE[bits])
    return bool(len(raw)) and int(raw.max()).bit_length() < bits  # one width word per 1024 values


def _pow2_at_most(n: int) -> int:
    n = max(2, min(MAX_CHUNK_VALUES, n))
    return 1 << (n.bit_length() - 1)


def _visible_positions(sh: Shredded, levels: int) -> np.ndarray:
    from .repdef import visible_levels

    return np.flatnonzero(visible_levels(sh.layers, sh.defs, levels))


def _chunk_bounds(
    values: pa.Array,
    per_chunk: int | None,
    visible_pos: np.ndarray,
    n_levels: int,
    max_levels: int,
    target_bytes: int = 4096,
) -> list | None:
    """[((v0, v1), (l0, l1))] per chunk, or None when the levels cannot be chunked.

    Non-final chunks hold a power-of-two number (>= 2) of values; variable-width chunks aim at
    ``target_bytes`` of data; invisible levels travel with the next visible value.
    """
    n = len(values)
    cum = None
    if per_chunk is None:
        offs, _ = _offsets_and_data(values)
        cum = offs - offs[0]
    edges = np.append(visible_pos, n_levels)

    def levels(a: int, b: int) -> int:
        return int((edges[b] if b < n else n_levels) - (edges[a] if a else 0))

    bounds = []
    v0 = 0
    while v0 < n:
        if cum is not None:
            fits = int(np.searchsorted(cum, cum[v0] + target_bytes, side="right")) - 1 - v0
            count = _pow2_at_most(min(fits, 1024 if max_levels <= 4096 else MAX_CHUNK_VALUES))
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
    out = []
    for i, (a, b) in enumerate(bounds):
        l0 = 0 if i == 0 else int(visible_pos[a])
        l1 = n_levels if i == len(bounds) - 1 else int(visible_pos[b])
        out.append(((a, b), (l0, l1)))
    return out
