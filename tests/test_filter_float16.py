"""Filters on float16 (``halffloat``) columns against pylance 14, row for row.

pyarrow has no float16 kernels; lance_fw compares float16 values in float32 (exact) and computes
what DataFusion computes in float16 in float32, rounded back. pylance's rules checked here: a
literal next to a float16 column becomes a float16 (``q = 0.1`` matches float16(0.1); a literal
that rounds to infinity or to 0 is refused); a struct child IN a list with a float in it is
compared in float64 (``p.q IN (0.1)`` matches nothing), with integers only in float16; an
expression next to a float literal is compared in float64, next to an integer in float16;
``q + 1`` is a float16, ``q + 0.5`` a float64; ``abs`` keeps float16, ``round`` gives float64;
NaNs are ordered by sign (a NaN is above every number, a negative NaN below).
Datasets are written by both libraries, over two fragments past a 4096-row page.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import LanceError

ROWS = 10_000
ROWS_PER_FILE = 6_000
#: float16 values with every case of the rules: NaNs of both signs, both zeros, the smallest
#: subnormal, integers float16 cannot all hold (2049 is 2048), the largest finite and infinities
POOL = [0.1, 0.2, 0.25, 0.3, 0.5, 1.0, np.nan, -np.nan, -0.0, 0.0, 6e-8, 2048, 2050, 65504, np.inf, -np.inf]

FILTERS = [
    "q = 0.1",
    "q > 0.2",
    "q <= 0.25",
    "q <> 0.1",
    "0.2 < q",
    "q BETWEEN 0.1 AND 0.3",
    "q NOT BETWEEN 0.1 AND 0.3",
    "q IN (0.1, 0.2)",
    "q NOT IN (0.1)",
    "q IN (0.1, NULL)",
    "q NOT IN (0.1, NULL)",
    "q IN (2049)",
    "q IS NULL",
    "q IS NOT NULL",
    "q = 1",
    "q = 2049",
    "q = -0.0",
    "q = 0",
    "q > 0",
    "q < 0",
    "q > 3e-8",
    "q = 65519.0",
    "q = 1e400",
    "q IS NOT DISTINCT FROM 0.1",
    "q = CAST(0.1 AS DOUBLE)",
    "q = CAST(0.1 AS FLOAT)",
    "q = CAST('NaN' AS DOUBLE)",
    "q = CAST('-NaN' AS DOUBLE)",
    "q > CAST('-NaN' AS DOUBLE)",
    "q < CAST('NaN' AS FLOAT)",
    "q + 1 > 1.2",
    "q + 1 = 1.099609375",
    "q + 1 = 1.0999755859375",
    "q + 2049 = 2049",
    "q + 2049 IN (2049)",
    "q + 100000 > 0",
    "q - 0.1 = 0",
    "q * 2 > 0.3999",
    "-q < 0",
    "q / 0 > 1",
    "q % 0.1 > 0.05",
    "q + q > 0.4",
    "q + f > 0.4",
    "abs(q) < 0.2",
    "abs(q) + 1 = 1.099609375",
    "round(q, 1) + 1 = 1.1",
    "sqrt(q) > 0.3",
    "isnan(q)",
    "CAST(q AS FLOAT) > 0.2",
    "CAST(q AS DOUBLE) = 0.1",
    "q > q",
    "q = p.q",
    "q = f",
    "q < k",
    "p.q = 0.1",
    "p.q = 2049",
    "p.q IN (0.1, 0.2)",
    "p.q IN (0.0999755859375, 0.25)",
    "p.q IN (2049)",
    "p.q IN (2049, 0.5)",
    "coalesce(q, 0.5) = 0.5",
    "coalesce(q, 1) > 0.2",
    "coalesce(q, 2049) = 2049",
    "coalesce(q, f) > 0.2",
    "coalesce(q, k) > 0.2",
    "nullif(q, 1) IS NULL",
    "greatest(q, 1) = 1",
    "least(q, 1) < 0.5",
    "q + 1 NOT IN (1)",
    "q = k",
]
#: refused by both (pylance: the literal cannot become a float16; float16 and decimal mixed)
REFUSED = [
    "q = 1e-8",
    "q = 65520",
    "q > -65520.0",
    "q IN (1e-8)",
    "q > CAST(1 AS DECIMAL(3,1))",
    "q > CAST(k AS DECIMAL(6,1))",
    "q - CAST(1 AS DECIMAL(3,1)) > 1",
]


def _same(got: pa.Table, want: pa.Table) -> bool:
    """The same rows (by id) with the same schema (``Table.equals`` says NaN differs from NaN)."""
    return got.schema == want.schema and got["id"].to_pylist() == want["id"].to_pylist()


WRITERS: dict[str, Callable[..., Any]] = {"lance": lance.write_dataset, "lance_fw": lance_fw.write_dataset}


def _table(rows: int = ROWS, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    q = np.array(POOL, np.float16)[rng.integers(0, len(POOL), rows)]
    nulls = rng.random(rows) < 0.05
    half = pa.array(q, mask=nulls)
    return pa.table(
        {
            "id": np.arange(rows),
            "q": half,
            "p": pa.StructArray.from_arrays([pa.array(q)], names=["q"]),
            "f": pa.array(q.astype(np.float32)),
            "k": pa.array(rng.integers(0, 3000, rows).astype(np.int32)),
        }
    )


@pytest.fixture(scope="module", params=sorted(WRITERS))
def path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("f16") / "t.lance")
    WRITERS[request.param](_table(), out, max_rows_per_file=ROWS_PER_FILE)
    return out


def test_two_fragments_of_float16(path: str) -> None:
    ds = lance.dataset(path)
    assert len(ds.get_fragments()) == 2 and ds.schema.field("q").type == pa.float16()


@pytest.mark.parametrize("where", FILTERS)
def test_filter_matches_pylance(path: str, where: str) -> None:
    want = lance.dataset(path).to_table(filter=where)
    got = lance_fw.dataset(path).to_table(filter=where)
    assert _same(got, want), (where, got.num_rows, want.num_rows)


@pytest.mark.parametrize("where", REFUSED)
def test_literal_out_of_float16_range_is_refused(path: str, where: str) -> None:
    with pytest.raises(ValueError):
        lance.dataset(path).to_table(filter=where)
    with pytest.raises(LanceError):
        lance_fw.dataset(path).to_table(filter=where)


def _sparse(path: str) -> None:
    """Rows where each value is rare, so an exact index answer is taken without a re-check."""
    table = _table()
    q = np.full(ROWS, 7.0, np.float16)
    q[::997] = np.float16(0.1)
    q[5::1499] = np.float16(2048)
    q[7::1999] = np.float16(0.25)
    half = pa.array(q)
    table = table.set_column(1, "q", half).set_column(2, "p", pa.StructArray.from_arrays([half], names=["q"]))
    lance.write_dataset(table, path, max_rows_per_file=ROWS_PER_FILE)


@pytest.mark.parametrize("builder", sorted(WRITERS))
def test_filters_through_a_btree_match_pylance(builder: str, tmp_path: Path) -> None:
    path = str(tmp_path / "ix.lance")
    _sparse(path)
    library = lance if builder == "lance" else lance_fw
    library.dataset(path).create_scalar_index("q", "BTREE")
    library.dataset(path).create_scalar_index("p.q", "BTREE")
    for where in [
        "q = 0.1",
        "q IN (0.1, 2049)",
        "q > 0.2",
        "q BETWEEN 0.1 AND 0.25",
        "p.q = 0.1",
        "p.q IN (0.1)",
        "p.q IN (2049)",
        "p.q IN (2049, 0.25)",
        "p.q IN (0.0999755859375)",
    ]:
        want = lance.dataset(path).to_table(filter=where)
        got = lance_fw.dataset(path).to_table(filter=where)
        assert _same(got, want), (where, got.num_rows, want.num_rows)


@pytest.mark.parametrize(
    "where", ["q = 0.1", "q > 0.2 OR isnan(q)", "q IN (0.25, 2049)", "p.q IN (0.1, 0.2)"]
)
def test_delete_and_update_match_pylance(where: str, tmp_path: Path) -> None:
    base = str(tmp_path / "base.lance")
    lance.write_dataset(_table(), base, max_rows_per_file=ROWS_PER_FILE)
    results = []
    for name, library in (("lance", lance), ("lance_fw", lance_fw)):
        deleted, updated = str(tmp_path / f"d_{name}"), str(tmp_path / f"u_{name}")
        shutil.copytree(base, deleted)
        shutil.copytree(base, updated)
        library.dataset(deleted).delete(where)
        library.dataset(updated).update({"k": "-1"}, where=where)
        results.append(
            (
                lance.dataset(deleted).to_table().sort_by("id"),
                lance.dataset(updated).to_table().sort_by("id"),
            )
        )
    (want_d, want_u), (got_d, got_u) = results
    assert _same(got_d, want_d), (where, got_d.num_rows, want_d.num_rows)
    assert _same(got_u, want_u) and got_u["k"].equals(want_u["k"]), where


@pytest.mark.parametrize(
    "where",
    [
        "f = CAST(0.1 AS DOUBLE)",
        "f IN (CAST(0.1 AS DOUBLE), 0.2)",
        "f = (CAST(0.1 AS DOUBLE))",
        "d = CAST(0.1 AS FLOAT)",
        "d > CAST(0.1 AS FLOAT)",
        "s.f = CAST(0.1 AS DOUBLE)",
        "f = 0.1",
    ],
)
def test_a_float_cast_literal_keeps_its_type(where: str, tmp_path: Path) -> None:
    """``CAST(0.1 AS DOUBLE)`` next to a float32 column is compared in float64 (it matches no
    float32 0.1), where a bare 0.1 becomes a float32: the rule float16 columns follow too."""
    f = pa.array(np.array([0.1, 0.2, 0.1], np.float32))
    table = pa.table(
        {
            "id": np.arange(3),
            "f": f,
            "d": pa.array([0.1, float(np.float32(0.1)), 0.2]),
            "s": pa.StructArray.from_arrays([f], names=["f"]),
        }
    )
    path = str(tmp_path / "c.lance")
    lance.write_dataset(table, path)
    assert _same(lance_fw.dataset(path).to_table(filter=where), lance.dataset(path).to_table(filter=where))
