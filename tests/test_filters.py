"""Differential test of the Lance SQL filter dialect: lance_fw's rows equal pylance's rows."""

from __future__ import annotations

import datetime as dt
import decimal

import lance
import pyarrow as pa
import pytest

import lance_fw
from lance_fw.query.filter import FilterError

N = 200


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    base = tmp_path_factory.mktemp("filters")
    rows = range(N)
    table = pa.table({
        "id": pa.array(list(rows), pa.int64()),
        "i32": pa.array([None if i % 7 == 0 else i % 50 - 25 for i in rows], pa.int32()),
        "u8": pa.array([i % 256 for i in rows], pa.uint8()),
        "f": pa.array([None if i % 11 == 0 else float("nan") if i % 13 == 0 else i / 7 for i in rows]),
        "s": pa.array([None if i % 9 == 0 else f"name_{i % 17}" for i in rows]),
        "ls": pa.array([f"Large{i % 5}" for i in rows], pa.large_string()),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in rows], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in rows], pa.timestamp("us")),
        "tstz": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i) for i in rows],
                         pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(i) / 4 for i in rows], pa.decimal128(10, 2)),
        "b": pa.array([None if i % 10 == 0 else i % 3 == 0 for i in rows]),
        "st": pa.StructArray.from_arrays([pa.array([i % 6 for i in rows], pa.int32()),
                                          pa.array([f"v{i % 4}" for i in rows])], names=["a", "name"]),
    })
    out = {}
    for name, writer, version in (("pylance-2.2", lance, "2.2"), ("lance_fw-2.0", lance_fw, "2.0"),
                                  ("lance_fw-2.2", lance_fw, "2.2")):
        path = str(base / name)
        writer.write_dataset(table, path, data_storage_version=version, max_rows_per_file=70)
        out[name] = path
    return out


FILTERS = [
    "id > 150", "id >= 150", "id < 3", "id <= 3", "id = 42", "id != 42", "id <> 42", "id == 42",
    "150 < id", "id BETWEEN 10 AND 20", "id NOT BETWEEN 10 AND 190", "id IN (1, 5, 9)", "id NOT IN (1, 5, 9)",
    "i32 IS NULL", "i32 IS NOT NULL", "i32 > 0", "i32 < 0 OR i32 IS NULL", "NOT (i32 > 0)", "i32 IN (1, NULL)",
    "i32 NOT IN (1, 2)", "i32 = NULL", "u8 > 200", "u8 = 7",
    "f > 10.5", "f < 1", "f IS NULL", "f IS NOT NULL", "f = 2",
    "s = 'name_3'", "s != 'name_3'", "s IS NULL", "s LIKE 'name_1%'", "s NOT LIKE 'name_1%'", "s ILIKE 'NAME_2%'",
    "s IN ('name_1', 'name_2')", "s > 'name_5'", "s = \"name_4\"", "starts_with(s, 'name_1')",
    "regexp_like(s, '^name_[0-3]$')", "ls = 'Large3'", "ls LIKE 'Large%'",
    "d > DATE '2024-03-01'", "d = DATE '2024-01-05'", "d BETWEEN DATE '2024-02-01' AND DATE '2024-02-10'",
    "d > CAST('2024-03-01' AS DATE)", "ts > TIMESTAMP '2024-01-05 00:00:00'", "ts <= TIMESTAMP '2024-01-02 03:00:00'",
    "tstz > TIMESTAMP '2024-01-05 00:00:00Z'",
    "dec > CAST('10.5' AS DECIMAL(10,2))", "dec = CAST('2.25' AS DECIMAL(10,2))",
    "b", "NOT b", "b = true", "b IS TRUE", "b IS NOT NULL AND NOT b",
    "st.a = 3", "st.a > 3 AND st.name = 'v1'", "`st`.`a` = 2", "`id` < 5",
    "id > 100 AND (s = 'name_2' OR i32 IS NULL)", "(id < 10 OR id > 190) AND NOT i32 IS NULL",
    "id > 10 AND id < 20 AND u8 > 12", "true", "id > 5 AND false",
]

REJECTED = ["id > 5 ORDER BY id", "id > 1 LIMIT 1", "id > 1.5", "id = '3'", "d > '2024-03-01'",
            "no_such_column = 1", "id IN (SELECT 1)", "id >", "dec > 9.5"]


@pytest.mark.parametrize("name", ["pylance-2.2", "lance_fw-2.0", "lance_fw-2.2"])
@pytest.mark.parametrize("text", FILTERS)
def test_rows_equal_pylance(datasets, name, text):
    path = datasets[name]
    expected = lance.dataset(path).to_table(filter=text).column("id").to_pylist()
    ours = lance_fw.dataset(path).to_table(filter=text, columns=["id"]).column("id").to_pylist()
    assert sorted(ours) == sorted(expected)
    assert lance_fw.dataset(path).count_rows(text) == len(expected)


@pytest.mark.parametrize("text", REJECTED)
def test_rejected_like_pylance(datasets, text):
    path = datasets["lance_fw-2.2"]
    with pytest.raises(FilterError):
        lance_fw.dataset(path).to_table(filter=text)
