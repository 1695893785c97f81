"""``lance_fw.file``'s metadata objects against pylance's ``lance.file`` (issue 16): ``metadata()``
sizes, columns, page buffers and page encodings, ``file_statistics()`` and ``stable_version()``, on
files written by each library at every file version; what cannot be answered exactly is refused."""

from __future__ import annotations

from pathlib import Path

import lance.file as pl_file
import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

import lance_fw.file as fw_file
from lance_fw._proto import encodings_v2_0_pb2, file2_pb2
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file import pylance_metadata

ROWS = 10_000  # several 4096-row chunks


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(3)
    words = [f"word{i}-{'x' * (i % 13)}" for i in range(300)]
    return {
        "scalars": pa.table(
            {
                "id": pa.array(np.arange(ROWS), pa.int64()),
                "small": pa.array(rng.integers(0, 100, ROWS), pa.int32()),
                "nulls": pa.array(rng.integers(0, 5, ROWS), mask=rng.random(ROWS) < 0.3),
                "const": pa.array([7] * ROWS, pa.int64()),
                "f": pa.array(rng.random(ROWS)),
                "b": pa.array(rng.random(ROWS) < 0.5),
            }
        ),
        "strings": pa.table(
            {
                "words": pa.array(rng.choice(words, ROWS)),
                "urls": pa.array([f"http://example.com/p/{i % 1000}/index.html?q={i}" for i in range(ROWS)]),
                "dict": pa.array(rng.choice(["aa", "bb", "cc"], ROWS)).dictionary_encode(),
            }
        ),
        "nested": pa.table(
            {
                "st": pa.array([{"x": i, "y": str(i)} for i in range(ROWS)]),
                "l": pa.array([[i] * (i % 4) if i % 5 else None for i in range(ROWS)]),
                "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 4), pa.float32()), 4),
                "blob": pa.array(
                    [rng.bytes(200) if i % 50 == 0 else b"" for i in range(ROWS)], pa.large_binary()
                ),
            }
        ),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("metadata")
    paths = []
    for name, table in _tables().items():
        for lib in (pl_file, fw_file):
            for version in ("2.0", "2.1", "2.2"):
                path = str(root / f"{name}-{lib.__name__}-{version}.lance")
                writer = lib.LanceFileWriter(path, version=version)
                for batch in table.to_batches(max_chunksize=3000):
                    writer.write_batch(batch)
                writer.add_global_buffer(b"extra")
                writer.close()
                paths.append(path)
    return paths


def _buffers(descriptors: list) -> list[tuple[int, int]]:
    return [(d.position, d.size) for d in descriptors]


def test_metadata_matches_pylance(files: list[str]) -> None:
    rendered = 0
    for path in files:
        expected, got = pl_file.LanceFileReader(path).metadata(), fw_file.LanceFileReader(path).metadata()
        for name in ("num_rows", "major_version", "minor_version", "num_data_bytes"):
            assert getattr(got, name) == getattr(expected, name), (path, name)
        assert got.num_column_metadata_bytes == expected.num_column_metadata_bytes, path
        assert got.num_global_buffer_bytes == expected.num_global_buffer_bytes, path
        assert _buffers(got.global_buffers) == _buffers(expected.global_buffers), path
        assert len(got.columns) == len(expected.columns), path
        for col_got, col_expected in zip(got.columns, expected.columns):
            assert _buffers(col_got.column_buffers) == _buffers(col_expected.column_buffers)
            assert len(col_got.pages) == len(col_expected.pages)
            for page_got, page_expected in zip(col_got.pages, col_expected.pages):
                assert _buffers(page_got.buffers) == _buffers(page_expected.buffers)
                assert page_got.encoding == page_expected.encoding, path
                rendered += 1
    assert rendered > 50


def test_file_statistics_match_pylance(files: list[str]) -> None:
    for path in files:
        expected = pl_file.LanceFileReader(path).file_statistics()
        got = fw_file.LanceFileReader(path).file_statistics()
        assert repr(got) == repr(expected), path
        assert [(c.num_pages, c.size_bytes) for c in got.columns] == [
            (c.num_pages, c.size_bytes) for c in expected.columns
        ]


def test_stable_version() -> None:
    assert fw_file.stable_version() == pl_file.stable_version()


def test_the_classes_are_exported() -> None:
    for name in ("LanceFileStatistics", "LanceColumnMetadata", "LancePageMetadata", "stable_version"):
        assert hasattr(fw_file, name) and hasattr(pl_file, name)


def _page(encoding: file2_pb2.Encoding) -> file2_pb2.ColumnMetadata.Page:
    return file2_pb2.ColumnMetadata.Page(buffer_offsets=[64], buffer_sizes=[8], encoding=encoding, length=1)


def test_an_unchecked_encoding_message_is_refused(tmp_path: Path) -> None:
    """A 2.0 ``Constant`` encoding: neither library writes it, so its rendering was never compared."""
    inner = encodings_v2_0_pb2.ArrayEncoding(constant=encodings_v2_0_pb2.Constant(value=b"\x01"))
    wrapped = any_pb2.Any()
    wrapped.Pack(inner)
    page = _page(file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=wrapped.SerializeToString())))
    [column] = pylance_metadata.column_metadata([file2_pb2.ColumnMetadata(pages=[page])], "f.lance")
    assert _buffers(column.pages[0].buffers) == [(64, 8)]
    with pytest.raises(UnsupportedFeatureError, match=r"lance\.encodings\.Constant"):
        _ = column.pages[0].encoding


def test_a_deferred_encoding_is_refused() -> None:
    page = _page(file2_pb2.Encoding(indirect=file2_pb2.DeferredEncoding(buffer_location=0, buffer_length=4)))
    [column] = pylance_metadata.column_metadata([file2_pb2.ColumnMetadata(pages=[page])], "f.lance")
    with pytest.raises(UnsupportedFeatureError, match="indirect"):
        _ = column.pages[0].encoding


def test_statistics_with_column_buffers_are_refused() -> None:
    column = file2_pb2.ColumnMetadata(
        pages=[_page(file2_pb2.Encoding())], buffer_offsets=[0], buffer_sizes=[4]
    )
    with pytest.raises(UnsupportedFeatureError, match="column-level buffers"):
        pylance_metadata.file_statistics([column], "f.lance")
