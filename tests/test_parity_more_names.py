"""pylance's remaining public names (issue 16) against lance_fw: the same code on both libraries.

Covered: ``ScannerBuilder`` (every option it hands to ``scanner()``, over several fragments with
deletions), ``serialize_row_addrs`` (byte for byte), ``lance.tokenize`` (the full-text analyzer),
``IvfModel`` / ``PqModel`` (files saved by one library load in the other), ``DeletionFile``
(``lance_fw.api.fragment_metadata``'s; its edge cases that differ are strict xfails),
the records (``ColumnOrdering``, ``DatasetBasePath``, enums), and every name refused by name
(``UnsupportedFeatureError`` naming the feature, never an ``AttributeError``).

The top-level names are imported from ``lance_fw.api.toplevel_names`` (``lance_fw`` re-exports
them as ``lance.X``) and the fragment names from ``lance_fw.api.fragment_records`` /
``fragment_metadata`` (``lance_fw.fragment`` re-exports them).
"""

from __future__ import annotations

import importlib
import pickle
import random
import string
from pathlib import Path
from typing import Any

import lance
import lance.fragment
import lance.indices
import lance.query
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.indices
import lance_fw.query
from lance_fw.api import fragment_metadata, fragment_records, toplevel_names
from lance_fw.errors import UnsupportedFeatureError

#: ``lance.dataset`` / ``lance_fw.dataset`` the modules (the package attribute is the function)
PY_DATASET = importlib.import_module("lance.dataset")
FW_DATASET = importlib.import_module("lance_fw.dataset")
ROWS = 10_000
ROWS_PER_FILE = 3_000
DIM = 4


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    vectors = rng.random((ROWS, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(np.arange(ROWS), pa.int64()),
            "s": [f"word{i % 97} text{i % 13}" for i in range(ROWS)],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        }
    )


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same data, fragments and deletions written by each library."""
    out: dict[str, Any] = {}
    for lib in (lance, lance_fw):
        path = tmp_path_factory.mktemp(lib.__name__) / "d"
        ds = lib.write_dataset(_table(), str(path), max_rows_per_file=ROWS_PER_FILE)
        ds.delete("id % 7 = 3 OR (id >= 4000 AND id < 4100)")
        out[lib.__name__] = ds
    return out


def _module(lib: Any, name: str) -> Any:
    return {"lance": {"dataset": PY_DATASET, "indices": lance.indices, "query": lance.query,
                      "fragment": lance.fragment},
            "lance_fw": {"dataset": FW_DATASET, "indices": lance_fw.indices, "query": lance_fw.query,
                         "fragment": fragment_metadata}}[lib.__name__][name]  # fmt: skip


BUILDS = {
    "filter limit offset": lambda b: b.filter("id > 2500").limit(1234).offset(77),
    "columns row id": lambda b: b.columns(["s", "id"]).with_row_id().filter("id < 5000"),
    "projection": lambda b: b.columns({"twice": "id * 2", "s": "s"}).limit(5000),
    "row address batches": lambda b: b.columns(["id"]).with_row_address().batch_size(1000),
    "defaults": lambda b: b.apply_defaults({"limit": 4500, "offset": 10, "with_row_id": True}),
    "fragments": lambda b: b.with_fragments([b.ds.get_fragments()[1], b.ds.get_fragments()[3]]),
    "expression filter": lambda b: b.filter(pa.compute.field("id") < 4200).columns(["id"]),
    "dict filter": lambda b: b.filter({"expr_filter": "id % 2 = 0"}).columns(["id"]).limit(3000),
    "nearest": lambda b: b.nearest("vec", np.full(DIM, 0.5, np.float32), k=17).columns(["id"]),
    "tuning options": lambda b: b.batch_readahead(2).fragment_readahead(1).scan_in_order().use_stats()
    .use_scalar_index(False).io_buffer_size(1 << 20).prefilter(True).filter("id > 9000"),
}  # fmt: skip


@pytest.mark.parametrize("build", list(BUILDS))
def test_scanner_builder_scans_as_pylance(datasets: dict[str, Any], build: str) -> None:
    results = []
    for lib in (lance, lance_fw):
        builder = _module(lib, "dataset").ScannerBuilder(datasets[lib.__name__])
        scanner = BUILDS[build](builder).to_scanner()
        batches = list(scanner.to_batches())
        results.append(
            (pa.Table.from_batches(batches, scanner.projected_schema), [b.num_rows for b in batches])
        )
    (theirs, their_sizes), (ours, our_sizes) = results
    assert ours.schema == theirs.schema
    assert ours.to_pylist() == theirs.to_pylist()
    assert our_sizes == their_sizes


ERRORS = {
    "negative limit": lambda b: b.limit(-1),
    "negative offset": lambda b: b.offset(-1),
    "zero readahead": lambda b: b.batch_readahead(0),
    "negative fragment readahead": lambda b: b.fragment_readahead(-1),
    "columns type": lambda b: b.columns("id"),
    "blob handling": lambda b: b.blob_handling("nope"),
    "fragment ids": lambda b: b.with_fragments([0]),
    "ordering type": lambda b: b.order_by(["id"]),
    "unknown default": lambda b: b.apply_defaults({"nope": 1}),
    "minhash type": lambda b: b.minhash_search("text"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_scanner_builder_rejects_as_pylance(datasets: dict[str, Any], case: str) -> None:
    errors = []
    for lib in (lance, lance_fw):
        builder = _module(lib, "dataset").ScannerBuilder(datasets[lib.__name__])
        with pytest.raises(Exception) as info:
            ERRORS[case](builder)
        errors.append(type(info.value))
    assert issubclass(errors[1], errors[0]) or issubclass(errors[0], errors[1]), errors


def test_scanner_builder_refuses_what_lance_fw_lacks(datasets: dict[str, Any]) -> None:
    ds = datasets["lance_fw"]
    builder = FW_DATASET.ScannerBuilder
    ordering = FW_DATASET.ColumnOrdering("id", ascending=False)
    refused = [
        lambda: builder(ds).minhash_search(lance_fw.query.MinHashQuery("word1", "s")).to_scanner(),
        lambda: builder(ds).substrait_aggregate(b"\x00").to_scanner(),
        lambda: builder(ds).filter(lance_fw.query.MatchQuery("word1", "s")),
        lambda: builder(ds).filter(FW_DATASET.VectorSearchQuery("vec", [0.0] * DIM)),
        lambda: builder(ds).scan_stats_callback(print).to_scanner(),
    ]
    for call in refused:
        with pytest.raises(UnsupportedFeatureError):
            call()
    # order_by is supported now (query/ordering.py): the builder passes it to the scan
    assert builder(ds).order_by([ordering]).to_scanner().to_table().equals(ds.to_table(order_by=[ordering]))


def test_serialize_row_addrs_is_byte_identical() -> None:
    rng = random.Random(16)
    cases: list[list[int]] = [
        [],
        [0],
        [5, 5, 1],
        list(range(5000)),
        list(range(70_000))[::-1],
        [(1 << 64) - 1],
    ]
    cases += [[rng.randrange(1 << 40) for _ in range(rng.randrange(1, 3000))] for _ in range(10)]
    cases += [[(f << 32) + rng.randrange(9000) for f in range(5) for _ in range(2000)]]
    cases += [list(range(0, 200_000, 3)) + [(3 << 32) + i for i in range(4096, 9000)]]
    for addrs in cases:
        assert FW_DATASET.serialize_row_addrs(addrs) == PY_DATASET.serialize_row_addrs(addrs)
    with pytest.raises(ValueError):
        FW_DATASET.serialize_row_addrs([-1])


def _texts() -> list[str]:
    rng = random.Random(3)
    words = ["the", "a", "running", "runs", "Cats", "DOGS", "is", "don't", "x_y", "123abc", "café", "b" * 41]
    words += [
        "".join(rng.choice(string.ascii_letters) for _ in range(rng.randrange(1, 12))) for _ in range(40)
    ]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 15))) for _ in range(200)]
    return [t for t in texts if t.isascii()] + ["", "  ,, ", "Hello, World! x-y.z", "the the cat the dog"]


TOKENIZE_OPTIONS: list[dict[str, Any]] = [
    {},
    {"stem": False},
    {"remove_stop_words": False},
    {"lower_case": False, "stem": False},
    {"base_tokenizer": "whitespace"},
    {"base_tokenizer": "raw", "stem": False},
    {"max_token_length": None},
    {"max_token_length": 5},
    {"language": "English", "ascii_folding": False},
]


@pytest.mark.parametrize("options", TOKENIZE_OPTIONS, ids=[str(o) for o in TOKENIZE_OPTIONS])
def test_tokenize_matches_pylance(options: dict[str, Any]) -> None:
    for text in _texts():
        theirs = [(t.text, t.position) for t in lance.tokenize(text, **options)]
        ours = [(t.text, t.position) for t in toplevel_names.tokenize(text, **options)]
        assert ours == theirs, text


@pytest.mark.parametrize(
    "text, options",
    [
        ("café", {}),
        ("hello", {"analyzer": "code"}),
        ("hello", {"base_tokenizer": "ngram", "min_ngram_length": 2}),
        ("hello", {"split_identifiers": True}),
        ("hello", {"language": "French"}),
        ("hello", {"custom_stop_words": ["hello"]}),
        ("The cats", {"lower_case": False}),
    ],
)
def test_tokenize_refuses_what_it_does_not_reproduce(text: str, options: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedFeatureError):
        toplevel_names.tokenize(text, **options)


def _codebook(rows: int) -> pa.FixedSizeListArray:
    values = np.random.default_rng(rows).random(rows * 8, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(values), 8)


@pytest.mark.parametrize("writer, reader", [(lance, lance_fw), (lance_fw, lance), (lance_fw, lance_fw)])
def test_models_load_across_libraries(tmp_path: Path, writer: Any, reader: Any) -> None:
    centroids, codebook = _codebook(5000), _codebook(256)
    _module(writer, "indices").IvfModel(centroids, "cosine").save(str(tmp_path / "ivf.lance"))
    _module(writer, "indices").PqModel(2, codebook, num_bits=4).save(str(tmp_path / "pq.lance"))
    ivf = _module(reader, "indices").IvfModel.load(str(tmp_path / "ivf.lance"))
    pq = _module(reader, "indices").PqModel.load(str(tmp_path / "pq.lance"))
    assert (ivf.distance_type, ivf.num_partitions) == ("cosine", 5000)
    assert ivf.centroids.equals(centroids)
    assert (pq.num_subvectors, pq.num_bits, pq.dimension) == (2, 4, 8)
    assert pq.codebook.equals(codebook)


def _deletion_files(module: Any) -> list[Any]:
    rng = random.Random(5)
    made = []
    for _ in range(50):
        base = rng.choice([None, rng.randrange(10)])
        kind = rng.choice(["array", "bitmap"])
        made.append(
            module.DeletionFile(
                rng.randrange(1 << 20), rng.randrange(1 << 30), kind, rng.randrange(9999), base
            )
        )
    return made


def test_deletion_file_matches_pylance() -> None:
    """``lance_fw.api.fragment_metadata.DeletionFile`` (what ``FragmentMetadata.deletion_file`` is)."""
    for theirs, ours in zip(_deletion_files(lance.fragment), _deletion_files(fragment_metadata), strict=True):
        assert ours.asdict() == theirs.asdict()
        assert ours.json() == theirs.json()
        assert repr(ours) == repr(theirs)
        assert ours.path(17) == theirs.path(17)
        assert fragment_metadata.DeletionFile.from_json(theirs.json()) == ours
        assert lance.fragment.DeletionFile.from_json(ours.json()) == theirs  # type: ignore[misc,call-arg]
        assert pickle.loads(pickle.dumps(ours)) == ours
    for module in (lance.fragment, fragment_metadata):
        with pytest.raises(ValueError):
            module.DeletionFile.from_json("x")


DELETION_FILE_DIFFERENCES = {
    "missing field": lambda m: m.DeletionFile.from_json("{}"),
    "unknown file type": lambda m: m.DeletionFile(1, 2, "nope", 3, None),
    "negative version": lambda m: m.DeletionFile(-1, 2, "array", 3, None),
    "base uri": lambda m: m.DeletionFile(1, 2, "array", 3, None).path(5, base_uri="/data/x/"),
}


@pytest.mark.parametrize("case", list(DELETION_FILE_DIFFERENCES))
def test_deletion_file_edge_cases_match_pylance(case: str) -> None:
    """Same value, or an error that is also an instance of the class pylance raises."""
    results: list[Any] = []
    for module in (lance.fragment, fragment_metadata):
        try:
            results.append(DELETION_FILE_DIFFERENCES[case](module))
        except Exception as error:
            results.append(error)
    theirs, ours = results
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), (type(theirs), type(ours))
    else:
        assert ours == theirs


def test_records_match_pylance() -> None:
    for lib in (lance, lance_fw):
        assert lib is lance or FW_DATASET.ColumnOrdering("a") == FW_DATASET.ColumnOrdering("a")
    pairs = [
        (PY_DATASET.ColumnOrdering("a", False, True), FW_DATASET.ColumnOrdering("a", False, True)),
        (lance.DatasetBasePath("p", "n", True, 4), toplevel_names.DatasetBasePath("p", "n", True, 4)),
        (lance.DatasetBasePath("p"), toplevel_names.DatasetBasePath("p")),
    ]
    for theirs, ours in pairs:
        names = [n for n in dir(theirs) if not n.startswith("_")]
        assert [getattr(ours, n) for n in names] == [getattr(theirs, n) for n in names]
        assert repr(ours) == repr(theirs) or not isinstance(ours, toplevel_names.DatasetBasePath)
    for theirs_enum, ours_enum in (
        (lance.query.DocumentGranularity, lance_fw.query.DocumentGranularity),
        (lance.indices.IndexFileVersion, lance_fw.indices.IndexFileVersion),
    ):
        assert [(m.name, m.value, str(m)[str(m).index(".") :]) for m in ours_enum] == [
            (m.name, m.value, str(m)[str(m).index(".") :]) for m in theirs_enum
        ]


REFUSED = {
    toplevel_names: (
        "bytes_read_counter", "iops_counter", "ScanStatistics", "simd_info", "FFILanceTableProvider",
        "CleanupCandidateFile", "CleanupExplanation", "CleanupReferencedBranch", "ExecutionPlan",
        "LsmPointLookupPlanner", "LsmScanner", "LsmVectorSearchPlanner", "ShardSnapshot", "ShardWriter",
        "evaluate_sharding_spec",
    ),
    FW_DATASET: ("Branches", "DatasetDelta", "SqlQuery", "SqlQueryBuilder", "VectorIndexReader"),
    fragment_records: ("RowIdSequence", "FragmentSession"),
    lance_fw.indices: ("IndicesBuilder", "IndexSegment"),
    lance_fw.query: ("CombinedFieldsQuery",),
}  # fmt: skip


@pytest.mark.parametrize("module, name", [(m, n) for m, names in REFUSED.items() for n in names])
def test_refused_names_say_why(module: Any, name: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=name):
        getattr(module, name)("x", 1)


@pytest.mark.parametrize("phrase", [False, True])
def test_document_granularity_row_searches_as_pylance(tmp_path: Path, phrase: bool) -> None:
    """``document_granularity=DocumentGranularity.ROW`` is the default search; list elements are
    refused by lance_fw (it searches string columns, one document per row)."""
    data = pa.table(
        {"id": pa.array(range(6000), pa.int64()), "s": [f"w{i % 41} w{i % 7} z" for i in range(6000)]}
    )
    results = []
    for lib, query in ((lance, lance.query), (lance_fw, lance_fw.query)):
        ds = lib.write_dataset(data, str(tmp_path / lib.__name__), max_rows_per_file=2500)
        ds.create_scalar_index("s", "INVERTED", with_position=True)
        cls = query.PhraseQuery if phrase else query.MatchQuery
        text = "w3 w3" if phrase else "w3 w5"
        fts = cls(text, "s", document_granularity=query.DocumentGranularity.ROW)
        results.append(ds.to_table(full_text_query=fts, columns=["id"]).sort_by("id").to_pylist())
    assert results[1] == results[0]
    listed = lance_fw.query.MatchQuery(
        "w3", "s", document_granularity=lance_fw.query.DocumentGranularity.LIST_ELEMENT
    )
    with pytest.raises(UnsupportedFeatureError):
        ds.to_table(full_text_query=listed)


VECTOR_QUERIES: list[tuple[Any, dict[str, Any]]] = [
    ([1, 2], {}),
    (np.array([[1.0, 2.0], [3.0, 4.0]]), {}),
    ([[1, 2], [3]], {}),
    (np.array([1, 2], dtype=np.float64), {"k": 3, "use_index": False}),
    (pa.array([1, 2], pa.float16()), {}),
    (pa.array([1, 2], pa.int32()), {}),
    ([1, 2], {"k": 0}),
    ([1, 2], {"k": -1}),
    ([1, 2], {"nprobes": 0}),
    ([1, 2], {"nprobes": 0, "search_effort": 0.5}),
    ([1, 2], {"minimum_nprobes": -1}),
    ([1, 2], {"minimum_nprobes": 5, "maximum_nprobes": 2}),
    ([1, 2], {"refine_factor": 0}),
    ([1, 2], {"ef": 0}),
    ([1, 2], {"query_parallelism": -2}),
    ([1, 2], {"query_parallelism": 2.5}),
    ([1, 2], {"approx_mode": "x"}),
    ("abc", {}),
    (None, {}),
    (pa.array(["a"]), {}),
]


@pytest.mark.parametrize("q, options", VECTOR_QUERIES, ids=[str(i) for i in range(len(VECTOR_QUERIES))])
def test_vector_search_query_matches_pylance(q: Any, options: dict[str, Any]) -> None:
    outcomes: list[object] = []
    for module in (PY_DATASET, FW_DATASET):
        try:
            inner = dict(module.VectorSearchQuery("vec", q, **options).inner())
            vector = inner.pop("q")
            outcomes.append((str(vector.type), vector.to_pylist(), inner))
        except Exception as error:
            outcomes.append(next(c for c in type(error).__mro__ if c.__module__ == "builtins"))
    assert outcomes[1] == outcomes[0]


def _ordering_table() -> pa.Table:
    rng = np.random.default_rng(11)
    n = 9000
    floats = rng.choice([-1.5, -0.0, 0.0, 2.25, np.inf, -np.inf, np.nan, 7.0], n)
    nulls = rng.random(n) < 0.1
    words = np.array(["b", "a", "B", "", "aa", "é", "zz", "a b"])
    return pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "i32": pa.array(rng.integers(-5, 5, n).astype(np.int32), mask=nulls),
            "u64": pa.array(rng.integers(0, 1 << 63, n, dtype=np.uint64) | np.uint64(1 << 63)),
            "f64": pa.array(floats, mask=rng.random(n) < 0.1),
            "f32": pa.array(floats.astype(np.float32)),
            "flag": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.2),
            "s": pa.array(rng.choice(words, n), mask=rng.random(n) < 0.1),
            "day": pa.array(rng.integers(0, 30, n).astype("datetime64[D]")),
            "blob": pa.array([bytes([x % 7, x % 3]) for x in rng.integers(0, 100, n)], pa.binary()),
        }
    )


ORDERINGS: list[list[tuple[str, bool, bool]]] = [
    [("i32", True, False)],
    [("i32", False, True)],
    [("u64", True, False)],
    [("f64", True, False)],
    [("f64", False, False)],
    [("f64", True, True)],
    [("f32", False, True)],
    [("flag", False, False)],
    [("s", True, False)],
    [("s", False, True)],
    [("day", False, False)],
    [("blob", True, False)],
    [("s", True, True), ("f64", False, False), ("i32", True, False)],
]


@pytest.mark.parametrize("keys", ORDERINGS, ids=[str(k) for k in ORDERINGS])
def test_ordering_kernel_orders_as_pylance(tmp_path: Path, keys: list[tuple[str, bool, bool]]) -> None:
    """``lance_fw.query.ordering`` (for the scanner's ``order_by=``) against pylance's sort: with
    ``id`` as the last key the order is total, so the rows must come back identical."""
    from lance_fw.query.ordering import order_table

    data = _ordering_table()
    ds = lance.write_dataset(data, str(tmp_path / "d"), max_rows_per_file=2500)
    orderings = [PY_DATASET.ColumnOrdering(c, a, n) for c, a, n in keys] + [PY_DATASET.ColumnOrdering("id")]
    theirs = ds.to_table(order_by=orderings, offset=100, limit=5000)
    ours = order_table(
        data,
        [FW_DATASET.ColumnOrdering(c, a, n) for c, a, n in keys] + [FW_DATASET.ColumnOrdering("id")],
        100,
        5000,
    )
    assert ours.column("id").to_pylist() == theirs.column("id").to_pylist()
