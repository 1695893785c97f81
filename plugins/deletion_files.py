"""pylance's two deletion-file formats.

* type 0 (``.arrow``): Arrow IPC *file*, one ``row_id: uint32 not null`` column, zstd body.
* type 1 (``.bin``): a 32-bit roaring bitmap in the portable serialization.
"""

from __future__ import annotations

import array

import numpy as np
import pyarrow as pa
import pyroaring

from lance_fw._util import sets
from lance_fw.errors import CorruptFileError
from lance_fw.hookspecs import hookimpl
from lance_fw.interfaces import DeletionCodec
from lance_fw.table.deletion import ARROW_ARRAY, BITMAP

_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])


class ArrowDeletionCodec(DeletionCodec):
    extension = "arrow"

    def decode(self, data: bytes, path: str) -> np.ndarray:
        try:
            table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
            values = table.column(0).to_numpy()
        except (pa.ArrowException, IndexError, KeyError, OSError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptFileError(path, f"not a readable Arrow deletion file: {exc}") from None
        return sets.unique(values.astype(np.uint32))

    def encode(self, offsets: np.ndarray) -> bytes:
        sink = pa.BufferOutputStream()
        batch = pa.record_batch([pa.array(offsets.astype(np.uint32), pa.uint32())], schema=_SCHEMA)
        with pa.ipc.new_file(sink, _SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_batch(batch)
        return sink.getvalue().to_pybytes()


class RoaringDeletionCodec(DeletionCodec):
    extension = "bin"

    def decode(self, data: bytes, path: str) -> np.ndarray:
        try:
            bitmap = pyroaring.BitMap.deserialize(bytes(data))
        except (ValueError, OverflowError, IndexError, MemoryError) as exc:
            raise CorruptFileError(path, f"not a readable roaring deletion file: {exc}") from None
        if hasattr(bitmap, "to_array"):  # an array.array('I'): its buffer as it is
            return np.frombuffer(bitmap.to_array(), dtype=np.uint32).copy()
        return np.array(list(bitmap), dtype=np.uint32)

    def encode(self, offsets: np.ndarray) -> bytes:
        # from an array.array('I'), which pyroaring reads as a buffer: from a numpy array it
        # iterates value by value (20k offsets: 1.9 ms, against 0.23)
        bitmap = pyroaring.BitMap(array.array("I", np.ascontiguousarray(offsets, dtype=np.uint32).tobytes()))
        return bitmap.serialize()


@hookimpl
def lance_deletion_codecs() -> dict[int, DeletionCodec]:
    return {ARROW_ARRAY: ArrowDeletionCodec(), BITMAP: RoaringDeletionCodec()}
