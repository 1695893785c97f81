"""Which value compression a 2.2 mini-block page gets, against pylance: the same choice and the same
file size for short and long pages, around the 1024-value FastLanes block, for values whose bit
width is small, close to the full width, or full (floats, full-range integers) — except that
lance_fw keeps flat a page that bit-packing would shrink by less than ``MIN_PACKING_SAVING``
(pylance packs it), at most that fraction larger."""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader
from lance.file import LanceFileWriter as PylanceWriter

import lance_fw.file
from lance_fw_plugins.encodings_v2_1.fastlanes import BLOCK
from lance_fw_plugins.encodings_v2_1.value_encode import MIN_PACKING_SAVING

SIZES = [4, 100, 500, 1000, 1024, 1025, 2000, 5000]
RNG = np.random.default_rng(11)
ARRAYS = {
    "counting int64": lambda n: pa.array(np.arange(n, dtype=np.int64)),
    "random float64": lambda n: pa.array(RNG.random(n)),
    "full-range int64": lambda n: pa.array(RNG.integers(-(2**62), 2**62, n)),
    "small int32": lambda n: pa.array(RNG.integers(0, 7, n).astype(np.int32)),
    "uint16 near full width": lambda n: pa.array(RNG.integers(2**14, 2**15, n).astype(np.uint16)),
}


def _choice(path: str) -> tuple[list[str], int]:
    described = str(LanceFileReader(path).metadata())
    return re.findall(r"compression: Some\(\s*(\w+)", described), os.path.getsize(path)


@pytest.mark.parametrize("kind", list(ARRAYS))
@pytest.mark.parametrize("n", SIZES)
def test_value_compression_matches_pylance(tmp_path, kind, n):
    if kind == "small int32" and n < 64:
        pytest.skip("pylance run-length encodes a few small values; lance_fw keeps them flat (smaller)")
    table = pa.table({"a": ARRAYS[kind](n)})
    theirs, ours = str(tmp_path / "pylance.lance"), str(tmp_path / "lance_fw.lance")
    with PylanceWriter(theirs, version="2.2") as writer:
        writer.write_batch(table)
    writer_fw = lance_fw.file.LanceFileWriter(ours, version="2.2")
    writer_fw.write_batch(table)
    writer_fw.close()
    (our_choice, our_size), (their_choice, their_size) = _choice(ours), _choice(theirs)
    if _packing_saving(table.column("a").combine_chunks()) < MIN_PACKING_SAVING:
        assert our_choice == [c.replace("InlineBitpacking", "Flat") for c in their_choice]
        assert their_size <= our_size <= their_size * (1 + MIN_PACKING_SAVING)
    else:
        assert (our_choice, our_size) == (their_choice, their_size)
    assert lance_fw.file.LanceFileReader(ours).read_all().to_table().equals(table)


def _packing_saving(values: pa.Array) -> float:
    """The fraction of the flat bytes that inline bit-packing saves: each 1024-value block (the
    last one padded) is a width word plus its values at the page's widest width."""
    bits = values.type.bit_width
    raw = np.frombuffer(values.buffers()[1], f"<u{bits // 8}", len(values))
    width = int(raw.max()).bit_length()
    blocks = -(-len(values) // BLOCK)
    return 1 - blocks * (bits + BLOCK * width) / (len(values) * bits)
