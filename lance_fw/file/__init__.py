"""The Lance v2 data-file container (2.0/2.1/2.2): footer, column metadata, pages, global buffers.

``LanceFileReader`` / ``LanceFileWriter`` here are pylance's ``lance.file`` classes (one file, its
signatures); the file layer's own reader and writer are ``file.reader`` / ``file.writer``.
"""

from lance_fw.file.pylance_api import (
    LanceBufferDescriptor,
    LanceFileMetadata,
    LanceFileReader,
    LanceFileWriter,
    ReaderResults,
)
from lance_fw.file.pylance_metadata import (
    LanceColumnMetadata,
    LanceColumnStatistics,
    LanceFileStatistics,
    LancePageMetadata,
    stable_version,
)

__all__ = [
    "LanceBufferDescriptor",
    "LanceColumnMetadata",
    "LanceColumnStatistics",
    "LanceFileMetadata",
    "LanceFileReader",
    "LanceFileStatistics",
    "LanceFileWriter",
    "LancePageMetadata",
    "ReaderResults",
    "stable_version",
]
