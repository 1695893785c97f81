"""Which files each task of one Spark job writes, so that none outlives the job.

Spark hands a data source's ``abort`` the commit messages of the tasks it heard back from only: a
task still running when the job fails, or a speculative duplicate that loses its race, writes files
nobody is told about. And when a job fails Spark kills its running tasks: a Python worker that does
not stop within ``spark.python.task.killTimeout`` gets SIGKILL, with a file half written (under its
temporary name) and no chance to clean up. So:

- a task notes each data file's name under ``_spark_jobs/`` *before* it creates the file
  (``TaskLedger.opened``, a ``FileProgress``), and refuses to start a file once its job is closed;
- after its last file it writes its *done* marker, then looks for the job's *closed* marker and,
  if the job is closed, deletes its own files (their result would never be committed);
- the driver, when it commits or aborts, writes the closed marker, waits (up to
  ``IN_FLIGHT_GRACE_SECONDS``) for every task that noted a file to be done or dead, and then deletes
  every noted file the commit does not reference, with its temporary copies.

A task notes before it creates and checks after it writes its marker; the driver marks before it
reads: each file is removed by one side or the other, whatever the timing. A task is known dead when
it ran on the driver's host and its process is gone (local mode); others are waited for until the
grace ends, after which a live task still removes its own files once it looks. Only a task on
another host that outlives the grace and is then killed before it looks leaves a file behind;
``cleanup_old_versions`` removes such unreferenced files once they are old.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from lance_fw._proto import table_pb2
from lance_fw.errors import JobClosedError
from lance_fw.io.staged_output import TEMP_PREFIX
from lance_fw.io.storage import Storage, join_uri
from lance_fw.table.paths import DATA_DIR

#: Directory (in the dataset root, beside ``data/``) of the records and markers; Lance ignores it.
JOBS_DIR = "_spark_jobs"
RECORD_SUFFIX = ".files.json"
DONE_SUFFIX = ".done"
CLOSED_SUFFIX = ".closed"
#: Closed markers older than this are removed when a later job closes (no task of a job runs that long).
STALE_MARKER_SECONDS = 7 * 24 * 3600
#: How long a closing driver waits for tasks still writing. Spark kills a task's Python worker
#: ``spark.python.task.killTimeout`` (2 s) after it asked the task to stop, and looks every 2 s.
IN_FLIGHT_GRACE_SECONDS = 10.0
#: How often the closing driver looks again while it waits.
POLL_SECONDS = 0.05

T = TypeVar("T")


@dataclass
class JobLedger:
    """One job's ledger; picklable (it travels to the tasks inside the writer or task object)."""

    uri: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _path(self, name: str) -> str:
        return join_uri(self.uri, JOBS_DIR, name)

    def closed(self, storage: Storage) -> bool:
        """Whether the driver has closed the job (committed or failed it)."""
        return storage.exists(self._path(self.token + CLOSED_SUFFIX))

    def task(self, storage: Storage, partition_id: int, attempt: int) -> TaskLedger:
        """The ledger as one task attempt writes it."""
        key = f"{self.token}-{partition_id}-{attempt}-{uuid.uuid4().hex}"
        return TaskLedger(self, storage, key)

    def run_task(
        self, storage: Storage, partition_id: int, attempt: int, work: Callable[[TaskLedger], T]
    ) -> T | None:
        """Run one task attempt's ``work``, which hands the ``TaskLedger`` it is given to the
        writer as its ``FileProgress``; its result, or None when the job closed meanwhile (the
        task's files are then removed, and the result must not be returned). ``work``'s own
        errors propagate, after the task is marked done."""
        task = self.task(storage, partition_id, attempt)
        result: T | None
        try:
            result = work(task)
        except JobClosedError:
            result = None
        finally:
            live = task.end()
        return result if live else None

    def close(self, storage: Storage, keep: set[str], grace: float = IN_FLIGHT_GRACE_SECONDS) -> None:
        """The job committed or failed: wait for tasks still writing, then delete every noted file
        not in ``keep`` (names in ``data/``: what the commit, or any version since, references), its
        temporary copies, and the job's records."""
        storage.write_bytes(self._path(self.token + CLOSED_SUFFIX), b"")
        deadline = time.monotonic() + grace
        records: dict[str, dict] = {}
        while True:
            records, done = self._entries(storage, records)
            if time.monotonic() >= deadline or not _in_flight(records, done):
                break
            time.sleep(POLL_SECONDS)
        dropped = {name for rec in records.values() for name in rec.get("files", []) if name not in keep}
        _delete_data_files(storage, self.uri, dropped)
        for path in [*records, *done]:
            storage.delete(path)
        self._remove_stale_markers(storage)

    def _entries(self, storage: Storage, known: dict[str, dict]) -> tuple[dict[str, dict], set[str]]:
        """This job's records (path -> content) and done markers (paths). A record never changes
        once written: those in ``known`` (an earlier look's) are not read again."""
        records: dict[str, dict] = {}
        done: set[str] = set()
        for name in storage.list_dir(join_uri(self.uri, JOBS_DIR)):
            if not name.startswith(self.token + "-"):
                continue
            path = self._path(name)
            if name.endswith(RECORD_SUFFIX) and path in known:
                records[path] = known[path]
            elif name.endswith(RECORD_SUFFIX):
                try:
                    content = json.loads(storage.read_bytes(path))
                except FileNotFoundError:  # its task removed it meanwhile
                    continue
                records[path] = content if isinstance(content, dict) else {"files": list(content)}
            elif name.endswith(DONE_SUFFIX):
                done.add(path)
        return records, done

    def _remove_stale_markers(self, storage: Storage) -> None:
        now = time.time()
        for name in storage.list_dir(join_uri(self.uri, JOBS_DIR)):
            if name.endswith(CLOSED_SUFFIX) and name != self.token + CLOSED_SUFFIX:
                path = self._path(name)
                mtime = storage.mtime(path)
                if mtime is not None and now - mtime > STALE_MARKER_SECONDS:
                    storage.delete(path)


@dataclass
class TaskLedger:
    """What one task attempt notes; a ``FileProgress`` for ``WritePlan.write``."""

    ledger: JobLedger
    storage: Storage
    key: str
    files: list[str] = field(default_factory=list)

    def _record(self, number: int) -> str:
        """The path of this task's record of its ``number``-th file (from 1)."""
        return self.ledger._path(f"{self.key}-{number}{RECORD_SUFFIX}")

    def opened(self, name: str) -> None:
        """Called before a data file is created: note it (a record of its own); refuse it once the
        job is closed.

        Raises:
            JobClosedError: the job already committed or failed.
        """
        self.files.append(name)
        content = {"files": [name], "host": socket.gethostname(), "pid": os.getpid()}
        self.storage.write_bytes(self._record(len(self.files)), json.dumps(content).encode())
        if self.ledger.closed(self.storage):
            raise JobClosedError(f"Spark job {self.ledger.token} closed while this task was writing")

    def finished(self, fragment: table_pb2.DataFragment) -> None:
        """A data file is complete (nothing to note: its name was noted when it was opened)."""

    def end(self) -> bool:
        """The task wrote its last file (or failed): mark it done; False, after removing its files
        and records, if the job is closed."""
        done = self.ledger._path(self.key + DONE_SUFFIX)
        self.storage.write_bytes(done, b"")
        if not self.ledger.closed(self.storage):
            return True
        _delete_data_files(self.storage, self.ledger.uri, set(self.files))
        for number in range(1, len(self.files) + 1):
            self.storage.delete(self._record(number))
        self.storage.delete(done)
        return False


def _in_flight(records: dict[str, dict], done: set[str]) -> bool:
    """Whether a task that noted a file may still be writing: no done marker, and not known dead."""
    finished = {path.removesuffix(DONE_SUFFIX) for path in done}
    host = socket.gethostname()
    for path, content in records.items():
        key = path.removesuffix(RECORD_SUFFIX).rsplit("-", 1)[0]
        if key in finished:
            continue
        if content.get("host") == host and not _alive(content.get("pid")):
            continue
        return True
    return False


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return True  # cannot tell: wait for it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete_data_files(storage: Storage, uri: str, names: set[str]) -> None:
    """Delete data files ``names`` and any temporary copy of them (a write killed midway)."""
    if not names:
        return
    for name in names:
        storage.delete(join_uri(uri, DATA_DIR, name))
    for entry in storage.list_dir(join_uri(uri, DATA_DIR)):
        if entry.startswith(TEMP_PREFIX) and entry.split("-", 2)[-1] in names:
            storage.delete(join_uri(uri, DATA_DIR, entry))
