"""``lance_fw.vector`` against pylance's ``lance.vector``: ``vec_to_table`` by value, type and error
class; every other helper refused with ``UnsupportedFeatureError`` naming it.

pylance's module imports ``tqdm`` at the top (not installed here, and unused by ``vec_to_table``):
the oracle is loaded with a stand-in ``tqdm.auto`` when the real one is missing."""

from __future__ import annotations

import importlib
import inspect
import sys
import types

import lance
import numpy as np
import pytest

import lance_fw
import lance_fw.vector as fv
from lance_fw.errors import UnsupportedFeatureError


def _pylance_vector() -> types.ModuleType:
    try:
        importlib.import_module("tqdm.auto")
    except ImportError:
        pass
    else:
        return importlib.import_module("lance.vector")
    stub = types.ModuleType("tqdm.auto")
    stub.tqdm = object  # type: ignore[attr-defined]
    sys.modules["tqdm"], sys.modules["tqdm.auto"] = types.ModuleType("tqdm"), stub
    try:
        return importlib.import_module("lance.vector")
    finally:  # other tests must still see tqdm as missing
        del sys.modules["tqdm"], sys.modules["tqdm.auto"]


lv = _pylance_vector()

#: Vectors crossing the 1024/4096-value boundaries (5000 rows of 8 values)
ROWS, DIM = 5000, 8
RNG = np.random.default_rng(2)
MATRIX = RNG.standard_normal((ROWS, DIM))


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # compared by class
        return type(error)


CASES = [
    ((MATRIX,), {}),
    ((MATRIX,), {"names": "emb"}),
    ((MATRIX,), {"names": ["emb"]}),
    ((MATRIX.astype(np.float16),), {}),
    ((MATRIX.tolist(),), {}),
    (([[1, 2, 3], [4, 5, 6]],), {"ndim": 3}),
    (({f"k{i}": MATRIX[i] for i in range(1500)},), {}),
    (({"a": [1.0, 2.0], "b": [3.0, 4.0]},), {"names": ["key", "vec"]}),
    (({1: [1.0, 2.0], 2: [3.0, 4.0]},), {}),
    (([[1.0, 2.0], [3.0]],), {}),  # ragged: ValueError
    (([[1.0, 2.0], [3.0]],), {"check_ndim": False}),  # ragged, unchecked: pyarrow's error
    (([[1.0, 2.0], [3.0, 4.0]],), {"ndim": 3}),  # wrong ndim: ValueError
    (([[1.0, 2.0, 3.0, 4.0]],), {"ndim": 2, "check_ndim": False}),
    (((1.0, 2.0),), {}),  # a tuple: NotImplementedError
    (("abc",), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CASES)
def test_vec_to_table_matches(args, kwargs):
    theirs, ours = _outcome(lv.vec_to_table, *args, **kwargs), _outcome(fv.vec_to_table, *args, **kwargs)
    if isinstance(theirs, type):
        assert isinstance(ours, type) and issubclass(ours, theirs), (ours, theirs)
        return
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert ours.equals(theirs)


def test_vec_to_table_writes_and_reads_across_libraries(tmp_path):
    table = fv.vec_to_table(MATRIX)
    lance_fw.write_dataset(table, str(tmp_path / "fw"), max_rows_per_file=2100)
    assert lance.dataset(str(tmp_path / "fw")).to_table().equals(lv.vec_to_table(MATRIX))


REFUSED = (
    sorted(set(lv.__all__) - {"vec_to_table"})
    if hasattr(lv, "__all__")
    else [
        name
        for name, value in vars(lv).items()
        if inspect.isfunction(value)
        and value.__module__ == lv.__name__
        and not name.startswith("_")
        and name != "vec_to_table"
    ]
)


def test_every_pylance_helper_is_present():
    ours = {n for n in dir(fv) if not n.startswith("_")}
    assert set(REFUSED) <= ours and "vec_to_table" in ours
    assert len(REFUSED) == 12


@pytest.mark.parametrize("name", REFUSED)
def test_helpers_refuse_a_call_with_pylances_arguments(name, tmp_path):
    """A call binding pylance's required arguments raises the typed refusal naming the helper."""
    theirs, ours = getattr(lv, name), getattr(fv, name)
    required = [
        p for p in inspect.signature(theirs).parameters.values() if p.default is inspect.Parameter.empty
    ]
    ds = lance_fw.write_dataset(fv.vec_to_table(MATRIX[:10]), str(tmp_path / "d"))
    with pytest.raises(UnsupportedFeatureError, match=f"lance.vector.{name} "):
        ours(ds, *([None] * (len(required) - 1)))
    assert getattr(ours, "__lance_fw_refused__", None)
