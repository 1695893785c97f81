"""PySpark data source ``lance``: ``spark.read.format("lance")`` / ``df.write.format("lance")``.

Call ``lance_fw.spark.register(spark)`` once per session. Executors must run a Python that has
lance_fw installed (set ``PYSPARK_PYTHON``); see docs/spark.md for options and the type mapping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

from pyspark.sql import SparkSession

from lance_fw.spark.maintenance import add_columns, compact
from lance_fw.spark.reader import read
from lance_fw.spark.source import LanceDataSource


def register(spark: SparkSession) -> None:
    """Register the ``lance`` format with ``spark`` (warns if its workers cannot import lance_fw)."""
    _check_worker_python(spark)
    spark.dataSource.register(LanceDataSource)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread.

    PySpark 4.3 finds Python data sources for *writes* through the JVM thread's active session,
    which a new Python thread does not have (reads are unaffected): ``df.write.format("lance")``
    from a worker thread fails with DATA_SOURCE_NOT_FOUND unless the thread calls this first.
    """
    jvm = spark._jvm
    assert jvm is not None  # set by every classic session's constructor (pyspark asserts it too)
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _check_worker_python(spark: SparkSession) -> None:
    python = (
        os.environ.get("PYSPARK_PYTHON")
        or spark.conf.get("spark.pyspark.python", None)
        or shutil.which("python3")
        or "python3"
    )
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return
    probe = subprocess.run([python, "-c", "import lance_fw"], capture_output=True)
    if probe.returncode != 0:
        warnings.warn(
            f"Spark's Python workers run {python!r}, which cannot import lance_fw; set "
            f"PYSPARK_PYTHON={sys.executable} before creating the SparkSession",
            stacklevel=3,
        )


__all__ = ["LanceDataSource", "activate", "add_columns", "compact", "read", "register"]
