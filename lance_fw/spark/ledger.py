"""Which files each task of one Spark batch write produced, so that none outlives the job.

Spark hands a data source's ``abort`` the commit messages of the tasks it heard back from only: a
task still running when the job fails (it finishes afterwards) or a speculative duplicate that
loses its race writes files nobody is told about, and ``data/`` kept them. So every task, after
writing, records its file names under ``_spark_jobs/`` and then looks for the job's *closed*
marker; the driver, when it commits or aborts, first writes that marker and then reads every
record, deleting the files it did not commit. A task records before it looks and the driver marks
before it reads, so each task's files are removed by one side or the other, whatever the timing.
Only a task killed between writing a file and recording it (SIGKILL of an executor) leaves a
file behind; ``cleanup_old_versions`` removes such unreferenced files once they are old.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from lance_fw.io.storage import Storage, join_uri

#: Directory (in the dataset root, beside ``data/``) of the records and markers; Lance ignores it.
JOBS_DIR = "_spark_jobs"
RECORD_SUFFIX = ".files.json"
CLOSED_SUFFIX = ".closed"
#: Closed markers older than this are removed when a later job closes (no task of a job runs that long).
STALE_MARKER_SECONDS = 7 * 24 * 3600


@dataclass
class JobLedger:
    """One batch write's ledger; picklable (it travels to the tasks inside the writer)."""

    uri: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _path(self, name: str) -> str:
        return join_uri(self.uri, JOBS_DIR, name)

    def record(self, storage: Storage, partition_id: int, attempt: int, files: list[str]) -> bool:
        """A task wrote ``files`` (names in ``data/``): note them, then return False, after removing
        them, if the job was already closed (its result would never be committed)."""
        record = self._path(f"{self.token}-{partition_id}-{attempt}-{uuid.uuid4().hex}{RECORD_SUFFIX}")
        storage.write_bytes(record, json.dumps(files).encode())
        if not storage.exists(self._path(self.token + CLOSED_SUFFIX)):
            return True
        for name in files:
            storage.delete(join_uri(self.uri, "data", name))
        storage.delete(record)
        return False

    def close(self, storage: Storage, keep: set[str]) -> None:
        """The job committed or failed: delete every recorded file not in ``keep`` (names in
        ``data/``: what the commit, or any version since, references), and the records."""
        storage.write_bytes(self._path(self.token + CLOSED_SUFFIX), b"")
        now = time.time()
        for name in storage.list_dir(join_uri(self.uri, JOBS_DIR)):
            path = self._path(name)
            if name.startswith(self.token + "-") and name.endswith(RECORD_SUFFIX):
                for data_name in json.loads(storage.read_bytes(path)):
                    if data_name not in keep:
                        storage.delete(join_uri(self.uri, "data", data_name))
                storage.delete(path)
            elif name.endswith(CLOSED_SUFFIX) and name != self.token + CLOSED_SUFFIX:
                mtime = storage.mtime(path)
                if mtime is not None and now - mtime > STALE_MARKER_SECONDS:
                    storage.delete(path)
