"""Catalog tables: ``CREATE TABLE t USING lance LOCATION '<dataset>'`` (or ``OPTIONS (path ...)``).

Spark 4.3 hands a Python data source a catalog table's LOCATION and OPTIONS only once: to
``schema()`` when the table is created, mixed with catalog keys (``owner``, ``provider``,
``location`` ...). The readers and writers of later ``SELECT`` / ``INSERT`` statements get only the
statement's own options (``WITH (...)``), usually none, but they do get the schema the catalog
stored, field metadata included. So ``schema()`` records the dataset's location (and the options
given at CREATE TABLE) in every column's metadata under ``TABLE_KEY``, and ``reader()`` / ``writer()``
take it from there.

``ALTER TABLE ... ADD / DROP / RENAME COLUMN`` changes only Spark's catalog (no Python call); the
recorded column list then no longer matches the catalog's schema, and the statement that next uses
the table fails naming the lance_fw call that changes the dataset instead of reading or writing
something else. ``CREATE TABLE t (cols) USING lance``, CTAS and ``saveAsTable`` never call
``schema()``, so their tables carry no location: using them fails with ``NO_LOCATION``. So do
inserts whose columns Spark passes through unchanged (same names and types: ``INSERT ... SELECT *``,
``insertInto``, ``writeTo``, ``writeStream.toTable``): Spark then hands the writer the source's schema,
not the table's, and the location is lost with the table's metadata.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lance_fw.errors import InvalidArgumentError
from lance_fw.spark.options import PATH, STORAGE_OPTIONS, URI, is_storage_option

if TYPE_CHECKING:  # pyspark is imported where it is used
    from pyspark.sql.types import StructType

#: Field metadata key holding ``{"options": {...}, "columns": [...]}`` of a catalog table.
TABLE_KEY = "lance_fw.spark.table"
#: Keys Spark's catalog adds to the options ``schema()`` gets for ``CREATE TABLE``; ``provider``
#: is always among them.
CATALOG_KEYS = ("owner", "location", "provider", "external", "comment")
#: Spark repeats each ``OPTIONS (k v)`` entry as ``option.k``.
OPTION_PREFIX = "option."

NO_LOCATION = (
    "the lance data source needs a path: .load(path) / .save(path) / .option('path', ...). A lance catalog "
    "table has one only if it was created with CREATE TABLE t USING lance LOCATION '<path>' (or OPTIONS "
    "(path ...)) on an existing dataset, with no column list and no AS SELECT: only then does Spark hand a "
    "Python data source the table's LOCATION, so tables made by CREATE TABLE t (cols) USING lance, "
    "CREATE TABLE ... AS SELECT or saveAsTable cannot be used. Create the dataset first "
    "(df.write.format('lance').save(path) or lance_fw.write_dataset). An INSERT whose columns already have "
    "the table's names and types (INSERT ... SELECT *, insertInto, writeTo, writeStream.toTable) reaches the "
    "data source without the table's schema, so without its location: append with "
    "df.write.format('lance').mode('append').save(path); see docs/spark.md"
)


def is_catalog_create(options: Mapping[str, str]) -> bool:
    """Whether ``schema()`` is being asked for a ``CREATE TABLE`` (Spark's catalog keys are present)."""
    return any(k.lower() == "provider" for k in options)


def create_options(options: Mapping[str, str]) -> dict[str, str]:
    """The data source options of a ``CREATE TABLE``: catalog keys and the ``option.`` copies
    removed, ``location`` as ``path`` when no path was given."""
    lowered = {k.lower(): v for k, v in options.items()}
    out = {
        k: v
        for k, v in lowered.items()
        if k not in CATALOG_KEYS
        and not (k.startswith(OPTION_PREFIX) and lowered.get(k[len(OPTION_PREFIX) :]) == v)
    }
    if not out.get(PATH) and not out.get(URI) and lowered.get("location"):
        out[PATH] = lowered["location"]
    return out


def tag_schema(struct: StructType, options: Mapping[str, str]) -> StructType:
    """``struct`` with the table's options and column names recorded in every column's metadata."""
    from pyspark.sql.types import StructField, StructType

    record = json.dumps({"options": dict(options), "columns": [f.name for f in struct.fields]})
    return StructType(
        [
            StructField(f.name, f.dataType, f.nullable, {**(f.metadata or {}), TABLE_KEY: record})
            for f in struct.fields
        ]
    )


def untag_schema(struct: StructType) -> StructType:
    """``struct`` without ``TABLE_KEY`` (what the reader and writer plan with)."""
    from pyspark.sql.types import StructField, StructType

    return StructType(
        [
            StructField(
                f.name,
                f.dataType,
                f.nullable,
                {k: v for k, v in (f.metadata or {}).items() if k != TABLE_KEY},
            )
            for f in struct.fields
        ]
    )


def table_options(struct: StructType, options: Mapping[str, str], writing: bool) -> dict[str, str]:
    """The options to read or write with: ``options`` as given if they name a dataset, else those
    recorded in ``struct`` by ``tag_schema`` (a catalog table) overlaid with ``options``. Writes take
    only the location and storage options of the table (its read options select what to read).

    Raises ``InvalidArgumentError`` when the catalog's schema no longer has the recorded columns
    (an ``ALTER TABLE`` Spark applied to its catalog alone), or when there is no location at all."""
    if options.get(PATH) or options.get(URI):
        return dict(options)
    records = [(f, (f.metadata or {}).get(TABLE_KEY)) for f in struct.fields]
    recorded = next((json.loads(r) for _, r in records if r), None)
    if recorded is None:
        raise InvalidArgumentError(NO_LOCATION)
    stored: dict[str, str] = recorded["options"]
    path = stored.get(PATH) or stored.get(URI) or "<path>"
    _check_columns(recorded["columns"], [(f.name, r is not None) for f, r in records], path)
    if writing:
        stored = {
            k: v for k, v in stored.items() if k in (PATH, URI, STORAGE_OPTIONS) or is_storage_option(k)
        }
    return {**stored, **options}


def _check_columns(recorded: list[str], catalog: list[tuple[str, bool]], path: str) -> None:
    """Name the ALTER TABLE that made the catalog's columns differ from the recorded ones, and the
    lance_fw call that changes the dataset instead."""
    names = [name for name, _ in catalog]
    if names == recorded and all(tagged for _, tagged in catalog):
        return
    recreate = "then DROP TABLE and CREATE TABLE ... USING lance LOCATION again"
    added = [name for name, tagged in catalog if not tagged]
    dropped = [c for c in recorded if c not in names]
    renamed = [name for name, tagged in catalog if tagged and name not in recorded]
    if added:
        detail = (
            f"column(s) {added} were added by ALTER TABLE ADD COLUMNS, which changes only Spark's catalog: "
            f"add them to the dataset with lance_fw.dataset({path!r}).add_columns(...) "
            f"(or lance_fw.spark.add_columns(spark, {path!r}, ...)), {recreate}"
        )
    elif renamed:
        detail = (
            f"column(s) {dropped} were renamed to {renamed} by ALTER TABLE RENAME COLUMN, which changes only "
            f"Spark's catalog: rename them in the dataset with lance_fw.dataset({path!r}).alter_columns("
            f"{{'path': old, 'name': new}}), {recreate}"
        )
    else:
        detail = (
            f"column(s) {dropped} were removed by ALTER TABLE DROP COLUMNS (or REPLACE COLUMNS), which changes "
            f"only Spark's catalog: drop them from the dataset with lance_fw.dataset({path!r}).drop_columns("
            f"{dropped!r}), {recreate}"
        )
    raise InvalidArgumentError(
        f"the lance catalog table at {path!r} has columns {names} but was created with {recorded}: {detail}"
    )
