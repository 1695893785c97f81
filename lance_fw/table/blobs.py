"""Blob columns (file format 2.2, ``lance-encoding:blob``): descriptors in the table, bytes elsewhere.

A descriptor says where one value's bytes are: ``kind`` 0 = inline in the fragment's data file at
``position``/``size``; kind 1 = in the sidecar file ``data/<data file stem>/<blob_id>.blob``, whose
name is the blob id as 32 hex digits, reversed (as pylance 14 names them).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.io.storage import join_uri
from lance_fw.table.deletion import live_rows
from lance_fw.table.fragment import Rows
from lance_fw.table.paths import DATA_DIR
from lance_fw.table.snapshot import Snapshot

INLINE, SIDECAR = 0, 1


def sidecar_name(blob_id: int) -> str:
    return f"{blob_id:032x}"[::-1] + ".blob"


def take_blobs(snapshot: Snapshot, column: str, indices: ArrayLike) -> list[bytes | None]:
    """The bytes of ``column`` at row positions ``indices`` (over live rows), in order."""
    field = snapshot.lance_schema.field(column)
    if not field.is_blob_v2:
        raise InvalidArgumentError(f"column {column!r} is not a blob column")
    wanted = np.asarray(indices, dtype=np.int64)
    out: list[bytes | None] = [None] * len(wanted)
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
                out[i] = None if d is None else _read(snapshot, data_file.path, d)
        base += live
    return out


def _read(snapshot: Snapshot, data_path: str, d: dict) -> bytes:
    if d["kind"] == INLINE:
        path = join_uri(snapshot.uri, DATA_DIR, data_path)
    elif d["kind"] == SIDECAR:
        path = join_uri(snapshot.uri, DATA_DIR, data_path.rsplit(".", 1)[0], sidecar_name(d["blob_id"]))
    else:
        raise UnsupportedFeatureError(f"blob descriptor kind {d['kind']} is not supported (external blobs)")
    with snapshot.storage.open_reader(path) as reader:
        return reader.read_exact(d["position"], d["size"], f"blob at {d['position']}")
