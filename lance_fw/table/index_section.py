"""Rules for a manifest's index section that every commit applies, whatever the operation."""

from __future__ import annotations

import pyroaring

from lance_fw._proto import table_pb2


def indices_on_live_fields(
    manifest: table_pb2.Manifest, indices: table_pb2.IndexSection | None
) -> table_pb2.IndexSection | None:
    """The indices whose fields the new schema still has: dropping a column drops its indices, as
    in pylance 14 (an index naming a missing field id breaks pylance's planner)."""
    if indices is None:
        return None
    fields = {f.id for f in manifest.fields}
    if all(set(m.fields) <= fields for m in indices.indices):
        return indices
    kept = table_pb2.IndexSection()
    kept.indices.extend(m for m in indices.indices if set(m.fields) <= fields)
    return kept


def without_fragments(
    indices: table_pb2.IndexSection | None, removed: set[int]
) -> table_pb2.IndexSection | None:
    """The indices with ``removed`` fragments (rewritten by compaction) out of their
    ``fragment_bitmap``: their rows now live in new fragments the index does not cover, which scans
    read as unindexed until ``optimize_indices``. (pylance remaps the index files instead; both keep
    every answer exact, and pylance reads either.)"""
    if indices is None or not removed:
        return indices
    out = table_pb2.IndexSection()
    for meta in indices.indices:
        copy = out.indices.add()
        copy.CopyFrom(meta)
        if meta.fragment_bitmap:
            bitmap = pyroaring.BitMap.deserialize(meta.fragment_bitmap)
            if bitmap & pyroaring.BitMap(removed):
                copy.fragment_bitmap = (bitmap - pyroaring.BitMap(removed)).serialize()
    return out
