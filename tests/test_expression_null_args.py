"""NULL literals as the pattern / replacement / flags of regexp functions (found by mypy, issue 21).

``string_literal`` answers None for a NULL literal; pylance (DataFusion) then returns NULL for every
row, while lance_fw handed None on to ``re`` and failed with a bare ``TypeError``. Differential: the
same projection and filter on a pylance dataset read by both libraries."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_fw
from tests.conftest import assert_tables_equal

EXPRESSIONS = [
    "regexp_replace(s, NULL, 'x')",
    "regexp_replace(s, 'b', NULL)",
    "regexp_replace(s, 'b', 'x', NULL)",
    "regexp_replace(s, NULL, NULL, 'g')",
]


@pytest.fixture(scope="module")
def dataset_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("nullargs") / "ds")
    lance.write_dataset(pa.table({"s": ["abc", None, "bbb", ""]}), uri)
    return uri


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_null_regex_arguments_project_like_pylance(dataset_uri: str, expression: str) -> None:
    expected = lance.dataset(dataset_uri).to_table(columns={"r": expression})
    actual = lance_fw.dataset(dataset_uri).to_table(columns={"r": expression})
    assert_tables_equal(expected, actual)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_null_regex_arguments_filter_like_pylance(dataset_uri: str, expression: str) -> None:
    where = f"{expression} IS NULL"
    expected = lance.dataset(dataset_uri).to_table(filter=where)
    actual = lance_fw.dataset(dataset_uri).to_table(filter=where)
    assert_tables_equal(expected, actual)
