"""The kernel's encoding interfaces: what encoders produce and what decoders receive.

Concrete encodings live in plugins; the kernel finds them through the ``lance_page_decoders``,
``lance_kind_decoders`` and ``lance_select_encoder`` hooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw.errors import UnsupportedEncodingError
from lance_fw.schema import LanceField


@dataclass(frozen=True)
class ColumnSpec:
    """What an encoder-selection hook sees about one column of a data file.

    ``role`` is ``"leaf"`` for a value column, ``"struct"`` / ``"list"`` for the 2.0 columns of a
    struct or list parent (whose array is a null array / int64 list lengths, see ``file.shred``).
    """

    field: LanceField
    arrow_type: pa.DataType
    metadata: Mapping[str, str]
    version: tuple[int, int]
    role: str = "leaf"
    #: 2.1+: the fields from the top-level field down to this leaf (their nullability matters)
    path: tuple = ()


@dataclass
class EncodedPage:
    """One encoded page: its buffers in order, the page encoding as a protobuf Any, its rows."""

    buffers: list[Any]  # bytes-like
    encoding: any_pb2.Any
    num_rows: int


class ColumnEncoder(Protocol):
    def encode(self, array: pa.Array) -> EncodedPage:
        """Encode one page worth of a column (the writer has already split pages by size)."""


@dataclass
class PageInput:
    """What a page decoder receives: the page's buffers and how to read them."""

    buffers: Sequence[memoryview]
    num_rows: int
    arrow_type: pa.DataType
    where: str  # "file X, column N (field f), page P" for error messages
    extra: dict = field(default_factory=dict)


PageDecoder = Callable[[any_pb2.Any, PageInput], pa.Array]
KindDecoder = Callable[[Any, PageInput, int, pa.DataType], pa.Array]


def pack_any(message, type_url: str | None = None) -> any_pb2.Any:
    """Pack a message the way Lance does: type URL with a leading slash and no domain."""
    out = any_pb2.Any()
    out.type_url = type_url or "/" + message.DESCRIPTOR.full_name
    out.value = message.SerializeToString()
    return out


def decode_page(encoding: any_pb2.Any, page: PageInput) -> pa.Array:
    """Find the page decoder for the encoding's type URL and run it."""
    from lance_fw.plugin_manager import registry

    decoder = registry.page_decoders.get(encoding.type_url)
    if decoder is None:
        raise UnsupportedEncodingError(
            f"{page.where}: no installed plugin decodes page encoding {encoding.type_url!r} "
            f"(known: {sorted(registry.page_decoders)}); install the plugin that provides it")
    return decoder(encoding, page)


def decode_kind(family: str, message, page: PageInput, num_rows: int, arrow_type: pa.DataType) -> pa.Array:
    """Decode one node of a built-in encoding tree by its oneof kind."""
    from lance_fw.plugin_manager import registry

    oneof = message.DESCRIPTOR.oneofs[0].name
    kind = message.WhichOneof(oneof)
    decoder = registry.kind_decoders.get((family, kind))
    if decoder is None:
        raise UnsupportedEncodingError(f"{page.where}: no installed plugin decodes {family} kind {kind!r}")
    return decoder(getattr(message, kind), page, num_rows, arrow_type)


def select_encoder(spec: ColumnSpec, options: Mapping[str, Any]) -> ColumnEncoder:
    from lance_fw.plugin_manager import get_plugin_manager

    encoder = get_plugin_manager().hook.lance_select_encoder(column=spec, options=options)
    if encoder is None:
        raise UnsupportedEncodingError(
            f"no installed plugin encodes field {spec.field.name!r} ({spec.arrow_type}) "
            f"at file version {spec.version[0]}.{spec.version[1]}")
    return encoder
