"""Vector indices of a table: the vector index-type plugins, ``create_index`` and what
``optimize_indices`` / ``index_stats`` need of them.

Why apart from ``indices.py``: every vector index of pylance 14 shares one details type url, so
the plugins are matched by the name the details spell (``IVF_PQ`` ...) through a hook of their own
(``lance_vector_index_types``), and optimizing one keeps its trained model instead of retraining;
the build, the files, the manifest and the ``CreateIndex`` commit are ``indices.py``'s, shared with
the scalar types.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_fw._proto import table_pb2, vector_index_pb2
from lance_fw.interfaces import VectorIndexType
from lance_fw.plugin_manager import owner, registry
from lance_fw.table.index_files import IndexFiles, index_dir
from lance_fw.table.index_types import check_index_type, plugin_named
from lance_fw.table.indices import (
    IndexRequest,
    _check_column,
    build_index,
    check_new_index,
    commit_new_index,
    type_url_of,
)
from lance_fw.table.snapshot import Snapshot

_VECTOR_HOOK = "lance_vector_index_types"
#: ``index_details`` type url of every pylance vector index.
VECTOR_DETAILS_URL = "/lance.index.pb.VectorIndexDetails"


def vector_index_types() -> dict[str, VectorIndexType]:
    """Every registered vector index type by upper-case name, checked against the contract."""
    out: dict[str, VectorIndexType] = {}
    for name, kind in registry.vector_index_types.items():
        check_index_type(
            kind, name, owner(_VECTOR_HOOK, name) or "a vector index plugin", "vector index type"
        )
        out[str(name).upper()] = kind
    return out


def vector_kind_name(meta: table_pb2.IndexMetadata) -> str | None:
    """pylance's name of a vector index from its details (``IVF_PQ``, ``IVF_HNSW_SQ`` ...), or None
    for an index that is not a vector index or whose details are empty (older pylance)."""
    if type_url_of(meta) != VECTOR_DETAILS_URL or not meta.index_details.value:
        return None
    details = vector_index_pb2.VectorIndexDetails()
    details.ParseFromString(meta.index_details.value)
    which = details.WhichOneof("compression")
    return (
        "IVF_"
        + ("HNSW_" if details.HasField("hnsw_index_config") else "")
        + (which.upper() if which else "FLAT")
    )


def create_vector_index(snapshot: Snapshot, request: IndexRequest) -> int:
    """pylance's ``create_index`` for a vector index type: build over every live row, commit (on
    a dataset with stable row ids the index stores the ids, as pylance's)."""
    kind = plugin_named(vector_index_types(), request.index_type, "vector index type")
    field = _check_column(snapshot, request.column)
    name, existing = check_new_index(snapshot, kind, field, request.name, request.replace, request.params)
    meta, store = build_index(snapshot, kind, field, name, request.params)
    return commit_new_index(snapshot, meta, existing, store)


@dataclass
class VectorRebuild:
    """A vector index type re-encoding every fragment with the model (centroids, codebooks) of an
    existing segment, as pylance's ``optimize_indices`` merges new rows without retraining; what
    ``build_index`` needs of an index type, with the old segment's details."""

    kind: VectorIndexType
    old: IndexFiles
    meta: table_pb2.IndexMetadata

    def holds_row_ids(self, index_version: int) -> bool:
        return True  # on a dataset with stable row ids, as every vector index

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def type_url(self) -> str:
        return self.kind.type_url

    @property
    def index_version(self) -> int:
        return int(self.meta.index_version)

    def details(self, params: Mapping[str, Any]) -> bytes:
        return bytes(self.meta.index_details.value)

    def train(self, batches: Any, field: pa.Field, params: Mapping[str, Any], store: Any) -> None:
        self.kind.rebuild(batches, field, self.old, store)


def vector_rebuild(snapshot: Snapshot, meta: table_pb2.IndexMetadata) -> VectorRebuild | None:
    """How to optimize a vector index lance_fw has a type for (None: not one)."""
    kind = vector_index_types().get(vector_kind_name(meta) or "")
    if kind is None or not callable(getattr(kind, "rebuild", None)):
        return None
    old = IndexFiles(snapshot.storage, index_dir(snapshot.uri, str(uuidlib.UUID(bytes=meta.uuid.uuid))))
    return VectorRebuild(kind, old, meta)


def vector_statistics(
    snapshot: Snapshot, kind: VectorIndexType, meta: table_pb2.IndexMetadata
) -> dict[str, Any]:
    """One vector segment's statistics as pylance prints them: type, uuid, uri, then the plugin's."""
    uuid = str(uuidlib.UUID(bytes=meta.uuid.uuid))
    directory = index_dir(snapshot.uri, uuid)
    field = next(f for f in snapshot.lance_schema.fields if f.id == meta.fields[0])
    found = kind.load(IndexFiles(snapshot.storage, directory), field.to_arrow()).statistics()
    head = {"index_type": kind.display_name, "uuid": uuid, "uri": f"{directory}/index.idx"}
    return {**head, **{k: v for k, v in found.items() if k not in head}}
