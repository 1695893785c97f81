"""The corruption invariant (issue 10, item 8), checked with seeded random damage.

A read of a damaged data file either returns Arrow arrays that pass ``validate(full=True)`` or
raises a ``LanceError``; never another exception, a crash or a hang. Lance files carry no
checksums, so a flipped byte may legitimately change values: only the *invariant* is checked,
not the values.

For each file version (2.0, 2.1, 2.2), writer (lance_fw, pylance) and schema family (flat,
nested) one single-file dataset of a few thousand rows, written with small pages so that several
pages / chunks exist, gets ``FLIPS`` random single-byte XOR flips and ``TRUNCATIONS`` random
truncations, each applied to a fresh copy of the dataset. Every damaged copy is read with
``to_table``, ``take`` of random rows and a filtered scan; every ``DUCKDB_EVERY``-th one also
through DuckDB's ``lance_scan``.

The reads run in a worker subprocess (this file, run as a script): a segfault or abort in Arrow,
DuckDB or a decoder, or a hang in native code, must fail the test instead of killing pytest.
The worker reports each case's outcome to a results file before starting the next one, so
the parent knows which damage killed it and restarts a worker for the rest.

``LANCE_FW_CORRUPTION_FLIPS`` / ``LANCE_FW_CORRUPTION_TRUNCATIONS`` set a deeper profile
(the CI default gives 4 files x 50 flips = 200 flips per file version), ``LANCE_FW_CORRUPTION_SEED``
another set of positions.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import pytest

FLIPS = int(os.environ.get("LANCE_FW_CORRUPTION_FLIPS", "50"))
TRUNCATIONS = int(os.environ.get("LANCE_FW_CORRUPTION_TRUNCATIONS", "5"))
DUCKDB_EVERY = int(os.environ.get("LANCE_FW_CORRUPTION_DUCKDB_EVERY", "5"))
#: another campaign of damage (the default one is what CI runs)
SEED = os.environ.get("LANCE_FW_CORRUPTION_SEED", "")
ROWS = 3000
#: small pages, so that a few thousand rows give several pages (2.0) / chunks (2.1+) per column
PAGE_BYTES = 4096
#: a single case that takes longer than this (in Python code) is reported as a hang
CASE_SECONDS = 30
#: rows asked of ``take`` and the filter of the filtered scan
TAKE_ROWS = 40
FILTER = "i > 1000"
VERSIONS = ["2.0", "2.1", "2.2"]
WRITERS = ["lance_fw", "pylance"]
SCHEMAS = ["flat", "nested"]

#: outcomes the invariant allows
ALLOWED = {"ok", "lance_error"}


# --- data --------------------------------------------------------------------------------------

def make_table(schema: str, version: str):
    """A few thousand rows with nulls; ``nested`` puts null lists/items/structs at every level
    (no null structs at 2.0, which cannot store struct validity)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    n = ROWS
    ids = pa.array([i if i % 7 else None for i in range(n)], pa.int64())
    if schema == "flat":
        words = ["", "a", "bb", "ccc", "héllo", "x" * 40]
        return pa.table({
            "i": ids,
            "f": pa.array([float(v) if v % 11 else None for v in rng.integers(0, 1 << 20, n)], pa.float64()),
            "f32": pa.array(rng.random(n, dtype=np.float32)),
            "b": pa.array([bool(i % 3) if i % 13 else None for i in range(n)], pa.bool_()),
            "s": pa.array([words[i % 6] * (i % 4) if i % 5 else None for i in range(n)], pa.string()),
            "ls": pa.array([f"large-{i}" if i % 9 else None for i in range(n)], pa.large_string()),
            "d": pa.array([words[i % 6] if i % 10 else None for i in range(n)], pa.string()).dictionary_encode(),
            "fsl": pa.array([[float(i), 1.0, 2.0, float(-i)] if i % 8 else None for i in range(n)],
                            pa.list_(pa.float32(), 4)),
        })
    null_structs = version != "2.0"
    item = pa.struct([("x", pa.int64()), ("y", pa.string())])

    def struct_value(i):
        if null_structs and i % 6 == 5:
            return None
        return {"x": i if i % 4 else None, "y": f"y{i}" if i % 3 else None}

    return pa.table({
        "i": ids,
        "l": pa.array([None if i % 9 == 4 else [j if j % 5 else None for j in range(i % 6)] for i in range(n)],
                      pa.list_(pa.int32())),
        "lstr": pa.array([None if i % 8 == 3 else [f"s{j}" if j % 4 else None for j in range(i % 5)]
                          for i in range(n)], pa.list_(pa.string())),
        "st": pa.array([struct_value(i) for i in range(n)], item),
        "lst": pa.array([None if i % 10 == 1 else [struct_value(i + j) for j in range(i % 4)] for i in range(n)],
                        pa.list_(item)),
        "ll": pa.array([None if i % 11 == 2 else [None if j == 1 else [i, j, None][: (i + j) % 4]
                                                  for j in range(i % 3)] for i in range(n)],
                       pa.large_list(pa.list_(pa.int16()))),
    })


def write(writer: str, schema: str, version: str, uri: str) -> None:
    table = make_table(schema, version)
    if writer == "pylance":
        import lance

        lance.write_dataset(table, uri, data_storage_version=version, max_page_bytes=PAGE_BYTES)
    else:
        import lance_fw

        lance_fw.write_dataset(table, uri, data_storage_version=version, max_page_bytes=PAGE_BYTES)


# --- worker (runs in a subprocess) ---------------------------------------------------------------

class Hang(Exception):
    pass


def _where(exc: BaseException) -> str:
    """The innermost lance_fw / plugin frame the exception passed through (else the innermost)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "lance_fw" in f.filename or "/plugins/" in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    return f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"


def _check_table(table, stage: str) -> dict | None:
    for name in table.column_names:
        for k, chunk in enumerate(table.column(name).chunks):
            try:
                chunk.validate(full=True)
            except Exception as exc:  # noqa: BLE001 - this is what the test looks for
                return {"stage": stage, "status": "invalid", "type": type(exc).__name__,
                        "where": f"column {name!r} chunk {k}", "detail": str(exc)[:300]}
    return None


def _is_wrapped_lance_error(exc: BaseException, uri: str) -> bool:
    """DuckDB reports an exception raised inside the Arrow stream it reads as its own error class;
    it counts as the typed error when it carries the LanceError's message (which names the file)."""
    import duckdb

    return isinstance(exc, duckdb.Error) and uri in str(exc)


def _run_stage(stage: str, fn, uri: str) -> dict:
    from lance_fw.errors import LanceError

    try:
        table = fn()
    except LanceError as exc:
        return {"stage": stage, "status": "lance_error", "type": type(exc).__name__, "where": _where(exc),
                "detail": str(exc)[:300]}
    except Hang:
        return {"stage": stage, "status": "hang", "type": "Hang", "where": "?", "detail": f">{CASE_SECONDS}s"}
    except Exception as exc:  # noqa: BLE001 - anything else breaks the invariant
        if stage == "duckdb" and _is_wrapped_lance_error(exc, uri):
            return {"stage": stage, "status": "lance_error", "type": type(exc).__name__, "where": _where(exc),
                    "detail": str(exc)[:300]}
        return {"stage": stage, "status": "other", "type": type(exc).__name__, "where": _where(exc),
                "detail": str(exc)[:300]}
    return _check_table(table, stage) or {"stage": stage, "status": "ok"}


def _reads(uri: str, duck: bool, num_rows: int, seed: int, progress) -> list[dict]:
    import lance_fw

    rows = sorted(random.Random(seed).sample(range(num_rows), TAKE_ROWS))
    stages = [
        ("to_table", lambda: lance_fw.dataset(uri).to_table()),
        ("take", lambda: lance_fw.dataset(uri).take(rows)),
        ("filter", lambda: lance_fw.dataset(uri).to_table(filter=FILTER)),
    ]
    if duck:
        import lance_fw.duckdb

        stages.append(("duckdb", lambda: lance_fw.duckdb.connect().sql(
            f"SELECT * FROM lance_scan('{uri}')").fetch_arrow_table()))
    out = []
    for stage, fn in stages:
        progress(stage)
        out.append(_run_stage(stage, fn, uri))
    return out


def worker(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    clean, rel = spec["dataset"], spec["data_file"]
    original = (Path(clean) / rel).read_bytes()
    scratch = Path(spec["scratch"])

    def on_alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, on_alarm)
    with open(spec["results"], "a") as results:
        def report(**record):
            results.write(json.dumps(record) + "\n")
            results.flush()

        for case in spec["cases"]:
            copy = scratch / f"case{case['id']}"
            shutil.copytree(clean, copy)
            data = bytearray(original)
            if case["kind"] == "flip":
                data[case["pos"]] ^= case["mask"]
            else:
                del data[case["pos"]:]
            (copy / rel).write_bytes(bytes(data))
            signal.alarm(CASE_SECONDS)
            try:
                outcomes = _reads(str(copy), case["duckdb"], spec["num_rows"], case["id"],
                                  lambda stage: report(id=case["id"], started=stage))
            finally:
                signal.alarm(0)
            report(id=case["id"], outcomes=outcomes)
            shutil.rmtree(copy, ignore_errors=True)


# --- parent (pytest) -------------------------------------------------------------------------------

def _cases(size: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    cases = [{"kind": "flip", "pos": rng.randrange(size), "mask": rng.randrange(1, 256)} for _ in range(FLIPS)]
    cases += [{"kind": "truncate", "pos": rng.randrange(size), "mask": 0} for _ in range(TRUNCATIONS)]
    for i, case in enumerate(cases):
        case["id"] = i
        case["duckdb"] = DUCKDB_EVERY > 0 and i % DUCKDB_EVERY == 0
    return cases


def run_cases(work: Path, dataset: str, data_file: str, num_rows: int, cases: list[dict]) -> dict[int, list[dict]]:
    """Outcomes per case id; a worker that dies or hangs marks the case it was on and a new
    worker carries on with the cases after it."""
    results: dict[int, list[dict]] = {}
    remaining = list(cases)
    attempt = 0
    while remaining:
        attempt += 1
        spec = {"dataset": dataset, "data_file": data_file, "num_rows": num_rows, "cases": remaining,
                "results": str(work / f"results{attempt}.jsonl"), "scratch": str(work / f"scratch{attempt}")}
        Path(spec["scratch"]).mkdir()
        spec_path = work / f"spec{attempt}.json"
        spec_path.write_text(json.dumps(spec))
        Path(spec["results"]).touch()
        try:
            proc = subprocess.run([sys.executable, __file__, "--worker", str(spec_path)], capture_output=True,
                                  text=True, timeout=60 + 3 * CASE_SECONDS + 5 * len(remaining))
            died = f"exit status {proc.returncode}"
            stderr = proc.stderr
        except subprocess.TimeoutExpired as exc:
            died, stderr = "hang (worker killed after its time limit)", str(exc.stderr or "")
        started: dict[int, str] = {}
        for line in Path(spec["results"]).read_text().splitlines():
            record = json.loads(line)
            if "outcomes" in record:
                results[record["id"]] = record["outcomes"]
            else:
                started[record["id"]] = record["started"]
        left = [c for c in remaining if c["id"] not in results]
        if not left:
            break
        victim = left[0]
        if victim["id"] not in started:
            raise AssertionError(f"the worker failed before its first case ({died}):\n{stderr[-3000:]}")
        status = "hang" if died.startswith("hang") else "crash"
        results[victim["id"]] = [{"stage": started[victim["id"]], "status": status, "type": died,
                                  "where": "worker process", "detail": stderr[-500:]}]
        remaining = left[1:]
        shutil.rmtree(spec["scratch"], ignore_errors=True)
    return results


def summarize(cases: list[dict], results: dict[int, list[dict]]) -> tuple[Counter, list[str]]:
    """Counts of outcomes and one line per distinct invariant break (with how often it happened)."""
    counts: Counter = Counter()
    breaks: dict[tuple, list] = defaultdict(list)
    by_id = {c["id"]: c for c in cases}
    for case_id, outcomes in results.items():
        for o in outcomes:
            counts[o["status"]] += 1
            if o["status"] not in ALLOWED:
                breaks[(o["status"], o["type"], o["where"], o["stage"])].append((by_id[case_id], o["detail"]))
    lines = []
    for (status, typ, where, stage), hits in sorted(breaks.items(), key=lambda kv: -len(kv[1])):
        case, detail = hits[0]
        lines.append(f"{len(hits)}x {status} {typ} in {stage} at {where} (e.g. {case['kind']} pos={case['pos']} "
                     f"mask={case['mask']}): {detail[:200]!r}")
    return counts, lines


def _data_file(uri: str) -> str:
    files = sorted(p.relative_to(uri) for p in Path(uri, "data").glob("*.lance"))
    assert len(files) == 1, files
    return str(files[0])


@pytest.mark.slow
@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_random_damage_gives_valid_arrays_or_lance_errors(version, writer, schema, tmp_path):
    uri = str(tmp_path / "ds")
    write(writer, schema, version, uri)
    rel = _data_file(uri)
    size = (Path(uri) / rel).stat().st_size
    cases = _cases(size, zlib.crc32(f"{SEED}{version}/{writer}/{schema}".encode()))
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    results = run_cases(work, uri, rel, ROWS, cases)
    assert set(results) == {c["id"] for c in cases}
    counts, breaks = summarize(cases, results)
    assert not breaks, (f"{version} written by {writer} ({schema}), {len(cases)} cases, outcomes "
                        f"{dict(counts)}; invariant broken:\n" + "\n".join(breaks))


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker(sys.argv[2])
