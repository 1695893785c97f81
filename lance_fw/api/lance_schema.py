"""pylance's ``ds.lance_schema``: the dataset's Lance schema (fields with their ids) as pylance's
``LanceSchema`` / ``LanceField`` objects, whose accessors are methods (``fields()``, ``name()``).

Why a façade over ``lance_fw.schema.LanceSchema``: the kernel's schema is a plain dataclass whose
``fields`` is a list every layer reads; pylance's object spells the same facts as methods, so the
two cannot be one class without renaming the kernel's attributes everywhere.
"""

from __future__ import annotations

import pyarrow as pa

from lance_fw.schema import PRIMARY_KEY_KEY, LanceField
from lance_fw.schema import LanceSchema as KernelSchema


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class LanceSchemaField:
    """One field of a Lance schema: name, id, children, metadata (pylance's ``LanceField``)."""

    def __init__(self, field: LanceField) -> None:
        self._field = field

    def name(self) -> str:
        return self._field.name

    def id(self) -> int:
        return self._field.id

    def children(self) -> list[LanceSchemaField]:
        return [LanceSchemaField(c) for c in self._field.children]

    @property
    def metadata(self) -> dict[str, str]:
        return {k: _text(v) for k, v in self._field.metadata.items()}

    def to_arrow(self) -> pa.Field:
        return self._field.to_arrow()

    def is_unenforced_primary_key(self) -> bool:
        pb = self._field.pb
        if pb is not None and (pb.unenforced_primary_key or pb.unenforced_primary_key_position > 0):
            return True
        return self.metadata.get(PRIMARY_KEY_KEY, "").lower() == "true"

    def _position(self, name: str) -> int | None:
        """Field proto value ``name`` (a key position); pylance shows an unrecorded 0 as None."""
        pb = self._field.pb
        return int(getattr(pb, name)) or None if pb is not None else None

    def unenforced_primary_key_position(self) -> int | None:
        """The position in a composite key, as recorded (pylance shows an unrecorded 0 as None)."""
        return self._position("unenforced_primary_key_position")

    def is_unenforced_clustering_key(self) -> bool:
        return self.unenforced_clustering_key_position() is not None

    def unenforced_clustering_key_position(self) -> int | None:
        return self._position("unenforced_clustering_key_position")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LanceSchemaField)
            and self.to_arrow().equals(other.to_arrow())
            and (self.id() == other.id())
        )

    def __hash__(self) -> int:
        return hash((self.name(), self.id()))

    def __repr__(self) -> str:
        return f"LanceField(name={self.name()!r}, id={self.id()}, type={self._field.arrow_type()})"


class LanceSchema:
    """A Lance schema as pylance shows it: ``to_pyarrow()``, ``fields()``, ``field(name)``."""

    def __init__(self, schema: KernelSchema) -> None:
        self._schema = schema

    @classmethod
    def from_pyarrow(cls, schema: pa.Schema) -> LanceSchema:
        """Field ids assigned in pre-order from 0, as a new dataset's are."""
        return cls(KernelSchema.from_arrow(schema))

    def to_pyarrow(self) -> pa.Schema:
        return self._schema.to_arrow()

    def fields(self) -> list[LanceSchemaField]:
        return [LanceSchemaField(f) for f in self._schema.fields]

    def field(self, name: str) -> LanceSchemaField | None:
        """The top-level or nested (``a.b``) field named ``name``, or None."""
        found = _by_path(self._schema.fields, "").get(name)
        return LanceSchemaField(found) if found is not None else None

    def field_case_insensitive(self, name: str) -> LanceSchemaField | None:
        wanted = name.lower()
        paths = _by_path(self._schema.fields, "")
        found = next((f for path, f in paths.items() if path.lower() == wanted), None)
        return LanceSchemaField(found) if found is not None else None

    def unenforced_primary_key(self) -> list[LanceSchemaField]:
        """The key's fields by recorded position (schema order where none is recorded)."""
        keys = [f for f in map(LanceSchemaField, self._schema.walk()) if f.is_unenforced_primary_key()]
        return sorted(keys, key=lambda f: f.unenforced_primary_key_position() or 0)

    def unenforced_clustering_key(self) -> list[LanceSchemaField]:
        keys = [f for f in map(LanceSchemaField, self._schema.walk()) if f.is_unenforced_clustering_key()]
        return sorted(keys, key=lambda f: f.unenforced_clustering_key_position() or 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceSchema) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(self.fields()))

    def __repr__(self) -> str:
        return f"LanceSchema({', '.join(repr(f) for f in self.fields())})"


def _by_path(fields: list[LanceField], prefix: str) -> dict[str, LanceField]:
    """Every field under ``fields`` by its dotted path, in pre-order."""
    out: dict[str, LanceField] = {}
    for f in fields:
        out[prefix + f.name] = f
        out.update(_by_path(f.children, f"{prefix}{f.name}."))
    return out


__all__ = ["LanceSchema", "LanceSchemaField"]
