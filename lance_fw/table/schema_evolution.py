"""``add_columns``, ``alter_columns`` and ``drop_columns``: schema changes without rewriting data.

Adding columns from SQL expressions writes, per fragment, one new data file holding only the new
columns for every *physical* row (deleted rows included, so row offsets line up), and commits a
``Merge``: each fragment gains that file, the schema gains the fields (ids after the current
maximum). Adding bare Arrow fields writes nothing: fragments without a file for a field read it as
nulls. Dropping columns commits a ``Project``: the data stays in the files, unreferenced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

import pyarrow as pa
from google.protobuf import json_format

from lance_fw._proto import file_pb2, table_pb2
from lance_fw.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidUserInputError,
    LanceError,
    SchemaError,
)
from lance_fw.file.version import parse_version
from lance_fw.query.scanner import LanceScanner
from lance_fw.schema import LanceField, LanceSchema, check_names, conform
from lance_fw.table.rows import DEFAULT_BATCH_SIZE
from lance_fw.table.snapshot import Snapshot
from lance_fw.table.transaction import Merge, Project, undo_unless_published
from lance_fw.table.write import FileProgress, delete_fragment_files, write_fragments

if TYPE_CHECKING:
    from lance_fw.query.projection import Projection

_ALL_ROWS = 2**62  # one data file per fragment: never roll over


class BatchInfo(NamedTuple):
    """Which batch of a UDF's results a checkpoint holds: the ``batch_index``-th range of
    ``batch_size`` physical rows of fragment ``fragment_id`` (pylance's key)."""

    fragment_id: int
    batch_index: int


class UdfCheckpoint(Protocol):
    """Where a ``BatchUDF`` with a ``checkpoint_file`` keeps results not yet committed
    (``lance_fw.udf.BatchUDFCheckpoint``): computed batches of the fragment being written, and
    fragments whose new data file is complete. A failed ``add_columns`` run again with the same
    checkpoint reads these instead of calling the UDF again (pylance's resume)."""

    def get_batch(self, info: BatchInfo) -> pa.RecordBatch | None: ...
    def insert_batch(self, info: BatchInfo, batch: pa.RecordBatch) -> None: ...
    def get_fragment(self, fragment_id: int) -> str | None: ...
    def insert_fragment(self, fragment_id: int, fragment: str) -> None: ...
    def cleanup(self) -> None: ...


def udf_checkpoint(transforms: object) -> UdfCheckpoint | None:
    """The checkpoint of a ``BatchUDF`` made with ``checkpoint_file`` (lance_fw's or pylance's:
    both keep it as ``cache``), else None."""
    cache = getattr(transforms, "cache", None)
    return cache if cache is not None and hasattr(cache, "get_fragment") else None


#: a UDF of ``add_columns``: read rows in, new columns out (RecordBatch, Table, dict or DataFrame)
BatchUdf = Callable[[pa.RecordBatch], Any]
#: what ``add_columns`` takes: ``{name: SQL}``, a UDF, or pyarrow field(s) / a schema of null columns
Transforms: TypeAlias = dict[str, str] | BatchUdf | pa.Field | list[pa.Field] | pa.Schema


def _new_fields(snapshot: Snapshot, arrow_fields: list[pa.Field]) -> LanceSchema:
    taken = set(snapshot.schema.names)
    clash = [f.name for f in arrow_fields if f.name in taken]
    if clash:
        raise InvalidArgumentError(f"add_columns: column(s) {clash} already exist in {snapshot.uri}")
    return LanceSchema.from_arrow(pa.schema(arrow_fields), first_id=snapshot.max_field_id + 1)


#: view types a projection may return, and the type add_columns stores them as
_STORED_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def _stored_fields(projection: Projection, transforms: dict[str, str], schema: pa.Schema) -> list[pa.Field]:
    """Nullable, except constants that are not NULL (pylance stores ``{"c": "'x'"}`` as not null).
    A string_view / binary_view result (``left(s, 3)``) is stored as string / binary, as pylance does."""
    probe = pa.table({c: pa.nulls(1, schema.field(c).type) for c in (projection.columns or schema.names[:1])})
    values = projection.apply(probe)
    built = projection.schema
    assert built is not None  # None only while the Projection is being constructed
    out = []
    for name in projection.names:
        constant = name in projection.constants
        field = built.field(name)  # its nullability is DataFusion's (coalesce(x, 0): not null)
        field = field.with_type(_STORED_VIEWS.get(field.type, field.type))
        out.append(
            field.with_nullable(field.nullable and (not constant or values.column(name).null_count > 0))
        )
    return out


def _commit_schema(snapshot: Snapshot, added: LanceSchema) -> int:
    """New all-null columns: schema only, existing fragments untouched (rebases over appends)."""
    op = Merge(
        fragments=None,
        schema_fields=snapshot.lance_schema.to_protos() + added.to_protos(),
        schema_metadata=snapshot.lance_schema.metadata,
        read_fields=snapshot.lance_schema.to_protos(),
    )
    return snapshot.commit(op, lambda: None)  # metadata only: no file to undo


@dataclass(frozen=True)
class ColumnsPlan:
    """New columns to compute fragment by fragment, planned once: picklable (fields travel as
    serialized protobufs, a UDF as the function itself), so a distributed runner (Spark) ships it
    with each fragment, computes in tasks and commits the fragments on the planner."""

    read_version: int
    needed: tuple[str, ...]  # the columns each batch of the transform reads
    added: tuple[bytes, ...]  # the new fields (file_pb2.Field), ids after the current maximum
    schema_fields: tuple[bytes, ...]  # the whole schema after the commit
    transform: dict[str, str] | Callable[[pa.RecordBatch], Any]
    output_schema: pa.Schema | None = None  # a UDF's result schema (taken from its first batch)

    def added_schema(self) -> LanceSchema:
        return LanceSchema.from_protos([file_pb2.Field.FromString(b) for b in self.added])

    def fields(self) -> list:
        return [file_pb2.Field.FromString(b) for b in self.schema_fields]

    def compute(self, snapshot: Snapshot) -> Callable[[pa.Table], pa.Table]:
        """The function from read rows to new columns, for ``snapshot`` (the planned version)."""
        if isinstance(self.transform, dict):
            from lance_fw.query.projection import Projection

            return Projection(self.transform, snapshot.schema, require_column=False).apply
        udf, schema = self.transform, self.output_schema
        assert schema is not None  # set for every UDF by plan_add_columns
        return lambda table: pa.Table.from_batches(
            [udf_batch(udf, b, schema) for b in table.combine_chunks().to_batches()], schema
        )


def udf_batch(
    udf: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch, schema: pa.Schema | None
) -> pa.RecordBatch:
    """The new columns ``udf`` returns for ``batch``: a RecordBatch, a Table, a dict of arrays or a
    pandas DataFrame (as pylance takes), one row per input row, with the schema of the first batch.
    An exception of the UDF is re-raised as pylance does: an ``OSError`` (``InvalidUserInputError``)
    naming it, the original chained."""
    try:
        result = udf(batch)
    except LanceError:
        raise
    except Exception as exc:  # any failure of user code: pylance's OSError
        raise InvalidUserInputError(f"add_columns: the UDF raised {type(exc).__name__}: {exc}") from exc
    if isinstance(result, dict):
        result = pa.RecordBatch.from_pydict(result)
    elif type(result).__module__.split(".")[0] == "pandas":
        result = pa.RecordBatch.from_pandas(result)
    elif isinstance(result, pa.Table):
        result = (
            result.combine_chunks().to_batches()[0]
            if result.num_rows
            else result.schema.empty_table().to_batches()
        )
    if not isinstance(result, pa.RecordBatch):
        raise InvalidArgumentError(
            f"add_columns: the UDF must return a RecordBatch, Table, dict of arrays or DataFrame, got {type(result).__name__}"
        )
    if result.num_rows != batch.num_rows:
        raise InvalidArgumentError(
            f"add_columns: the UDF returned {result.num_rows} rows for a batch of {batch.num_rows}"
        )
    if schema is not None and not result.schema.equals(schema):
        if hasattr(udf, "output_schema"):  # a BatchUDF: pylance's check of it fails as an OSError
            raise InvalidUserInputError(
                f"add_columns: the UDF returned columns {result.schema} where its output_schema is {schema}"
            )
        raise SchemaError(
            f"add_columns: the UDF returned columns {result.schema} where its first batch had {schema}"
        )
    return result


def infer_udf_schema(udf: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch) -> pa.Schema:
    """pylance's inference of a UDF's output schema from its result on ``batch`` (one row). A
    ``BatchUDF`` (it has ``output_schema``) keeps the schema, so a resumed run does not call it
    again, and its exception propagates as raised; a plain function that fails is pylance's
    ``TypeError`` (``InvalidArgumentTypeError``)."""
    if hasattr(udf, "output_schema"):
        result = udf(batch)
        schema = udf_batch(lambda _: result, batch, None).schema
        udf.output_schema = schema
        return schema
    try:
        return udf_batch(udf, batch, None).schema
    except Exception as exc:  # pylance turns any failure of this first call into a TypeError
        raise InvalidArgumentTypeError(
            "transforms must be a BatchUDF, dict, map function, or ReaderLike value.  Received "
            f"{type(udf)}, which is callable, but gave an error when called with a batch of data: {exc}"
        ) from exc


def _udf_schema(
    snapshot: Snapshot, udf: Callable[[pa.RecordBatch], Any], read_columns: list[str] | None
) -> pa.Schema:
    """The UDF's output schema: a ``BatchUDF``'s ``output_schema``, else inferred from the first
    live row (``infer_udf_schema``)."""
    given = getattr(udf, "output_schema", None)
    if isinstance(given, pa.Schema):
        return given
    for batch in LanceScanner(snapshot, columns=read_columns, limit=1).to_batches():
        if batch.num_rows:
            return infer_udf_schema(udf, batch)
    raise InvalidArgumentError(
        f"add_columns: {snapshot.uri} has no rows to infer the UDF's output schema from"
    )


def plan_add_columns(
    snapshot: Snapshot, transforms: Transforms, read_columns: list[str] | None = None
) -> ColumnsPlan:
    """Check ``{"name": "SQL expression"}`` or a UDF (``RecordBatch -> new columns``) against
    ``snapshot`` and fix the new fields and what each fragment reads."""
    if callable(transforms) and not isinstance(transforms, (dict, pa.Schema, pa.Field)):
        output = _udf_schema(snapshot, transforms, read_columns)
        added = _new_fields(snapshot, list(output))
        needed = list(read_columns) if read_columns else list(snapshot.schema.names)
        transform: dict[str, str] | Callable[[pa.RecordBatch], Any] = transforms
    elif isinstance(transforms, dict) and transforms:
        from lance_fw.query.projection import Projection

        transform = {str(k): v for k, v in transforms.items()}
        projection = Projection(transform, snapshot.schema, require_column=False)
        added = _new_fields(snapshot, _stored_fields(projection, transform, snapshot.schema))
        # a constant expression reads no column, but still needs one to know how many rows there are
        needed = list(read_columns or projection.columns or snapshot.schema.names[:1])
        output = None
    else:  # pylance's class: a TypeError
        raise InvalidArgumentTypeError(
            "add_columns takes {name: SQL expression}, a function of a RecordBatch, a pyarrow field, "
            f"fields or schema, not {type(transforms).__name__}"
        )
    for name in needed:
        snapshot.lance_schema.field(name)  # an unknown column fails here, before any task runs
    fields = snapshot.lance_schema.to_protos() + added.to_protos()
    return ColumnsPlan(
        snapshot.version,
        tuple(needed),
        tuple(f.SerializeToString() for f in added.to_protos()),
        tuple(f.SerializeToString() for f in fields),
        transform,
        output,
    )


def add_columns(
    snapshot: Snapshot,
    transforms: Transforms,
    read_columns: list[str] | None = None,
    batch_size: int | None = None,
) -> int:
    """``{"name": "SQL expression"}``, a UDF (``RecordBatch -> RecordBatch``), or ``pa.Field`` /
    list of fields / ``pa.Schema`` (all-null columns, no data written). Returns the new version."""
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, (pa.Schema, list)):
        if not all(isinstance(f, pa.Field) for f in transforms):
            raise InvalidArgumentError("add_columns: a list must hold pyarrow fields")
        return _commit_schema(snapshot, _new_fields(snapshot, [f.with_nullable(True) for f in transforms]))
    plan = plan_add_columns(snapshot, transforms, read_columns)
    needed = [snapshot.lance_schema.field(n) for n in plan.needed]
    checkpoint = udf_checkpoint(transforms)
    version = _write_columns(
        snapshot, needed, plan.added_schema(), plan.compute(snapshot), plan.fields(), batch_size, checkpoint
    )
    if checkpoint is not None:
        checkpoint.cleanup()  # committed: nothing left to resume (pylance removes the file too)
    return version


def fragment_columns(
    snapshot: Snapshot,
    frag: table_pb2.DataFragment,
    transforms: Transforms,
    read_columns: list[str] | None = None,
    batch_size: int | None = None,
) -> tuple[table_pb2.DataFragment, LanceSchema]:
    """One fragment's part of ``add_columns``, uncommitted (pylance's ``merge_columns``): the
    fragment with a data file of the new columns, and the whole schema holding them."""
    plan = plan_add_columns(snapshot, transforms, read_columns)
    needed = [snapshot.lance_schema.field(n) for n in plan.needed]
    updated = write_fragment_columns(
        snapshot, frag, needed, plan.added_schema(), plan.compute(snapshot), batch_size
    )
    return updated, LanceSchema.from_protos(plan.fields(), snapshot.lance_schema.metadata)


def write_fragment_columns(
    snapshot: Snapshot,
    frag: table_pb2.DataFragment,
    needed: list,
    added: LanceSchema,
    compute: Callable[[pa.Table], pa.Table],
    batch_size: int | None = None,
    checkpoint: UdfCheckpoint | None = None,
    progress: FileProgress | None = None,
) -> table_pb2.DataFragment:
    """One data file of ``added`` columns computed from the ``needed`` columns of every physical
    row of ``frag`` (deleted rows included, so offsets line up); returns ``frag`` with that file
    added (nothing committed). If this fails, the file is deleted. With a ``checkpoint``, each
    computed range of ``batch_size`` rows is saved there, and a saved one is read, not computed.
    ``progress`` hears of the file (see ``FileProgress``)."""
    target = added.to_arrow()
    source_schema = pa.schema([f.to_arrow() for f in needed])
    size = batch_size or DEFAULT_BATCH_SIZE
    reader = snapshot.fragment_reader(frag)

    def computed() -> Iterator[pa.RecordBatch]:
        for index, start in enumerate(range(0, frag.physical_rows, size)):
            stop = min(start + size, frag.physical_rows)
            info = BatchInfo(frag.id, index)
            saved = checkpoint.get_batch(info) if checkpoint is not None else None
            if saved is not None:
                yield from _saved_batch(saved, stop - start, target, snapshot.uri).to_batches()
                continue
            rows = pa.Table.from_arrays(reader.read_range(needed, start, stop), schema=source_schema)
            out = conform(compute(rows), target, "new column").combine_chunks()
            if checkpoint is not None:
                checkpoint.insert_batch(info, out.to_batches()[0])
            yield from out.to_batches()

    try:  # write_fragments removes a file it fails to finish
        files = write_fragments(
            snapshot.storage,
            snapshot.uri,
            computed(),
            target,
            added,
            parse_version(snapshot.data_storage_version),
            _ALL_ROWS,
            _ALL_ROWS,
            {},
            progress,
        )
    finally:
        reader.close()
    copy = table_pb2.DataFragment()
    copy.CopyFrom(frag)
    for made in files:
        copy.files.extend(made.files)
    return copy


def added_files(snapshot: Snapshot, updated: list[table_pb2.DataFragment]) -> list[table_pb2.DataFragment]:
    """The new data files of ``updated`` (fragments of ``snapshot`` with columns added), as
    fragments, for ``delete_fragment_files``."""
    before = {f.id: len(f.files) for f in snapshot.manifest.fragments}
    out = []
    for frag in updated:
        only = table_pb2.DataFragment()
        only.files.extend(frag.files[before.get(frag.id, 0) :])
        out.append(only)
    return out


def commit_columns(
    snapshot: Snapshot,
    updated: list[table_pb2.DataFragment],
    schema_fields: list,
    keep: Collection[int] = (),
) -> int:
    """One Merge: every fragment of ``snapshot`` with its new file, the schema ``schema_fields``.
    If the commit fails before it is published, the new files are deleted, except those of the
    fragments ``keep`` names (a UDF checkpoint points at them, to resume with)."""
    op = Merge(
        fragments=updated,
        schema_fields=schema_fields,
        schema_metadata=snapshot.lance_schema.metadata,
        read_fields=snapshot.lance_schema.to_protos(),
    )
    return snapshot.commit(op, lambda: _delete_added(snapshot, updated, keep))


def _delete_added(snapshot: Snapshot, updated: list[table_pb2.DataFragment], keep: Collection[int]) -> None:
    dropped = [f for f in updated if f.id not in keep]
    delete_fragment_files(snapshot.storage, snapshot.uri, added_files(snapshot, dropped))


def _saved_batch(saved: pa.RecordBatch, rows: int, target: pa.Schema, uri: str) -> pa.Table:
    """A checkpoint's batch, checked to be the range it stands for (a resume must use the same
    ``batch_size``, else the saved results would land on the wrong rows)."""
    if saved.num_rows != rows or not saved.schema.equals(target):
        raise InvalidUserInputError(
            f"add_columns on {uri}: the UDF checkpoint holds a batch of {saved.num_rows} rows "
            f"{saved.schema} where {rows} rows {target} are computed; resume with the batch_size "
            "and UDF of the failed run, or delete the checkpoint file"
        )
    return pa.Table.from_batches([saved])


def _saved_fragment(
    checkpoint: UdfCheckpoint, snapshot: Snapshot, frag: table_pb2.DataFragment, added: LanceSchema
) -> table_pb2.DataFragment | None:
    """``frag`` with the new data file a checkpoint saved for it, or None if it saved none. The
    saved fragment must be ``frag`` with one more file of the ``added`` fields (else the checkpoint
    belongs to another dataset, version or UDF); the deletion file is ``frag``'s own."""
    text = checkpoint.get_fragment(frag.id)
    if text is None:
        return None
    saved = table_pb2.DataFragment()
    try:
        entry = json.loads(text)
        json_format.ParseDict(entry["fragment"], saved)
        fields = entry["fields"]
    except (ValueError, KeyError, TypeError, json_format.ParseError):
        raise InvalidUserInputError(
            f"add_columns on {snapshot.uri}: the UDF checkpoint's fragment {frag.id} was not written by "
            "lance_fw; delete the checkpoint file"
        ) from None
    old = [f.path for f in frag.files]
    new = saved.files[len(frag.files) :]
    if (
        [f.path for f in saved.files[: len(old)]] != old
        or saved.physical_rows != frag.physical_rows
        or not new
        or fields != _fields_text(added)
    ):
        raise InvalidUserInputError(
            f"add_columns on {snapshot.uri}: the UDF checkpoint's fragment {frag.id} does not extend "
            "this version's fragment with the planned columns; it belongs to another run. Delete the "
            "checkpoint file"
        )
    copy = table_pb2.DataFragment()
    copy.CopyFrom(frag)
    copy.files.extend(new)
    return copy


def _fields_text(added: LanceSchema) -> list[str]:
    """The new fields (ids, names, types) as a checkpoint records them with each fragment: a
    saved file is reused only for the same columns."""
    return [f.SerializeToString(deterministic=True).hex() for f in added.to_protos()]


def _checkpoint_entry(saved: table_pb2.DataFragment, added: LanceSchema) -> str:
    """A finished fragment as a checkpoint keeps it: its message and the fields its new file holds."""
    return json.dumps({"fragment": json_format.MessageToDict(saved), "fields": _fields_text(added)})


def _write_columns(
    snapshot: Snapshot,
    needed: list[LanceField],
    added: LanceSchema,
    compute: Callable[[pa.Table], pa.Table],
    schema_fields: list[file_pb2.Field],
    batch_size: int | None = None,
    checkpoint: UdfCheckpoint | None = None,
) -> int:
    """Per fragment, one data file of ``added`` columns computed (``compute(table) -> table``) from
    the ``needed`` columns of every physical row; then one Merge with ``schema_fields``. With a
    ``checkpoint``, each finished fragment is saved there and its file kept if a later one fails;
    a fragment saved by an earlier run is taken from it, not computed again."""
    updated: list[table_pb2.DataFragment] = []
    kept: set[int] = set()  # fragments the checkpoint holds: their files survive a failure
    with undo_unless_published(lambda: _delete_added(snapshot, updated, kept)):
        for frag in snapshot.manifest.fragments:
            saved = _saved_fragment(checkpoint, snapshot, frag, added) if checkpoint is not None else None
            if saved is None:
                saved = write_fragment_columns(snapshot, frag, needed, added, compute, batch_size, checkpoint)
                if checkpoint is not None:
                    checkpoint.insert_fragment(frag.id, _checkpoint_entry(saved, added))
            updated.append(saved)
            if checkpoint is not None:
                kept.add(frag.id)
    return commit_columns(snapshot, updated, schema_fields, kept)


def alter_columns(snapshot: Snapshot, *alterations: dict) -> int:
    """pylance's ``alter_columns({"path": "a.b", "name": ..., "nullable": ..., "data_type": ...})``:
    renames and nullability are metadata only (Project); a new ``data_type`` (top-level columns)
    writes the cast column as a new field in new files (Merge), leaving the old data in place."""
    schema = LanceSchema.from_protos(
        snapshot.lance_schema.to_protos(), snapshot.lance_schema.metadata
    )  # a copy to edit
    casts: dict[str, pa.DataType] = {}
    for change in alterations:
        if not isinstance(change, dict) or "path" not in change:
            raise InvalidArgumentError(
                f"alter_columns: each alteration is a dict with a 'path', got {change!r}"
            )
        path = change["path"]
        try:
            target = schema.field(path)
        except SchemaError:
            raise InvalidArgumentError(
                f"alter_columns: column {path!r} does not exist in {snapshot.uri}"
            ) from None
        siblings = _siblings(schema, path)
        if "name" in change and change["name"] != target.name:
            if any(f.name == change["name"] for f in siblings):
                raise InvalidArgumentError(
                    f"alter_columns: cannot rename {path!r} to {change['name']!r}: that name is taken"
                )
            target.name = change["name"]
        if "nullable" in change:
            null_filter = f"`{path}` IS NULL" if "." not in path else f"{path} IS NULL"
            if not change["nullable"] and LanceScanner(snapshot, columns=[], filter=null_filter).count_rows():
                raise InvalidArgumentError(
                    f"alter_columns: {path!r} holds nulls; it cannot become non-nullable"
                )
            target.nullable = bool(change["nullable"])
        if change.get("data_type") is not None:
            if "." in path:
                raise InvalidArgumentError(
                    "alter_columns: changing the type of a nested field is not supported yet"
                )
            casts[target.name] = change["data_type"]
    check_names(schema.fields)  # a rename may not make a name pylance cannot scan
    _refuse_indexed_casts(snapshot, casts)
    if not casts:
        op = Project(
            schema_fields=schema.to_protos(),
            schema_metadata=schema.metadata,
            read_fields=snapshot.lance_schema.to_protos(),
        )
        return snapshot.commit(op, lambda: None)  # metadata only: no file to undo
    old = {f.name: f for f in schema.fields}
    added = LanceSchema.from_arrow(
        pa.schema([pa.field(n, t, old[n].nullable) for n, t in casts.items()]),
        first_id=snapshot.max_field_id + 1,
    )
    replaced = {f.name: f for f in added.fields}
    final = LanceSchema([replaced.get(f.name, f) for f in schema.fields], schema.metadata)
    sources = {
        f.name: snapshot.lance_schema.fields[i] for i, f in enumerate(schema.fields)
    }  # old names, old ids
    needed = [sources[n] for n in casts]

    def cast(table: pa.Table) -> pa.Table:
        try:
            return pa.table({n: table.column(sources[n].name).cast(t) for n, t in casts.items()})
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"alter_columns: cannot cast {list(casts)}: {exc}") from None

    return _write_columns(snapshot, needed, added, cast, final.to_protos())


def _siblings(schema: LanceSchema, path: str) -> list:
    head, _, _ = path.rpartition(".")
    return schema.field(head).children if head else schema.fields


def drop_columns(snapshot: Snapshot, columns: list[str]) -> int:
    """Remove top-level columns from the schema (metadata only). Returns the new version."""
    if isinstance(columns, str):
        columns = [columns]
    missing = [c for c in columns if c not in snapshot.schema.names]
    if missing:
        raise SchemaError(
            f"drop_columns: no column(s) {missing} in {snapshot.uri}; it has {snapshot.schema.names}"
        )
    kept = LanceSchema(
        [f for f in snapshot.lance_schema.fields if f.name not in columns], snapshot.lance_schema.metadata
    )
    if not kept.fields:
        raise InvalidArgumentError("drop_columns: a dataset must keep at least one column")
    op = Project(
        schema_fields=kept.to_protos(),
        schema_metadata=kept.metadata,
        read_fields=snapshot.lance_schema.to_protos(),
    )
    return snapshot.commit(op, lambda: None)  # metadata only: no file to undo


def _refuse_indexed_casts(snapshot: Snapshot, casts: dict) -> None:
    """pylance 14 refuses to cast an indexed column (the cast rewrites the data the index points
    into); lance_fw too, with the same advice, rather than keeping an index on a field id the new
    schema no longer has."""
    if not casts or snapshot.index_section is None:
        return
    ids = {snapshot.lance_schema.field(name).id: name for name in casts}
    attached = sorted({m.name for m in snapshot.index_section.indices if set(m.fields) & set(ids)})
    if attached:
        raise InvalidUserInputError(
            f"alter_columns: cannot cast column(s) {sorted(casts)} to a new type: they have "
            f"{len(attached)} index(es) attached: {attached}. Drop them with drop_index() before "
            "altering, then recreate them after the cast"
        )
