"""Retired: local commits go through the generic put-if-absent handler (``commit_put_if_absent``),
which uses ``LocalStorage.put_if_absent`` (temp file + ``os.link``).

The module stays, with no hooks, only while its entry point is still registered.
"""
