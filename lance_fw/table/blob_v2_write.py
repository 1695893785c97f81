"""Writing 2.2 blob v2 columns (``lance.blob.v2``) as pylance 14 lays them out.

A blob v2 column is written as one descriptor per row (see ``lance_fw.schema.BLOB_DESCRIPTOR``);
the bytes go where the value's size says, with pylance's thresholds (field metadata overrides
them, as ``lance.blob_field`` sets it):

* at most ``INLINE_THRESHOLD`` bytes: inline, in the data file itself (kind 0), each value at the
  file's current end, the file padded to 64 bytes after it;
* above ``DEDICATED_THRESHOLD`` bytes: a sidecar file of its own (kind 2);
* otherwise: packed one after another into a shared sidecar (kind 1) that is closed before it
  would pass ``PACK_FILE_THRESHOLD`` bytes.

Sidecars live in ``data/<data file stem>/`` and are named by a blob id counted per data file from
1 (``lance_fw.table.blobs.sidecar_name``). Why mirror pylance's layout rather than invent one:
pylance must read what lance_fw writes (and compaction, cleanup and takes must find the bytes).
External uris are refused (pylance refuses them too unless told to store absolute uris).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from lance_fw.errors import InvalidUserInputError, UnsupportedFeatureError
from lance_fw.file.writer import LanceFileWriter, WrittenFile
from lance_fw.io.storage import Storage
from lance_fw.schema import BLOB_DESCRIPTOR, BLOB_V2, LanceField, LanceSchema, blob_v2_type, logical_type_of
from lance_fw.table.blobs import DEDICATED, INLINE, PACKED, SIDECAR_SUFFIX, sidecar_name
from lance_fw.table.paths import DATA_FILE_SUFFIX

#: pylance 14's default thresholds (bytes): inline up to 64 KiB, dedicated above 4 MiB.
INLINE_THRESHOLD = 64 * 1024
DEDICATED_THRESHOLD = 4 * 1024 * 1024
#: The size at which a packed sidecar is closed. pylance's default is not observable at test
#: sizes; 1 GiB only decides how packed values are split over files, never what they read as.
PACK_FILE_THRESHOLD = 1024**3
INLINE_THRESHOLD_KEY = "lance-encoding:blob-inline-size-threshold"
DEDICATED_THRESHOLD_KEY = "lance-encoding:blob-dedicated-size-threshold"
PACK_FILE_THRESHOLD_KEY = "lance-encoding:blob-pack-file-size-threshold"
#: The file format that first stores blob v2 columns.
BLOB_V2_MIN_VERSION = (2, 2)
#: Field metadata of the descriptor column in the data file's own schema (as pylance writes it).
DESCRIPTOR_FILE_METADATA = {"lance-encoding:blob": b"true", "lance-encoding:packed": b"true"}


def has_blob_v2(schema: LanceSchema) -> bool:
    return any(f.is_blob_v2 for f in schema.walk())


def check_blob_v2(schema: LanceSchema, version: tuple[int, int], uri: str) -> None:
    """Refuse blob v2 columns a file of ``version`` cannot hold (pylance: ``OSError``), and ones
    lance_fw does not write (inside a struct or list)."""
    nested = [f for top in schema.fields for f in top.walk() if f.is_blob_v2 and f is not top]
    if nested:
        raise UnsupportedFeatureError(
            f"{uri}: blob column {nested[0].name!r} is nested in another column; lance_fw writes "
            "blob v2 columns only at the top level"
        )
    if has_blob_v2(schema) and version < BLOB_V2_MIN_VERSION:
        raise InvalidUserInputError(
            f"Invalid user input: Blob v2 requires file version >= 2.2 (got {version[0]}.{version[1]})"
        )


def write_schema(
    schema: LanceSchema, arrow_schema: pa.Schema, incoming: pa.Schema | None = None, uri: str = ""
) -> pa.Schema:
    """``arrow_schema`` (what writes conform batches to) with each blob v2 column as the blob
    extension type users write, not the descriptors scans return: the ``incoming`` data's own
    class of that type where it has one (pylance's and lance_fw's classes are unequal types).

    Raises:
        UnsupportedFeatureError: ``incoming`` holds something else in a blob v2 column (pylance
            also takes plain binary there; lance_fw takes blob values only).
    """
    blob = {f.name for f in schema.fields if f.is_blob_v2}
    if not blob:
        return arrow_schema
    given = {f.name: f.type for f in incoming} if incoming is not None else {}
    fields = []
    for f in arrow_schema:
        if f.name in blob:
            t = given.get(f.name)
            if t is not None and t.equals(BLOB_DESCRIPTOR):  # rows read back, being rewritten
                raise UnsupportedFeatureError(
                    f"{uri}: column {f.name!r} is a blob v2 column; lance_fw does not rewrite existing "
                    "rows of blob v2 columns (update, merge_insert): their bytes would have to move too"
                )
            if t is not None and not (isinstance(t, pa.BaseExtensionType) and t.extension_name == BLOB_V2):
                raise UnsupportedFeatureError(
                    f"{uri}: column {f.name!r} is a blob v2 column; lance_fw writes blob values to it "
                    f"(lance_fw.blob.blob_array, BlobType), not {t}"
                )
            f = pa.field(f.name, t if t is not None else blob_v2_type(), f.nullable)
        fields.append(f)
    return pa.schema(fields, metadata=arrow_schema.metadata)


def _values(data: pa.Array) -> list[memoryview]:
    """Each value of a binary array as a view of its bytes (no copy: blobs may be large)."""
    data = data.cast(pa.large_binary())
    n = len(data)
    offsets = np.frombuffer(data.buffers()[1], np.int64)[data.offset : data.offset + n + 1].tolist()
    body = memoryview(data.buffers()[2] or b"")
    return [body[offsets[i] : offsets[i + 1]] for i in range(n)]


def _threshold(field: LanceField, key: str, default: int) -> int:
    raw = field.metadata.get(key)
    return default if raw is None else int(raw)


class BlobV2FileWriter(LanceFileWriter):
    """A data file writer that stores blob v2 columns' bytes (inline or in sidecars) and writes
    their descriptors as the column."""

    def __init__(
        self,
        storage: Storage,
        path: str,
        schema: LanceSchema,
        version: tuple[int, int],
        options: Mapping[str, Any] | None = None,
    ) -> None:
        check_blob_v2(schema, version, path)
        super().__init__(storage, path, schema, version, options)
        self._storage = storage
        self._blobs = [i for i, f in enumerate(schema.fields) if f.is_blob_v2]
        self._sidecar_dir = sidecar_dir(path)
        self._next_id = 1
        self._pack: tuple[int, BinaryIO] | None = None  # (blob id, open stream)
        self._pack_size = 0
        self._sidecars: list[str] = []

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0 or not self._blobs:
            return super().write_batch(batch)
        columns = list(batch.columns)
        for i in self._blobs:
            columns[i] = self._descriptors(self.schema.fields[i], columns[i])
        names = batch.schema.names
        super().write_batch(pa.RecordBatch.from_arrays(columns, names=names))

    def _descriptors(self, field: LanceField, values: pa.Array) -> pa.StructArray:
        """Store each value's bytes; return its descriptors (null for a null value)."""
        if isinstance(values.type, pa.BaseExtensionType):
            values = values.storage
        inline = _threshold(field, INLINE_THRESHOLD_KEY, INLINE_THRESHOLD)
        dedicated = _threshold(field, DEDICATED_THRESHOLD_KEY, DEDICATED_THRESHOLD)
        pack_limit = _threshold(field, PACK_FILE_THRESHOLD_KEY, PACK_FILE_THRESHOLD)
        names = values.type.names if pa.types.is_struct(values.type) else []
        if names[:2] != ["data", "uri"]:
            raise UnsupportedFeatureError(
                f"{self.path}: blob column {field.name!r} holds {values.type}, not blob values"
            )
        data = values.field(0)
        uri = values.field(1)
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        has_uri = uri.is_valid().to_numpy(zero_copy_only=False) & valid
        if has_uri.any():
            raise InvalidUserInputError(
                f"Invalid user input: blob column {field.name!r} holds an external blob uri "
                f"({uri[int(np.flatnonzero(has_uri)[0])]}); lance_fw stores blob bytes only, "
                "not references to external uris"
            )
        n = len(values)
        kind = np.zeros(n, np.uint8)
        position = np.zeros(n, np.uint64)
        size = np.zeros(n, np.uint64)
        blob_id = np.zeros(n, np.uint32)
        has_data = data.is_valid().to_numpy(zero_copy_only=False)
        for row, value in enumerate(_values(data)):
            if not valid[row]:
                continue
            if not has_data[row]:  # a non-null blob is bytes or a uri (pylance's Blob checks this)
                raise InvalidUserInputError(
                    f"Invalid user input: blob column {field.name!r} row {row} sets neither data nor uri"
                )
            size[row] = len(value)
            if len(value) > dedicated:
                kind[row], blob_id[row] = DEDICATED, self._dedicated(value)
            elif len(value) > inline:
                kind[row] = PACKED
                blob_id[row], position[row] = self._packed(value, pack_limit)
            else:
                kind[row], position[row] = INLINE, self._inline(value)
        mask = pa.array(~valid) if not valid.all() else None
        return pa.StructArray.from_arrays(
            [
                pa.array(kind),
                pa.array(position),
                pa.array(size),
                pa.array(blob_id),
                pa.array([""] * n, pa.string()),
            ],
            fields=list(BLOB_DESCRIPTOR),
            mask=mask,
        )

    # -- where bytes go ---------------------------------------------------------------------
    def _inline(self, value: memoryview) -> int:
        at = self._pos
        if value:
            self._write(value)
            self._align()
        return at

    def _open_sidecar(self) -> tuple[int, BinaryIO]:
        blob_id = self._next_id
        self._next_id += 1
        path = f"{self._sidecar_dir}/{sidecar_name(blob_id)}"
        self._sidecars.append(path)
        return blob_id, self._storage.open_output(path)

    def _dedicated(self, value: memoryview) -> int:
        blob_id, out = self._open_sidecar()
        out.write(value)
        out.close()
        return blob_id

    def _packed(self, value: memoryview, limit: int) -> tuple[int, int]:
        if self._pack is not None and self._pack_size + len(value) > limit:
            self._close_pack()
        if self._pack is None:
            self._pack = self._open_sidecar()
            self._pack_size = 0
        blob_id, out = self._pack
        at = self._pack_size
        out.write(value)
        self._pack_size += len(value)
        return blob_id, at

    def _close_pack(self) -> None:
        if self._pack is not None:
            self._pack[1].close()
            self._pack = None

    # -- end --------------------------------------------------------------------------------
    def finish(self, global_buffers: Any = ()) -> WrittenFile:
        self._close_pack()
        self.schema = file_schema(self.schema)  # the file's own schema names descriptor fields
        return super().finish(global_buffers)

    def abort(self) -> None:
        if self._pack is not None:
            try:
                getattr(self._pack[1], "abort", self._pack[1].close)()
            except Exception:
                pass
            self._pack = None
        super().abort()
        for path in self._sidecars:
            self._storage.delete(path)


def file_schema(schema: LanceSchema) -> LanceSchema:
    """The schema a data file records: each blob v2 column as its descriptor struct (fields
    without ids, as pylance writes them), tagged as a blob."""
    out = []
    for f in schema.fields:
        if f.is_blob_v2:
            children = [
                LanceField(c.name, -1, logical_type_of(c.type), c.nullable, {}) for c in BLOB_DESCRIPTOR
            ]
            f = LanceField(f.name, f.id, "struct", f.nullable, dict(DESCRIPTOR_FILE_METADATA), children)
        out.append(f)
    return LanceSchema(out, schema.metadata)


def sidecar_dir(data_path: str) -> str:
    """The directory of the sidecar files of the data file at ``data_path``."""
    return data_path[: -len(DATA_FILE_SUFFIX)] if data_path.endswith(DATA_FILE_SUFFIX) else data_path


def sidecar_files(storage: Storage, data_path: str) -> list[str]:
    """The blob v2 sidecar files of the data file at ``data_path`` (full paths): whoever deletes a
    data file (cleanup, a failed write or commit) deletes them too, as pylance's cleanup does."""
    directory = sidecar_dir(data_path)
    return [f"{directory}/{name}" for name in storage.list_dir(directory) if name.endswith(SIDECAR_SUFFIX)]
