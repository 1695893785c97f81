"""``lance_fw.sampler``: pylance's ``lance.sampler`` -- feeding a dataset to distributed training.

Samplers split a dataset between the ranks of a cluster (by fragment, by batch-sized row range or
by every Nth row of a filtered scan) and optionally shuffle the pieces. Users rely on two things:
that the ranks together see every row once, and that a seed gives the same order on every run and
every machine. So every path pylance makes deterministic gives pylance's rows in pylance's order
here:

- seeded shuffles draw from a private ``random.Random(seed)``, which yields the permutation that
  pylance's ``random.seed(seed); random.shuffle(...)`` yields -- without reseeding the caller's
  global generator as pylance does;
- pylance's native ``take_scan`` (one batch per row range, ranges over the live rows) is a
  ``take`` of each range;
- ``maybe_sample`` draws from the global numpy / Python generators exactly as pylance does (same
  calls, same order), so a caller who seeds them gets pylance's sample.

Where pylance's own code fails (a filter ``maybe_sample`` cannot run in memory, a rank left without
rows by a filtered ``ShardedBatchSampler``), lance_fw fails with an error of the same builtin class.
Two differences come from the scan below, not from the samplers: a filtered scan (``filter=`` to a
``FragmentSampler``) gives pylance's rows in pylance's order but lance_fw's scanner cuts the batches
elsewhere; and pylance's filtered ``ShardedBatchSampler`` fails when one of its scan batches holds
no more rows than the rank still has to skip, which depends on where pylance cuts them -- lance_fw
deals rows across batch boundaries and yields the rank's rows there.
"""

from __future__ import annotations

import inspect
import math
import random
import warnings
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from heapq import heappush, heappushpop
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_fw._util.refusals import NotImplementedInPylanceError
from lance_fw.api.dataset import LanceDataset, LanceFragment
from lance_fw.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "FragmentSampler",
    "FullScanSampler",
    "PrioritizedItem",
    "Sampler",
    "ShardedBatchSampler",
    "ShardedFixedBatchSampler",
    "ShardedFragmentSampler",
    "maybe_sample",
    "reservoir_sampling",
]

T = TypeVar("T")
Columns = list[str] | dict[str, str]
Batches = Generator[pa.RecordBatch, None, None]

#: Batches a filtered, randomized ``ShardedBatchSampler`` holds back to shuffle (pylance's number:
#: the shuffle order depends on it, so it must match for a seed to give pylance's order)
RESERVOIR_BATCHES = 256
#: Why ``with_row_id`` is ignored without a filter (pylance's warning text)
_ROW_ID_WARNING = "with_row_id is not supported for ShardedBatchSampler"


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    """The whole table as one record batch (pylance yields its samples so)."""
    return table.combine_chunks().to_batches()[0]


def _concat_batches(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    return _one_batch(pa.Table.from_batches(batches))


# -- maybe_sample ----------------------------------------------------------------------------------


def _spread_sample(
    dataset: LanceDataset, n: int, columns: list[str], batch_size: int, max_takes: int
) -> Batches:
    """``n`` rows as ``max_takes`` runs of adjacent rows, one run at a random offset in each equal
    chunk of the dataset: few random reads, yet spread over the whole dataset. The offsets come
    from the global numpy generator, one ``randint`` per chunk, as in pylance."""
    total = len(dataset)
    chunk = total // max_takes
    per_chunk = n // max_takes
    pending: list[pa.RecordBatch] = []
    drawn = 0
    for start in range(0, total, chunk):
        if drawn >= n:
            break  # the division left a remainder: the chunks already gave n rows
        drawn += per_chunk
        size = min(chunk, total - start)
        run = min(per_chunk, size)
        offset = start
        if run < size:
            offset += int(np.random.randint(0, size - run))
        pending.extend(dataset.take(np.arange(offset, offset + run), columns=columns).to_batches())
        if sum(b.num_rows for b in pending) >= batch_size:
            yield _concat_batches(pending)
            pending = []
    if pending:
        yield _concat_batches(pending)


def _not_null_sample(
    dataset: LanceDataset, n: int, columns: list[str], batch_size: int, target_takes: int, filt: str
) -> Batches:
    """``n`` rows passing ``filt`` from shards of adjacent rows read in a random order (the global
    ``random.shuffle``, as pylance). Only ``<column> IS NOT NULL`` on the one loaded column can be
    applied in memory; pylance refuses every other filter and so does lance_fw. As in pylance, rows
    that never fill a whole batch (too few rows pass) are not yielded."""
    total = len(dataset)
    shard_size = math.ceil(n / target_takes)
    shards = list(range(math.ceil(total / shard_size)))
    random.shuffle(shards)  # before the filter check: the global generator advances as in pylance
    if not (len(columns) == 1 and filt.lower() == f"{columns[0]} is not null".lower()):
        raise NotImplementedInPylanceError(f"Can't yet run filter <{filt}> in-memory")
    held: list[pa.Table] = []
    wanted = n
    to_fill = min(batch_size, n)
    for shard in shards:
        start = shard * shard_size
        table = dataset.to_table(
            columns=columns,
            offset=start,
            limit=min(start + shard_size, total) - start,
            batch_size=shard_size,
        )
        table = pc.drop_null(table)
        if table.num_rows == 0:
            continue
        table = table.slice(0, wanted) if table.num_rows > wanted else table
        held.append(table)
        wanted -= table.num_rows
        to_fill -= table.num_rows
        if to_fill <= 0:
            joined = pa.concat_tables(held).combine_chunks()
            yield joined.slice(0, batch_size).to_batches()[0]
            to_fill = min(batch_size, wanted)
            held = []
            if len(joined) > batch_size:
                rest = joined.slice(batch_size)
                held = [rest]
                to_fill -= len(rest)
        if wanted <= 0:
            break


def maybe_sample(
    dataset: str | Path | LanceDataset,
    n: int,
    columns: list[str] | str,
    batch_size: int = 10240,
    max_takes: int = 2048,
    filt: str | None = None,
) -> Batches:
    """Up to ``n`` rows of ``columns`` sampled from ``dataset``, in batches of about ``batch_size``.

    ``n`` at least the row count: a plain scan (``filt`` applied). Otherwise: with ``filt``, shards
    in random order (only ``<column> IS NOT NULL`` runs, as in pylance); ``n > max_takes``: runs of
    adjacent rows spread over the dataset; else ``n`` distinct random rows. The randomness is the
    global numpy / Python generators', drawn as pylance draws them."""
    if isinstance(dataset, (str, Path)):
        import lance_fw

        dataset = lance_fw.dataset(str(dataset))
    if isinstance(columns, str):
        columns = [columns]
    if n >= len(dataset):
        yield from dataset.to_batches(columns=columns, batch_size=batch_size, filter=filt)
    elif filt is not None:
        yield from _not_null_sample(dataset, n, columns, batch_size, max_takes, filt)
    elif n > max_takes:
        yield from _spread_sample(dataset, n, columns, batch_size, max_takes)
    else:
        picked = np.random.choice(len(dataset), n, replace=False)
        for start in range(0, len(picked), batch_size):
            yield _one_batch(dataset.take(picked[start : start + batch_size], columns=columns))


@dataclass(order=True)
class PrioritizedItem(Generic[T]):
    """A heap entry ordered by ``priority`` alone (items need not be comparable)."""

    priority: int
    item: T = field(compare=False)


def reservoir_sampling(stream: Iterable[T], k: int) -> list[T]:
    """``k`` items of ``stream`` (all of them when it is shorter), kept by a heap of random
    priorities from a fresh, unseeded numpy generator: the sample differs on every call."""
    rng = np.random.default_rng()
    heap: list[PrioritizedItem[T]] = []
    for item in stream:
        entry = PrioritizedItem(int(rng.integers(0, k * 2)), item)
        if len(heap) < k:
            heappush(heap, entry)
        else:
            heappushpop(heap, entry)
    return [entry.item for entry in heap]


# -- samplers ---------------------------------------------------------------------------------------


class Sampler(ABC):
    """Sampler over a dataset: ``__call__`` yields ``pyarrow.RecordBatch`` es."""

    @abstractmethod
    def __call__(self, ds: LanceDataset, *args: Any, **kwargs: Any) -> Batches:
        """A generator of record batches from the dataset, taking ``batch_size``, ``columns``,
        ``filter``, ``batch_readahead`` and ``with_row_id`` as keywords (its signature is
        ``FragmentSampler.__call__``'s, set below, with the dataset named ``ds`` as in pylance)."""


class FragmentSampler(Sampler):
    """Sampling by whole fragments: subclasses pick the fragments and their order in
    ``iter_fragments``; the rows are one scan over those fragments."""

    def __call__(  # type: ignore[override]  # pylance names the dataset ``dataset`` here
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns | None = None,
        filter: str | None = None,
        batch_readahead: int = 16,
        with_row_id: bool = False,
        **kwargs: Any,
    ) -> Batches:
        fragments = list(self.iter_fragments(dataset, *args, **kwargs))
        scanner = dataset.scanner(
            batch_size=batch_size,
            columns=columns,
            filter=filter,
            with_row_id=with_row_id,
            batch_readahead=batch_readahead,
            fragments=fragments,
        )
        yield from scanner.to_batches()

    @abstractmethod
    def iter_fragments(
        self, ds: LanceDataset, *args: Any, **kwargs: Any
    ) -> Generator[LanceFragment, None, None]:
        """The fragments to read, in the order to read them."""


def _abstract_call_signature() -> inspect.Signature:
    """pylance's ``Sampler.__call__`` signature: ``FragmentSampler.__call__``'s parameters, the
    dataset named ``ds``. Why: one parameter list in the source, two names in the signatures."""
    signature = inspect.signature(FragmentSampler.__call__)
    params = list(signature.parameters.values())
    params[1] = params[1].replace(name="ds")
    return signature.replace(parameters=params)


Sampler.__call__.__signature__ = _abstract_call_signature()  # type: ignore[attr-defined]


class FullScanSampler(FragmentSampler):
    """Every fragment in dataset order: a plain sequential scan."""

    def iter_fragments(  # type: ignore[override]  # pylance's names: ``dataset``, no ``*args``
        self, dataset: LanceDataset, **kwargs: Any
    ) -> Generator[LanceFragment, None, None]:
        yield from dataset.get_fragments()


def _torch_rank_and_size() -> tuple[int, int]:
    """Rank and world size of the running ``torch.distributed`` group (torch is optional)."""
    import torch

    return int(torch.distributed.get_rank()), int(torch.distributed.get_world_size())


class _RankShard:
    """What the sharded samplers share: this process's ``rank`` among ``world_size``, whether
    (and with which ``seed``) to shuffle, and the epoch ``set_epoch`` sets."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0) -> None:
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    @classmethod
    def from_torch(cls, randomize: bool = False, seed: int = 0) -> Self:
        """The sampler for this process of a ``torch.distributed`` group."""
        rank, world_size = _torch_rank_and_size()
        return cls(rank, world_size, randomize=randomize, seed=seed)


class ShardedFragmentSampler(_RankShard, FragmentSampler):
    """Fragments ``ds.get_fragments()[rank::world_size]`` for this rank, the fragment list first
    shuffled by ``seed`` when ``randomize`` (the epoch does not change that order, as in pylance).
    Cheaper than ``ShardedBatchSampler``: whole fragments are read."""

    def iter_fragments(  # type: ignore[override]  # pylance's names: ``dataset``, no ``*args``
        self, dataset: LanceDataset, **kwargs: Any
    ) -> Generator[LanceFragment, None, None]:
        fragments = dataset.get_fragments()
        if self._randomize:
            random.Random(self._seed).shuffle(fragments)
        yield from fragments[self._rank :: self._world_size]


class ShardedBatchSampler(_RankShard, Sampler):
    """Batches of ``batch_size`` rows dealt round-robin to the ranks.

    Without a filter, rank r reads the live-row ranges ``[i * batch_size, (i + 1) * batch_size)``
    with ``i = r, r + world_size, ...`` (only its own rows), in range order or shuffled by
    ``seed``. With a filter the split cannot be known in advance: every rank scans the filtered
    rows in order, keeps every ``world_size``-th row starting at its rank, and cuts those into
    batches; ``randomize`` then shuffles the batches through a reservoir of
    ``RESERVOIR_BATCHES`` seeded by ``seed + epoch`` (approximately random, bounded memory).
    """

    _len: int

    def __len__(self) -> int:
        try:
            return self._len
        except AttributeError:
            raise AttributeError(
                f"'{type(self).__name__}' has no length: only ShardedFixedBatchSampler knows its "
                "batch count in advance"
            ) from None

    def _rows_of_rank(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Every ``world_size``-th row of the stream, from row ``rank``, whatever the batching.

        pylance fails when the rank gets no row (its ``take`` of an empty index list), and when
        no row passes the filter at all: so does this, with an error of the same builtin class.
        """
        skip, seen, kept = self._rank, 0, 0
        for batch in batches:
            rows = batch.num_rows
            seen += rows
            if skip >= rows:
                skip -= rows
                continue
            picked = batch.take(pa.array(range(skip, rows, self._world_size), pa.int64()))
            skip = (skip - rows) % self._world_size
            kept += picked.num_rows
            yield picked
        if seen == 0:
            raise InvalidArgumentError("no row passes the filter: nothing to shard (pylance fails too)")
        if kept == 0:
            raise NotImplementedInPylanceError(
                f"rank {self._rank} of {self._world_size} gets none of the {seen} filtered rows "
                "(pylance's sampler fails here)"
            )

    def _shard_scan(
        self,
        dataset: LanceDataset,
        batch_size: int,
        columns: Columns | None,
        batch_readahead: int,
        filter: str,
    ) -> Batches:
        """This rank's share of the filtered rows in scan order, cut into ``batch_size`` batches
        (the last one shorter)."""
        scan = dataset.scanner(
            columns=columns, batch_readahead=batch_readahead, filter=filter, scan_in_order=True
        ).to_batches()
        pending: list[pa.RecordBatch] = []
        held = 0
        for picked in self._rows_of_rank(scan):
            pending.append(picked)
            held += picked.num_rows
            if held <= batch_size:
                continue
            joined = _concat_batches(pending)
            start = 0
            while joined.num_rows - start > batch_size:
                yield joined.slice(start, batch_size)
                start += batch_size
            pending, held = [joined.slice(start)], joined.num_rows - start
        yield _concat_batches(pending)

    def _shuffled(self, batches: Batches) -> Batches:
        """``batches`` as they come, or shuffled through a seeded reservoir when ``randomize``."""
        if not self._randomize:
            yield from batches
            return
        # A shuffle without holding the whole share: each batch gets a random priority and enters
        # a heap; once the heap is full, each arrival pushes out the lowest. Priorities come from
        # the seed exactly as pylance draws them, so a seed gives pylance's order.
        rng = random.Random(self._seed + self._epoch)
        heap: list[PrioritizedItem[pa.RecordBatch]] = []
        for batch in batches:
            entry = PrioritizedItem(rng.randint(0, RESERVOIR_BATCHES * 2 - 1), batch)
            if len(heap) < RESERVOIR_BATCHES:
                heappush(heap, entry)
            else:
                yield heappushpop(heap, entry).item
        for entry in heap:
            yield entry.item

    def _ranges(self, total: int, batch_size: int) -> list[tuple[int, int]]:
        """This rank's live-row ranges, shuffled by the seed alone when randomized (pylance does
        not mix the epoch in on this path)."""
        step = self._world_size * batch_size
        ranges = [(s, min(s + batch_size, total)) for s in range(self._rank * batch_size, total, step)]
        if self._randomize:
            random.Random(self._seed).shuffle(ranges)
        return ranges

    def _sample_all(
        self,
        dataset: LanceDataset,
        batch_size: int,
        columns: list[str] | None,
        batch_readahead: int,
    ) -> pa.RecordBatchReader:
        """One batch per range, as pylance's native ``take_scan``; the columns are checked now,
        the rows read as the reader is consumed."""
        if columns is not None and not isinstance(columns, (list, tuple)):
            raise InvalidArgumentTypeError(
                f"argument 'columns': '{type(columns).__name__}' object is not an instance of 'Sequence'"
            )
        ranges = self._ranges(dataset.count_rows(), batch_size)
        wanted = list(columns) if columns is not None else None
        schema = dataset.take(np.arange(0), columns=wanted).schema

        def read() -> Iterator[pa.RecordBatch]:
            for start, end in ranges:
                table = dataset.take(np.arange(start, end), columns=wanted)
                yield _one_batch(table).cast(schema)

        return pa.RecordBatchReader.from_batches(schema, read())

    def __call__(  # type: ignore[override]  # pylance returns a reader without a filter
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: list[str] | None = None,
        filter: str | None = None,
        batch_readahead: int = 16,
        with_row_id: bool | None = None,
        **kwargs: Any,
    ) -> Batches | pa.RecordBatchReader:
        if filter is not None:
            return self._shuffled(self._shard_scan(dataset, batch_size, columns, batch_readahead, filter))
        if with_row_id is not None:
            warnings.warn(_ROW_ID_WARNING, stacklevel=2)
        return self._sample_all(dataset, batch_size, columns, batch_readahead)


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Index batches for a fixed row count (a PyTorch batch sampler): rank r owns the contiguous
    rows ``[r * per_rank, (r + 1) * per_rank)`` with ``per_rank = ceil(total_num_rows /
    world_size)``, cut into ``batch_size`` lists of row indices; ``randomize`` shuffles those
    lists by ``seed + epoch``. ``batch_size`` 0 with rows to cover fails (a division by zero) as
    in pylance. Calling it on a dataset behaves as ``ShardedBatchSampler``."""

    def __init__(
        self,
        rank: int,
        world_size: int,
        randomize: bool = False,
        seed: int = 0,
        batch_size: int = 0,
        total_num_rows: int = 0,
    ) -> None:
        super().__init__(rank, world_size, randomize, seed)
        self._total_num_rows = total_num_rows
        self._batch_size = batch_size
        self._len = self._compute_length()

    def _compute_length(self) -> int:
        if self._batch_size == 0 and self._total_num_rows == 0:
            return 0
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        return math.ceil(per_rank / self._batch_size)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Generator[list[int], None, None]:
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        start = self._rank * per_rank
        end = min(start + per_rank, self._total_num_rows)
        batches = [
            list(range(s, min(s + self._batch_size, end))) for s in range(start, end, self._batch_size or 1)
        ]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches

    @staticmethod
    def from_torch(  # type: ignore[override]  # pylance's takes the batch shape first
        batch_size: int, total_num_rows: int, randomize: bool = False, seed: int = 0
    ) -> ShardedFixedBatchSampler:
        """The sampler for this process of a ``torch.distributed`` group."""
        rank, world_size = _torch_rank_and_size()
        return ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total_num_rows)
