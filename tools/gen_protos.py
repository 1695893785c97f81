#!/usr/bin/env python3
"""Regenerate lance_fw/_proto/*_pb2.py(i) from protos/*.proto.

Usage:
    python tools/gen_protos.py           # rewrite the generated modules
    python tools/gen_protos.py --check   # exit 1 (listing files) if stale

Needs grpcio-tools (a dev dependency). The generated code is pinned to the
protoc bundled with grpcio-tools==1.85.1 (libprotoc 35.1, "Protobuf Python
Version: 7.35.1"): the modules call protobuf's runtime version check, so they
need a protobuf runtime >= 7.35.1 at import time. Another grpcio-tools
version produces different (but equivalent) output and makes --check fail.

Post-processing applied to protoc's output:
  * imports between our own modules become package relative
    (``from . import file_pb2 as file__pb2``). protoc emits top-level
    ``import file_pb2``, and a top-level ``lance`` name would also clash with
    pylance, so nothing here is importable as a top-level module;
  * message classes get ``__module__`` = the real module name (``__name__``)
    instead of the bare ``file_pb2``, so they pickle and repr properly.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"
OUT_DIR = ROOT / "lance_fw" / "_proto"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi")


def _proto_files() -> list[str]:
    names = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
    if not names:
        raise SystemExit(f"no .proto files found in {PROTO_DIR}")
    return names


def _wkt_include() -> str:
    """Directory holding google/protobuf/*.proto shipped with grpc_tools."""
    import grpc_tools  # noqa: PLC0415 - optional dev dependency

    path = Path(grpc_tools.__file__).resolve().parent / "_proto"
    if not (path / "google" / "protobuf" / "any.proto").is_file():
        raise SystemExit(f"grpc_tools well-known protos not found under {path}")
    return str(path)


def _run_protoc(out_dir: Path, protos: list[str]) -> None:
    cmd = [
        sys.executable, "-m", "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{_wkt_include()}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *protos,  # relative names: descriptor file names are "file.proto" etc.
    ]
    env = dict(os.environ, PYTHONHASHSEED="0", LC_ALL="C")
    res = subprocess.run(cmd, cwd=PROTO_DIR, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout + res.stderr)
        raise SystemExit(f"protoc failed with exit code {res.returncode}")


def _postprocess(text: str, own_modules: set[str]) -> str:
    def fix_import(match: re.Match) -> str:
        module, alias = match.group(1), match.group(2)
        if module not in own_modules:
            return match.group(0)
        return f"from . import {module} as {alias}"

    text = re.sub(r"^import (\w+_pb2) as (\w+)$", fix_import, text, flags=re.M)
    # Class __module__: use the importing module's real dotted name.
    text = re.sub(
        r"(_builder\.BuildTopDescriptorsAndMessages\(DESCRIPTOR, )'\w+_pb2'(, _globals\))",
        r"\1__name__\2",
        text,
    )
    text = text.replace("\r\n", "\n")
    if not text.endswith("\n"):
        text += "\n"
    return text


def generate(out_dir: Path) -> list[str]:
    """Generate all modules into out_dir; returns the file names written."""
    protos = _proto_files()
    own = {name[: -len(".proto")] + "_pb2" for name in protos}
    with tempfile.TemporaryDirectory(prefix="lance_fw_protoc_") as tmp:
        tmp_path = Path(tmp)
        _run_protoc(tmp_path, protos)
        written = []
        for path in sorted(tmp_path.iterdir()):
            if not path.name.endswith(GENERATED_SUFFIXES):
                continue
            text = _postprocess(path.read_text(encoding="utf-8"), own)
            (out_dir / path.name).write_text(text, encoding="utf-8", newline="\n")
            written.append(path.name)
    return written


def _existing_generated(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if p.name.endswith(GENERATED_SUFFIXES)}


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width] + " ..."


def _gencode_version(text: str) -> str | None:
    m = re.search(r"^# Protobuf Python Version: (\S+)$", text, flags=re.M)
    return m.group(1) if m else None


def check() -> int:
    with tempfile.TemporaryDirectory(prefix="lance_fw_protos_check_") as tmp:
        fresh_dir = Path(tmp)
        fresh = set(generate(fresh_dir))
        current = _existing_generated(OUT_DIR) if OUT_DIR.is_dir() else set()
        problems: list[str] = []
        for name in sorted(fresh | current):
            if name not in current:
                problems.append(f"missing: lance_fw/_proto/{name}")
            elif name not in fresh:
                problems.append(f"stale (no matching .proto): lance_fw/_proto/{name}")
            else:
                new = (fresh_dir / name).read_text(encoding="utf-8")
                old = (OUT_DIR / name).read_text(encoding="utf-8")
                if new != old:
                    diff = difflib.unified_diff(
                        old.splitlines(), new.splitlines(),
                        f"lance_fw/_proto/{name}", f"regenerated/{name}", lineterm="", n=1,
                    )
                    head = "\n".join(_clip(line) for line in list(diff)[:12])
                    problems.append(f"differs: lance_fw/_proto/{name}\n{head}")
        versions = {
            (_gencode_version((OUT_DIR / n).read_text(encoding="utf-8")),
             _gencode_version((fresh_dir / n).read_text(encoding="utf-8")))
            for n in sorted(fresh & current) if n.endswith(".py")
        }
        for old_v, new_v in sorted(versions, key=str):
            if old_v != new_v:
                problems.insert(0, f"note: checked-in code is from protoc for protobuf {old_v}, "
                                   f"the installed grpcio-tools emits {new_v} "
                                   "(expected grpcio-tools==1.85.1)")
    if problems:
        print("generated protobuf modules are out of date; run `python tools/gen_protos.py`:")
        for p in problems:
            print("  " + p.replace("\n", "\n    "))
        return 1
    print(f"{len(fresh)} generated files are up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="regenerate into a temporary directory and report differences")
    args = parser.parse_args(argv)
    try:
        import grpc_tools.protoc  # noqa: F401, PLC0415
    except ImportError:
        print("grpcio-tools is required: pip install grpcio-tools==1.85.1", file=sys.stderr)
        return 2
    if args.check:
        return check()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    written = set(generate(OUT_DIR))
    for stale in sorted(_existing_generated(OUT_DIR) - written):
        (OUT_DIR / stale).unlink()
        print(f"removed stale lance_fw/_proto/{stale}")
    print(f"wrote {len(written)} files to {OUT_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
