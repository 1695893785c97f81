"""Regular expressions of the Lance SQL dialect, as DataFusion (Rust's regex crate) reads them,
evaluated with Arrow's RE2 kernels: ``regexp_like``, ``regexp_match`` (whether it matched) and
``regexp_replace``. Split from ``filter_functions`` (whose table names them) to keep both small;
every function takes the visitor for its values, literals and errors.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

if TYPE_CHECKING:  # the visitor calls these functions with itself; filter.py imports this module
    from lance_fw.query.filter import _Visitor

_UNICODE_CLASSES = {"w": r"\pL\pM\pN\p{Pc}", "d": r"\p{Nd}"}


def _unicode_classes(pattern: str) -> str:
    """Rust's ``\\w`` and ``\\d`` are Unicode-aware; RE2's (pyarrow's) are ASCII: spell them out."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _UNICODE_CLASSES:
                out.append(_UNICODE_CLASSES[nxt] if in_class else f"[{_UNICODE_CLASSES[nxt]}]")
            elif nxt.lower() in _UNICODE_CLASSES and not in_class:
                out.append(f"[^{_UNICODE_CLASSES[nxt.lower()]}]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


#: a regex piece matching a literal backslash: ``\\`` or its hex / Unicode spellings
_LITERAL_BACKSLASH = re.compile(r"\\\\|\\[xuU]\{?0*5[cC]")


def regexp_like(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    pattern = v.string_literal(args[1])
    flags = v.string_literal(args[2]) if len(args) > 2 else ""
    if pattern is None or flags is None:
        return pc.scalar(pa.scalar(None, pa.bool_()))
    if set(flags) - set("imsc"):
        raise v.fail(node, "supports only the regex flags i, m, s and c")
    if _LITERAL_BACKSLASH.search(pattern):
        # DataFusion's simplifier rewrites a literal regex into LIKE '%...%' without escaping its
        # backslashes, so pylance reads '\\' as LIKE's escape ('\\' matches '100%'), not a backslash
        raise v.fail(
            node, "matches a literal backslash, which pylance evaluates as a LIKE escape: not supported"
        )
    inline = "".join(sorted(set(flags) - {"c"}))
    pattern = _unicode_classes(pattern)
    return pc.match_substring_regex(
        v.visit_value(args[0]), pattern=f"(?{inline}){pattern}" if inline else pattern
    )


#: functions whose value is DataFusion's list of matched groups, NULL without a match: lance_fw
#: computes only whether it is NULL (the visitor allows them only where that is all that counts)
MATCHED_GROUPS = {"regexp_match"}


def regexp_match(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    """True where the pattern matches, else NULL: the NULL-ness of DataFusion's list of groups
    (``regexp_match(...) IS NULL``; a filter's ``regexp_match(...)`` is ``... IS NOT NULL``)."""
    matched = regexp_like(v, node, args)
    return pc.if_else(matched, True, pa.scalar(None, pa.bool_()))


#: Rust's replacement group reference: ``$name`` / ``${name}`` (after DataFusion's ``\N`` -> ``${N}``)
_GROUP_REFERENCE = re.compile(r"\\(\d+)|\$\$|\$\{([^}]*)\}|\$([0-9A-Za-z_]+)")
_RE2_MAX_GROUP = 9


def _rust_replacement(v: _Visitor, node: exp.Expression, pattern: str, replacement: str) -> str:
    r"""A DataFusion ``regexp_replace`` replacement in RE2's syntax: ``\N`` (DataFusion's POSIX
    form), ``$N``, ``${N}`` and ``$name`` are groups (an unknown one is empty), ``$$`` is ``$``; every
    other character, backslashes included, is literal (RE2 reads ``\`` as an escape: doubled)."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        compiled = None

    def group(name: str) -> str:
        if compiled is None:
            raise v.fail(node, "refers to a group of a pattern lance_fw cannot count groups in")
        index = int(name) if name.isdigit() else compiled.groupindex.get(name, compiled.groups + 1)
        if index > compiled.groups:
            return ""  # Rust's regex replaces a group that does not exist with nothing
        if index > _RE2_MAX_GROUP:
            raise v.fail(node, f"refers to group {index}; lance_fw supports groups 0 to {_RE2_MAX_GROUP}")
        return f"\\{index}"

    out, last = [], 0
    for m in _GROUP_REFERENCE.finditer(replacement):
        out.append(replacement[last : m.start()].replace("\\", "\\\\"))
        last = m.end()
        if m.group(0) == "$$":
            out.append("$")
        else:
            out.append(group(next(g for g in m.groups() if g is not None)))
    out.append(replacement[last:].replace("\\", "\\\\"))
    return "".join(out)


def regexp_replace(v: _Visitor, node: exp.Expression, args: list[exp.Expression]) -> pc.Expression:
    pattern, replacement = v.string_literal(args[1]), v.string_literal(args[2])
    flags = v.string_literal(args[3]) if len(args) > 3 else ""
    if pattern is None or replacement is None or flags is None:  # DataFusion: a NULL argument, NULL rows
        value = v.visit_value(args[0])
        return pc.scalar(pa.scalar(None, v.type_of(value)))
    if set(flags) - set("gimsc"):
        raise v.fail(node, "supports only the regex flags g, i, m, s and c")
    inline = "".join(sorted(set(flags) - {"c", "g"}))
    rewrite = _rust_replacement(v, node, pattern, replacement)
    pattern = (f"(?{inline})" if inline else "") + _unicode_classes(pattern)
    return pc.replace_substring_regex(
        v.visit_value(args[0]),
        pattern=pattern,
        replacement=rewrite,
        max_replacements=None if "g" in flags else 1,
    )


#: characters RE2 reads as syntax, escaped when a LIKE pattern becomes a regex
_REGEX_SYNTAX = frozenset("\\.+*?()|[]{}^$")


def like(value: pc.Expression, pattern: str, ignore_case: bool) -> pc.Expression:
    """DataFusion's LIKE: ``%`` any run, ``_`` any character, a backslash makes the next character
    literal and a trailing one is a backslash. Arrow's match_like agrees without backslashes, but
    its suffix fast path keeps escapes as written ('%a\\\\' looks for two backslashes) and it drops
    a trailing one: a pattern with a backslash is matched as the equivalent regex."""
    if "\\" not in pattern:
        return pc.match_like(value, pattern, ignore_case=ignore_case)
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            i += 1
            c = pattern[i]
            out.append("\\" + c if c in _REGEX_SYNTAX else c)
        elif c in "%_":
            out.append(".*" if c == "%" else ".")
        else:
            out.append("\\" + c if c in _REGEX_SYNTAX else c)
        i += 1
    flags = "(?is)" if ignore_case else "(?s)"
    return pc.match_substring_regex(value, pattern=f"{flags}^{''.join(out)}$")


__all__ = ["MATCHED_GROUPS", "like", "regexp_like", "regexp_match", "regexp_replace"]
