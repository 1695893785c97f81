"""Property-based interop at file formats 2.0, 2.1 and 2.2 against pylance 14 (the oracle), at sizes
that cross the format's boundaries, for every operation both engines share.

Each property runs in both directions (pylance writes and lance_fw reads; lance_fw writes and
pylance reads) and checks: full read, take, filtered scan, delete then read (either engine deletes),
append by the other engine then read. Tables come from ``interop_shapes`` (schemas drawn by
Hypothesis, data built from a seed). Example counts follow the Hypothesis profile
(``tests/conftest.py``: ``ci`` by default, ``HYPOTHESIS_PROFILE=deep`` for long local runs).
Set ``INTEROP_FAILURES_DIR`` to keep the (shrunk) input tables of failing examples as Arrow IPC
(read them back with ``pa.ipc.open_file(p).read_all()``, then ``.take(range(n))``: pylance panics on
the 8-byte-aligned buffers of an IPC file for decimal128).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import event, given, reject
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

import lance_fw
from lance_fw.errors import LanceError

from interop_shapes import FASTLANES_BLOCK, MINIBLOCK_CHUNK, WriteOptions, row_counts, shapes, write_options
from test_interop_hypothesis import assert_same

pytestmark = pytest.mark.slow

VERSIONS = ["2.0", "2.1", "2.2"]
ENGINES = ["pylance", "lance_fw"]


# --- the two engines -------------------------------------------------------------------------------

class PylancePanic(AssertionError):
    """pylance raised a Rust panic (a ``BaseException``): a failure to shrink, not to propagate."""


def oracle(call: Callable):
    """Run a pylance call; a panic (e.g. on a file lance_fw wrote) becomes an ordinary failure."""
    try:
        return call()
    except Exception:
        raise
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        raise PylancePanic(f"pylance panicked: {type(exc).__name__}: {exc}") from exc


def other(engine: str) -> str:
    return ENGINES[1 - ENGINES.index(engine)]


def open_with(engine: str, uri: str):
    return oracle(lambda: lance.dataset(uri)) if engine == "pylance" else lance_fw.dataset(uri)


def write_with(engine: str, table: pa.Table, uri: str, version: str, options: WriteOptions,
               mode: str = "create") -> None:
    kwargs = options.kwargs()
    if mode == "create":
        kwargs["data_storage_version"] = version
    if engine == "pylance":  # one unsliced chunk: pylance 14 panics on some sliced nested input
        oracle(lambda: lance.write_dataset(table, uri, mode=mode, **kwargs))
        return
    if options.chunk is not None:
        table = pa.Table.from_batches(table.to_batches(max_chunksize=options.chunk), table.schema)
    lance_fw.write_dataset(table, uri, mode=mode, **kwargs)


#: How pylance words a deliberate refusal of the input (its other write errors are its own bugs,
#: e.g. "null_bit_buffer size too small" for some null structs split across files).
PYLANCE_REFUSAL = "Invalid user input"


def write_or_reject(engine: str, table: pa.Table, uri: str, version: str, options: WriteOptions) -> None:
    """Create the dataset, or, where the writer refuses the input, drop the example after checking
    the other engine. A deliberate pylance refusal: lance_fw must refuse as well, with a typed error.
    lance_fw refusing with a typed error is allowed (it names what it does not support)."""
    try:
        write_with(engine, table, uri, version, options)
        return
    except Exception as exc:  # noqa: BLE001 -- which error it is, is checked right here
        refused = exc
    if engine == "lance_fw":
        assert isinstance(refused, LanceError), f"lance_fw refused the write with an untyped {refused!r}"
        event(f"lance_fw refuses: {type(refused).__name__}")
        reject()
    if PYLANCE_REFUSAL not in str(refused):
        event("pylance fails to write (its bug)")
        reject()
    try:
        write_with("lance_fw", table, uri + ".fw", version, options)
    except LanceError:
        reject()
    raise AssertionError(f"pylance refuses this input, lance_fw writes it: {refused}")


@dataclass
class Step:
    """Names the step a failure happened in (as an exception note), and keeps the inputs of a
    failing example under ``INTEROP_FAILURES_DIR`` (the last, shrunk one overwrites the others)."""

    name: str
    tables: dict

    def __enter__(self) -> "Step":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, UnsatisfiedAssumption):
            return
        exc.add_note(f"step: {self.name}")
        where = os.environ.get("INTEROP_FAILURES_DIR")
        if where:
            os.makedirs(where, exist_ok=True)
            stem = os.path.join(where, f"{self.name}-{type(exc).__name__}".replace(" ", "_").replace("/", "_"))
            for label, table in self.tables.items():
                with pa.ipc.new_file(f"{stem}-{label}.arrow", table.schema) as out:
                    out.write_table(table)
            with open(f"{stem}.txt", "w") as out:
                out.write(f"{self.name}: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}\n")


# --- checks ----------------------------------------------------------------------------------------

def assert_schema(expected: pa.Schema, actual: pa.Schema) -> None:
    """Names, types and nullability at every depth (metadata aside)."""
    assert actual.equals(expected, check_metadata=False), f"schemas differ:\nexpected {expected}\nactual   {actual}"


def _bits_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every float replaced by the unsigned integer of its width (same layout)."""
    if pa.types.is_floating(t):
        return {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[t.bit_width]
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_bits_type(f.type)) for f in t])
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_bits_type(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_bits_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_bits_type(t.value_type)))
    return t


def assert_same_bits(expected: pa.Table, actual: pa.Table) -> None:
    """``assert_same`` with floats compared bit for bit: NaN equals the same NaN, -0.0 is not 0.0
    (Arrow's ``equals`` never finds NaN equal, so the floats are viewed as integers first)."""
    assert [f.type for f in actual.schema] == [f.type for f in expected.schema], \
        f"types differ:\nexpected {expected.schema}\nactual   {actual.schema}"

    def bits(table: pa.Table) -> pa.Table:
        columns = {}
        for name, col in zip(table.column_names, table.columns):
            target = _bits_type(col.type)
            same = target == col.type
            columns[name] = col if same else pa.chunked_array([c.view(target) for c in col.chunks], target)
        return pa.table(columns)
    assert_same(bits(expected), bits(actual))


def coverage_events(rows: int, fragments: int) -> None:
    """For ``--hypothesis-show-statistics``: how many examples cross a block, a chunk, a fragment."""
    event("rows > 4096" if rows > MINIBLOCK_CHUNK else "rows > 1024" if rows > FASTLANES_BLOCK else "rows <= 1024")
    event("fragments: 3+" if fragments >= 3 else f"fragments: {fragments}")


def check_reads(uri: str, expected: pa.Table, batch_size: int) -> tuple:
    """Both engines read ``uri``; pylance must read ``expected`` and lance_fw what pylance reads."""
    py, fw = open_with("pylance", uri), lance_fw.dataset(uri)
    coverage_events(expected.num_rows, len(py.get_fragments()))
    want = oracle(py.to_table)
    assert_same_bits(expected, want)
    got = fw.to_table()
    assert_schema(want.schema, got.schema)
    assert_schema(py.schema, fw.schema)
    assert_same_bits(want, got)
    assert fw.count_rows() == oracle(py.count_rows) == expected.num_rows
    batches = list(fw.to_batches(batch_size=batch_size))
    assert all(b.num_rows <= batch_size for b in batches)
    assert_same_bits(want, pa.Table.from_batches(batches, want.schema) if batches else want.schema.empty_table())
    return py, fw


def take_indices(n: int, seed: int, edges: list[int]) -> list[int]:
    """Random positions, the positions around block/chunk/fragment edges, repeats, any order."""
    if n == 0:
        return []
    rng = np.random.default_rng([seed, 99])
    picks = rng.integers(0, n, int(rng.integers(1, 40)))
    near = [i for e in [0, n - 1, FASTLANES_BLOCK, MINIBLOCK_CHUNK, *edges] for i in (e - 1, e) if 0 <= i < n]
    out = np.concatenate([picks, rng.choice(near, min(len(near), 6)), picks[:3]])
    rng.shuffle(out)
    return out.tolist()


def check_take(py, fw, expected: pa.Table, seed: int, edges: list[int]) -> None:
    indices = take_indices(expected.num_rows, seed, edges)
    want = oracle(lambda: py.take(indices))
    assert_same_bits(expected.take(pa.array(indices, pa.int64())), want)
    assert_same_bits(want, fw.take(indices))


def predicates(rows: int) -> st.SearchStrategy:
    """Filters on ``id``: modulo, ranges ending near block/chunk edges, nulls."""
    edges = st.sampled_from(sorted({0, 1, FASTLANES_BLOCK, MINIBLOCK_CHUNK, rows // 2, rows + 3}))
    return st.one_of(
        st.just("id % 7 = 3"),
        edges.map(lambda k: f"id < {k}"),
        st.tuples(edges, edges).map(lambda ab: f"id >= {min(ab)} AND id < {max(ab)}"),
        st.just("id IS NULL OR id % 3 = 0"),
    )


def check_filter(py, fw, predicate: str, columns: list[str] | None) -> None:
    want = oracle(lambda: py.to_table(columns=columns, filter=predicate))
    got = fw.to_table(columns=columns, filter=predicate)
    assert_schema(want.schema, got.schema)
    assert_same_bits(want, got)
    assert fw.count_rows(filter=predicate) == oracle(lambda: py.count_rows(filter=predicate)) == want.num_rows


def deleted_mask(table: pa.Table, divisor: int) -> np.ndarray:
    """Rows ``id % divisor = 0`` deletes (a null id matches nothing, as in SQL)."""
    ids = table.column("id")
    known = ~ids.is_null().to_numpy(zero_copy_only=False)
    values = ids.fill_null(1).to_numpy(zero_copy_only=False)
    return known & (values % divisor == 0)


def fragment_edges(ds) -> list[int]:
    """Row positions where fragments begin (take and scans must cross them)."""
    counts = [f.count_rows() for f in ds.get_fragments()]
    return np.cumsum(counts).tolist()


@contextmanager
def scratch_uri() -> Iterator[str]:
    """A dataset path removed after the example (pytest's ``tmp_path`` is per test, not per example)."""
    with tempfile.TemporaryDirectory(prefix="interop-") as tmp:
        yield os.path.join(tmp, "ds")


# --- properties ------------------------------------------------------------------------------------

@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_write_read_take_filter(version, writer, data):
    """One engine writes (several pages and fragments); both read the whole table, take random rows
    and scan with a filter, and agree with each other and with the input."""
    shape = data.draw(shapes(version), label="shape")
    rows = data.draw(row_counts, label="rows")
    options = data.draw(write_options, label="options")
    table = shape.table(rows)
    with scratch_uri() as uri:
        tables = {"table": table}
        with Step(f"write_read-{version}-{writer}-writes", tables):
            write_or_reject(writer, table, uri, version, options)
            py, fw = check_reads(uri, table, data.draw(st.integers(1, 5000), label="batch_size"))
        with Step(f"take-{version}-{writer}-writes", tables):
            check_take(py, fw, table, shape.seed, fragment_edges(py))
        predicate = data.draw(predicates(rows), label="filter")
        columns = data.draw(st.none() | st.sampled_from([["id"], ["c0", "id"]]), label="columns")
        with Step(f"filter-{version}-{writer}-writes", tables):
            check_filter(py, fw, predicate, columns)


@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_delete_then_read(version, writer, data):
    """One engine writes, either engine deletes ``id % d = 0``; both read the rest, take from it
    (positions now skip the deleted rows) and scan it with a filter."""
    shape = data.draw(shapes(version), label="shape")
    rows = data.draw(row_counts, label="rows")
    options = data.draw(write_options, label="options")
    deleter = data.draw(st.sampled_from(ENGINES), label="deleter")
    divisor = data.draw(st.sampled_from([5, 2, 1]), label="divisor")
    table = shape.table(rows)
    with scratch_uri() as uri:
        tables = {"table": table}
        with Step(f"delete-{version}-{writer}-writes-{deleter}-deletes", tables):
            write_or_reject(writer, table, uri, version, options)
            predicate = f"id % {divisor} = 0"
            if deleter == "pylance":
                oracle(lambda: lance.dataset(uri).delete(predicate))
            else:
                lance_fw.dataset(uri).delete(predicate)
            expected = table.filter(pa.array(~deleted_mask(table, divisor)))
            py, fw = check_reads(uri, expected, data.draw(st.integers(1, 5000), label="batch_size"))
            check_take(py, fw, expected, shape.seed, fragment_edges(py))
            check_filter(py, fw, data.draw(predicates(rows), label="filter"), None)


@pytest.mark.parametrize("writer", ENGINES)
@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_append_then_read(version, writer, data):
    """One engine writes, the other appends more rows of the same schema (so one dataset holds
    fragments of both writers), optionally one deletes; both read, take and filter."""
    shape = data.draw(shapes(version), label="shape")
    rows = data.draw(row_counts, label="rows")
    more = data.draw(row_counts, label="appended_rows")
    options = data.draw(write_options, label="options")
    deleter = data.draw(st.none() | st.sampled_from(ENGINES), label="deleter")
    first, second = shape.table(rows), shape.table(more, part=1, base=rows)
    with scratch_uri() as uri:
        tables = {"first": first, "appended": second}
        appender = other(writer)
        with Step(f"append-{version}-{writer}-writes-{appender}-appends-{deleter}-deletes", tables):
            write_or_reject(writer, first, uri, version, options)
            write_with(appender, second, uri, version, options, mode="append")
            expected = pa.concat_tables([first, second])
            if deleter is not None:
                predicate = "id % 5 = 0"
                (oracle(lambda: lance.dataset(uri).delete(predicate)) if deleter == "pylance"
                 else lance_fw.dataset(uri).delete(predicate))
                expected = expected.filter(pa.array(~deleted_mask(expected, 5)))
            py, fw = check_reads(uri, expected, data.draw(st.integers(1, 5000), label="batch_size"))
            check_take(py, fw, expected, shape.seed, fragment_edges(py))
            check_filter(py, fw, data.draw(predicates(rows + more), label="filter"), None)
