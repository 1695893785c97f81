"""A large mini-block page decoded as consecutive runs of its chunks, side by side.

Why: a scan decodes the pages of its columns on a pool (``reader_ahead``), but a lone large page
(one column of a file pylance wrote in one piece: 1M names in one 7.4 MB page) is decoded by
the reading thread alone while the pool idles: 54 of a 111 ms scan of that column. A page whose
values carry no levels (no repetition, no nulls) is a run of chunks each holding whole rows, so
any cut between chunks is a cut between rows: the parts decode on their own and their arrays
are joined in order.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pyarrow as pa

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw._util import pools
from lance_fw.file.buffers import as_u8
from lance_fw.file.encoding import PageInput

from . import repdef
from .layouts import chunk_levels, page_chunks

#: Encoded value bytes each part holds at least: below this the handoff and the join of the
#: parts' arrays cost more than the second core saves.
PART_MIN_BYTES = 2 << 20
#: Value encodings whose pages are split: decompression that computes (FSST, zstd/lz4). Values
#: decoded by a copy or an unpack are bound by the memory bus the two cores share, and parts
#: then only add the join's copy (pylance's pages: 128-byte vectors 107 -> 132 ms a scan,
#: bit-packed doubles 27 -> 30 ms; FSST names 80-96 -> 74-79 ms).
SPLIT_COMPRESSIONS = frozenset({"fsst", "general"})
#: The pool the parts are decoded on (never the caller's: see ``mini_block_in_parts``).
_PARTS_POOL = "page-parts"


def mini_block_in_parts(
    layout: pb.MiniBlockLayout, page: PageInput, num_rows: int, arrow_type: pa.DataType
) -> pa.Array | None:
    """The page's array, its chunks decoded in parts on a pool; None where the page is not
    split (the caller decodes it whole): a page under two parts' worth of bytes, with
    repetition or definition levels, of values whose decoding does not compute
    (``SPLIT_COMPRESSIONS``), a dictionary-typed column (joining its parts would re-encode the
    dictionary), or a caller already on one of lance_fw's pool threads (its siblings share the
    cores already). A damaged chunk table or dictionary raises what decoding it whole does
    (``layouts.page_chunks``)."""
    if pools.on_pool_thread():
        return None
    if layout.HasField("rep_compression") or layout.HasField("def_compression"):
        return None
    if pa.types.is_dictionary(arrow_type) or len(page.buffers) < 2:
        return None
    if layout.value_compression.WhichOneof("compression") not in SPLIT_COMPRESSIONS:
        return None
    parts = min(pools.workers(), len(as_u8(page.buffers[1])) // PART_MIN_BYTES)
    if parts < 2:
        return None
    whole = page_chunks(layout, page.buffers, page.where)
    counts = whole.counts
    if len(counts) < parts or int(counts.sum()) != num_rows:
        return None
    ends = np.cumsum(whole.sizes)
    cuts = np.searchsorted(ends, np.arange(1, parts, dtype=np.int64) * int(ends[-1]) // parts) + 1
    bounds = [0, *sorted(set(cuts.tolist()) - {0, len(counts)}), len(counts)]

    def decode(span: tuple[int, int]) -> pa.Array:
        a, b = span
        run = replace(whole, starts=whole.starts[a:b], sizes=whole.sizes[a:b], counts=counts[a:b])
        levels = chunk_levels(run, int(counts[a:b].sum()))[0]
        return repdef.build(levels, arrow_type, page.where)

    arrays = list(pools.pool(_PARTS_POOL).map(decode, itertools.pairwise(bounds)))
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
