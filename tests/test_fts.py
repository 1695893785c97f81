"""Full-text search (``full_text_query=``) differential against pylance 14 on INVERTED indices.

pylance builds the index (lance_fw does not build INVERTED yet: refused by name); both libraries
answer the same queries, whose rows and BM25 ``_score`` must agree: the scores as multisets (ties
at the top-k boundary may pick different rows, pylance itself picks them in no fixed order), every
row lance_fw returns must carry pylance's score for that row. The corpus crosses fragments,
has deletions after the index, and an appended (unindexed) fragment searched flat, as pylance does.
"""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.table.index_files import IndexFiles, index_dir
from lance_fw_plugins.index_inverted import InvertedIndexReader
from lance_fw_plugins.index_inverted_tokenizer import Analyzer

WORDS = (
    "running runs ran runner connection connected connecting connections generously happiness happy "
    "studies studying caresses ponies cats cat the a and is was having have been into over under "
    "don't it's x_y foo-bar C++ 3.14 2024 HELLO Hello hello fishing fished fisher agreed agreement "
    "relational conditional rational valency hopeful goodness formalize electrical sensibility "
    "no nor not ought would could cannot"
).split()
LONG = ["a" * 39, "b" * 40, "c" * 41]
QUERIES = [
    "running",
    "run",
    "happiness studies",
    "Connection CONNECTED fishing",
    "w1 w2 w3",
    "w7 w7",
    "the a of",
    "hello, world!",
    "agreement w150 ponies",
    "don't",
    "x_y foo bar",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "w299 nothingmatches",
]


def _docs(rng: np.random.Generator, n: int) -> list[str | None]:
    vocab = WORDS + LONG + [f"w{i}" for i in range(300)]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p = rng.permutation(p / p.sum())
    seps = np.array([" ", "  ", ", ", ". ", "\n", "!", " - "])
    out: list[str | None] = []
    for _ in range(n):
        k = int(rng.integers(0, 25))
        words = rng.choice(vocab, size=k, p=p)
        out.append("".join(w + s for w, s in zip(words, rng.choice(seps, size=k))))
    for i in rng.choice(n, size=n // 50, replace=False):
        out[int(i)] = None
    return out


@pytest.fixture(scope="module", params=[True, False], ids=["positions", "no-positions"])
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(7)
    path = str(tmp_path_factory.mktemp("fts") / "ds")
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": pa.array(_docs(rng, n), pa.string())})
    ds = lance.write_dataset(table, path, max_rows_per_file=1300)
    ds.create_scalar_index("text", "INVERTED", with_position=request.param)
    ds.delete("id % 11 = 3")
    more = pa.table(
        {"id": pa.array(np.arange(n, n + 700), pa.int64()), "text": pa.array(_docs(rng, 700), pa.string())}
    )
    lance.write_dataset(more, path, mode="append")
    return path


def _scores(table: pa.Table) -> dict[int, float]:
    return dict(zip(table["id"].to_pylist(), table["_score"].to_pylist(), strict=True))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [10, 100])
def test_topk_equals_pylance(corpus: str, query: str, limit: int) -> None:
    theirs = lance.dataset(corpus).to_table(full_text_query=query, limit=limit)
    ours = lance_fw.dataset(corpus).to_table(full_text_query=query, limit=limit)
    assert ours.schema == theirs.schema
    assert ours.num_rows == theirs.num_rows
    np.testing.assert_allclose(
        sorted(ours["_score"].to_pylist()), sorted(theirs["_score"].to_pylist()), rtol=2e-7, atol=0
    )
    assert ours["_score"].to_pylist() == sorted(ours["_score"].to_pylist(), reverse=True)
    # every row we return scores as pylance scores it; rows above the boundary score are the same
    everything = _scores(lance.dataset(corpus).to_table(full_text_query=query, columns=["id"]))
    mine = _scores(ours)
    for row, score in mine.items():
        assert row in everything
        np.testing.assert_allclose(score, everything[row], rtol=2e-7)
    if mine:
        cut = min(mine.values())
        assert {r for r, s in mine.items() if s > cut * (1 + 1e-6)} == {
            r for r, s in _scores(theirs).items() if s > cut * (1 + 1e-6)
        }
    assert all(text is not None for text in ours["text"].to_pylist())


def test_every_match_and_row_columns(corpus: str) -> None:
    theirs = lance.dataset(corpus).to_table(
        full_text_query={"query": "w5 happy", "columns": ["text"]}, columns=["id"], with_row_id=True
    )
    ours = lance_fw.dataset(corpus).to_table(
        full_text_query={"query": "w5 happy", "columns": ["text"]}, columns=["id"], with_row_id=True
    )
    assert ours.schema == theirs.schema
    assert _scores(ours).keys() == _scores(theirs).keys()
    np.testing.assert_allclose(
        [_scores(ours)[k] for k in sorted(_scores(ours))],
        [_scores(theirs)[k] for k in sorted(_scores(ours))],
        rtol=2e-7,
    )
    assert ours.sort_by("id")["_rowid"].equals(theirs.sort_by("id")["_rowid"])
    paged = lance_fw.dataset(corpus).to_table(full_text_query="w5 happy", limit=5, offset=3)
    assert paged["_score"].to_pylist() == ours["_score"].to_pylist()[3:8]


def test_tokens_equal_pylance_index(corpus: str) -> None:
    """The analyzer turns the indexed text into exactly the tokens pylance's index holds."""
    ds = lance_fw.dataset(corpus)
    (desc,) = [d for d in ds.describe_indices() if d.name == "text_idx"]
    store = IndexFiles(ds._snapshot.storage, index_dir(ds._snapshot.uri, desc.segments[0].uuid))
    reader = InvertedIndexReader(store)
    analyzer = Analyzer(reader.params)
    fragments = desc.segments[0].fragment_ids
    texts = lance.dataset(corpus, version=1).to_table(columns=["text"])["text"].to_pylist()
    assert len(fragments) == 4
    ours = {t for text in texts if text is not None for t in analyzer.tokens(text)}
    indexed: set[str] = set()
    for part in reader._parts():
        indexed |= set(part.tokens)
    assert ours == indexed
    assert reader.num_docs() == sum(1 for t in texts if t is not None and analyzer.tokens(t))


def test_refusals(corpus: str) -> None:
    ds = lance_fw.dataset(corpus)
    with pytest.raises(UnsupportedFeatureError, match="base_tokenizer"):
        ds.create_scalar_index("text", "INVERTED", replace=True, base_tokenizer="ngram")
    with pytest.raises(UnsupportedFeatureError, match="string"):
        ds.create_scalar_index("id", "INVERTED")
    from lance.query import MatchQuery

    with pytest.raises(UnsupportedFeatureError, match="MatchQuery"):
        ds.to_table(full_text_query=MatchQuery("w1", "text"))
    with pytest.raises(UnsupportedFeatureError, match="non-ASCII"):
        ds.to_table(full_text_query="caf\u00e9")
    with pytest.raises(ValueError):
        ds.to_table(full_text_query={"query": "w1", "columns": ["id"]})


@pytest.fixture(scope="module")
def unindexed(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(11)
    path = str(tmp_path_factory.mktemp("fts_flat") / "ds")
    table = pa.table({"id": pa.array(np.arange(3000), pa.int64()), "text": pa.array(_docs(rng, 3000))})
    lance.write_dataset(table, path, max_rows_per_file=800)
    lance.dataset(path).delete("id % 5 = 0")
    return path


@pytest.mark.parametrize("query", ["running runs", "Hello hello", "the w3", "x y", "w12 w40 w41"])
def test_column_without_index_is_searched_flat(unindexed: str, query: str) -> None:
    """pylance splits the text only (no lower case, stemming or stop words) and returns the rows
    in scan order without a limit, best first with one."""
    full_text_query = {"query": query, "columns": ["text"]}
    theirs = lance.dataset(unindexed).to_table(full_text_query=full_text_query)
    ours = lance_fw.dataset(unindexed).to_table(full_text_query=full_text_query)
    assert ours.schema == theirs.schema
    assert ours["id"].to_pylist() == theirs["id"].to_pylist()
    np.testing.assert_allclose(ours["_score"].to_numpy(), theirs["_score"].to_numpy(), rtol=2e-7)
    top = lance_fw.dataset(unindexed).to_table(full_text_query=full_text_query, limit=5)
    assert top["_score"].to_pylist() == sorted(theirs["_score"].to_pylist(), reverse=True)[:5]
    with pytest.raises(ValueError, match="INVERTED"):
        lance_fw.dataset(unindexed).to_table(full_text_query=query)


BUILD_PARAMS = [
    {},
    {"stem": False, "remove_stop_words": False},
    {"lower_case": False, "stem": False, "max_token_length": 8},
    {"with_position": True},
]


@pytest.fixture(scope="module", params=BUILD_PARAMS, ids=["defaults", "no-stem", "case-kept", "positions"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The same dataset twice: INVERTED built by pylance and by lance_fw with the same parameters,
    then the same deletions and appended (unindexed) rows."""
    rng = np.random.default_rng(23)
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": pa.array(_docs(rng, n))})
    more = pa.table({"id": pa.array(np.arange(n, n + 500), pa.int64()), "text": pa.array(_docs(rng, 500))})
    paths = []
    for who in ("pylance", "lance_fw"):
        path = str(tmp_path_factory.mktemp("fts_build") / who)
        lance.write_dataset(table, path, max_rows_per_file=1300)
        ds = lance.dataset(path) if who == "pylance" else lance_fw.dataset(path)
        ds.create_scalar_index("text", "INVERTED", **request.param)
        lance.dataset(path).delete("id % 13 = 5")
        lance.write_dataset(more, path, mode="append")
        paths.append(path)
    return paths[0], paths[1]


def _same_answers(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema == expected.schema
    np.testing.assert_allclose(
        sorted(actual["_score"].to_pylist()), sorted(expected["_score"].to_pylist()), rtol=2e-7
    )
    theirs, ours = _scores(expected), _scores(actual)
    cut = min(theirs.values(), default=0.0) * (1 + 1e-6)
    assert {r for r, s in ours.items() if s > cut} == {r for r, s in theirs.items() if s > cut}


@pytest.mark.parametrize("query", QUERIES)
def test_index_built_by_lance_fw_answers_as_pylance_built(built: tuple[str, str], query: str) -> None:
    """pylance searching lance_fw's index, and lance_fw searching it, answer as pylance on its own."""
    theirs_path, ours_path = built
    expected = lance.dataset(theirs_path).to_table(full_text_query=query, limit=25)
    _same_answers(expected, lance.dataset(ours_path).to_table(full_text_query=query, limit=25))
    _same_answers(expected, lance_fw.dataset(ours_path).to_table(full_text_query=query, limit=25))
    _same_answers(expected, lance_fw.dataset(theirs_path).to_table(full_text_query=query, limit=25))


def test_index_built_by_lance_fw_is_listed_by_pylance(built: tuple[str, str]) -> None:
    theirs_path, ours_path = built
    (theirs,) = lance.dataset(theirs_path).describe_indices()
    (ours,) = lance.dataset(ours_path).describe_indices()
    assert (ours.name, ours.index_type, ours.num_rows_indexed) == (
        theirs.name,
        theirs.index_type,
        theirs.num_rows_indexed,
    )
    assert ours.details == theirs.details
    everything = lance.dataset(ours_path).to_table(full_text_query="w1 w2", columns=["id"])
    assert everything.num_rows == lance.dataset(theirs_path).to_table(full_text_query="w1 w2").num_rows


def test_describe_and_stats_equal_pylance(built: tuple[str, str], corpus: str) -> None:
    for path in (*built, corpus):
        (theirs,) = lance.dataset(path).describe_indices()
        (ours,) = lance_fw.dataset(path).describe_indices()
        assert (ours.index_type, ours.details) == (theirs.index_type, theirs.details)
        assert lance_fw.dataset(path).stats.index_stats("text_idx") == lance.dataset(path).stats.index_stats(
            "text_idx"
        )


@pytest.mark.parametrize("query", ["w3", "happiness studies w40"])
def test_filter_pre_and_post(corpus: str, query: str) -> None:
    """prefilter=True searches the passing rows only (the flat part's statistics count only them);
    by default the best rows are found first and the failing ones dropped."""
    where = "id % 3 = 1"
    for prefilter in (False, True):
        theirs = lance.dataset(corpus).to_table(full_text_query=query, filter=where, prefilter=prefilter)
        ours = lance_fw.dataset(corpus).to_table(full_text_query=query, filter=where, prefilter=prefilter)
        assert ours.schema == theirs.schema
        assert _scores(ours).keys() == _scores(theirs).keys()
        np.testing.assert_allclose(
            sorted(ours["_score"].to_pylist()), sorted(theirs["_score"].to_pylist()), rtol=2e-7
        )
    top = lance_fw.dataset(corpus).to_table(full_text_query=query, limit=12, columns=["id"])
    post = lance_fw.dataset(corpus).to_table(full_text_query=query, limit=12, columns=["id"], filter=where)
    assert post["id"].to_pylist() == [i for i in top["id"].to_pylist() if i % 3 == 1]
    theirs = lance.dataset(corpus).to_table(full_text_query=query, limit=12, filter=where, prefilter=True)
    _same_answers(
        theirs,
        lance_fw.dataset(corpus).to_table(full_text_query=query, limit=12, filter=where, prefilter=True),
    )


@pytest.fixture(scope="module")
def two_columns(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(5)
    path = str(tmp_path_factory.mktemp("fts_two") / "ds")

    def rows(lo: int, n: int) -> pa.Table:
        return pa.table(
            {"id": pa.array(np.arange(lo, lo + n), pa.int64()), "a": _docs(rng, n), "b": _docs(rng, n)}
        )

    ds = lance.write_dataset(rows(0, 3000), path, max_rows_per_file=1100)
    ds.create_scalar_index("a", "INVERTED")
    lance_fw.dataset(path).create_scalar_index("b", "INVERTED", stem=False)
    lance.dataset(path).delete("id % 17 = 2")
    lance.write_dataset(rows(3000, 400), path, mode="append")
    return path


def _query_pairs() -> list[tuple[str, object, object]]:
    import lance.query as lq

    from lance_fw.query import fts_search as fq

    pairs: list[tuple[str, object, object]] = [
        ("string over both columns", "running w3", "running w3"),
        (
            "dict over both columns",
            {"query": "w4 w9", "columns": ["a", "b"]},
            {"query": "w4 w9", "columns": ["a", "b"]},
        ),
    ]
    for mod, key in ((lq, 0), (fq, 1)):
        queries = [
            mod.MatchQuery("w1 w2", "a", operator=mod.FullTextOperator.AND),
            mod.MatchQuery("w1 happiness", "b", boost=2.5),
            mod.BoostQuery(mod.MatchQuery("w1", "a"), mod.MatchQuery("w2 w3", "a"), negative_boost=0.3),
            mod.MultiMatchQuery("w1 studies", ["a", "b"], boosts=[2.0, 0.5]),
            mod.BooleanQuery(
                [
                    (mod.Occur.MUST, mod.MatchQuery("w1", "a")),
                    (mod.Occur.SHOULD, mod.MatchQuery("w2", "b")),
                    (mod.Occur.MUST_NOT, mod.MatchQuery("w3", "a")),
                ]
            ),
            mod.BooleanQuery(
                [(mod.Occur.SHOULD, mod.MatchQuery("w5", "a")), (mod.Occur.SHOULD, mod.MatchQuery("w6", "b"))]
            ),
        ]
        for i, q in enumerate(queries):
            if key == 0:
                pairs.append((f"object {i}", q, None))
            else:
                name, theirs, _ = pairs[2 + i]
                pairs[2 + i] = (name, theirs, q)
    return pairs


@pytest.mark.parametrize("index", range(8))
@pytest.mark.parametrize("limit", [None, 10])
def test_query_objects_equal_pylance(two_columns: str, index: int, limit: int | None) -> None:
    name, theirs_query, ours_query = _query_pairs()[index]
    theirs = lance.dataset(two_columns).to_table(full_text_query=theirs_query, columns=["id"], limit=limit)
    ours = lance_fw.dataset(two_columns).to_table(full_text_query=ours_query, columns=["id"], limit=limit)
    assert ours.schema == theirs.schema, name
    if limit is None:
        assert _scores(ours).keys() == _scores(theirs).keys(), name
        for row, score in _scores(ours).items():
            np.testing.assert_allclose(score, _scores(theirs)[row], rtol=3e-7, atol=1e-7, err_msg=name)
    else:
        _same_answers(theirs, ours)


def test_index_optimized_by_pylance(corpus: str, tmp_path: Path) -> None:
    """pylance's optimize_indices merges the appended rows as a second partition of one segment."""
    import shutil

    path = str(tmp_path / "optimized")
    shutil.copytree(corpus, path)
    lance.dataset(path).optimize.optimize_indices()
    for query in QUERIES[:6]:
        theirs = lance.dataset(path).to_table(full_text_query=query, limit=30, columns=["id"])
        _same_answers(
            theirs, lance_fw.dataset(path).to_table(full_text_query=query, limit=30, columns=["id"])
        )


def test_params_from_details_round_trip(built: tuple[str, str]) -> None:
    from lance_fw.table.indices import index_types

    kind = index_types()["INVERTED"]
    ds = lance_fw.dataset(built[1])
    (meta,) = ds._snapshot.index_section.indices
    params = kind.params_from_details(meta.index_details.value)  # type: ignore[attr-defined]
    assert kind.details(params) == meta.index_details.value


PHRASES = ["w1 w2", "w0 w1 w0", "running w3", "happiness studies", "w0 the w1", "connection w0 w1"]


@pytest.mark.parametrize("phrase", PHRASES)
def test_phrase_equals_pylance(corpus: str, phrase: str) -> None:
    """Phrase queries (slop 0, and a string in double quotes) on an index with positions."""
    import lance.query as lq

    from lance_fw.query import fts_search as fq

    ds = lance.dataset(corpus)
    if not ds.describe_indices()[0].details["with_position"]:
        with pytest.raises(ValueError, match="position"):
            lance_fw.dataset(corpus).to_table(full_text_query=fq.PhraseQuery(phrase, "text"))
        return
    for theirs_query, ours_query in (
        (lq.PhraseQuery(phrase, "text"), fq.PhraseQuery(phrase, "text")),
        (f'"{phrase}"', f'"{phrase}"'),
    ):
        theirs = ds.to_table(full_text_query=theirs_query, columns=["id"])
        ours = lance_fw.dataset(corpus).to_table(full_text_query=ours_query, columns=["id"])
        assert _scores(ours).keys() == _scores(theirs).keys()
        for row, score in _scores(ours).items():
            np.testing.assert_allclose(score, _scores(theirs)[row], rtol=3e-7)
    with pytest.raises(UnsupportedFeatureError, match="slop"):
        lance_fw.dataset(corpus).to_table(full_text_query=fq.PhraseQuery(phrase, "text", slop=1))


@pytest.mark.parametrize("phrase", PHRASES[:4])
def test_phrase_on_index_built_by_lance_fw(built: tuple[str, str], phrase: str) -> None:
    """pylance's phrase queries (any slop) on lance_fw's positions answer as on pylance's own."""
    import lance.query as lq

    theirs_path, ours_path = built
    if not lance.dataset(theirs_path).describe_indices()[0].details["with_position"]:
        return
    for slop in (0, 2):
        query = lq.PhraseQuery(phrase, "text", slop=slop)
        theirs = lance.dataset(theirs_path).to_table(full_text_query=query, columns=["id"])
        ours = lance.dataset(ours_path).to_table(full_text_query=query, columns=["id"])
        assert _scores(ours).keys() == _scores(theirs).keys()
        np.testing.assert_allclose(
            sorted(ours["_score"].to_pylist()), sorted(theirs["_score"].to_pylist()), rtol=3e-7
        )


def test_stable_row_ids_searched_as_pylance(tmp_path: Path) -> None:
    """On a dataset with stable row ids pylance's index holds row ids (before, lance_fw refused
    to open it): the search maps them to the rows, with pylance's scores and ``_rowid``s
    (tests/test_index_stable_row_ids.py crosses fragments, updates and compaction)."""
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(
        pa.table({"id": [1, 2, 3], "text": ["apple pie", "dog", "running dogs"]}),
        path,
        enable_stable_row_ids=True,
    )
    ds.create_scalar_index("text", "INVERTED")
    lance.write_dataset(pa.table({"id": [4], "text": ["dogs again"]}), path, mode="append")
    for query in ("dogs", {"query": "dogs", "columns": ["text"]}):
        got = lance_fw.dataset(path).to_table(full_text_query=query, with_row_id=True)
        assert got.sort_by("id").equals(lance.dataset(path).to_table(full_text_query=query, with_row_id=True).sort_by("id"))


def test_optimize_by_lance_fw_keeps_the_tokenizer(built: tuple[str, str], tmp_path: Path) -> None:
    """optimize_indices rebuilds from the index's own details (params_from_details), never from the
    defaults: after it, pylance describes the same tokenizer as before and still finds every row."""
    import shutil

    _, ours_path = built
    path = str(tmp_path / "copy")
    shutil.copytree(ours_path, path)
    before = lance.dataset(path).describe_indices()[0].details
    lance_fw.dataset(path).optimize.optimize_indices()
    after = lance.dataset(path).describe_indices()[0]
    assert after.details == before
    covered = {int(i) for s in after.segments for i in s.fragment_ids}
    assert covered == {f.fragment_id for f in lance.dataset(path).get_fragments()}
    found = 0
    for query in QUERIES:
        got = lance_fw.dataset(path).to_table(full_text_query=query, columns=["id"], limit=10_000)
        want = lance.dataset(path).to_table(full_text_query=query, columns=["id"], limit=10_000)
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist()), query
        found += want.num_rows
    assert found


def test_score_named_in_columns_like_pylance(corpus: str) -> None:
    """``columns=[..., "_score"]`` names the search's score column, as pylance accepts it."""
    for columns in (["id", "_score"], ["_score"]):
        got = lance_fw.dataset(corpus).to_table(full_text_query="running", columns=columns, limit=20)
        want = lance.dataset(corpus).to_table(full_text_query="running", columns=columns, limit=20)
        assert got.schema.names == want.schema.names == columns
        assert sorted(got.column("_score").to_pylist()) == pytest.approx(sorted(want.column("_score").to_pylist()))
    with pytest.raises(UnsupportedFeatureError, match="_score"):
        lance_fw.dataset(corpus).to_table(full_text_query="running", columns=["_score", "id"])


def test_legacy_index_without_tail_codec_key() -> None:
    """An INVERTED index written before ``posting_tail_codec`` / ``format_version`` existed (the DuckDB
    conformance fixture's) keeps its last posting block as plain u32 ids: read as pylance reads it."""
    from tests.sqllogictest import CONFORMANCE_ROOT

    path = CONFORMANCE_ROOT / "test" / "data" / "search_test_data.lance"
    if not path.is_dir():
        pytest.skip("the DuckDB conformance fixtures are not beside the project")
    for query in ("puppy", "cat kitten", "news"):
        full = {"query": query, "columns": ["text"]}
        got = lance_fw.dataset(str(path)).to_table(full_text_query=full, columns=["id", "_score"])
        want = lance.dataset(str(path)).to_table(full_text_query=full, columns=["id", "_score"])
        assert got.num_rows and got.equals(want), query
