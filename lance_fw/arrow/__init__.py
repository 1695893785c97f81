"""``lance_fw.arrow``: pylance's ``lance.arrow`` -- Arrow extension types for bfloat16 and images,
and a ``cast`` that knows them.

Registration: pyarrow keeps one process-wide registry of extension types by name, and pylance
registers these same names when ``lance`` is imported (and fails if a name is taken). So this
module registers its types only where pylance is not installed, or where pylance already
registered (then the names are taken and pylance's classes deserialise; both serialise the same
name, storage and metadata). Where pylance is installed but not yet imported nothing is
registered, so that a later ``import lance`` still works; lance_fw's classes work regardless
(``from_storage`` needs no registry).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.arrow.bf16 import (
    BFloat16,
    BFloat16Array,
    BFloat16Scalar,
    BFloat16Type,
    PandasBFloat16Array,
    PandasBFloat16Type,
    bf16_bits_of,
    bf16_values_of,
    bfloat16_array,
    from_bf16_bits,
)
from lance_fw.arrow.image import (
    EncodedImageArray,
    EncodedImageType,
    FixedShapeImageTensorArray,
    FixedShapeImageTensorType,
    ImageArray,
    ImageScalar,
    ImageURIArray,
    ImageURIType,
)

#: The names ``cast`` accepts for bfloat16 besides a ``BFloat16Type``
_BF16_NAMES = ("bfloat16", "bf16")


def _pylance_installed() -> bool:
    try:
        return importlib.util.find_spec("lance") is not None
    except ImportError:  # an import hook refusing it: not importable here
        return False


def _register() -> None:
    if "lance.arrow" not in sys.modules and _pylance_installed():
        return  # pylance registers the same names when imported (see the module docstring)
    for ext in (
        BFloat16Type(),
        ImageURIType(),
        EncodedImageType(),
        FixedShapeImageTensorType(pa.uint8(), (0,)),
    ):
        try:
            pa.register_extension_type(ext)
        except pa.ArrowKeyError:
            pass  # registered already (by pylance): same name, storage and metadata


_register()


def _is_bf16(t: Any) -> bool:
    return isinstance(t, pa.ExtensionType) and t.extension_name == BFloat16Type().extension_name


def cast(arr: pa.Array, target_type: pa.DataType | str, *args: Any, **kwargs: Any) -> pa.Array:
    """``pyarrow.compute.cast`` that also casts floating arrays to and from bfloat16 (the type or
    ``"bfloat16"``/``"bf16"``), and fixed-size lists of them with the same list size.

    Raises:
        ValueError: bfloat16 to a non-floating type, a non-floating array to bfloat16, or lists
            of different sizes (pylance's messages).
    """
    if _is_bf16(arr.type):
        if not (isinstance(target_type, pa.DataType) and pa.types.is_floating(target_type)):
            raise ValueError(f"Only support casting bfloat16 array to floating array,got: {target_type}")
        if arr.null_count > 0:
            raise ValueError("Cannot convert null values to numpy")
        values = bf16_values_of(arr).astype(target_type.to_pandas_dtype())
        return pa.array(values)
    if _is_bf16(target_type) or (isinstance(target_type, str) and target_type in _BF16_NAMES):
        if not pa.types.is_floating(arr.type):
            raise ValueError(f"Only support casting floating array to bfloat16 array,got: {arr.type}")
        floats = arr.to_numpy(zero_copy_only=False)
        return from_bf16_bits(bf16_bits_of(floats), None)
    if (
        pa.types.is_fixed_size_list(arr.type)
        and isinstance(target_type, pa.DataType)
        and pa.types.is_fixed_size_list(target_type)
    ):
        if arr.type.list_size != target_type.list_size:
            raise ValueError(
                "Only support casting fixed size list to fixed size list "
                f"with the same size, got: {arr.type} to {target_type}"
            )
        values = cast(arr.values, target_type.value_type)
        return pa.FixedSizeListArray.from_arrays(values=values, list_size=target_type.list_size)
    return pc.cast(arr, target_type, *args, **kwargs)


__all__ = [
    "BFloat16",
    "BFloat16Array",
    "BFloat16Scalar",
    "BFloat16Type",
    "EncodedImageArray",
    "EncodedImageType",
    "FixedShapeImageTensorArray",
    "FixedShapeImageTensorType",
    "ImageArray",
    "ImageScalar",
    "ImageURIArray",
    "ImageURIType",
    "PandasBFloat16Array",
    "PandasBFloat16Type",
    "bfloat16_array",
    "cast",
]
