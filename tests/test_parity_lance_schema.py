"""``ds.lance_schema`` against pylance: the same field tree (names, ids, metadata, Arrow fields,
primary-key flags) and lookups, on datasets either library wrote."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata={"lance-schema:unenforced-primary-key": "true"}),
        pa.field("p", pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))])),
        pa.field("tags", pa.list_(pa.string()), metadata={"note": "x"}),
        pa.field("v", pa.list_(pa.float32(), 4)),
        pa.field("Mixed", pa.float64()),
    ],
    metadata={"owner": "t"},
)


def _rows(n: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(n)),
            "p": [{"a": i, "b": {"c": str(i)}} for i in range(n)],
            "tags": [[str(i)] * (i % 3) for i in range(n)],
            "v": [[float(i)] * 4 for i in range(n)],
            "Mixed": [i / 2 for i in range(n)],
        },
        schema=SCHEMA,
    )


def _tree(fields) -> list:
    return [
        (
            f.name(),
            f.id(),
            f.metadata,
            f.to_arrow(),
            f.is_unenforced_primary_key(),
            f.unenforced_primary_key_position(),
            _tree(f.children()),
        )
        for f in fields
    ]


def _view(schema) -> tuple:
    lookups = [schema.field(n) for n in ("id", "p.b.c", "p.b", "tags", "nope", "Mixed")]
    insensitive = [schema.field_case_insensitive(n) for n in ("MIXED", "P.A", "none")]
    return (
        schema.to_pyarrow(),
        _tree(schema.fields()),
        [None if f is None else (f.name(), f.id()) for f in lookups],
        [None if f is None else (f.name(), f.id()) for f in insensitive],
        [f.name() for f in schema.unenforced_primary_key()],
    )


@pytest.mark.parametrize("writer", [lance, lance_fw])
def test_lance_schema_matches_pylance(tmp_path, writer):
    path = str(tmp_path / "ds")
    writer.write_dataset(_rows(5000), path, max_rows_per_file=2048)
    ours, theirs = lance_fw.dataset(path).lance_schema, lance.dataset(path).lance_schema
    assert _view(ours) == _view(theirs)


def test_from_pyarrow_matches_pylance():
    import lance.schema

    ours = lance_fw.api.lance_schema.LanceSchema.from_pyarrow(SCHEMA)
    theirs = lance.schema.LanceSchema.from_pyarrow(SCHEMA)
    assert _tree(ours.fields()) == _tree(theirs.fields())


def test_written_key_markers_are_read_by_pylance(tmp_path):
    """lance_fw's writer records the key markers of field metadata in the field messages, as
    pylance's does: pylance reads the same composite primary key and clustering key back."""
    key = "lance-schema:unenforced-primary-key"
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False, metadata={key: "true", f"{key}:position": "2"}),
            pa.field("b", pa.int64(), nullable=False, metadata={key: "true", f"{key}:position": "1"}),
            pa.field("c", pa.int64(), metadata={"lance-schema:unenforced-clustering-key:position": "1"}),
        ]
    )
    data = pa.table({"a": [1, 2], "b": [3, 4], "c": [5, 6]}, schema=schema)
    seen = {}
    for writer in (lance, lance_fw):
        path = str(tmp_path / writer.__name__)
        writer.write_dataset(data, path)
        schema_view = lance.dataset(path).lance_schema
        seen[writer] = (
            [(f.name(), f.unenforced_primary_key_position()) for f in schema_view.unenforced_primary_key()],
            [(f.name(), f.unenforced_clustering_key_position()) for f in schema_view.unenforced_clustering_key()],
            _view(lance_fw.dataset(path).lance_schema) == _view(schema_view),
        )
    assert seen[lance_fw] == seen[lance]
    assert seen[lance][2]
