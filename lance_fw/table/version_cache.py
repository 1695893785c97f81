"""What reading one table version parses once and every later query of that version reuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lance_fw._util.lru import LruCache
from lance_fw.file.read_support import FileMetadata

#: Data files (their parsed metadata) and deletion vectors one table version keeps, each
FILES_CACHED_PER_VERSION = 4096
#: Id-to-address maps (``stable_rows.StableRows``) one version keeps, one per set of fragments an
#: index covers (a few indices, each covering most fragments).
STABLE_ROW_MAPS_PER_VERSION = 8


@dataclass(frozen=True)
class VersionCache:
    """What reading one version parses once and every later query of that version reuses: data
    file metadata (tail, schema) by path, and deleted offsets by deletion file path. Why: a point
    lookup otherwise spends as long re-reading the tails of the files it touches as finding its
    row. Safe because a version's data and deletion files are never rewritten."""

    files: LruCache[str, FileMetadata] = field(default_factory=lambda: LruCache(FILES_CACHED_PER_VERSION))
    deletions: LruCache[str, np.ndarray] = field(default_factory=lambda: LruCache(FILES_CACHED_PER_VERSION))
    #: ``stable_rows.StableRows`` by the fragment ids it maps (None: every fragment)
    stable_rows: LruCache[Any, Any] = field(default_factory=lambda: LruCache(STABLE_ROW_MAPS_PER_VERSION))
