"""pylance's LanceDataset conveniences (insert, merge, slice, sample, to_pandas, truncate_table,
stats.dataset_stats, has_stable_row_ids, storage options, delete/update retry options): the same
calls on a dataset each library wrote, compared (values, schema, row order, version, error class)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError

#: Rows of the test data: several fragments, each crossing 4096-row boundaries
ROWS = 10_000
ROWS_PER_FILE = 4500
TABLE = pa.table(
    {
        "id": pa.array(np.arange(ROWS), pa.int64()),
        "s": pa.array([f"s{i % 97}" for i in range(ROWS)]),
        "x": pa.array(np.arange(ROWS) * 0.25, pa.float64()),
    }
)


def _each(tmp_path: Path, call: Callable[[ModuleType, Any], object], **options: Any) -> tuple[object, object]:
    """``call(lib, dataset)`` on a dataset ``lib`` wrote (with deletions in two fragments), per library."""
    out = []
    for lib in (lance, lance_fw):
        ds = lib.write_dataset(
            TABLE, str(tmp_path / lib.__name__), max_rows_per_file=ROWS_PER_FILE, **options
        )
        ds.delete("id % 1000 = 7")
        out.append(call(lib, ds))
    return out[0], out[1]


class Raised:
    """The error a call raised, equal to another when its class is a subclass of the other's most
    specific builtin class (what an ``except`` clause written for pylance names)."""

    def __init__(self, error: Exception) -> None:
        self.type = type(error)
        self.builtin = next(c for c in self.type.__mro__ if c.__module__ == "builtins")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Raised):
            return NotImplemented
        return issubclass(self.type, other.builtin) or issubclass(other.type, self.builtin)

    def __repr__(self) -> str:
        return f"Raised({self.type.__name__})"


def _error_class(call: Callable[[], object]) -> Raised | None:
    try:
        call()
    except Exception as error:
        return Raised(error)
    return None


def _state(ds: Any) -> tuple[int, int, pa.Table]:
    return ds.version, ds.count_rows(), ds.to_table()


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_insert(tmp_path: Path, mode: str) -> None:
    more = TABLE.slice(100, 5000)

    def call(lib: ModuleType, ds: Any) -> object:
        ds.insert(more, mode=mode, max_rows_per_file=3000)
        return _state(ds), len(ds.get_fragments()), _state(lib.dataset(ds.uri))

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_insert_refuses_what_write_dataset_refuses(tmp_path: Path) -> None:
    ds = lance_fw.write_dataset(TABLE.slice(0, 10), str(tmp_path / "d"))
    with pytest.raises(UnsupportedFeatureError, match="target_bases"):
        ds.insert(TABLE.slice(0, 10), target_bases=["b"])
    with pytest.raises(TypeError):
        ds.insert(TABLE.slice(0, 10), no_such_option=1)


@pytest.mark.parametrize(
    ("data", "left_on", "right_on"),
    [
        (
            pa.table(
                {"id": pa.array([5000, 7, 1, 9999, 123456], pa.int64()), "y": ["a", "b", "c", "d", "e"]}
            ),
            "id",
            None,
        ),
        (
            pa.table(
                {"key": pa.array([2, None, 4], pa.int64()), "y": [1.5, 2.5, 3.5], "z": [True, False, None]}
            ),
            "id",
            "key",
        ),
        (pa.table({"s": ["s3", "s96"], "t": pa.array([[1, 2], []], pa.list_(pa.int32()))}), "s", None),
    ],
)
def test_merge(tmp_path: Path, data: pa.Table, left_on: str, right_on: str | None) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        ds.merge(data, left_on, right_on)
        return ds.schema, _state(ds), _state(lib.dataset(ds.uri)), len(ds.get_fragments())

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


@pytest.mark.parametrize(
    "data",
    [pa.table({"id": pa.array([1], pa.int64()), "s": ["clash"]}), pa.table({"other": [1], "y": [2]})],
    ids=["existing column", "no join column"],
)
def test_merge_errors(tmp_path: Path, data: pa.Table) -> None:
    theirs, ours = _each(tmp_path, lambda lib, ds: _error_class(lambda: ds.merge(data, "id")))
    assert ours == theirs
    assert isinstance(theirs, Raised) and theirs.builtin is OSError


@pytest.mark.parametrize(("start", "end"), [(0, 10), (4090, 4600), (9980, 20_000), (50, 50)])
def test_slice(tmp_path: Path, start: int, end: int) -> None:
    theirs, ours = _each(tmp_path, lambda lib, ds: ds.slice(start, end, columns=["s", "id"]))
    assert ours == theirs


@pytest.mark.parametrize(("start", "end"), [(-1, 3), (5, 4)])
def test_slice_errors(tmp_path: Path, start: int, end: int) -> None:
    theirs, ours = _each(tmp_path, lambda lib, ds: _error_class(lambda: ds.slice(start, end)))
    assert ours == theirs
    assert isinstance(theirs, Raised) and theirs.builtin is ValueError


@pytest.mark.parametrize("randomize_order", [True, False])
def test_sample(tmp_path: Path, randomize_order: bool) -> None:
    """Random rows: compare what is fixed (row count, schema, distinct live rows, order when sorted)."""

    def call(lib: ModuleType, ds: Any) -> object:
        sample = ds.sample(500, columns=["id", "s"], randomize_order=randomize_order)
        ids = sample["id"].to_pylist()
        live = set(ds.to_table(columns=["id"])["id"].to_pylist())
        return (
            sample.schema,
            sample.num_rows,
            len(set(ids)),
            set(ids) <= live,
            ids == sorted(ids) or randomize_order,
        )

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_sample_too_many_rows(tmp_path: Path) -> None:
    theirs, ours = _each(tmp_path, lambda lib, ds: _error_class(lambda: ds.sample(ROWS)))
    assert ours == theirs
    assert isinstance(theirs, Raised) and theirs.builtin is ValueError


def test_to_pandas(tmp_path: Path) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        frame = ds.to_pandas(["id", "x"], "id > 4000", 600, 10, batch_size=100, with_row_id=False)
        return list(frame.columns), [str(t) for t in frame.dtypes], frame.to_dict("list")

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_truncate_table(tmp_path: Path) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        ds.truncate_table()
        return ds.schema, ds.version, ds.count_rows(), lib.dataset(ds.uri).count_rows()

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_dataset_stats(tmp_path: Path) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        return ds.stats.dataset_stats(), ds.stats.dataset_stats(max_rows_per_group=5000)

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


@pytest.mark.parametrize("stable", [False, True])
def test_has_stable_row_ids(tmp_path: Path, stable: bool) -> None:
    """lance_fw reads stable row ids but does not write them: pylance writes the dataset."""
    path = str(tmp_path / "d")
    lance.write_dataset(TABLE, path, max_rows_per_file=ROWS_PER_FILE, enable_stable_row_ids=stable)
    assert lance_fw.dataset(path).has_stable_row_ids == lance.dataset(path).has_stable_row_ids == stable


def test_storage_options(tmp_path: Path) -> None:
    """The options given at open (pylance adds its ``user_agent``, which lance_fw does not send)."""

    def call(lib: ModuleType, ds: Any) -> object:
        given = lib.dataset(ds.uri, storage_options={"timeout": "60s"})
        options = {k: v for k, v in given.initial_storage_options.items() if k != "user_agent"}
        return ds.initial_storage_options, ds.latest_storage_options(), options

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_delete_and_update_take_retry_options(tmp_path: Path) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        ds.delete("id < 10", conflict_retries=3, retry_timeout=timedelta(seconds=5))
        updated = ds.update({"x": "x + 1"}, "id < 20", 3, timedelta(seconds=5))
        return updated, _state(ds)

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_disable_auto_cleanup(tmp_path: Path) -> None:
    def call(lib: ModuleType, ds: Any) -> object:
        ds.update_config({"lance.auto_cleanup.interval": "5", "lance.auto_cleanup.older_than": "60s"})
        ds.optimize.disable_auto_cleanup()
        return ds.version, sorted(k for k in ds.config() if k.startswith("lance.auto_cleanup"))

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


def test_enable_auto_cleanup_is_refused(tmp_path: Path) -> None:
    """lance_fw's commits never clean up: enabling pylance's auto cleanup would be silently ignored."""
    ds = lance_fw.write_dataset(TABLE.slice(0, 10), str(tmp_path / "d"))
    with pytest.raises(UnsupportedFeatureError, match="enable_auto_cleanup"):
        ds.optimize.enable_auto_cleanup({"interval": 1, "older_than_seconds": 0})
    assert ds.version == 1


@pytest.mark.parametrize("position", [ROWS - 5, ROWS + 5])
def test_take_past_the_live_rows(tmp_path: Path, position: int) -> None:
    """Past the live rows (10 are deleted): pylance raises OSError; lance_fw's error is one too."""
    theirs, ours = _each(tmp_path, lambda lib, ds: _error_class(lambda: ds.take([0, position])))
    assert ours == theirs
    assert isinstance(theirs, Raised) and theirs.builtin is OSError


def test_version_refs_and_get_version(tmp_path: Path) -> None:
    """get_version names the object's version (pylance's summary metadata lance_fw lacks, as in
    versions(): see test_versions_parity.py, which also compares the timestamps)."""

    def call(lib: ModuleType, ds: Any) -> object:
        ds.update({"x": "0"}, "id < 5")
        first = lib.dataset(ds.uri, version=1)
        picked = [v["version"] for v in (first.get_version(), ds.get_version())]
        return ds.version_refs(), first.version_refs(), picked

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs


@pytest.mark.parametrize("kind", ["reader", "pandas", "pyarrow dataset", "scanner", "lance dataset"])
def test_merge_inputs(tmp_path: Path, kind: str) -> None:
    import pyarrow.dataset as pds

    data = pa.table({"id": pa.array([3, 4096, 9000], pa.int64()), "y": ["a", "b", "c"]})

    def source(lib: ModuleType) -> object:
        if kind == "reader":
            return data.to_reader()
        if kind == "pandas":
            return data.to_pandas()
        if kind == "pyarrow dataset":
            return pds.dataset(data)
        if kind == "scanner":
            return pds.dataset(data).scanner()
        return lib.write_dataset(data, str(tmp_path / f"src-{lib.__name__}"))

    def call(lib: ModuleType, ds: Any) -> object:
        ds.merge(source(lib), "id")
        return _state(ds)

    theirs, ours = _each(tmp_path, call)
    assert ours == theirs
