"""``take_blobs`` against pylance: a blob column (file format 2.2; inline and sidecar blobs, nulls,
empty values) pylance wrote, read by both libraries through every selector (positions, row
addresses, stable row ids) and the ``BlobFile`` calls; the same bytes, the same Nones, the same
error classes. (lance_fw does not write pylance's blob extension type yet: pylance writes.)"""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw

ROWS = 5000
ROWS_PER_FILE = 2100
BIG = 200_000  # past pylance's inline limit: such blobs go to sidecar files


def _value(i: int) -> bytes | None:
    if i % 11 == 3:
        return None
    if i % 13 == 5:
        return b""
    if i % 1000 == 7:
        return bytes([i % 251]) * BIG
    return f"blob {i} ".encode() * (i % 7 + 1)


@pytest.fixture(scope="module", params=[False, True], ids=["addresses", "stable row ids"])
def path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("blobs") / "d")
    table = pa.table(
        {"id": pa.array(np.arange(ROWS), pa.int64()), "b": lance.blob_array([_value(i) for i in range(ROWS)])}
    )
    ds = lance.write_dataset(
        table,
        out,
        data_storage_version="2.2",
        max_rows_per_file=ROWS_PER_FILE,
        enable_stable_row_ids=request.param,
    )
    ds.delete("id % 97 = 1")
    return out


def _read(files: list[Any]) -> list[tuple[int, bytes] | None]:
    return [None if f is None else (f.size(), f.read()) for f in files]


def _both(path: str, call: Any) -> tuple[Any, Any]:
    return call(lance.dataset(path)), call(lance_fw.dataset(path))


def test_by_position(path: str) -> None:
    count = lance.dataset(path).count_rows()
    positions = [0, 3, 4, 5, 6, 7, 2099, 2100, 4096, count - 1, 1007 - 11]
    theirs, ours = _both(path, lambda ds: _read(ds.take_blobs("b", indices=positions)))
    assert ours == theirs
    assert any(v is None for v in theirs) and any(v == (0, b"") for v in theirs)


@pytest.mark.parametrize("selector", ["ids", "addresses"])
def test_by_id_and_address(path: str, selector: str) -> None:
    scan = lance.dataset(path).to_table(columns=["id"], with_row_id=True, with_row_address=True)
    column = "_rowid" if selector == "ids" else "_rowaddr"
    wanted = np.random.default_rng(3).permutation(scan[column].to_numpy())[:400].tolist()
    theirs, ours = _both(path, lambda ds: _read(ds.take_blobs("b", **{selector: wanted})))
    assert ours == theirs


def test_blob_file_calls(path: str) -> None:
    def call(ds: Any) -> object:
        big = ds.take_blobs("b", indices=[6])[0]  # id 7 (id 1 is deleted): a sidecar blob
        out = [big.size(), big.read(10), big.tell(), big.seek(BIG - 5), big.read(), big.tell()]
        out += [big.read_range(100, 20), big.tell(), big.read_ranges([(0, 3), (BIG - 2, 2)])]
        big.seek(-4, 2)
        return [*out, big.read(2), big.readable(), big.seekable()]

    theirs, ours = _both(path, call)
    assert ours == theirs


def _raises(call: Any) -> type[BaseException] | None:
    try:
        call()
    except Exception as error:
        return type(error)
    return None


@pytest.mark.parametrize(
    ("call", "builtin"),
    [
        (lambda ds: ds.take_blobs("b", indices=[0], ids=[0]), ValueError),
        (lambda ds: ds.take_blobs("b"), ValueError),
        (lambda ds: ds.take_blobs("id", indices=[0]), ValueError),
        (lambda ds: ds.take_blobs("b", addresses=[1]), NotImplementedError),  # a deleted row
        (lambda ds: ds.take_blobs("b", indices=[1])[0].read_range(0, 10**6), ValueError),
    ],
    ids=["two selectors", "no selector", "not a blob column", "deleted row", "range past the end"],
)
def test_errors(path: str, call: Any, builtin: type[BaseException]) -> None:
    theirs, ours = _both(path, lambda ds: _raises(lambda: call(ds)))
    assert theirs is not None and issubclass(theirs, builtin)
    assert ours is not None and issubclass(ours, builtin)
