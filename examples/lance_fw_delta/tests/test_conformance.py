"""lance_fw's conformance kit run against this plugin: how a third-party package tests its encoding.

Run from the lance_fw checkout with ``pytest examples/lance_fw_delta/tests`` (lance_fw's own CI
runs this class through ``tests/test_conformance_examples.py``). The kit writes random data with
nulls in several fragments and pages, reads it back through every lance_fw read path and DuckDB,
and checks every page of the hinted column is a delta page.
"""

from __future__ import annotations

from typing import ClassVar

import lance_fw_delta
import pyarrow as pa

from lance_fw.testing import EncodingConformance


class TestDeltaConformance(EncodingConformance):
    field_metadata: ClassVar[dict[str, str]] = {lance_fw_delta.METADATA_KEY: "true"}
    arrow_types = (
        pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
        pa.date32(), pa.date64(), pa.time32("ms"), pa.time64("ns"), pa.timestamp("us"),
        pa.timestamp("s", tz="Europe/Paris"), pa.duration("ns"),
    )
    file_versions = ("2.0",)  # the only layout the plugin writes (lance_fw_delta.SUPPORTED_VERSIONS)
    type_urls = frozenset({lance_fw_delta.TYPE_URL})
    # pylance cannot read the pages: lance_fw refuses to write them unless asked to
    pylance_readable = False
    write_options: ClassVar[dict[str, bool]] = {"allow_plugin_encodings": True}
