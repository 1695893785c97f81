"""File format 2.0 encodings (``lance.encodings.ArrayEncoding`` trees), read and write.

Registers one page decoder for the family's type URL, one kind decoder per oneof member, and the
2.0 column encoder (``trylast``, so a third-party plugin can take over a column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_fw.file.encoding import ColumnSpec, KindDecoder, PageDecoder
from lance_fw.file.version import V2_0
from lance_fw.hookspecs import hookimpl
from lance_fw_plugins.encodings_v2_0 import decode, encode


@hookimpl
def lance_page_decoders() -> Mapping[str, PageDecoder]:
    return {decode.TYPE_URL: decode.decode_array_page}


@hookimpl
def lance_kind_decoders() -> Mapping[tuple[str, str], KindDecoder]:
    return {(decode.FAMILY, kind): fn for kind, fn in decode.KIND_DECODERS.items()}


@hookimpl(trylast=True)
def lance_select_encoder(column: ColumnSpec, options: Mapping[str, Any]) -> encode.V20ColumnEncoder | None:
    if column.version != V2_0:
        return None
    return encode.V20ColumnEncoder(column)
