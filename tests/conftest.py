"""Shared fixtures and helpers: pylance is the oracle, imported only here and in tests."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, settings

#: The real S3 server fixture (``s3_server``) for the object-storage tests.
pytest_plugins = ["s3_server"]

# --- Hypothesis profiles (the interop properties). "ci", the default, is deterministic (the same
# examples every run, no example database), sized for CI, and does not shrink (shrinking a large
# failing example can take minutes; the printed blob replays it, and the deep profile shrinks).
# HYPOTHESIS_PROFILE=deep explores far more, and larger, examples for local runs. No "explain"
# phase anywhere: it re-runs a failing example hundreds of times.
_HYPOTHESIS_COMMON = dict(deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=16, derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate], **_HYPOTHESIS_COMMON)
settings.register_profile("deep", max_examples=200, phases=[p for p in Phase if p != Phase.explain],
                          **_HYPOTHESIS_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def assert_tables_equal(expected: pa.Table, actual: pa.Table) -> None:
    """Equal data and column names; types compared after normalising harmless differences."""
    assert actual.num_rows == expected.num_rows, f"{actual.num_rows} rows, expected {expected.num_rows}"
    assert actual.column_names == expected.column_names
    for name in expected.column_names:
        e, a = expected.column(name), actual.column(name)
        if pa.types.is_dictionary(e.type):  # same values; dictionaries may differ chunk by chunk
            e, a = e.cast(e.type.value_type), a.cast(a.type.value_type)
        e, a = e.combine_chunks(), a.combine_chunks()
        if not a.type.equals(e.type):
            a = a.cast(e.type)
        assert a.equals(e), f"column {name!r} differs:\nexpected {e.to_pylist()[:20]}\nactual   {a.to_pylist()[:20]}"


@pytest.fixture
def uri(tmp_path) -> str:
    return str(tmp_path / "ds")


@pytest.fixture
def duckdb_pulls(monkeypatch) -> list[int]:
    """Rows of each batch DuckDB pulls from a ``lance_scan`` (the adapter's reader), in order."""
    from lance_fw.duckdb import dataset as duckdb_dataset

    pulled: list[int] = []
    original = duckdb_dataset._ReportingScanner.to_reader

    def counting(self):
        reader = original(self)

        def counted():
            for batch in reader:
                pulled.append(batch.num_rows)
                yield batch

        return pa.RecordBatchReader.from_batches(reader.schema, counted())

    monkeypatch.setattr(duckdb_dataset._ReportingScanner, "to_reader", counting)
    return pulled


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local SparkSession for the whole run (start-up costs ~10 s). ``local[2,2]``: two cores,
    and a failed task is retried once, as on a cluster. Workers run this interpreter."""
    import os
    import sys

    pyspark = pytest.importorskip("pyspark.sql")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (pyspark.SparkSession.builder.master("local[2,2]").appName("lance_fw-tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp_path_factory.mktemp('jvm')}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    import lance_fw.spark

    lance_fw.spark.register(session)
    yield session
    session.stop()
