"""Every option of the public API either does what pylance's does or raises naming itself.

No public function swallows keywords (``**kwargs``): the signatures are walked, each takes every
parameter of its pylance counterpart, unknown keywords raise ``TypeError``, options lance_fw lacks
raise ``UnsupportedFeatureError``, and each implemented option is compared with pylance.
"""

from __future__ import annotations

import inspect

import lance
import lance.fragment
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import DatasetOptimizer as PylanceOptimizer

import lance_fw
import lance_fw.fragment
from lance_fw.api.dataset import DatasetOptimizer
from lance_fw.errors import InvalidArgumentError, LanceError, UnsupportedFeatureError
from lance_fw.query.scanner import LanceScanner
from lance_fw.table import compaction
from tests.conftest import assert_tables_equal

N = 10_000
TABLE = pa.table({"x": pa.array(np.arange(N), pa.int64()), "s": [f"s{i % 13}" for i in range(N)]})


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """The same data, with the same deletions, written by each library: 4 fragments of 3000 rows
    (the last 1000), each crossing several 1024-value blocks and pages."""
    out = {}
    for mod in (lance, lance_fw):
        path = str(tmp_path_factory.mktemp(mod.__name__) / "ds")
        mod.write_dataset(TABLE, path, max_rows_per_file=3000, max_page_bytes=8192)
        mod.dataset(path).delete("x % 7 = 3 OR (x >= 3100 AND x < 3300)")
        out[mod] = path
    return out


def _public_callables():
    """(name, callable) for every public entry point that takes options."""
    items = [
        ("dataset", lance_fw.dataset),
        ("write_dataset", lance_fw.write_dataset),
        ("write_fragments", lance_fw.fragment.write_fragments),
        ("LanceScanner", LanceScanner.__init__),
        ("compact_files", DatasetOptimizer.compact_files),
        ("table.compact_files", compaction.compact_files),
    ]
    for cls in (
        lance_fw.LanceDataset,
        lance_fw.LanceFragment,
        lance_fw.LanceScanner,
        lance_fw.MergeInsertBuilder,
    ):
        for name, member in inspect.getmembers(cls, callable):
            if not name.startswith("_") or name == "_take_rows":
                items.append((f"{cls.__name__}.{name}", member))
    return items


#: Keyword parameters that are not a catch-all: ``create_scalar_index(..., **params)`` and
#: ``create_index(..., **kwargs)`` hand every key to the index type's ``check()``, which refuses each
#: one it does not implement (tested in tests/test_index_kernel.py, test_vector_index.py and each
#: index type's tests); the set of keys depends on the plugin. ``LanceScanner.to_pandas(**kwargs)`` hands them
#: to pyarrow's ``Table.to_pandas``, whose own signature refuses an unknown one (as pylance's does).
CHECKED_KEYWORDS = {"LanceDataset.create_scalar_index", "LanceDataset.create_index", "LanceScanner.to_pandas"}


def test_no_public_function_swallows_keywords():
    swallowing = [
        name
        for name, fn in _public_callables()
        if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    ]
    assert sorted(swallowing) == sorted(CHECKED_KEYWORDS)


PYLANCE_NAMES = [
    "dataset",
    "write_dataset",
    "fragment.write_fragments",
    "LanceDataset.scanner",
    "LanceDataset.to_table",
    "LanceDataset.to_batches",
    "LanceDataset.take",
    "LanceDataset._take_rows",
    "LanceDataset.count_rows",
    "LanceDataset.commit",
    "LanceDataset.get_fragments",
    "LanceDataset.add_columns",
    "fragment.LanceFragment.to_table",
    "fragment.LanceFragment.to_batches",
    "fragment.LanceFragment.scanner",
    "fragment.LanceFragment.count_rows",
    "optimize.compact_files",
]


def _resolve(module, dotted: str):
    if dotted == "optimize.compact_files":
        return (PylanceOptimizer if module is lance else DatasetOptimizer).compact_files
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", PYLANCE_NAMES)
def test_every_pylance_parameter_is_named(name):
    """A pylance option passed to lance_fw is never a TypeError: it is honoured or refused by name."""
    theirs, ours = _resolve(lance, name), _resolve(lance_fw, name)
    named = {
        n
        for n, p in inspect.signature(theirs).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    assert named - {"self", "data_obj", "data"} <= set(inspect.signature(ours).parameters)


def test_unknown_keywords_raise_type_error(paths):
    ds = lance_fw.dataset(paths[lance_fw])
    frag = ds.get_fragments()[0]
    calls = [
        lambda: lance_fw.dataset(paths[lance_fw], bogus=1),
        lambda: ds.scanner(bogus=1),
        lambda: ds.to_table(bogus=1),
        lambda: list(ds.to_batches(bogus=1)),
        lambda: ds.head(2, bogus=1),
        lambda: ds.take([0], bogus=1),
        lambda: ds._take_rows([0], bogus=1),
        lambda: ds.count_rows(bogus=1),
        lambda: frag.to_table(bogus=1),
        lambda: list(frag.to_batches(bogus=1)),
        lambda: frag.scanner(bogus=1),
        lambda: ds.optimize.compact_files(bogus=1),
        lambda: ds.add_columns({"y": "x"}, bogus=1),
        lambda: lance_fw.write_dataset(TABLE, paths[lance_fw] + "-new", bogus=1),
        lambda: lance_fw.fragment.write_fragments(TABLE, paths[lance_fw], bogus=1),
        lambda: lance_fw.LanceDataset.commit(paths[lance_fw], lance_fw.LanceOperation.Append([]), bogus=1),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="bogus"):
            call()


# -- implemented options, against pylance -----------------------------------------------------------

SCANS = [
    {"batch_size": 700},
    {"batch_size": 700, "limit": 2500, "offset": 100},
    {"batch_size": 700, "offset": 2900},
    {"columns": [], "batch_size": 1000},
    {"columns": [], "batch_size": 1000, "with_row_id": True},
    {"columns": [], "batch_size": 1000, "limit": 2500},
    {"batch_size": 700, "filter": "x > 2500 AND x < 4000"},
    {"batch_size": 500, "columns": ["s"], "with_row_address": True, "limit": 1200, "offset": 2950},
    {"batch_size": 333, "fragment_readahead": 3},
    {"columns": {"y": "x * 2"}, "batch_size": 800, "offset": 10},
    {"limit": 0},
    {"batch_size": 4000, "filter": "s = 's3'", "limit": 100, "offset": 10},
]


@pytest.mark.parametrize("options", SCANS, ids=str)
def test_scan_batches_equal_pylance(paths, options):
    """Same rows and the same batch boundaries as pylance (per fragment, ``batch_size`` rows; a
    filtered scan's follow its read batches, joined when a column is read after the filter)."""
    theirs = list(lance.dataset(paths[lance]).to_batches(**options))
    ours = list(lance_fw.dataset(paths[lance_fw]).to_batches(**options))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert sum(b.num_rows for b in ours) == sum(b.num_rows for b in theirs)
    if theirs:
        assert_tables_equal(pa.Table.from_batches(theirs), pa.Table.from_batches(ours))


@pytest.mark.parametrize(
    "options",
    [
        {"offset": 10, "limit": 5},
        {"filter": "x % 2 = 0", "offset": 10, "limit": 5},
        {"offset": 2500},
        {"limit": 0},
        {"columns": ["s"], "with_row_id": True, "offset": 1000, "limit": 700},
        {"columns": [], "limit": 50},
    ],
    ids=str,
)
def test_fragment_offset_limit_equal_pylance(paths, options):
    for i in range(4):
        theirs = lance.dataset(paths[lance]).get_fragments()[i]
        ours = lance_fw.dataset(paths[lance_fw]).get_fragments()[i]
        expected = theirs.to_table(**options)
        actual = ours.to_table(**options)
        assert actual.num_rows == expected.num_rows
        assert_tables_equal(expected, actual)
        sizes = [b.num_rows for b in theirs.to_batches(batch_size=300, **options)]
        assert [b.num_rows for b in ours.to_batches(batch_size=300, **options)] == sizes


def test_default_scan_options_batch_size(paths):
    theirs = lance.dataset(paths[lance], default_scan_options={"batch_size": 600})
    ours = lance_fw.dataset(paths[lance_fw], default_scan_options={"batch_size": 600})
    assert [b.num_rows for b in ours.to_batches()] == [b.num_rows for b in theirs.to_batches()]
    assert [b.num_rows for b in ours.to_batches(batch_size=900)] == [
        b.num_rows for b in theirs.to_batches(batch_size=900)
    ]
    assert [b.num_rows for b in ours.get_fragments()[0].to_batches()] == [
        b.num_rows for b in theirs.get_fragments()[0].to_batches()
    ]  # fragments ignore the defaults


def test_default_scan_options_unknown_key_is_value_error(paths):
    with pytest.raises(ValueError):
        lance.dataset(paths[lance], default_scan_options={"bogus": 1}).to_table()
    with pytest.raises(ValueError):
        lance_fw.dataset(paths[lance_fw], default_scan_options={"bogus": 1}).to_table()


def test_head_passes_scanner_options(paths):
    expected = lance.dataset(paths[lance]).head(5, columns=["s"], filter="x > 20", with_row_id=True)
    assert_tables_equal(
        expected, lance_fw.dataset(paths[lance_fw]).head(5, columns=["s"], filter="x > 20", with_row_id=True)
    )


def test_take_with_sql_columns(paths):
    expected = lance.dataset(paths[lance]).take([5, 0, 4000], columns={"y": "x * 2"})
    assert_tables_equal(
        expected, lance_fw.dataset(paths[lance_fw]).take([5, 0, 4000], columns={"y": "x * 2"})
    )


@pytest.mark.parametrize("ignore_deletions", [False, True])
def test_take_rows_of_deleted_rows(paths, ignore_deletions):
    ids = [0, 3, 10, 2999, (1 << 32) + 150, (1 << 32) + 101]  # 3, 10 and (1, 150) are deleted
    expected = lance.dataset(paths[lance])._take_rows(ids, ignore_deletions=ignore_deletions)
    actual = lance_fw.dataset(paths[lance_fw])._take_rows(ids, ignore_deletions=ignore_deletions)
    assert_tables_equal(expected, actual)


def test_take_rows_past_a_fragment_is_refused(paths):
    with pytest.raises(OSError):
        lance.dataset(paths[lance])._take_rows([3000])
    with pytest.raises(InvalidArgumentError):
        lance_fw.dataset(paths[lance_fw])._take_rows([3000])


def test_commit_message_and_transaction_properties(tmp_path):
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(TABLE, uri, commit_message="first load", transaction_properties={"k": "v"})
        frags = mod.fragment.write_fragments(TABLE.slice(0, 10), uri)
        mod.LanceDataset.commit(
            uri, mod.LanceOperation.Append(frags), read_version=1, commit_message="second"
        )
    for version in (1, 2):
        expected = lance.dataset(str(tmp_path / "lance")).read_transaction(version).transaction_properties
        actual = lance.dataset(str(tmp_path / "lance_fw")).read_transaction(version).transaction_properties
        assert actual == expected


def test_storage_options_are_used(tmp_path):
    """Local storage options both libraries understand give the same dataset; every entry point
    hands the options to the storage plugin; a scheme lance_fw has no backend for is an error
    naming it, never a silent local write."""
    from lance_fw.hookspecs import hookimpl
    from lance_fw.plugin_manager import register, unregister

    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        ds = mod.write_dataset(TABLE, uri, storage_options={})
        assert mod.dataset(uri, storage_options={}).count_rows() == N == ds.count_rows()
    seen = []

    class Spy:  # sees every storage request, then lets the built-in backends answer
        @hookimpl
        def lance_storage(self, uri, options):
            seen.append(dict(options))

        @hookimpl
        def lance_storage_options(self):
            return {"spy_option": "seen by the spy"}

    register(Spy(), name="storage-options-spy")
    try:
        options = {"spy_option": "1"}
        uri = str(tmp_path / "spied")
        lance_fw.write_dataset(TABLE, uri, storage_options=options)
        lance_fw.dataset(uri, storage_options=options).to_table()
        frags = lance_fw.fragment.write_fragments(TABLE, uri, storage_options=options)
        lance_fw.LanceDataset.commit(
            uri, lance_fw.LanceOperation.Append(frags), read_version=1, storage_options=options
        )
    finally:
        unregister("storage-options-spy")
    assert seen and all(s == options for s in seen)
    with pytest.raises(LanceError):
        lance_fw.write_dataset(TABLE, "nosuchscheme://bucket/ds", storage_options={"region": "x"})


def test_max_bytes_per_file_splits_like_pylance(tmp_path):
    """Both libraries roll to a new file after the batch in which written pages pass the limit.
    Where pages are flushed differs (lance_fw buffers up to max_page_bytes per column), so the
    split points can differ: the test holds what both promise, not pylance's exact rows per file
    (tests/test_compaction.py compares a case where they agree)."""
    n, limit = 1_200_000, 1_000_000
    data = pa.table({"id": pa.array(np.arange(n), pa.int64())})
    counts = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        ds = mod.write_dataset(
            pa.Table.from_batches(data.to_batches(max_chunksize=8192)), uri, max_bytes_per_file=limit
        )
        frags = ds.get_fragments()
        counts[mod] = len(frags)
        assert sum(f.physical_rows for f in frags) == n
        assert_tables_equal(data, ds.to_table())
        assert all(f.data_files()[0].file_size_bytes >= limit for f in frags[:-1])
    assert counts[lance] > 1 and counts[lance_fw] > 1


def test_compact_files_materialize_deletions_options(tmp_path):
    """The options reach the planner: fragments big enough to stay but with 20% of their rows
    deleted are rewritten only when deletions are materialised above the threshold (compared with
    pylance: fragment sizes, deletion counts and rows)."""

    def run(mod, uri, **options):
        ds = mod.write_dataset(TABLE, uri, max_rows_per_file=2000)
        ds.delete("x % 5 = 0")
        ds.optimize.compact_files(target_rows_per_fragment=1000, **options)
        return (
            [f.physical_rows for f in ds.get_fragments()],
            [f.num_deletions for f in ds.get_fragments()],
            ds.to_table(),
        )

    outcomes = []
    for i, options in enumerate(
        [
            {},
            {"materialize_deletions": False},
            {"materialize_deletions_threshold": 0.5},
            {"materialize_deletions": True, "materialize_deletions_threshold": 0.1},
        ]
    ):
        rows, deletions, table = run(lance, str(tmp_path / f"p{i}"), **options)
        ours = run(lance_fw, str(tmp_path / f"o{i}"), **options)
        assert (ours[0], ours[1]) == (rows, deletions), options
        assert_tables_equal(table, ours[2])
        outcomes.append(sum(deletions))
    assert outcomes == [0, 2000, 2000, 0]  # the options made a difference


def test_checkout_latest_moves_the_object(tmp_path):
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(TABLE, uri)
        old = mod.dataset(uri)
        mod.write_dataset(TABLE.slice(0, 5), uri, mode="append")
        assert old.checkout_latest() is None
        assert (old.version, old.count_rows()) == (2, N + 5)


def test_get_fragment(paths):
    theirs, ours = lance.dataset(paths[lance]), lance_fw.dataset(paths[lance_fw])
    for fid in (0, 2, 3, 7):
        expected, actual = theirs.get_fragment(fid), ours.get_fragment(fid)
        assert (actual is None) == (expected is None)
        if expected is not None:
            assert (actual.fragment_id, actual.physical_rows, actual.count_rows()) == (
                expected.fragment_id,
                expected.physical_rows,
                expected.count_rows(),
            )
            assert_tables_equal(expected.to_table(), actual.to_table())


# -- refused options ----------------------------------------------------------------------------------

REFUSED = [
    ("scanner batch_size_bytes", lambda ds, uri: ds.to_table(batch_size_bytes=1024)),
    ("scanner include_deleted_rows", lambda ds, uri: ds.to_table(include_deleted_rows=True)),
    ("scanner strict_batch_size", lambda ds, uri: list(ds.to_batches(strict_batch_size=True))),
    (
        "fragment blob_handling",
        lambda ds, uri: ds.get_fragments()[0].to_table(blob_handling="all_descriptions"),
    ),
    (
        "dataset default columns",
        lambda ds, uri: lance_fw.dataset(uri, default_scan_options={"columns": ["x"]}),
    ),
    (
        "write_fragments stable row ids",
        lambda ds, uri: lance_fw.fragment.write_fragments(TABLE, uri + "x", enable_stable_row_ids=True),
    ),
    ("write progress", lambda ds, uri: lance_fw.write_dataset(TABLE, uri, mode="append", progress=object())),
    (
        "write v1 manifest paths",
        lambda ds, uri: lance_fw.write_dataset(TABLE, uri + "y", enable_v2_manifest_paths=False),
    ),
    (
        "write_fragments transaction",
        lambda ds, uri: lance_fw.fragment.write_fragments(TABLE, uri, return_transaction=True),
    ),
    (
        "commit detached",
        lambda ds, uri: lance_fw.LanceDataset.commit(uri, lance_fw.LanceOperation.Append([]), detached=True),
    ),
    ("compact_files max_source_rows", lambda ds, uri: ds.optimize.compact_files(max_source_rows=10)),
    ("add_columns reader_schema", lambda ds, uri: ds.add_columns({"y": "x"}, reader_schema=pa.schema([]))),
]


@pytest.mark.parametrize("name, call", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_options_raise_unsupported(tmp_path, name, call):
    uri = str(tmp_path / "ds")
    ds = lance_fw.write_dataset(TABLE, uri)
    with pytest.raises(UnsupportedFeatureError, match=name.split()[-1].split("_")[0]):
        call(ds, uri)
    assert lance_fw.dataset(uri).version == 1  # nothing was committed


def test_creation_only_options_are_ignored_on_append(tmp_path):
    """pylance applies enable_stable_row_ids / enable_v2_manifest_paths only when creating."""
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(TABLE, uri)
        ds = mod.write_dataset(
            TABLE.slice(0, 3), uri, mode="append", enable_stable_row_ids=True, enable_v2_manifest_paths=False
        )
        assert ds.count_rows() == N + 3
    assert_tables_equal(
        lance.dataset(str(tmp_path / "lance")).to_table(with_row_id=True),
        lance.dataset(str(tmp_path / "lance_fw")).to_table(with_row_id=True),
    )


def test_tuning_options_are_accepted(paths):
    """Options that only tune performance give pylance's answer."""
    options = dict(
        batch_readahead=2,
        scan_in_order=True,
        use_stats=False,
        io_buffer_size=1 << 20,
        late_materialization=True,
        use_scalar_index=False,
        prefilter=True,
    )
    expected = lance.dataset(paths[lance]).to_table(filter="x < 100", **options)
    assert_tables_equal(
        expected,
        lance_fw.dataset(paths[lance_fw], block_size=4096, index_cache_size=10).to_table(
            filter="x < 100", **options
        ),
    )


# -- invalid arguments: ValueError where pylance raises ValueError --------------------------------------

INVALID = [
    lambda mod, uri: mod.dataset(uri).to_table(limit=-1),
    lambda mod, uri: mod.dataset(uri).to_table(offset=-1),
    lambda mod, uri: mod.dataset(uri).to_table(batch_size=0),
    lambda mod, uri: mod.dataset(uri).to_table(columns=["nope"]),
    lambda mod, uri: mod.dataset(uri).scanner(columns=["nope"]).to_table(),
    lambda mod, uri: mod.write_dataset(TABLE, uri, mode="bogus"),
    lambda mod, uri: mod.dataset(uri).get_fragments(filter=pa.compute.field("x") > 1),
    lambda mod, uri: mod.dataset(uri).to_table(fragment_readahead=-1),
    lambda mod, uri: mod.dataset(uri).to_table(batch_readahead=0),
    lambda mod, uri: mod.dataset(uri).get_fragments()[0].to_table(offset=-1),
    lambda mod, uri: mod.dataset(uri).head(-1),
    lambda mod, uri: mod.dataset(uri, default_scan_options={"batch_size": 0}).to_table(),
]


@pytest.mark.parametrize(
    "call",
    [
        lambda mod, uri: mod.dataset(uri).to_table(limit=1.5),
        lambda mod, uri: mod.dataset(uri).to_table(batch_size=2.0),
        lambda mod, uri: mod.dataset(uri).take([[1, 2]]),
    ],
)
def test_non_integer_arguments_are_refused(paths, call):
    """pylance raises TypeError; lance_fw a typed InvalidArgumentError (never a silent rounding)."""
    with pytest.raises(TypeError):
        call(lance, paths[lance])
    with pytest.raises(InvalidArgumentError):
        call(lance_fw, paths[lance_fw])


@pytest.mark.parametrize("call", INVALID)
def test_invalid_arguments_are_value_errors(paths, call):
    with pytest.raises(ValueError):
        call(lance, paths[lance])
    with pytest.raises(
        InvalidArgumentError if call is not INVALID[3] and call is not INVALID[4] else ValueError
    ):
        call(lance_fw, paths[lance_fw])


@pytest.mark.parametrize("columns", [["x"], ["s", "x"], ["s"], ["x", "s", "extra"]], ids=str)
def test_append_of_some_columns(tmp_path, columns):
    """pylance appends data lacking nullable columns (they read as null; the new files hold only
    the given columns) and refuses data lacking a non-nullable column or bringing a new one."""
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False), pa.field("s", pa.string())])
    extra = {"x": pa.array([7, 8], pa.int64()), "s": ["a", "b"], "extra": [1, 2]}
    outcome = {}
    for mod in (lance, lance_fw):
        uri = str(tmp_path / mod.__name__)
        mod.write_dataset(TABLE.slice(0, 5).cast(schema), uri)
        try:
            mod.write_dataset(pa.table({c: extra[c] for c in columns}), uri, mode="append")
        except (OSError, ValueError) as exc:
            outcome[mod] = type(exc).__name__
            continue
        ds = lance.dataset(uri)  # pylance reads both datasets
        outcome[mod] = (ds.to_table(), [list(f.data_files()[0].fields) for f in ds.get_fragments()])
    if isinstance(outcome[lance], str):
        assert outcome[lance_fw] == "SchemaError"
    else:
        assert_tables_equal(outcome[lance][0], outcome[lance_fw][0])
        assert [sorted(f) for f in outcome[lance_fw][1]] == [sorted(f) for f in outcome[lance][1]]


def _missing_dataset(m, root):
    return m.dataset(f"{root}/nope")


def _missing_version(m, root):
    return m.dataset(f"{root}/ds", version=9)


def _missing_tag(m, root):
    return m.dataset(f"{root}/ds", version="no_such_tag")


def _checkout_missing_version(m, root):
    return m.dataset(f"{root}/ds").checkout_version(9)


def _unknown_storage_version(m, root):
    return m.write_dataset(pa.table({"x": [1]}), f"{root}/{m.__name__}_v", data_storage_version="9.9")


def _create_over_existing(m, root):
    return m.write_dataset(pa.table({"x": [1]}), f"{root}/ds")


@pytest.mark.parametrize(
    "case",
    [
        _missing_dataset,
        _missing_version,
        _missing_tag,
        _checkout_missing_version,
        _unknown_storage_version,
        _create_over_existing,
    ],
    ids=lambda f: f.__name__[1:],
)
def test_errors_are_caught_by_the_builtin_class_pylance_raises(tmp_path, case):
    """Code written against pylance (``except ValueError`` / ``except OSError``) keeps working."""
    lance.write_dataset(pa.table({"x": [1, 2]}), str(tmp_path / "ds"))
    with pytest.raises(Exception) as oracle:
        case(lance, str(tmp_path))
    builtin = next(c for c in type(oracle.value).__mro__ if c.__module__ == "builtins")
    with pytest.raises(LanceError) as ours:
        case(lance_fw, str(tmp_path))
    assert isinstance(ours.value, builtin), (type(ours.value), builtin)
