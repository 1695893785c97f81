"""The directories of a dataset root, as pylance names them (``docs/format.md`` of Lance).

A leaf module (no imports): every table module that builds a path into the dataset names its
directory from here, so a reader, a writer and ``cleanup_old_versions`` can never disagree on one.
"""

from __future__ import annotations

#: Data files (``<uuid>.lance``) and their blob sidecars.
DATA_DIR = "data"
#: Deletion files (``<fragment>-<read version>-<id>.arrow|.bin``).
DELETIONS_DIR = "_deletions"
#: Transaction files (``<read version>-<uuid>.txn``) a manifest names.
TRANSACTIONS_DIR = "_transactions"
#: Manifests, one per version.
VERSIONS_DIR = "_versions"
#: Index files (``<index uuid>/...``); lance_fw reads no index yet but never treats them as strays.
INDICES_DIR = "_indices"
#: Tag files (``<tag>.json``), as path parts below the root.
TAGS_DIR = ("_refs", "tags")

#: File name suffixes of what those directories hold.
MANIFEST_SUFFIX = ".manifest"
TRANSACTION_SUFFIX = ".txn"
DATA_FILE_SUFFIX = ".lance"
