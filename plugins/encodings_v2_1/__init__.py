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
from lance_fw._util.lru import LruCache
from lance_fw.file.buffers import RawBytes
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
from lance_fw.file.read_support import concat_pages
from lance_fw.file.version import V2_1
from lance_fw.hookspecs import hookimpl

from . import encode, fullzip_layout, layouts, page_parts, repdef, take, take_pages
from .blob_descriptors import BlobDescriptorEncoder
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


def _mini_block(layout: Any, page: PageInput, num_rows: int, arrow_type: pa.DataType) -> pa.Array:
    """The mini-block kind decoder: a large page in parts side by side (``page_parts``), else whole."""
    in_parts = page_parts.mini_block_in_parts(layout, page, num_rows, arrow_type)
    return in_parts if in_parts is not None else _whole_mini_block(layout, page, num_rows, arrow_type)


_whole_mini_block = _structural(layouts.mini_block)

KIND_DECODERS: dict[str, KindDecoder] = {
    "mini_block_layout": _mini_block,
    "full_zip_layout": _structural(fullzip_layout.full_zip),
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
            built = validate_decoded(built, page.where)
            first = int(positions[0])
            if int(positions[-1]) - first + 1 == len(positions):  # a run of rows (sorted, distinct)
                return built.slice(first, len(positions))
            return built.take(pa.array(positions))
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
        return self._together([(e, p) for e, p, _ in pages], [r for _, _, r in pages])

    def decode_pages(self, pages: Sequence[tuple[any_pb2.Any, PageInput]]) -> pa.Array | None:
        """Every row of several consecutive pages of one column at once (``PageRowDecoder``),
        as ``decode_pages_rows`` does with every row: a scan of pages cut small (pylance's, as
        its input batches came) decodes, builds and checks once per run of pages, not per page."""
        return self._together(pages, None)

    def _together(
        self, pages: Sequence[tuple[any_pb2.Any, PageInput]], rows: Sequence[np.ndarray] | None
    ) -> pa.Array | None:
        """The pages' rows (every row: ``rows`` None), runs of pages that share a ``join_key``
        decoded together, the others (and runs the join declines) page by page; None unless
        every page is a mini-block page without repetition decoded by this family's own kind
        decoder (the reader then decodes them page by page)."""
        from lance_fw.plugin_manager import registry

        if (
            registry.kind_decoders.get((FAMILY, "mini_block_layout"))
            is not KIND_DECODERS["mini_block_layout"]
        ):
            return None
        found = [_mini_block_and_key(e, p.where) for e, p in pages]
        mini = [layout for layout, _ in found if layout is not None]
        keys = [key for _, key in found]
        if len(mini) != len(pages) or None in keys:
            return None
        first = pages[0][1]
        arrays: list[tuple[pa.Array, str, int]] = []  # (array, where, rows)
        at = 0
        while at < len(pages):  # runs of pages alike (a column's last page is often encoded apart)
            stop = at + 1
            while stop < len(pages) and keys[stop] == keys[at]:
                stop += 1
            run_rows = None if rows is None else rows[at:stop]
            run_pages = [p for _, p in pages[at:stop]]
            levels = (
                take_pages.mini_block_pages_rows(mini[at:stop], run_pages, run_rows, alike=True)
                if stop - at > 1
                else None
            )
            if levels is not None:
                wanted = sum(p.num_rows for p in run_pages) if run_rows is None else sum(map(len, run_rows))
                arrays.append((repdef.build(levels, first.arrow_type, first.where), first.where, wanted))
            else:
                for i in range(at, stop):
                    encoding, page = pages[i]
                    if rows is None:  # its layout parsed above: this family's kind decoder, checked above
                        decoded = KIND_DECODERS["mini_block_layout"](
                            mini[i], page, page.num_rows, page.arrow_type
                        )
                        arrays.append((decoded, page.where, page.num_rows))
                    else:
                        arrays.append((self.decode_rows(encoding, page, rows[i]), page.where, len(rows[i])))
            at = stop
        if len(arrays) == 1:
            return arrays[0][0]  # the reader checks what it is handed
        # checked before they are joined: joining reads their offsets
        checked = [check_decoded(array, where, first.arrow_type, n) for array, where, n in arrays]
        return concat_pages(checked, first.arrow_type)


#: Parsed page layouts a take or scan of many pages keeps, by their bytes (``_mini_block_and_key``).
LAYOUTS_CACHED = 4096
_LAYOUTS: LruCache[bytes, tuple[pb.MiniBlockLayout | None, tuple | None]] = LruCache(LAYOUTS_CACHED)


def _mini_block_and_key(encoding: any_pb2.Any, where: str) -> tuple[pb.MiniBlockLayout | None, tuple | None]:
    """A page's mini-block layout and its ``take_pages.join_key`` (None, None for other layouts),
    kept by the encoding's bytes: a take of 100 rows touches every page of a file of small pages,
    and parsing each layout and its key cost as long as choosing its chunks. The layouts are
    shared: callers copy before changing one."""

    def parse() -> tuple[pb.MiniBlockLayout | None, tuple | None]:
        layout = parse_message(pb.PageLayout, encoding.value, where, "page layout")
        if layout.WhichOneof("layout") != "mini_block_layout":
            return None, None
        return layout.mini_block_layout, take_pages.join_key(layout.mini_block_layout)

    return _LAYOUTS.get_or_load(encoding.value, parse)


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
