"""The pluggy manager: loads every plugin from the ``lance_fw`` entry-point group, and does not trust them.

Built-in plugins are not special in how they are found: they are listed in ``pyproject.toml`` under the
same group a third-party package uses. What the kernel adds on top of pluggy, because install order
must never decide what a dataset decodes to or where a write goes:

- **Conflicts are errors** (:class:`PluginConflictError`, naming both plugins and distributions): two
  entry points with the same name, two plugins claiming the same key of a collect hook (type URL,
  ``(family, kind)``, deletion codec, index name), or two plugins answering the storage / commit-handler
  hook for the same URI scheme. A collect-hook conflict fails only the uses of that key
  (:class:`Collected`): a page with a contested type URL cannot be decoded, every other page can.
  Built-ins among themselves keep their designed order. A third-party
  plugin replaces a built-in only when it says so in a module attribute
  ``LANCE_FW_OVERRIDES = {"lance_storage": ["file"], "lance_page_decoders": ["/my.Url"]}``
  (hook name -> keys; schemes for ``lance_storage`` / ``lance_commit_handler``). Two third-party
  plugins claiming the same key are always a conflict: disable one.
  Plugins registered at run time with :func:`register` are the caller's explicit choice and win.
- **Choosing**: ``LANCE_FW_DISABLE_PLUGINS=name1,name2`` skips those entry points (built-ins too, if
  named); ``LANCE_FW_DISABLE_PLUGIN_AUTOLOAD=1`` loads only lance_fw's own built-in entry points.
- **Isolation**: a plugin that fails to import, declares an unknown ``lance_*`` hook or does not fit its
  hookspecs is recorded (:func:`failures`), not fatal; errors for a missing scheme or encoding name it.
- Hook results are type-checked where they enter the kernel (:class:`PluginLoadError` naming the
  plugin): collect hooks return mappings with keys of the right type; ``lance_storage`` a ``Storage``,
  ``lance_commit_handler`` a ``CommitHandler``, ``lance_select_encoder`` a ``ColumnEncoder``.

``LANCE_FW_TRACE=1`` prints every hook call to stderr; tests call :func:`reload` after changing ``sys.path`` or the above.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pluggy

from lance_fw import hookspecs
from lance_fw.errors import (
    LanceError,
    PluginConflictError,
    PluginLoadError,
    StorageError,
)

ENTRY_POINT_GROUP = "lance_fw"
BUILTIN_DISTRIBUTION = "lance_fw"
OVERRIDES_ATTRIBUTE = "LANCE_FW_OVERRIDES"
ENV_DISABLE = "LANCE_FW_DISABLE_PLUGINS"
ENV_NO_AUTOLOAD = "LANCE_FW_DISABLE_PLUGIN_AUTOLOAD"
ENV_TRACE = "LANCE_FW_TRACE"
HOOK_PREFIX = "lance_"
# firstresult hooks that pick a backend by URI scheme: two plugins answering for one scheme conflict.
SCHEME_HOOKS = ("lance_storage", "lance_commit_handler")
SPEC_NAMES = frozenset(n for n in dir(hookspecs) if n.startswith(HOOK_PREFIX))


@dataclass
class PluginFailure:
    """A plugin that was not registered: its entry-point name, distribution and the typed error."""

    name: str
    distribution: str | None
    error: LanceError


@dataclass
class _State:
    pm: _Manager
    builtin: set[str] = field(default_factory=set)
    dists: dict[str, str] = field(default_factory=dict)  # plugin name -> "dist version"
    third_party: set[str] = field(default_factory=set)  # loaded from an entry point, not built in
    overrides: dict[str, dict[str, set]] = field(default_factory=dict)  # plugin -> hook -> keys
    failures: list[PluginFailure] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)

    def label(self, name: str) -> str:
        dist = self.dists.get(name)
        return f"{name!r} ({dist})" if dist else f"{name!r} (registered at run time)"


def _scheme(uri: str) -> str:
    return uri.split("://", 1)[0].lower() if "://" in uri else "file"


# Checks of firstresult hooks' answers (imports deferred: those modules import this one).
def _is_storage(value: object) -> bool:
    from lance_fw.io.storage import Storage

    return isinstance(value, Storage)


def _is_commit_handler(value: object) -> bool:
    from lance_fw.interfaces import CommitHandler

    return isinstance(value, CommitHandler)


def _is_column_encoder(value: object) -> bool:
    """``file.encoding.ColumnEncoder`` is a Protocol: an object with a callable ``encode``."""
    return callable(getattr(value, "encode", None))


RESULT_CHECKS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "lance_storage": ("Storage (lance_fw.io.storage)", _is_storage),
    "lance_commit_handler": ("CommitHandler (lance_fw.table.commit)", _is_commit_handler),
    "lance_select_encoder": (
        "ColumnEncoder (an object with encode(array) -> EncodedPage)",
        _is_column_encoder,
    ),
}


class _Manager(pluggy.PluginManager):
    """Calls the firstresult hooks of :data:`RESULT_CHECKS` one implementation at a time, so it knows
    which plugin answered: its answer is type-checked (``PluginLoadError`` naming the plugin), and
    for the scheme hooks the answers of third-party plugins are checked for conflicts."""

    state: _State

    def _hookexec(
        self,
        hook_name: str,
        methods: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, object],
        firstresult: bool,
    ) -> object | list[object]:
        if not (firstresult and hook_name in RESULT_CHECKS) or any(
            m.wrapper or m.hookwrapper for m in methods
        ):
            return super()._hookexec(hook_name, methods, kwargs, firstresult)
        state = self.state
        every = hook_name in SCHEME_HOOKS and any(m.plugin_name in state.third_party for m in methods)
        try:
            answers = self._answers(hook_name, methods, kwargs, every)
            if every:
                _check_scheme_answers(
                    state, hook_name, _scheme(str(kwargs.get("uri", ""))), [n for n, _ in answers]
                )
        except StorageError as exc:
            if not state.failures:
                raise
            raise StorageError(f"{exc}{failure_note()}") from exc
        if not answers:
            if state.failures and hook_name == "lance_storage":
                # (no commit handler: resolve_commit_handler explains, with the same failure note)
                raise StorageError(f"no plugin answers {hook_name} for {kwargs.get('uri')!r}{failure_note()}")
            return None
        name, answer = answers[0]
        expected, check = RESULT_CHECKS[hook_name]
        if not check(answer):
            raise PluginLoadError(
                f"plugin {state.label(name)}: {hook_name} returned {type(answer).__name__}, "
                f"expected a {expected} or None"
            )
        return answer

    def _answers(
        self, hook_name: str, methods: Sequence[pluggy.HookImpl], kwargs: Mapping[str, object], every: bool
    ) -> list[tuple[str, Any]]:
        """(plugin name, answer) of the implementations that answer, in pluggy's call order: only the
        first unless ``every``. With ``every``, one that raises after an earlier one answered counts
        as not answering (pluggy would never have called it)."""
        answers: list[tuple[str, Any]] = []
        for impl in reversed(methods):
            try:
                answer = super()._hookexec(hook_name, [impl], kwargs, True)
            except Exception:
                if answers:
                    continue
                raise
            if answer is not None:
                answers.append((impl.plugin_name, answer))
                if not every:
                    break
        return answers


def _check_scheme_answers(state: _State, hook_name: str, scheme: str, names: list[str]) -> None:
    """Several plugins answered for one scheme: fine among built-ins, or when the third-party one
    declared the override and no other third-party plugin answered; run-time plugins always win."""
    if any(n not in state.builtin and n not in state.third_party for n in names):
        return
    third = [n for n in names if n in state.third_party]
    if len(third) > 1:
        raise _conflict(state, hook_name, f"URI scheme {scheme!r}", third[0], third[1])
    if third and len(names) > 1 and scheme not in state.overrides.get(third[0], {}).get(hook_name, ()):
        other = next(n for n in names if n != third[0])
        raise _conflict(state, hook_name, f"URI scheme {scheme!r}", other, third[0])


def _conflict(state: _State, hook_name: str, what: str, first: str, second: str) -> PluginConflictError:
    return PluginConflictError(
        f"plugins {state.label(first)} and {state.label(second)} both provide {what} ({hook_name}); "
        f"disable one with {ENV_DISABLE}=name, or declare {OVERRIDES_ATTRIBUTE} in a plugin that "
        f"deliberately replaces a built-in"
    )


def _normalize(dist_name: str) -> str:
    return dist_name.lower().replace("-", "_").replace(".", "_")


def _unknown_hooks(plugin: object) -> list[str]:
    """``lance_*`` callables that are no hookspec: a typo would otherwise never be called."""
    module = plugin.__name__ if isinstance(plugin, types.ModuleType) else None
    bad = []
    for attr in dir(plugin):
        if not attr.startswith(HOOK_PREFIX) or attr in SPEC_NAMES:
            continue
        value = getattr(plugin, attr, None)
        if not callable(value):
            continue
        marked = hasattr(value, f"{ENTRY_POINT_GROUP}_impl")
        if marked or (module is not None and getattr(value, "__module__", None) == module):
            bad.append(attr)
    return bad


def _read_overrides(name: str, plugin: object) -> dict[str, set]:
    declared = getattr(plugin, OVERRIDES_ATTRIBUTE, None) or {}
    if not isinstance(declared, Mapping):
        raise PluginLoadError(
            f"plugin {name!r}: {OVERRIDES_ATTRIBUTE} must be a mapping of hook name to keys, "
            f"got {type(declared).__name__}"
        )
    out = {}
    for hook_name, keys in declared.items():
        if hook_name not in SPEC_NAMES:
            raise PluginLoadError(f"plugin {name!r}: {OVERRIDES_ATTRIBUTE} names unknown hook {hook_name!r}")
        out[hook_name] = {tuple(k) if isinstance(k, list) else k for k in keys}
    return out


def _check_plugin(name: str, plugin: object) -> None:
    unknown = _unknown_hooks(plugin)
    if unknown:
        raise PluginLoadError(
            f"plugin {name!r} defines {unknown} which are not lance_fw hooks (known: {sorted(SPEC_NAMES)})"
        )


def _load() -> _State:
    pm = _Manager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    state = _State(pm)
    pm.state = state
    blocked = {n.strip() for n in os.environ.get(ENV_DISABLE, "").split(",") if n.strip()}
    builtin_only = os.environ.get(ENV_NO_AUTOLOAD, "") not in ("", "0")
    found: dict[str, list[tuple[importlib.metadata.EntryPoint, str, bool]]] = {}
    for dist in importlib.metadata.distributions():
        dist_name = dist.metadata["Name"] or "?"
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP:
                continue
            label = f"{dist_name} {dist.version}"
            same = found.setdefault(ep.name, [])
            if any(e.value == ep.value and lab == label for e, lab, _ in same):
                continue  # the same installation seen twice on sys.path
            same.append((ep, label, _normalize(dist_name) == BUILTIN_DISTRIBUTION))
    # Built-ins first, so pluggy calls third-party implementations before them (newest first).
    for name, eps in sorted(found.items(), key=lambda item: (not all(b for _, _, b in item[1]), item[0])):
        if name in blocked or (builtin_only and not all(b for _, _, b in eps)):
            state.disabled.append(name)
            continue
        if len(eps) > 1:
            both = " and ".join(f"{e.value!r} ({lab})" for e, lab, _ in eps)
            conflict = PluginConflictError(
                f"entry point {name!r} of group {ENTRY_POINT_GROUP!r} is provided by "
                f"{both}; neither is loaded: uninstall one"
            )
            state.failures.append(PluginFailure(name, ", ".join(lab for _, lab, _ in eps), conflict))
            continue
        ep, label, builtin = eps[0]
        try:
            plugin = ep.load()
            _check_plugin(name, plugin)
            overrides = _read_overrides(name, plugin)
            pm.register(plugin, name=name)
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, LanceError)
                else PluginLoadError(f"plugin {name!r} ({label}) failed to load: {type(exc).__name__}: {exc}")
            )
            error.__cause__ = exc if error is not exc else exc.__cause__
            state.failures.append(PluginFailure(name, label, error))
            continue
        state.dists[name] = label
        state.overrides[name] = overrides
        (state.builtin if builtin else state.third_party).add(name)
    if os.environ.get(ENV_TRACE):
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    return state


_lock = threading.RLock()
_state: _State | None = None
_loading = False


def _get_state() -> _State:
    """The loaded state. A plugin that uses the manager while being imported fails alone
    (re-entrant lock + flag) instead of deadlocking or recursing into a second load."""
    global _state, _loading
    with _lock:
        if _state is None:
            if _loading:
                raise PluginLoadError(
                    "a plugin used the lance_fw plugin manager while being imported; "
                    "hooks are called only after every plugin is loaded"
                )
            _loading = True
            try:
                _state = _load()
            finally:
                _loading = False
        return _state


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide manager, created on first use."""
    return _get_state().pm


def reload() -> None:
    """Forget the manager and every cached hook answer, so the next use loads the entry points again.

    For tests that change ``sys.path`` or the ``LANCE_FW_*`` plugin variables. Plugins added with
    :func:`register` are dropped."""
    global _state
    with _lock:
        _state = None
    registry.reset()


def failures() -> list[PluginFailure]:
    """Plugins that did not load (import error, unknown hook, entry-point conflict)."""
    return list(_get_state().failures)


def failure_note() -> str:
    """A sentence for "nothing provides X" errors: the plugin that would have may have failed to load."""
    failed = _get_state().failures
    if not failed:
        return ""
    return "; plugins that failed to load: " + "; ".join(
        f"{f.name!r} ({f.distribution or '?'}): {f.error}" for f in failed
    )


def register(plugin: object, name: str | None = None) -> None:
    """Register a plugin object at run time (tests, notebooks); caches are rebuilt.

    A run-time plugin is the caller's explicit choice: it wins over entry-point plugins without an
    override declaration. It is still checked for unknown ``lance_*`` hooks."""
    _check_plugin(name or repr(plugin), plugin)
    get_plugin_manager().register(plugin, name=name)
    registry.reset()


def unregister(name: str) -> None:
    get_plugin_manager().unregister(name=name)
    registry.reset()


def _key_check(hook_name: str) -> Callable[[Any], bool]:
    if hook_name == "lance_kind_decoders":
        return lambda k: isinstance(k, tuple) and len(k) == 2 and all(isinstance(p, str) for p in k)
    if hook_name == "lance_deletion_codecs":
        return lambda k: isinstance(k, int)
    return lambda k: isinstance(k, str)


class Collected(dict):
    """A collect hook's merged answers, with its conflicts kept out.

    A key two plugins claim (a :class:`PluginConflictError`) is in neither's hands: it is not
    iterated, and asking for it (``[key]``, ``get``, ``in``) raises the conflict, naming both
    plugins. Every other key works, so a conflict over one type URL fails only the pages with that
    URL, not every read. ``conflicts``: key -> the conflict's message (``lance-fw plugins`` shows them).
    """

    def __init__(self, items: dict, conflicts: dict[Any, str]) -> None:
        super().__init__(items)
        self.conflicts = conflicts

    def _refuse_conflicted(self, key: Any) -> None:
        try:
            message = self.conflicts.get(key)
        except TypeError:  # an unhashable key cannot be conflicted (nor present)
            return
        if message is not None:
            raise PluginConflictError(message)

    def __getitem__(self, key: Any) -> Any:
        self._refuse_conflicted(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._refuse_conflicted(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._refuse_conflicted(key)
        return super().__contains__(key)


def _collected(hook_name: str, doc: str | None = None) -> cached_property[Collected]:
    """A ``_Registry`` attribute: ``hook_name``'s merged answers, collected on first use."""

    def collect(registry: _Registry) -> Collected:
        return registry._collect(hook_name)

    collect.__doc__ = doc
    return cached_property(collect)


class _Registry:
    """Merged answers of the collecting hooks, computed once and checked for conflicts and types."""

    def reset(self) -> None:
        for key, attribute in vars(_Registry).items():
            if isinstance(attribute, cached_property):
                self.__dict__.pop(key, None)

    @staticmethod
    def _collect(hook_name: str) -> Collected:
        state = _get_state()
        ok_key = _key_check(hook_name)
        merged: dict = {}
        owner: dict = {}
        conflicts: dict[Any, str] = {}
        # get_hookimpls() is in registration order (pluggy calls them newest first).
        for impl in getattr(state.pm.hook, hook_name).get_hookimpls():
            name = impl.plugin_name
            try:
                answered = state.pm._hookexec(hook_name, [impl], {}, False)  # one plugin, traced
                assert isinstance(answered, list)  # firstresult=False: pluggy answers a list
            except Exception as exc:
                raise PluginLoadError(
                    f"plugin {state.label(name)}: {hook_name} raised {type(exc).__name__}: {exc}"
                ) from exc
            result = answered[0] if answered else None
            if result is None:
                continue
            if not isinstance(result, Mapping):
                raise PluginLoadError(
                    f"plugin {state.label(name)}: {hook_name} returned "
                    f"{type(result).__name__}, expected a mapping"
                )
            for key, value in result.items():
                if not ok_key(key):
                    raise PluginLoadError(
                        f"plugin {state.label(name)}: {hook_name} returned key {key!r} of the wrong type"
                    )
                if key in conflicts:
                    continue  # already refused: a third claimant does not settle it
                prev = owner.get(key)
                try:
                    wins = prev is None or _new_wins(state, hook_name, key, prev, name)
                except PluginConflictError as exc:
                    conflicts[key] = str(exc)
                    merged.pop(key, None)
                    owner.pop(key, None)
                    continue
                if wins:
                    merged[key] = value
                    owner[key] = name
        _OWNERS[hook_name] = {key: state.label(name) for key, name in owner.items()}
        return Collected(merged, conflicts)

    page_decoders = _collected("lance_page_decoders")
    kind_decoders = _collected("lance_kind_decoders")
    deletion_codecs = _collected("lance_deletion_codecs")
    index_types = _collected("lance_index_types")  # ScalarIndexType by name (BTREE, BITMAP, ...)
    vector_index_types = _collected("lance_vector_index_types")  # VectorIndexType (IVF_PQ, ...)
    storage_options = _collected(
        "lance_storage_options", "``storage_options`` keys some plugin reads, with their descriptions."
    )


def _new_wins(state: _State, hook_name: str, key: Any, prev: str, new: str) -> bool:
    """``new`` (registered after ``prev``) claims ``key`` too: whether it wins, or a conflict."""
    entry = state.builtin | state.third_party
    if prev not in entry or new not in entry:
        return True  # a run-time plugin: the later registration wins
    if prev in state.builtin and new in state.builtin:
        return True  # built-ins keep their designed order
    for third, other in ((new, prev), (prev, new)):
        if (
            third in state.third_party
            and other in state.builtin
            and key in state.overrides.get(third, {}).get(hook_name, ())
        ):
            return third == new
    raise _conflict(state, hook_name, f"key {key!r}", prev, new)


_OWNERS: dict[str, dict] = {}  # collect hook -> key -> "'plugin' (dist)" whose answer the registry uses


def owner(hook_name: str, key: Any) -> str | None:
    """The plugin (``'name' (distribution)``) whose value the registry uses for ``key`` of a collect
    hook, for errors about what that value did (e.g. a decoder's output failing the reader's checks)."""
    return _OWNERS.get(hook_name, {}).get(key)


registry = _Registry()
COLLECT_HOOKS = (
    "lance_page_decoders",
    "lance_kind_decoders",
    "lance_deletion_codecs",
    "lance_index_types",
    "lance_vector_index_types",
    "lance_storage_options",
)


def provides() -> dict[str, dict[str, list[str]]]:
    """Per loaded plugin, the keys it returns from each collecting hook (type URLs, kinds, codecs,
    index names), for ``lance-fw plugins``. Never raises: a hook that fails is shown as its error."""
    state = _get_state()
    out: dict[str, dict[str, list[str]]] = {}
    for hook_name in COLLECT_HOOKS:
        for impl in getattr(state.pm.hook, hook_name).get_hookimpls():
            try:
                answered = state.pm._hookexec(hook_name, [impl], {}, False)
                assert isinstance(answered, list)  # firstresult=False: pluggy answers a list
                keys = sorted(map(str, answered[0])) if answered else []
            except Exception as exc:
                keys = [f"<error: {type(exc).__name__}: {exc}>"]
            out.setdefault(impl.plugin_name, {})[hook_name] = keys
    return out


def problems() -> list[str]:
    """Conflicts and type errors the registry would raise on first use, as messages (never raises)."""
    found = []
    for prop in (hook.removeprefix("lance_") for hook in COLLECT_HOOKS):  # registry attribute names
        try:
            collected = getattr(registry, prop)
        except LanceError as exc:
            found.append(f"{type(exc).__name__}: {exc}")
            continue
        found.extend(f"{PluginConflictError.__name__}: {message}" for message in collected.conflicts.values())
    return found


def plugins() -> list[dict[str, Any]]:
    """Every plugin: loaded ones with their distribution and hooks, failed ones with their error,
    disabled ones. Never raises because of a broken plugin."""
    state = _get_state()
    pm = state.pm
    out = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin)
        if name is None:  # every plugin is registered under its entry-point name
            continue
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or []))
        out.append(
            {
                "name": name,
                "distribution": state.dists.get(name),
                "hooks": hooks,
                "status": "loaded",
                "overrides": {h: sorted(map(str, k)) for h, k in state.overrides.get(name, {}).items()},
                "error": None,
            }
        )
    for f in state.failures:
        out.append(
            {
                "name": f.name,
                "distribution": f.distribution,
                "hooks": [],
                "status": "failed",
                "overrides": {},
                "error": str(f.error),
            }
        )
    for name in state.disabled:
        out.append(
            {
                "name": name,
                "distribution": None,
                "hooks": [],
                "status": "disabled",
                "overrides": {},
                "error": None,
            }
        )
    return sorted(out, key=lambda p: p["name"])
