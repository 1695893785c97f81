"""Storage abstraction: the kernel talks to files only through ``Storage`` objects from plugins."""

from lance_fw.io.storage import RangeReader, Storage, coalesce_ranges, join_uri, resolve_storage

__all__ = ["RangeReader", "Storage", "coalesce_ranges", "join_uri", "resolve_storage"]
