"""pylance options lance_fw names but does not implement.

Every public function takes pylance's parameters by name (no ``**kwargs``: a misspelt or unknown
option is a ``TypeError``). An option lance_fw cannot honour is accepted only at its default; any
other value raises ``UnsupportedFeatureError`` naming it, so it is never silently ignored. Options
that only tune performance (read-ahead, caches, thread counts) cannot change a result and are
accepted as they are.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pyarrow.compute as pc

from lance_fw.errors import UnsupportedFeatureError

# -- the types of pylance's arguments, named once for every layer that takes them ---------------

#: ``columns=``: column names (``"a.b"`` for a struct field) or ``{output name: SQL expression}``
Columns = Sequence[str] | Mapping[str, str]
#: ``filter=`` / ``predicate=``: Lance SQL text or a ``pyarrow.compute.Expression``
Filter = str | pc.Expression
#: pylance's ``commit_lock``: called with the version about to be committed, it returns the context
#: manager held while the manifest is written (checked where it is used, ``table/commit.py``)
CommitLock = Callable[[int], Any]


class HasUri(Protocol):
    """A dataset object passed where a URI is expected (pylance takes its datasets there too)."""

    @property
    def uri(self) -> str: ...


#: A dataset location: a URI / path, or a dataset object whose ``uri`` is used
Uri = str | os.PathLike[str] | HasUri


def uri_string(uri: Uri) -> str:
    """The text of a location argument (a dataset object gives its ``uri``)."""
    if isinstance(uri, (str, os.PathLike)):
        return os.fspath(uri)
    return uri.uri


#: An option lance_fw accepts only at pylance's default: any value is allowed by the signature and
#: checked at run time (``refuse``), so a non-default one raises ``UnsupportedFeatureError``.
Unsupported = object


def refuse(function: str, given: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
    """Raise for the first option in ``given`` set to something other than None or its default
    (``defaults[name]``, None when absent)."""
    defaults = defaults or {}
    for name, value in given.items():
        if value is not None and not _same(value, defaults.get(name)):
            raise UnsupportedFeatureError(f"{function}: option {name}={value!r} is not supported")


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:
        return False
