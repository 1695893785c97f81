"""pylance's ``lance.file`` metadata objects: ``LanceFileMetadata`` with its ``columns`` (each a
``LanceColumnMetadata`` of ``LancePageMetadata``), ``LanceFileStatistics`` and ``stable_version()``.

Why each value is what it is (pylance 14, checked on files written by pylance and by lance_fw):

- ``num_column_metadata_bytes`` is the span from the footer's ``column_meta_start`` to the global
  buffer offset table (column metadata plus its offset table); ``num_global_buffer_bytes`` the sum of
  the global buffer sizes; ``num_data_bytes`` is ``column_meta_start`` less those.
- a page's ``buffers`` are its (offset, size) pairs; its ``encoding`` is pylance's Rust ``{:#?}``
  rendering of the page's encoding message (``ArrayEncoding`` in 2.0 files, ``PageLayout`` later),
  which this module renders from the protobuf descriptors by the same rules (prost struct order:
  plain fields, then oneofs; enum values by name; ``Some(..)`` around set optional fields).
- ``file_statistics()`` gives each column its page count and the sum of its page buffer sizes.

What is refused, and why: the ``encoding`` of a page whose encoding is not stored inline (deferred
or absent) or is not one of those two messages (pylance's rendering of it is unknown); statistics
of a file whose columns have column-level buffers (whether pylance counts them is unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import any_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from lance_fw._proto import encodings_v2_0_pb2, encodings_v2_1_pb2, file2_pb2
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.file.container import parse_message
from lance_fw.file.version import parse_version, version_name

#: One level of Rust's pretty (``{:#?}``) indentation.
_INDENT = " " * 4
#: The encoding messages pylance renders, by their full protobuf name (the ``Any`` type URL's tail).
_ENCODINGS: dict[str, type[Message]] = {
    encodings_v2_0_pb2.ArrayEncoding.DESCRIPTOR.full_name: encodings_v2_0_pb2.ArrayEncoding,
    encodings_v2_1_pb2.PageLayout.DESCRIPTOR.full_name: encodings_v2_1_pb2.PageLayout,
}
_STABLE = "stable"
#: The encoding messages whose rendering was compared with pylance 14's, field for field (pages of
#: every type and encoding either library writes): a page using any other is refused, since a
#: message pylance's .proto declares with other fields or in another order would print otherwise.
_VERIFIED = frozenset(
    [f"lance.encodings.{n}" for n in ("ArrayEncoding", "Binary", "Buffer", "Dictionary", "FixedSizeList")]
    + [f"lance.encodings.{n}" for n in ("Flat", "List", "PackedStruct", "SimpleStruct")]
    + [f"lance.encodings.Nullable{n}" for n in ("", ".AllNull", ".NoNull", ".SomeNull")]
    + [f"lance.encodings21.{n}" for n in ("BlobLayout", "BufferCompression", "ByteStreamSplit")]
    + [f"lance.encodings21.{n}" for n in ("CompressiveEncoding", "ConstantLayout", "FixedSizeList", "Flat")]
    + [f"lance.encodings21.{n}" for n in ("Fsst", "FullZipLayout", "General", "InlineBitpacking")]
    + [f"lance.encodings21.{n}" for n in ("MiniBlockLayout", "OutOfLineBitpacking", "PackedStruct")]
    + [f"lance.encodings21.{n}" for n in ("PageLayout", "Rle", "Variable", "VariablePackedStruct")]
    + ["lance.encodings21.VariablePackedStruct.FieldEncoding"]
)
#: Messages whose fields pylance's own .proto declares in another order than lance_fw's copy (prost
#: prints fields in declaration order, not by number): observed on pylance 14's output.
_DECLARED_ORDER: dict[str, tuple[str, ...]] = {
    "lance.encodings.FixedSizeList": ("dimension", "has_validity", "items"),
    "lance.encodings21.FixedSizeList": ("items_per_value", "has_validity", "values"),
}


def stable_version() -> str:
    """The file format version ``"stable"`` names (pylance 14: ``"2.2"``)."""
    return version_name(parse_version(_STABLE))


@dataclass(frozen=True)
class LanceBufferDescriptor:
    """Where a buffer lies in the file."""

    position: int
    size: int


class LancePageMetadata:
    """One page of a column: its buffers and its encoding as pylance renders it."""

    def __init__(self, buffers: list[LanceBufferDescriptor], encoding: str | None, why_not: str = "") -> None:
        self.buffers = buffers
        self._encoding, self._why_not = encoding, why_not

    @property
    def encoding(self) -> str:
        if self._encoding is None:
            raise UnsupportedFeatureError(f"LancePageMetadata.encoding: {self._why_not}")
        return self._encoding


@dataclass(frozen=True)
class LanceColumnMetadata:
    """One column of a file: its column-level buffers and its pages."""

    column_buffers: list[LanceBufferDescriptor]
    pages: list[LancePageMetadata]


@dataclass(frozen=True)
class LanceColumnStatistics:
    """A column's page count and the bytes of its page buffers."""

    num_pages: int
    size_bytes: int

    def __repr__(self) -> str:
        return f"ColumnStatistics(num_pages={self.num_pages}, size_bytes={self.size_bytes})"


@dataclass(frozen=True)
class LanceFileStatistics:
    """``LanceFileReader.file_statistics()``: one entry per column."""

    columns: list[LanceColumnStatistics]

    def __repr__(self) -> str:
        return f"FileStatistics(columns=[{', '.join(map(repr, self.columns))}])"


def column_metadata(columns: list[file2_pb2.ColumnMetadata], path: str) -> list[LanceColumnMetadata]:
    return [
        LanceColumnMetadata(
            _buffers(col.buffer_offsets, col.buffer_sizes),
            [_page(page, path, f"column {c} page {p}") for p, page in enumerate(col.pages)],
        )
        for c, col in enumerate(columns)
    ]


def file_statistics(columns: list[file2_pb2.ColumnMetadata], path: str) -> LanceFileStatistics:
    with_buffers = [c for c, col in enumerate(columns) if len(col.buffer_sizes)]
    if with_buffers:
        raise UnsupportedFeatureError(
            f"{path}: file_statistics() of a file with column-level buffers (columns {with_buffers}): "
            "whether pylance counts them in size_bytes is not known"
        )
    return LanceFileStatistics(
        [
            LanceColumnStatistics(len(col.pages), sum(sum(page.buffer_sizes) for page in col.pages))
            for col in columns
        ]
    )


def _buffers(offsets: list[int], sizes: list[int]) -> list[LanceBufferDescriptor]:
    return [LanceBufferDescriptor(int(o), int(s)) for o, s in zip(offsets, sizes)]


def _page(page: file2_pb2.ColumnMetadata.Page, path: str, where: str) -> LancePageMetadata:
    buffers = _buffers(page.buffer_offsets, page.buffer_sizes)
    location = page.encoding.WhichOneof("location")
    if location != "direct":
        return LancePageMetadata(
            buffers, None, f"{where}: the encoding is {location or 'absent'}, not inline"
        )
    wrapped = parse_message(any_pb2.Any, page.encoding.direct.encoding, path, f"{where} encoding")
    kind = _ENCODINGS.get(wrapped.type_url.rsplit("/", 1)[-1])
    if kind is None:
        return LancePageMetadata(
            buffers, None, f"{where}: pylance's rendering of {wrapped.type_url!r} is unknown"
        )
    encoding = parse_message(kind, wrapped.value, path, f"{where} encoding")
    unchecked = sorted(_messages(encoding) - _VERIFIED)
    if unchecked:
        return LancePageMetadata(
            buffers, None, f"{where}: pylance's rendering of {', '.join(unchecked)} was never compared"
        )
    return LancePageMetadata(buffers, render(encoding))


def _messages(msg: Message) -> set[str]:
    """The full names of ``msg``'s type and of every message set inside it."""
    out = {msg.DESCRIPTOR.full_name}
    for f, value in msg.ListFields():
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if f.is_repeated else [value]:
                out |= _messages(item)
    return out


# -- Rust ``{:#?}`` of a prost message ---------------------------------------------------------
def render(msg: Message) -> str:
    """``msg`` as prost's derived ``Debug`` prints it with ``{:#?}``."""
    d: Descriptor = msg.DESCRIPTOR
    plain = [f for f in d.fields if not _in_real_oneof(f)]
    order = _DECLARED_ORDER.get(d.full_name)
    if order is not None:
        plain.sort(key=lambda f: order.index(f.name))
    fields = [(f.name, _field(msg, f)) for f in plain]
    for oneof in d.oneofs:
        if _synthetic(oneof):
            continue
        which = msg.WhichOneof(oneof.name)
        if which is None:
            fields.append((oneof.name, "None"))
        else:
            f = d.fields_by_name[which]
            fields.append((oneof.name, _tuple("Some", _tuple(_camel(which), _value(getattr(msg, which), f)))))
    if not fields:
        return _camel(d.name)
    return _block(_camel(d.name) + " {", [f"{name}: {value}" for name, value in fields], "}")


def _synthetic(oneof: OneofDescriptor) -> bool:
    """A proto3 ``optional`` field's oneof: prost makes it an ``Option`` field in place."""
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


def _in_real_oneof(f: FieldDescriptor) -> bool:
    return f.containing_oneof is not None and not _synthetic(f.containing_oneof)


def _field(msg: Message, f: FieldDescriptor) -> str:
    value = getattr(msg, f.name)
    if f.is_repeated:
        items = [_value(v, f) for v in value]
        return _block("[", items, "]") if items else "[]"
    if f.type == FieldDescriptor.TYPE_MESSAGE or f.containing_oneof is not None:
        return _tuple("Some", _value(value, f)) if msg.HasField(f.name) else "None"
    return _value(value, f)


def _value(value: object, f: FieldDescriptor) -> str:
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        assert isinstance(value, Message)
        return render(value)
    if f.type == FieldDescriptor.TYPE_ENUM:
        assert isinstance(value, int)
        known = f.enum_type.values_by_number.get(value)
        if known is None:
            return str(value)
        prefix = _screaming(f.enum_type.name) + "_"
        name = known.name[len(prefix) :] if known.name.startswith(prefix) else known.name
        return _camel(name)
    if f.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if f.type == FieldDescriptor.TYPE_STRING:
        assert isinstance(value, str)
        return _rust_str(value)
    if f.type == FieldDescriptor.TYPE_BYTES:
        assert isinstance(value, bytes)
        return _rust_bytes(value)
    if f.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        raise UnsupportedFeatureError(f"rendering the float field {f.full_name} as pylance does")
    return str(value)


def _block(opening: str, items: list[str], closing: str) -> str:
    body = "".join(_INDENT + item.replace("\n", "\n" + _INDENT) + ",\n" for item in items)
    return f"{opening}\n{body}{closing}"


def _tuple(name: str, value: str) -> str:
    return _block(name + "(", [value], ")")


def _words(name: str) -> list[str]:
    """The words of a snake, SCREAMING or Camel case name (as the ``heck`` crate splits them)."""
    words: list[str] = []
    for part in name.split("_"):
        current = ""
        for i, ch in enumerate(part):
            prev = part[i - 1] if i else ""
            nxt = part[i + 1] if i + 1 < len(part) else ""
            if (
                current
                and ch.isupper()
                and (prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower()))
            ):
                words.append(current)
                current = ""
            current += ch
        if current:
            words.append(current)
    return words


def _camel(name: str) -> str:
    return "".join(w[0].upper() + w[1:].lower() for w in _words(name))


def _screaming(name: str) -> str:
    return "_".join(w.upper() for w in _words(name))


#: How the ``bytes`` crate's ``Debug`` writes a byte that is not printable ASCII as itself.
_BYTE_ESCAPES = {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord("\\"): "\\\\",
    ord('"'): '\\"',
    0: "\\0",
}
_PRINTABLE = range(0x20, 0x7F)


def _rust_bytes(data: bytes) -> str:
    """``bytes::Bytes`` as its ``Debug`` prints it (prost's bytes fields in pylance are ``Bytes``)."""
    out = [_BYTE_ESCAPES.get(b) or (chr(b) if b in _PRINTABLE else f"\\x{b:02x}") for b in data]
    return 'b"' + "".join(out) + '"'


def _rust_str(text: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
    out = [escapes.get(ch) or (ch if ch.isprintable() else f"\\u{{{ord(ch):x}}}") for ch in text]
    return '"' + "".join(out) + '"'
