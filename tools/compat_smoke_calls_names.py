"""Smoke calls for names that are plain records: constructed with pylance's arguments, read back."""

from __future__ import annotations

import pyarrow as pa
from compat_smokes import Ctx, raises, smoke


@smoke("lance.fragment.DataFile")
def _data_file(ctx: Ctx) -> object:
    made = ctx.lib.fragment.DataFile("data/a.lance", [0, 1, 2], [0, 1, 2], 2, 2, 1234)
    default = ctx.lib.fragment.DataFile("data/b.lance", [3])
    return [
        (
            d.path,
            list(d.fields),
            list(d.column_indices) if d.column_indices is not None else None,
            d.file_major_version,
            d.file_minor_version,
            d.file_size_bytes,
        )
        for d in (made, default)
    ]


@smoke("Tags.replace_metadata")
def _tag_metadata(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.tags.create("t1", 1)
    ds.tags.replace_metadata("t1", {"k": "v", "n": "1"})
    first = ds.tags.list()["t1"]["metadata"]
    ds.tags.replace_metadata("t1", {"only": "this"})
    ds.delete("id = 1")
    ds.tags.update("t1", 2)  # moving the tag keeps its metadata
    moved = ds.tags.list()["t1"]
    return first, moved["metadata"], moved["version"], raises(lambda: ds.tags.replace_metadata("nope", {}))


@smoke("lance.__version__", "lance.io")
def _module_attributes(ctx: Ctx) -> object:
    """The version is each library's own (a PEP 440 string either way); ``io`` is a module (pylance's
    holds no public names)."""
    import re
    import types

    return bool(re.fullmatch(r"\d+(\.\d+)*\S*", ctx.lib.__version__)), isinstance(
        ctx.lib.io, types.ModuleType
    )


@smoke("lance.schema.LanceSchema")
def _lance_schema(ctx: Ctx) -> object:
    """pylance's class builds from and back to a pyarrow schema. lance_fw.schema.LanceSchema is the
    kernel's schema class (its ``fields`` a list every layer reads); pylance's object is
    ``ds.lance_schema`` (lance_fw.api.lance_schema), not reachable under this name."""
    import importlib

    schema = pa.schema([pa.field("a", pa.int64()), pa.field("s", pa.struct([pa.field("x", pa.string())]))])
    cls = importlib.import_module(f"{ctx.lib.__name__}.schema").LanceSchema
    return raises(lambda: cls.from_pyarrow(schema).to_pyarrow().equals(schema))
