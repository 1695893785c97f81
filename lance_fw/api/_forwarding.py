"""Methods whose parameter list is another callable's: pylance's option lists, spelt out once.

pylance repeats each long option list on every method that takes it (``scanner``, ``to_table``,
``to_batches``, ``head`` ...). lance_fw spells each list once, on the callable that takes the options
(``LanceScanner``, ``LanceFragment.scanner``, ``table.cleanup``), and builds the methods that only
forward them here. The built method still has an explicit signature (``__signature__``, what
``inspect`` and ``help`` show): every call is bound against it, so an unknown keyword is a
``TypeError`` as with a written-out list, and nothing is swallowed. ``same_options`` keeps the exact
static type too (``ParamSpec``); ``derived_method`` serves the few lists pylance reorders or trims.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

P = ParamSpec("P")
S = TypeVar("S")
R = TypeVar("R")

#: What a built method does with a call: the object it was called on and every option by name
#: (defaults filled in, so the forwarding target sees the whole list as a written-out call would).
Run = Callable[[S, dict[str, Any]], R]

_SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)


def derived_method(
    target: Callable[..., object],
    run: Run[S, R],
    name: str,
    doc: str,
    *,
    skip: int = 1,
    drop: Collection[str] = (),
    first: Sequence[inspect.Parameter] = (),
    positional: bool = False,
) -> Callable[..., R]:
    """A method taking ``target``'s parameters after its first ``skip`` (the object or snapshot it
    is called on), less ``drop``, after the extra ``first`` ones; ``positional`` makes every option
    positional-or-keyword (for pylance lists that are positional where their source's are not)."""
    kept = [p for p in list(inspect.signature(target).parameters.values())[skip:] if p.name not in drop]
    if positional:
        kept = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in kept]
    signature = inspect.Signature([_SELF, *first, *kept])

    defaults = {p.name: p.default for p in kept if p.default is not inspect.Parameter.empty}
    keywords = frozenset(
        p.name
        for p in kept
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    complete = len(defaults) == len(kept) and not first  # every option has a default

    def method(self: S, /, *args: Any, **kwargs: Any) -> R:
        if complete and not args and keywords.issuperset(kwargs):
            return run(self, {**defaults, **kwargs})  # the common call: keywords only (bind is slow)
        bound = signature.bind(self, *args, **kwargs)  # unknown or doubled options: TypeError
        bound.apply_defaults()
        options = dict(bound.arguments)
        del options["self"]
        return run(self, options)

    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


def same_options(
    target: Callable[Concatenate[Any, P], object], run: Run[S, R], name: str, doc: str
) -> Callable[Concatenate[S, P], R]:
    """A method taking exactly ``target``'s parameters after its first (the object it is called on,
    or for a class the snapshot its constructor takes), typed as such."""
    return cast(Callable[Concatenate[S, P], R], derived_method(target, run, name, doc))
