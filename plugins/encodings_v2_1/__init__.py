"""File format 2.1/2.2 encodings (``lance.encodings21``): structural layouts over compressive encodings.

A page is a ``PageLayout``; each layout kind (mini-block, full-zip, constant) is a kind decoder
that parses the page into rep/def levels and values (``layouts``), which ``repdef`` turns into the
nested Arrow array of the column's path. Compressive encodings live in ``compressive``,
``fastlanes`` and ``fsst``; the values they decode to (``DecodedValues``) in ``decoded_values``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.file.container import parse_message
from lance_fw.file.encoding import (
    ColumnSpec,
    KindDecoder,
    PageDecoder,
    PageInput,
    check_decoded,
    decode_kind,
    validate_decoded,
)
from lance_fw.file.version import V2_1
from lance_fw.hookspecs import hookimpl

from . import encode, layouts, repdef, take, take_pages
from .blob_descriptors import BlobDescriptorEncoder
from .decoded_values import RawBytes
from .layouts import PageLevels

FAMILY = "lance.encodings21.PageLayout"
TYPE_URL = "/" + FAMILY


#: A layout kind's parser: (layout message, page buffers, row count, where) -> rep/def levels and values.
LayoutParser = Callable[[Any, Sequence[RawBytes], int, str], PageLevels]


def _structural(parse: LayoutParser) -> KindDecoder:
    """The kind decoder of one layout: parse it to levels, then build the nested Arrow array."""

    def decode(layout: Any, page: PageInput, num_rows: int, arrow_type: pa.DataType) -> pa.Array:
        return repdef.build(parse(layout, page.buffers, num_rows, page.where), arrow_type, page.where)

    return decode


KIND_DECODERS: dict[str, KindDecoder] = {
    "mini_block_layout": _structural(layouts.mini_block),
    "full_zip_layout": _structural(layouts.full_zip),
    "constant_layout": _structural(layouts.constant),
}


class PageLayoutDecoder:
    """The page decoder of the family; ``decode_rows`` reads only the chunks / rows asked for."""

    def __call__(self, encoding: any_pb2.Any, page: PageInput) -> pa.Array:
        """The page's array; the kernel's reader validates it (``validate_decoded``), as it does
        every plugin's pages, before anything indexes into it."""
        layout = parse_message(pb.PageLayout, encoding.value, page.where, "page layout")
        return decode_kind(FAMILY, layout, page, page.num_rows, page.arrow_type)

    def decode_rows(self, encoding: any_pb2.Any, page: PageInput, rows: np.ndarray) -> pa.Array:
        from lance_fw.plugin_manager import registry

        layout = parse_message(pb.PageLayout, encoding.value, page.where, "page layout")
        kind = layout.WhichOneof("layout")
        # What is built here is validated before ``take`` indexes into it; what is returned as
        # built, the reader validates.
        if registry.kind_decoders.get((FAMILY, kind)) is not KIND_DECODERS.get(kind):  # replaced by a plugin
            return check_decoded(self(encoding, page), page.where, page.arrow_type, page.num_rows).take(
                pa.array(rows)
            )
        if kind == "mini_block_layout":
            levels, positions = take.mini_block_rows(layout.mini_block_layout, page, rows)
            built = repdef.build(levels, page.arrow_type, page.where)
            if positions is None:
                return built  # exactly the rows asked for: no take, so the reader's validation is enough
            return validate_decoded(built, page.where).take(pa.array(positions))
        if kind == "full_zip_layout":
            return repdef.build(
                take.full_zip_rows(layout.full_zip_layout, page, rows), page.arrow_type, page.where
            )
        return check_decoded(self(encoding, page), page.where, page.arrow_type, page.num_rows).take(
            pa.array(rows)
        )

    def decode_pages_rows(
        self, pages: Sequence[tuple[any_pb2.Any, PageInput, np.ndarray]]
    ) -> pa.Array | None:
        """Rows of several pages of one column at once (``PageRowDecoder``): mini-block pages
        without repetition, with the same levels and chunk layout, decode together
        (``take_pages.mini_block_pages_rows``; their value encodings and dictionaries may change
        from page to page); None for others (the reader decodes them page by page)."""
        from lance_fw.plugin_manager import registry

        if (
            registry.kind_decoders.get((FAMILY, "mini_block_layout"))
            is not KIND_DECODERS["mini_block_layout"]
        ):
            return None
        found = [parse_message(pb.PageLayout, e.value, p.where, "page layout") for e, p, _ in pages]
        if any(layout.WhichOneof("layout") != "mini_block_layout" for layout in found):
            return None
        first = pages[0][1]
        levels = take_pages.mini_block_pages_rows(
            [layout.mini_block_layout for layout in found], [p for _, p, _ in pages], [r for _, _, r in pages]
        )
        return None if levels is None else repdef.build(levels, first.arrow_type, first.where)


decode_page_layout = PageLayoutDecoder()


@hookimpl
def lance_page_decoders() -> Mapping[str, PageDecoder]:
    return {TYPE_URL: decode_page_layout}


@hookimpl
def lance_kind_decoders() -> Mapping[tuple[str, str], KindDecoder]:
    return {(FAMILY, kind): fn for kind, fn in KIND_DECODERS.items()}


@hookimpl(trylast=True)
def lance_select_encoder(column: ColumnSpec, options: Mapping[str, Any]) -> encode.V21ColumnEncoder | None:
    if column.version < V2_1:
        return None
    if column.field.is_blob_v2:  # descriptors: rows with a variable-width field (see blob_descriptors)
        return BlobDescriptorEncoder(column)
    return encode.V21ColumnEncoder(column)
