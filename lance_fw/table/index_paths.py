"""Scalar indices on a struct's child (``p.a``): field paths as pylance spells and resolves them.

Why apart from ``indices.py``: the same paths are needed by the build (which field ``p.a`` names,
the default index name ``p.a_idx``, reading the child's values with their parent's nulls), by
``usable_indices`` and by the planner, and they follow pylance's text rules (a part holding a dot
in backticks: ``p.`x.y```), which are not the filter's.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from lance_fw._proto import table_pb2
from lance_fw.errors import ColumnNotFoundError, InvalidArgumentError
from lance_fw.schema import LanceField
from lance_fw.table.snapshot import Snapshot


def struct_paths(fields: list[LanceField]) -> dict[int, list[LanceField]]:
    """Every field reachable through structs only, by id: the fields from the top level down to
    it. A struct's child is indexed (and filtered on) as pylance's ``get_field(p, 'a')``; fields
    under lists or maps are not: no row-level value stands for them."""
    out: dict[int, list[LanceField]] = {}

    def visit(f: LanceField, above: list[LanceField]) -> None:
        path = above + [f]
        out[f.id] = path
        if f.is_struct and not f.is_blob_v2:
            for child in f.children:
                visit(child, path)

    for top in fields:
        visit(top, [])
    return out


def quoted_path(names: tuple[str, ...] | list[str]) -> str:
    """pylance's text for a field path (index names, ``field_names``, plans): parts joined by
    ``.``, a part that holds a ``.`` in backticks (``p.`x.y```)."""
    return ".".join(f"`{n}`" if "." in n else n for n in names)


def pruned_parent(path: list[LanceField]) -> LanceField:
    """The top-level field of ``path`` holding only the structs down to its last field, so that
    training reads the indexed child and not its siblings; a packed struct (one column for all
    its children) is read whole."""
    if len(path) == 1 or any(f.is_packed for f in path):
        return path[0]
    out = path[-1]
    for parent in reversed(path[:-1]):
        out = dataclasses.replace(parent, children=[out])
    return out


def child_values(top: pa.Array, path: list[LanceField]) -> pa.Array:
    """The values of ``path``'s last field in the top-level column ``top``: null where any
    struct above is null (``flatten`` merges the parent's validity; ``field`` would not)."""
    values = top
    for child in path[1:]:
        if isinstance(values, pa.ExtensionArray):
            values = values.storage
        assert isinstance(values, pa.StructArray)
        values = values.flatten()[values.type.get_field_index(child.name)]
    return values


def _split_path(column: str) -> list[tuple[str, bool]]:
    """``p.a`` / ```p`.`a``` / ``p.`x.y``` as (name, quoted) parts: dots outside backticks split.

    Raises: InvalidArgumentError for an unclosed backtick or an empty part."""
    parts: list[tuple[str, bool]] = []
    rest = column
    while True:
        if rest.startswith("`"):
            end = rest.find("`", 1)
            if end < 0:
                raise InvalidArgumentError(f"column {column!r}: unclosed backtick")
            part, quoted, rest = rest[1:end], True, rest[end + 1 :]
            if rest and not rest.startswith("."):
                raise InvalidArgumentError(f"column {column!r}: a quoted name must end a part")
        else:
            part, dot, tail = rest.partition(".")
            quoted, rest = False, dot + tail
        if not part:
            raise InvalidArgumentError(f"column {column!r} has an empty name part")
        parts.append((part, quoted))
        if not rest:
            return parts
        rest = rest[1:]


def _named(fields: list[LanceField], name: str) -> LanceField | None:
    """The field called ``name``: exactly, else the one of that name in another case (pylance's
    ``create_scalar_index`` resolves ``up.lo`` to ``Up.Lo``)."""
    for f in fields:
        if f.name == name:
            return f
    found = [f for f in fields if f.name.lower() == name.lower()]
    return found[0] if len(found) == 1 else None


def nested_field(snapshot: Snapshot, column: str) -> LanceField:
    """The field of a nested path (children of structs), as pylance resolves it.

    Raises: InvalidArgumentError naming the path when some part is missing or not a struct's."""
    fields = snapshot.lance_schema.fields
    found: LanceField | None = None
    for part, _ in _split_path(column):
        if found is not None and (not found.is_struct or found.is_blob_v2):
            found = None
        else:
            found = _named(fields, part)
        if found is None:
            raise ColumnNotFoundError(f"column {column!r} is not in the dataset's schema")
        fields = found.children
    assert found is not None
    return found


#: The first counter of a default index name another index holds (``id_idx`` -> ``id_idx_2``).
_NAME_COUNTER_START = 2


def default_index_name(
    snapshot: Snapshot, field: LanceField, type_url: str, suffix: str, indices: list[table_pb2.IndexMetadata]
) -> str:
    """pylance's name for an index created without one: the name of an index of the same type on
    the same field (which is then replaced), else ``<column path><suffix>`` (``p.a_idx``), with
    ``_2``, ``_3`` ... when another index holds that name (a ZONEMAP and a BTREE on one column
    are two indices, ``id_idx`` and ``id_idx_2``)."""
    for meta in indices:
        same_type = meta.index_details.type_url == type_url if meta.HasField("index_details") else False
        if list(meta.fields) == [field.id] and same_type:
            return meta.name
    path = struct_paths(snapshot.lance_schema.fields).get(field.id, [field])
    base = quoted_path([f.name for f in path]) + suffix
    taken = {m.name for m in indices}
    name, counter = base, _NAME_COUNTER_START
    while name in taken:
        name, counter = f"{base}_{counter}", counter + 1
    return name
