"""Config, table metadata, schema metadata and field metadata: lance_fw against pylance.

Each case runs the same calls through pylance on one copy of a dataset and through lance_fw on
another, then compares what pylance reads back from both (config, metadata, schema with field
metadata, version, the ``UpdateConfig`` transaction written) and the calls' return values; bad
input must raise the same builtin exception class; concurrent updates must conflict or rebase as
pylance's do.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw._proto import transaction_pb2
from lance_fw.errors import LanceError
from lance_fw.io.storage import resolve_storage
from lance_fw.table.manifest import list_versions, read_transaction

ROWS = 5000  # several fragments (max_rows_per_file below) and more than one 4096-value chunk


def _table() -> pa.Table:
    n = ROWS
    return pa.table(
        {
            "a": pa.array(range(n), pa.int64()),
            "s": pa.array([{"x": i, "y.z": str(i)} for i in range(n)]),
            "l": pa.array([[{"q": i}] for i in range(n)]),
        }
    )


@pytest.fixture
def pair(tmp_path) -> tuple[str, str]:
    """Two identical pylance-written datasets: one for pylance's calls, one for lance_fw's."""
    left, right = str(tmp_path / "pylance"), str(tmp_path / "lance_fw")
    lance.write_dataset(_table(), left, max_rows_per_file=2000)
    shutil.copytree(left, right)
    return left, right


def _state(uri: str) -> dict[str, Any]:
    """What pylance reads back from ``uri``."""
    ds = lance.dataset(uri)
    return {
        "version": ds.version,
        "config": ds.config(),
        "metadata": ds.metadata,
        "schema_metadata": ds.schema_metadata,
        "schema": ds.schema,
        "field_metadata": [(f.name, f.metadata) for f in _walk(ds.schema)],
        "rows": ds.count_rows(),
    }


def _walk(schema: pa.Schema) -> list[pa.Field]:
    out: list[pa.Field] = []

    def visit(f: pa.Field) -> None:
        out.append(f)
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            visit(t.value_field)

    for f in schema:
        visit(f)
    return out


def _last_update_config(uri: str) -> dict[str, Any]:
    """The latest version's ``UpdateConfig`` transaction, order-free (pylance orders deletions by hash)."""
    storage = resolve_storage(uri, None)
    txn = read_transaction(storage, uri, list_versions(storage, uri)[-1].path)
    assert txn is not None and txn.WhichOneof("operation") == "update_config"
    op = txn.update_config

    def umap(m: transaction_pb2.Transaction.UpdateMap) -> tuple:
        entries = sorted((e.key, e.value if e.HasField("value") else None) for e in m.update_entries)
        return tuple(entries), m.replace

    return {
        "config": umap(op.config_updates) if op.HasField("config_updates") else None,
        "table": umap(op.table_metadata_updates) if op.HasField("table_metadata_updates") else None,
        "schema": umap(op.schema_metadata_updates) if op.HasField("schema_metadata_updates") else None,
        "fields": {k: umap(v) for k, v in op.field_metadata_updates.items()},
        "read_version": txn.read_version,
    }


Call = Callable[[Any], Any]

#: (name, call): the same code runs on a pylance and a lance_fw dataset.
STEPS: list[tuple[str, Call]] = [
    ("update_config", lambda d: d.update_config({"k1": "v1", "k2": "v2", "": "empty key"})),
    ("update_config delete", lambda d: d.update_config({"k1": None, "k3": "v3"})),
    ("delete_config_keys", lambda d: d.delete_config_keys(["k2", "absent"])),
    ("delete_config_keys none", lambda d: d.delete_config_keys([])),
    ("update_config empty", lambda d: d.update_config({})),
    ("update_config replace", lambda d: d.update_config({"r": "1", "gone": None}, replace=True)),
    ("update_metadata", lambda d: d.update_metadata({"author": "me", "n": "1"})),
    ("update_metadata delete", lambda d: d.update_metadata({"n": None, "x": "é"})),
    ("update_metadata replace", lambda d: d.update_metadata({"only": "1"}, replace=True)),
    ("update_schema_metadata", lambda d: d.update_schema_metadata({"sm": "1", "sm2": "2"})),
    ("update_schema_metadata delete", lambda d: d.update_schema_metadata({"sm": None})),
    ("update_schema_metadata replace", lambda d: d.update_schema_metadata({"z": "9"}, replace=True)),
    ("update_field_metadata", lambda d: d.update_field_metadata({"a": {"fa": "1"}, "s.x": {"q": "1"}})),
    ("update_field_metadata quoted", lambda d: d.update_field_metadata({"s.`y.z`": {"dotted": "1"}})),
    ("update_field_metadata list child", lambda d: d.update_field_metadata({"l.item.q": {"deep": "1"}})),
    ("update_field_metadata delete", lambda d: d.update_field_metadata({"a": {"fa": None, "fb": "2"}})),
    ("update_field_metadata replace", lambda d: d.update_field_metadata({"s.x": {"r": "1"}}, replace=True)),
    ("update_field_metadata empty", lambda d: d.update_field_metadata({})),
]


def _deprecated(call: Call) -> Call:
    def run(d: Any) -> Any:
        with pytest.warns(DeprecationWarning):
            return call(d)

    return run


STEPS += [
    ("replace_schema_metadata", _deprecated(lambda d: d.replace_schema_metadata({"rs": "1"}))),
    ("replace_field_metadata", _deprecated(lambda d: d.replace_field_metadata("a", {"rf": "1"}))),
]


def test_each_call_matches_pylance(pair: tuple[str, str]) -> None:
    """Each call, in sequence on both copies: same return value, same state read by pylance, same
    state read by lance_fw, the same UpdateConfig transaction, and the lance_fw object moved on."""
    left, right = pair
    theirs, ours = lance.dataset(left), lance_fw.dataset(right)
    for name, call in STEPS:
        expected, got = call(theirs), call(ours)
        assert got == expected, name
        assert _state(right) == _state(left), name
        assert _last_update_config(right) == _last_update_config(left), name
        assert ours.version == theirs.version, name
        assert ours.config() == theirs.config(), name
        assert ours.metadata == theirs.metadata, name
        assert ours.schema_metadata == theirs.schema_metadata, name
        assert ours.schema == theirs.schema, name
        assert lance_fw.dataset(right).schema.equals(lance.dataset(right).schema, check_metadata=True), name
    assert lance.dataset(right).to_table().equals(lance.dataset(left).to_table())


def test_mixed_writers(pair: tuple[str, str]) -> None:
    """pylance and lance_fw take turns on one dataset; each sees the other's updates, and nothing
    of the other's is lost (as when pylance alone makes every call on the other copy)."""
    left, right = pair
    reference = lance.dataset(left)
    turns: list[Call] = [step for _, step in STEPS if "replace_" not in _]
    for i, call in enumerate(turns):
        call(reference)
        writer = lance.dataset(right) if i % 2 else lance_fw.dataset(right)
        call(writer)
        assert _state(right) == _state(left)
        assert lance_fw.dataset(right).config() == reference.config()
        assert lance_fw.dataset(right).schema_metadata == reference.schema_metadata


def _append(d: Any) -> None:
    lance.write_dataset(_table().slice(0, 10), d.uri, mode="append")


def _overwrite(d: Any) -> None:
    lance.write_dataset(_table().slice(0, 10), d.uri, mode="overwrite")


#: (name, committed first by pylance from a handle at version 1, then the stale handle's call)
CONCURRENT: list[tuple[str, Call, Call]] = [
    ("config same key", lambda d: d.update_config({"k": "1"}), lambda d: d.update_config({"k": "2"})),
    ("config other key", lambda d: d.update_config({"k": "1"}), lambda d: d.update_config({"j": "2"})),
    ("config delete vs set", lambda d: d.update_config({"k": "1"}), lambda d: d.delete_config_keys(["k"])),
    ("config deletes", lambda d: d.delete_config_keys(["k"]), lambda d: d.delete_config_keys(["k"])),
    (
        "config replace",
        lambda d: d.update_config({"q": "1"}, replace=True),
        lambda d: d.update_config({"j": "2"}),
    ),
    ("metadata same key", lambda d: d.update_metadata({"k": "1"}), lambda d: d.update_metadata({"k": "2"})),
    ("metadata other key", lambda d: d.update_metadata({"k": "1"}), lambda d: d.update_metadata({"j": "2"})),
    (
        "metadata replace",
        lambda d: d.update_metadata({"q": "1"}, replace=True),
        lambda d: d.update_metadata({"j": "2"}),
    ),
    ("metadata vs config", lambda d: d.update_metadata({"k": "1"}), lambda d: d.update_config({"k": "2"})),
    (
        "schema md twice",
        lambda d: d.update_schema_metadata({"k": "1"}),
        lambda d: d.update_schema_metadata({"j": "2"}),
    ),
    (
        "field same",
        lambda d: d.update_field_metadata({"a": {"k": "1"}}),
        lambda d: d.update_field_metadata({"a": {"j": "2"}}),
    ),
    (
        "field other",
        lambda d: d.update_field_metadata({"a": {"k": "1"}}),
        lambda d: d.update_field_metadata({"s.x": {"j": "2"}}),
    ),
    ("append vs config", _append, lambda d: d.update_config({"j": "2"})),
    ("append vs field", _append, lambda d: d.update_field_metadata({"a": {"j": "2"}})),
    ("delete vs schema md", lambda d: d.delete("a < 10"), lambda d: d.update_schema_metadata({"j": "2"})),
    ("add_columns vs config", lambda d: d.add_columns({"b": "a * 2"}), lambda d: d.update_config({"j": "2"})),
    (
        "add_columns vs schema md",
        lambda d: d.add_columns({"b": "a * 2"}),
        lambda d: d.update_schema_metadata({"j": "2"}),
    ),
    (
        "add_columns vs field",
        lambda d: d.add_columns({"b": "a * 2"}),
        lambda d: d.update_field_metadata({"a": {"j": "2"}}),
    ),
    (
        "drop_columns vs field",
        lambda d: d.drop_columns(["l"]),
        lambda d: d.update_field_metadata({"a": {"j": "2"}}),
    ),
    ("compaction vs metadata", lambda d: d.optimize.compact_files(), lambda d: d.update_metadata({"j": "2"})),
    ("overwrite vs config", lambda d: _overwrite(d), lambda d: d.update_config({"j": "2"})),
    ("overwrite vs schema md", lambda d: _overwrite(d), lambda d: d.update_schema_metadata({"j": "2"})),
    ("overwrite vs field", lambda d: _overwrite(d), lambda d: d.update_field_metadata({"a": {"j": "2"}})),
    (
        "restore vs field",
        lambda d: (d.update_config({"z": "1"}), d.checkout_version(1).restore()),
        lambda d: d.update_field_metadata({"a": {"j": "2"}}),
    ),
]


def _outcome(call: Call, ds: Any) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(ds)
    except OSError as exc:  # pylance's conflicts are OSErrors; lance_fw's IncompatibleTransactionError too
        if isinstance(exc, LanceError):
            assert "incompatible" in str(exc)
        return "conflict"
    return "ok"


@pytest.mark.parametrize("name,first,second", CONCURRENT, ids=[c[0] for c in CONCURRENT])
def test_concurrent_updates_conflict_as_pylance(
    pair: tuple[str, str], name: str, first: Call, second: Call
) -> None:
    """A handle opened at version 1 updates after pylance committed ``first``: lance_fw conflicts
    exactly where pylance does and otherwise rebases to the same state."""
    left, right = pair
    stale_theirs, stale_ours = lance.dataset(left), lance_fw.dataset(right)
    first(lance.dataset(left))
    first(lance.dataset(right))
    expected = _outcome(second, stale_theirs)
    got = _outcome(second, stale_ours)
    assert got == expected
    assert _state(right) == _state(left)
    if got == "ok":
        assert stale_ours.version == stale_theirs.version
        assert stale_ours.config() == stale_theirs.config()


def test_two_lance_fw_handles(pair: tuple[str, str]) -> None:
    """Two lance_fw handles at the same version: a second update of the same key conflicts (as in
    pylance), of another key rebases and keeps both."""
    _, right = pair
    first, second = lance_fw.dataset(right), lance_fw.dataset(right)
    first.update_config({"k": "1"})
    with pytest.raises(OSError):
        second.update_config({"k": "2"})
    assert second.version == 1  # the failed call moved nothing
    assert second.update_config({"j": "2"}) == {"k": "1", "j": "2"}
    assert lance.dataset(right).config() == {"k": "1", "j": "2"}


BAD: list[tuple[str, Call]] = [
    ("config int key", lambda d: d.update_config({1: "a"})),
    ("config int value", lambda d: d.update_config({"a": 1})),
    ("config bytes value", lambda d: d.update_config({"a": b"x"})),
    ("config list", lambda d: d.update_config([("a", "b")])),
    ("delete keys str", lambda d: d.delete_config_keys("abc")),
    ("delete keys int", lambda d: d.delete_config_keys([1])),
    ("delete keys None", lambda d: d.delete_config_keys(None)),
    ("metadata int value", lambda d: d.update_metadata({"a": 1})),
    ("schema metadata bytes", lambda d: d.update_schema_metadata({"a": b"1"})),
    ("field unknown", lambda d: d.update_field_metadata({"nope": {"a": "1"}})),
    ("field unknown child", lambda d: d.update_field_metadata({"s.nope": {"a": "1"}})),
    ("field int value", lambda d: d.update_field_metadata({"a": {"a": 1}})),
    ("field not a dict", lambda d: d.update_field_metadata({"a": "x"})),
    ("field int key", lambda d: d.update_field_metadata({0: {"a": "1"}})),
    ("field updates list", lambda d: d.update_field_metadata([("a", {})])),
    ("replace field unknown", lambda d: d.replace_field_metadata("nope", {"a": "1"})),
    ("field dotted unquoted", lambda d: d.update_field_metadata({"s.y.z": {"a": "1"}})),
    ("field unbalanced backtick", lambda d: d.update_field_metadata({"s.`y.z": {"a": "1"}})),
    ("field empty path", lambda d: d.update_field_metadata({"": {"a": "1"}})),
]


def _error(call: Call, ds: Any) -> type[BaseException]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            call(ds)
    return info.type


@pytest.mark.parametrize("name,call", BAD, ids=[b[0] for b in BAD])
def test_bad_input_same_error_class(pair: tuple[str, str], name: str, call: Call) -> None:
    """Bad input: pylance's builtin exception class (TypeError / OSError), typed in lance_fw,
    and nothing committed."""
    left, right = pair
    expected = _error(call, lance.dataset(left))
    got = _error(call, lance_fw.dataset(right))
    assert issubclass(got, LanceError)
    builtin = next(c for c in expected.__mro__ if c.__module__ == "builtins")
    assert issubclass(got, builtin), (got, expected)
    assert lance.dataset(right).version == lance.dataset(left).version == 1


#: the cases whose first commit is itself an UpdateConfig (lance_fw can make it)
_UPDATE_FIRST = [
    c
    for c in CONCURRENT
    if (c[1] not in (_append, _overwrite) and "vs" not in c[0]) or "metadata vs config" == c[0]
]


@pytest.mark.parametrize("name,first,second", _UPDATE_FIRST, ids=[c[0] for c in _UPDATE_FIRST])
def test_pylance_rebases_over_lance_fw_updates(
    pair: tuple[str, str], name: str, first: Call, second: Call
) -> None:
    """The first update made by lance_fw, the stale handle pylance's: pylance's conflict resolver
    reads lance_fw's transaction as its own (same outcome and state as over pylance's)."""
    left, right = pair
    stale_left, stale_right = lance.dataset(left), lance.dataset(right)
    first(lance.dataset(left))
    first(lance_fw.dataset(right))
    assert _outcome(second, stale_right) == _outcome(second, stale_left)
    assert _state(right) == _state(left)


#: schema changes by a handle opened before a concurrent metadata update (pylance: add_columns, a
#: Merge, conflicts; drop/alter, a Project, go through and drop the update, in pylance as here)
SCHEMA_AFTER_METADATA: list[tuple[str, Call, Call]] = [
    (
        "schema md, add_columns",
        lambda d: d.update_schema_metadata({"k": "1"}),
        lambda d: d.add_columns({"c": "a * 2"}),
    ),
    (
        "field md, add_columns",
        lambda d: d.update_field_metadata({"a": {"k": "1"}}),
        lambda d: d.add_columns({"c": "a * 2"}),
    ),
    ("config, add_columns", lambda d: d.update_config({"k": "1"}), lambda d: d.add_columns({"c": "a * 2"})),
    (
        "field md, drop_columns",
        lambda d: d.update_field_metadata({"a": {"k": "1"}}),
        lambda d: d.drop_columns(["l"]),
    ),
    (
        "field md, alter_columns",
        lambda d: d.update_field_metadata({"a": {"k": "1"}}),
        lambda d: d.alter_columns({"path": "l", "name": "ll"}),
    ),
]


def _schema_outcome(call: Call, ds: Any) -> str:
    from lance_fw.table.commit import is_conflict

    try:
        call(ds)
    except Exception as exc:
        assert is_conflict(exc), exc
        return "conflict"
    return "ok"


@pytest.mark.parametrize(
    "name,first,second", SCHEMA_AFTER_METADATA, ids=[c[0] for c in SCHEMA_AFTER_METADATA]
)
def test_schema_change_over_metadata_update(
    pair: tuple[str, str], name: str, first: Call, second: Call
) -> None:
    """lance_fw's add_columns over a concurrent schema/field metadata update conflicts as pylance's
    (before: it committed and silently undid the update)."""
    left, right = pair
    stale_theirs, stale_ours = lance.dataset(left), lance_fw.dataset(right)
    first(lance.dataset(left))
    first(lance.dataset(right))
    assert _schema_outcome(second, stale_ours) == _schema_outcome(second, stale_theirs)
    assert _state(right) == _state(left)


# -- index listing (read only) -----------------------------------------------------------------
_SEGMENT_ATTRS = (
    "uuid",
    "dataset_version_at_last_update",
    "index_version",
    "created_at",
    "base_id",
    "size_bytes",
)
_INDEX_ATTRS = (
    "name",
    "type_url",
    "index_type",
    "num_rows_indexed",
    "fields",
    "field_names",
    "total_size_bytes",
)


def _describe(ds: Any) -> list[dict[str, Any]]:
    out = []
    for d in ds.describe_indices():
        row = {a: getattr(d, a) for a in _INDEX_ATTRS}
        try:
            row["details"] = d.details
        except LanceError:  # lance_fw refuses details it does not decode; never in pylance
            row["details"] = "refused"
        row["segments"] = [
            {**{a: getattr(s, a) for a in _SEGMENT_ATTRS}, "fragment_ids": list(s.fragment_ids)}
            for s in d.segments
        ]
        out.append(row)
    return out


@pytest.fixture
def indexed(tmp_path) -> str:
    """pylance indices of several kinds, one with two segments, over fragments with deletions."""
    import numpy as np

    uri = str(tmp_path / "indexed")
    n = 3000
    rng = np.random.default_rng(7)
    table = pa.table(
        {
            "a": pa.array(range(n), pa.int64()),
            "s": pa.array([f"w{i % 7}" for i in range(n)]),
            "st": pa.array([{"x": i} for i in range(n)]),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype("float32")), 8),
        }
    )
    ds = lance.write_dataset(table, uri, max_rows_per_file=1000)
    ds.create_scalar_index("a", "BTREE")
    ds.create_scalar_index("s", "BITMAP", name="s_bitmap")
    ds.create_scalar_index("st.x", "BTREE", name="nested")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.create_index("v", "IVF_SQ", num_partitions=2, name="v_sq", metric="cosine")
    lance.write_dataset(table.slice(0, 500), uri, mode="append")
    ds = lance.dataset(uri)
    ds.optimize.optimize_indices(index_names=["a_idx"], num_indices_to_merge=0)  # a second, delta segment
    lance.dataset(uri).delete("a < 50")
    return uri


def test_describe_indices_matches_pylance(indexed: str) -> None:
    theirs, ours = lance.dataset(indexed), lance_fw.dataset(indexed)
    expected = _describe(theirs)
    assert [d["name"] for d in expected] == ["a_idx", "nested", "s_bitmap", "v_idx", "v_sq"]
    assert any(len(d["segments"]) == 2 for d in expected)
    assert _describe(ours) == expected
    assert ours.has_index is theirs.has_index is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_lists = [
            [{**row, "fragment_ids": list(row["fragment_ids"])} for row in ds.list_indices()]
            for ds in (theirs, ours)
        ]
    assert as_lists[1] == as_lists[0]
    with pytest.warns(DeprecationWarning):
        ours.list_indices()
    # older versions list what they had
    assert _describe(lance_fw.dataset(indexed, version=2)) == _describe(lance.dataset(indexed, version=2))


def test_no_indices(pair: tuple[str, str]) -> None:
    left, _ = pair
    assert lance_fw.dataset(left).describe_indices() == lance.dataset(left).describe_indices() == []
    assert lance_fw.dataset(left).has_index is lance.dataset(left).has_index is False


def test_metadata_updates_keep_indices(indexed: str) -> None:
    """A lance_fw UpdateConfig commit keeps every index (pylance still lists and uses them)."""
    before = _describe(lance.dataset(indexed))
    ours = lance_fw.dataset(indexed)
    ours.update_config({"k": "v"})
    ours.update_field_metadata({"a": {"m": "1"}})
    after = lance.dataset(indexed)
    assert _describe(after) == before
    assert _describe(ours) == before
    assert after.to_table(filter="a = 70").num_rows == 2


def test_plugin_encodings_record_is_kept(pair: tuple[str, str]) -> None:
    """lance_fw's config record of plugin encodings cannot be set or deleted by hand, and survives
    ``update_config(replace=True)`` (before: a replace dropped it, and with it the feature flag that
    keeps readers without the plugin away)."""
    from lance_fw.errors import InvalidArgumentError
    from lance_fw.table.flags import PLUGIN_ENCODINGS_KEY

    _, right = pair
    record = '{"encodings_v2_0":"lance_fw test"}'  # a plugin that is always loaded
    lance.dataset(right).update_config({PLUGIN_ENCODINGS_KEY: record})
    ours = lance_fw.dataset(right)
    for call in (
        lambda: ours.update_config({PLUGIN_ENCODINGS_KEY: "{}"}),
        lambda: ours.update_config({PLUGIN_ENCODINGS_KEY: None}),
        lambda: ours.delete_config_keys([PLUGIN_ENCODINGS_KEY]),
    ):
        with pytest.raises(InvalidArgumentError):
            call()
    assert ours.update_config({"k": "v"}, replace=True) == {"k": "v", PLUGIN_ENCODINGS_KEY: record}
    assert lance_fw.dataset(right).config() == {"k": "v", PLUGIN_ENCODINGS_KEY: record}
