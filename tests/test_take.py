"""take (positions over live rows) and _take_rows (row addresses) equal pylance's; take reads only
the chunks / byte ranges holding the rows."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
from cases import all_types_table, encodings_table, map_table, nested_v21_table, wide_table
from conftest import assert_tables_equal


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
@pytest.mark.parametrize("deletions", [False, True])
def test_take_equals_pylance(uri, version, writer, deletions):
    table = all_types_table(900)
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_rows_per_file=300)
    if deletions:
        lance.dataset(uri).delete("int32 > 40 OR int8 IS NULL")
    live = lance.dataset(uri).count_rows()
    rng = np.random.default_rng(3)
    indices = rng.integers(0, live, 60).tolist() + [0, live - 1, 5, 5]  # any order, repeats
    expected = lance.dataset(uri).take(indices)
    assert_tables_equal(expected, lance_fw.dataset(uri).take(indices))
    assert_tables_equal(lance.dataset(uri).take(indices, columns=["string", "list_int"]),
                        lance_fw.dataset(uri).take(indices, columns=["string", "list_int"]))
    addresses = lance.dataset(uri).to_table(with_row_address=True).column("_rowaddr").to_numpy()[indices[:10]]
    assert_tables_equal(lance.dataset(uri)._take_rows(addresses.tolist()),
                        lance_fw.dataset(uri)._take_rows(addresses))


def _long_lists(n: int) -> pa.Table:
    """Lists long enough to span several mini-block chunks, next to short and null ones."""
    rng = np.random.default_rng(9)
    lengths = rng.integers(0, 900, n)
    rows = [None if i % 11 == 4 else list(range(int(k))) for i, k in enumerate(lengths)]
    return pa.table({
        "long": pa.array(rows, pa.list_(pa.int32())),
        "long_str": pa.array([None if r is None else [f"v{x % 13}" for x in r[:300]] for r in rows],
                             pa.list_(pa.string())),
        "id": pa.array(np.arange(n, dtype=np.int64)),
    })


TABLES = {
    "nested": (lambda: nested_v21_table(600), ["2.1", "2.2"]),
    "wide": (lambda: wide_table(400), ["2.2"]),
    "encodings": (lambda: encodings_table(30_000), ["2.1", "2.2"]),
    "map": (lambda: map_table(400), ["2.2"]),
    "long_lists": (lambda: _long_lists(500), ["2.0", "2.1", "2.2"]),
}


@pytest.mark.parametrize("name,version", [(n, v) for n, (_, vs) in TABLES.items() for v in vs])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_take_row_paths_equal_pylance(uri, name, version, writer):
    """Mini-block chunks (with and without the repetition index), full-zip rows, dictionary and
    constant pages, several pages per column (small pages), deletions; sparse and dense indices."""
    table = TABLES[name][0]()
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_page_bytes=16 * 1024, max_rows_per_file=table.num_rows // 2)
    first = "id" if "id" in table.column_names else table.column_names[0]
    lance.dataset(uri).delete(f"{first} IS NULL" if first != "id" else "id % 7 = 3")
    live = lance.dataset(uri).count_rows()
    rng = np.random.default_rng(len(name))
    for indices in (np.sort(rng.choice(live, 12, replace=False)),          # a few rows: row by row
                    rng.integers(0, live, 40)[::-1],                        # unsorted, repeats
                    np.arange(0, live, 2),                                  # dense: whole chunks
                    np.arange(1, live, 9),                                  # 1 in 9: row by row
                    np.arange(live // 3, min(live, live // 3 + 3000))):     # a run: chunks searched
        indices = indices.tolist()
        assert_tables_equal(lance.dataset(uri).take(indices), lance_fw.dataset(uri).take(indices))


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("writer", ["pylance", "lance_fw"])
def test_sorted_take_over_fragments_equals_pylance(uri, version, writer):
    """Rows asked in order, distinct, over several fragments (the usual take: no per-fragment
    reordering, the parts joined as they come), with a dictionary column holding nulls (Arrow
    cannot unify such dictionaries across fragments): values, column types and one chunk per
    column, as pylance returns them; ahead of them a take with repeats and one starting past
    row 0 of the first fragment."""
    n = 6_000
    values = [None if i % 7 == 0 else f"c{i % 5}" for i in range(n)]
    table = pa.table({"id": pa.array(np.arange(n)), "d": pa.array(values).dictionary_encode(),
                      "s": pa.array(values), "f": pa.array(np.random.default_rng(2).random(n))})
    write = lance.write_dataset if writer == "pylance" else lance_fw.write_dataset
    write(table, uri, data_storage_version=version, max_rows_per_file=1_500)
    assert len(lance.dataset(uri).get_fragments()) == 4
    rng = np.random.default_rng(5)
    for indices in (np.sort(rng.choice(n, 700, replace=False)),   # every fragment, in order
                    np.arange(1_400, 1_700),                       # across one fragment boundary
                    np.array([3, 3, 1_600, 2_000]),                # in order, a repeat
                    np.array([4_000, 10, 5_999])):                 # out of order
        expected = lance.dataset(uri).take(indices.tolist())
        got = lance_fw.dataset(uri).take(indices.tolist())
        assert_tables_equal(expected, got)
        assert got.schema == expected.schema
        assert [c.num_chunks for c in got.columns] == [c.num_chunks for c in expected.columns]


def test_take_reads_only_what_it_needs(uri, monkeypatch):
    """A few rows of a large dataset read a small share of its bytes (chunks and row ranges, not pages)."""
    from lance_fw_plugins import storage_local

    rng = np.random.default_rng(1)
    n = 200_000
    table = pa.table({"id": pa.array(np.arange(n)), "f": pa.array(rng.random(n)),
                      "s": pa.array([f"name-{i % 5000}" for i in range(n)]),
                      "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 64, dtype=np.float32)), 64),
                      "l": pa.array([list(range(i % 5)) for i in range(n)], pa.list_(pa.int64()))})
    for version in ("2.0", "2.2"):
        path = f"{uri}-{version}"
        lance_fw.write_dataset(table, path, data_storage_version=version)
        data_bytes = sum(f.stat().st_size for f in __import__("pathlib").Path(path, "data").iterdir())
        read = []
        original = storage_local.LocalReader.read

        def counting(self, offset, length, original=original):
            read.append(length)
            return original(self, offset, length)
        monkeypatch.setattr(storage_local.LocalReader, "read", counting)
        rows = [5, 77_777, 150_001, 199_999]
        got = lance_fw.dataset(path).take(rows)
        monkeypatch.undo()
        assert_tables_equal(table.take(rows), got)
        assert sum(read) < data_bytes / 20, (version, sum(read), data_bytes)


def test_take_out_of_range(uri):
    lance_fw.write_dataset(all_types_table(10), uri)
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        lance_fw.dataset(uri).take([10])


def test_fastlanes_gather_equals_unpack():
    """Random access unpacks single values of inline-bitpacked blocks (every type and width)."""
    from lance_fw_plugins.encodings_v2_1 import fastlanes

    rng = np.random.default_rng(0)
    for t in (8, 16, 32, 64):
        for w in (0, 1, 3, 7, t - 1, t):
            values = rng.integers(0, 2 ** min(w, 63), 3 * 1024, dtype=np.uint64).astype(fastlanes.utype(t))
            data = np.concatenate([np.frombuffer(b, fastlanes.utype(t))
                                   for b in fastlanes.pack_inline_blocks(values, t)])
            at = rng.integers(0, len(values), 60)
            assert (fastlanes.unpack_inline_at(data, t, 3, at // 1024, at % 1024) == values[at]).all(), (t, w)
