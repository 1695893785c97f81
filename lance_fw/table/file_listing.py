"""Which files each version of a dataset references, and whether they are all there.

Why here, below the façade: ``cleanup_old_versions`` must know what a kept version needs (it may
never delete those), pylance's ``tracked_files()`` lists the same per version, and ``validate()``
opens them; one walk over a manifest serves all three.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lance_fw._proto import table_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.deletion import deletion_path
from lance_fw.table.manifest import list_versions, read_manifest
from lance_fw.table.paths import DATA_DIR, INDICES_DIR, TRANSACTIONS_DIR, VERSIONS_DIR

if TYPE_CHECKING:
    from lance_fw.table.snapshot import Snapshot

#: pylance's names for the kinds of file a version references (``tracked_files()``'s ``type``)
MANIFEST_FILE = "manifest"
TRANSACTION_FILE = "transaction file"
DATA_FILE = "data file"
DELETION_FILE = "deletion file"
INDEX_FILE = "index file"


@dataclass(frozen=True)
class TrackedFile:
    """One file a version references: its path relative to the dataset root and its kind."""

    path: str
    kind: str


def referenced_files(
    storage: Storage,
    uri: str,
    manifest: table_pb2.Manifest,
    index_section: table_pb2.IndexSection | None,
) -> Iterator[TrackedFile]:
    """The transaction, data, deletion and index files ``manifest`` needs, in pylance's order.

    Raises:
        UnsupportedFeatureError: a file under another base path (multi-base datasets).
    """
    if manifest.transaction_file:
        yield TrackedFile(f"{TRANSACTIONS_DIR}/{manifest.transaction_file}", TRANSACTION_FILE)
    for frag in manifest.fragments:
        for data_file in frag.files:
            if data_file.base_id:
                raise UnsupportedFeatureError(
                    f"{uri}: data file {data_file.path} lives under base path {data_file.base_id}; "
                    "multi-base datasets are not supported yet"
                )
            yield TrackedFile(f"{DATA_DIR}/{data_file.path}", DATA_FILE)
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            yield TrackedFile(
                deletion_path("", frag.id, d.read_version, d.id, d.file_type).lstrip("/"), DELETION_FILE
            )
    for meta in index_section.indices if index_section is not None else []:
        directory = f"{INDICES_DIR}/{uuidlib.UUID(bytes=meta.uuid.uuid)}"
        names = [f.path for f in meta.files] or sorted(storage.list_dir(join_uri(uri, directory)))
        for name in names:
            yield TrackedFile(f"{directory}/{name}", INDEX_FILE)


def tracked_files(
    storage: Storage,
    uri: str,
    min_version: int | None = None,
    progress: Callable[[int, int | None], object] | None = None,
) -> Iterator[tuple[int, TrackedFile]]:
    """(version, file) for the manifest and every file of each version (from ``min_version``),
    newest version first as pylance lists them; ``progress(done, total)`` after each manifest."""
    versions = [v for v in list_versions(storage, uri) if min_version is None or v.version >= min_version]
    for done, entry in enumerate(reversed(versions), 1):
        manifest, index_section = read_manifest(storage, entry.path)
        name = entry.path.rsplit("/", 1)[-1]
        yield entry.version, TrackedFile(f"{VERSIONS_DIR}/{name}", MANIFEST_FILE)
        for tracked in referenced_files(storage, uri, manifest, index_section):
            yield entry.version, tracked
        if progress is not None:
            progress(done, len(versions))


class DatasetValidationError(CorruptFileError, OSError):
    """``validate()`` found a file of the version unreadable or disagreeing with the manifest.
    Also an ``OSError``, the class pylance raises there (a missing file is ``DatasetNotFoundError``,
    a ``FileNotFoundError``)."""


def validate(snapshot: Snapshot) -> None:
    """Check that every fragment of ``snapshot`` is readable as the manifest describes it: unique
    ids, each data file present with the fragment's row count, each deletion file present and
    within the fragment.

    Raises:
        DatasetNotFoundError: a referenced file is missing.
        DatasetValidationError: a file does not parse or disagrees with the manifest.
    """
    seen: set[int] = set()
    for frag in snapshot.fragments:
        if frag.id in seen:
            raise DatasetValidationError(snapshot.uri, f"fragment id {frag.id} appears twice in the manifest")
        seen.add(frag.id)
        reader = snapshot.fragment_reader(frag)
        try:
            reader.open_files()
            _ = reader.deleted
        except DatasetValidationError:
            raise
        except CorruptFileError as exc:
            raise DatasetValidationError(exc.path, exc.detail) from exc
        finally:
            reader.close()


__all__ = [
    "DATA_FILE",
    "DELETION_FILE",
    "INDEX_FILE",
    "MANIFEST_FILE",
    "TRANSACTION_FILE",
    "DatasetValidationError",
    "TrackedFile",
    "referenced_files",
    "tracked_files",
    "validate",
]
