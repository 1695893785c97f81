"""Write planning shared by every writer: data files from batches (``write_fragments``), a picklable
``WritePlan`` (schema and mode checks against the latest version, then files, then one commit).

``write_dataset`` (``api/write.py``), Spark, merge_insert/update, compaction and add_columns all
write through here, so it lives in the table layer they share (nothing here imports ``api/``)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.dataset as pads

from lance_fw._proto import table_pb2
from lance_fw.errors import (
    DatasetExistsError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    SchemaError,
    UnsupportedFeatureError,
)
from lance_fw.file.legacy_v0_1 import LEGACY_VERSION
from lance_fw.file.legacy_v0_1_write import LegacyFileWriter
from lance_fw.file.version import SUPPORTED_WRITE, from_footer, parse_version, requested_version, version_name
from lance_fw.file.writer import (
    ALLOW_PLUGIN_ENCODINGS,
    MAX_BUFFERED_BYTES,
    MAX_PAGE_BYTES,
    LanceFileWriter,
    WrittenFile,
    plugin_encodings,
)
from lance_fw.io.storage import Storage, join_uri, resolve_storage
from lance_fw.options import CommitLock
from lance_fw.schema import BLOB_ENCODING_KEY, LanceSchema, conform, storage_batch
from lance_fw.table.blob_v2_write import BlobV2FileWriter, check_blob_v2, has_blob_v2, write_schema
from lance_fw.table.flags import recorded_plugins
from lance_fw.table.manifest import latest_version, read_manifest
from lance_fw.table.paths import DATA_DIR, DATA_FILE_SUFFIX
from lance_fw.table.transaction import Append, Operation, Overwrite, commit, undo_unless_published

MODES = ("create", "append", "overwrite")
DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
#: The transaction property pylance stores ``commit_message`` under.
COMMIT_MESSAGE_KEY = "__lance_commit_message"


class FileProgress(Protocol):
    """Told about each data file ``write_fragments`` writes (pylance's ``progress=`` callbacks):
    ``opened`` with the file's name before its first row, ``finished`` with its fragment."""

    def opened(self, name: str) -> None: ...

    def finished(self, fragment: table_pb2.DataFragment) -> None: ...


def _data_file_name() -> str:
    """pylance's style: the first 3 uuid bytes in binary, then 26 hex digits."""
    raw = uuid.uuid4().bytes
    return "".join(f"{b:08b}" for b in raw[:3]) + raw[3:].hex() + DATA_FILE_SUFFIX


def as_reader(data: Any, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Accept what pylance accepts: Table, RecordBatch, RecordBatchReader, pandas and polars
    DataFrames, pyarrow and Lance datasets, pyarrow scanners, a dict of columns, a list of row
    dicts, or an iterable of batches.

    Raises:
        InvalidArgumentTypeError: data of another type (a ``TypeError``, as pylance raises), or an
            iterable that yields something other than record batches.
        InvalidArgumentError: an empty iterable without ``schema``.
    """
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    module, kind = type(data).__module__, type(data).__name__
    if module.startswith("pandas"):
        table = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
        return table.schema.remove_metadata() if schema is None else table.schema, iter(table.to_batches())
    if module.startswith("polars") and kind == "DataFrame":
        return as_reader(data.to_arrow(), schema)
    if isinstance(data, pads.Scanner):
        return data.projected_schema, iter(data.to_batches())
    if hasattr(data, "to_batches") and hasattr(data, "schema"):  # pyarrow / lance_fw datasets
        return data.schema, iter(data.to_batches())
    if isinstance(data, dict):
        batch = pa.RecordBatch.from_pydict(data, schema=schema)
        return batch.schema, iter([batch])
    if isinstance(data, list) and data and isinstance(data[0], dict):
        batch = pa.RecordBatch.from_pylist(data, schema=schema)
        return batch.schema, iter([batch])
    if (
        module.startswith("datasets")
        or module.startswith("pydantic")
        or (isinstance(data, list) and data and type(data[0]).__module__.startswith("pydantic"))
    ):
        raise UnsupportedFeatureError(
            f"writing {module}.{kind} data (HuggingFace / pydantic) is not supported"
        )
    if isinstance(data, Iterable) and not isinstance(data, str | bytes):
        it = _batches_only(iter(data))
        if schema is None:
            try:
                first = next(it)
            except StopIteration:
                raise InvalidArgumentError("an empty iterable of batches needs schema=") from None
            return first.schema, _chain(first, it)
        return schema, it
    raise InvalidArgumentTypeError(f"cannot write data of type {module}.{kind}")


def _batches_only(items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    for item in items:
        if not isinstance(item, pa.RecordBatch | pa.Table):
            raise InvalidArgumentTypeError(
                f"an iterable of data must yield record batches, got {type(item).__name__}"
            )
        yield item


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    if isinstance(batch, pa.Table):
        batch = (
            batch.combine_chunks().to_batches()[0]
            if batch.num_rows
            else pa.RecordBatch.from_pylist([], target)
        )
    return storage_batch(conform(batch, target, "write"))  # encoders write extension columns' storage


def _check_append_schema(existing: pa.Schema, incoming: pa.Schema, allow_subset: bool = False) -> None:
    """Appended data holds the dataset's columns, in any order, or (a user's append, as in pylance)
    a subset whose missing columns are nullable: those read as nulls in the new fragments."""
    extra = [n for n in incoming.names if n not in existing.names]
    missing = [f.name for f in existing if f.name not in incoming.names]
    if extra or (missing and not allow_subset) or any(not existing.field(n).nullable for n in missing):
        raise SchemaError(
            f"append schema does not match the dataset: dataset has columns {existing.names}, "
            f"data has {incoming.names} (missing {missing}, unexpected {extra}; the dataset may have "
            "changed since it was read)"
        )
    for other in incoming:
        f = existing.field(other.name)
        if not _same_kind(other.type, f.type):
            raise SchemaError(
                f"append schema does not match the dataset: column {f.name!r} is {f.type} in the "
                f"dataset but {other.type} in the data"
            )


_SMALL = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal up to 32/64-bit offsets (pandas hands over large_string for a string column)."""

    def norm(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_list(t):
            return pa.list_(t.value_field.with_type(norm(t.value_type)))
        return _SMALL.get(t, t)

    return a.equals(b) or norm(a).equals(norm(b))


def write_fragments(
    storage: Storage,
    uri: str,
    batches: Iterator[pa.RecordBatch],
    arrow_schema: pa.Schema,
    schema: LanceSchema,
    version: tuple[int, int],
    max_rows_per_file: int,
    max_bytes_per_file: int,
    options: dict,
    progress: FileProgress | None = None,
) -> list[table_pb2.DataFragment]:
    """Write batches into data files that roll at ``max_rows_per_file``; return fragments (ids unset).
    ``progress`` hears of each file opened and finished.

    On failure every file written so far is deleted, so a failed write leaves no trace.
    """
    fragments: list[table_pb2.DataFragment] = []
    written: list[str] = []
    writer: LanceFileWriter | LegacyFileWriter | None = None
    writer_class = LegacyFileWriter if version == LEGACY_VERSION else LanceFileWriter
    if has_blob_v2(schema):  # blob v2 values: bytes inline or in sidecars, descriptors as the column
        writer_class = BlobV2FileWriter

    def close_writer() -> None:
        nonlocal writer
        if writer is not None:
            done = writer.finish()
            fragments.append(_fragment_of(done))
            writer = None
            if progress is not None:
                progress.finished(fragments[-1])

    try:
        for batch in batches:
            batch = _conform(batch, arrow_schema)
            start = 0
            while start < batch.num_rows:
                if writer is None:
                    name = _data_file_name()
                    path = join_uri(uri, DATA_DIR, name)
                    written.append(path)
                    if progress is not None:
                        progress.opened(name)
                    writer = writer_class(storage, path, schema, version, options)
                    writer.name = name  # type: ignore[union-attr]
                room = max_rows_per_file - writer._rows
                piece = batch.slice(start, room)
                writer.write_batch(piece)
                start += piece.num_rows
                if (
                    writer._rows >= max_rows_per_file
                    or _file_bytes(writer, max_bytes_per_file) >= max_bytes_per_file
                ):
                    close_writer()
        close_writer()
    except BaseException:
        if writer is not None:
            writer.abort()
        for path in written:
            storage.delete(path)
        raise
    return fragments


def _file_bytes(writer: LanceFileWriter | LegacyFileWriter, limit: int) -> int:
    """Bytes of pages written to the file, pages cut from this batch included. pylance's rule for
    ``max_bytes_per_file``: the file rolls after the batch in which written pages pass the limit
    (data still buffered in columns does not count), so a file overshoots by at most that."""
    return writer.written_bytes(limit)


def _fragment_of(done: WrittenFile) -> table_pb2.DataFragment:
    frag = table_pb2.DataFragment(physical_rows=done.num_rows)
    data_file = frag.files.add()
    data_file.path = done.path.rsplit("/", 1)[-1]
    data_file.fields.extend(done.fields)
    data_file.column_indices.extend(done.column_indices)
    data_file.file_major_version, data_file.file_minor_version = done.version
    data_file.file_size_bytes = done.size_bytes
    return frag


@dataclass
class WritePlan:
    """A write resolved once against the dataset's latest version: picklable, so a distributed
    writer (Spark) can plan on the driver, write fragments in tasks and commit on the driver."""

    uri: str
    mode: str  # create | append | overwrite (append to nothing is create)
    arrow_schema: pa.Schema  # every batch is conformed to this schema
    lance_schema: LanceSchema
    version: tuple[int, int]
    read_version: int
    storage_options: dict | None = None
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    options: dict = dc_field(default_factory=dict)
    dataset_fields: list | None = None  # an append of some columns: the whole schema it was planned on
    #: plugins (name -> distribution) whose non-pylance-readable encodings the files use (allowed)
    plugin_encodings: dict = dc_field(default_factory=dict)
    #: pylance's ``enable_stable_row_ids`` for a dataset the write creates (``Overwrite``)
    stable_row_ids: bool = False

    def storage(self) -> Storage:
        return resolve_storage(self.uri, self.storage_options)

    def planned_fields(self) -> list:
        """The dataset schema (protobuf fields) this plan's files were written for: what a commit of
        them checks the latest version still has."""
        return self.dataset_fields or self.lance_schema.to_protos()

    def write(self, data: Any, progress: FileProgress | None = None) -> list[table_pb2.DataFragment]:
        """Write ``data`` (anything ``write_dataset`` accepts) into new data files; commit nothing.
        ``progress`` hears of each file (see ``FileProgress``)."""
        _, batches = as_reader(data, self.arrow_schema)
        options = self.options
        if isinstance(data, (pa.Table, pa.RecordBatch)) and MAX_BUFFERED_BYTES not in options:
            # the caller holds every buffer of an in-memory table: copying the writer's pending
            # slices out of its batches would free nothing (1M-row numeric table: 20 MiB, 17 ms)
            options = {**options, MAX_BUFFERED_BYTES: sys.maxsize}
        return write_fragments(
            self.storage(),
            self.uri,
            batches,
            self.arrow_schema,
            self.lance_schema,
            self.version,
            self.max_rows_per_file,
            self.max_bytes_per_file,
            options,
            progress,
        )

    def commit(
        self,
        fragments: list[table_pb2.DataFragment],
        properties: dict | None = None,
        commit_lock: CommitLock | None = None,
    ) -> int:
        """Commit ``fragments`` as one new version (under pylance's ``commit_lock`` if given). If the
        commit fails, their files are deleted."""
        storage = self.storage()
        properties = dict(properties or {})
        op: Operation
        if self.mode == "append":
            op = Append(
                fragments=fragments,
                properties=properties,
                schema_fields=self.planned_fields(),
                plugin_encodings=dict(self.plugin_encodings),
            )
        else:
            op = Overwrite(
                fragments=fragments,
                properties=properties,
                schema_fields=self.lance_schema.to_protos(),
                schema_metadata=self.lance_schema.metadata,
                data_format_version=version_name(self.version),
                create_only=(self.mode == "create"),
                plugin_encodings=dict(self.plugin_encodings),
                stable_row_ids=self.stable_row_ids,
            )
        with undo_unless_published(lambda: delete_fragment_files(storage, self.uri, fragments)):
            return commit(storage, self.uri, op, read_version=self.read_version, commit_lock=commit_lock)


def delete_fragment_files(storage: Storage, uri: str, fragments: list[table_pb2.DataFragment]) -> None:
    """Best-effort removal of files no manifest references (a failed or duplicate commit)."""
    for frag in fragments:
        for data_file in frag.files:
            storage.delete(join_uri(uri, DATA_DIR, data_file.path))


def plan_write(
    uri: str,
    schema: pa.Schema,
    mode: str = "create",
    data_storage_version: str | None = None,
    storage_options: dict | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    max_page_bytes: int | None = None,
    allow_subset: bool = False,
    allow_plugin_encodings: bool | None = None,
    keep_dataset_version: bool = False,
) -> WritePlan:
    """Check ``mode`` and ``schema`` against the dataset at ``uri`` and fix what the write produces.
    ``allow_subset``: an append may leave out nullable columns (user appends only: rows that
    update/merge_insert/compaction rewrite must carry every column, or values would be lost).
    ``allow_plugin_encodings``: True lets columns be written by encoders pylance cannot read (the
    manifest then records their plugins); False refuses them; None (rewrites of existing rows:
    merge_insert, update, compaction) allows exactly the plugins the dataset already records, so a
    dataset keeps its encodings but a pylance-readable one never silently loses that.
    ``keep_dataset_version``: an overwrite naming no ``data_storage_version`` writes the files at the
    existing dataset's version, as pylance's ``write_dataset`` and ``write_fragments`` do (its
    ``LanceFragment.create`` does not: it writes the default version whatever the dataset holds)."""
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    if max_rows_per_file <= 0:
        raise InvalidArgumentError(f"max_rows_per_file must be positive, got {max_rows_per_file}")
    if allow_plugin_encodings is not None and not isinstance(allow_plugin_encodings, bool):
        raise InvalidArgumentError(
            f"{ALLOW_PLUGIN_ENCODINGS} must be True or False, got {allow_plugin_encodings!r}"
        )
    uri = os.fspath(uri).rstrip("/") if not isinstance(uri, str) else uri.rstrip("/")
    storage = resolve_storage(uri, storage_options)
    latest = latest_version(storage, uri)
    base = read_manifest(storage, latest.path)[0] if latest is not None else None
    if mode == "create" and base is not None:
        raise DatasetExistsError(f"{uri}: Dataset already exists; use mode='append' or 'overwrite'")
    if mode == "append" and base is None:
        mode = "create"  # pylance creates the dataset when appending to nothing
    dataset_fields = None
    if mode == "append" and base is not None:  # (an append to nothing became a create above)
        lance_schema = LanceSchema.from_protos(base.fields, base.schema_metadata)
        refuse_blob_columns(lance_schema, uri, allow_blob_v2=True)
        _check_append_schema(
            write_schema(lance_schema, lance_schema.to_arrow(), schema, uri), schema, allow_subset
        )
        if len(schema.names) < len(lance_schema.fields):  # the new files hold only the given columns
            dataset_fields = lance_schema.to_protos()
            lance_schema = LanceSchema(
                [f for f in lance_schema.fields if f.name in schema.names], lance_schema.metadata
            )
        target = write_schema(lance_schema, lance_schema.to_arrow(), schema, uri)
        dataset_version = base.data_format.version or version_name(LEGACY_VERSION)
        if data_storage_version is not None and requested_version(data_storage_version) != parse_version(
            dataset_version
        ):
            raise InvalidArgumentError(
                f"data_storage_version={data_storage_version!r} differs from the dataset's {dataset_version}; "
                "a dataset cannot mix file versions"
            )
        version = parse_version(dataset_version)
    else:
        if keep_dataset_version and data_storage_version is None and base is not None:
            # a 2.0 dataset stays 2.0, a 0.1 one 0.1: only a new dataset or an explicit version
            # gets another
            version = parse_version(base.data_format.version or version_name(LEGACY_VERSION))
        else:
            version = requested_version(data_storage_version)
        lance_schema = LanceSchema.from_arrow(schema)
        refuse_blob_columns(lance_schema, uri, allow_blob_v2=True)
        target = write_schema(lance_schema, lance_schema.to_arrow(), schema, uri)
        if schema.metadata:
            target = target.with_metadata(schema.metadata)
    check_blob_v2(lance_schema, version, uri)
    options: dict = {MAX_PAGE_BYTES: max_page_bytes} if max_page_bytes else {}
    plugins = _plugin_encodings(uri, base, lance_schema, version, options, allow_plugin_encodings)
    if plugins:
        options[ALLOW_PLUGIN_ENCODINGS] = True  # checked here: the writer of each file may use them
    return WritePlan(
        uri,
        mode,
        target,
        lance_schema,
        version,
        base.version if base is not None else 0,
        storage_options,
        max_rows_per_file,
        max_bytes_per_file,
        options,
        dataset_fields,
        plugins,
    )


def refuse_blob_columns(lance_schema: LanceSchema, uri: str, allow_blob_v2: bool = False) -> None:
    """Refuse to write blob columns (``lance-encoding:blob`` metadata, or 2.2 blob descriptors
    unless ``allow_blob_v2``: new rows, which ``blob_v2_write`` stores): pylance stores their bytes
    apart from the column (a blob layout on 2.1, descriptors plus sidecar files on 2.2), which
    lance_fw does not encode for rewritten rows; plain binary under that metadata is a dataset
    pylance cannot read."""
    for f in lance_schema.walk():
        if (f.is_blob_v2 and not allow_blob_v2) or BLOB_ENCODING_KEY in f.metadata:
            raise UnsupportedFeatureError(
                f"{uri}: column {f.name!r} is a blob column ({BLOB_ENCODING_KEY}); lance_fw cannot write "
                "blob columns: write it with pylance (lance.write_dataset), or drop the "
                f"{BLOB_ENCODING_KEY} field metadata to store plain binary"
            )


def _plugin_encodings(
    uri: str,
    base: table_pb2.Manifest | None,
    lance_schema: LanceSchema,
    version: tuple[int, int],
    options: dict,
    allow: bool | None,
) -> dict[str, str]:
    """The plugins whose non-pylance-readable encodings the planned files would use, once allowed
    (see ``plan_write``); raises ``PluginEncodingNotAllowedError`` before anything is written."""
    if version == LEGACY_VERSION:  # 0.1 files have no encoders to choose (legacy_v0_1_write)
        return {}
    if allow is None:
        recorded = recorded_plugins(uri, base.config) if base is not None else {}
        used = plugin_encodings(uri, lance_schema, version, options, allowed=True)
        if set(used) <= set(recorded):
            return used
        allow = False
    return plugin_encodings(uri, lance_schema, version, options, allowed=bool(allow))


def committed_plugin_encodings(
    storage: Storage,
    uri: str,
    fragments: list[table_pb2.DataFragment],
    lance_schema: LanceSchema | None = None,
) -> dict[str, str]:
    """The plugins to record for fragments written by a separate step (pylance's ``write_fragments``
    then ``commit``): those whose non-pylance-readable encoders write the fields of the fragments'
    files at their version (``lance_schema``: the new schema of an overwrite, else the dataset's).
    Their writer refused such encoders unless allowed, so this names what the files may hold; it
    errs on the side of recording (pylance then refuses at open) rather than of a silent failure."""
    if lance_schema is None:
        latest = latest_version(storage, uri)
        if latest is None:
            return {}
        base = read_manifest(storage, latest.path)[0]
        lance_schema = LanceSchema.from_protos(base.fields, base.schema_metadata)
    used: dict[str, str] = {}
    for version, ids in _files_by_version(fragments).items():
        fields = [f for f in lance_schema.fields if ids & {c.id for c in f.walk()}]
        if fields:
            used.update(
                plugin_encodings(uri, LanceSchema(fields, lance_schema.metadata), version, {}, allowed=True)
            )
    return used


def _files_by_version(fragments: list[table_pb2.DataFragment]) -> dict[tuple[int, int], set[int]]:
    out: dict[tuple[int, int], set[int]] = {}
    for frag in fragments:
        for data_file in frag.files:
            version = from_footer(data_file.file_major_version, data_file.file_minor_version)
            if version_name(version) in SUPPORTED_WRITE:  # what lance_fw could have written
                out.setdefault(version, set()).update(data_file.fields)
    return out
