"""pylance names lance_fw has no implementation for: a typed refusal instead of an ``AttributeError``.

Why: code written for pylance that reaches a feature lance_fw lacks must learn *that* (an
``UnsupportedFeatureError`` naming the feature and why), not stumble on a missing attribute that
reads like a typo. Each refused name is a ``Refused`` descriptor on the class: looking it up on
the class works (``hasattr``, ``help``, ``inspect``), calling it (or, for a property, reading it)
raises. ``tools/compat_table.py`` lists these names as "refused" with the reason given here, read
from the ``__lance_fw_refused__`` attribute every stub carries.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any, NoReturn, TypeVar

from lance_fw.errors import UnsupportedFeatureError

#: The attribute a refusal stub carries: the reason it gives (read by tools/compat_table.py)
REFUSED_MARK = "__lance_fw_refused__"

#: What ``inspect`` shows for a refused method: any positional arguments, no keyword catch-all
#: (every call raises before looking at them; keywords are accepted too, for the same error)
_ANY_ARGUMENTS = inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])


class NotImplementedInPylanceError(UnsupportedFeatureError, NotImplementedError):
    """A pyarrow ``Dataset`` method pylance itself leaves unimplemented (``join``, ``replace_schema``,
    ``partition_expression``): also a ``NotImplementedError``, the class pylance raises there."""


class Refused:
    """A method (or, with ``prop=True``, a property) that raises ``UnsupportedFeatureError``."""

    def __init__(
        self, why: str, *, prop: bool = False, error: type[UnsupportedFeatureError] = UnsupportedFeatureError
    ) -> None:
        self.why, self.prop, self.error = why, prop, error
        self.owner, self.name = "", ""
        self.__signature__ = _ANY_ARGUMENTS
        setattr(self, REFUSED_MARK, why)

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner.__name__, name

    def _raise(self, *args: object, **kwargs: object) -> NoReturn:
        raise self.error(f"{self.owner}.{self.name} is not supported by lance_fw: {self.why}")

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if self.prop:
            self._raise()
        return self._raise

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        """Called through the class (``LanceDataset.drop(uri)``, a static method in pylance)."""
        self._raise()


def refused_function(module: str, name: str, why: str) -> Refused:
    """A module-level refused function (``lance.vector``'s accelerator helpers): called with any
    arguments it raises ``UnsupportedFeatureError`` naming ``<module>.<name>`` and ``why``."""
    stub = Refused(why)
    stub.owner, stub.name = module, name
    return stub


def refused_names(cls: type) -> dict[str, str]:
    """Every refused name of ``cls`` (and its bases) with its reason."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update({k: v.why for k, v in vars(klass).items() if isinstance(v, Refused)})
    return out


C = TypeVar("C", bound=type)


def refusing(
    methods: Mapping[str, Collection[str]],
    *,
    properties: Mapping[str, Collection[str]] | None = None,
    error: type[UnsupportedFeatureError] = UnsupportedFeatureError,
) -> Callable[[C], C]:
    """A class decorator adding a ``Refused`` stub for every name, grouped by the reason it gives:
    ``methods`` and ``properties`` map a reason to the names it refuses. Why a table: the refused
    surface is data (pylance's names, lance_fw's reasons), read at a glance by reason.

    Raises:
        TypeError: a name the class itself defines: a refusal never hides its own feature. A
            name only a base defines is shadowed (that is how a base's method is refused).
    """

    def decorate(cls: C) -> C:
        groups = [(why, names, False) for why, names in methods.items()]
        groups += [(why, names, True) for why, names in (properties or {}).items()]
        for why, names, prop in groups:
            for name in names:
                if name in vars(cls):
                    raise TypeError(f"{cls.__name__}.{name} exists; it cannot be refused")
                stub = Refused(why, prop=prop, error=error)
                setattr(cls, name, stub)
                stub.__set_name__(cls, name)
        return cls

    return decorate


#: Reasons shared by several names
INDEX_SEGMENTS = "vector and distributed index building are not implemented (scalar indices are)"
MEM_WAL = "the MemWAL (LSM write-ahead log) is not implemented"
BRANCHES = "branches and multi-base datasets are not implemented"
IO_STATS = "lance_fw keeps no IO statistics"


__all__ = [
    "REFUSED_MARK",
    "NotImplementedInPylanceError",
    "Refused",
    "refused_function",
    "refused_names",
    "refusing",
]
