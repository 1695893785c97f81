"""pylance's ``lance.blob`` names: the blob v2 logical type and values, and file-like blob reads.

Why these exist: code written against pylance builds blob columns with ``blob_field`` /
``blob_array`` (an Arrow extension type, ``lance.blob.v2``, whose storage is
``struct<data, uri, position, size>``), writes them at file format 2.2, and reads them back as
``BlobFile`` handles (``Dataset.take_blobs``). The same calls must work unchanged on lance_fw, so
the names, signatures, validation and error classes here follow pylance 14's.

Writing those columns (descriptors in the data file, bytes inline or in sidecar files) is
``lance_fw.table.blob_v2_write``; reading them is ``lance_fw.table.blobs``.
"""

from __future__ import annotations

import ctypes
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa

from lance_fw.api.blobs import DEFAULT_BLOB_BUFFER_SIZE, BlobFile
from lance_fw.schema import BLOB_STORAGE, BLOB_V2, LanceSchema

#: Field metadata keys of the per-column storage thresholds ``blob_field`` accepts (as pylance's).
INLINE_THRESHOLD_KEY = b"lance-encoding:blob-inline-size-threshold"
DEDICATED_THRESHOLD_KEY = b"lance-encoding:blob-dedicated-size-threshold"
PACK_FILE_THRESHOLD_KEY = b"lance-encoding:blob-pack-file-size-threshold"
#: The largest threshold pylance accepts: a Rust ``usize`` on this platform.
MAX_THRESHOLD = ctypes.c_size_t(-1).value

#: The storage fields in order; the first two (data, uri) alone are also an accepted storage.
_STORAGE_FIELDS = [(f.name, f.type) for f in BLOB_STORAGE]


@dataclass(frozen=True)
class Blob:
    """One blob value to write: inline ``data``, or an external ``uri`` (optionally a
    ``position``/``size`` range of it). ``None`` stands for a null blob, ``Blob.empty()`` for an
    empty one. Invalid combinations raise ``ValueError`` as pylance's ``Blob`` does."""

    data: bytes | None = None
    uri: str | None = None
    position: int | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        if self.data is not None and self.uri is not None:
            raise ValueError("Blob cannot have both data and uri")
        if self.uri == "":
            raise ValueError("Blob uri cannot be empty")
        if (self.position is not None or self.size is not None) and self.uri is None:
            raise ValueError("External packed blob must have a uri")
        if (self.position is None) != (self.size is None):
            raise ValueError("External blob must set both position and size, or neither")
        if self.data is None and self.uri is None:
            raise ValueError("Blob must set `data` or `uri`; use None for a null blob")
        if self.size == 0:
            raise ValueError("External blob range size must be greater than zero")

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Blob:
        return Blob(data=bytes(data))

    @staticmethod
    def from_uri(uri: str, position: int | None = None, size: int | None = None) -> Blob:
        if uri == "":
            raise ValueError("Blob uri cannot be empty")
        if (position is not None and position < 0) or (size is not None and size < 0):
            raise ValueError("External blob position and size must be non-negative")
        return Blob(uri=uri, position=position, size=size)

    @staticmethod
    def empty() -> Blob:
        return Blob(data=b"")


class BlobType(pa.ExtensionType):
    """The Arrow extension type of a blob v2 column (``lance.blob.v2``), what users write.

    Lance stores each value as a descriptor (where its bytes are); reads return descriptors. The
    storage is ``struct<data: large_binary, uri: utf8, position: uint64, size: uint64>``, or its
    first two fields alone (accepted when deserialised, as pylance does)."""

    def __init__(self) -> None:
        pa.ExtensionType.__init__(self, BLOB_STORAGE, BLOB_V2)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @staticmethod
    def _validate_storage_type(storage_type: pa.DataType) -> None:
        if not pa.types.is_struct(storage_type):
            raise TypeError("BlobType storage type must be a struct")
        fields = list(storage_type)
        if len(fields) not in (2, 4):
            raise TypeError("BlobType storage struct must contain either data/uri or data/uri/position/size")
        for index, field in enumerate(fields):
            name, expected = _STORAGE_FIELDS[index]
            if field.name != name or field.type != expected:
                raise TypeError(
                    f"BlobType storage field {index} must be {name}: {expected}, got "
                    f"{field.name}: {field.type}"
                )
            if index < 2 and not field.nullable:
                raise TypeError(f"BlobType storage field {field.name} must be nullable")

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> BlobType:
        cls._validate_storage_type(storage_type)
        instance = cls.__new__(cls)
        pa.ExtensionType.__init__(instance, storage_type, BLOB_V2)
        return instance

    def __arrow_ext_class__(self) -> type:
        return BlobArray

    def __reduce__(self) -> tuple[Any, tuple[pa.DataType, bytes]]:
        # pickling by storage type keeps working on older pyarrow versions (as pylance does)
        return type(self).__arrow_ext_deserialize__, (self.storage_type, self.__arrow_ext_serialize__())


def _register() -> None:
    """Register ``BlobType`` unless an equal extension (e.g. pylance's) already is: either class
    reads the same columns, and Arrow keeps one class per extension name."""
    try:
        pa.register_extension_type(BlobType())
    except pa.ArrowKeyError:
        pass


_register()


class BlobArray(pa.ExtensionArray):
    """An Arrow array of ``BlobType``: build with ``from_pylist`` or ``blob_array``."""

    @classmethod
    def from_pylist(cls, values: list[Any]) -> BlobArray:
        """Each value: bytes-like (inline), ``str`` (an external uri), ``Blob``, or ``None``."""
        data: list[bytes | None] = []
        uris: list[str | None] = []
        positions: list[int | None] = []
        sizes: list[int | None] = []
        nulls: list[bool] = []
        for v in values:
            d: bytes | None = None
            uri: str | None = None
            position: int | None = None
            size: int | None = None
            if isinstance(v, Blob):
                d, uri, position, size = v.data, v.uri, v.position, v.size
            elif isinstance(v, str):
                if v == "":
                    raise ValueError("Blob uri cannot be empty")
                uri = v
            elif isinstance(v, bytes | bytearray | memoryview):
                d = bytes(v)
            elif v is not None:
                raise TypeError(
                    f"BlobArray values must be bytes-like, str (URI), Blob, or None; got {type(v)}"
                )
            data.append(d)
            uris.append(uri)
            positions.append(position)
            sizes.append(size)
            nulls.append(v is None)
        storage = pa.StructArray.from_arrays(
            [
                pa.array(data, pa.large_binary()),
                pa.array(uris, pa.utf8()),
                pa.array(positions, pa.uint64()),
                pa.array(sizes, pa.uint64()),
            ],
            names=[name for name, _ in _STORAGE_FIELDS],
            mask=pa.array(nulls, pa.bool_()),
        )
        return pa.ExtensionArray.from_storage(BlobType(), storage)


def blob_array(values: list[Any]) -> BlobArray:
    """A ``BlobArray`` of Python values (bytes-like, uri ``str``, ``Blob`` or ``None``)."""
    return BlobArray.from_pylist(values)


def _validate_threshold(name: str, value: int | None, *, allow_zero: bool) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if allow_zero and value < 0:
        raise ValueError(f"{name} must be non-negative")
    if not allow_zero and value <= 0:
        raise ValueError(f"{name} must be positive")
    if value > MAX_THRESHOLD:
        raise OverflowError(f"{name} must fit in a Rust usize")


def blob_field(
    name: str,
    *,
    nullable: bool = True,
    inline_size_threshold: int | None = None,
    dedicated_size_threshold: int | None = None,
    pack_file_size_threshold: int | None = None,
) -> pa.Field:
    """An Arrow field of ``BlobType``. The thresholds (bytes) choose where values are stored:
    at most ``inline_size_threshold`` inline in the data file, above ``dedicated_size_threshold``
    one sidecar file each, otherwise packed sidecar files of at most ``pack_file_size_threshold``;
    they travel as field metadata, so the dataset keeps them for later writes."""
    _validate_threshold("inline_size_threshold", inline_size_threshold, allow_zero=True)
    _validate_threshold("dedicated_size_threshold", dedicated_size_threshold, allow_zero=False)
    _validate_threshold("pack_file_size_threshold", pack_file_size_threshold, allow_zero=False)
    field = pa.field(name, BlobType(), nullable=nullable)
    metadata = {
        key: str(value).encode()
        for key, value in (
            (INLINE_THRESHOLD_KEY, inline_size_threshold),
            (DEDICATED_THRESHOLD_KEY, dedicated_size_threshold),
            (PACK_FILE_THRESHOLD_KEY, pack_file_size_threshold),
        )
        if value is not None
    }
    return field.with_metadata(metadata) if metadata else field


class BlobIterator:
    """The values of a binary column as file-like objects (``None`` for a null)."""

    def __init__(self, binary_iter: Iterator[pa.Scalar]):
        self.binary_iter = binary_iter

    def __next__(self) -> IO[bytes] | None:
        value = next(self.binary_iter)
        if value is None:
            return None
        return io.BytesIO(value.as_py())


class BlobColumn:
    """Iterate a binary (or large binary) Arrow column as file-like objects, for APIs that want
    files; pylance's helper for small-to-medium binary values held in memory."""

    def __init__(self, blob_column: pa.Array | pa.ChunkedArray):
        if not isinstance(blob_column, pa.Array | pa.ChunkedArray):
            raise ValueError(f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got {type(blob_column)}")
        if not pa.types.is_large_binary(blob_column.type) and not pa.types.is_binary(blob_column.type):
            raise ValueError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self) -> BlobIterator:
        return BlobIterator(iter(self.blob_column))


def user_schema(schema: LanceSchema) -> pa.Schema:
    """The schema pylance's ``Dataset.schema`` gives: each blob v2 column as the blob extension
    type over its stored fields (scans still return descriptors, ``LanceField.to_arrow``), its other
    metadata (e.g. ``blob_field``'s thresholds) kept. The type is the registered class of the
    extension (pylance's when pylance registered it first), as Arrow reads such a field back."""
    out = schema.to_arrow()
    for i, f in enumerate(schema.fields):
        if f.is_blob_v2:
            storage = pa.struct([c.to_arrow() for c in f.children])
            tagged = pa.field(
                f.name, storage, f.nullable, metadata={k.encode(): v for k, v in f.metadata.items()}
            )
            out = out.set(i, pa.ipc.read_schema(pa.schema([tagged]).serialize()).field(0))
    return out


__all__ = [
    "DEFAULT_BLOB_BUFFER_SIZE",
    "Blob",
    "BlobArray",
    "BlobColumn",
    "BlobFile",
    "BlobIterator",
    "BlobType",
    "blob_array",
    "blob_field",
]
