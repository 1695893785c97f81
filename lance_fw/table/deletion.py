"""Deletion vectors: which physical rows of a fragment are deleted.

Files live at ``_deletions/{fragment_id}-{read_version}-{id}.{ext}`` and hold row offsets within
the fragment. The byte formats are plugins (``lance_deletion_codecs``), keyed by ``file_type``.
"""

from __future__ import annotations

import numpy as np

from lance_fw._proto import table_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError

# re-exported (``X as X``): its old home, plugins import it from here
from lance_fw.interfaces import DeletionCodec as DeletionCodec
from lance_fw.io.storage import Storage
from lance_fw.table.paths import DELETIONS_DIR

#: pylance writes a roaring bitmap, not an Arrow set, from this many deleted rows on.
BITMAP_THRESHOLD = 5000
#: ``DeletionFile.file_type`` values (the proto's enum): an Arrow IPC file of offsets, a roaring bitmap
ARROW_ARRAY = table_pb2.DeletionFile.ARROW_ARRAY
BITMAP = table_pb2.DeletionFile.BITMAP


def deletion_file_id(frag: table_pb2.DataFragment) -> int:
    """The id of a fragment's deletion file, 0 when it has none (what conflict checks compare)."""
    return frag.deletion_file.id if frag.HasField("deletion_file") else 0


def deleted_rows(frag: table_pb2.DataFragment) -> int:
    return frag.deletion_file.num_deleted_rows if frag.HasField("deletion_file") else 0


def live_rows(frag: table_pb2.DataFragment) -> int:
    """Rows of a fragment a scan returns: physical rows minus deleted ones (from the manifest)."""
    return frag.physical_rows - deleted_rows(frag)


def deletion_path(base: str, fragment_id: int, read_version: int, file_id: int, file_type: int) -> str:
    return f"{base}/{DELETIONS_DIR}/{fragment_id}-{read_version}-{file_id}.{codec(file_type).extension}"


def codec(file_type: int) -> DeletionCodec:
    from lance_fw.plugin_manager import registry

    found = registry.deletion_codecs.get(file_type)
    if found is None:
        raise UnsupportedFeatureError(f"no installed plugin reads deletion files of type {file_type}")
    return found


def read_deleted_offsets(
    storage: Storage, base: str, fragment_id: int, deletion_file: table_pb2.DeletionFile
) -> np.ndarray:
    path = deletion_path(
        base, fragment_id, deletion_file.read_version, deletion_file.id, deletion_file.file_type
    )
    offsets = codec(deletion_file.file_type).decode(storage.read_bytes(path), path)
    if deletion_file.num_deleted_rows and len(offsets) != deletion_file.num_deleted_rows:
        raise CorruptFileError(
            path, f"holds {len(offsets)} rows, the manifest says {deletion_file.num_deleted_rows}"
        )
    return offsets
