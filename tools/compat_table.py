"""Generate ``docs/pylance-compat.md``: every public pylance 14 name and what lance_fw does with it.

Why a generated table: the README promises pylance's names, and a hand-kept list drifts. This tool
introspects the installed pylance (the oracle) and ``lance_fw`` side by side; each name gets one
status:

- **works**: a smoke call (``tools/compat_smokes.py``) ran the same code against both libraries on
  a tiny dataset and got equal results (values, schema, error class) -- presence alone never counts;
- **differs**: the smoke call gave another result, or the parameter list differs (names / kinds);
- **refused**: lance_fw has the name and raises ``UnsupportedFeatureError`` (says why);
- **missing**: lance_fw has no such name;
- **untested**: lance_fw has the name, no smoke call covers it yet.

``python tools/compat_table.py`` rewrites the doc; ``--check`` fails when it is stale
(``tests/test_pylance_compat_doc.py`` runs the same comparison in memory).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "pylance-compat.md"
sys.path.insert(0, str(ROOT / "tools"))

from compat_smokes import SMOKES, Outcome, run_smokes  # noqa: E402

#: pylance modules whose public names are listed (``lance.X`` is looked up as ``lance_fw.X``)
MODULES = (
    "lance",
    "lance.dataset",
    "lance.fragment",
    "lance.file",
    "lance.arrow",
    "lance.vector",
    "lance.indices",
    "lance.namespace",
    "lance.sampler",
    "lance.progress",
    "lance.query",
    "lance.blob",
    "lance.schema",
    "lance.udf",
    "lance.optimize",
    "lance.commit",
    "lance.util",
    "lance.debug",
)

#: pylance classes whose public members are listed: pylance's "module:Class", then where lance_fw's
#: counterpart lives (the first path that resolves; users reach some only through other objects)
CLASSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "LanceDataset": ("lance.dataset:LanceDataset", ("lance_fw:LanceDataset",)),
    "LanceFragment": ("lance.fragment:LanceFragment", ("lance_fw:LanceFragment",)),
    "LanceScanner": ("lance.dataset:LanceScanner", ("lance_fw:LanceScanner",)),
    "DatasetOptimizer": (
        "lance.dataset:DatasetOptimizer",
        ("lance_fw.api.optimizer:DatasetOptimizer",),
    ),
    "MergeInsertBuilder": ("lance.dataset:MergeInsertBuilder", ("lance_fw:MergeInsertBuilder",)),
    "Tags": ("lance.dataset:Tags", ("lance_fw.table.tags:Tags",)),
    "LanceFileReader": ("lance.file:LanceFileReader", ("lance_fw.file:LanceFileReader",)),
    "LanceFileWriter": ("lance.file:LanceFileWriter", ("lance_fw.file:LanceFileWriter",)),
}

#: Modules whose classes are not pylance's own surface even when a pylance class derives from them
_FOREIGN_BASES = ("builtins", "abc", "typing", "pyarrow", "enum")
#: Module-level values that are never API, whatever module defines them
_NOT_API = {"TYPE_CHECKING", "annotations", "LOGGER"}
#: Marker a lance_fw refusal stub carries: the reason it gives (see lance_fw._util.refusals)
REFUSED_MARK = "__lance_fw_refused__"

STATUSES = ("works", "differs", "refused", "missing", "untested")

_MISSING = object()
#: What ``_member`` gives for an attribute set in ``__init__`` (present, nothing to compare)
_INSTANCE_ATTRIBUTE = object()


@dataclass(frozen=True)
class Row:
    section: str
    name: str
    status: str
    detail: str


# -- pylance's surface ------------------------------------------------------------------------


def _is_defined_in(value: object, module: str) -> bool:
    return getattr(value, "__module__", None) == module


def _source_names(module: str) -> list[str]:
    """Top-level public defs of a module that does not import here (``lance.vector`` needs tqdm)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return []
    tree = ast.parse(Path(spec.origin).read_text())
    names = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    ]
    return sorted(names)


def module_names(module: str) -> tuple[list[str], types.ModuleType | None]:
    """The public names of a pylance module: ``__all__`` where it has one; else the classes and
    functions it defines and its UPPER_CASE constants (imports such as ``Optional`` are not API)."""
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return _source_names(module), None
    declared = getattr(mod, "__all__", None)
    if declared is not None:
        return sorted(n for n in declared if n not in _NOT_API), mod
    names = []
    for name, value in vars(mod).items():
        if name.startswith("_") or name in _NOT_API or isinstance(value, types.ModuleType):
            continue
        if _is_defined_in(value, module) or (name.isupper() and isinstance(value, (int, str, float))):
            names.append(name)
    return sorted(names), mod


def _resolve(path: str) -> object:
    module, _, attr = path.partition(":")
    try:
        value: object = importlib.import_module(module)
    except ImportError:
        return _MISSING
    for part in attr.split(".") if attr else ():
        value = getattr(value, part, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def class_members(cls: type) -> list[str]:
    """Public members a class defines itself or inherits from pylance classes (not pyarrow's)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in _FOREIGN_BASES:
            continue
        names.update(n for n in vars(klass) if not n.startswith("_"))
    return sorted(names)


# -- signatures -------------------------------------------------------------------------------


def _parameters(value: object) -> list[inspect.Parameter] | None:
    """A function's or method's parameters after ``self``; None for classes (most are built by
    lance_fw's own calls, not by users: their constructors are compared by smoke calls only)."""
    target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    if isinstance(target, type) or not callable(target):
        return None
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None  # a native function without a text signature
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return params


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _names(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" +{len(names) - limit} more" if len(names) > limit else "")


def signature_difference(theirs: object, ours: object) -> str | None:
    """How lance_fw's parameter list differs from pylance's (None: the same names and kinds, or no
    signature to compare). Extra lance_fw parameters with defaults and a ``**kwargs`` taking
    pylance's keywords are not differences: pylance's calls still bind."""
    py, fw = _parameters(theirs), _parameters(ours)
    if py is None or fw is None:
        return None
    by_name = {p.name: p for p in fw}
    takes_keywords = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in fw)
    lacks, kinds = [], []
    for p in py:
        if p.kind in _VARIADIC:
            continue
        q = by_name.get(p.name)
        if q is None:
            if not (takes_keywords and p.kind is not inspect.Parameter.POSITIONAL_ONLY):
                lacks.append(p.name)
        elif p.kind in _POSITIONAL and q.kind is inspect.Parameter.KEYWORD_ONLY:
            kinds.append(f"{p.name} keyword-only")
        elif p.kind is not inspect.Parameter.POSITIONAL_ONLY and q.kind is inspect.Parameter.POSITIONAL_ONLY:
            kinds.append(f"{p.name} positional-only")
    py_names = {p.name for p in py}
    extra = [
        p.name
        for p in fw
        if p.name not in py_names and p.default is inspect.Parameter.empty and p.kind not in _VARIADIC
    ]
    # pylance's i-th positional parameter must be lance_fw's i-th, or positional calls bind wrongly
    fw_positional = [p.name for p in fw if p.kind in _POSITIONAL]
    shifted = [
        p.name
        for i, p in enumerate(q for q in py if q.kind in _POSITIONAL)
        if p.name in fw_positional and (i >= len(fw_positional) or fw_positional[i] != p.name)
    ]
    parts = []
    if lacks:
        parts.append(f"lacks {_names(lacks)}")
    if kinds:
        parts.append(_names(kinds))
    if extra:
        parts.append(f"requires {_names(extra)}")
    if shifted:
        parts.append(f"positional order differs from {shifted[0]}")
    return "; ".join(parts) or None


# -- the table --------------------------------------------------------------------------------


def _status(key: str, theirs: object, ours: object, outcomes: dict[str, Outcome]) -> tuple[str, str]:
    if ours is _MISSING:
        return "missing", ""
    refused = getattr(ours, REFUSED_MARK, None)
    if refused is not None:
        return "refused", str(refused)
    difference = signature_difference(theirs, ours) if theirs is not _MISSING else None
    outcome = outcomes.get(key)
    if outcome is None:
        if difference:
            return "differs", f"signature: {difference}"
        return "untested", ""
    if outcome.status == "works" and difference:
        return "differs", f"signature: {difference}"
    return outcome.status, outcome.detail


def _instance_attributes(cls: type) -> set[str]:
    """Names a class's ``__init__`` assigns on ``self`` (attributes no class lookup shows)."""
    init = next((vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k)), None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return set()
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _member(cls: object, name: str) -> object:
    if not isinstance(cls, type):
        return _MISSING
    # the class attribute itself: a property or descriptor, not what it returns
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return _INSTANCE_ATTRIBUTE if name in _instance_attributes(cls) else _MISSING


def build_rows(outcomes: dict[str, Outcome]) -> list[Row]:
    rows = []
    for module in MODULES:
        names, mod = module_names(module)
        ours_mod = _resolve(module.replace("lance", "lance_fw", 1))
        for name in names:
            theirs = getattr(mod, name, _MISSING) if mod is not None else _MISSING
            ours = getattr(ours_mod, name, _MISSING) if ours_mod is not _MISSING else _MISSING
            key = f"{module}.{name}"
            rows.append(Row(module, name, *_status(key, theirs, ours, outcomes)))
    for cls_name, (path, candidates) in CLASSES.items():
        theirs_cls = _resolve(path)
        if theirs_cls is _MISSING:
            continue
        ours_cls = next((c for c in map(_resolve, candidates) if c is not _MISSING), _MISSING)
        assert isinstance(theirs_cls, type)
        for name in class_members(theirs_cls):
            theirs = getattr(theirs_cls, name, _MISSING)
            key = f"{cls_name}.{name}"
            rows.append(Row(cls_name, name, *_status(key, theirs, _member(ours_cls, name), outcomes)))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[Row]) -> str:
    counts = Counter(r.status for r in rows)
    out = [
        "# pylance 14 compatibility",
        "",
        "Generated by `tools/compat_table.py` (do not edit; rerun it). Every public name of the",
        "pylance modules and classes below, checked against `lance_fw`:",
        "",
        "- **works**: a smoke call ran the same code on both libraries and got equal results;",
        "- **differs**: another result, or another parameter list (how is said);",
        "- **refused**: lance_fw raises `UnsupportedFeatureError` (why is said);",
        "- **missing**: no such name in lance_fw;",
        "- **untested**: present in lance_fw, no smoke call covers it yet.",
        "",
        "| status | count |",
        "|---|---|",
        *(f"| {s} | {counts.get(s, 0)} |" for s in STATUSES),
        f"| total | {len(rows)} |",
    ]
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            kind = "class" if section in CLASSES else "module"
            out += ["", f"## {kind} `{section}`", "", "| name | status | detail |", "|---|---|---|"]
        out.append(f"| `{row.name}` | {row.status} | {_cell(row.detail)} |")
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES)
    out += ["", "## Counts", "", f"{len(rows)} public pylance names: {summary}."]
    return "\n".join(out) + "\n"


def generate(only: Callable[[str], bool] | None = None) -> str:
    """The doc's text: runs every smoke call against both libraries (a few seconds)."""
    return render(build_rows(run_smokes(only)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the doc is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is stale; run python tools/compat_table.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    counts = Counter(line.split(" | ")[1] for line in text.splitlines() if line.startswith("| `"))
    print(", ".join(f"{s} {counts.get(s, 0)}" for s in STATUSES), f"({len(SMOKES)} smoke calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Row", "build_rows", "generate", "render", "signature_difference"]
