"""The indices a version's manifest lists, described as pylance 14's ``describe_indices`` does.

Why from the manifest alone: a pylance user (and the DuckDB front end) asks which indices exist
without wanting any index opened. Everything here comes from the manifest's index section: no index
file is opened. An index whose type lance_fw cannot name from its details (a type newer than this
module, or a vector index written without details) raises ``UnsupportedFeatureError`` rather than
being described wrongly; ``details`` that lance_fw does not reproduce raise only when read.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyroaring

from lance_fw._proto import index_pb2, table_pb2, vector_index_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.table.deletion import live_rows
from lance_fw.table.index_paths import quoted_path
from lance_fw.table.indices import index_types
from lance_fw.table.metadata import field_paths
from lance_fw.table.snapshot import Snapshot

#: ``google.protobuf.Any`` type urls of scalar index details -> pylance's ``index_type``; their
#: ``details`` read back as ``{}`` in pylance 14.
SCALAR_TYPES = {
    "/lance.table.BTreeIndexDetails": "BTree",
    "/lance.table.BitmapIndexDetails": "Bitmap",
    "/lance.table.LabelListIndexDetails": "LabelList",
    "/lance.table.NGramIndexDetails": "NGram",
    "/lance.table.ZoneMapIndexDetails": "ZoneMap",
    "/lance.index.pb.BloomFilterIndexDetails": "BloomFilter",
}
#: Types named, whose ``details`` lance_fw does not reproduce.
OPAQUE_TYPES: dict[str, str] = {}
INVERTED_TYPE_URL = "/lance.table.InvertedIndexDetails"
#: ``InvertedIndexDetails.DocumentGranularity`` names as pylance's details spell them
_GRANULARITY = {0: "row", 1: "list_element"}
VECTOR_TYPE_URL = "/lance.index.pb.VectorIndexDetails"
#: posting block size of full-text indices written before the field existed
DEFAULT_FTS_BLOCK_SIZE = 128
_MS_PER_S = 1000


@dataclass(frozen=True)
class IndexSegmentDescription:
    """One segment (delta) of an index: pylance's ``IndexSegmentDescription`` attributes."""

    uuid: str
    dataset_version_at_last_update: int
    fragment_ids: pyroaring.BitMap
    index_version: int
    created_at: datetime | None
    base_id: int | None
    size_bytes: int | None


@dataclass(frozen=True)
class IndexDescription:
    """One named index: pylance's ``IndexDescription`` attributes."""

    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: list[int]
    field_names: list[str]
    segments: list[IndexSegmentDescription]
    _details: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def total_size_bytes(self) -> int | None:
        sizes = [s.size_bytes for s in self.segments]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    @property
    def details(self) -> dict[str, Any]:
        if self._details is None:
            raise UnsupportedFeatureError(
                f"index {self.name!r}: lance_fw does not decode the details of {self.index_type} "
                f"indices ({self.type_url})"
            )
        return self._details


def describe_indices(snapshot: Snapshot) -> list[IndexDescription]:
    """Every index of the version, by name (pylance's order), its segments grouped."""
    section = snapshot.index_section
    if section is None:
        return []
    groups: dict[str, list[table_pb2.IndexMetadata]] = {}
    for meta in section.indices:
        groups.setdefault(meta.name, []).append(meta)
    return [_describe(snapshot, name, metas) for name, metas in sorted(groups.items())]


def list_indices(snapshot: Snapshot) -> list[dict[str, Any]]:
    """pylance's deprecated ``list_indices``: one dict per segment."""
    return [
        {
            "name": desc.name,
            "type": desc.index_type,
            "uuid": seg.uuid,
            "fields": desc.field_names,
            "version": seg.dataset_version_at_last_update,
            "fragment_ids": seg.fragment_ids,
            "base_id": seg.base_id,
        }
        for desc in describe_indices(snapshot)
        for seg in desc.segments
    ]


def _describe(snapshot: Snapshot, name: str, metas: list[table_pb2.IndexMetadata]) -> IndexDescription:
    first = metas[0]
    type_url = first.index_details.type_url if first.HasField("index_details") else ""
    index_type, details = _type_and_details(snapshot, name, first)
    segments = [_segment(snapshot, m) for m in metas]
    covered = pyroaring.BitMap()
    for seg in segments:
        covered |= seg.fragment_ids
    by_id = {f.id: f.name for f in snapshot.manifest.fields}
    return IndexDescription(
        name=name,
        type_url=type_url,
        index_type=index_type,
        num_rows_indexed=sum(live_rows(f) for f in snapshot.fragments if f.id in covered),
        fields=list(first.fields),
        field_names=[
            _field_path(snapshot.manifest.fields, i) if i in by_id else str(i) for i in first.fields
        ],
        segments=segments,
        _details=details,
    )


def _field_path(fields: Iterable, field_id: int) -> str:
    for path, fid in field_paths(fields).items():
        if fid == field_id:
            return quoted_path(path)  # pylance: ``p.`x.y``` for a child named ``x.y``
    return str(field_id)


def _segment(snapshot: Snapshot, meta: table_pb2.IndexMetadata) -> IndexSegmentDescription:
    try:
        fragments = (
            pyroaring.BitMap.deserialize(meta.fragment_bitmap) if meta.fragment_bitmap else pyroaring.BitMap()
        )
    except Exception as exc:
        raise CorruptFileError(
            snapshot.uri, f"index {meta.name!r}: fragment bitmap does not parse: {exc}"
        ) from exc
    created = (
        datetime.fromtimestamp(meta.created_at / _MS_PER_S, tz=UTC) if meta.HasField("created_at") else None
    )
    return IndexSegmentDescription(
        uuid=str(uuidlib.UUID(bytes=meta.uuid.uuid)),
        dataset_version_at_last_update=meta.dataset_version,
        fragment_ids=fragments,
        index_version=meta.index_version,
        created_at=created,
        base_id=meta.base_id if meta.HasField("base_id") else None,
        size_bytes=sum(f.size_bytes for f in meta.files) if len(meta.files) else None,
    )


def _type_and_details(
    snapshot: Snapshot, name: str, meta: table_pb2.IndexMetadata
) -> tuple[str, dict[str, Any] | None]:
    type_url = meta.index_details.type_url if meta.HasField("index_details") else ""
    if type_url in SCALAR_TYPES:
        return SCALAR_TYPES[type_url], {}
    if type_url in OPAQUE_TYPES:
        return OPAQUE_TYPES[type_url], None
    if type_url == INVERTED_TYPE_URL:
        return "Inverted", inverted_details(meta.index_details.value)
    plugin = next((k for k in index_types().values() if k.type_url == type_url), None)
    if plugin is not None:  # a third-party index type: its own name, no details lance_fw decodes
        return plugin.display_name, {}
    if type_url == VECTOR_TYPE_URL and meta.index_details.value:
        details = vector_index_pb2.VectorIndexDetails()
        details.ParseFromString(meta.index_details.value)
        return _vector(details)
    raise UnsupportedFeatureError(
        f"{snapshot.uri}: index {name!r} has details {type_url or 'none'!r}, whose type lance_fw "
        "cannot name without reading the index files"
    )


def _vector(details: vector_index_pb2.VectorIndexDetails) -> tuple[str, dict[str, Any]]:
    """``IVF_[HNSW_]{PQ,SQ,RQ,FLAT}`` and the details dict pylance 14 builds from the message."""
    out: dict[str, Any] = {"metric_type": vector_index_pb2.VectorMetricType.Name(details.metric_type).upper()}
    kind = "IVF_"
    if details.HasField("hnsw_index_config"):
        h = details.hnsw_index_config
        out["hnsw"] = {
            "max_connections": h.max_connections,
            "construction_ef": h.construction_ef,
            "max_level": h.max_level,
        }
        kind += "HNSW_"
    which = details.WhichOneof("compression")
    if which == "pq":
        out["compression"] = {
            "type": "pq",
            "num_bits": details.pq.num_bits,
            "num_sub_vectors": details.pq.num_sub_vectors,
        }
    elif which == "sq":
        out["compression"] = {"type": "sq", "num_bits": details.sq.num_bits}
    elif which == "rq":
        rotation = details.rq.RotationType.Name(details.rq.rotation_type).lower()
        out["compression"] = {"type": "rq", "num_bits": details.rq.num_bits, "rotation_type": rotation}
    out["runtime_hints"] = dict(details.runtime_hints)
    return kind + (which.upper() if which else "FLAT"), out


def inverted_details(value: bytes) -> dict[str, Any]:
    """The details dict pylance 14 builds from an ``InvertedIndexDetails`` message (its defaults
    where the message leaves a field unset; ``lance_tokenizer`` and ``custom_stop_words`` are not
    in the message and read back as None). The INVERTED plugin's rebuild reads its tokenizer
    parameters from here too, so a listing and a rebuild never disagree on a default."""
    details = index_pb2.InvertedIndexDetails()
    details.ParseFromString(value)
    code = details.code_config
    return {
        "lance_tokenizer": None,
        "base_tokenizer": details.base_tokenizer if details.HasField("base_tokenizer") else "simple",
        "language": json.loads(details.language) if details.language else "English",
        "with_position": details.with_position,
        "max_token_length": details.max_token_length if details.HasField("max_token_length") else None,
        "lower_case": details.lower_case,
        "stem": details.stem,
        "remove_stop_words": details.remove_stop_words,
        "custom_stop_words": None,
        "ascii_folding": details.ascii_folding,
        "min_ngram_length": details.min_ngram_length,
        "max_ngram_length": details.max_ngram_length,
        "prefix_only": details.prefix_only,
        "block_size": details.block_size if details.HasField("block_size") else DEFAULT_FTS_BLOCK_SIZE,
        "split_identifiers": code.split_identifiers,
        "split_on_numerics": code.split_on_numerics,
        "preserve_original": code.preserve_original,
        "index_operators": code.index_operators,
        "document_granularity": _GRANULARITY.get(
            details.document_granularity, str(details.document_granularity)
        ),
    }
