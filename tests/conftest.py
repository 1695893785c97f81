"""Shared fixtures and helpers: pylance is the oracle, imported only here and in tests."""

from __future__ import annotations

import pyarrow as pa
import pytest


def assert_tables_equal(expected: pa.Table, actual: pa.Table) -> None:
    """Equal data and column names; types compared after normalising harmless differences."""
    assert actual.num_rows == expected.num_rows, f"{actual.num_rows} rows, expected {expected.num_rows}"
    assert actual.column_names == expected.column_names
    for name in expected.column_names:
        e = expected.column(name).combine_chunks()
        a = actual.column(name).combine_chunks()
        if pa.types.is_dictionary(e.type):  # same values; dictionaries may be laid out differently
            e, a = e.dictionary_decode(), a.dictionary_decode()
        if not a.type.equals(e.type):
            a = a.cast(e.type)
        assert a.equals(e), f"column {name!r} differs:\nexpected {e.to_pylist()[:20]}\nactual   {a.to_pylist()[:20]}"


@pytest.fixture
def uri(tmp_path) -> str:
    return str(tmp_path / "ds")
