"""pylance's ``lance.indices`` names: index records and the trained-model containers.

``IvfModel`` / ``PqModel`` are plain containers in pylance too (centroids, a PQ codebook) that
save to and load from one Lance file; lance_fw writes and reads those files with its own
``lance_fw.file`` classes, in pylance's layout (column and schema metadata keys), so a model saved
by either library loads in the other. ``IndexConfig`` and ``IndexFileVersion`` are records.

Refused by name: ``IndicesBuilder`` (pylance's IVF / PQ training runs native, sampled k-means whose
models lance_fw cannot reproduce, so its centroids and codes would differ without saying so) and
``IndexSegment`` (segments of distributed index builds, which lance_fw does not do).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa

from lance_fw._util.refusals import INDEX_SEGMENTS, refused_function
from lance_fw.file import LanceFileReader, LanceFileWriter
from lance_fw.table.index_list import IndexSegmentDescription

#: The module pylance users import these from
_MODULE = "lance.indices"
#: Schema metadata keys and column names of the saved models (pylance's layout)
DISTANCE_TYPE_KEY = b"distance_type"
NUM_SUBVECTORS_KEY = b"num_subvectors"
NUM_BITS_KEY = b"num_bits"
CENTROIDS_COLUMN = "centroids"
CODEBOOK_COLUMN = "codebook"
#: PQ code width pylance assumes when a saved model does not say
DEFAULT_NUM_BITS = 8
#: Why the index builder is refused
INDICES_BUILDER = (
    "IVF / PQ training runs pylance's native sampled k-means, whose models lance_fw cannot "
    "reproduce (create_index builds lance_fw's own vector indices)"
)


class IndexFileVersion(str, Enum):  # noqa: UP042  (pylance's str(): "IndexFileVersion.V3")
    """The index file format version (pylance's enum)."""

    LEGACY = "Legacy"
    V3 = "V3"


@dataclass
class IndexConfig:
    """An index type and its parameters (pylance's record)."""

    index_type: str
    parameters: dict[str, Any]


def _column(reader: LanceFileReader, name: str) -> pa.Array:
    rows = reader.num_rows()
    return reader.read_all(batch_size=max(rows, 1)).to_table().column(name).combine_chunks()


class IvfModel:
    """A trained IVF model: its centroids and the distance type they were trained for."""

    def __init__(self, centroids: pa.Array, distance_type: str) -> None:
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        """The number of partitions (centroids)."""
        return len(self.centroids)

    def save(self, uri: str, *, storage_options: dict[str, str] | None = None) -> None:
        """Write the centroids to a Lance file at ``uri`` (column ``centroids``, the distance type
        in the schema metadata)."""
        schema = pa.schema(
            [pa.field(CENTROIDS_COLUMN, self.centroids.type)],
            metadata={DISTANCE_TYPE_KEY: self.distance_type.encode()},
        )
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.centroids], names=[CENTROIDS_COLUMN]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict[str, str] | None = None) -> IvfModel:
        """The model a ``save`` (of either library) wrote to ``uri``."""
        reader = LanceFileReader(uri, storage_options=storage_options)
        metadata = reader.metadata().schema.metadata or {}
        return cls(_column(reader, CENTROIDS_COLUMN), metadata[DISTANCE_TYPE_KEY].decode())


class PqModel:
    """A trained product quantizer: sub-vector count, code width and codebook."""

    def __init__(
        self, num_subvectors: int, codebook: pa.FixedSizeListArray, *, num_bits: int = DEFAULT_NUM_BITS
    ) -> None:
        self.num_subvectors = num_subvectors
        self.num_bits = num_bits
        self.codebook = codebook

    @property
    def dimension(self) -> int:
        """The dimension of the vectors the model was trained on."""
        size: int = self.codebook.type.list_size
        return size

    def save(self, uri: str, *, storage_options: dict[str, str] | None = None) -> None:
        """Write the codebook to a Lance file at ``uri`` (column ``codebook``, the sub-vector
        count and code width in the schema metadata)."""
        schema = pa.schema(
            [pa.field(CODEBOOK_COLUMN, self.codebook.type)],
            metadata={
                NUM_SUBVECTORS_KEY: str(self.num_subvectors).encode(),
                NUM_BITS_KEY: str(self.num_bits).encode(),
            },
        )
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.codebook], names=[CODEBOOK_COLUMN]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict[str, str] | None = None) -> PqModel:
        """The model a ``save`` (of either library) wrote to ``uri``."""
        reader = LanceFileReader(uri, storage_options=storage_options)
        metadata = reader.metadata().schema.metadata or {}
        num_bits = int(metadata.get(NUM_BITS_KEY, str(DEFAULT_NUM_BITS).encode()).decode())
        codebook = _column(reader, CODEBOOK_COLUMN)
        return cls(int(metadata[NUM_SUBVECTORS_KEY].decode()), codebook, num_bits=num_bits)


IndicesBuilder = refused_function(_MODULE, "IndicesBuilder", INDICES_BUILDER)
IndexSegment = refused_function(_MODULE, "IndexSegment", INDEX_SEGMENTS)

__all__ = [
    "IndexConfig",
    "IndexFileVersion",
    "IndexSegment",
    "IndexSegmentDescription",
    "IndicesBuilder",
    "IvfModel",
    "PqModel",
]
