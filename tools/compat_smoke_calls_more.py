"""Smoke calls (see ``compat_smokes``) for pylance's records and helpers of issue 16: the
``lance.dataset`` scanner builder and records, ``lance.tokenize``, ``lance.indices`` models,
``lance.fragment.DeletionFile`` and the ``lance.query`` enums.

Each runs the same code on both libraries and returns plain values: fields read back, tables
scanned, bytes serialized, errors by class.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
from compat_smokes import Ctx, raises, smoke


def _module(ctx: Ctx, name: str) -> ModuleType:
    return importlib.import_module(f"{ctx.lib.__name__}.{name}")


def _fields(record: Any, names: tuple[str, ...]) -> list[Any]:
    return [getattr(record, n) for n in names]


# -- lance ------------------------------------------------------------------------------------


@smoke("lance.tokenize", "lance.FtsToken")
def _tokenize(ctx: Ctx) -> object:
    texts = ["the cat is running in the gardens", "Don't stop-believing 123abc", "a" * 45 + " x", ""]
    out = [[(t.text, t.position) for t in ctx.lib.tokenize(text)] for text in texts]
    out.append([(t.text, t.position) for t in ctx.lib.tokenize("The Running", stem=False)])
    out.append([(t.text, t.position) for t in ctx.lib.tokenize("The Running", remove_stop_words=False)])
    out.append([(t.text, t.position) for t in ctx.lib.tokenize("the cats", base_tokenizer="whitespace")])
    out.append([(t.text, t.position) for t in ctx.lib.tokenize("a" * 45, max_token_length=None)])
    return out


@smoke("lance.DatasetBasePath")
def _base_path(ctx: Ctx) -> object:
    names = ("id", "name", "path", "is_dataset_root")
    made = [ctx.lib.DatasetBasePath("/data/x"), ctx.lib.DatasetBasePath("s3://b/y", "b", True, 3)]
    return [_fields(m, names) for m in made], repr(made[1])


@smoke("lance.set_logger")
def _set_logger(ctx: Ctx) -> object:
    path = os.path.join(ctx.path() + ".log")
    name = f"compat-smoke-{ctx.lib.__name__}"
    ctx.lib.set_logger(path, name=name, level=logging.WARNING, format_string="%(levelname)s:%(message)s")
    logger = logging.getLogger(name)
    logger.info("dropped")
    logger.warning("kept")
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
    with open(path) as f:
        return f.read()


@smoke("lance.ShardingField", "lance.ShardingSpec", "lance.CompactedSsTable")
def _sharding_records(ctx: Ctx) -> object:
    field = ctx.lib.ShardingField("f", [1, 2], transform="bucket", parameters={"n": "4"})
    spec = ctx.lib.ShardingSpec(7, [field])
    table = ctx.lib.CompactedSsTable("shard", 3)
    return (
        _fields(field, ("field_id", "source_ids", "transform", "expression", "result_type", "parameters")),
        spec.spec_id,
        len(spec.fields),
        _fields(table, ("shard_id", "generation")),
    )


# -- lance.dataset ----------------------------------------------------------------------------


@smoke("lance.dataset.ColumnOrdering")
def _column_ordering(ctx: Ctx) -> object:
    cls = _module(ctx, "dataset").ColumnOrdering
    names = ("column_name", "ascending", "nulls_first")
    return _fields(cls("id"), names), _fields(cls("s", ascending=False, nulls_first=True), names)


@smoke("lance.dataset.serialize_row_addrs")
def _serialize_row_addrs(ctx: Ctx) -> object:
    serialize = _module(ctx, "dataset").serialize_row_addrs
    cases = [[0, 2, 4], [(1 << 32) | 5, 3], [], list(range(5000)) + [(7 << 32) + 9], [5, 5, 1]]
    return [serialize(c).hex() for c in cases]


@smoke("lance.dataset.ScannerBuilder")
def _scanner_builder(ctx: Ctx) -> object:
    builder = _module(ctx, "dataset").ScannerBuilder
    scan = builder(ctx.ds).columns(["id", "s"]).filter("id > 2").limit(3).offset(1).with_row_id()
    table = scan.batch_size(2).to_scanner().to_table()
    projected = builder(ctx.ds).columns({"twice": "id * 2"}).limit(2).to_scanner().to_table()
    defaults = builder(ctx.ds).apply_defaults({"limit": 4, "with_row_address": True}).to_scanner().to_table()
    fragments = builder(ctx.ds).with_fragments([ctx.ds.get_fragment(1)]).to_scanner().to_table()
    errors = [
        raises(lambda: builder(ctx.ds).limit(-1)),
        raises(lambda: builder(ctx.ds).offset(-1)),
        raises(lambda: builder(ctx.ds).columns("id")),
        raises(lambda: builder(ctx.ds).blob_handling("nope")),
        raises(lambda: builder(ctx.ds).with_fragments([1])),
        raises(lambda: builder(ctx.ds).order_by(["id"])),
        raises(lambda: builder(ctx.ds).apply_defaults({"nope": 1})),
    ]
    return table, projected, defaults, fragments, errors


@smoke("lance.dataset.VectorSearchQuery")
def _vector_search_query(ctx: Ctx) -> object:
    query = _module(ctx, "dataset").VectorSearchQuery("vec", np.array([1.0, 2.0]), k=3, use_index=False)
    inner = dict(query.inner())
    vector = inner.pop("q")
    return inner, vector.to_pylist(), str(vector.type)


@smoke("lance.dataset.IndexInformation", "lance.dataset.BulkCommitResult", "lance.dataset.Branch")
def _typed_dicts(ctx: Ctx) -> object:
    module = _module(ctx, "dataset")
    made = module.Branch(parent_branch=None, parent_version=1)
    return [
        list(getattr(module, n).__annotations__) for n in ("IndexInformation", "BulkCommitResult", "Branch")
    ], made


# -- lance.fragment ---------------------------------------------------------------------------


@smoke("lance.fragment.DeletionFile")
def _deletion_file(ctx: Ctx) -> object:
    cls = _module(ctx, "fragment").DeletionFile
    array, bitmap = cls(3, 7, "array", 2, None), cls(4, 1, "bitmap", 9, base_id=2)
    back = cls.from_json(array.json())
    return (
        [d.asdict() for d in (array, bitmap)],
        [d.json() for d in (array, bitmap)],
        [array.path(5), bitmap.path(6), array.path(5, base_uri="/tmp/x"), array.path(5, "a/b/")],
        back == array,
        back != bitmap,
        repr(bitmap),
        cls.from_json('{"read_version":1,"id":2,"file_type":"bitmap","num_deleted_rows":3}').asdict(),
        [raises(functools.partial(cls.from_json, text)) for text in ("{}", "x", '{"read_version":1}')],
        raises(lambda: cls(3, 7, "other", 2, None)),
    )


# -- lance.indices ----------------------------------------------------------------------------


@smoke("lance.indices.IndexConfig", "lance.indices.IndexFileVersion")
def _index_records(ctx: Ctx) -> object:
    module = _module(ctx, "indices")
    config = module.IndexConfig("btree", {"zone_size": 4})
    versions = [(v.name, v.value, str(v), v == v.value) for v in module.IndexFileVersion]
    return (config.index_type, config.parameters), versions, module.IndexFileVersion("V3").name


@smoke("lance.indices.IndexSegmentDescription")
def _segment_description(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE")
    segment = ds.describe_indices()[0].segments[0]
    cls = _module(ctx, "indices").IndexSegmentDescription
    return isinstance(segment, cls), sorted(segment.fragment_ids), segment.dataset_version_at_last_update


def _codebook() -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 4)


@smoke("lance.indices.IvfModel")
def _ivf_model(ctx: Ctx) -> object:
    module = _module(ctx, "indices")
    path = ctx.path() + ".lance"
    module.IvfModel(_codebook(), "cosine").save(path)
    loaded = module.IvfModel.load(path)
    return (
        loaded.distance_type,
        loaded.num_partitions,
        loaded.centroids.to_pylist(),
        str(loaded.centroids.type),
    )


@smoke("lance.indices.PqModel")
def _pq_model(ctx: Ctx) -> object:
    module = _module(ctx, "indices")
    path = ctx.path() + ".lance"
    module.PqModel(2, _codebook(), num_bits=4).save(path)
    loaded = module.PqModel.load(path)
    fresh = module.PqModel(3, _codebook())
    return (
        loaded.num_subvectors,
        loaded.num_bits,
        loaded.dimension,
        loaded.codebook.to_pylist(),
        fresh.num_bits,
    )


# -- lance.query ------------------------------------------------------------------------------


@smoke("lance.query.DocumentGranularity", "lance.query.MinHashQuery")
def _query_records(ctx: Ctx) -> object:
    module = _module(ctx, "query")
    granularity = [(g.name, g.value, str(g), g == g.value) for g in module.DocumentGranularity]
    query = module.MinHashQuery("near duplicate text", "text")
    return (
        granularity,
        (query.text, query.column),
        query == module.MinHashQuery("near duplicate text", "text"),
    )
