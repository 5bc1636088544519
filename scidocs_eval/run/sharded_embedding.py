"""A job's rows on every torchrun process: each encodes its share, the vectors are gathered, rank 0 scores.

`torchrun --nproc-per-node N -m scidocs_eval.cli baseline|embed ...` starts N processes that plan the same jobs and
read the same embedding cache (`run.embedding_plan`). The rows of a job the cache does not hold are dealt out in
whole batches of the one-process run: a transformers adapter's batches (texts sorted by token length inside each
window, `TransformerEncoder.plan_batches`), the costliest first to the least loaded process; any other adapter's
rows in contiguous slices. Every vector is therefore the one a single process computes, bit for bit at the same
thread count per process. Each process adds what it computed to the cache every few batches (an interrupted run
is continued from there: the cache is the checkpoint) and hands its vectors to the others (`all_gather_object`);
rank 0 alone scores and writes files. When one process fails, every process stops with that process's error; a
process that is killed makes torchrun stop the others.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.distributed import Distributed, init_distributed, leave_process_group
from scidocs_eval.models.encoder import TransformerEncoder

np = lazy_module("numpy", __name__)

NEEDED_BY = "embedding under torchrun"
T = TypeVar("T")

_GROUP: Distributed = Distributed()
"""This process's place while `process_group` is open (rank 0 of 1 otherwise)."""


def process_count() -> int:
    """The number of processes torchrun started (WORLD_SIZE; 1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def current_group() -> Distributed:
    """This process's place among the processes embedding together (`process_group`)."""
    return _GROUP


@contextmanager
def process_group(adapters: Sequence[Adapter]) -> Iterator[Distributed]:
    """Join the torchrun processes (nothing outside torchrun) while the adapters embed; an adapter with a
    `device` parameter is moved to this process's device (its GPU, or the CPU) before it builds its model."""
    global _GROUP
    if process_count() == 1:
        yield _GROUP
        return
    devices = [adapter.device for adapter in adapters if hasattr(adapter, "device")]
    dist, device = init_distributed(devices[0] if devices else None)
    for adapter in adapters:
        if hasattr(adapter, "device"):
            adapter.device = device
    _GROUP = dist
    try:
        yield dist
    finally:
        _GROUP = Distributed()
        leave_process_group()


def balance(costs: Sequence[int], processes: int) -> list[list[int]]:
    """Indices of `costs` per process: costliest first, each to the least loaded process (ties: lowest rank).

    Returns one ascending list per process; the same costs always give the same split.
    """
    loads = [(0, rank) for rank in range(processes)]
    shards: list[list[int]] = [[] for _ in range(processes)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, rank = heapq.heappop(loads)
        shards[rank].append(index)
        heapq.heappush(loads, (load + costs[index], rank))
    return [sorted(shard) for shard in shards]


def together(dist: Distributed, step: Callable[[], T]) -> T:
    """Run `step` in every process; when one raises, every process raises (the others name its rank and error)."""
    error: BaseException | None = None
    result: Any = None
    try:
        result = step()
    except Exception as exc:  # handed to the other processes, then raised again here
        error = exc
    if dist.world_size > 1:
        mine = None if error is None else str(error) if isinstance(error, ScidocsEvalError) else \
            f"{type(error).__name__}: {error}"
        failed = [f"rank {rank} failed: {message}" for rank, message in enumerate(all_gather(dist, mine)) if message]
        if error is None and failed:
            raise ScidocsEvalError("; ".join(failed))
    if error is not None:
        raise error
    return result


def all_gather(dist: Distributed, value: T) -> list[T]:
    """Every process's `value`, by rank."""
    if dist.world_size == 1:
        return [value]
    torch = require("torch", NEEDED_BY)

    values: list[Any] = [None] * dist.world_size
    torch.distributed.all_gather_object(values, value)
    return values


def share(adapter: Adapter, papers: Sequence[Paper], done: Collection[int],
          dist: Distributed) -> Iterator[tuple[list[int], np.ndarray]]:
    """(positions in `papers`, their vectors) of each batch this process embeds (inside the adapter's role) of the
    papers whose positions are not `done`: all of them on one process, its share under torchrun.

    A transformers adapter's batches are planned over every paper, as a run that had none done makes them, and a
    batch is skipped only when all its papers are done: a resumed run's batches, and so its vectors, are the
    uninterrupted run's bit for bit. Any other adapter embeds the papers not done in its own batches (a model
    object's batches, longest texts first, are again the uninterrupted run's: the done ones are its first batches).
    """
    encoder = getattr(adapter, "encoder", None)
    if isinstance(encoder, TransformerEncoder):
        texts = encoder.paper_texts(papers)
        plan = [(rows, cost) for rows, cost in encoder.plan_batches(texts) if not all(int(r) in done for r in rows)]
        mine = [plan[index][0] for index in balance([cost for _, cost in plan], dist.world_size)[dist.rank]]
        for rows, vectors in zip(mine, encoder.encode_planned(texts, mine)):
            yield [int(row) for row in rows], vectors
        return
    rows = [row for row in range(len(papers)) if row not in done]
    if dist.world_size > 1:
        rows = [rows[int(i)] for i in np.array_split(np.arange(len(rows)), dist.world_size)[dist.rank]]
    position = {id(papers[row]): row for row in rows}
    if rows:
        for batch, vectors in adapter.transform_batches([papers[row] for row in rows]):
            yield [position[id(paper)] for paper in batch], vectors
