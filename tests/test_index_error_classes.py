"""Index calls that fail, run on pylance and lance_fw: lance_fw's typed error must also be an
instance of the exception class pylance raises, so ``except KeyError`` (etc.) code keeps working."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError

CASES: dict[str, Callable[[Any], object]] = {
    "create on a missing column": lambda ds: ds.create_scalar_index("zz", "BTREE"),
    "create a BITMAP on a missing column": lambda ds: ds.create_scalar_index("zz", "BITMAP"),
    "an unknown index type": lambda ds: ds.create_scalar_index("a", "NOPE"),
    "LABEL_LIST on an integer column": lambda ds: ds.create_scalar_index("a", "LABEL_LIST"),
    "BTREE on a list column": lambda ds: ds.create_scalar_index("l", "BTREE"),
    "BITMAP on a list column": lambda ds: ds.create_scalar_index("l", "BITMAP"),
    "drop a missing index": lambda ds: ds.drop_index("nope"),
    "statistics of a missing index": lambda ds: ds.stats.index_stats("nope"),
    "prewarm a missing index": lambda ds: ds.prewarm_index("nope"),
}


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("errors") / "ds")
    n = 5000
    table = pa.table(
        {"a": list(range(n)), "s": [str(i) for i in range(n)], "l": [[i, i + 1] for i in range(n)]}
    )
    lance.write_dataset(table, path, max_rows_per_file=2000)
    return path


def _raised(call: Callable[[Any], object], ds: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        call(ds)
    return info.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_is_also_pylance_class(uri: str, case: str) -> None:
    theirs = _raised(CASES[case], lance.dataset(uri))
    ours = _raised(CASES[case], lance_fw.dataset(uri))
    assert isinstance(ours, LanceError), (case, type(ours))
    assert isinstance(ours, type(theirs)), (case, type(theirs).__mro__, type(ours).__mro__)
    assert str(ours) and not str(ours).startswith("'"), str(ours)  # not quoted like a plain KeyError
