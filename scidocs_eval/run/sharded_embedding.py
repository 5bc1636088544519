"""Embed papers on several processes under torchrun (`embed`, and `baseline` with a transformer adapter).

`torchrun --nproc-per-node N -m scidocs_eval.cli embed ...` starts N processes. Every process plans the same
batches a one-process run makes (texts sorted by token length inside each window, `batch_size` each), and the
batches are dealt to the processes so that each gets about the same number of padded tokens. Each process
embeds its batches on its own device into `OUT.parts/rank-R.jsonl`, flushed batch by batch; after all
finished, rank 0 writes OUT with every paper in input order (through a temporary file and a rename) and
removes the parts. Because every batch holds the same papers as in a one-process run, the vectors are the
same bit for bit (at the same thread count per process).

`--resume` continues the parts of an interrupted run: a batch whose papers are all in its part is skipped, a
torn last line is cut off. The parts folder's manifest records the settings and process count; another
setting or process count is an error. When one process fails, every process stops with that process's error
and OUT is not written; a process that is killed makes torchrun stop the others.
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.embeddings_output import write_embeddings_file
from scidocs_eval.formats.provenance import write_settings
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.distributed import Distributed, init_distributed, leave_process_group
from scidocs_eval.models.encoder import TransformerEncoder
from scidocs_eval.progress import announce, progress_bar

NEEDED_BY = "embedding under torchrun"

MANIFEST = "manifest.json"


def process_count() -> int:
    """The number of processes torchrun started (WORLD_SIZE; 1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def parts_folder(out: str | os.PathLike[str]) -> Path:
    """Where the processes write their parts of `out`."""
    out = Path(out)
    return out.with_name(out.name + ".parts")


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


def _together(dist: Distributed, step: Callable[[], None]) -> None:
    """Run `step` in every process; when one raises, every process raises (the others name its rank and error)."""
    torch = require("torch", NEEDED_BY)

    error: BaseException | None = None
    try:
        step()
    except Exception as exc:  # handed to the other processes, then raised again here
        error = exc
    if dist.world_size > 1:
        messages: list[str | None] = [None] * dist.world_size
        mine = None if error is None else str(error) if isinstance(error, ScidocsEvalError) else \
            f"{type(error).__name__}: {error}"
        torch.distributed.all_gather_object(messages, mine)
        failed = [f"rank {rank} failed: {message}" for rank, message in enumerate(messages) if message]
        if error is None and failed:
            raise ScidocsEvalError("; ".join(failed))
    if error is not None:
        raise error


def _part_lines(path: Path, cut_torn_line: bool) -> dict[str, bytes]:
    """{paper_id: its line} of a part file; a torn last line (an interrupted write) is cut off when allowed."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        if not cut_torn_line:
            raise InputError(path, "the last line is incomplete; rerun with --resume")
        with open(path, "r+b") as handle:
            handle.truncate(len(whole))
    lines = {}
    for number, line in enumerate(whole.splitlines(keepends=True), start=1):
        try:
            lines[orjson.loads(line)["paper_id"]] = line
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise InputError(path, "not a line of this run's embeddings; remove this file to embed its papers "
                             "again", number) from None
    return lines


class _ShardedRun:
    """One process's share of a sharded embedding run (see the module docstring)."""

    def __init__(self, encoder: TransformerEncoder, papers: Sequence[Paper], out: Path, dist: Distributed,
                 settings: dict, resume: bool, progress: bool, option: str):
        self.encoder, self.out, self.dist, self.option = encoder, out, dist, option
        self.papers = list(papers)
        self.with_text = [paper for paper in self.papers if paper.has_text]
        self.parts = parts_folder(out)
        self.resume, self.progress = resume, progress and dist.is_main
        self.texts: list[str] = []
        self.batches: list[np.ndarray] = []
        self.manifest = {"processes": dist.world_size, "papers": len(self.papers), "settings": settings}
        self.resuming = False

    def check_start(self) -> None:
        if self.out.exists():
            raise ScidocsEvalError(f"{self.out} already exists; choose another output or remove it")
        self.resuming = self.parts.exists()
        if self.resuming and not self.resume:
            raise ScidocsEvalError(f"{self.parts} holds the parts of an interrupted run; pass --resume to continue "
                                   "it, or remove the folder to start over")

    def plan(self) -> None:
        """Every process plans all batches (the same ones) and keeps its own share."""
        self.texts = self.encoder.paper_texts(self.with_text)
        digest = hashlib.sha256()
        for paper, text in zip(self.with_text, self.texts):
            digest.update(f"{paper.paper_id}\0{text}\1".encode())
        self.manifest["texts_sha256"] = digest.hexdigest()
        plan = self.encoder.plan_batches(self.texts)
        mine = balance([cost for _, cost in plan], self.dist.world_size)[self.dist.rank]
        self.batches = [plan[index][0] for index in mine]
        manifest = self.parts / MANIFEST
        if self.resuming:
            if not manifest.is_file():
                raise ScidocsEvalError(f"{self.parts} has no {MANIFEST}: not the parts of an embedding run; remove it "
                                       "or choose another output")
            written = orjson.loads(manifest.read_bytes())
            if written != self.manifest:
                raise ScidocsEvalError(f"the parts in {self.parts} were written by {written.get('processes')} "
                                       f"process(es) with other settings or papers than this run "
                                       f"({self.dist.world_size} process(es)); rerun the same command, or remove "
                                       "the folder to start over")

    def start_parts(self) -> None:
        """Rank 0 creates the parts folder and its manifest, after every process checked what was there."""
        if self.dist.is_main and not self.resuming:
            self.parts.mkdir(parents=True)
            (self.parts / MANIFEST).write_bytes(orjson.dumps(self.manifest, option=orjson.OPT_INDENT_2 |
                                                             orjson.OPT_SORT_KEYS))

    def embed_share(self) -> None:
        part = self.parts / f"rank-{self.dist.rank}.jsonl"
        done = set(_part_lines(part, cut_torn_line=True))
        ids = [paper.paper_id for paper in self.with_text]
        todo = [rows for rows in self.batches if any(ids[i] not in done for i in rows)]
        with open(part, "ab") as out, progress_bar(total=sum(map(len, self.batches)), unit="paper",
                                                   desc=f"embedding, {self.dist.world_size} processes",
                                                   enabled=self.progress) as bar:
            bar.update(sum(map(len, self.batches)) - sum(map(len, todo)))
            for rows, vectors in zip(todo, self.encoder.encode_planned(self.texts, todo)):
                out.write(b"".join(format_embedding_line(ids[i], vector) for i, vector in zip(rows, vectors)
                                   if ids[i] not in done))
                out.flush()
                bar.update(len(rows))

    def merge(self) -> None:
        """Rank 0: every paper's line in input order into OUT (atomically), then the parts are removed."""
        if not self.dist.is_main:
            return
        part_files = [self.parts / f"rank-{rank}.jsonl" for rank in range(self.dist.world_size)]
        lines: dict[str, bytes] = {}
        for part in part_files:
            lines.update(_part_lines(part, cut_torn_line=False))
        missing = [paper.paper_id for paper in self.with_text if paper.paper_id not in lines]
        if missing:
            raise ScidocsEvalError(f"{len(missing)} paper(s) are in no part of {self.parts} (the first "
                                   f"{missing[0]!r}); rerun with --resume")
        write_embeddings_file(self.out, (lines[paper.paper_id] if paper.has_text else
                                         format_embedding_line(paper.paper_id, None) for paper in self.papers),
                              self.option, paper_ids=[paper.paper_id for paper in self.papers])
        for written in [*part_files, self.parts / MANIFEST]:
            written.unlink(missing_ok=True)
        self.parts.rmdir()


def embed_sharded(adapter: Adapter, papers: Sequence[Paper], out: str | os.PathLike[str], resume: bool,
                  progress: bool, record: dict, option: str = "--out") -> Path:
    """Embed `papers` into `out` (official format) with every torchrun process; see the module docstring.

    Every process calls this (through `scidocs_eval.run.embedding.write_embeddings`); `out` is complete when
    it returns (rank 0 wrote it). `adapter` must be a transformer adapter ("transformer", "specter", "scibert",
    ...): its tokenizer gives the token counts. A paper with neither title nor abstract gets ``"embedding": []``.
    Rank 0 writes `record` (what produced the file) next to `out`, so a later resume of `out` is checked alike.
    """
    if not isinstance(getattr(type(adapter), "encoder", None), property) or not hasattr(adapter, "device"):
        raise ScidocsEvalError(f"embedding on several processes needs a transformer adapter (transformer, specter, "
                               f"scibert, ...), not {adapter.name!r}; run it without torchrun")
    dist, device = init_distributed(adapter.device)
    announce(f"embedding {len(papers)} papers with {adapter.name} into {out} on {dist.world_size} processes",
             enabled=progress and dist.is_main)
    try:
        adapter.device = device  # before the adapter builds its encoder
        if not isinstance(adapter.encoder, TransformerEncoder):
            raise ScidocsEvalError(f"adapter {adapter.name!r} has no transformers encoder to shard")
        settings = {key: value for key, value in adapter.get_params().items() if key != "device"}
        run = _ShardedRun(adapter.encoder, papers, Path(out), dist,
                          {"adapter": adapter.name, "weights": record.get("weights"), **settings}, resume, progress,
                          option)
        for step in (run.check_start, run.plan, run.start_parts, run.embed_share, run.merge):
            _together(dist, step)
        if dist.is_main:
            write_settings(Path(out), record, option)
    finally:
        if dist.world_size > 1:
            leave_process_group()
    return Path(out)
