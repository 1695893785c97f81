"""take (positions over live rows) and _take_rows (row addresses) equal pylance's."""

from __future__ import annotations

import lance
import numpy as np
import pytest

import lance_fw
from cases import all_types_table
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


def test_take_out_of_range(uri):
    lance_fw.write_dataset(all_types_table(10), uri)
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        lance_fw.dataset(uri).take([10])
