"""``EncodingConformance``: the round trips every encoding plugin must survive.

A plugin's own test suite subclasses it and says which columns take its encoding::

    from lance_fw.testing import EncodingConformance

    class TestMyEncoding(EncodingConformance):
        field_metadata = {"lance-encoding:my-codec": "true"}
        arrow_types = (pa.int32(), pa.int64())
        file_versions = ("2.0",)
        type_urls = {"/my_package.MyCodec"}
        pylance_readable = False

For every (file version, Arrow type) the kit writes one dataset of random data with nulls (a
column ``v`` carrying ``field_metadata``, and ``id``, the row number, with none) in several
fragments and pages, then reads it back every way lance_fw reads: a full scan, slices, ``take``,
filtered scans and DuckDB's ``lance_scan``; with pylance as a second reader when the encoding is
meant to be pylance-readable. Every read must equal the input exactly: values, nulls and Arrow
type, never a cast.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from google.protobuf import any_pb2

from lance_fw.testing._plugin import PluginUnderTest
from lance_fw.testing.data import DEFAULT_ARROW_TYPES, assert_identical, random_array

#: Names of the two columns of every dataset the kit writes.
ID, VALUE = "id", "v"


class EncodingConformance(PluginUnderTest):
    """Base class of an encoding plugin's conformance tests (set the class attributes below).

    The plugin must be registered while the tests run: installed (its ``lance_fw`` entry point),
    or set ``plugin`` to the module/object and the kit registers it for the class.
    """

    #: Field metadata that makes a column use the encoding under test; ``{}`` for a default encoder.
    field_metadata: ClassVar[Mapping[str, str]] = {}
    #: Arrow types the encoding takes; each gets its own dataset per file version.
    arrow_types: ClassVar[Sequence[pa.DataType]] = DEFAULT_ARROW_TYPES
    #: Data file versions the encoding writes.
    file_versions: ClassVar[Sequence[str]] = ("2.0", "2.1", "2.2")
    #: Type URLs of the page encodings the plugin writes: when set, every page of the leaf columns
    #: of ``v`` must use one of them (so the round trip really went through the plugin).
    type_urls: ClassVar[Collection[str] | None] = None
    #: Whether pylance reads the encoding; then pylance must read the datasets identically too.
    pylance_readable: ClassVar[bool] = True
    #: Extra ``write_dataset`` keyword arguments for both writes (e.g. ``allow_plugin_encodings``).
    write_options: ClassVar[Mapping[str, Any]] = {}
    #: Probability of a null at each nesting level.
    null_fraction: ClassVar[float] = 0.1
    #: Rows of the first write (small pages, several fragments) and of the append (default pages,
    #: one fragment longer than 4096 rows).
    create_rows: ClassVar[int] = 6001
    append_rows: ClassVar[int] = 4099
    #: ``max_rows_per_file`` and ``max_page_bytes`` of the first write: fragments of 2999, 2999 and
    #: 3 rows, each of several small pages.
    max_rows_per_file: ClassVar[int] = 2999
    small_page_bytes: ClassVar[int] = 1024
    #: How many random row numbers ``take`` asks for (repeats and any order included).
    take_count: ClassVar[int] = 300
    seed: ClassVar[int] = 1024_4096

    # -- hooks a subclass may override --------------------------------------------------------

    def make_array(
        self, arrow_type: pa.DataType, n: int, rng: np.random.Generator, file_version: str
    ) -> pa.Array:
        """The values of column ``v``: random with nulls (override for an encoding that only takes
        some values, e.g. sorted ones; keep nulls where the encoding allows them)."""
        return random_array(arrow_type, n, rng, self.null_fraction, struct_nulls=file_version != "2.0")

    # -- parametrisation and fixtures ---------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """One dataset per (file version, Arrow type), shared by the tests of the class."""
        if "file_version" in metafunc.fixturenames:
            metafunc.parametrize("file_version", list(self.file_versions), scope="class")
        if "arrow_type" in metafunc.fixturenames:
            metafunc.parametrize(
                "arrow_type", list(self.arrow_types), ids=[str(t) for t in self.arrow_types], scope="class"
            )

    @pytest.fixture(scope="class")
    @classmethod
    def written(
        cls,
        registered_plugin: Any,
        tmp_path_factory: pytest.TempPathFactory,
        file_version: str,
        arrow_type: pa.DataType,
    ) -> tuple[str, pa.Table]:
        """(dataset URI, the table written): a create in small pages, then an append."""
        import lance_fw

        rng = np.random.default_rng(
            [
                cls.seed,
                list(cls.file_versions).index(file_version),
                list(map(str, cls.arrow_types)).index(str(arrow_type)),
            ]
        )
        n = cls.create_rows + cls.append_rows
        schema = pa.schema(
            [
                pa.field(ID, pa.int64(), nullable=False),
                pa.field(VALUE, arrow_type, metadata=dict(cls.field_metadata) or None),
            ]
        )
        table = pa.table(
            [pa.array(np.arange(n, dtype=np.int64)), cls().make_array(arrow_type, n, rng, file_version)],
            schema=schema,
        )
        uri = str(tmp_path_factory.mktemp("encoding-conformance") / "ds")
        lance_fw.write_dataset(
            table.slice(0, cls.create_rows),
            uri,
            data_storage_version=file_version,
            max_rows_per_file=cls.max_rows_per_file,
            max_page_bytes=cls.small_page_bytes,
            **cls.write_options,
        )
        lance_fw.write_dataset(table.slice(cls.create_rows), uri, mode="append", **cls.write_options)
        return uri, table

    # -- the tests ----------------------------------------------------------------------------

    def test_full_scan(self, written: tuple[str, pa.Table]) -> None:
        import lance_fw

        uri, table = written
        ds = lance_fw.dataset(uri)
        assert len(ds.get_fragments()) >= 3, "the kit expects several fragments"
        assert ds.schema.field(VALUE).type == table.schema.field(VALUE).type
        assert_identical(table, ds.to_table(), "full scan")
        assert_identical(table.select([VALUE]), ds.to_table(columns=[VALUE]), "scan of column v alone")
        for key, value in self.field_metadata.items():  # later appends must find the hint
            assert (ds.schema.field(VALUE).metadata or {}).get(key.encode()) == value.encode(), (
                f"the dataset schema lost the field metadata {key!r}"
            )

    def test_slices_across_pages_and_fragments(self, written: tuple[str, pa.Table]) -> None:
        import lance_fw

        uri, table = written
        ds = lance_fw.dataset(uri)
        boundary = self.max_rows_per_file
        for offset, limit in [(boundary - 10, 20), (1000, 1100), (self.create_rows - 2, 5), (0, 1)]:
            assert_identical(
                table.slice(offset, limit),
                ds.to_table(offset=offset, limit=limit),
                f"scan offset={offset} limit={limit}",
            )

    def test_take(self, written: tuple[str, pa.Table]) -> None:
        import lance_fw

        uri, table = written
        rng = np.random.default_rng(self.seed)
        edges = [
            0,
            self.max_rows_per_file - 1,
            self.max_rows_per_file,
            self.create_rows - 1,
            self.create_rows,
            table.num_rows - 1,
        ]
        indices = np.concatenate([rng.integers(0, table.num_rows, self.take_count), edges, edges[::-1]])
        ds = lance_fw.dataset(uri)
        assert_identical(table.take(pa.array(indices)), ds.take(indices), "take of random rows")
        assert_identical(
            table.select([VALUE]).take(pa.array(indices)),
            ds.take(indices, columns=[VALUE]),
            "take of column v alone",
        )

    def test_filtered_scans(self, written: tuple[str, pa.Table]) -> None:
        import lance_fw

        uri, table = written
        ds = lance_fw.dataset(uri)
        ids, values = table.column(ID), table.column(VALUE)
        low, high = self.max_rows_per_file - 50, self.max_rows_per_file + 50
        in_ranges = pc.or_(
            pc.and_(pc.greater_equal(ids, low), pc.less(ids, high)),
            pc.greater_equal(ids, table.num_rows - 100),
        )
        cases = {  # row ranges across a fragment boundary and the last fragment, or sparse non-null rows
            f"({ID} >= {low} AND {ID} < {high}) OR {ID} >= {table.num_rows - 100} "
            f"OR ({VALUE} IS NOT NULL AND {ID} % 7 = 3)": pc.or_(
                in_ranges, pc.and_(pc.is_valid(values), pa.array(np.arange(table.num_rows) % 7 == 3))
            ),
            f"{VALUE} IS NULL": pc.is_null(values),
        }
        for sql, mask in cases.items():
            assert_identical(table.filter(mask), ds.to_table(filter=sql), f"scan with filter {sql!r}")

    def test_duckdb_lance_scan(self, written: tuple[str, pa.Table]) -> None:
        import lance_fw.duckdb

        uri, table = written
        con = lance_fw.duckdb.connect()
        con.register("expected", table)
        # one scan into a DuckDB table, then compared in DuckDB's own values (EXCEPT ALL matches
        # NULL with NULL and counts duplicates), so no Arrow type conversion can hide a difference
        con.execute(f"CREATE TEMP TABLE got AS SELECT * FROM lance_scan('{uri}')")
        assert con.sql("SELECT count(*) FROM got").fetchall() == [(table.num_rows,)]
        for query in [
            "SELECT * FROM got EXCEPT ALL SELECT * FROM expected",
            "SELECT * FROM expected EXCEPT ALL SELECT * FROM got",
        ]:
            differing = con.sql(f"SELECT {ID} FROM ({query}) ORDER BY {ID} LIMIT 5").fetchall()
            assert differing == [], f"DuckDB lance_scan: rows {differing} differ ({query})"
        # a filter DuckDB pushes into lance_fw's scanner
        rows = con.sql(f"SELECT {ID} FROM lance_scan('{uri}') WHERE {VALUE} IS NULL ORDER BY {ID}").fetchall()
        assert [r[0] for r in rows] == table.filter(pc.is_null(table.column(VALUE))).column(ID).to_pylist(), (
            "DuckDB lance_scan with WHERE v IS NULL"
        )

    def test_pylance_reads_it(self, written: tuple[str, pa.Table]) -> None:
        if not self.pylance_readable:
            pytest.skip("the encoding is not meant to be pylance-readable (pylance_readable = False)")
        lance = pytest.importorskip("lance", reason="pylance is not installed: no second reader")
        uri, table = written
        ds = lance.dataset(uri)
        assert_identical(table, ds.to_table(), "pylance full scan")
        indices = np.random.default_rng(self.seed).integers(0, table.num_rows, self.take_count)
        assert_identical(table.take(pa.array(indices)), ds.take(indices), "pylance take")

    def test_pages_use_the_encoding(self, written: tuple[str, pa.Table]) -> None:
        if self.type_urls is None:
            pytest.skip("type_urls is not set: which pages the plugin writes is not checked")
        uri, _ = written
        urls = leaf_page_type_urls(uri, VALUE)
        assert urls, "no pages found for column v"
        for leaf, found in urls.items():
            unexpected = set(found) - set(self.type_urls)
            assert not unexpected, (
                f"leaf {leaf!r} of column v has pages encoded as {sorted(unexpected)}, "
                f"not with {sorted(self.type_urls)}: the plugin did not take the column"
            )


def leaf_page_type_urls(uri: str, column: str) -> dict[str, list[str]]:
    """Type URL of every page of the leaf columns under top-level ``column``, over every data file
    of a local dataset, by leaf field name."""
    import os

    from lance_fw.file.reader import LanceFileReader
    from lance_fw.io.storage import join_uri, resolve_storage
    from lance_fw.table.paths import DATA_DIR

    storage = resolve_storage(uri)
    out: dict[str, list[str]] = {}
    data = join_uri(uri, DATA_DIR)
    for name in sorted(storage.list_dir(data)):
        if name.startswith(".") or os.path.splitext(name)[1] != ".lance":
            continue
        reader = LanceFileReader(storage, join_uri(data, name))
        try:
            top = next(f for f in reader.schema.fields if f.name == column)
            for field in top.walk():
                if field.children or field.id not in reader.column_of_field:
                    continue
                for page in reader.tail.columns[reader.column_of_field[field.id]].pages:
                    encoding = any_pb2.Any()
                    encoding.ParseFromString(page.encoding.direct.encoding)
                    out.setdefault(field.name, []).append(encoding.type_url)
        finally:
            reader.close()
    return out
