"""Blob v2 columns (file format 2.2, ``lance.blob.v2``): descriptors in the table, bytes elsewhere.

A descriptor says where one value's bytes are: ``kind`` 0 = inline in the fragment's data file at
``position``/``size``; kind 1 = packed in a shared sidecar file at ``position``; kind 2 = a sidecar
file of its own; both sidecars are ``data/<data file stem>/<name of blob_id>.blob``, whose name is
the blob id's 32 bits, least significant first (as pylance 14 names them); kind 3 (an external
uri) is not read. ``blob_v2_write`` writes them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.io.storage import join_uri
from lance_fw.table.deletion import live_rows
from lance_fw.table.paths import DATA_DIR
from lance_fw.table.row_ids import ADDRESS_FRAGMENT_SHIFT
from lance_fw.table.rows import Rows
from lance_fw.table.snapshot import Snapshot

#: Descriptor kinds: where a blob's bytes are.
INLINE, PACKED, DEDICATED, EXTERNAL = 0, 1, 2, 3
#: The older name of PACKED (a sidecar file).
SIDECAR = PACKED
#: Bits of a blob id, spelled out (reversed) in its sidecar file's name.
BLOB_ID_BITS = 32
SIDECAR_SUFFIX = ".blob"


def sidecar_name(blob_id: int) -> str:
    return f"{blob_id:0{BLOB_ID_BITS}b}"[::-1] + SIDECAR_SUFFIX


def blob_location(snapshot_uri: str, data_path: str, d: dict) -> tuple[str, int, int]:
    """(file path, position, size) of the bytes descriptor ``d`` of a value in the data file
    ``data_path`` (relative to the data directory) points at."""
    if d["kind"] == INLINE:
        path = join_uri(snapshot_uri, DATA_DIR, data_path)
    elif d["kind"] in (PACKED, DEDICATED):
        path = join_uri(snapshot_uri, DATA_DIR, data_path.rsplit(".", 1)[0], sidecar_name(d["blob_id"]))
    else:
        raise UnsupportedFeatureError(
            f"blob descriptor kind {d['kind']} (an external blob uri {d.get('blob_uri')!r}) is not supported"
        )
    return path, int(d["position"]), int(d["size"])


def take_locations(snapshot: Snapshot, column: str, indices: ArrayLike) -> list[tuple[str, int, int] | None]:
    """Where the bytes of ``column`` at row positions ``indices`` (over live rows) are, in order;
    None for a null value."""
    field = snapshot.lance_schema.field(column)
    if not field.is_blob_v2:
        raise InvalidArgumentError(f"column {column!r} is not a blob column")
    wanted = np.asarray(indices, dtype=np.int64)
    out: list[tuple[str, int, int] | None] = [None] * len(wanted)
    base = 0
    for frag in snapshot.fragments:
        live = live_rows(frag)
        hit = np.flatnonzero((wanted >= base) & (wanted < base + live))
        if len(hit):
            reader = snapshot.fragment_reader(frag)
            try:
                table = pa.Table.from_batches(list(reader.batches(Rows([field]))))
            finally:
                reader.close()
            descriptors = table.column(0).take(pa.array(wanted[hit] - base)).to_pylist()
            data_file = next(f for f in frag.files if field.id in f.fields)
            for i, d in zip(hit, descriptors):
                out[i] = None if d is None else blob_location(snapshot.uri, data_file.path, d)
        base += live
    return out


def locate(
    snapshot: Snapshot, column: str, descriptors: list[dict | None], addresses: ArrayLike
) -> list[tuple[str, int, int] | None]:
    """Where the bytes of scanned descriptors of ``column`` are, given each row's address (the
    descriptor alone does not name its data file); None for a null value."""
    field = snapshot.lance_schema.field(column)
    if not field.is_blob_v2:
        raise InvalidArgumentError(f"column {column!r} is not a blob column")
    files = {
        frag.id: next(f.path for f in frag.files if field.id in f.fields)
        for frag in snapshot.fragments
        if any(field.id in f.fields for f in frag.files)
    }
    fragments = (np.asarray(addresses, np.uint64) >> np.uint64(ADDRESS_FRAGMENT_SHIFT)).tolist()
    out: list[tuple[str, int, int] | None] = []
    for d, frag in zip(descriptors, fragments):
        if d is not None and frag not in files:
            raise InvalidArgumentError(
                f"row address of fragment {frag} has no data file of column {column!r}"
            )
        out.append(None if d is None else blob_location(snapshot.uri, files[frag], d))
    return out


def take_blobs(snapshot: Snapshot, column: str, indices: ArrayLike) -> list[bytes | None]:
    """The bytes of ``column`` at row positions ``indices`` (over live rows), in order."""
    out: list[bytes | None] = []
    for where in take_locations(snapshot, column, indices):
        if where is None:
            out.append(None)
            continue
        path, position, size = where
        with snapshot.storage.open_reader(path) as reader:
            out.append(reader.read_exact(position, size, f"blob at {position}") if size else b"")
    return out
