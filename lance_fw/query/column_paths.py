"""Nested column paths in a ``columns=[...]`` list (``"p.a"``, ``"p.`b.c`"``), as pylance reads them.

pylance treats a list entry that is not a top-level column as a dotted path into structs
(backticks quote a segment holding dots). Scans return the child as a flat column named by the
entry (``to_table(columns=["p.a"])`` -> column ``p.a``); ``take`` instead returns the top-level
struct pruned to the requested children, top-level fields in the order first asked for and
children in schema order. Both shapes are built here from reads of whole top-level fields, so
the file readers only ever see top-level fields.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lance_fw.errors import InvalidArgumentError

_QUOTE = "`"


def split_path(name: str) -> list[str]:
    """``"p.`b.c`.d"`` -> ``["p", "b.c", "d"]``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in name:
        if ch == _QUOTE:
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quoted:
        raise InvalidArgumentError(f"column path {name!r}: unbalanced backtick")
    parts.append("".join(current))
    return parts


def has_nested_paths(columns: Sequence[str] | None, schema: pa.Schema) -> bool:
    """Whether a ``columns`` list names anything below a top-level column."""
    if columns is None or isinstance(columns, (dict, str)):
        return False
    return any(c not in schema.names and len(split_path(c)) > 1 for c in columns)


def as_projection(columns: Sequence[str], schema: pa.Schema) -> dict[str, str]:
    """A scan's column list as ``{name: SQL}``: each entry keeps its name, each path segment is
    quoted, so the SQL projection extracts children exactly as pylance's scan does."""
    out = {}
    for name in columns:
        parts = [name] if name in schema.names else split_path(name)
        out[name] = ".".join(_QUOTE + part + _QUOTE for part in parts)
    return out


def top_level_columns(columns: Sequence[str], schema: pa.Schema) -> list[str]:
    """The top-level columns a ``take`` of ``columns`` reads, in the order first asked for."""
    out: list[str] = []
    for name in columns:
        head = name if name in schema.names else split_path(name)[0]
        if head not in out:
            out.append(head)
    return out


def prune_to_paths(table: pa.Table, columns: Sequence[str], schema: pa.Schema) -> pa.Table:
    """``table`` (whole top-level fields, see :func:`top_level_columns`) pruned to the paths asked."""
    wanted: dict[str, list[list[str]] | None] = {}  # top-level name -> child paths (None: all of it)
    for name in columns:
        parts = [name] if name in schema.names else split_path(name)
        head, rest = parts[0], parts[1:]
        if not rest or wanted.get(head, []) is None:
            wanted[head] = None
        else:
            wanted.setdefault(head, []).append(rest)  # type: ignore[union-attr]
    arrays = [_prune(table.column(head).combine_chunks(), paths, head) for head, paths in wanted.items()]
    return pa.Table.from_arrays(arrays, names=list(wanted))


def _prune(array: pa.Array, paths: list[list[str]] | None, where: str) -> pa.Array:
    if paths is None:
        return array
    if not pa.types.is_struct(array.type):
        raise InvalidArgumentError(f"column path {where!r}.{'.'.join(paths[0])}: {where!r} is not a struct")
    children, fields = [], []
    for i in range(array.type.num_fields):
        child = array.type.field(i)
        below = [p[1:] for p in paths if p[0] == child.name]
        if not below:
            continue
        children.append(
            _prune(pc.struct_field(array, [i]), None if [] in below else below, f"{where}.{child.name}")
        )
        fields.append(child.with_type(children[-1].type))
    known = {array.type.field(i).name for i in range(array.type.num_fields)}
    missing = [p[0] for p in paths if p[0] not in known]
    if missing:
        raise InvalidArgumentError(f"no field {where}.{missing[0]}; {where!r} has {sorted(known)}")
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
