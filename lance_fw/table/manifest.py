"""Manifest files: naming schemes, byte framing, listing versions.

```
[IndexSection: u32 len | pb] [Transaction: u32 len | pb] Manifest: u32 len | pb
footer: u64 manifest_pos | u16 0 | u16 2 | "LANC"
```
V2 names are ``{2**64 - 1 - version:020}.manifest`` (newest sorts first); V1 names are
``{version}.manifest``. Both are read; V2 is written unless the dataset already uses V1.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from lance_fw._proto import table_pb2, transaction_pb2
from lance_fw._util.lru import LruCache
from lance_fw.errors import CorruptFileError, DatasetNotFoundError, SchemaError, UnsupportedFeatureError
from lance_fw.file.container import MAGIC, parse_message
from lance_fw.io.storage import Storage, join_uri
from lance_fw.schema import LanceSchema
from lance_fw.table.paths import MANIFEST_SUFFIX, TRANSACTIONS_DIR, VERSIONS_DIR

U64_MAX = 2**64 - 1
#: u64 manifest position | u16 major | u16 minor | magic.
FOOTER = struct.Struct("<QHH4s")
#: The (major, minor) every manifest footer carries (pylance writes and expects 0.2).
FOOTER_VERSION = (0, 2)
#: The u32 length that precedes each section (index, transaction, manifest).
SECTION_LENGTH = struct.Struct("<I")
HINT_FILE = "latest_version_hint.json"
#: Manifests remembered as checked (``read_manifest``).
CHECKED_MANIFESTS = 256
#: Digits of a v2 manifest name (``u64::MAX - version``, zero-padded)
V2_NAME_DIGITS = 20


def manifest_name(version: int, v2: bool = True) -> str:
    if v2:  # counts down, so the newest version lists first
        return f"{U64_MAX - version:0{V2_NAME_DIGITS}d}{MANIFEST_SUFFIX}"
    return f"{version}{MANIFEST_SUFFIX}"


def parse_manifest_name(name: str) -> tuple[int, bool] | None:
    """(version, is_v2_name) for a manifest file name; None for anything else."""
    if not name.endswith(MANIFEST_SUFFIX) or name.startswith(("d", ".")):
        return None
    stem = name[: -len(MANIFEST_SUFFIX)]
    if not stem.isdigit():
        return None
    if len(stem) == V2_NAME_DIGITS:
        return U64_MAX - int(stem), True
    return int(stem), False


@dataclass
class VersionEntry:
    version: int
    path: str
    v2_name: bool


def list_versions(storage: Storage, base: str) -> list[VersionEntry]:
    """All committed versions, oldest first."""
    directory = join_uri(base, VERSIONS_DIR)
    out = [e for name in storage.list_dir(directory) if (e := _entry(directory, name)) is not None]
    out.sort(key=lambda e: e.version)
    return out


def _entry(directory: str, name: str) -> VersionEntry | None:
    """The version a file of ``_versions`` holds (None: not a manifest's name)."""
    parsed = parse_manifest_name(name)
    if parsed is None:
        return None
    # (digits and the suffix: a name that cannot leave the directory, so no join_uri)
    return VersionEntry(parsed[0], f"{directory}/{name}", parsed[1])


def latest_version(storage: Storage, base: str) -> VersionEntry | None:
    """The newest committed version (None: no manifest), found without parsing every name.

    Why: a dataset appended to in small commits holds thousands of versions; every commit and
    every open looked for the newest through ``list_versions`` (a name parsed, joined, checked
    and sorted each): an append at 1000 versions took 27 ms against pylance's 3.5. v2 names
    count down in fixed width, so the newest of them is the least; the few other names (v1
    manifests, the version hint) are parsed."""
    directory = join_uri(base, VERSIONS_DIR)
    names = storage.list_dir(directory)
    v2_width = V2_NAME_DIGITS + len(MANIFEST_SUFFIX)
    v2 = [name for name in names if len(name) == v2_width]
    best = _entry(directory, min(v2)) if v2 else None
    # the other names; all of them if the least of v2 width is no manifest's (or there is none)
    others = [name for name in names if len(name) != v2_width] if best is not None else names
    for name in others:
        entry = _entry(directory, name)
        if entry is not None and (best is None or entry.version > best.version):
            best = entry
    return best


def find_version(storage: Storage, base: str, version: int | None) -> VersionEntry:
    if version is None:
        latest = latest_version(storage, base)
        if latest is None:
            raise DatasetNotFoundError(f"{base}: no Lance dataset here (no manifests in {VERSIONS_DIR}/)")
        return latest
    directory = join_uri(base, VERSIONS_DIR)
    if version >= 0:  # its manifest by name (two lookups; listing thousands of versions cost ms)
        for v2 in (True, False):
            path = f"{directory}/{manifest_name(version, v2)}"
            if storage.exists(path):
                return VersionEntry(version, path, v2)
    versions = list_versions(storage, base)
    if not versions:
        raise DatasetNotFoundError(f"{base}: no Lance dataset here (no manifests in {VERSIONS_DIR}/)")
    for entry in versions:
        if entry.version == version:
            return entry
    raise DatasetNotFoundError(
        f"{base}: version {version} does not exist (versions {versions[0].version}..{versions[-1].version})"
    )


#: Manifest timestamps are a protobuf Timestamp (seconds + nanos).
NANOS_PER_SECOND = 1_000_000_000


def commit_time(manifest: table_pb2.Manifest) -> float:
    """When ``manifest`` was committed, in seconds since the epoch."""
    return manifest.timestamp.seconds + manifest.timestamp.nanos / 1e9


def commit_datetime(manifest: table_pb2.Manifest) -> datetime:
    """When ``manifest`` was committed, as pylance's ``versions()`` reports it: local naive time.

    pylance 14 converts the nanosecond count with float arithmetic (``ns // 1e9`` and
    ``(ns % 1e9) // 1e3``), which is up to 1 µs off the exact value for some stamps; the same
    arithmetic here gives the same ``datetime`` for every manifest (exact truncation would not)."""
    ns = manifest.timestamp.seconds * NANOS_PER_SECOND + manifest.timestamp.nanos
    return datetime.fromtimestamp(ns // 1e9) + timedelta(microseconds=(ns % 1e9) // 1e3)


def version_entry(manifest: table_pb2.Manifest) -> dict:
    """pylance's ``versions()`` entry of one manifest: version, commit time and the summary counts
    pylance 14 derives from the manifest (keys in its order; a tagged manifest adds ``tag``)."""
    fragments = list(manifest.fragments)
    data_rows = sum(f.physical_rows for f in fragments)
    deleted = [f.deletion_file for f in fragments if f.HasField("deletion_file")]
    deleted_rows = sum(d.num_deleted_rows for d in deleted)
    metadata = {
        "total_data_file_rows": data_rows,
        "total_data_files": sum(len(f.files) for f in fragments),
        "total_deletion_file_rows": deleted_rows,
        "total_deletion_files": len(deleted),
        "total_files_size": sum(d.file_size_bytes for f in fragments for d in f.files),
        "total_fragments": len(fragments),
        "total_rows": data_rows - deleted_rows,
    }
    out = {k: str(v) for k, v in metadata.items()}
    if manifest.tag:
        out["tag"] = manifest.tag
    return {"version": manifest.version, "timestamp": commit_datetime(manifest), "metadata": out}


def read_manifest(storage: Storage, path: str) -> tuple[table_pb2.Manifest, table_pb2.IndexSection | None]:
    data = storage.read_bytes(path)
    if len(data) < FOOTER.size or data[-4:] != MAGIC:
        raise CorruptFileError(path, "not a Lance manifest: missing the 'LANC' footer (truncated?)")
    pos = FOOTER.unpack_from(data, len(data) - FOOTER.size)[0]
    end = len(data) - FOOTER.size
    if pos + SECTION_LENGTH.size > end:
        raise CorruptFileError(path, f"manifest position {pos} lies outside the file ({len(data)} bytes)")
    (length,) = SECTION_LENGTH.unpack_from(data, pos)
    if pos + SECTION_LENGTH.size + length != end:
        raise CorruptFileError(path, f"manifest length {length} at {pos} does not end at the footer ({end})")
    manifest = parse_message(table_pb2.Manifest, data[pos + SECTION_LENGTH.size : end], path, "manifest")
    try:  # every field must link to its parent and have a known logical type
        LanceSchema.from_protos(manifest.fields, manifest.schema_metadata).to_arrow()
    except SchemaError as exc:
        raise CorruptFileError(path, f"bad schema: {exc}") from None
    checked = (path, len(data), zlib.crc32(data))
    if _CHECKED.get(checked) is None:
        check_fragments(manifest, path)
        _CHECKED.put(checked, True)
    index_section = None
    if manifest.HasField("index_section"):
        ipos = manifest.index_section
        if ipos + SECTION_LENGTH.size > end:
            raise CorruptFileError(path, f"index section position {ipos} lies outside the file")
        (ilen,) = SECTION_LENGTH.unpack_from(data, ipos)
        ibody = ipos + SECTION_LENGTH.size
        index_section = parse_message(
            table_pb2.IndexSection, data[ibody : ibody + ilen], path, "index section"
        )
    return manifest, index_section


#: Manifests (path, size, CRC-32 of the bytes) whose fragments passed ``check_fragments``: a
#: version's manifest is read again at every open and commit (three times an append), and the
#: check walks every fragment in Python (~1.8 ms at 1,000 fragments); the bytes must match, so a
#: path written again with other contents is checked again.
_CHECKED: LruCache[tuple[str, int, int], bool] = LruCache(CHECKED_MANIFESTS)


def check_fragments(manifest: table_pb2.Manifest, path: str) -> None:
    """What a manifest says about its fragments must be possible, because counts and scan plans
    are taken from it without opening the files: every fragment has data files and a row count,
    and its deletion file deletes fewer rows than it has (a fully deleted fragment is dropped)."""
    for frag in manifest.fragments:
        if frag.physical_rows and not frag.HasField("deletion_file") and len(frag.files):
            continue  # (the usual fragment: nothing below applies)
        if not len(frag.files):
            raise CorruptFileError(
                path, f"fragment {frag.id} has no data files (its rows would all read as null)"
            )
        if frag.physical_rows == 0:
            raise UnsupportedFeatureError(
                f"{path}: fragment {frag.id} does not record physical_rows (an old "
                "writer); counting its rows from the data file is not supported yet"
            )
        if frag.HasField("deletion_file") and not frag.deletion_file.num_deleted_rows:
            raise UnsupportedFeatureError(
                f"{path}: fragment {frag.id}'s deletion file does not record how many "
                "rows it deletes (an old writer, or a damaged manifest); counting them "
                "from the file is not supported yet"
            )
        if frag.HasField("deletion_file") and frag.deletion_file.num_deleted_rows >= frag.physical_rows:
            raise CorruptFileError(
                path,
                f"fragment {frag.id} has {frag.physical_rows} rows but its deletion file "
                f"claims {frag.deletion_file.num_deleted_rows} deleted (a fragment with "
                "every row deleted is dropped, never kept)",
            )


def encode_manifest(
    manifest: table_pb2.Manifest,
    transaction: transaction_pb2.Transaction | None,
    index_section: table_pb2.IndexSection | None = None,
    prefix: bytes = b"",
) -> bytes:
    """Frame a manifest the way pylance 14 does (index section, inline transaction, manifest, footer).
    ``prefix``: bytes before the sections (a 0.1 dataset's dictionaries, ``legacy_v0_1_manifest``)."""
    parts: list[bytes] = [prefix]
    pos = len(prefix)
    if index_section is not None and index_section.ListFields():
        manifest.index_section = pos
        body = index_section.SerializeToString()
        parts.append(SECTION_LENGTH.pack(len(body)) + body)
        pos += SECTION_LENGTH.size + len(body)
    else:
        manifest.ClearField("index_section")
    if transaction is not None:
        manifest.transaction_section = pos
        body = transaction.SerializeToString()
        parts.append(SECTION_LENGTH.pack(len(body)) + body)
        pos += SECTION_LENGTH.size + len(body)
    body = manifest.SerializeToString()
    parts.append(SECTION_LENGTH.pack(len(body)) + body)
    parts.append(FOOTER.pack(pos, *FOOTER_VERSION, MAGIC))
    return b"".join(parts)


def write_hint(storage: Storage, base: str, version: int) -> None:
    """Best-effort ``latest_version_hint.json`` (an optimisation for readers; never required)."""
    try:
        storage.write_bytes(
            join_uri(base, VERSIONS_DIR, HINT_FILE),
            json.dumps({"version": version}, separators=(",", ":")).encode(),
        )
    except Exception:
        pass


def read_transaction(storage: Storage, base: str, path: str) -> transaction_pb2.Transaction | None:
    """The transaction that created the manifest at ``path``: inline (pylance 14 and lance_fw frame it
    into the manifest file) or in ``_transactions/``; None when the version records none."""
    manifest, _ = read_manifest(storage, path)
    if manifest.HasField("transaction_section"):
        data = storage.read_bytes(path)
        pos = manifest.transaction_section
        if pos + SECTION_LENGTH.size > len(data):
            raise CorruptFileError(path, f"transaction section position {pos} lies outside the file")
        (length,) = SECTION_LENGTH.unpack_from(data, pos)
        body = pos + SECTION_LENGTH.size
        return parse_message(transaction_pb2.Transaction, data[body : body + length], path, "transaction")
    if manifest.transaction_file:
        txn_path = join_uri(base, TRANSACTIONS_DIR, manifest.transaction_file)
        if storage.exists(txn_path):
            return parse_message(
                transaction_pb2.Transaction, storage.read_bytes(txn_path), txn_path, "transaction"
            )
    return None


def data_files_since(storage: Storage, base: str, version: int) -> set[str]:
    """Data file names (as stored in fragments) referenced by any version newer than ``version``:
    what a writer cleaning up after an unclear failure must keep, because its commit may have
    been published after all."""
    out: set[str] = set()
    for entry in list_versions(storage, base):
        if entry.version > version:
            manifest, _ = read_manifest(storage, entry.path)
            out.update(f.path for frag in manifest.fragments for f in frag.files)
    return out
