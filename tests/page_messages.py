"""The page encodings of a dataset's data files, parsed: what tests compare between the two
libraries' files (layouts, compressions, dictionaries) page by page."""

from __future__ import annotations

import glob
from typing import TypeVar

from google.protobuf import any_pb2
from google.protobuf.message import Message

from lance_fw.file.container import read_tail
from lance_fw.io.storage import resolve_storage

M = TypeVar("M", bound=Message)


def page_messages(path: str, message_type: type[M], column: int = 0) -> list[M]:
    """Every page's encoding of one column of every data file of the dataset at ``path``, in file
    order, unpacked into ``message_type`` (2.0's ``ArrayEncoding``, 2.1's ``PageLayout``)."""
    out = []
    for name in sorted(glob.glob(f"{path}/data/*.lance")):
        for page in read_tail(resolve_storage(name).open_reader(name)).columns[column].pages:
            wrapped = any_pb2.Any()
            wrapped.ParseFromString(page.encoding.direct.encoding)
            message = message_type()
            assert wrapped.Unpack(message), f"{name}: a page encoding that is not a {message_type.__name__}"
            out.append(message)
    return out
