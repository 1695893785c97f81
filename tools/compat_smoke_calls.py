"""The smoke calls themselves (see ``compat_smokes``): grouped by the pylance area they exercise.

Each returns plain values; where a call returns an object, the smoke call reads the attributes a
pylance user reads. Mutating calls work on ``ctx.fresh()``, never on the shared ``ctx.ds``.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
from compat_smokes import DATA, Ctx, raises, smoke

MORE = pa.table({"id": pa.array([100, 101], pa.int64()), "s": ["n0", "n1"], "x": [1.0, 2.0]})


# -- opening and writing ------------------------------------------------------------------------
@smoke("lance.write_dataset", "lance.dataset.write_dataset", "lance.dataset", "LanceDataset.to_table")
def _write_read(ctx: Ctx) -> object:
    return ctx.lib.dataset(ctx.ds.uri).to_table()


@smoke("lance.LanceDataset", "lance.dataset.LanceDataset")
def _construct(ctx: Ctx) -> object:
    return ctx.lib.LanceDataset(ctx.ds.uri).count_rows()


@smoke("LanceDataset.uri")
def _uri(ctx: Ctx) -> object:
    return ctx.ds.uri.rstrip("/").endswith("d0")


@smoke("LanceDataset.schema")
def _schema(ctx: Ctx) -> object:
    return ctx.ds.schema


@smoke("LanceDataset.version", "LanceDataset.latest_version")
def _version(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    return ds.version, ds.latest_version, ctx.lib.dataset(ds.uri, version=1).latest_version


@smoke("LanceDataset.versions")
def _versions(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    return [v["version"] for v in ds.versions()]


@smoke("LanceDataset.version_refs")
def _version_refs(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    return ds.version_refs(), ds.checkout_version(1).version_refs()


@smoke("LanceDataset.get_version")
def _get_version(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    return ds.checkout_version(1).get_version(), ds.get_version()


@smoke("LanceDataset.checkout_version", "LanceDataset.checkout_latest")
def _checkout(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id < 3")
    old = ds.checkout_version(1)
    counts = [old.count_rows()]
    old.checkout_latest()
    return [*counts, old.count_rows(), old.version]


@smoke("LanceDataset.restore")
def _restore(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id < 3")
    old = ds.checkout_version(1)
    old.restore()
    return old.version, old.count_rows(), ctx.lib.dataset(ds.uri).count_rows()


@smoke("LanceDataset.data_storage_version")
def _storage_version(ctx: Ctx) -> object:
    return ctx.ds.data_storage_version, ctx.fresh(data_storage_version="2.1").data_storage_version


@smoke("LanceDataset.max_field_id")
def _max_field_id(ctx: Ctx) -> object:
    return ctx.ds.max_field_id


@smoke("LanceDataset.lance_schema")
def _lance_schema(ctx: Ctx) -> object:
    schema = ctx.ds.lance_schema
    fields = schema.fields()
    found = schema.field("s")
    return (
        schema.to_pyarrow(),
        [(f.name(), f.id(), f.metadata, f.to_arrow(), len(f.children())) for f in fields],
        found is not None and found.id(),
        schema.field("nope"),
        schema.field_case_insensitive("S") is not None,
        [f.name() for f in schema.unenforced_primary_key()],
        schema == ctx.lib.dataset(ctx.ds.uri).lance_schema,
    )


@smoke("LanceDataset.has_stable_row_ids")
def _stable_row_ids(ctx: Ctx) -> object:
    import lance  # lance_fw reads stable row ids but does not write them

    path = ctx.path()
    lance.write_dataset(DATA, path, enable_stable_row_ids=True)
    return ctx.ds.has_stable_row_ids, ctx.lib.dataset(path).has_stable_row_ids


@smoke("LanceDataset.initial_storage_options", "LanceDataset.latest_storage_options")
def _storage_options(ctx: Ctx) -> object:
    return ctx.ds.initial_storage_options, ctx.ds.latest_storage_options()


@smoke("LanceDataset.take_blobs")
def _take_blobs(ctx: Ctx) -> object:
    import lance  # lance_fw does not write pylance's blob type yet: pylance writes, both read

    path = ctx.path()
    blobs = lance.blob_array([b"abc", None, b""])
    lance.write_dataset(pa.table({"b": blobs}), path, data_storage_version="2.2")
    files = ctx.lib.dataset(path).take_blobs("b", indices=[0, 1, 2])
    return [None if f is None else (f.size(), f.read()) for f in files]


@smoke("LanceDataset.has_index")
def _has_index(ctx: Ctx) -> object:
    ds = ctx.fresh()
    before = ds.has_index
    ds.create_scalar_index("id", "BTREE")
    return before, ds.has_index


# -- reading ------------------------------------------------------------------------------------
@smoke("LanceDataset.count_rows")
def _count_rows(ctx: Ctx) -> object:
    return ctx.ds.count_rows(), ctx.ds.count_rows("id > 3"), ctx.ds.count_rows(filter=pc.field("x") < 2)


@smoke("LanceDataset.scanner", "LanceScanner.to_table", "LanceScanner.projected_schema")
def _scanner(ctx: Ctx) -> object:
    scan = ctx.ds.scanner(columns=["s", "id"], filter="id >= 2", limit=5, offset=1)
    return scan.projected_schema, scan.to_table()


@smoke("LanceDataset.to_batches", "LanceScanner.to_batches")
def _to_batches(ctx: Ctx) -> object:
    return [b.num_rows for b in ctx.ds.to_batches(batch_size=3)]


@smoke("LanceScanner.to_reader")
def _to_reader(ctx: Ctx) -> object:
    return ctx.ds.scanner(columns=["id"]).to_reader().read_all()


@smoke("LanceScanner.count_rows")
def _scan_count(ctx: Ctx) -> object:
    return ctx.ds.scanner(filter="x > 1").count_rows()


@smoke("LanceScanner.explain_plan")
def _explain(ctx: Ctx) -> object:
    return isinstance(ctx.ds.scanner(filter="id > 1").explain_plan(verbose=True), str)


@smoke("LanceScanner.analyze_plan")
def _analyze(ctx: Ctx) -> object:
    scan = ctx.ds.scanner(filter="id > 1")
    counted = scan.analyze_plan(count_rows=True)
    return isinstance(scan.analyze_plan(), str) and "count(" in counted


@smoke(
    "lance.query.MatchQuery",
    "lance.query.PhraseQuery",
    "lance.query.BoostQuery",
    "lance.query.MultiMatchQuery",
    "lance.query.BooleanQuery",
    "lance.query.FullTextQuery",
    "lance.query.FullTextQueryType",
    "lance.query.FullTextOperator",
    "lance.query.Occur",
)
def _query_objects(ctx: Ctx) -> object:
    q = ctx.lib.query
    match = q.MatchQuery("a b", "s", operator=q.FullTextOperator.AND, boost=2.0)
    objects = [
        match,
        q.PhraseQuery("a b", "s"),
        q.BoostQuery(match, q.MatchQuery("c", "s"), negative_boost=0.3),
        q.MultiMatchQuery("a", ["s"], boosts=[1.0]),
        q.BooleanQuery([(q.Occur.MUST, match), (q.Occur.MUST_NOT, q.MatchQuery("c", "s"))]),
    ]
    kinds = [o.query_type().value for o in objects]
    return kinds, all(isinstance(o, q.FullTextQuery) for o in objects), [t.value for t in q.FullTextQueryType]


@smoke("LanceScanner.head", "LanceScanner.dataset_schema")
def _scan_head(ctx: Ctx) -> object:
    scan = ctx.ds.scanner(columns=["s"], filter="id > 1")
    return scan.head(2), scan.dataset_schema


@smoke("LanceScanner.to_pandas")
def _scan_pandas(ctx: Ctx) -> object:
    frame = ctx.ds.scanner(columns=["id", "s"], filter="id > 1").to_pandas(strings_to_categorical=True)
    return frame.to_dict("list"), [str(t) for t in frame.dtypes]


@smoke("LanceDataset.head")
def _head(ctx: Ctx) -> object:
    return ctx.ds.head(3, columns=["id"])


@smoke("LanceDataset.take")
def _take(ctx: Ctx) -> object:
    hidden = ctx.ds.take([7, 0], columns=["_rowoffset", "s", "_rowid", "_rowaddr"])
    return ctx.ds.take([7, 0, 3], columns=["s"]), hidden, raises(lambda: ctx.ds.take([99]))


@smoke("LanceDataset.to_pandas")
def _to_pandas(ctx: Ctx) -> object:
    return ctx.ds.to_pandas(columns=["id", "s"], filter="id < 4").to_dict("list")


@smoke("LanceDataset.slice")
def _slice(ctx: Ctx) -> object:
    return ctx.ds.slice(2, 7, columns=["id"])


@smoke("LanceDataset.sample")
def _sample(ctx: Ctx) -> object:
    sample = ctx.ds.sample(4, columns=["id", "s"])
    return sample.num_rows, sample.schema, set(sample["id"].to_pylist()) <= set(range(10))


# -- fragments ----------------------------------------------------------------------------------
@smoke("LanceDataset.get_fragments", "LanceFragment.fragment_id", "LanceFragment.physical_rows")
def _fragments(ctx: Ctx) -> object:
    return [(f.fragment_id, f.physical_rows) for f in ctx.ds.get_fragments()]


@smoke("LanceDataset.get_fragment", "LanceFragment.to_table")
def _fragment(ctx: Ctx) -> object:
    return ctx.ds.get_fragment(1).to_table(columns=["id"]), ctx.ds.get_fragment(42)


@smoke("LanceFragment.count_rows", "LanceFragment.num_deletions", "LanceFragment.deletion_file")
def _fragment_counts(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 5")
    f = ds.get_fragment(1)
    return f.count_rows(), f.count_rows("id > 5"), f.num_deletions, f.deletion_file() is not None


@smoke("LanceFragment.head", "LanceFragment.scanner")
def _fragment_head(ctx: Ctx) -> object:
    f = ctx.ds.get_fragment(0)
    return f.head(2), f.scanner(columns=["s"], filter="id > 0", offset=1, limit=1).to_table()


@smoke("LanceFragment.to_batches")
def _fragment_batches(ctx: Ctx) -> object:
    return [b.num_rows for b in ctx.ds.get_fragment(0).to_batches(batch_size=3)]


@smoke("LanceFragment.data_files")
def _fragment_files(ctx: Ctx) -> object:
    return [f.path.endswith(".lance") for f in ctx.ds.get_fragment(0).data_files()]


@smoke("LanceFragment.take")
def _fragment_take(ctx: Ctx) -> object:
    return ctx.ds.get_fragment(1).take([0, 2], columns=["id"])


@smoke("LanceFragment.to_pandas")
def _fragment_pandas(ctx: Ctx) -> object:
    return ctx.ds.get_fragment(1).to_pandas(columns=["s"], filter="id > 4").to_dict("list")


@smoke(
    "lance.LanceFragment",
    "lance.fragment.LanceFragment",
    "lance.LanceScanner",
    "lance.MergeInsertBuilder",
)
def _classes(ctx: Ctx) -> object:
    lib, ds = ctx.lib, ctx.ds
    return (
        isinstance(ds.get_fragment(0), lib.LanceFragment),
        isinstance(ds.get_fragment(0), lib.fragment.LanceFragment),
        isinstance(ds.scanner(), lib.LanceScanner),
        isinstance(ds.merge_insert("id"), lib.MergeInsertBuilder),
    )


@smoke("LanceFragment.schema")
def _fragment_schema(ctx: Ctx) -> object:
    return ctx.ds.get_fragment(0).schema


@smoke("LanceFragment.metadata")
def _fragment_metadata(ctx: Ctx) -> object:
    md = ctx.ds.get_fragment(2).metadata
    return md.id, md.physical_rows, len(md.files)


# -- mutations ----------------------------------------------------------------------------------
@smoke("LanceDataset.delete")
def _delete(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id % 2 = 0")
    return ds.to_table(), ds.version


@smoke("LanceDataset.update")
def _update(ctx: Ctx) -> object:
    ds = ctx.fresh()
    result = ds.update({"x": "x * 10"}, where="id > 6")
    return result, ds.to_table()


@smoke("LanceDataset.insert")
def _insert(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.insert(MORE)
    return ds.version, ds.to_table()


@smoke("LanceDataset.truncate_table")
def _truncate(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.truncate_table()
    return ds.count_rows(), ds.schema


@smoke(
    "LanceDataset.merge_insert",
    "MergeInsertBuilder.when_matched_update_all",
    "MergeInsertBuilder.when_not_matched_insert_all",
    "MergeInsertBuilder.execute",
)
def _merge_insert(ctx: Ctx) -> object:
    ds = ctx.fresh()
    new = pa.table({"id": pa.array([1, 50], pa.int64()), "s": ["u", "w"], "x": [9.0, 9.5]})
    stats = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
    return stats, ds.to_table().sort_by("id")


@smoke("MergeInsertBuilder.when_matched_delete")
def _merge_delete(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.merge_insert("id").when_matched_delete().execute(MORE.slice(0, 1).set_column(0, "id", pa.array([3])))
    return ds.to_table()


@smoke("MergeInsertBuilder.when_not_matched_by_source_delete")
def _merge_by_source(ctx: Ctx) -> object:
    ds = ctx.fresh()
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete("id > 7")
    builder.execute(DATA.slice(0, 2))
    return ds.to_table()


@smoke("MergeInsertBuilder.when_matched_fail")
def _merge_fail(ctx: Ctx) -> object:
    ds = ctx.fresh()
    return raises(lambda: ds.merge_insert("id").when_matched_fail().execute(DATA.slice(0, 1)))


@smoke("MergeInsertBuilder.conflict_retries", "MergeInsertBuilder.retry_timeout")
def _merge_retries(ctx: Ctx) -> object:
    ds = ctx.fresh()
    builder = ds.merge_insert("id").when_not_matched_insert_all().conflict_retries(3)
    return builder.retry_timeout(timedelta(seconds=5)).execute(MORE)


@smoke("MergeInsertBuilder.use_index", "MergeInsertBuilder.write_mode")
def _merge_partial(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE")
    new = pa.table({"id": pa.array([1, 3], pa.int64()), "x": [7.0, 8.0]})
    stats = (
        ds.merge_insert("id")
        .when_matched_update_all()
        .use_index(True)
        .write_mode("rewrite_columns")
        .execute(new)
    )
    unindexed = ds.merge_insert("id").when_matched_update_all().use_index(False).execute(new)
    return stats, unindexed, ds.to_table()


@smoke(
    "MergeInsertBuilder.execute_uncommitted",
    "MergeInsertBuilder.execute_uncommitted_batches",
    "lance.Transaction",
)
def _merge_uncommitted(ctx: Ctx) -> object:
    ds = ctx.fresh()
    new = pa.table({"id": pa.array([1, 3, 100], pa.int64()), "s": ["a", "b", "c"], "x": [7.0, 8.0, 9.0]})
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    transaction, stats = builder.execute_uncommitted(new)
    unchanged = ctx.lib.dataset(ds.uri).version
    committed = ctx.lib.LanceDataset.commit(ds.uri, transaction, read_version=transaction.read_version)
    _, batch_stats = ds.merge_insert("id").when_matched_delete().execute_uncommitted_batches(new)
    kind = isinstance(transaction, ctx.lib.Transaction), transaction.read_version
    return kind, stats, batch_stats, unchanged, committed.version, committed.to_table().sort_by("id")


@smoke("MergeInsertBuilder.execute_batches", "MergeInsertBuilder.data_storage_version")
def _merge_batches(ctx: Ctx) -> object:
    ds = ctx.fresh()
    new = pa.table({"id": pa.array([2, 101], pa.int64()), "s": ["a", "b"], "x": [1.0, 2.0]})
    builder = ds.merge_insert("id").data_storage_version(ds.data_storage_version)
    stats = builder.when_matched_update_all().when_not_matched_insert_all().execute_batches(new)
    return stats, ds.to_table().sort_by("id")


@smoke(
    "MergeInsertBuilder.explain_plan",
    "MergeInsertBuilder.analyze_plan",
    "MergeInsertBuilder.analyze_plan_batches",
)
def _merge_plans(ctx: Ctx) -> object:
    """The first line only: pylance's lines below it are DataFusion's, lance_fw's are its own."""
    ds = ctx.fresh()
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    explained = builder.explain_plan().splitlines()[0]
    analyzed = [builder.analyze_plan(MORE), builder.analyze_plan_batches(MORE)]
    counts = []
    for text in analyzed:  # the first node's counters of the rows merged
        first = next(line.strip() for line in text.splitlines() if line.strip())
        metrics = first.partition("metrics=[")[2].rstrip("]").split(", ")
        counts.append(
            sorted(m for m in metrics if m.startswith(("num_deleted", "num_inserted", "num_updated")))
        )
    return explained, counts, ds.version


@smoke("LanceFragment.merge_columns")
def _merge_columns(ctx: Ctx) -> object:
    ds = ctx.fresh()
    fragments, schema = [], None
    for fragment in ds.get_fragments():
        meta, schema = fragment.merge_columns({"y": "x * 2"})
        fragments.append(meta)
    ctx.lib.LanceDataset.commit(
        ds.uri, ctx.lib.LanceOperation.Merge(fragments, schema), read_version=ds.version
    )
    return ctx.lib.dataset(ds.uri).to_table()


@smoke("LanceFragment.delete")
def _fragment_delete(ctx: Ctx) -> object:
    ds = ctx.fresh()
    updated, removed = [], []
    for fragment in ds.get_fragments():
        out = fragment.delete("id % 3 = 0")
        (removed.append(fragment.fragment_id) if out is None else updated.append(out))
    operation = ctx.lib.LanceOperation.Delete(updated, removed, "id % 3 = 0")
    ctx.lib.LanceDataset.commit(ds.uri, operation, read_version=ds.version)
    return ctx.lib.dataset(ds.uri).to_table()


@smoke("LanceDataset.merge")
def _merge(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.merge(pa.table({"id": pa.array([1, 4, 9], pa.int64()), "y": ["a", "b", "c"]}), "id")
    return ds.to_table()


@smoke("LanceDataset.add_columns")
def _add_columns(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.add_columns({"y": "id * 2"})
    return ds.to_table(columns=["id", "y"])


@smoke("lance.batch_udf", "lance.udf.batch_udf", "lance.udf.BatchUDF", "lance.udf.BatchUDFCheckpoint")
def _batch_udf(ctx: Ctx) -> object:
    """A checkpointed UDF that fails on the last fragment, then resumes: only that one is computed."""
    ds = ctx.fresh()
    calls: list[int] = []
    failing = [True]

    @ctx.lib.batch_udf(
        output_schema=pa.schema([pa.field("y", pa.float64())]), checkpoint_file=str(ctx.tmp / "ck")
    )
    def double(batch: pa.RecordBatch) -> pa.RecordBatch:
        calls.append(batch.column("id")[0].as_py())
        if failing[0] and calls[-1] >= 8:
            raise RuntimeError("boom")
        return pa.record_batch([pc.multiply(batch.column("x"), 2)], names=["y"])

    failed = raises(lambda: ds.add_columns(double, read_columns=["id", "x"]))
    first, failing[0] = list(calls), False
    calls.clear()
    ctx.lib.dataset(ds.uri).add_columns(double, read_columns=["id", "x"])
    import importlib

    udf = importlib.import_module(ctx.lib.__name__ + ".udf")
    kinds = isinstance(double, udf.BatchUDF), isinstance(udf.BatchUDFCheckpoint(str(ctx.tmp / "ck2")), object)
    return failed, first, calls, (ctx.tmp / "ck").exists(), kinds, ctx.lib.dataset(ds.uri).to_table()


@smoke("lance.udf.normalize_transform")
def _normalize_transform(ctx: Ctx) -> object:
    import importlib

    udf = importlib.import_module(ctx.lib.__name__ + ".udf")
    wrapped = udf.normalize_transform(lambda b: pa.record_batch([b.column("id")], names=["k"]), ctx.ds)
    return (
        udf.normalize_transform({"y": "id + 1"}, ctx.ds),
        wrapped.output_schema,
        raises(lambda: udf.normalize_transform({"y": 1}, ctx.ds)),
    )


@smoke("LanceDataset.alter_columns")
def _alter_columns(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.alter_columns({"path": "s", "name": "t"})
    return ds.schema


@smoke("LanceDataset.drop_columns")
def _drop_columns(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.drop_columns(["x"])
    return ds.to_table()


@smoke("LanceDataset.optimize", "DatasetOptimizer.compact_files")
def _compact(ctx: Ctx) -> object:
    ds = ctx.fresh()
    metrics = ds.optimize.compact_files(target_rows_per_fragment=100)
    return metrics.fragments_removed, metrics.fragments_added, ds.to_table(), len(ds.get_fragments())


@smoke(
    "lance.optimize.Compaction",
    "lance.optimize.CompactionPlan",
    "lance.optimize.CompactionTask",
    "lance.optimize.RewriteResult",
    "lance.optimize.CompactionMetrics",
    "lance.optimize.CompactionOptions",
)
def _distributed_compaction(ctx: Ctx) -> object:
    import importlib

    optimize = importlib.import_module(ctx.lib.__name__ + ".optimize")
    ds = ctx.fresh()
    options: dict = optimize.CompactionOptions(target_rows_per_fragment=100)
    plan = optimize.Compaction.plan(ds, options)
    tasks = [optimize.CompactionTask.from_json(t.json()) for t in plan.tasks]
    results = [optimize.RewriteResult.from_json(t.execute(ds).json()) for t in tasks]
    metrics = optimize.Compaction.commit(ds, results)
    fields = ("fragments_removed", "fragments_added", "files_removed", "files_added")
    return (
        plan.read_version,
        [[f.id for f in t.fragments] for t in plan.tasks],
        [sum(f.physical_rows for f in r.new_fragments) for r in results],
        [getattr(metrics, k) for k in fields],
        isinstance(metrics, optimize.CompactionMetrics),
        ds.to_table(),
    )


@smoke("DatasetOptimizer.disable_auto_cleanup")
def _disable_auto_cleanup(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.update_config({"lance.auto_cleanup.interval": "5", "lance.auto_cleanup.older_than": "60s", "k": "v"})
    ds.optimize.disable_auto_cleanup()
    return sorted(k for k in ds.config() if k.startswith("lance.auto_cleanup") or k == "k"), ds.version


@smoke("LanceDataset.cleanup_old_versions")
def _cleanup(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 0")
    stats = ds.cleanup_old_versions(older_than=timedelta(0))
    return stats.old_versions, [v["version"] for v in ds.versions()]


# -- config, metadata, tags ---------------------------------------------------------------------
@smoke("LanceDataset.config", "LanceDataset.update_config", "LanceDataset.delete_config_keys")
def _config(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.update_config({"a": "1", "b": "2"})
    ds.delete_config_keys(["a"])
    return {k: v for k, v in ds.config().items() if k in ("a", "b")}


@smoke("LanceDataset.metadata", "LanceDataset.update_metadata")
def _metadata(ctx: Ctx) -> object:
    ds = ctx.fresh()
    return ds.update_metadata({"k": "v"}), ds.metadata


@smoke("LanceDataset.schema_metadata", "LanceDataset.update_schema_metadata")
def _schema_metadata(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.update_schema_metadata({"k": "v"})
    return ds.schema_metadata, ds.schema.metadata


@smoke("LanceDataset.replace_schema_metadata")
def _replace_schema_metadata(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.replace_schema_metadata({"k": "v"})
    return ds.schema_metadata


@smoke("LanceDataset.update_field_metadata", "LanceDataset.replace_field_metadata")
def _field_metadata(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.update_field_metadata({"s": {"a": "1"}})
    ds.replace_field_metadata("x", {"b": "2"})
    return ds.schema.field("s").metadata, ds.schema.field("x").metadata


@smoke(
    "LanceDataset.tags",
    "Tags.create",
    "Tags.update",
    "Tags.delete",
    "Tags.get_version",
    "Tags.list",
    "Tags.list_ordered",
)
def _tags(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 0")
    ds.tags.create("a", 1)
    ds.tags.create("b", 2)
    ds.tags.update("a", 2)
    ds.tags.delete("b")
    listed = {k: v["version"] for k, v in ds.tags.list().items()}
    ordered = [name for name, _ in ds.tags.list_ordered()]
    return ds.tags.get_version("a"), listed, ordered, ctx.lib.dataset(ds.uri, version="a").version


# -- indices ------------------------------------------------------------------------------------
@smoke("LanceDataset.create_scalar_index", "LanceDataset.describe_indices")
def _scalar_index(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE", name="by_id")
    return [(d.name, d.index_type, d.field_names) for d in ds.describe_indices()], ds.to_table(
        filter="id = 4"
    )


@smoke("LanceDataset.list_indices")
def _list_indices(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("s", "BITMAP")
    return [(i["name"], i["type"], i["fields"]) for i in ds.list_indices()]


@smoke("LanceDataset.drop_index")
def _drop_index(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE", name="by_id")
    ds.drop_index("by_id")
    return len(ds.describe_indices())


@smoke("LanceDataset.index_statistics", "LanceDataset.stats")
def _index_stats(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE", name="by_id")
    ds.delete("id = 2")
    stats = ds.stats.index_stats("by_id")
    named = ds.index_statistics("by_id")["name"]
    return stats["index_type"], stats["num_indexed_rows"], named, ds.stats.dataset_stats()


@smoke("LanceDataset.prewarm_index")
def _prewarm(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE", name="by_id")
    return ds.prewarm_index("by_id")


@smoke("DatasetOptimizer.optimize_indices")
def _optimize_indices(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE", name="by_id")
    ctx.lib.write_dataset(MORE, ds.uri, mode="append")
    ds.checkout_latest()
    ds.optimize.optimize_indices()
    return ds.to_table(filter="id = 100")


# -- distributed writes -------------------------------------------------------------------------
@smoke(
    "lance.fragment.write_fragments",
    "lance.LanceOperation",
    "LanceDataset.commit",
    "lance.FragmentMetadata",
    "lance.fragment.FragmentMetadata",
)
def _write_fragments(ctx: Ctx) -> object:
    ds = ctx.fresh()
    fragments = ctx.lib.fragment.write_fragments(MORE, ds.uri, max_rows_per_file=1)
    op = ctx.lib.LanceOperation.Append(fragments)
    new = ctx.lib.LanceDataset.commit(ds.uri, op, read_version=ds.version)
    return len(fragments), new.to_table().num_rows, isinstance(fragments[0], ctx.lib.FragmentMetadata)


# -- one file (lance.file) ----------------------------------------------------------------------
@smoke(
    "lance.file.LanceFileReader",
    "lance.file.LanceFileWriter",
    "lance.file.LanceFileMetadata",
    "lance.file.LanceBufferDescriptor",
    "LanceFileReader.metadata",
    "LanceFileReader.num_rows",
    "LanceFileReader.read_all",
    "LanceFileReader.read_global_buffer",
    "LanceFileReader.read_range",
    "LanceFileReader.take_rows",
    "LanceFileWriter.add_global_buffer",
    "LanceFileWriter.add_schema_metadata",
    "LanceFileWriter.close",
    "LanceFileWriter.write_batch",
)
def _file_api(ctx: Ctx) -> object:
    import importlib

    file_api = importlib.import_module(ctx.lib.__name__ + ".file")
    path = str(ctx.tmp / "one.lance")
    writer = file_api.LanceFileWriter(path)
    writer.write_batch(DATA)
    index = writer.add_global_buffer(b"buffer")
    writer.add_schema_metadata("k", "v")
    rows = writer.close()
    reader = file_api.LanceFileReader(path, columns=["id", "s"])
    meta = reader.metadata()
    return (
        rows,
        index,
        reader.num_rows(),
        reader.read_all(batch_size=2).to_table(),
        reader.read_range(1, 2).to_table(),
        reader.take_rows([0, 2]).to_table(),
        reader.read_global_buffer(index),
        (meta.num_rows, meta.major_version, meta.minor_version, len(meta.global_buffers)),
    )


@smoke(
    "lance.dataset.Tag",
    "lance.dataset.Version",
    "lance.dataset.VersionRef",
    "lance.dataset.DatasetStats",
    "lance.dataset.UpdateResult",
    "lance.dataset.DeleteResult",
    "lance.dataset.ExecuteResult",
    "lance.dataset.AutoCleanupConfig",
    "lance.dataset.AlterColumn",
)
def _result_types(ctx: Ctx) -> object:
    import importlib

    module = importlib.import_module(ctx.lib.__name__ + ".dataset")
    names = ["Tag", "Version", "VersionRef", "DatasetStats", "UpdateResult", "DeleteResult", "ExecuteResult"]
    names += ["AutoCleanupConfig", "AlterColumn"]
    ds = ctx.fresh()
    deleted, updated = ds.delete("id < 2"), ds.update({"x": "x + 1"}, where="id < 5")
    return (
        [sorted(getattr(module, n).__annotations__) for n in names],
        sorted(deleted or {}) == sorted(module.DeleteResult.__annotations__) if deleted else True,
        sorted(updated) == sorted(module.UpdateResult.__annotations__),
    )


@smoke(
    "lance.dataset.LANCE_COMMIT_MESSAGE_KEY",
    "lance.fragment.DEFAULT_MAX_BYTES_PER_FILE",
)
def _module_constants(ctx: Ctx) -> object:
    import importlib

    dataset = importlib.import_module(ctx.lib.__name__ + ".dataset")
    fragment = importlib.import_module(ctx.lib.__name__ + ".fragment")
    ds = dataset.write_dataset(DATA, ctx.path(), commit_message="first")
    return dataset.LANCE_COMMIT_MESSAGE_KEY, fragment.DEFAULT_MAX_BYTES_PER_FILE, ds.to_table()


@smoke("lance.commit.CommitConflictError", "lance.CleanupStats")
def _error_and_stats_classes(ctx: Ctx) -> object:
    import importlib

    commit = importlib.import_module(ctx.lib.__name__ + ".commit")
    ds = ctx.fresh()
    stats = ds.cleanup_old_versions()
    return issubclass(commit.CommitConflictError, OSError), isinstance(stats, ctx.lib.CleanupStats)


@smoke("lance.util.td_to_micros", "lance.util.sanitize_ts")
def _util_timestamps(ctx: Ctx) -> object:
    import importlib
    from datetime import datetime, timedelta

    util = importlib.import_module(ctx.lib.__name__ + ".util")
    stamps = [util.sanitize_ts(v) for v in ("2026-01-02 03:04:05", datetime(2025, 5, 6, 7, 8, 9))]
    try:
        util.sanitize_ts(12)
        wrong = None
    except TypeError as exc:
        wrong = str(exc)
    return util.td_to_micros(timedelta(seconds=1.5, microseconds=3)), stamps, wrong


@smoke(
    "lance.dataset.DatasetOptimizer",
    "lance.dataset.LanceScanner",
    "lance.dataset.MergeInsertBuilder",
    "lance.dataset.Tags",
    "lance.dataset.LanceStats",
    "lance.dataset.LanceOperation",
)
def _dataset_module_classes(ctx: Ctx) -> object:
    import importlib

    module = importlib.import_module(ctx.lib.__name__ + ".dataset")
    ds = ctx.fresh()
    fragments = ctx.lib.fragment.write_fragments(DATA, ds.uri)
    committed = ctx.lib.LanceDataset.commit(
        ds.uri, module.LanceOperation.Append(fragments), read_version=ds.version
    )
    return (
        isinstance(ds.optimize, module.DatasetOptimizer),
        isinstance(ds.scanner(), module.LanceScanner),
        isinstance(ds.merge_insert("id"), module.MergeInsertBuilder),
        isinstance(ds.tags, module.Tags),
        isinstance(ds.stats, module.LanceStats),
        committed.count_rows(),
    )


@smoke("LanceDataset.create_index")
def _create_index(ctx: Ctx) -> object:
    import numpy as np

    rows = 600
    rng = np.random.default_rng(5)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * 8, dtype=np.float32)), 8)
    ds = ctx.lib.write_dataset(pa.table({"id": np.arange(rows), "v": vectors}), ctx.path())
    ds.create_index("v", "IVF_FLAT", num_partitions=1, metric="l2")
    query = rng.random(8, dtype=np.float32)
    found = ds.to_table(nearest={"column": "v", "q": query, "k": 5}, columns=["id"])
    described = [(i.name, i.index_type) for i in ds.describe_indices()]
    return found.column("id").to_pylist(), described, ds.stats.index_stats("v_idx")["num_indexed_rows"]


@smoke("LanceDataset.tracked_files", "LanceDataset.validate")
def _tracked_files(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    table = ds.tracked_files().read_all()
    rows = sorted(zip(table.column("version").to_pylist(), table.column("type").to_pylist(), strict=True))
    return table.schema, rows, ds.validate()


# -- lance.arrow: bfloat16 and image extension types ----------------------------------------------
from types import ModuleType  # noqa: E402  (appended section: kept apart from the calls above)


def _arrow_module(ctx: Ctx) -> ModuleType:
    import importlib

    return importlib.import_module(ctx.lib.__name__ + ".arrow")


def _ext(array: pa.ExtensionArray) -> object:
    """An extension array as a user compares it: class name, extension tag and storage values."""
    t = array.type
    return (
        type(array).__name__,
        t.extension_name,
        t.__arrow_ext_serialize__(),
        str(t.storage_type),
        array.storage,
    )


@smoke(
    "lance.arrow.BFloat16",
    "lance.arrow.BFloat16Array",
    "lance.arrow.BFloat16Type",
    "lance.arrow.bfloat16_array",
)
def _bfloat16(ctx: Ctx) -> object:
    m = _arrow_module(ctx)
    values = [1.0, None, 3.14159, 0.337890625, 1e40, -0.0, float("nan")]
    arr = m.bfloat16_array(values)
    scalars = [str(v) for v in arr.to_pylist()]
    ordered = (m.BFloat16(1.0) < m.BFloat16(2.0), m.BFloat16(1.5) == m.BFloat16(1.5))
    return _ext(arr), scalars, str(arr), m.BFloat16(2.5).as_float(), ordered, str(m.BFloat16Type())


@smoke("lance.arrow.PandasBFloat16Array")
def _pandas_bfloat16(ctx: Ctx) -> object:
    m = _arrow_module(ctx)
    frame = m.PandasBFloat16Array(m.bfloat16_array([1.0, None, 2.0]))
    return len(frame), frame.isna().tolist(), str(frame[0]), len(frame[1:]), str(frame.dtype)


@smoke(
    "lance.arrow.ImageArray",
    "lance.arrow.ImageURIArray",
    "lance.arrow.ImageURIType",
    "lance.arrow.EncodedImageType",
    "lance.arrow.FixedShapeImageTensorType",
    "lance.arrow.ImageScalar",
)
def _images(ctx: Ctx) -> object:
    import numpy as np

    m = _arrow_module(ctx)
    pixels = np.arange(12, dtype=np.uint8).reshape(2, 2, 3, 1)
    uris = m.ImageURIArray.from_uris(["a.png", "b/c.png"])
    encoded = m.ImageArray.from_array(pa.array([b"\x89PNG", b"x"], pa.large_binary()))
    tensors = m.ImageArray.from_array(pa.FixedShapeTensorArray.from_numpy_ndarray(pixels))
    scalar = uris[1]
    return (
        [_ext(a) for a in (uris, encoded, tensors, m.ImageArray.from_array(["p.png"]))],
        tensors.to_numpy().tolist(),
        (isinstance(scalar, m.ImageScalar), scalar.as_py()),
        raises(lambda: m.ImageURIType(pa.int32())),
        raises(lambda: m.EncodedImageType(pa.string())),
        m.FixedShapeImageTensorType(pa.float32(), [4, 4]).__arrow_ext_serialize__(),
    )


@smoke("lance.arrow.cast")
def _arrow_cast(ctx: Ctx) -> object:
    m = _arrow_module(ctx)  # pylance's cast imports ml_dtypes first: without it the call fails there
    floats = pa.array([1.0, 3.14159, -2.5], pa.float64())
    return _ext(m.cast(floats, "bf16")), m.cast(m.bfloat16_array([1.5]), pa.float32())


# -- lance.vector -----------------------------------------------------------------------------------
def _vector_module(ctx: Ctx) -> ModuleType:
    """``lance.vector`` needs ``tqdm`` at import (unused by vec_to_table): a stand-in where it is absent."""
    import importlib
    import importlib.util
    import sys
    import types

    name = ctx.lib.__name__ + ".vector"
    if not ctx.is_pylance or importlib.util.find_spec("tqdm") is not None:
        return importlib.import_module(name)
    stub = types.ModuleType("tqdm.auto")
    stub.tqdm = object  # type: ignore[attr-defined]
    sys.modules["tqdm"], sys.modules["tqdm.auto"] = types.ModuleType("tqdm"), stub
    try:
        return importlib.import_module(name)
    finally:
        del sys.modules["tqdm"], sys.modules["tqdm.auto"]


@smoke("lance.vector.vec_to_table")
def _vec_to_table(ctx: Ctx) -> object:
    import numpy as np

    m = _vector_module(ctx)
    matrix = np.arange(24, dtype=np.float64).reshape(6, 4) / 7
    return (
        m.vec_to_table(matrix),
        m.vec_to_table({"a": [1.0, 2.0], "b": [3.0, 4.0]}, names=["key", "vec"]),
        m.vec_to_table(matrix.tolist(), names="emb").schema,
        raises(lambda: m.vec_to_table([[1.0, 2.0], [3.0]])),
        raises(lambda: m.vec_to_table((1.0, 2.0))),
    )


# -- lance.sampler ----------------------------------------------------------------------------------
def _sampler_module(ctx: Ctx) -> ModuleType:
    import importlib

    return importlib.import_module(ctx.lib.__name__ + ".sampler")


def _rows(batches: object) -> list[dict[str, list[object]]]:
    return [b.to_pydict() for b in batches]  # type: ignore[attr-defined]


@smoke("lance.sampler.Sampler", "lance.sampler.FragmentSampler")
def _sampler_bases(ctx: Ctx) -> object:
    m = _sampler_module(ctx)

    class Reversed(m.FragmentSampler):  # type: ignore[name-defined]
        def iter_fragments(self, ds: object, *args: object, **kwargs: object) -> object:
            yield from reversed(ds.get_fragments())  # type: ignore[attr-defined]

    return (
        raises(lambda: m.Sampler()),
        raises(lambda: m.FragmentSampler()),
        issubclass(m.FragmentSampler, m.Sampler),
        _rows(Reversed()(ctx.ds, batch_size=3, columns=["id"])),
    )


@smoke("lance.sampler.FullScanSampler")
def _full_scan_sampler(ctx: Ctx) -> object:
    m = _sampler_module(ctx)
    return _rows(m.FullScanSampler()(ctx.ds, batch_size=3, columns=["id", "s"], with_row_id=True))


@smoke("lance.sampler.ShardedFragmentSampler")
def _sharded_fragment_sampler(ctx: Ctx) -> object:
    m = _sampler_module(ctx)
    sampler = m.ShardedFragmentSampler(1, 2, randomize=True, seed=3)
    sampler.set_epoch(2)
    return (
        [f.fragment_id for f in sampler.iter_fragments(ctx.ds)],
        _rows(sampler(ctx.ds, batch_size=3)),
        # filtered: rows only (lance_fw's scanner cuts filtered batches elsewhere than pylance's)
        pa.Table.from_batches(list(m.ShardedFragmentSampler(0, 2)(ctx.ds, batch_size=5, filter="id > 2"))),
    )


@smoke("lance.sampler.ShardedBatchSampler")
def _sharded_batch_sampler(ctx: Ctx) -> object:
    import random

    m = _sampler_module(ctx)
    state = random.getstate()  # pylance reseeds the global generator on the filtered path
    try:
        shuffled = m.ShardedBatchSampler(1, 2, randomize=True, seed=4)
        shuffled.set_epoch(1)
        return (
            _rows(m.ShardedBatchSampler(0, 3)(ctx.ds, batch_size=2, columns=["id"])),
            _rows(shuffled(ctx.ds, batch_size=2)),
            _rows(shuffled(ctx.ds, batch_size=1, columns=["id"], filter="id > 1")),
            raises(lambda: len(m.ShardedBatchSampler(0, 1))),
            raises(lambda: m.ShardedBatchSampler(0, 1)(ctx.ds, batch_size=0)),
        )
    finally:
        random.setstate(state)


@smoke("lance.sampler.maybe_sample")
def _maybe_sample(ctx: Ctx) -> object:
    import numpy as np

    m = _sampler_module(ctx)
    state = np.random.get_state()  # pylance draws from the global numpy generator: seed it, then restore
    np.random.seed(5)
    try:
        return (
            _rows(m.maybe_sample(ctx.ds, 100, "id", batch_size=4)),
            _rows(m.maybe_sample(ctx.ds, 4, ["id", "s"], batch_size=3)),
            _rows(m.maybe_sample(ctx.ds, 6, ["id"], batch_size=4, max_takes=3)),
            raises(lambda: list(m.maybe_sample(ctx.ds, 3, ["id"], filt="id > 1"))),
        )
    finally:
        np.random.set_state(state)


# -- lance.namespace ------------------------------------------------------------------------------
def _namespace_module(ctx: Ctx) -> ModuleType:
    import importlib

    return importlib.import_module(ctx.lib.__name__ + ".namespace")


def _ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@smoke("lance.namespace.DirectoryNamespace")
def _directory_namespace(ctx: Ctx) -> object:
    m = _namespace_module(ctx)
    root = ctx.path()
    ns = m.DirectoryNamespace(root=root)

    def listed() -> object:
        return ns.list_tables(m.ListTablesRequest(id=[])).tables

    created = ns.create_table(m.CreateTableRequest(id=["t"]), _ipc_stream(DATA))
    ns.declare_table(m.DeclareTableRequest(id=["d"]))
    described = ns.describe_table(m.DescribeTableRequest(id=["t"]))
    return (
        created.version,
        created.location.endswith("/t.lance"),
        listed(),
        described.location.endswith("/t.lance"),
        ctx.lib.dataset(described.location).count_rows(),
        raises(lambda: ns.create_table(m.CreateTableRequest(id=["t"]), _ipc_stream(DATA))),
        raises(lambda: ns.describe_table(m.DescribeTableRequest(id=["zz"]))),
        ns.drop_table(m.DropTableRequest(id=["d"])).id,
        listed(),
        ns.list_namespaces(m.ListNamespacesRequest(id=[])).namespaces,
    )


@smoke("lance.namespace.DynamicContextProvider")
def _dynamic_context_provider(ctx: Ctx) -> object:
    m = _namespace_module(ctx)

    class Provider(m.DynamicContextProvider):  # type: ignore[name-defined]
        def provide_context(self, info: dict[str, str]) -> dict[str, str]:
            return {"headers.Authorization": "Bearer x"}

    ns = m.DirectoryNamespace(root=ctx.path(), context_provider=Provider())
    return ns.list_tables(m.ListTablesRequest(id=[])).tables, raises(lambda: m.DynamicContextProvider())


@smoke(
    "lance.schema.schema_to_json",
    "lance.schema.json_to_schema",
    "lance.schema_to_json",
    "lance.json_to_schema",
)
def _schema_json(ctx: Ctx) -> object:
    import importlib

    m = importlib.import_module(ctx.lib.__name__ + ".schema")
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False, metadata={"k": "v"}),
            pa.field("l", pa.list_(pa.string())),
            pa.field(
                "s",
                pa.struct([pa.field("t", pa.timestamp("us", "UTC")), pa.field("d", pa.decimal128(10, 2))]),
            ),
            pa.field("v", pa.list_(pa.float32(), 4)),
            pa.field("c", pa.dictionary(pa.int32(), pa.string())),
        ],
        metadata={"m": "1"},
    )
    as_json = m.schema_to_json(schema)
    back = m.json_to_schema(as_json)
    return (
        as_json,
        back.equals(schema, check_metadata=True),
        raises(lambda: m.schema_to_json(pa.schema([pa.field("x", pa.string_view())]))),
        raises(
            lambda: m.json_to_schema({"fields": [{"name": "x", "type": {"type": "foo"}, "nullable": True}]})
        ),
    )


@smoke(
    "lance.file.LanceFileStatistics",
    "lance.file.LanceColumnMetadata",
    "lance.file.LancePageMetadata",
    "lance.file.stable_version",
    "LanceFileReader.file_statistics",
)
def _file_metadata(ctx: Ctx) -> object:
    """Reads files pylance wrote (the two writers may choose other encodings: not what is compared)."""
    import importlib

    import lance.file

    file_api = importlib.import_module(ctx.lib.__name__ + ".file")
    out = []
    for version in ("2.0", "2.1"):
        path = str(ctx.tmp / f"meta-{version}.lance")
        writer = lance.file.LanceFileWriter(path, version=version)
        writer.write_batch(DATA)
        writer.close()
        reader = file_api.LanceFileReader(path)
        meta, stats = reader.metadata(), reader.file_statistics()
        columns = [
            (
                [(b.position, b.size) for b in c.column_buffers],
                [([(b.position, b.size) for b in p.buffers], p.encoding) for p in c.pages],
            )
            for c in meta.columns
        ]
        out.append(
            (
                meta.num_data_bytes,
                meta.num_column_metadata_bytes,
                columns,
                [(c.num_pages, c.size_bytes) for c in stats.columns],
                repr(stats),
                type(stats).__name__ == "LanceFileStatistics",
                isinstance(meta.columns[0], file_api.LanceColumnMetadata),
                isinstance(meta.columns[0].pages[0], file_api.LancePageMetadata),
            )
        )
    return file_api.stable_version(), out
