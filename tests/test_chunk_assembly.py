"""Mini-block chunks of fixed-width values laid out as strided blocks (``ContiguousChunks``).

The strided layout replaced a join of per-chunk views (whose Python objects kept the cyclic GC
busy during writes); these tests pin it to the join it replaced, across runs of equally sized
chunks and the fallback past ``MAX_STRIDED_RUNS``, and check pylance reads what it writes.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from conftest import assert_tables_equal
from lance_fw_plugins.encodings_v2_1 import encode
from lance_fw_plugins.encodings_v2_1.value_encode import ContiguousChunks


def _as_lists(chunks: ContiguousChunks) -> list[list[bytes]]:
    return [[bytes(view) for view in chunk] for chunk in chunks]


def _bounds(edges: list[int]) -> list:
    return [((a, b), (a, b)) for a, b in zip(edges[:-1], edges[1:])]


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize(
    ("values", "per_chunk", "max_levels", "width"),
    [
        (70_001, 32, 8192, 128),  # 128-byte vectors: 32 a chunk, a short last one
        (70_000, 32, 8192, 128),  # every chunk full
        (10_000, 4096, 1000, 1),  # halved chunks, then one last chunk: three sizes
        (5_003, 512, 4096, 8),
        (1, 512, 4096, 12),  # one chunk, padded to 8 bytes
    ],
)
def test_strided_chunks_equal_the_joined_ones(values, per_chunk, max_levels, width, large):
    raw = np.random.default_rng(values).integers(0, 256, values * width, dtype=np.uint8)
    bounds = encode._flat_bounds(values, per_chunk, max_levels)
    edges = [a for (a, _), _ in bounds] + [bounds[-1][0][1]]
    chunks = ContiguousChunks(raw, np.array(edges, np.int64) * width)
    meta, body = encode._assemble_chunks(bounds, [], chunks, large, False)
    want_meta, want_body = encode._assemble_chunks(bounds, [], _as_lists(chunks), large, False)
    assert isinstance(body, memoryview)  # the strided path ran
    assert meta == want_meta
    assert bytes(body) == want_body


def test_many_chunk_sizes_fall_back_to_the_join():
    rng = np.random.default_rng(7)
    edges = np.concatenate([[0], np.cumsum(rng.integers(1, 40, 3 * encode.MAX_STRIDED_RUNS))])
    raw = rng.integers(0, 256, int(edges[-1]), dtype=np.uint8)
    chunks = ContiguousChunks(raw, edges)
    bounds = _bounds(edges.tolist())
    meta, body = encode._assemble_chunks(bounds, [], chunks, True, False)
    want_meta, want_body = encode._assemble_chunks(bounds, [], _as_lists(chunks), True, False)
    assert isinstance(body, bytes)  # joined
    assert (meta, body) == (want_meta, want_body)


def test_contiguous_chunks_index_like_a_list():
    raw = np.arange(20, dtype=np.uint8)
    chunks = ContiguousChunks(raw, np.array([0, 8, 16, 20]))
    assert len(chunks) == 3
    assert bytes(chunks[-1][0]) == bytes(range(16, 20))
    assert [bytes(c[0]) for c in chunks[1:]] == [bytes(range(8, 16)), bytes(range(16, 20))]
    with pytest.raises(IndexError):
        chunks[3]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_reads_strided_vector_pages(tmp_path, version):
    """Vectors over several pages (each ~2,000 chunks and a short last chunk), a packed struct and
    flat doubles: pylance reads lance_fw's pages as the table written."""
    rows = 70_001
    rng = np.random.default_rng(3)
    packed = pa.field(
        "s", pa.struct([("a", pa.int32()), ("b", pa.int16())]), metadata={"lance-encoding:packed": "true"}
    )
    table = pa.Table.from_arrays(
        [
            pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 32, dtype=np.float32)), 32),
            pa.array(rng.random(rows)),
            pa.StructArray.from_arrays(
                [pa.array(rng.integers(-(2**31), 2**31, rows, dtype=np.int32)),
                 pa.array(rng.integers(-(2**15), 2**15, rows, dtype=np.int16))],
                ["a", "b"],
            ),
        ],
        schema=pa.schema([pa.field("vec", pa.list_(pa.float32(), 32)), pa.field("x", pa.float64()), packed]),
    )
    uri = str(tmp_path / "t.lance")
    lance_fw.write_dataset(table, uri, data_storage_version=version, max_page_bytes=1 << 20)
    assert_tables_equal(table, lance.dataset(uri).to_table())
    assert_tables_equal(table, lance_fw.dataset(uri).to_table())
