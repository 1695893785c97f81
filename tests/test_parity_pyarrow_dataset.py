"""A ``LanceDataset`` is a ``pyarrow.dataset.Dataset``, as pylance's is: plain DuckDB (replacement
scans, ``register``) queries it with projection and filter pushdown and gets pylance's answers;
it pickles; the base class's methods that would reach pyarrow's C++ dataset are refused (pylance's
fail or crash there)."""

from __future__ import annotations

import copy
import pickle

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError

ROWS = 20_000
QUERIES = [
    "SELECT count(*), sum(id), min(name), max(value) FROM ds",
    "SELECT id, name FROM ds WHERE id BETWEEN 4000 AND 4100 ORDER BY id",
    "SELECT category, count(*) AS n, round(avg(value), 9) FROM ds WHERE category < 5 GROUP BY category ORDER BY category",
    "SELECT * FROM ds WHERE name = 'n-17' ORDER BY id LIMIT 5",
    "SELECT id FROM ds WHERE value > 0.9 AND category IN (1, 2, 3) ORDER BY id",
    "SELECT count(*) FROM ds WHERE name LIKE 'n-1%' OR id < 10",
]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "id": np.arange(ROWS, dtype=np.int64),
            "value": rng.random(ROWS),
            "category": rng.integers(0, 20, ROWS).astype(np.int32),
            "name": [f"n-{i % 301}" for i in range(ROWS)],
        }
    )
    out = str(tmp_path_factory.mktemp("ds") / "t.lance")
    lance.write_dataset(table, out, max_rows_per_file=6000)
    lance.dataset(out).delete("id % 11 = 0")
    return out


@pytest.mark.parametrize("query", QUERIES)
def test_duckdb_replacement_scan_matches_pylance(path, query):
    answers = []
    for mod in (lance, lance_fw):
        ds = mod.dataset(path)  # noqa: F841 - DuckDB finds it by name
        answers.append(duckdb.sql(query).fetchall())
    assert answers[1] == answers[0]


def test_register_and_isinstance(path):
    results = []
    for mod in (lance, lance_fw):
        ds = mod.dataset(path)
        assert isinstance(ds, pads.Dataset)
        con = duckdb.connect()
        con.register("t", ds)
        results.append(
            con.sql("SELECT category, max(id) FROM t WHERE id > 15000 GROUP BY 1 ORDER BY 1").fetchall()
        )
    assert results[1] == results[0]


def test_pickle_and_copy_keep_the_version(path):
    ds = lance_fw.dataset(path, version=1)
    again = pickle.loads(pickle.dumps(ds))
    assert again.version == 1 and again.to_table().equals(ds.to_table())
    twin = copy.copy(ds)
    assert twin.version == 1 and twin._storage is ds._storage


@pytest.mark.parametrize("name", ["filter", "sort_by", "join_asof", "_get_fragments"])
def test_base_methods_are_refused(path, name):
    with pytest.raises(UnsupportedFeatureError, match=name):
        getattr(lance_fw.dataset(path), name)("id")
