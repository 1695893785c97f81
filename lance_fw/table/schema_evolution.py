"""``add_columns`` and ``drop_columns``: change the schema without rewriting existing data.

Adding columns from SQL expressions writes, per fragment, one new data file holding only the new
columns for every *physical* row (deleted rows included, so row offsets line up), and commits a
``Merge``: each fragment gains that file, the schema gains the fields (ids after the current
maximum). Adding bare Arrow fields writes nothing: fragments without a file for a field read it as
nulls. Dropping columns commits a ``Project``: the data stays in the files, unreferenced.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.api.write import delete_fragment_files, write_fragments
from lance_fw.errors import InvalidArgumentError, SchemaError
from lance_fw.file.version import parse_version
from lance_fw.schema import LanceSchema, conform
from lance_fw.table.fragment import DEFAULT_BATCH_SIZE, FragmentReader
from lance_fw.table.transaction import Merge, Project, commit

_ALL_ROWS = 2**62  # one data file per fragment: never roll over


def _new_fields(ds, arrow_fields: list[pa.Field]) -> LanceSchema:
    taken = set(ds.schema.names)
    clash = [f.name for f in arrow_fields if f.name in taken]
    if clash:
        raise InvalidArgumentError(f"add_columns: column(s) {clash} already exist in {ds.uri}")
    return LanceSchema.from_arrow(pa.schema(arrow_fields), first_id=ds.max_field_id + 1)


def _stored_fields(projection, transforms: dict[str, str], schema: pa.Schema) -> list[pa.Field]:
    """Nullable, except constants that are not NULL (pylance stores ``{"c": "'x'"}`` as not null)."""
    import sqlglot
    from sqlglot import exp

    probe = pa.table({c: pa.nulls(1, schema.field(c).type) for c in (projection.columns or schema.names[:1])})
    values = projection.apply(probe)
    out = []
    for name in projection.names:
        constant = sqlglot.parse_one(transforms[name], read="spark").find(exp.Column) is None
        out.append(projection.schema.field(name).with_nullable(not constant or values.column(name).null_count > 0))
    return out


def _commit_schema(ds, added: LanceSchema, fragments) -> int:
    fields = ds.lance_schema.to_protos() + added.to_protos()
    op = Merge(fragments=fragments, schema_fields=fields, schema_metadata=ds.lance_schema.metadata)
    return commit(ds._storage, ds.uri, op, read_version=ds.version)


def add_columns(ds, transforms, read_columns: list[str] | None = None,
                batch_size: int | None = None) -> int:
    """``{"name": "SQL expression"}``, or ``pa.Field`` / list of fields / ``pa.Schema`` (all-null
    columns, no data written). Returns the new version."""
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, (pa.Schema, list)):
        if not all(isinstance(f, pa.Field) for f in transforms):
            raise InvalidArgumentError("add_columns: a list must hold pyarrow fields")
        return _commit_schema(ds, _new_fields(ds, [f.with_nullable(True) for f in transforms]), None)
    if not isinstance(transforms, dict) or not transforms:
        raise InvalidArgumentError("add_columns takes {name: SQL expression}, a pyarrow field, fields or schema")
    from lance_fw.query.projection import Projection

    transforms = {str(k): v for k, v in transforms.items()}
    projection = Projection(transforms, ds.schema)
    added = _new_fields(ds, _stored_fields(projection, transforms, ds.schema))
    target = added.to_arrow()
    # a constant expression reads no column, but still needs one to know how many rows there are
    needed = [ds.lance_schema.field(n) for n in (read_columns or projection.columns or ds.schema.names[:1])]
    source_schema = pa.schema([f.to_arrow() for f in needed])
    version = parse_version(ds.data_storage_version)
    size = batch_size or DEFAULT_BATCH_SIZE
    updated: list[table_pb2.DataFragment] = []
    written: list[table_pb2.DataFragment] = []
    try:
        for frag in ds._manifest.fragments:
            reader = FragmentReader(ds._storage, ds.uri, frag, ds.lance_schema)

            def computed(reader=reader, frag=frag) -> Iterator[pa.RecordBatch]:
                for start in range(0, frag.physical_rows, size):
                    stop = min(start + size, frag.physical_rows)
                    rows = pa.Table.from_arrays(reader.read_range(needed, start, stop), schema=source_schema)
                    yield from conform(projection.apply(rows), target, "add_columns").to_batches()
            try:
                files = write_fragments(ds._storage, ds.uri, computed(), target, added, version, _ALL_ROWS,
                                        _ALL_ROWS, {})
            finally:
                reader.close()
            written.extend(files)
            copy = table_pb2.DataFragment()
            copy.CopyFrom(frag)
            for made in files:
                copy.files.extend(made.files)
            updated.append(copy)
        return _commit_schema(ds, added, updated)
    except BaseException:
        delete_fragment_files(ds._storage, ds.uri, written)
        raise


def drop_columns(ds, columns: list[str]) -> int:
    """Remove top-level columns from the schema (metadata only). Returns the new version."""
    if isinstance(columns, str):
        columns = [columns]
    missing = [c for c in columns if c not in ds.schema.names]
    if missing:
        raise SchemaError(f"drop_columns: no column(s) {missing} in {ds.uri}; it has {ds.schema.names}")
    kept = LanceSchema([f for f in ds.lance_schema.fields if f.name not in columns], ds.lance_schema.metadata)
    if not kept.fields:
        raise InvalidArgumentError("drop_columns: a dataset must keep at least one column")
    op = Project(schema_fields=kept.to_protos(), schema_metadata=kept.metadata)
    return commit(ds._storage, ds.uri, op, read_version=ds.version)
