"""Smoke calls for ``tools/compat_table.py``: the same code run on pylance and on lance_fw.

Why: the compatibility table may call a name "works" only when something ran it. Each smoke call
takes a ``Ctx`` (the library as ``ctx.lib``, a tiny read-only dataset ``ctx.ds`` written by that
library, ``ctx.fresh()`` for a new one to mutate) and returns plain values; both libraries' values,
normalised (tables as schema + rows), must be equal. An error is compared by its builtin class
(``raises(...)``), as users catch them. One smoke call may vouch for several names.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa

#: The tiny dataset every smoke call starts from: 10 rows in fragments of 4, 4 and 2 rows
ROWS = 10
ROWS_PER_FILE = 4
DATA = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "s": pa.array([f"v{i}" for i in range(ROWS)]),
        "x": pa.array([i * 0.5 for i in range(ROWS)], pa.float64()),
    }
)

#: How much of a differing value or an error message the table shows
_SHOWN = 100


@dataclass(frozen=True)
class Outcome:
    status: str
    detail: str


class Ctx:
    """One library's side of a smoke call: its module, its datasets, a scratch directory."""

    def __init__(self, lib: ModuleType, tmp: Path) -> None:
        self.lib, self.tmp = lib, tmp
        self._count = itertools.count()
        self._ds: Any = None

    def path(self) -> str:
        return str(self.tmp / f"d{next(self._count)}")

    def fresh(self, data: pa.Table = DATA, **options: Any) -> Any:
        """A new dataset of ``data`` (default: ``DATA`` in three fragments), to mutate."""
        options.setdefault("max_rows_per_file", ROWS_PER_FILE)
        return self.lib.write_dataset(data, self.path(), **options)

    @property
    def ds(self) -> Any:
        """The shared dataset; smoke calls must not change it."""
        if self._ds is None:
            self._ds = self.fresh()
        return self._ds

    @property
    def is_pylance(self) -> bool:
        return self.lib.__name__ == "lance"


Smoke = Callable[[Ctx], object]
#: name ("module.name" or "Class.member") -> the smoke call vouching for it
SMOKES: dict[str, Smoke] = {}


def smoke(*names: str) -> Callable[[Smoke], Smoke]:
    def register(fn: Smoke) -> Smoke:
        for name in names:
            assert name not in SMOKES, name
            SMOKES[name] = fn
        return fn

    return register


class Raised:
    """An error a smoke call caught: equal to another when either's class derives from the other's
    most specific builtin class (what an ``except`` clause written for pylance names)."""

    def __init__(self, error: Exception) -> None:
        self.type = type(error)
        self.builtin = next(c for c in self.type.__mro__ if c.__module__ == "builtins")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Raised):
            return NotImplemented
        return issubclass(self.type, other.builtin) or issubclass(other.type, self.builtin)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"raises {self.builtin.__name__}"


def raises(call: Callable[[], object]) -> object:
    """The error a call raises (compared by builtin class, see ``Raised``), or its value."""
    try:
        value = call()
    except Exception as error:
        return Raised(error)
    return f"returns {normalise(value)!r:.60}"


def rows(table: pa.Table) -> dict[str, Any]:
    """A table as its column names and types and its rows (metadata is compared where it matters)."""
    return {"schema": [(f.name, str(f.type)) for f in table.schema], "rows": table.to_pylist()}


def normalise(value: object) -> object:
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return rows(pa.Table.from_batches([value]) if isinstance(value, pa.RecordBatch) else value)
    if isinstance(value, pa.Schema):
        return [(f.name, str(f.type), f.nullable) for f in value]
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value.to_pylist()
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, datetime):
        return "<datetime>"
    if value is None or isinstance(value, (bool, int, float, str, bytes, Raised)):
        return value
    return f"<{type(value).__name__}>"


# -- running ------------------------------------------------------------------------------------


def _shown(value: object, tmp: Path) -> str:
    text = re.sub(r"\s+", " ", str(value)).replace(str(tmp), "<tmp>")
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


@contextlib.contextmanager
def _contexts() -> Iterator[tuple[Ctx, Ctx]]:
    import lance

    import lance_fw

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        yield Ctx(lance, Path(a)), Ctx(lance_fw, Path(b))


def _run(fn: Smoke, ctx: Ctx) -> tuple[bool, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return True, normalise(fn(ctx))
        except Exception as error:
            return False, error


def compare(fn: Smoke, theirs: Ctx, ours: Ctx) -> Outcome:
    from lance_fw.errors import UnsupportedFeatureError

    ok_py, py = _run(fn, theirs)
    if not ok_py:
        return Outcome("untested", f"smoke call fails in pylance: {_shown(repr(py), theirs.tmp)}")
    ok_fw, fw = _run(fn, ours)
    if not ok_fw:
        if isinstance(fw, UnsupportedFeatureError):
            return Outcome("refused", _shown(fw, ours.tmp))
        return Outcome("differs", f"raises {type(fw).__name__}: {_shown(fw, ours.tmp)}")
    if py == fw:
        return Outcome("works", "")
    return Outcome("differs", f"pylance {_shown(py, theirs.tmp)} / lance_fw {_shown(fw, ours.tmp)}")


def run_smokes(only: Callable[[str], bool] | None = None) -> dict[str, Outcome]:
    """Every smoke call (or those whose name ``only`` accepts), once per distinct function."""
    import importlib

    import compat_smoke_calls  # noqa: F401  (registers the calls)

    # further areas live in their own modules, compat_smoke_calls_<area>.py, beside this one
    for extra in sorted(Path(__file__).parent.glob("compat_smoke_calls_*.py")):
        importlib.import_module(extra.stem)

    outcomes: dict[str, Outcome] = {}
    done: dict[Smoke, Outcome] = {}
    with _contexts() as (theirs, ours):
        for name, fn in SMOKES.items():
            if only is not None and not only(name):
                continue
            if fn not in done:
                done[fn] = compare(fn, theirs, ours)
            outcomes[name] = done[fn]
    return outcomes
