"""``PageInput.read_parts`` over buffers in memory: the pieces asked, and a typed error naming the
page for a piece outside its buffer or a buffer the page does not have (a damaged chunk table
must never read past a buffer, nor wrap around to another one)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_fw.errors import CorruptFileError
from lance_fw.interfaces import PageInput


def _page() -> PageInput:
    return PageInput([memoryview(b"abcdef"), memoryview(b"0123456789")], 3, pa.int64(), "page P")


def test_pieces_in_the_order_asked():
    pieces = _page().read_parts([(1, 2, 3), (0, 0, 6), (1, 9, 1), (0, 6, 0)])
    assert [bytes(p) for p in pieces] == [b"234", b"abcdef", b"9", b""]


@pytest.mark.parametrize(
    "part", [(0, 4, 3), (1, -1, 2), (1, 3, -1), (2, 0, 1), (-1, 0, 1), (5, 0, 0)], ids=str
)
def test_a_piece_outside_raises_naming_the_page(part):
    with pytest.raises(CorruptFileError, match="page P"):
        _page().read_parts([part])


@pytest.mark.parametrize("index", [-1, 2])
def test_buffer_size_of_a_buffer_the_page_lacks_raises(index):
    with pytest.raises(CorruptFileError, match="page P"):
        _page().buffer_size(index)
