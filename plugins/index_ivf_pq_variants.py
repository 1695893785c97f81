"""IVF_FLAT and IVF_SQ, the IVF_PQ plugin's siblings (same ``index.idx``, same partitions and
``_rowid`` column in ``auxiliary.idx``; only the stored rows and their distances differ),
byte-compatible with pylance 14.0.2 both ways.

Observed on pylance's files:

* IVF_FLAT: column ``flat`` (FSL<float32, dim>, not null) holds each vector as indexed (raw for
  l2 and dot, normalised for cosine), ``storage_metadata`` ``{"dim": d}``; distances are exact in
  the metric (squared L2, ``1 - cos``, ``1 - x.q``), so a search is exact within the probed
  partitions.
* IVF_SQ: column ``__sq_code`` (FSL<uint8, dim>): ``floor((x - start) / (end - start) * 255)``
  with ``start`` / ``end`` the smallest and largest element of all indexed vectors (normalised
  for cosine), ``storage_metadata`` ``{"dim", "num_bits": 8, "bounds": {"start", "end"}}``. l2
  and cosine measure the squared distance between the query's codes and the row's, times
  ``((end - start) / 255)^2``; dot measures ``1 - q . (code * scale + start)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from lance_fw import interfaces as ix
from lance_fw._util.linalg import stored_distances
from lance_fw.errors import UnsupportedFeatureError
from lance_fw_plugins.index_ivf_pq import SUPPORTED_NBITS, IvfReader, IvfType, _fsl_values
from lance_fw_plugins.index_ivf_pq_train import Partitioned, Storage

FLAT_COLUMN = "flat"
SQ_COLUMN = "__sq_code"
#: The largest 8-bit code.
SQ_LEVELS = (1 << SUPPORTED_NBITS) - 1
#: ``IndexMetadata.index_version`` pylance 14 writes for IVF_FLAT and IVF_SQ.
IVF_INDEX_VERSION = 1


class IvfFlatReader(IvfReader):
    """An opened IVF_FLAT segment: every indexed vector in memory, partition by partition."""

    kind_name = "IVF_FLAT"

    def _load(self, store: ix.IndexFileStore, storage: dict[str, Any], table: pa.Table, where: str) -> None:
        self.vectors = _fsl_values(table.column(FLAT_COLUMN), int(storage["dim"])).astype(np.float32)

    def _distances(self, v: np.ndarray, p: int, prepared: Any) -> np.ndarray:
        block = self.vectors[self.offsets[p] : self.offsets[p] + self.lengths[p]]
        return stored_distances(self.metric, block, v)

    def _sub_index(self) -> dict[str, Any]:
        return {"dim": self.dimension, "index_type": "FLAT", "metric_type": self.metric}


class IvfSqReader(IvfReader):
    """An opened IVF_SQ segment: bounds and every row's 8-bit codes in memory."""

    kind_name = "IVF_SQ"

    def _load(self, store: ix.IndexFileStore, storage: dict[str, Any], table: pa.Table, where: str) -> None:
        if int(storage.get("num_bits", SUPPORTED_NBITS)) != SUPPORTED_NBITS:
            raise UnsupportedFeatureError(f"{where}: {storage['num_bits']}-bit SQ codes are not supported")
        self.bounds = (float(storage["bounds"]["start"]), float(storage["bounds"]["end"]))
        self.start = np.float32(storage["bounds"]["start"])
        self.end = np.float32(storage["bounds"]["end"])
        self.scale = np.float32((self.end - self.start) / np.float32(SQ_LEVELS))
        self.codes = _fsl_values(table.column(SQ_COLUMN), int(storage["dim"])).astype(np.float32)

    def _prepare(self, v: np.ndarray, parts: np.ndarray) -> Any:
        return None

    def _distances(self, v: np.ndarray, p: int, prepared: Any) -> np.ndarray:
        block = self.codes[self.offsets[p] : self.offsets[p] + self.lengths[p]]
        if self.metric == "dot":
            return np.float32(1.0) - (block * self.scale + self.start) @ v
        width = self.end - self.start
        query = np.clip(np.floor((v - self.start) / width * np.float32(SQ_LEVELS)), 0, SQ_LEVELS)
        diff = block - query.astype(np.float32)
        return np.einsum("ij,ij->i", diff, diff) * (self.scale * self.scale)

    def _sub_index(self) -> dict[str, Any]:
        return {
            "dim": self.dimension,
            "num_bits": SUPPORTED_NBITS,
            "bounds": {"start": self.bounds[0], "end": self.bounds[1]},
            "index_type": "SQ",
            "metric_type": self.metric,
        }


def flat_storage(ivf: Partitioned, params: Mapping[str, Any]) -> Storage:
    """The indexed vectors themselves."""
    dim = ivf.vectors.shape[1]
    column = pa.FixedSizeListArray.from_arrays(pa.array(ivf.vectors.ravel(), pa.float32()), dim)
    return Storage({FLAT_COLUMN: column}, {"dim": dim})


def sq_storage(
    ivf: Partitioned, params: Mapping[str, Any], bounds: tuple[float, float] | None = None
) -> Storage:
    """8-bit codes of every element between the smallest and largest element indexed (or the
    given ``bounds``: an existing index's, values outside clipped)."""
    x = ivf.vectors
    dim = x.shape[1]
    low, high = (float(x.min()), float(x.max())) if bounds is None else bounds
    start, end = np.float32(low), np.float32(high)
    width = end - start if end > start else np.float32(1.0)
    codes = np.clip(np.floor((x - start) / width * np.float32(SQ_LEVELS)), 0, SQ_LEVELS).astype(np.uint8)
    code_type = pa.list_(pa.field("item", pa.uint8()), dim)
    column = pa.FixedSizeListArray.from_arrays(pa.array(codes.ravel(), pa.uint8()), type=code_type)
    stored = {"start": float(start), "end": float(end)}
    return Storage({SQ_COLUMN: column}, {"dim": dim, "num_bits": SUPPORTED_NBITS, "bounds": stored})


class _IvfType(IvfType):
    """IVF_FLAT / IVF_SQ (``VectorIndexType``): the IVF_PQ training with another storage."""

    index_version = IVF_INDEX_VERSION

    def storage(self, ivf: Partitioned, params: Mapping[str, Any]) -> Storage:
        return flat_storage(ivf, params) if self.name == "IVF_FLAT" else sq_storage(ivf, params)

    def kept_storage(self, model: IvfReader) -> Callable[[Partitioned], Storage]:
        if isinstance(model, IvfSqReader):
            bounds = (float(model.start), float(model.end))
            return lambda ivf: sq_storage(ivf, {}, bounds)
        return lambda ivf: flat_storage(ivf, {})


class IvfFlatType(_IvfType):
    name = display_name = "IVF_FLAT"
    reader = IvfFlatReader


class IvfSqType(_IvfType):
    name = display_name = "IVF_SQ"
    reader = IvfSqReader
