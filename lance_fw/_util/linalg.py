"""lance-linalg's float32 / float64 distance kernels, replayed in numpy to the last bit.

pylance reports distances as its Rust kernels round them, and ties at the k-th distance decide
which rows a search returns; so every distance lance_fw reports or ranks by (flat search, the
re-measure of index candidates, the tables of a PQ index) is summed in the kernel's order:
lanes, fused multiply-adds and tails as described below. numpy's own pairwise sums round
otherwise.
"""

from __future__ import annotations

import numpy as np

#: lanes of lance-linalg's float32 kernels (one AVX-512 register of float32)
F32_LANES = 16
#: lanes of its float64 L2 kernel, and of cosine's tail block for float32
F64_LANES = 8


def _cpu_flags() -> frozenset[str]:
    """The CPU features /proc/cpuinfo names (x86 ``flags``; empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


#: lanes of the kernel pylance's IVF_FLAT storage measures float32 l2 / dot with: chosen by the
#: CPU at run time, one register of float32: 16 where the CPU has AVX-512F, 8 (AVX2) on an x86
#: without it (an AVX2-only EPYC: with 16 lanes every such distance differed from pylance's in
#: its last bits). Other architectures keep 16 (not checked on any).
STORED_F32_LANES = 8 if {"avx2"} <= _cpu_flags() and "avx512f" not in _cpu_flags() else F32_LANES
#: float32 L2 / dot use an explicit 8-lane FMA kernel up to this dimension, lane sums above it
NARROW_DIM = 16
#: set bits of every byte value (hamming distance)
POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint32)


def distances(metric: str, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float32 distance of each row of ``vectors`` to ``query`` as lance-linalg computes it.

    Args:
        metric: ``l2`` (squared), ``cosine``, ``dot`` (``1 - x.q``) or ``hamming`` (uint8 rows).
        vectors: (rows, dim) float16/32/64 or uint8.
        query: (dim,).

    Returns:
        (rows,) float32.
    """
    if metric == "hamming":
        return POPCOUNT[np.bitwise_xor(vectors, query)].sum(axis=1, dtype=np.uint32).astype(np.float32)
    if vectors.dtype == np.float64:
        return _float64(metric, vectors, query)
    x = vectors.astype(np.float32, copy=False)
    q = query.astype(np.float32)
    if metric == "cosine":
        return _cosine(x.T, q[:, None])
    if metric == "l2":
        diff = (x - q).T
        return _kernel_sum(diff, diff)
    return np.float32(1.0) - _kernel_sum(x.T, q[:, None])


def table_distances(metric: str, queries: np.ndarray, codewords: np.ndarray) -> np.ndarray:
    """A PQ distance table: each query sub-vector against every codeword of its sub-space, with
    the kernel and summation order of ``distances`` (``l2``: squared; ``dot``: ``1 - q.c``).

    Args:
        metric: ``l2`` or ``dot``.
        queries: (..., m, sub_dim) float32: one sub-vector per sub-space (and per partition).
        codewords: (m, codes, sub_dim) float32.

    Returns:
        (..., m, codes) float32.
    """
    # lanes first and contiguous, so that each lane of the difference is one contiguous block
    q = np.ascontiguousarray(np.moveaxis(queries, -1, 0))[..., None]  # (sub_dim, ..., m, 1)
    c = np.ascontiguousarray(np.moveaxis(codewords, -1, 0))  # (sub_dim, m, codes)
    c = c.reshape(  # (sub_dim, 1.., m, codes)
        c.shape[:1] + (1,) * (q.ndim - c.ndim) + c.shape[1:]
    )
    if metric == "l2":
        return _squared_sum(q - c)
    return np.float32(1.0) - _kernel_sum(*np.broadcast_arrays(q, c))


def stored_distances(metric: str, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float32 distances as pylance's IVF_FLAT storage measures them, a kernel other than the flat
    search's: l2 and dot in ``STORED_F32_LANES`` fused multiply-add lanes over the full chunks of
    as many, tree-summed, then the tail added in order; cosine (rows and query already
    normalised) as ``distances``.

    Args:
        metric: ``l2``, ``cosine`` or ``dot``.
        vectors: (rows, dim) float32.
        query: (dim,) float32.

    Returns:
        (rows,) float32.
    """
    if metric == "cosine":
        return distances(metric, vectors, query)
    if metric == "l2":
        a = b = (vectors - query).T
    else:
        a, b = vectors.T, np.broadcast_to(query[:, None], vectors.T.shape)
    lanes = STORED_F32_LANES
    full = a.shape[0] // lanes * lanes
    total = _total(a.shape[1:], _tree_sum(_fma_lanes(a, b, 0, full, lanes)), _sequential(a[full:] * b[full:]))
    return total if metric == "l2" else np.float32(1.0) - total


def query_norm(vector: np.ndarray) -> np.float32:
    """The norm pylance divides a cosine query by before it searches an index: squares added
    left to right in float32 (a plain iterator sum, not the lane kernel), square root."""
    return np.float32(np.sqrt(_total((), _sequential(vector * vector))))


# -- summation orders ---------------------------------------------------------------------------
# Every helper below reduces over axis 0, the vector's elements ("lanes first"): a slice along it
# is one element of every vector, a contiguous block when the caller lays lanes out first.


def _kernel_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a * b) as lance-linalg's float32 l2 / dot kernels add it: up to 16 elements, an 8-lane
    fused multiply-add register tree-summed, plus the tail in order; above, ``_lane_sum``."""
    dim = len(a)
    if not _fused_after_first(dim):
        return _product_sum(a * b)
    full = dim // F64_LANES * F64_LANES
    return _total(
        a.shape[1:], _tree_sum(_fma_lanes(a, b, 0, full, F64_LANES)), _sequential(a[full:] * b[full:])
    )


def _squared_sum(diff: np.ndarray) -> np.ndarray:
    """``_kernel_sum(diff, diff)`` for a temporary ``diff``, squared in place where the kernel
    rounds every square on its own (no fused step after the first)."""
    if _fused_after_first(len(diff)):
        return _kernel_sum(diff, diff)
    return _product_sum(np.multiply(diff, diff, out=diff))


def _fused_after_first(dim: int) -> bool:
    """Whether the l2 / dot kernel of ``dim`` elements takes a fused multiply-add step after its
    first (which, from zero, is a plain float32 product): then it needs the factors, not their
    rounded products."""
    return F64_LANES < dim // F64_LANES * F64_LANES and dim <= NARROW_DIM


def _product_sum(products: np.ndarray) -> np.ndarray:
    """``_kernel_sum`` of rounded products (a temporary: summed in place) where no fused step
    follows the first: above 16 elements the lane sum, else the first 8 tree-summed plus the
    tail in order."""
    dim = len(products)
    if dim > NARROW_DIM:
        return _lane_sum(products, F32_LANES)
    full = dim // F64_LANES * F64_LANES
    return _total(
        products.shape[1:], _tree_sum(products[:full] if full else None), _sequential(products[full:])
    )


def _total(shape: tuple[int, ...], *parts: np.ndarray | None) -> np.ndarray:
    """The parts present added left to right (an absent part is an exact zero, which would change
    nothing); zeros of ``shape`` when none is."""
    present = [part for part in parts if part is not None]
    if not present:
        return np.zeros(shape, np.float32)
    total = present[0]
    for part in present[1:]:
        total = total + part
    return total


def _sequential(columns: np.ndarray) -> np.ndarray | None:
    """Elements added in order, left to right (numpy's pairwise sum rounds otherwise); None for
    no elements."""
    if not len(columns):
        return None
    total = columns[0].copy()
    for column in columns[1:]:
        total += column
    return total


def _lane_sum(products: np.ndarray, lanes: int) -> np.ndarray:
    """lance-linalg's ``*_scalar`` sum: the tail (dim % lanes) summed in order, ``lanes`` running
    sums over the full chunks, then tail + (the lane sums added in order)."""
    full = len(products) // lanes * lanes
    sums = products[:lanes].copy(order="K") if full else None  # the layout of products: fast adds
    for start in range(lanes, full, lanes):
        sums += products[start : start + lanes]
    lane_total = None if sums is None else _sequential(sums)
    return _total(products.shape[1:], _sequential(products[full:]), lane_total)


def _tree_sum(lanes: np.ndarray | None) -> np.ndarray | None:
    """A SIMD register's horizontal sum: halves added until one lane is left (in place: every
    caller passes a temporary)."""
    if lanes is None:
        return None
    while len(lanes) > 1:
        half = len(lanes) // 2
        lanes = np.add(lanes[:half], lanes[half:], out=lanes[:half])
    return lanes[0]


def _fma_lanes(x: np.ndarray, y: np.ndarray, start: int, stop: int, lanes: int) -> np.ndarray | None:
    """Fused multiply-add accumulation in ``lanes`` float32 lanes over elements [start, stop): one
    rounding per step (the float64 product of two float32 values is exact; the first step, from
    zero, is a float32 product). None for no full chunk."""
    if stop <= start:
        return None
    first = x[start : start + lanes]  # the accumulator takes x's layout (y may be a broadcast)
    acc = np.multiply(first, y[start : start + lanes], out=np.empty_like(first, np.float32))
    for i in range(start + lanes, stop, lanes):
        exact = x[i : i + lanes].astype(np.float64)  # in place below: ~1.6x faster than a + b * c
        exact *= y[i : i + lanes]
        exact += acc
        acc = exact.astype(np.float32)
    return acc


def _norm_l2(vectors: np.ndarray) -> np.ndarray:
    """lance-linalg's generic ``norm_l2``: lane sum of squares, square root."""
    return np.sqrt(_lane_sum(vectors * vectors, F32_LANES))


def _cosine(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``1 - x.q / |q| / |x|`` with lance-linalg's float32 summation orders (``x``: lanes first,
    (dim, rows); ``q``: (dim, 1))."""
    dim, rows = x.shape
    one = np.float32(1.0)
    if dim in (F64_LANES, F32_LANES):  # one register: plain products, tree sums
        q_norm = _norm_l2(q)[0]
        xq, xx = _tree_sum(x * q), _tree_sum(x * x)
        return one - _total((rows,), xq) / q_norm / np.sqrt(_total((rows,), xx))
    q_norm = np.sqrt(_fma_dot(q, q))[0]
    return one - _fma_dot(np.broadcast_to(q, x.shape), x) / q_norm / np.sqrt(_fma_dot(x, x))


def _fma_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Dot products as lance-linalg's float32 cosine kernel sums them: 16-lane FMA over the full
    16-chunks, 8-lane FMA over a following 8-chunk, each tree-summed, then the tail (for a self
    product through ``_norm_l2``: square root, squared again)."""
    dim = x.shape[0]
    wide, narrow = dim // F32_LANES * F32_LANES, dim // F64_LANES * F64_LANES
    sixteen = _tree_sum(_fma_lanes(x, y, 0, wide, F32_LANES))
    eight = _tree_sum(_fma_lanes(x, y, wide, narrow, F64_LANES))
    if x is y:
        tail_norm = _norm_l2(x[narrow:])
        tail = tail_norm * tail_norm
    else:
        tail = _sequential(x[narrow:] * y[narrow:])
    return _total(x.shape[1:], sixteen, eight, tail)


def _float64(metric: str, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float64 columns: sums in float64 (L2 in 8 lanes), the result rounded to float32."""
    if metric == "l2":
        diff = (x - q).T
        return _lane_sum(diff * diff, F64_LANES).astype(np.float32)
    dot = (x @ q).astype(np.float32)
    if metric == "dot":
        return np.float32(1.0) - dot
    q_norm = np.float32(np.sqrt(q @ q))
    return np.float32(1.0) - dot / (q_norm * np.sqrt(np.einsum("ij,ij->i", x, x)).astype(np.float32))
