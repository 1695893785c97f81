"""Hand-picked tables covering every type file format 2.0 stores (shared by interop tests)."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa

N = 50


def _with_nulls(values: list, every: int = 5) -> list:
    return [None if i % every == 3 else v for i, v in enumerate(values)]


def scalar_columns(n: int = N) -> dict[str, pa.Array]:
    rng = np.random.default_rng(42)
    ints = rng.integers(-100, 100, n).tolist()
    cols: dict[str, pa.Array] = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64()):
        cols[str(t)] = pa.array(_with_nulls(ints), t)
    for t in (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        cols[str(t)] = pa.array(_with_nulls([abs(v) for v in ints]), t)
    cols["float16"] = pa.array(_with_nulls([np.float16(v / 4) for v in ints]), pa.float16())
    cols["float32"] = pa.array(_with_nulls([v / 3 for v in ints]), pa.float32())
    cols["float64"] = pa.array(_with_nulls([v / 7 for v in ints]), pa.float64())
    cols["bool"] = pa.array(_with_nulls([v > 0 for v in ints]), pa.bool_())
    cols["decimal128"] = pa.array(_with_nulls([decimal.Decimal(v) / 100 for v in ints]), pa.decimal128(10, 2))
    cols["decimal256"] = pa.array(_with_nulls([decimal.Decimal(v) / 100 for v in ints]), pa.decimal256(40, 2))
    base = dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
    cols["date32"] = pa.array(_with_nulls([dt.date(2020, 1, 1) + dt.timedelta(days=v) for v in ints]), pa.date32())
    cols["date64"] = pa.array(_with_nulls([dt.date(2020, 1, 1) + dt.timedelta(days=v) for v in ints]), pa.date64())
    cols["time32s"] = pa.array(_with_nulls([abs(v) for v in ints]), pa.time32("s"))
    cols["time32ms"] = pa.array(_with_nulls([abs(v) * 1000 for v in ints]), pa.time32("ms"))
    cols["time64us"] = pa.array(_with_nulls([abs(v) * 10**6 for v in ints]), pa.time64("us"))
    cols["time64ns"] = pa.array(_with_nulls([abs(v) * 10**9 for v in ints]), pa.time64("ns"))
    for unit in ("s", "ms", "us", "ns"):
        stamps = [base + dt.timedelta(seconds=v) for v in ints]
        cols[f"ts_{unit}"] = pa.array(_with_nulls(stamps), pa.timestamp(unit))
        cols[f"ts_{unit}_tz"] = pa.array(_with_nulls(stamps), pa.timestamp(unit, tz="UTC"))
        cols[f"dur_{unit}"] = pa.array(_with_nulls(ints), pa.duration(unit))
    cols["ts_tz_berlin"] = pa.array(_with_nulls([base] * n), pa.timestamp("us", tz="Europe/Berlin"))
    cols["fsb"] = pa.array(_with_nulls([bytes([abs(v) % 256] * 4) for v in ints]), pa.binary(4))
    words = [f"word{v}" * (abs(v) % 4) for v in ints]
    cols["string"] = pa.array(_with_nulls(words), pa.string())
    cols["large_string"] = pa.array(_with_nulls(words), pa.large_string())
    cols["binary"] = pa.array(_with_nulls([w.encode() for w in words]), pa.binary())
    cols["large_binary"] = pa.array(_with_nulls([w.encode() for w in words]), pa.large_binary())
    cols["dict_string"] = pa.array(_with_nulls([f"cat{v % 3}" for v in ints])).dictionary_encode()
    return cols


def nested_columns(n: int = N) -> dict[str, pa.Array]:
    rng = np.random.default_rng(7)
    cols: dict[str, pa.Array] = {}
    lists = [None if i % 7 == 2 else [] if i % 7 == 4 else [int(x) for x in rng.integers(0, 9, i % 5)]
             for i in range(n)]
    cols["list_int"] = pa.array(lists, pa.list_(pa.int32()))
    cols["large_list_int"] = pa.array(lists, pa.large_list(pa.int64()))
    cols["list_nullable_items"] = pa.array([None if v is None else [x if x % 3 else None for x in v] for v in lists],
                                           pa.list_(pa.int16()))
    cols["list_str"] = pa.array([None if v is None else [f"s{x}" for x in v] for v in lists], pa.list_(pa.string()))
    vecs = rng.random((n, 8), dtype=np.float32)
    cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 8)
    cols["vector_nullrows"] = pa.array([None if i % 6 == 1 else vecs[i].tolist() for i in range(n)],
                                       pa.list_(pa.float32(), 8))
    cols["struct"] = pa.StructArray.from_arrays(
        [pa.array(_with_nulls(list(range(n))), pa.int32()), pa.array([f"x{i}" for i in range(n)])], names=["a", "b"])
    cols["list_struct"] = pa.array([None if v is None else [{"p": x, "q": str(x)} for x in v] for v in lists],
                                   pa.list_(pa.struct([("p", pa.int64()), ("q", pa.string())])))
    cols["list_list"] = pa.array([None if v is None else [v, []] for v in lists], pa.list_(pa.list_(pa.int32())))
    cols["struct_nested"] = pa.StructArray.from_arrays(
        [pa.StructArray.from_arrays([pa.array(list(range(n)), pa.int64())], names=["deep"]),
         pa.array(lists, pa.list_(pa.int32()))], names=["inner", "items"])
    return cols


def all_types_table(n: int = N) -> pa.Table:
    return pa.table({**scalar_columns(n), **nested_columns(n)})


def _struct_with_nulls(n: int) -> pa.Array:
    return pa.StructArray.from_arrays(
        [pa.array([i if i % 3 else None for i in range(n)], pa.int32()),
         pa.array([f"s{i}" for i in range(n)])], names=["a", "b"],
        mask=pa.array([i % 5 == 0 for i in range(n)]))


def nested_v21_table(n: int = 300) -> pa.Table:
    """Structs with nulls, list<list>, list<struct>, list<FSL> (needs file version >= 2.1)."""
    rng = np.random.default_rng(3)
    lists = [None if i % 7 == 0 else [[int(x) for x in rng.integers(0, 5, i % 3)] if i % 4 else None, []]
             for i in range(n)]
    return pa.table({
        "s": _struct_with_nulls(n),
        "ll": pa.array(lists, pa.list_(pa.list_(pa.int64()))),
        "ls": pa.array([None if i % 6 == 0 else [{"p": i, "q": None if i % 2 else "x"}] * (i % 3) for i in range(n)],
                       pa.list_(pa.struct([("p", pa.int64()), ("q", pa.string())]))),
        "fsl_in_list": pa.array([None if i % 5 == 0 else [[1.0, 2.0]] * (i % 3) for i in range(n)],
                                pa.list_(pa.list_(pa.float32(), 2))),
    })


def encodings_table(n: int = 100_000) -> pa.Table:
    """What pylance picks per data type (lance-format.md §5.5): one column per case."""
    rng = np.random.default_rng(11)
    hexes = [f"{x:016x}" for x in rng.integers(0, 2**62, n)]
    return pa.table({
        "seq_i32": pa.array(np.arange(n, dtype=np.int32)),
        "rand_small_i64": pa.array(rng.integers(0, 1000, n)),
        "rand_full_i64": pa.array(rng.integers(-2**62, 2**62, n)),
        "const_i32": pa.array(np.full(n, 7, np.int32)),
        "runs": pa.array(np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)),
        "f32": pa.array(rng.random(n, dtype=np.float32)),
        "f64": pa.array(rng.random(n)),
        "bool": pa.array(rng.random(n) > 0.5),
        "null10": pa.array(np.arange(n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "all_null": pa.nulls(n, pa.int32()),
        "low_card_str": pa.array(rng.choice(["red", "green", "blue", "cyan"], n)),
        "hex": pa.array(hexes),
        "list_i32": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "fsl8": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("us")),
        "struct": pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.random(n))],
                                             names=["a", "b"]),
    })


def wide_table(n: int = 2000) -> pa.Table:
    """Values of >= 256 bytes (full-zip): long text, vectors, blobs, lists of them."""
    rng = np.random.default_rng(5)
    return pa.table({
        "text": pa.array([None if i % 9 == 0 else "".join(rng.choice(list("abcdef"), 600 + i % 600)) for i in range(n)]),
        "vec128": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 128, dtype=np.float32)), 128),
        "blob": pa.array([bytes(rng.integers(0, 4, 40_000, dtype=np.uint8)) if i % 50 == 0 else None
                          for i in range(n)], pa.large_binary()),
        "list_text": pa.array([None if i % 4 == 0 else ["x" * 300] * (i % 3) for i in range(n)],
                              pa.list_(pa.string())),
        "list_vec": pa.array([None if i % 3 == 0 else [[1.5] * 128] * (i % 3) for i in range(n)],
                             pa.list_(pa.list_(pa.float32(), 128))),
        "vec_null_items": pa.array([None if i % 2 else [None if j % 5 == 0 else 1.0 for j in range(128)]
                                    for i in range(n)], pa.list_(pa.float32(), 128)),
        "empty_or_null_lists": pa.array([None if i % 2 else [] for i in range(n)], pa.list_(pa.int32())),
    })


def map_table(n: int = 200) -> pa.Table:
    return pa.table({"m": pa.array([[("a", 1), ("b", None)], [], None, [("c", 3)]] * (n // 4),
                                   pa.map_(pa.string(), pa.int32()))})
