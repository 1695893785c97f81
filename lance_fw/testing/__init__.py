"""Conformance kit for plugin authors: base test classes a plugin's own pytest suite subclasses.

Like fsspec's abstract filesystem tests: subclass, set a few class attributes (and override a
fixture for storage and commit handlers), and pytest collects the inherited tests::

    from lance_fw.testing import EncodingConformance, StorageConformance, CommitHandlerConformance

This package imports pytest and is meant for test suites only; lance_fw itself never imports it.
pylance (``import lance``) is used as a second reader where it is installed and skipped where not.
See docs/plugin-authoring.md, "Testing your plugin".
"""

from lance_fw.testing.commit import CommitHandlerConformance
from lance_fw.testing.data import DEFAULT_ARROW_TYPES, assert_identical, random_array
from lance_fw.testing.encoding import EncodingConformance, leaf_page_type_urls
from lance_fw.testing.storage import StorageConformance

__all__ = [
    "DEFAULT_ARROW_TYPES",
    "CommitHandlerConformance",
    "EncodingConformance",
    "StorageConformance",
    "assert_identical",
    "leaf_page_type_urls",
    "random_array",
]
