"""The dictionaries of a 0.1 (legacy) dataset, which live in its manifest files.

pylance reads the indices of a 0.1 dictionary column against one dictionary per dataset: its values
are stored at the start of every manifest file (before the manifest's sections), located by the
schema field's ``dictionary`` (offset, length) — not against the dictionary in each data file. A
manifest that keeps such a field must therefore carry the values again, or pylance decodes every
index against garbage (empty strings). ``dictionary_prefix`` re-encodes them from the manifest the
new one is based on.
"""

from __future__ import annotations

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.errors import CorruptFileError
from lance_fw.file.legacy_v0_1_decode import LegacyPageDecoder, fixed_width_bits
from lance_fw.file.legacy_v0_1_write import plain_bytes, var_binary_bytes
from lance_fw.io.storage import Storage
from lance_fw.schema import LanceSchema


def _has_dictionary(manifest: table_pb2.Manifest) -> bool:
    return any(f.dictionary.length > 0 for f in manifest.fields)


def dictionary_prefix(
    storage: Storage, base_path: str | None, base: table_pb2.Manifest | None, new: table_pb2.Manifest
) -> bytes:
    """The bytes to write before the sections of manifest ``new`` so that its dictionary fields
    (those with a non-empty ``dictionary``) locate their values there; their offsets are set in
    ``new``. ``base`` (read from ``base_path``) is the manifest ``new`` was copied from.

    Raises:
        CorruptFileError: the base manifest's dictionary values do not decode.
    """
    if not _has_dictionary(new):
        return b""
    values: dict[int, pa.Array] = {}
    if base is not None and base_path is not None and _has_dictionary(base):
        data = storage.read_bytes(base_path)

        def fetch(position: int, length: int, what: str) -> bytes:
            if position < 0 or length < 0 or position + length > len(data):
                raise CorruptFileError(
                    base_path, f"{what} at [{position}, {position + length}) lies outside the manifest"
                )
            return data[position : position + length]

        def no_pages(field_id: int, batch: int) -> tuple[int, int]:
            raise CorruptFileError(base_path, "a manifest holds no pages")

        schema = LanceSchema.from_protos(base.fields, base.schema_metadata)
        decoder = LegacyPageDecoder(base_path, fetch, no_pages, {f.id: f for f in schema.walk()})
        for f in schema.walk():
            if f.pb is not None and f.pb.dictionary.length > 0 and pa.types.is_dictionary(f.arrow_type()):
                values[f.id] = decoder.dictionary(f, f.pb, f.arrow_type().value_type)
    out = bytearray()
    for pb in new.fields:
        if pb.dictionary.length <= 0:
            continue
        found = values.get(pb.id)
        if found is None:  # no values to point at: say so (pylance then finds no dictionary)
            pb.dictionary.offset, pb.dictionary.length = 0, 0
            continue
        if fixed_width_bits(found.type) is None:
            raw, positions = var_binary_bytes(found, len(out))
            out += raw
            pb.dictionary.offset = len(out)
            out += positions
        else:
            pb.dictionary.offset = len(out)
            out += plain_bytes(found)
        pb.dictionary.length = len(found)
    return bytes(out)
