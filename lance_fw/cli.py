"""``lance-fw``: small command-line tools.

lance-fw sql "SELECT ..."    run one DuckDB statement (lance_scan('path') works in it)
lance-fw sql                 interactive shell: one statement per line, .quit to leave
lance-fw plugins [--json]    each plugin: status, hooks, what it provides, conflicts, failures
lance-fw versions URI        a dataset's versions
lance-fw inspect FILE.lance  footer, columns, pages and page encodings of one data file
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf import any_pb2, text_format

_T = TypeVar("_T")


def plugin_report() -> dict:
    """Every plugin with its status, distribution, hooks, what it provides from the collecting hooks
    (type URLs, ``(family, kind)``, storage option keys, deletion codecs, index names), its overrides,
    load error and the conflicts naming it; then every problem the kernel would raise on first use.

    Never raises because of a plugin: listing them is how a user finds the broken one, so a part
    that cannot be computed is reported as a problem instead.
    """
    from lance_fw import plugin_manager

    problems: list[str] = []

    def attempt(part: str, compute: Callable[[], _T], default: _T) -> _T:
        try:
            return compute()
        except Exception as exc:
            problems.append(f"{part}: {type(exc).__name__}: {exc}")
            return default

    listed: list[dict[str, Any]] = attempt("listing plugins", plugin_manager.plugins, [])
    provided: dict[str, dict[str, list[str]]] = attempt(
        "collecting what plugins provide", plugin_manager.provides, {}
    )
    problems += attempt("checking for conflicts", plugin_manager.problems, [])
    out = []
    for p in listed:
        mention = f"{p['name']!r} ("  # how kernel errors name a plugin: 'name' (distribution)
        out.append(
            {
                **p,
                "provides": {hook: keys for hook, keys in provided.get(p["name"], {}).items() if keys},
                "conflicts": [msg for msg in problems if mention in msg],
            }
        )
    return {"plugins": out, "problems": problems}


def _plugins(args: argparse.Namespace) -> int:
    report = plugin_report()
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    for p in report["plugins"]:
        print(f"{p['name']}  [{p['status']}]  {p['distribution'] or '(registered at run time)'}")
        if p["hooks"]:
            print(f"    hooks: {', '.join(p['hooks'])}")
        for hook, keys in p["provides"].items():
            print(f"    {hook}: {', '.join(keys)}")
        for hook, keys in p["overrides"].items():
            print(f"    overrides {hook}: {', '.join(keys)}")
        if p["error"]:
            print(f"    error: {p['error']}")
        for conflict in p["conflicts"]:
            print(f"    conflict: {conflict}")
    for problem in report["problems"]:
        print(f"PROBLEM: {problem}")
    return 0


def _versions(args: argparse.Namespace) -> int:
    import lance_fw

    for v in lance_fw.dataset(args.uri).versions():
        print(json.dumps({**v, "timestamp": v["timestamp"].isoformat()}))
    return 0


def _decode_any(raw: bytes) -> str:
    from lance_fw._proto import encodings_v2_0_pb2, encodings_v2_1_pb2

    msg = any_pb2.Any()
    msg.ParseFromString(raw)
    for cls in (
        encodings_v2_0_pb2.ArrayEncoding,
        encodings_v2_1_pb2.PageLayout,
        encodings_v2_0_pb2.ColumnEncoding,
    ):
        if msg.type_url == "/" + cls.DESCRIPTOR.full_name:
            inner = cls()
            inner.ParseFromString(msg.value)
            return f"{msg.type_url} {text_format.MessageToString(inner, as_one_line=True)}"
    return f"{msg.type_url} ({len(msg.value)} bytes)"


def _decoded_by(type_url: str) -> str:
    """Which installed plugin decodes pages of ``type_url`` (or why none does), for ``inspect``."""
    from lance_fw.errors import LanceError
    from lance_fw.plugin_manager import owner, registry

    try:
        known = type_url in registry.page_decoders
    except LanceError as exc:  # a conflict over this URL, a broken decoder plugin
        return f"{type(exc).__name__}: {exc}"
    return (
        f"decoded by plugin {owner('lance_page_decoders', type_url)}"
        if known
        else "no installed plugin decodes it"
    )


def _inspect(args: argparse.Namespace) -> int:
    from lance_fw.file.container import read_tail
    from lance_fw.io.storage import resolve_storage

    reader = resolve_storage(args.path).open_reader(args.path)
    tail = read_tail(reader)
    print(
        f"version {tail.version[0]}.{tail.version[1]}, {tail.num_rows} rows, {len(tail.columns)} columns, "
        f"{reader.size()} bytes"
    )
    seen: set[str] = set()
    for i, col in enumerate(tail.columns):
        print(f"column {i}: {len(col.pages)} pages")
        for j, page in enumerate(col.pages[: args.max_pages]):
            print(
                f"  page {j}: rows {page.length}, buffers {list(page.buffer_sizes)}, priority {page.priority}"
            )
            raw = page.encoding.direct.encoding
            print(f"    {_decode_any(raw)}")
            url = any_pb2.Any.FromString(raw).type_url
            if url not in seen:  # once per encoding: which plugin reads it
                seen.add(url)
                print(f"    ({_decoded_by(url)})")
    return 0


def _sql(args: argparse.Namespace) -> int:
    import duckdb

    from lance_fw.duckdb import connect
    from lance_fw.errors import LanceError

    con = connect()

    def run(statement: str) -> bool:
        """One statement; an error (DuckDB's, or a typed LanceError: a missing dataset or version, a
        corrupt file) is printed, and the shell goes on."""
        try:
            result = con.sql(statement)
            if result is not None:
                result.show(max_rows=args.max_rows)
        except (duckdb.Error, LanceError) as exc:
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return False
        return True

    if args.query:
        return 0 if run(args.query) else 1
    interactive = sys.stdin.isatty()
    while True:
        try:
            line = input("lance-fw> " if interactive else "")
        except EOFError:
            return 0
        if line.strip() in (".quit", ".exit"):
            return 0
        if line.strip():
            run(line)


def main(argv: list[str] | None = None) -> int:
    from lance_fw.errors import LanceError

    parser = argparse.ArgumentParser(prog="lance-fw", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sql", help="run DuckDB SQL with lance_scan('path'); no query: a shell")
    p.add_argument("query", nargs="?")
    p.add_argument("--max-rows", type=int, default=40)
    p.set_defaults(run=_sql)
    p = sub.add_parser(
        "plugins", help="list installed plugins, what they provide, conflicts and load failures"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=_plugins)
    p = sub.add_parser("versions", help="list a dataset's versions")
    p.add_argument("uri")
    p.set_defaults(run=_versions)
    p = sub.add_parser("inspect", help="show the layout of one data file")
    p.add_argument("path")
    p.add_argument("--max-pages", type=int, default=5)
    p.set_defaults(run=_inspect)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except LanceError as exc:
        print(f"lance-fw: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
