"""Smoke calls (see ``compat_smokes``) for ``lance.blob`` and its top-level aliases: blob values,
the blob v2 extension type and fields, a blob v2 dataset written by each library, read back as
descriptors and as ``BlobFile`` handles, and ``BlobColumn`` over a binary column.

Names under ``lance.blob.`` are called on the library's ``blob`` module; the top-level aliases
(``lance.blob_field``, ...) on the library itself, each by its own smoke call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from compat_smokes import Ctx, raises, smoke

#: one of each storage kind: empty, inline, packed sidecar (past 64 KiB), and a null
VALUES: list[bytes | None] = [b"", b"abc", b"x" * 70_000, None]
#: ``lance.blob`` names pylance does not also export at its top level
NOT_TOP_LEVEL = ("BlobIterator", "BlobType", "DEFAULT_BLOB_BUFFER_SIZE")


def _blob(ctx: Ctx) -> Any:
    return importlib.import_module(f"{ctx.lib.__name__}.blob")


def _both(*names: str) -> Callable[[Callable[[Ctx, Any], object]], None]:
    """Register ``fn(ctx, namespace)`` twice: under ``lance.blob.<name>`` with the blob module,
    and under ``lance.<name>`` (where given) with the library's top level."""

    def register(fn: Callable[[Ctx, Any], object]) -> None:
        smoke(*(f"lance.blob.{n}" for n in names))(lambda ctx: fn(ctx, _blob(ctx)))
        top = [f"lance.{n}" for n in names if n not in NOT_TOP_LEVEL]
        if top:
            smoke(*top)(lambda ctx: fn(ctx, ctx.lib))

    return register


@_both("Blob")
def _blob_values(ctx: Ctx, ns: Any) -> object:
    made = [ns.Blob.from_bytes(bytearray(b"q")), ns.Blob.empty(), ns.Blob.from_uri("s3://b/k", 1, 2)]
    return (
        [(b.data, b.uri, b.position, b.size) for b in made],
        raises(lambda: ns.Blob(data=b"a", uri="u")),
        raises(lambda: ns.Blob()),
        raises(lambda: ns.Blob(uri="u", position=1)),
        raises(lambda: ns.Blob.from_uri("")),
    )


@_both("BlobArray", "blob_array")
def _blob_arrays(ctx: Ctx, ns: Any) -> object:
    array = ns.blob_array([b"a", None, "s3://b/k", ns.Blob.empty()])
    same = ns.BlobArray.from_pylist([b"a", None, "s3://b/k", b""])
    return (
        array.storage.to_pylist(),
        str(array.type.storage_type),
        array.type.extension_name,
        same.storage.equals(array.storage),
        raises(lambda: ns.blob_array([1])),
    )


@_both("BlobType")
def _blob_type(ctx: Ctx, ns: Any) -> object:
    t = ns.BlobType()
    minimal = pa.struct([("data", pa.large_binary()), ("uri", pa.utf8())])
    return (
        t.extension_name,
        str(t.storage_type),
        t.__arrow_ext_serialize__(),
        str(type(t).__arrow_ext_deserialize__(minimal, b"").storage_type),
        raises(lambda: type(t).__arrow_ext_deserialize__(pa.int8(), b"")),
    )


@_both("blob_field")
def _blob_field(ctx: Ctx, ns: Any) -> object:
    field = ns.blob_field("b", nullable=False, inline_size_threshold=0, dedicated_size_threshold=9)
    return (
        field.name,
        field.type.extension_name,
        field.nullable,
        field.metadata,
        ns.blob_field("c").metadata,
        raises(lambda: ns.blob_field("b", dedicated_size_threshold=0)),
        raises(lambda: ns.blob_field("b", inline_size_threshold=1.5)),
    )


@_both("DEFAULT_BLOB_BUFFER_SIZE")
def _buffer_size(ctx: Ctx, ns: Any) -> object:
    return ns.DEFAULT_BLOB_BUFFER_SIZE


@_both("BlobColumn", "BlobIterator")
def _blob_column(ctx: Ctx, ns: Any) -> object:
    column = ns.BlobColumn(pa.array([b"ab", None, b"c"], pa.large_binary()))
    it = iter(column)
    return (
        type(it).__name__ == "BlobIterator",
        [f.read() for f in column],
        raises(lambda: ns.BlobColumn(pa.array([1]))),
    )


@_both("BlobFile")
def _blob_file(ctx: Ctx, ns: Any) -> object:
    """A blob v2 dataset written by the library, read back as descriptors and as BlobFiles."""
    path = ctx.path()
    ctx.lib.write_dataset(pa.table({"b": ns.blob_array(VALUES)}), path, data_storage_version="2.2")
    ds = ctx.lib.dataset(path)
    files = ds.take_blobs("b", indices=[0, 1, 2, 3])
    packed = files[2]
    calls = [packed.read(3), packed.tell(), packed.read_range(69_998, 2), packed.seek(-1, 2), packed.read()]
    return (
        [d and (d["kind"], d["size"], d["blob_id"]) for d in ds.to_table().column("b").to_pylist()],
        [type(f).__name__ if f is not None else None for f in files],
        [f.read() if f is not None else None for f in files[:2]],
        calls,
        isinstance(packed, ns.BlobFile),
        raises(lambda: packed.read_range(0, 10**6)),
    )


@smoke("LanceDataset.read_blobs", "LanceDataset.read_blob_ranges", "lance.dataset.DEFAULT_BLOB_BUFFER_SIZE")
def _read_blobs(ctx: Ctx) -> object:
    """Whole blobs and byte ranges of a blob v2 dataset, by position, and the default buffer size."""
    path = ctx.path()
    blob = importlib.import_module(f"{ctx.lib.__name__}.blob")
    ctx.lib.write_dataset(pa.table({"b": blob.blob_array(VALUES)}), path, data_storage_version="2.2")
    ds = ctx.lib.dataset(path)
    whole = ds.read_blobs("b", indices=[2, 0, 1, 3])
    ranges = ds.read_blob_ranges("b", [(2, 10, 5), (1, 0, 2), (3, 0, 1)], selector="indices")
    module = importlib.import_module(f"{ctx.lib.__name__}.dataset")
    return (
        [(a, None if b is None else (len(b), b[:4])) for a, b in whole],
        ranges,
        module.DEFAULT_BLOB_BUFFER_SIZE,
        raises(lambda: ds.read_blobs("b")),
    )
