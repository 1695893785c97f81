"""The package's layering, checked from the source with ``ast`` (issue 21).

Why a test: the layer order is what keeps one implementation per idea in the lowest layer that
needs it. Once ``table/`` imports ``api/`` (or a plugin imports the DuckDB front end), code that
another layer needs starts living in the façade, import circles appear, and the plugin kernel can no
longer be loaded without the whole library. Reading imports from the AST (top-level *and*
function-level, since a deferred import is still a dependency) makes every such step visible in CI.

The layers, lowest first (a module may import its own layer or any lower one, never a higher one):

====  ==========================================================  ===========================================
rank  modules                                                     why here
====  ==========================================================  ===========================================
0     ``_version``, ``errors``, ``options``, ``_proto``, ``_util``  leaves: version, error types, option keys,
                                                                   generated protobuf, byte/array helpers
1     ``hookspecs``, ``plugin_manager``, ``interfaces``,          the plugin kernel (hook specs, registry and
      ``io``, ``schema``                                          the interfaces plugins implement), storage
                                                                   backends resolved through it, and the
                                                                   Arrow <-> Lance field mapping the encoder
                                                                   interface (``ColumnSpec.field``) names
2     ``file``                                                    one Lance file: container, encodings
3     ``table``, ``query``                                        the table format (manifests, fragments,
                                                                   commits, writes) and the expression /
                                                                   scan engine over a table snapshot
4     ``api``, ``fragment``, ``dataset`` (pylance's modules)   the pylance-compatible façade
5     ``duckdb``, ``spark``, ``cli``, ``testing``                 front ends and tools built on the façade
====  ==========================================================  ===========================================

``plugins/`` (the ``lance_fw_plugins`` package the registry loads) may import only the kernel
layers (rank <= 3) — never the façade or the front ends, so a plugin works for every front end.
The package root ``lance_fw`` (``__init__``) re-exports the façade: it sits at rank 4, and nothing
below it may import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"lance_fw": ROOT / "lance_fw", "lance_fw_plugins": ROOT / "plugins"}

# First dotted component under lance_fw -> rank (see the module docstring for the reasons).
LAYER_RANK: dict[str, int] = {
    "_version": 0, "errors": 0, "options": 0, "_proto": 0, "_util": 0,
    "hookspecs": 1, "plugin_manager": 1, "interfaces": 1, "io": 1, "schema": 1,
    "file": 2,
    "table": 3, "query": 3,
    "__init__": 4, "api": 4, "fragment": 4, "dataset": 4, "optimize": 4, "commit": 4, "util": 4, "schema_json": 1,
    "arrow": 4, "vector": 4, "sampler": 4, "namespace": 4, "udf": 4, "progress": 4, "blob": 4, "indices": 4,
    "duckdb": 5, "spark": 5, "cli": 5, "testing": 5,
}
PLUGIN_MAX_RANK = 3

# Imports that break the layer order today and need a bigger move than one change allows.
# The test asserts this set is *exactly* the current violations, so it can only shrink:
# fixing one means deleting its line here. Each entry: (importing module, imported module).
# Empty since the plugin interfaces moved to ``lance_fw.interfaces``: keep it so.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def _module_name(package: str, base: Path, path: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _modules() -> dict[str, Path]:
    found = {}
    for package, base in PACKAGES.items():
        for path in sorted(base.rglob("*.py")):
            if "_pb2" in path.name:
                continue
            found[_module_name(package, base, path)] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([target] if target else []))


def _imports(module: str, path: Path, submodules: frozenset[str] | set[str] = frozenset()
             ) -> list[tuple[str, bool]]:
    """(imported module, at module level?) for every import of lance_fw / lance_fw_plugins."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    # Module-level imports run at import time (they can form circles). An import under a module-level
    # `if TYPE_CHECKING:` is not run, so it cannot form a circle, but it still names a dependency and
    # counts for the layer order, as function-level imports do.
    top_level = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_package, node.level, node.module)
                    if node.level else (node.module or ""))
            # `from lance_fw import fragment` / `from . import layouts` import submodules only: the
            # package itself is then no dependency (its __init__ is already run by Python, but a name
            # read from it would be). `submodules` tells the two apart.
            names = [f"{base}.{alias.name}" for alias in node.names]
            if any(f"{base}.{alias.name}" not in submodules for alias in node.names):
                names.append(base)
        for name in names:
            if name.split(".")[0] in PACKAGES:
                out.append((name, id(node) in top_level))
    return out


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module prefix of a dotted import target."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _rank(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "lance_fw":
        return None
    return LAYER_RANK["__init__" if len(parts) == 1 else parts[1]]


def _edges() -> set[tuple[str, str, bool]]:
    modules = _modules()
    edges = set()
    for module, path in modules.items():
        for name, top in _imports(module, path, set(modules)):
            target = _known(name, modules)
            if target is None or target == module:
                continue
            edges.add((module, target, top))
    return edges


def test_every_lance_fw_module_has_a_layer():
    unranked = sorted({m.split(".")[1] for m in _modules() if m.startswith("lance_fw.")} - set(LAYER_RANK))
    assert not unranked, f"add these to LAYER_RANK with a reason in the docstring: {unranked}"


def _layer_violations() -> set[tuple[str, str]]:
    bad = set()
    for source, target, _top in _edges():
        target_rank = _rank(target)
        if source.startswith("lance_fw_plugins"):
            if target_rank is not None and target_rank > PLUGIN_MAX_RANK:
                bad.add((source, target))
            continue
        source_rank = _rank(source)
        if target_rank is not None and source_rank is not None and target_rank > source_rank:
            bad.add((source, target))
    return bad


def test_layer_order():
    violations = _layer_violations()
    new = sorted(violations - KNOWN_VIOLATIONS)
    fixed = sorted(KNOWN_VIOLATIONS - violations)
    assert not new, "imports against the layer order (lower layer -> higher):\n" + "\n".join(
        f"  {a} -> {b}" for a, b in new)
    assert not fixed, "these known violations are fixed; delete them from KNOWN_VIOLATIONS:\n" + "\n".join(
        f"  {a} -> {b}" for a, b in fixed)


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_module_level_import_cycles():
    edges = set()
    for source, target, top in _edges():
        if not top:
            continue
        edges.add((source, target))
    cycles = _cycles(edges)
    assert not cycles, "module-level import cycles:\n" + "\n".join("  " + " <-> ".join(c) for c in cycles)


def test_layer_checker_sees_function_level_imports(tmp_path):
    """The walker must count imports inside functions, or deferred imports would hide violations."""
    path = tmp_path / "mod.py"
    path.write_text("import lance_fw.errors\n\ndef f():\n    from lance_fw.api import dataset\n")
    found = _imports("lance_fw.table.mod", path)
    assert ("lance_fw.errors", True) in found
    assert ("lance_fw.api.dataset", False) in found


def test_version_leaf_matches_distribution():
    """lance_fw._version is the one place the version is spelled; it must match the installed metadata."""
    import importlib.metadata

    import lance_fw
    from lance_fw._version import __version__

    assert lance_fw.__version__ == __version__ == importlib.metadata.version("lance_fw")


#: Layers below the façade: they take a ``table.snapshot.Snapshot``, never a ``LanceDataset``.
_BELOW_API = ("lance_fw._util", "lance_fw.io", "lance_fw.file", "lance_fw.table", "lance_fw.query", "lance_fw_plugins")

#: Front ends that use the façade's public members and the layers' public API (Snapshot, scanner,
#: filter_plan), never a ``LanceDataset``'s private attributes (issue 21).
_FRONT_ENDS_ON_PUBLIC_API = ("lance_fw.spark",)

# Reads of LanceDataset's private attributes below the façade; none are left. Keep it empty: the
# fix for a new one is to hand the layer a Snapshot (or a callable), not to list it here.
KNOWN_PRIVATE_READS: set[tuple[str, str]] = set()


def _dataset_private_names() -> set[str]:
    """LanceDataset's private methods and the private attributes its methods assign on self."""
    tree = ast.parse((PACKAGES["lance_fw"] / "api" / "dataset.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LanceDataset")
    names = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "self"):
            names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _private_reads() -> set[tuple[str, str]]:
    private = _dataset_private_names()
    found = set()
    for module, path in _modules().items():
        if not module.startswith(_BELOW_API + _FRONT_ENDS_ON_PUBLIC_API):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.add((module, node.attr))
    return found


def test_lower_layers_do_not_read_dataset_privates():
    """table/, query/ and below get a Snapshot; reading ``ds._manifest``/``ds._storage``/... there
    ties them to the façade object (issue 21). Other objects' attributes of the same name are
    counted too (rename them rather than widen this): a name check is all ``ast`` can do."""
    assert {"_manifest", "_storage", "_filter_plan", "_snapshot", "_move_to"} <= _dataset_private_names()
    reads = _private_reads()
    new = sorted(reads - KNOWN_PRIVATE_READS)
    fixed = sorted(KNOWN_PRIVATE_READS - reads)
    assert not new, "LanceDataset private attributes read below the façade:\n" + "\n".join(f"  {m}: .{a}" for m, a in new)
    assert not fixed, "fixed; delete from KNOWN_PRIVATE_READS:\n" + "\n".join(f"  {m}: .{a}" for m, a in fixed)
