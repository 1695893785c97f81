"""Image columns as pylance tags them: three Arrow extension types under ``lance.arrow.*``.

- ``lance.arrow.image_uri`` over a string type: where each image lives (a path or URI);
- ``lance.arrow.encoded_image`` over a binary type: the encoded bytes (PNG, JPEG, ...);
- ``lance.arrow.fixed_shape_image_tensor`` over ``fixed_size_list``: decoded pixels, the shape in
  the extension metadata as JSON ``{"shape": [...]}``.

Why the exact names and metadata: a dataset carries them in its schema, so a column written by
pylance must read back in lance_fw with the same type and the other way round. Decoding and
encoding images use Pillow when no codec is passed (ValueError without it, as pylance).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlparse
from urllib.request import urlopen

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

IMAGE_URI_EXTENSION = "lance.arrow.image_uri"
ENCODED_IMAGE_EXTENSION = "lance.arrow.encoded_image"
IMAGE_TENSOR_EXTENSION = "lance.arrow.fixed_shape_image_tensor"
#: URI schemes read over HTTP rather than through a pyarrow filesystem
_HTTP_SCHEMES = ("http", "https")
#: Default storage type of encoded images (a module singleton, as a default argument is)
_BINARY = pa.binary()


class _ImageExtension(pa.ExtensionType):
    """What the image types share: pickling that rebuilds from storage type and metadata
    (pyarrow < 13 needs this), and their array and scalar classes (``_classes``, set at the end
    of the module, where those classes exist)."""

    _classes: tuple[type, type]

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self).__arrow_ext_deserialize__, (self.storage_type, self.__arrow_ext_serialize__())

    def __arrow_ext_class__(self) -> type:
        return self._classes[0]

    def __arrow_ext_scalar_class__(self) -> type:
        return self._classes[1]


class _StorageOnlyImage(_ImageExtension):
    """An image type whose only parameter is its storage type (one of ``_storage_types``'
    two: normal and large offsets), with empty metadata."""

    _extension_name: str
    _storage_types: tuple[pa.DataType, pa.DataType]

    def __init__(self, storage_type: pa.DataType | None = None) -> None:
        storage_type = self._storage_types[0] if storage_type is None else storage_type
        if storage_type not in self._storage_types:
            raise ValueError(f"storage_type must be a {self._storage_types[0]} type")
        pa.ExtensionType.__init__(self, storage_type, self._extension_name)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Self:
        return cls(storage_type)


class ImageURIType(_StorageOnlyImage):
    """``lance.arrow.image_uri``: a string (or large string) per image, empty metadata."""

    _extension_name = IMAGE_URI_EXTENSION
    _storage_types = (pa.string(), pa.large_string())


class EncodedImageType(_StorageOnlyImage):
    """``lance.arrow.encoded_image``: encoded bytes (binary or large binary), empty metadata."""

    _extension_name = ENCODED_IMAGE_EXTENSION
    _storage_types = (pa.binary(), pa.large_binary())


class FixedShapeImageTensorType(_ImageExtension):
    """``lance.arrow.fixed_shape_image_tensor``: pixels as ``fixed_size_list<arrow_type>[prod(shape)]``,
    metadata ``{"shape": [...]}`` (``json.dumps`` spacing, as pylance writes it)."""

    def __init__(self, arrow_type: pa.DataType, shape: Sequence[int]) -> None:
        if len(shape) == 0:
            raise AssertionError("an image tensor needs at least one dimension")
        self.shape = shape
        self.arrow_type = arrow_type
        size = int(np.prod([int(d) for d in shape]))
        pa.ExtensionType.__init__(self, pa.list_(arrow_type, size), IMAGE_TENSOR_EXTENSION)

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps({"shape": self.shape}).encode()

    @classmethod
    def __arrow_ext_deserialize__(
        cls, storage_type: pa.DataType, serialized: bytes
    ) -> FixedShapeImageTensorType:
        return cls(storage_type.value_type, json.loads(serialized.decode())["shape"])


class ImageArray(pa.ExtensionArray):
    """Base of the image arrays; ``from_array`` picks the one matching its input."""

    def __repr__(self) -> str:
        return f"<lance.arrow.{type(self).__name__} object at 0x{id(self):016x}>\n{self.to_pylist()!r}"

    @classmethod
    def from_array(cls, images: Any) -> ImageArray:
        """URIs from strings (or any iterable), encoded images from binaries, tensors from a
        ``pa.FixedShapeTensorArray``; an image array is returned as is."""
        if isinstance(images, (pa.StringArray, pa.LargeStringArray)):
            return pa.ExtensionArray.from_storage(ImageURIType(images.type), images)
        if isinstance(images, (pa.BinaryArray, pa.LargeBinaryArray)):
            return pa.ExtensionArray.from_storage(EncodedImageType(images.type), images)
        if isinstance(images, pa.FixedShapeTensorArray):
            tensor_type = FixedShapeImageTensorType(images.type.value_type, images.type.shape)
            return pa.ExtensionArray.from_storage(tensor_type, images.storage)
        if isinstance(images, ImageArray):
            return images
        if isinstance(images, Iterable):
            uris = pa.array(images, type=pa.string())
            return pa.ExtensionArray.from_storage(ImageURIType(), uris)
        raise TypeError(f"Cannot build a ImageArray from {type(images)}")


def _read_uri(uri: str) -> bytes:
    """The bytes at a URI: HTTP(S) by urllib, anything else through a pyarrow filesystem."""
    if urlparse(uri).scheme in _HTTP_SCHEMES:
        with urlopen(uri) as response:
            return bytes(response.read())
    filesystem, path = pafs.FileSystem.from_uri(uri)
    with filesystem.open_input_stream(path) as stream:
        return bytes(stream.read())


class ImageURIArray(ImageArray):
    """Image locations: local paths or URIs (``file://``, ``s3://``, ``http(s)://`` ...)."""

    @classmethod
    def from_uris(cls, uris: pa.StringArray | pa.LargeStringArray | Iterable[str | Path]) -> ImageURIArray:
        if isinstance(uris, (pa.StringArray, pa.LargeStringArray)):
            storage: pa.Array = uris
        elif isinstance(uris, Iterable):
            storage = pa.array((str(u) for u in uris), type=pa.string())
        else:
            raise TypeError(f"Cannot build a ImageURIArray from {type(uris)}")
        return cls.from_storage(ImageURIType(storage.type), storage)

    def read_uris(self, storage_type: pa.DataType = _BINARY) -> EncodedImageArray:
        """Read every image into an EncodedImageArray (``pa.large_binary()`` for over 2 GiB).

        A failed HTTP read raises (pylance prints it and stores a null instead)."""
        images = [_read_uri(uri) for uri in self.storage.to_pylist()]
        storage = pa.array(images, type=storage_type)
        return EncodedImageArray.from_storage(EncodedImageType(storage_type), storage)


def _pillow(role: str, article: str) -> Any:
    """Pillow's ``Image`` module, the default ``role`` ("decoder", "encoder").

    Raises:
        ValueError: Pillow is not installed (pylance's message and class).
    """
    try:
        from PIL import Image  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ValueError(
            f"No image {role} available. Please install pillow or pass {article} {role} argument."
        ) from None
    return Image


class EncodedImageArray(ImageArray):
    """Encoded images; the format is not stored (it is in the bytes)."""

    def __repr__(self) -> str:
        head = repr(self.to_pylist()[0][:30]) if len(self) else "[]"
        return f"<lance.arrow.{type(self).__name__} object at 0x{id(self):016x}>\n{head}"

    def to_tensor(self, decoder: Callable[[pa.Array], Any] | None = None) -> FixedShapeImageTensorArray:
        """Decode every image (``decoder``: storage array -> ndarray ``(n, *shape)``; default Pillow)."""
        if decoder is None:
            image = _pillow("decoder", "a")

            def decoder(images: pa.Array) -> np.ndarray:
                return np.stack([np.asarray(image.open(io.BytesIO(b))) for b in images.to_pylist()])

        decoded = decoder(self.storage)
        if isinstance(decoded, pa.FixedShapeTensorArray):
            tensor_type = FixedShapeImageTensorType(decoded.type.value_type, decoded.type.shape)
            return FixedShapeImageTensorArray.from_storage(tensor_type, decoded.storage)
        array = np.asarray(decoded)
        tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(array)
        tensor_type = FixedShapeImageTensorType(pa.from_numpy_dtype(array.dtype), array.shape[1:])
        return FixedShapeImageTensorArray.from_storage(tensor_type, tensor.storage)


class FixedShapeImageTensorArray(ImageArray):
    """Decoded images, all of one shape."""

    def to_numpy(self, zero_copy_only: bool = True, writable: bool = False) -> np.ndarray:
        """The images as one ndarray ``(n, *shape)``."""
        shape = list(self.type.shape)
        tensor_type = pa.fixed_shape_tensor(self.storage.type.value_type, shape)
        tensor = pa.ExtensionArray.from_storage(tensor_type, self.storage)
        return tensor.to_numpy_ndarray()

    def to_encoded(
        self, encoder: Callable[[np.ndarray], pa.Array] | None = None, storage_type: pa.DataType = _BINARY
    ) -> EncodedImageArray:
        """Encode every image (``encoder``: ndarray -> binary array; default Pillow PNG)."""
        if encoder is None:
            image = _pillow("encoder", "an")

            def encoder(pixels: np.ndarray) -> pa.Array:
                out = []
                for one in pixels:
                    with io.BytesIO() as buffer:
                        image.fromarray(one).save(buffer, format="PNG")
                        out.append(buffer.getvalue())
                return pa.array(out, type=storage_type)

        encoded = encoder(self.to_numpy())
        return EncodedImageArray.from_storage(EncodedImageType(storage_type), encoded)


class ImageScalar(pa.ExtensionScalar):
    """One image slot: ``as_py`` gives the storage value (URI, bytes or pixel list)."""

    def as_py(self, **kwargs: Any) -> Any:
        return self.value.as_py(**kwargs) if self.value is not None else None


class ImageURIScalar(ImageScalar):
    pass


class EncodedImageScalar(ImageScalar):
    pass


class FixedShapeImageTensorScalar(ImageScalar):
    pass


ImageURIType._classes = (ImageURIArray, ImageURIScalar)
EncodedImageType._classes = (EncodedImageArray, EncodedImageScalar)
FixedShapeImageTensorType._classes = (FixedShapeImageTensorArray, FixedShapeImageTensorScalar)
