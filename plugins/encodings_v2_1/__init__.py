"""File format 2.1/2.2 encodings (``lance.encodings21``): structural layouts over compressive encodings.

A page is a ``PageLayout``; each layout kind (mini-block, full-zip, constant) is a kind decoder
that parses the page into rep/def levels and values (``layouts``), which ``repdef`` turns into the
nested Arrow array of the column's path. Compressive encodings live in ``compressive``,
``fastlanes`` and ``fsst``.
"""

from __future__ import annotations

from lance_fw._proto import encodings_v2_1_pb2 as pb
from lance_fw.file.container import parse_message
from lance_fw.file.encoding import PageInput, decode_kind
from lance_fw.hookspecs import hookimpl

from . import encode, layouts, repdef

FAMILY = "lance.encodings21.PageLayout"
TYPE_URL = "/" + FAMILY


def decode_page_layout(encoding, page: PageInput):
    layout = parse_message(pb.PageLayout, encoding.value, page.where, "page layout")
    return decode_kind(FAMILY, layout, page, page.num_rows, page.arrow_type)


def _structural(parse):
    def decode(layout, page: PageInput, num_rows: int, arrow_type):
        return repdef.build(parse(layout, page.buffers, num_rows, page.where), arrow_type, page.where)
    return decode


@hookimpl
def lance_page_decoders():
    return {TYPE_URL: decode_page_layout}


@hookimpl
def lance_kind_decoders():
    return {
        (FAMILY, "mini_block_layout"): _structural(layouts.mini_block),
        (FAMILY, "full_zip_layout"): _structural(layouts.full_zip),
        (FAMILY, "constant_layout"): _structural(layouts.constant),
    }


@hookimpl(trylast=True)
def lance_select_encoder(column, options):
    if column.version < (2, 1):
        return None
    return encode.V21ColumnEncoder(column)
