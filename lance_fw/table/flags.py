"""Manifest feature flags: refuse what we cannot honour instead of misreading it."""

from __future__ import annotations

from lance_fw.errors import UnsupportedFeatureError

DELETION_FILES = 1
STABLE_ROW_IDS = 2
USE_V2_FORMAT_DEPRECATED = 4
TABLE_CONFIG = 8
BASE_PATHS = 16
DISABLE_TRANSACTION_FILE = 32

_NAMES = {1: "DELETION_FILES", 2: "STABLE_ROW_IDS", 4: "USE_V2_FORMAT_DEPRECATED", 8: "TABLE_CONFIG",
          16: "BASE_PATHS", 32: "DISABLE_TRANSACTION_FILE", 64: "UNSTABLE_DATA_OVERLAY_FILES",
          128: "MEM_WAL_INDEX_CATCHUP"}
READABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG | DISABLE_TRANSACTION_FILE
WRITABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG


def _describe(bits: int) -> str:
    names = [_NAMES.get(1 << i, f"unknown bit {1 << i}") for i in range(64) if bits >> i & 1]
    return ", ".join(names)


def check_readable(where: str, reader_flags: int) -> None:
    missing = reader_flags & ~READABLE
    if missing:
        raise UnsupportedFeatureError(f"{where}: the dataset needs reader features lance_fw does not "
                                      f"support: {_describe(missing)}")


def check_writable(where: str, writer_flags: int) -> None:
    missing = writer_flags & ~WRITABLE
    if missing:
        raise UnsupportedFeatureError(f"{where}: the dataset needs writer features lance_fw does not "
                                      f"support: {_describe(missing)}")


def flags_for(manifest, stable_row_ids: bool = False) -> int:
    """Writer flags a manifest needs, from what it contains (readers get the same minus TABLE_CONFIG)."""
    flags = STABLE_ROW_IDS if stable_row_ids else 0
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        flags |= DELETION_FILES
    if len(manifest.config):
        flags |= TABLE_CONFIG
    return flags
