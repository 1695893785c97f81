"""The Spark job ledger: no data file of a task outlives its job, whatever the timing.

Spark kills a failed job's running Python workers with SIGKILL; before, a task noted its files
only after writing them all, so a killed task's finished files and its half-written temp file stayed
in ``data/`` (test_spark_defects::test_a_failed_job_leaves_no_data_files failed about one CI in three).
These tests run real processes and threads against a real local dataset; no Spark is needed to
produce the timings Spark produces at random.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow as pa
import pytest

import lance_fw as lance
from lance_fw.io.staged_output import TEMP_PREFIX
from lance_fw.io.storage import resolve_storage
from lance_fw.spark.ledger import CLOSED_SUFFIX, JOBS_DIR, JobLedger
from lance_fw.table.write import plan_write

ROWS_PER_FILE = 5000
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _batch(start: int, rows: int) -> pa.RecordBatch:
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.record_batch([ids, pa.array([f"value {i}" for i in range(start, start + rows)])], schema=SCHEMA)


@pytest.fixture
def dataset(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.Table.from_batches([_batch(0, 10)]), path)
    return path


def _data(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, "data")))


def _jobs(path: str) -> set[str]:
    jobs = os.path.join(path, JOBS_DIR)
    return set(os.listdir(jobs)) if os.path.isdir(jobs) else set()


def _plan(path: str):
    return plan_write(path, SCHEMA, mode="append", max_rows_per_file=ROWS_PER_FILE)


def _job(path: str):
    """The data files before the job, its ledger, the dataset's storage."""
    return _data(path), JobLedger(path), resolve_storage(path)


def _nothing_left(path: str, before: set[str], ledger: JobLedger) -> None:
    assert _data(path) == before
    assert _jobs(path) == {ledger.token + CLOSED_SUFFIX}


KILLED_TASK = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow as pa
    from lance_fw.spark.ledger import JobLedger
    from lance_fw.table.write import plan_write
    from lance_fw.io.storage import resolve_storage
    sys.path.insert(0, sys.argv[3])
    from test_spark_ledger import ROWS_PER_FILE, SCHEMA, _batch

    uri, token = sys.argv[1], sys.argv[2]
    ledger = JobLedger(uri, token)
    plan = plan_write(uri, SCHEMA, mode="append", max_rows_per_file=ROWS_PER_FILE)

    def batches():
        for i in range(100):
            if i == 27:  # two files done, a third half written (under its temp name)
                sys.stdout.write("killing\\n"); sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            yield _batch(i * 1000, 1000)

    ledger.run_task(resolve_storage(uri), 3, 0, lambda task: plan.write(batches(), task))
    """
)


def test_a_task_killed_midway_leaves_nothing(dataset, tmp_path):
    """A SIGKILLed task (two files written, a third half written): the closing driver sees its
    process is gone and removes all three, temp file included, without waiting out the grace."""
    before = _data(dataset)
    ledger = JobLedger(dataset)
    script = tmp_path / "killed_task.py"
    script.write_text(KILLED_TASK)
    tests_dir = os.path.dirname(__file__)
    run = subprocess.run(
        [sys.executable, str(script), dataset, ledger.token, tests_dir], capture_output=True, text=True
    )
    assert run.returncode == -9, run.stderr
    left = _data(dataset) - before
    assert len([n for n in left if not n.startswith(TEMP_PREFIX)]) == 5, left  # 25 000 rows: 5 files
    assert any(n.startswith(TEMP_PREFIX) for n in left), left  # the sixth, half written
    started = time.monotonic()
    ledger.close(resolve_storage(dataset), keep=set(), grace=30)
    assert time.monotonic() - started < 10  # a dead task is not waited for
    _nothing_left(dataset, before, ledger)
    assert lance.dataset(dataset).count_rows() == 10


def test_the_driver_waits_for_a_task_still_writing(dataset):
    """The job closes while a live task is inside a file: the driver waits for it; the task finishes
    the file, finds the job closed, and removes its files itself."""
    before, ledger, storage = _job(dataset)
    inside, release = threading.Event(), threading.Event()
    results: list = []

    def batches():
        for i in range(12):
            if i == 7:
                inside.set()
                release.wait(30)
            yield _batch(i * 1000, 1000)

    def task() -> None:
        results.append(ledger.run_task(storage, 1, 0, lambda t: _plan(dataset).write(batches(), t)))

    worker = threading.Thread(target=task)
    worker.start()
    assert inside.wait(30)
    closer = threading.Thread(target=ledger.close, args=(storage, set()), kwargs={"grace": 30})
    closer.start()
    time.sleep(0.5)
    assert closer.is_alive()  # waiting for the task
    release.set()
    worker.join(30)
    closer.join(30)
    assert not closer.is_alive()
    assert results == [None]  # the task learned its job was closed
    _nothing_left(dataset, before, ledger)


def test_a_task_starting_after_close_writes_nothing(dataset):
    before, ledger, storage = _job(dataset)
    ledger.close(storage, set())
    result = ledger.run_task(storage, 0, 0, lambda t: _plan(dataset).write(iter([_batch(0, 100)]), t))
    assert result is None
    _nothing_left(dataset, before, ledger)


def test_commit_keeps_its_files_and_drops_a_losing_attempt(dataset):
    """Two attempts of one partition: the files of the committed one stay, the other's go."""
    before, ledger, storage = _job(dataset)
    plan = _plan(dataset)
    won = ledger.run_task(storage, 0, 0, lambda t: plan.write(iter([_batch(0, 12000)]), t))
    lost = ledger.run_task(storage, 0, 1, lambda t: plan.write(iter([_batch(0, 12000)]), t))
    assert won is not None and lost is not None
    kept = {d.path for f in won for d in f.files}
    assert len(kept) == 3
    plan.commit(won)
    ledger.close(storage, kept, grace=0)
    assert _data(dataset) == before | kept
    assert lance.dataset(dataset).count_rows() == 12010
    assert _jobs(dataset) == {ledger.token + CLOSED_SUFFIX}


def test_a_failed_task_is_not_waited_for(dataset):
    """A task whose write raised is done (its marker is written on the way out), so a close right
    after does not wait, and its files were removed by the write itself."""
    before, ledger, storage = _job(dataset)

    def failing():
        yield _batch(0, 7000)
        raise RuntimeError("task failed")

    with pytest.raises(RuntimeError, match="task failed"):
        ledger.run_task(storage, 0, 0, lambda t: _plan(dataset).write(failing(), t))
    started = time.monotonic()
    ledger.close(storage, set(), grace=30)
    assert time.monotonic() - started < 5
    assert _data(dataset) == before
