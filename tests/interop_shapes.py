"""Random table *shapes* for the interop properties (``test_interop_properties``), and the data
built from them.

Hypothesis draws only the shape (schema with a null mode per node, an ``id`` mode, a seed, row
counts, page and file sizes); numpy/pyarrow build the columns from the seed. Drawing every value
with Hypothesis (as ``test_interop_hypothesis`` does) is too slow to reach a second 1024-value
FastLanes block, a second 4096-value mini-block chunk, several pages or several fragments; built
from a seed, an example of 9,000 nested rows costs milliseconds and still shrinks to a small
schema and row count.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st

from test_interop_hypothesis import FLOATS, INTS, SCALARS, Spec, _struct

DEEP = settings.get_current_profile_name() == "deep"

#: Format boundaries the row counts must straddle: FastLanes bit-packing works in blocks of 1024
#: values, 2.1+ mini-block chunks hold up to 4096 values.
FASTLANES_BLOCK = 1024
MINIBLOCK_CHUNK = 4096
#: Ordered small to large: Hypothesis shrinks a failing example towards the first entries.
#: Most counts cross a boundary; 0 and 1 row are edge cases of their own.
ROW_COUNTS = [0, 1, 300, FASTLANES_BLOCK - 1, FASTLANES_BLOCK, FASTLANES_BLOCK + 1, 2 * FASTLANES_BLOCK + 5,
              MINIBLOCK_CHUNK - 1, MINIBLOCK_CHUNK, MINIBLOCK_CHUNK + 1, 6000, 2 * MINIBLOCK_CHUNK + 77]
row_counts = st.sampled_from(ROW_COUNTS)
if DEEP:
    row_counts = row_counts | st.integers(FASTLANES_BLOCK, 5 * MINIBLOCK_CHUNK)
#: ``None``: the writer's default. Small pages give several pages per column even for a few rows.
page_bytes = st.sampled_from([None, 65536, 4096, 512])
rows_per_file = st.sampled_from([None, MINIBLOCK_CHUNK + 3, 2500, FASTLANES_BLOCK, 700])
#: lance_fw is also fed re-chunked input (batches sliced at non-zero offsets).
input_chunks = st.sampled_from([None, 1000, 333])

NULL_MODES = st.sampled_from(["never", "some", "runs", "all"])
#: 2.0 has no struct validity: both engines must refuse null structs, so they are drawn rarely.
STRUCT_NULLS = {"2.0": st.sampled_from(["never"] * 7 + ["some"]), "2.1": NULL_MODES, "2.2": NULL_MODES}

decimal_types = st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: pa.decimal128(p, s)))
leaf_types = st.one_of(st.sampled_from(SCALARS), decimal_types, st.integers(1, 9).map(pa.binary))
numeric_specs = st.builds(Spec, st.sampled_from(INTS + FLOATS), st.sampled_from(["never", "some"]))


def fixed_size_list_of(item: Spec, size: int, nulls: str) -> Spec:
    return Spec(pa.list_(item.type, size), nulls, (item,))


fsl_specs = st.builds(fixed_size_list_of, numeric_specs, st.integers(1, 4), NULL_MODES)
leaf_specs = st.one_of(st.builds(Spec, leaf_types, NULL_MODES), fsl_specs)


def list_of(child: Spec, nulls: str, large: bool = False) -> Spec:
    return Spec((pa.large_list if large else pa.list_)(child.type), nulls, (child,))


def large_list_of(child: Spec, nulls: str) -> Spec:
    return list_of(child, nulls, large=True)


def struct_of(children: list[Spec], nulls: str) -> Spec:
    return _struct(children, nulls)


def _nested(version: str) -> st.SearchStrategy:
    """Random trees of list / large_list / struct over leaves."""
    def extend(children):
        return st.one_of(
            st.builds(list_of, children, NULL_MODES),
            st.builds(large_list_of, children, NULL_MODES),
            st.builds(struct_of, st.lists(children, min_size=1, max_size=3), STRUCT_NULLS[version]),
        )
    return st.recursive(leaf_specs, extend, max_leaves=6)


def list_of_lists(item: Spec, inner_nulls: str, outer_nulls: str, inner_large: bool) -> Spec:
    return list_of(list_of(item, inner_nulls, inner_large), outer_nulls)


def list_of_structs(fields: list[Spec], struct_nulls: str, list_nulls: str) -> Spec:
    return list_of(struct_of(fields, struct_nulls), list_nulls)


def struct_with_list(item: Spec, other: Spec, list_nulls: str, struct_nulls: str) -> Spec:
    return struct_of([list_of(item, list_nulls), other], struct_nulls)


def decimal_struct_list(precision: int, leaf_nulls: str, inner_nulls: str, outer_nulls: str) -> Spec:
    """struct<decimal128, struct<date32, bool>, list<float>>: a nested struct beside a list."""
    inner = struct_of([Spec(pa.date32(), leaf_nulls), Spec(pa.bool_(), leaf_nulls)], inner_nulls)
    return struct_of([Spec(pa.decimal128(precision, 3), leaf_nulls), inner,
                      list_of(Spec(pa.float32(), leaf_nulls), leaf_nulls)], outer_nulls)


def _templates(version: str) -> st.SearchStrategy:
    """Shapes that found bugs before, drawn often on purpose: null items and null inner lists,
    list<struct>, struct<list>, and a struct holding a decimal, a nested struct and a list."""
    leaf = st.builds(Spec, leaf_types, NULL_MODES)
    snulls = STRUCT_NULLS[version]
    return st.one_of(
        st.builds(list_of, leaf, NULL_MODES),
        st.builds(list_of_lists, leaf, NULL_MODES, NULL_MODES, st.booleans()),
        st.builds(list_of_structs, st.lists(leaf, min_size=1, max_size=3), snulls, NULL_MODES),
        st.builds(struct_with_list, leaf, leaf, NULL_MODES, snulls),
        st.builds(decimal_struct_list, st.integers(5, 38), NULL_MODES, snulls, snulls),
    )


def column_specs(version: str) -> st.SearchStrategy:
    return st.one_of(_nested(version), _templates(version))


# --- building the columns from a seed ----------------------------------------------------------------

ALPHABET = np.array(list("abcxyz 019_-.ü∂é漢😀"))
SPECIAL_FLOATS = np.array([np.nan, -np.nan, -0.0, np.inf, -np.inf])
#: Dates and times stay within Python's datetime range, so failure messages (``to_pylist``) work.
DAYS_TO_YEAR_1, DAYS_TO_YEAR_9999 = 719_162, 2_932_896
UNITS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _validity(mode: str, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """Which of ``n`` slots are valid: none null, some (any density), all null, or long runs (so
    whole pages / blocks are null next to pages without nulls)."""
    if mode == "never":
        return None
    if mode == "all":
        return np.zeros(n, bool)
    if mode == "some":
        return rng.random(n) >= rng.choice([0.02, 0.3, 0.7, 0.98])
    mean = float(rng.choice([3, 200, 1500, 5000]))
    runs = rng.geometric(1 / mean, size=n // int(mean) + 8)
    while runs.sum() < n:
        runs = np.concatenate([runs, rng.geometric(1 / mean, size=8)])
    flags = (np.arange(len(runs)) + rng.integers(2)) % 2 == 0
    return np.repeat(flags, runs)[:n]


def _pool(n: int, rng: np.random.Generator, binary: bool) -> list:
    """``n`` random strings (or bytes), mostly short, sometimes long enough to fill a page alone."""
    lengths = np.where(rng.random(n) < 0.05, rng.integers(100, 400, n), rng.integers(0, 13, n))
    ends = np.cumsum(lengths)
    if binary:
        blob = rng.bytes(int(ends[-1]) if n else 0)
    else:
        blob = "".join(rng.choice(ALPHABET, int(ends[-1]) if n else 0))
    return [blob[e - k:e] for e, k in zip(ends.tolist(), lengths.tolist())]


def _strings(t: pa.DataType, n: int, rng: np.random.Generator) -> pa.Array:
    """Few distinct values (dictionary-friendly) or nearly all distinct."""
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t)
    distinct = max(1, min(n, int(rng.choice([1, 5, 300, n or 1]))))
    pool = pa.array(_pool(distinct, rng, binary), t)
    return pool.take(pa.array(rng.integers(0, distinct, n)))


def _ints(dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Full range, a few bits (what bit-packing likes), or one constant."""
    info = np.iinfo(dtype)
    mode = rng.integers(3)
    if mode == 0:
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if mode == 1:
        bits = int(rng.integers(1, 8 * dtype.itemsize))
        return rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(dtype)
    return np.full(n, rng.integers(info.min, info.max, dtype=dtype, endpoint=True), dtype)


def _leaf(t: pa.DataType, n: int, rng: np.random.Generator) -> pa.Array:
    if pa.types.is_integer(t):
        return pa.array(_ints(np.dtype(t.to_pandas_dtype()), n, rng), t)
    if pa.types.is_floating(t):
        scale = 10.0 ** int(rng.integers(-3, 3 if pa.types.is_float16(t) else 9))
        values = (rng.standard_normal(n) * scale).astype(t.to_pandas_dtype())
        if rng.random() < 0.3:  # NaN of both signs, -0.0 and infinities here and there
            spots = rng.random(n) < 0.1
            values[spots] = rng.choice(SPECIAL_FLOATS, int(spots.sum())).astype(values.dtype)
        return pa.array(values, t)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < rng.random(), t)
    if pa.types.is_dictionary(t):
        pool = pa.array(_pool(int(rng.integers(1, 20)), rng, binary=False), t.value_type)
        return pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(pool), n), t.index_type), pool)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _strings(t, n, rng)
    if pa.types.is_fixed_size_binary(t):
        return pa.FixedSizeBinaryArray.from_buffers(t, n, [None, pa.py_buffer(rng.bytes(n * t.byte_width))])
    if pa.types.is_date32(t):
        return pa.array(rng.integers(-DAYS_TO_YEAR_1, DAYS_TO_YEAR_9999, n, dtype=np.int32)).view(t)
    if pa.types.is_timestamp(t):
        bound = min(DAYS_TO_YEAR_1 * 86_400 * UNITS_PER_SECOND[t.unit], 2**62)
        return pa.array(rng.integers(-bound, bound, n, dtype=np.int64)).view(t)
    if pa.types.is_decimal(t):
        digits = rng.integers(0, 10, (n, t.precision))
        signs = np.where(rng.random(n) < 0.5, "-", "")
        return pa.array([Decimal(f"{s}{''.join(map(str, d))}E-{t.scale}") for s, d in zip(signs, digits.tolist())], t)
    raise AssertionError(f"no builder for {t}")


def _list_lengths(n: int, rng: np.random.Generator) -> np.ndarray:
    """Short lists, mostly empty ones, single items, or long lists (only where rows are few, so
    nested lists stay small)."""
    mode = int(rng.integers(4 if n <= 2000 else 3))
    if mode == 0:
        return rng.integers(0, 5, n)
    if mode == 1:
        return np.where(rng.random(n) < 0.8, 0, rng.integers(1, 4, n))
    if mode == 2:
        return np.ones(n, np.int64)
    return rng.integers(0, 40, n)


def build(spec: Spec, n: int, rng: np.random.Generator) -> pa.Array:
    """An array of ``n`` values of ``spec``'s type with ``spec``'s null mode at this level.

    Null lists get no items (as pyarrow's converter does); null structs keep their children."""
    valid = _validity(spec.nulls, n, rng)
    mask = None if valid is None else pa.array(~valid)
    t = spec.type
    if pa.types.is_struct(t):
        children = [build(c, n, rng) for c in spec.children]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        return pa.FixedSizeListArray.from_arrays(build(spec.children[0], n * t.list_size, rng), type=t, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = _list_lengths(n, rng)
        if valid is not None:
            lengths[~valid] = 0
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        items = build(spec.children[0], int(offsets[-1]), rng)
        cls, off_type = (pa.LargeListArray, pa.int64()) if pa.types.is_large_list(t) else (pa.ListArray, pa.int32())
        return cls.from_arrays(pa.array(offsets, off_type), items, type=t, mask=mask)
    dense = _leaf(t, n, rng)
    return dense if valid is None else dense.take(pa.array(np.arange(n), mask=~valid))


def _ids(mode: str, base: int, n: int, rng: np.random.Generator) -> pa.Array:
    """The ``id int64`` column every table starts with: filters and deletes select on it."""
    ids = np.arange(base, base + n, dtype=np.int64)
    if mode == "shuffled":
        ids = rng.permutation(ids)
    return pa.array(ids, mask=(rng.random(n) < 0.1) if mode == "nulls" else None)


#: Arrow type names (``str(type)``) whose constructor is not ``pa.<name>()``.
_TYPE_CONSTRUCTORS = {"float": "float32", "double": "float64", "halffloat": "float16", "bool": "bool_",
                      "date32[day]": "date32"}


def type_source(t: pa.DataType) -> str:
    """Python source that rebuilds ``t`` (so a failing example prints as code to paste)."""
    if pa.types.is_struct(t):
        return f"pa.struct([{', '.join(f'({f.name!r}, {type_source(f.type)})' for f in t)}])"
    if pa.types.is_fixed_size_list(t):
        return f"pa.list_({type_source(t.value_type)}, {t.list_size})"
    if pa.types.is_large_list(t):
        return f"pa.large_list({type_source(t.value_type)})"
    if pa.types.is_list(t):
        return f"pa.list_({type_source(t.value_type)})"
    if pa.types.is_dictionary(t):
        return f"pa.dictionary({type_source(t.index_type)}, {type_source(t.value_type)})"
    if pa.types.is_decimal(t):
        return f"pa.decimal128({t.precision}, {t.scale})"
    if pa.types.is_fixed_size_binary(t):
        return f"pa.binary({t.byte_width})"
    if pa.types.is_timestamp(t):
        return f"pa.timestamp({t.unit!r}, tz={t.tz!r})"
    return f"pa.{_TYPE_CONSTRUCTORS.get(str(t), str(t))}()"


def spec_source(spec: Spec) -> str:
    kids = f", ({''.join(spec_source(c) + ', ' for c in spec.children)})" if spec.children else ""
    return f"Spec({type_source(spec.type)}, {spec.nulls!r}{kids})"


@dataclass(frozen=True)
class Shape:
    """What Hypothesis draws for one example; the data follows from it."""

    specs: tuple
    id_mode: str
    seed: int

    def __repr__(self) -> str:
        """As code: a failing example prints in a form to paste into a recorded case."""
        specs = "".join(spec_source(s) + ", " for s in self.specs)
        return f"Shape(({specs}), {self.id_mode!r}, {self.seed})"

    def table(self, rows: int, part: int = 0, base: int = 0) -> pa.Table:
        """``part``: which write of the example (first, appended); ``base``: its first ``id``.
        Each column has its own random stream, so dropping a column leaves the others' data as is."""
        def rng(column: int) -> np.random.Generator:
            return np.random.default_rng([self.seed, part, column])
        columns = {"id": _ids(self.id_mode, base, rows, rng(0))}
        columns.update({f"c{i}": build(s, rows, rng(i + 1)) for i, s in enumerate(self.specs)})
        table = pa.table(columns)
        table.validate(full=True)  # the input is sound: a writer's failure on it is the writer's
        return table


@st.composite
def shapes(draw, version: str) -> Shape:
    specs = tuple(draw(st.lists(column_specs(version), min_size=1, max_size=4), label="columns"))
    return Shape(specs, draw(st.sampled_from(["sequential", "shuffled", "nulls"])), draw(st.integers(0, 2**32 - 1)))


@dataclass(frozen=True)
class WriteOptions:
    max_page_bytes: int | None
    max_rows_per_file: int | None
    chunk: int | None

    def kwargs(self) -> dict:
        return {k: v for k, v in (("max_page_bytes", self.max_page_bytes),
                                  ("max_rows_per_file", self.max_rows_per_file)) if v is not None}


write_options = st.builds(WriteOptions, page_bytes, rows_per_file, input_chunks)
