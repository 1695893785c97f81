"""Shared fixtures and helpers: pylance is the oracle, imported only here and in tests."""

from __future__ import annotations

import pyarrow as pa
import pytest


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
