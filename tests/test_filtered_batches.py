"""Where a filtered scan's batches end, against pylance: pylance reads batches of ``batch_size``
live rows (or, where a scalar index answers, of index candidates), filters each and hands on what
it keeps, never merging them; ``offset``/``limit`` cut from that stream. Rows, order and every
batch's length must match, with deletions, several fragments and an index."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.table.fragment as fragment_module

ROWS = 12_000
# (``x >= 0``: every row passes, ``x < 0``: none, the matcher's two shortcuts; ``c <> 3`` (90%)
# and ``x % 50 <> 7`` (98%): most rows pass, the matches kept as a mask, ``matcher.DenseMatches``)
FILTERS = [
    "x % 3 = 0",
    "x > 5000",
    "c = 3",
    "c < 5 AND x > 1000",
    "x % 7 = 0 AND c < 5",
    "x < 0",
    "x >= 0",
    "c <> 3",
    "x % 50 <> 7",
]
OPTIONS = [
    {"batch_size": 700},
    {},
    {"batch_size": 1024, "offset": 50, "limit": 2500},
    {"batch_size": 333, "with_row_id": True},
    {"batch_size": 4096, "columns": ["c"]},
    {"batch_size": 100, "offset": 150, "limit": 700},
    {"batch_size": 500, "offset": 0},
    # offsets past the first fragment's matches (its read drops them before fetching anything)
    {"batch_size": 256, "offset": 1000, "limit": 300},
    {"offset": 4400, "with_row_id": True},
]


@pytest.fixture(scope="module", params=["plain", "indexed", "no deletions"])
def path(request, tmp_path_factory):
    out = str(tmp_path_factory.mktemp(request.param) / "t.lance")
    rng = np.random.default_rng(4)
    table = pa.table(
        {"x": np.arange(ROWS), "c": rng.integers(0, 10, ROWS), "s": [f"s{i % 77}" for i in range(ROWS)]}
    )
    lance.write_dataset(table, out, max_rows_per_file=4500)
    if request.param != "no deletions":  # (with none, a probe every row passes is handed on whole)
        lance.dataset(out).delete("x < 500 OR (x >= 4500 AND x < 4900) OR x % 101 = 0")
    if request.param == "indexed":
        lance.dataset(out).create_scalar_index("c", "BITMAP")
    return out


@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_filtered_batches_match_pylance(request, path, where, options):
    ours = list(lance_fw.dataset(path).to_batches(filter=where, **options))
    theirs = list(lance.dataset(path).to_batches(filter=where, **options))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    if theirs:
        assert pa.Table.from_batches(ours).equals(pa.Table.from_batches(theirs).cast(ours[0].schema))


@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_filtered_counts_match_pylance(path, where, options):
    """``count_rows`` counts in windows of its own (not ``batch_size``'s): the count must still be
    pylance's, and with an offset or a limit refused as pylance refuses it."""
    if "offset" in options or "limit" in options:
        with pytest.raises(ValueError, match="limit/offset with aggregate"):
            lance.dataset(path).scanner(filter=where, **options).count_rows()
        with pytest.raises(lance_fw.errors.InvalidArgumentError, match="limit/offset with aggregate"):
            lance_fw.dataset(path).scanner(filter=where, **options).count_rows()
        return
    ours = lance_fw.dataset(path).scanner(filter=where, **options).count_rows()
    assert ours == lance.dataset(path).scanner(filter=where, **options).count_rows()


@pytest.mark.parametrize(
    "options", [{"batch_size": 700}, {"batch_size": 1000, "columns": ["s", "x"]}, {}], ids=str
)
@pytest.mark.parametrize("where", ["x % 50 <> 7", "c <> 3 AND x % 3 <> 1"])
def test_probes_most_rows_pass_after_deleted_rows(tmp_path, monkeypatch, where, options):
    """Probes most of whose rows match (their matches kept as a mask) in fragments of several
    probes whose earlier probes hold deleted rows, so a probe's first rank is not its offset: the
    batches still end where pylance's read batches end."""
    monkeypatch.setattr(fragment_module, "PROBE_ROWS", 2048)
    out = str(tmp_path / "t.lance")
    rng = np.random.default_rng(5)
    n = 3 * ROWS
    table = pa.table({"x": np.arange(n), "c": rng.integers(0, 10, n), "s": [f"s{i % 77}" for i in range(n)]})
    lance.write_dataset(table, out, max_rows_per_file=ROWS)
    lance.dataset(out).delete(f"x < 900 OR (x >= {ROWS + 3000} AND x < {ROWS + 3333})")
    ours = list(lance_fw.dataset(out).to_batches(filter=where, **options))
    theirs = list(lance.dataset(out).to_batches(filter=where, **options))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert pa.Table.from_batches(ours).equals(pa.Table.from_batches(theirs).cast(ours[0].schema))
