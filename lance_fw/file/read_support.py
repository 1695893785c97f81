"""What ``LanceFileReader`` needs around decoding a page: attributing a failed or lying decoder
to the plugin that provided it, answering reads from buffers already fetched, and joining the
pieces of a column read from several pages.

Also what opening a file parses (``FileMetadata``), which a table version caches per path.

Apart from the reader so that the reader keeps to what it owns: columns, pages and caches.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import any_pb2

from lance_fw._proto import file2_pb2
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError, LanceError, SchemaError, UnsupportedFeatureError
from lance_fw.file.container import FileTail, read_tail
from lance_fw.file.encoding import check_decoded
from lance_fw.file.version import version_name
from lance_fw.io.storage import RangeReader
from lance_fw.plugin_manager import registry
from lance_fw.schema import LanceSchema

_T = TypeVar("_T")

#: (major, minor) data file versions this reader decodes
READABLE_VERSIONS = ((2, 0), (2, 1), (2, 2))

#: What a decoder may raise when a page's bytes do not mean what its encoding says: the page is
#: damaged (a decoder bug on a sound file shows up the same way, with its exception named).
DECODE_FAILURES = (
    pa.ArrowException,
    IndexError,
    KeyError,
    ValueError,
    ArithmeticError,
    struct.error,
    MemoryError,
)


class PageSetup(NamedTuple):
    """A page of a column as readers use it read after read, checked once (``LanceFileReader.
    _page_setup``): scans decode its buffers by ``encoding``; takes build a ``PageBuffers`` over
    ``offsets`` and ``sizes`` (tuples, so no copy per page of a take touching hundreds)."""

    #: the field the page was checked for (a setup is reused for that field only)
    field_name: str
    #: "file, column N (field f), page P", for errors
    where: str
    #: the page's parsed encoding
    encoding: any_pb2.Any
    meta: file2_pb2.ColumnMetadata.Page
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]


def guarded(run: Callable[[], _T], where: str, encoding: any_pb2.Any) -> _T:
    """``run()`` (a page decode): damage it finds, or Arrow/index errors it hits, become a
    ``CorruptFileError`` naming ``where`` and whose decoder it was; a decoder bug keeps its type
    with a note saying whose and where."""
    try:
        return run()
    except CorruptFileError as exc:  # found by the decoder or the check: add whose decoder it was
        raise CorruptFileError(exc.path, f"{exc.detail} ({_decoded_by(encoding)})") from exc
    except LanceError:
        raise
    except DECODE_FAILURES as exc:
        raise CorruptFileError(
            where, f"the page does not decode ({type(exc).__name__}: {exc}; {_decoded_by(encoding)})"
        ) from exc
    except Exception as exc:  # a decoder bug, not damage: keep its type, say whose and where
        exc.add_note(f"raised by {_decoded_by(encoding)} on {where}")
        raise


def checked_page(
    decode: Callable[[], pa.Array], where: str, arrow_type: pa.DataType, length: int, encoding: any_pb2.Any
) -> pa.Array:
    """Run a page decoder (whole page, rows, or several pages) and check what it built, so that a
    damaged page or a lying plugin raises ``CorruptFileError`` naming the plugin, file, column
    and page, instead of handing out a short or wrongly typed array (never cast back) or Arrow
    that fails validation (which crashes ``to_pylist`` and DuckDB).

    Every read path (scan, take, filtered scan, DuckDB, Spark) decodes through here. Every page
    goes through ``validate_decoded``, whichever plugin decoded it (see there for the cost);
    decoders check earlier what they need to build the array safely at all.
    """
    return guarded(lambda: check_decoded(decode(), where, arrow_type, length), where, encoding)


class HeldFirst(RangeReader):
    """A file's reader that answers ranges lying inside buffers already held (by start offset)
    from memory, and asks the file for the others."""

    def __init__(self, reader: RangeReader, held: dict[int, memoryview]) -> None:
        self.path, self._reader, self._held = reader.path, reader, held

    def size(self) -> int:
        return self._reader.size()

    def read(self, offset: int, length: int) -> bytes:
        return self._reader.read(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        out: list[memoryview] = []
        missing: list[int] = []
        for i, (off, length) in enumerate(ranges):
            held = self._held.get(off)
            if held is not None and length <= len(held):
                out.append(held[:length])
            else:
                out.append(memoryview(b""))
                missing.append(i)
        if missing:
            for i, view in zip(missing, self._reader.read_ranges([ranges[i] for i in missing])):
                out[i] = view
        return out


def _decoded_by(encoding: any_pb2.Any) -> str:
    """Who decoded a page, for errors about its output: the plugin (and distribution) providing the
    page decoder of its type URL, and any other plugins whose kind decoders replace members of that
    family (the likelier culprits when a built-in family decoder returns something wrong)."""
    from lance_fw.plugin_manager import owner

    url = encoding.type_url
    page_owner = owner("lance_page_decoders", url)
    text = f"the page decoder of plugin {page_owner}" if page_owner else f"the page decoder of {url!r}"
    try:
        family = url.lstrip("/")
        owners = {owner("lance_kind_decoders", k) for k in registry.kind_decoders if k[0] == family}
        kinds = sorted(o for o in owners if o is not None and o != page_owner)
    except LanceError:  # a conflict among kind decoders is reported where they are used
        kinds = []
    if kinds:
        text += f" with kind decoders of plugin {', '.join(kinds)}"
    return text


def concat_pages(pieces: list[pa.Array], arrow_type: pa.DataType) -> pa.Array:
    if len(pieces) == 1:
        return pieces[0]
    if pa.types.is_dictionary(arrow_type):  # pages carry their own dictionaries (nulls included)
        merged = pa.concat_arrays([p.dictionary_decode() for p in pieces])
        return pc.dictionary_encode(merged).cast(arrow_type)
    return pa.concat_arrays(pieces)


@dataclasses.dataclass(frozen=True)
class FileMetadata:
    """What opening a data file parses, kept per path by a table version's cache: its tail, its
    schema and (filled as columns are read) the first row and encoded bytes of each page per column."""

    tail: FileTail
    schema: LanceSchema
    page_starts: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    #: encoded bytes of the pages before each page (and all of them at the end), per column
    page_bytes: dict[int, list[int]] = dataclasses.field(default_factory=dict)


def read_metadata(reader: RangeReader) -> FileMetadata:
    """Read and check a data file's tail and schema.

    Raises:
        CorruptFileError: a damaged tail or schema.
        UnsupportedFeatureError: a file version this lance_fw cannot read.
    """
    path = reader.path
    tail = read_tail(reader)
    if tail.version not in READABLE_VERSIONS:
        raise UnsupportedFeatureError(
            f"{path}: data file version {version_name(tail.version)} is not readable by this lance_fw yet"
        )
    try:
        schema = LanceSchema.from_protos(tail.descriptor.schema.fields, tail.descriptor.schema.metadata)
        schema.to_arrow()  # every logical type must be known
    except SchemaError as exc:
        raise CorruptFileError(path, f"bad schema in the file descriptor: {exc}") from None
    return FileMetadata(tail, schema)


#: Parsed metadata of data files shared by every open in this process, at most this many bytes
#: of the metadata they were parsed from (``shared_metadata``); a file whose metadata is larger
#: than ``SHARED_METADATA_MAX_FILE_BYTES`` is parsed at every open.
SHARED_METADATA_BYTES = 64 << 20
SHARED_METADATA_FILES = 4096
SHARED_METADATA_MAX_FILE_BYTES = 4 << 20


def _entry_bytes(entry: tuple[int, bytes, FileMetadata]) -> int:
    return len(entry[1]) + 1024


_SHARED: LruCache[tuple[str, Hashable], tuple[int, bytes, FileMetadata]] = LruCache(
    SHARED_METADATA_FILES, SHARED_METADATA_BYTES, _entry_bytes
)


def shared_metadata(reader: RangeReader) -> FileMetadata:
    """``read_metadata(reader)``, the same object for every open of an unchanged file in this
    process: where the backend gives the file an identity (``RangeReader.identity``), the bytes
    the metadata was parsed from (the file descriptor on to the end) are read at every open and
    compared with those parsed before.

    Why: what decoders derive from a page (chunk tables, dictionaries, a take's page setup) is
    kept by the parsed tail's token (``FileTail.token``). Users (and DuckDB, and the bench) open a
    dataset per query; each open parsed the tails anew, so those caches never hit across queries
    (a take of 100 rows over a file of 300 small pages: 36 ms re-opened, 23 ms opened once).

    Raises:
        What ``read_metadata`` raises.
    """
    identity = reader.identity()
    if identity is None:
        return read_metadata(reader)
    key, size = (reader.path, identity), reader.size()
    found = _SHARED.get(key)
    if found is not None and 0 <= found[0] <= size:
        if reader.read_exact(found[0], size - found[0], "file metadata") == found[1]:
            return found[2]
    metadata = read_metadata(reader)
    start = metadata.tail.metadata_start
    if size - start <= SHARED_METADATA_MAX_FILE_BYTES:
        _SHARED.put(key, (start, reader.read_exact(start, size - start, "file metadata"), metadata))
    return metadata
