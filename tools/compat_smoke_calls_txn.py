"""Smoke calls (see ``compat_smokes``) for reading transactions (``read_transaction``,
``get_transactions``), ``ds.stats.data_stats()`` and the result classes they return.

Each returns plain values: an operation as the pylance class it is an instance of and the fields a
pylance user reads.
"""

from __future__ import annotations

import sys
from typing import Any

from compat_smokes import DATA, Ctx, raises, smoke

#: the ``LanceOperation`` classes both libraries expose (others are compared by class name)
_SHARED_KINDS = ("Append", "Overwrite", "Delete", "Update", "Merge", "Project", "Restore")


def _kind(ctx: Ctx, operation: object) -> str:
    for name in _SHARED_KINDS:
        if isinstance(operation, getattr(ctx.lib.LanceOperation, name)):
            return name
    return type(operation).__name__


def _rows(fragments: Any) -> list[int]:
    return [f.physical_rows for f in fragments]


def _fields(ctx: Ctx, operation: Any) -> object:
    """What a pylance user reads of each kind of operation."""
    kind = _kind(ctx, operation)
    if kind in ("Append", "Merge"):
        return _rows(operation.fragments)
    if kind == "Overwrite":
        return _rows(operation.fragments), operation.new_schema.to_pyarrow()
    if kind == "Delete":
        return _rows(operation.updated_fragments), operation.deleted_fragment_ids, operation.predicate
    if kind == "Update":
        return _rows(operation.new_fragments), operation.removed_fragment_ids, operation.update_mode
    if kind == "Project":
        return operation.schema.to_pyarrow(), operation.preserves_nullability
    if kind == "Restore":
        return operation.version
    if kind == "Rewrite":
        return [(_rows(g.old_fragments), _rows(g.new_fragments)) for g in operation.groups]
    if kind == "CreateIndex":
        return [(i.name, i.fields, sorted(i.fragment_ids), i.index_version) for i in operation.new_indices]
    if kind == "UpdateConfig":
        config = operation.config_updates
        return config and (config.updates, config.replace), operation.schema_metadata_updates
    return None


def _summary(ctx: Ctx, transaction: Any) -> object:
    if transaction is None:
        return None
    op = transaction.operation
    return transaction.read_version, transaction.transaction_properties, _kind(ctx, op), _fields(ctx, op)


@smoke("LanceDataset.get_transactions")
def _get_transactions(ctx: Ctx) -> object:
    ds = ctx.fresh(commit_message="first")
    ds.insert(DATA.slice(0, 2), transaction_properties={"k": "v"})
    ds.delete("id < 3")
    ds.update({"s": "'z'"}, where="id = 5")
    ds.add_columns({"y": "id * 2"})
    ds.drop_columns(["x"])
    ds.optimize.compact_files()
    ds.create_scalar_index("id", "BTREE")
    ds.update_config({"a": "b"})
    ds.checkout_version(3).restore()
    ds = ctx.lib.dataset(ds.uri)
    return (
        [_summary(ctx, t) for t in ds.get_transactions(20)],
        len(ds.get_transactions()),
        len(ds.get_transactions(0)),
        [t.read_version for t in ctx.lib.dataset(ds.uri, version=3).get_transactions()],
    )


@smoke("LanceDataset.read_transaction", "lance.dataset.Transaction")
def _read_transaction(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.delete("id = 1")
    first, second = ds.read_transaction(1), ds.read_transaction(2)
    return (
        _summary(ctx, first),
        _summary(ctx, second),
        isinstance(second, ctx.lib.Transaction),
        len(second.uuid),
        raises(lambda: ds.read_transaction(9)),
        raises(lambda: ds.read_transaction(None)),
    )


@smoke(
    "lance.DataStatistics",
    "lance.FieldStatistics",
    "lance.dataset.DataStatistics",
    "lance.dataset.FieldStatistics",
)
def _data_stats(ctx: Ctx) -> object:
    import lance  # the byte counts depend on the writer's encodings: pylance writes, both read

    path = ctx.path()
    lance.write_dataset(DATA, path, max_rows_per_file=4)
    ds = ctx.lib.dataset(path)
    stats = ds.stats.data_stats()
    made = ctx.lib.DataStatistics(fields=[ctx.lib.FieldStatistics(id=0, bytes_on_disk=1)])
    return (
        [(f.id, f.bytes_on_disk) for f in stats.fields],
        type(stats).__name__,
        [(f.id, f.bytes_on_disk) for f in made.fields],
        isinstance(stats, sys.modules[f"{ctx.lib.__name__}.dataset"].DataStatistics),
    )


@smoke("lance.Index", "lance.IndexFile", "lance.dataset.Index", "lance.dataset.IndexFile")
def _index_objects(ctx: Ctx) -> object:
    ds = ctx.fresh()
    ds.create_scalar_index("id", "BTREE")
    made = ctx.lib.Index(
        uuid="u", name="n", fields=[0], dataset_version=1, fragment_ids={0, 2}, index_version=0
    )
    read = ds.read_transaction(2).operation.new_indices[0]
    return (
        (
            made.name,
            made.fields,
            sorted(made.fragment_ids),
            made.created_at,
            made.files,
            made.covering_fields,
        ),
        (read.name, read.fields, sorted(read.fragment_ids), read.dataset_version, read.base_id),
        [isinstance(f, ctx.lib.IndexFile) and f.size_bytes > 0 for f in read.files],
        read.index_details[0],
        ctx.lib.IndexFile(path="p", size_bytes=3).size_bytes,
    )
