"""``lance_fts`` / ``lance_hybrid_search`` and ``CREATE INDEX ... USING INVERTED`` through
``lance_fw.duckdb`` against pylance's ``to_table(full_text_query=...)`` on the same dataset.

Differential: one pylance-written dataset (three fragments, 4096-row page edges crossed, deleted rows) is
searched through SQL and through pylance with the same query, column and ``k``; scores must agree and the
rows too, except among rows tied at the ``k``-th score (either engine may keep any of them). The hybrid
search's expected rows are the extension's fusion recomputed here from pylance's own vector and text
searches (min-max normalisation, ``alpha``, float32).
"""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw.duckdb
from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError

ROWS = 9_000  # fragments of 4000 / 4000 / 1000 rows
ROWS_PER_FILE = 4000
DIM = 4
DELETED = "id % 89 = 3"
WORDS = ("puppy", "kitten", "park", "food", "news", "sports", "couch", "plays", "eats", "sleeps", "rare")
pytestmark = pytest.mark.filterwarnings("ignore:Arrow output on a DB-API result")


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(11)
    # "rare" is drawn seldom so some queries match few rows
    weights = np.array([1.0] * (len(WORDS) - 1) + [0.02])
    weights /= weights.sum()
    text = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)), p=weights)) for _ in range(rows)]
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "label": rng.integers(0, 10, rows).astype(np.int32),
            "text": pa.array(text),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        }
    )


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("fts") / "docs.lance")
    ds = lance.write_dataset(_table(ROWS), path, max_rows_per_file=ROWS_PER_FILE)
    ds.delete(DELETED)
    ds.create_scalar_index("text", "INVERTED")
    return path


def _same(sql: pa.Table, oracle: pa.Table, k: int) -> None:
    """Equal scores (as a multiset) and equal rows above the k-th score."""
    got = sorted(zip(sql.column("_score").to_pylist(), sql.column("id").to_pylist(), strict=True))
    want = sorted(zip(oracle.column("_score").to_pylist(), oracle.column("id").to_pylist(), strict=True))
    assert [s for s, _ in got] == pytest.approx([s for s, _ in want], rel=1e-6)
    if len(want) == k and want:
        cut = want[0][0]
        assert {i for s, i in got if s > cut * (1 + 1e-6)} == {i for s, i in want if s > cut * (1 + 1e-6)}
    else:
        assert {i for _, i in got} == {i for _, i in want}


@pytest.mark.parametrize(("words", "k"), [("puppy", 10), ("rare food", 40), ("rare", 500)])
def test_fts_matches_pylance(uri: str, words: str, k: int) -> None:
    con = lance_fw.duckdb.connect()
    sql = con.sql(f"SELECT * FROM lance_fts('{uri}', 'text', '{words}', k := {k})").to_arrow_table()
    oracle = lance.dataset(uri).to_table(full_text_query={"query": words, "columns": ["text"]}, limit=k)
    assert sql.column_names == oracle.column_names  # the dataset's columns, then _score
    _same(sql, oracle, k)


def test_fts_prefilter_matches_pylance(uri: str) -> None:
    con = lance_fw.duckdb.connect()
    sql = con.sql(
        f"SELECT * FROM lance_fts('{uri}', 'text', 'rare', k := 20, prefilter := true) WHERE label >= 7"
    ).to_arrow_table()
    oracle = lance.dataset(uri).to_table(
        full_text_query={"query": "rare", "columns": ["text"]}, limit=20, filter="label >= 7", prefilter=True
    )
    _same(sql, oracle, 20)


def test_fts_postfilter_is_where_after_search(uri: str) -> None:
    """Without prefilter the WHERE filters the k best rows (pylance's post-filter); ties at the k-th
    score may be broken differently by pylance, so the unfiltered search (checked above) is the reference."""
    con = lance_fw.duckdb.connect()
    search = f"SELECT * FROM lance_fts('{uri}', 'text', 'rare', k := 30)"
    filtered = con.sql(f"{search} WHERE label >= 7").to_arrow_table()
    top = con.sql(search).to_arrow_table()
    expected = {i for i, lab in zip(top["id"].to_pylist(), top["label"].to_pylist(), strict=True) if lab >= 7}
    assert set(filtered["id"].to_pylist()) == expected


def test_create_index_using_fts_then_search(tmp_path: Path) -> None:
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_table(5000), path, max_rows_per_file=2000)
    con = lance_fw.duckdb.connect()
    con.execute(f"CREATE INDEX text_idx ON '{path}' (text) USING FTS WITH (with_position = true)")
    indices = lance.dataset(path).list_indices()
    assert [(i["name"], i["type"], i["fields"]) for i in indices] == [("text_idx", "Inverted", ["text"])]
    sql = con.sql(f"SELECT * FROM lance_fts('{path}', 'text', 'kitten park', k := 25)").to_arrow_table()
    oracle = lance.dataset(path).to_table(
        full_text_query={"query": "kitten park", "columns": ["text"]}, limit=25
    )
    _same(sql, oracle, 25)


def _normalise(values: np.ndarray) -> np.ndarray:
    low, high = np.float32(values.min()), np.float32(values.max())
    if abs(np.float32(high - low)) < np.finfo(np.float32).eps:
        return np.full(len(values), np.float32(0.5), np.float32)
    return np.clip(((values - low) / np.float32(high - low)).astype(np.float32), 0, 1)


@pytest.mark.parametrize(("alpha", "k"), [(0.5, 7), (0.8, 15)])
def test_hybrid_is_the_extensions_fusion(uri: str, alpha: float, k: int) -> None:
    query = [0.3, -0.2, 0.1, 0.5]
    depth = k * 4
    ds = lance.dataset(uri)
    vector = ds.to_table(
        nearest={"column": "vec", "q": query, "k": depth, "use_index": False},
        with_row_id=True,
        columns=["id"],
    )
    text = ds.to_table(
        full_text_query={"query": "rare", "columns": ["text"]}, limit=depth, with_row_id=True, columns=["id"]
    )
    fused: dict[int, np.float32] = {}
    a = np.float32(alpha)
    sims = np.float32(1) - _normalise(vector["_distance"].to_numpy())
    for row, sim in zip(vector["id"].to_pylist(), sims, strict=True):
        fused[row] = np.float32(a * sim)
    for row, norm in zip(text["id"].to_pylist(), _normalise(text["_score"].to_numpy()), strict=True):
        fused[row] = np.float32(fused.get(row, np.float32(0)) + (np.float32(1) - a) * norm)
    want = sorted(fused.items(), key=lambda item: -item[1])[:k]
    con = lance_fw.duckdb.connect()
    sql = con.sql(
        f"SELECT id, _hybrid_score FROM lance_hybrid_search('{uri}', 'vec', {query}::FLOAT[], 'text', 'rare', "
        f"k := {k}, alpha := {alpha}) ORDER BY _hybrid_score DESC"
    ).fetchall()
    assert [r for r, _ in sql] == [r for r, _ in want]
    assert [s for _, s in sql] == pytest.approx([float(s) for _, s in want], rel=1e-6)


def test_hybrid_columns(uri: str) -> None:
    con = lance_fw.duckdb.connect()
    rel = con.sql(
        f"SELECT * FROM lance_hybrid_search('{uri}', 'vec', [0.3, -0.2, 0.1, 0.5]::FLOAT[], 'text', 'rare', k := 7)"
    )
    assert rel.columns == ["id", "label", "text", "vec", "_distance", "_score", "_hybrid_score"]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("SELECT * FROM lance_fts('{uri}', 'text', 'puppy', k := 0)", InvalidArgumentError),
        ("SELECT * FROM lance_fts('{uri}', 'text', 'puppy', bogus := 1)", InvalidArgumentError),
        ("SELECT * FROM lance_fts('{uri}', 'text', 'puppy', filter := 'id > 1')", UnsupportedFeatureError),
        (
            "SELECT * FROM lance_fts('{uri}', 'text', 'puppy', prefilter := true) WHERE _score > 1",
            UnsupportedFeatureError,
        ),
        (
            "SELECT * FROM lance_hybrid_search('{uri}', 'vec', [0.0, 0, 0, 0]::FLOAT[], 'text', 'rare') WHERE id > 5",
            UnsupportedFeatureError,
        ),
        (
            "SELECT * FROM lance_hybrid_search('{uri}', 'vec', []::FLOAT[], 'text', 'rare')",
            InvalidArgumentError,
        ),
    ],
)
def test_refusals(uri: str, sql: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        lance_fw.duckdb.connect().execute(sql.format(uri=uri))


def test_hybrid_refuses_ties_at_k(uri: str) -> None:
    """With k = 3 the top text-only rows share one score (normalised to 1), so which of them the
    extension returns depends on its hash order: refused rather than guessed."""
    con = lance_fw.duckdb.connect()
    with pytest.raises(UnsupportedFeatureError, match="straddle"):
        con.execute(
            f"SELECT * FROM lance_hybrid_search('{uri}', 'vec', [0.3, -0.2, 0.1, 0.5]::FLOAT[], 'text', 'rare', k := 3)"
        )
