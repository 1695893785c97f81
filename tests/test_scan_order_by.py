"""``scanner(order_by=[ColumnOrdering(...)])`` run on pylance and lance_fw: the same rows in the
same order (keys without ties, so pylance's unspecified tie order cannot differ), offset/limit
applied after the sort, and the same error classes."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import ColumnOrdering as PlColumnOrdering

import lance_fw
from lance_fw.dataset import ColumnOrdering as FwColumnOrdering

N = 9000  # several 4096-row chunks and three fragments


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(7)
    perm = rng.permutation(N)
    f = rng.normal(size=N)
    f[::97] = np.nan
    f[5] = -0.0
    table = pa.table(
        {
            "u": pa.array(perm, pa.int64()),  # unique: a total order
            "f": pa.array(f, mask=np.arange(N) % 89 == 0),
            "s": pa.array([f"k{p:05d}" for p in perm], mask=np.arange(N) % 101 == 0),
            "g": pa.array(perm % 7, pa.int32()),
            "z": pa.array(_zeros_of_both_signs(rng)),
        }
    )
    path = str(tmp_path_factory.mktemp("order") / "ds")
    lance.write_dataset(table, path, max_rows_per_file=3500)
    return path


def _zeros_of_both_signs(rng: np.random.Generator) -> np.ndarray:
    """Mostly -0.0 and 0.0 (equal as IEEE numbers, ordered in total order), every tenth value a
    number of either sign: a top-k whose leading key ties across the cut."""
    z = np.where(rng.random(N) < 0.45, -0.0, 0.0)
    z[::10] = rng.normal(size=len(z[::10]))
    return z


def _plain(table: pa.Table) -> dict[str, list[Any]]:
    """The table's values, NaN spelled so that equal tables compare equal."""
    return {
        name: ["NaN" if isinstance(v, float) and v != v else v for v in column.to_pylist()]
        for name, column in zip(table.column_names, table.columns)
    }


def _scan(lib: Any, uri: str, order: list[tuple[str, bool, bool]], **kwargs: Any) -> pa.Table:
    make = PlColumnOrdering if lib is lance else FwColumnOrdering
    return lib.dataset(uri).to_table(order_by=[make(c, a, n) for c, a, n in order], **kwargs)


ORDERS = [
    [("u", True, False)],
    [("u", False, True)],
    [("s", True, True), ("u", True, False)],  # nulls tie: the unique key breaks the ties
    [("s", False, False), ("u", False, True)],
    [("g", True, False), ("u", False, False)],
    [("g", False, True), ("s", True, False), ("u", True, False)],
    [("z", True, False), ("u", True, False)],  # ties of -0.0 and 0.0 where a top-k cuts
    [("z", False, True), ("u", False, False)],
    [("f", True, True), ("u", True, False)],  # NaNs and nulls lead: a top-k on the exact keys
    [("f", False, False), ("u", True, False)],
]


@pytest.mark.parametrize("order", ORDERS, ids=str)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"limit": 10},
        {"offset": 4000, "limit": 2000},
        {"offset": 300, "limit": 900},  # a top-k (under a quarter of the rows)
        {"offset": 7, "limit": 30},  # a top-k whose other columns are taken after the sort
        {"filter": "g < 3"},
        {"columns": ["u", "s", "g"]},
        {"columns": ["g", "s", "u", "z", "f"], "limit": 25, "filter": "g != 2"},  # sort columns read first
    ],
    ids=str,
)
def test_order_by_matches_pylance(
    uri: str, order: list[tuple[str, bool, bool]], kwargs: dict[str, Any]
) -> None:
    try:
        theirs = _scan(lance, uri, order, **kwargs)
    except ValueError:  # a sort column left out of columns= (no filter): pylance cannot plan it
        with pytest.raises(ValueError):
            _scan(lance_fw, uri, order, **kwargs)
        return
    ours = _scan(lance_fw, uri, order, **kwargs)
    assert ours.schema.equals(theirs.schema)
    assert _plain(ours) == _plain(theirs)


def test_float_total_order_on_unique_keys(uri: str) -> None:
    """NaN, -0.0 and nulls among floats: compared where the key (f, u) is unique."""
    for asc in (True, False):
        for nulls_first in (True, False):
            order = [("f", asc, nulls_first), ("u", True, False)]
            theirs, ours = _scan(lance, uri, order), _scan(lance_fw, uri, order)
            assert ours.column("u").to_pylist() == theirs.column("u").to_pylist(), (asc, nulls_first)


def test_names_sort_ascending_nulls_last(uri: str) -> None:
    """``order_by=["u"]``: pylance takes a name as ``ColumnOrdering(name)``."""
    theirs = lance.dataset(uri).to_table(order_by=["g", "u"], limit=50)
    ours = lance_fw.dataset(uri).to_table(order_by=["g", "u"], limit=50)
    assert _plain(ours) == _plain(theirs)


@pytest.mark.parametrize("column", ["nope", "_rowid"])
def test_unknown_sort_column_is_a_value_error(uri: str, column: str) -> None:
    with pytest.raises(ValueError):
        _scan(lance, uri, [(column, True, False)])
    with pytest.raises(ValueError):
        _scan(lance_fw, uri, [(column, True, False)])
