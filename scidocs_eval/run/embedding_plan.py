"""The embedding plan: every text the chosen tasks need, embedded once per role as the model sees it, in memory.

`plan_embedding` reads what each task declares (`evaluation.papers.embedding_needs`: each embeddings group's
papers and role) for every task of every chosen benchmark, and merges them into jobs, one per (adapter, the
adapter's view of the role: `Adapter.role_view`): "" for a model that embeds every role alike, the input format
for one that embeds by format, a retrieval side's prompt type for a model object with prompts. Inside a job each
distinct input (`Adapter.input_key`: the text, and the id for a model that reads ids) is one row, so SciDocs,
SciRepEval's `scidocs_*` configs and MTEB's SCIDOCS holding the same paper embed it once. A transductive adapter
(SGC) embeds every paper of the fit corpus together, as it must.

`encode_plan` encodes each job's rows the cache does not hold (`formats.vector_cache`, keyed by
`Adapter.cache_fingerprint` and checked by the probe texts), adding them to the cache every few batches (the cache
is the checkpoint of an interrupted run; under torchrun each process encodes a share, `run.sharded_embedding`), and
`group_stores` gives each group an `EmbeddingStore` built from the arrays: the scoring step reads vectors in memory.
Files are a side output (`run.embedding.write_plan_outputs`), written only when asked, one a `file_key`, every
paper's line in input order. This is the one road from a model to vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import EmbeddingRole, GroupNeed, fit_papers, metadata_files, text_fields
from scidocs_eval.formats.embeddings import EmbeddingStore, format_embedding_line
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.formats.vector_cache import VectorCache
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.progress import announce, progress_bar
from scidocs_eval.run.sharded_embedding import all_gather, current_group, share, together

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

NO_TEXT = -1
"""The row of a paper with neither title nor abstract: an empty embedding, as the reference embedder writes."""


@dataclass
class Job:
    """The distinct inputs one adapter embeds in one view of a role: `papers[i]` has `keys[i]`."""

    adapter: Adapter
    role: EmbeddingRole
    view: str
    papers: list[Paper] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)
    index: dict[bytes, int] = field(default_factory=dict)
    corpus: list[Paper] = field(default_factory=list)
    """a transductive adapter's papers embedded together (the fit corpus, those without text too)."""

    def row(self, paper: Paper) -> int:
        """The row of `paper`'s input, added if new; `NO_TEXT` for a paper without text."""
        if not paper.has_text:
            return NO_TEXT
        key = self.adapter.input_key(paper)
        row = self.index.get(key)
        if row is None:
            row = self.index[key] = len(self.papers)
            self.papers.append(paper)
            self.keys.append(key)
        return row


@dataclass
class GroupRows:
    """An embeddings group's papers: which job embeds them, and each id's row in it (`NO_TEXT`: empty)."""

    job: int
    papers: list[Paper]
    rows: list[int]
    file_key: str | None
    """which file the group goes to when files are asked for (`EmbeddingPlan.files`)."""

    @property
    def ids(self) -> list[str]:
        return [paper.paper_id for paper in self.papers]


@dataclass
class EmbeddingPlan:
    jobs: list[Job]
    groups: dict[str, GroupRows]

    @property
    def files(self) -> dict[str | None, list[str]]:
        """{file key: its groups}: None for one file for every group of a model that embeds them alike, an input
        format for one that embeds by format, a group's name for a group embedded apart (its own texts, or a
        model given per group)."""
        out: dict[str | None, list[str]] = {}
        for group, rows in self.groups.items():
            out.setdefault(rows.file_key, []).append(group)
        return out

    def distinct_inputs(self) -> int:
        return sum(len(job.papers) for job in self.jobs)


def plan_embedding(suite: Suite, names: Sequence[str], needs: Mapping[str, GroupNeed],
                   adapter_of: Callable[[str], Adapter], per_group: bool = False) -> EmbeddingPlan:
    """The jobs that embed every group of `needs` (from `embedding_needs(suite, names, split)`), each group by
    `adapter_of(group)`; `per_group`: a model given per group (each group its own file).

    The papers of metadata files take their text from `Suite.papers` over the metadata files of their job, so an id
    has one text in a job (the first file's, with `Suite.papers`' warning when two differ) and one line in a file.
    """
    jobs: dict[tuple[int, str, str], Job] = {}
    placed: dict[str, tuple[tuple[int, str, str], str | None]] = {}
    for group, need in needs.items():
        adapter = adapter_of(group)
        view = adapter.role_view(need.role)
        apart = per_group or not need.metadata_file
        part = group if need.papers and adapter.transductive else ""
        key = (id(adapter), view, part)
        jobs.setdefault(key, Job(adapter, need.role, view))
        file_key = group if apart else (need.role.input_format if adapter.by_format else None)
        placed[group] = key, file_key
    texts: dict[tuple[int, str, str], dict[str, Paper]] = {}
    for key, job in jobs.items():
        files = {needs[group].metadata_file for group, (k, _) in placed.items() if k == key} - {""}
        if job.adapter.transductive and files:
            papers = fit_papers(suite, names)  # its vectors depend on the papers embedded together: all of them
        else:
            papers = suite.papers(tuple(f for f in metadata_files(suite, names) if f in files), text_fields(names)) \
                if files else []
        texts[key] = {paper.paper_id: paper for paper in papers}
        if job.adapter.transductive:
            job.corpus = papers
            for paper in papers:
                job.row(paper)
    groups: dict[str, GroupRows] = {}
    order = list(jobs)
    for group, need in needs.items():
        key, file_key = placed[group]
        job = jobs[key]
        if need.papers:
            papers = list(need.papers)
        else:
            wanted = set(suite.metadata(need.metadata_file)) if need.ids is None else need.ids
            papers = [paper for paper_id, paper in texts[key].items() if paper_id in wanted]
        groups[group] = GroupRows(order.index(key), papers, [job.row(p) for p in papers], file_key)
    return EmbeddingPlan(list(jobs.values()), groups)


CHECKPOINT_BATCHES = 20
"""A long encode adds its vectors to the cache every this many batches: an interrupted run loses at most these."""


def encode_plan(plan: EmbeddingPlan, cache: VectorCache | None, progress: bool = True,
                checkpoint_batches: int | None = None) -> list[np.ndarray]:
    """Each job's vectors, row i for its input i: read from `cache` where it holds them (and the model still embeds
    the entry's probe texts as it did), the rest encoded (each distinct input once, inside `adapter.embedding_role`;
    under torchrun each process its share, `run.sharded_embedding`) and added to the cache every
    `checkpoint_batches` batches (default `CHECKPOINT_BATCHES`)."""
    return [_encode_job(job, cache, progress, checkpoint_batches or CHECKPOINT_BATCHES) for job in plan.jobs]


PROBE_PAPERS = (
    Paper("scidocs-eval-probe-1", "Graph neural networks", "We study message passing on citation graphs."),
    Paper("scidocs-eval-probe-2", "A short title", ""),
    Paper("scidocs-eval-probe-3", "Long documents and truncation",
          " ".join(f"Sentence {i} of a long abstract about embeddings, retrieval and citation prediction."
                   for i in range(60))),
)
"""Texts every cached entry's model embeds again before its vectors are served (`probe_note`): a short one, a
title alone, and one longer than any usual maximum sequence length (so a changed truncation shows)."""
PROBE_TOLERANCE = 1e-5
"""How far (relative to the largest value of the cached probe vectors) a probe vector may move and still be the
same model: float32 noise between two calls is about 1e-7; a changed setting or weight moves it by far more."""


def embed_rows(adapter: Adapter, papers: Sequence[Paper]) -> np.ndarray:
    """(len(papers), dim) vectors of `papers` in their order, whatever order the adapter's batches come in."""
    position = {id(paper): row for row, paper in enumerate(papers)}
    vectors: np.ndarray | None = None
    for batch, batch_vectors in adapter.transform_batches(list(papers)):
        if vectors is None:
            vectors = np.empty((len(papers), batch_vectors.shape[1]), dtype=batch_vectors.dtype)
        vectors[[position[id(paper)] for paper in batch]] = batch_vectors
    assert vectors is not None
    return vectors


def probe_note(cached: np.ndarray | None, now: np.ndarray) -> str | None:
    """What differs between the probe vectors cached with an entry and the model's now; None: the same model."""
    if cached is None:
        return "the entry has no probe vectors to check it with"
    if cached.shape != now.shape:
        return f"the model now makes {now.shape[1]}-d vectors, the cached ones are {cached.shape[1]}-d"
    moved = float(np.max(np.abs(now.astype(np.float64) - cached)))
    limit = PROBE_TOLERANCE * max(float(np.max(np.abs(cached))), 1e-12)
    if moved > limit:
        return (f"the probe texts now embed up to {moved:.2e} away from the cached vectors (tolerance {limit:.1e}): "
                "a weight or setting the cache key does not cover changed")
    return None


def _encode_job(job: Job, cache: VectorCache | None, progress: bool, checkpoint_batches: int) -> np.ndarray:
    dist = current_group()
    fingerprint = job.adapter.cache_fingerprint() if cache is not None else None
    found, probe = together(dist, lambda: _cached(job, cache, fingerprint))
    found = {row: found[row] for row in set.intersection(*map(set, all_gather(dist, list(found))))}
    todo = [row for row in range(len(job.papers)) if row not in found]
    vectors: np.ndarray | None = None
    if found:
        first = next(iter(found.values()))
        vectors = np.empty((len(job.papers), first.shape[0]), dtype=first.dtype)
        for row, vector in found.items():
            vectors[row] = vector
    if not todo:
        return vectors if vectors is not None else np.zeros((0, 0), dtype=np.float32)
    announce(f"embedding {len(todo)} texts with {job.adapter.name}" + (f" ({len(found)} from the embedding cache)"
                                                                      if found else "")
             + (f" on {dist.world_size} processes" if dist.world_size > 1 else ""), enabled=progress and dist.is_main)

    def encode() -> tuple[list[int], np.ndarray | None]:
        done: list[int] = []
        pending: list[int] = []
        mine: np.ndarray | None = None
        try:
            with job.adapter.embedding_role(job.role), progress_bar(
                    total=len(todo), unit="paper", desc=f"embedding with {job.adapter.name}",
                    enabled=progress and dist.is_main) as bar:
                for batch, (rows, batch_vectors) in enumerate(share(job.adapter, job.papers, found, dist), start=1):
                    if mine is None:
                        mine = np.empty((len(job.papers), batch_vectors.shape[1]), dtype=batch_vectors.dtype)
                    elif batch_vectors.shape[1] != mine.shape[1]:
                        raise ScidocsEvalError(f"{job.adapter.name}: a batch of {batch_vectors.shape[1]}-d vectors "
                                               f"after {mine.shape[1]}-d ones")
                    mine[rows] = batch_vectors
                    pending += rows
                    bar.update(len(rows) * dist.world_size)
                    if batch % checkpoint_batches == 0:
                        _checkpoint(job, cache, fingerprint, probe, mine, pending)
                        done, pending = done + pending, []
        finally:  # what was computed is kept, also when a later batch fails
            _checkpoint(job, cache, fingerprint, probe, mine, pending)
            done += pending
        return done, mine

    done, mine = together(dist, encode)
    if vectors is None and mine is not None and dist.world_size == 1:
        return mine  # every row computed here: the matrix as it is, not a copy
    for rows, computed in all_gather(dist, (done, None if mine is None else mine[done])):
        if computed is None:
            continue
        if vectors is None:
            vectors = np.empty((len(job.papers), computed.shape[1]), dtype=computed.dtype)
        vectors[rows] = computed
    assert vectors is not None
    return vectors


def _cached(job: Job, cache: VectorCache | None, fingerprint: str | None) -> tuple[
        dict[int, np.ndarray], tuple[list[bytes], np.ndarray] | None]:
    """({row: vector} the cache holds for the job, the probe's keys and vectors) after the probe check: a probe
    that moved drops the entry, with a warning line saying what changed."""
    if cache is None or fingerprint is None or not job.papers:
        return {}, None
    found = cache.get(fingerprint, job.view, job.keys)
    with job.adapter.embedding_role(job.role):
        probe = [job.adapter.input_key(p) for p in PROBE_PAPERS], embed_rows(job.adapter, PROBE_PAPERS)
    if found and (note := probe_note(cache.probe(fingerprint, job.view, probe[0]), probe[1])) is not None:
        log.warning("embedding cache: %d cached vector(s) of %s%s not used: %s", len(found), job.adapter.name,
                    f" ({job.view})" if job.view else "", note)
        cache.drop(fingerprint, job.view)
        found = {}
    return found, probe


def _checkpoint(job: Job, cache: VectorCache | None, fingerprint: str | None,
                probe: tuple[list[bytes], np.ndarray] | None, vectors: np.ndarray | None, rows: list[int]) -> None:
    """Add the vectors of `rows` to the cache (one segment; the matrix itself when it is every row)."""
    if cache is None or fingerprint is None or vectors is None or not rows:
        return
    if len(rows) == len(job.papers):
        cache.put(fingerprint, job.view, job.keys, vectors, probe)
    else:
        cache.put(fingerprint, job.view, [job.keys[row] for row in rows], vectors[rows], probe)


def embed_papers(adapter: Adapter, papers: Sequence[Paper], corpus: Sequence[Paper] = (),
                 role: EmbeddingRole | None = None) -> np.ndarray:
    """(len(papers), dim) vectors of `papers` (each with text) through a one-job plan, without the cache (what
    `--tune` scores: its candidates are fitted, so never cached); a transductive adapter embeds them together with
    `corpus`."""
    role = role or EmbeddingRole("proximity")
    job = Job(adapter, role, adapter.role_view(role))
    if adapter.transductive:
        job.corpus = list(corpus)
        for paper in job.corpus:
            job.row(paper)
    rows = [job.row(paper) for paper in papers]
    return encode_plan(EmbeddingPlan([job], {}), None, progress=False)[0][rows]


def group_stores(plan: EmbeddingPlan, vectors: Sequence[np.ndarray],
                 dtype: np.dtype | type | str = "float32") -> dict[str, EmbeddingStore]:
    """{group: an EmbeddingStore of its papers}, built from the job arrays (an id without text: empty)."""
    stores = {}
    for group, rows in plan.groups.items():
        job_vectors = vectors[rows.job]
        index = np.asarray(rows.rows, dtype=np.int64)
        empty = index == NO_TEXT
        dim = job_vectors.shape[1] if job_vectors.size else 0
        if len(job_vectors):  # one gather (row 0 stands in for an empty paper's, then zeroed), cast only if asked
            matrix = job_vectors.take(np.where(empty, 0, index), axis=0).astype(dtype, copy=False)
            matrix[empty] = 0
        else:
            matrix = np.zeros((len(index), dim), dtype=dtype)
        stores[group] = EmbeddingStore(rows.ids, matrix, empty)
    return stores


def plan_file_lines(plan: EmbeddingPlan, vectors: Sequence[np.ndarray], file_key: str | None) -> dict[str, bytes]:
    """{paper id: its official JSON line} of the file `file_key`: every paper of its groups once, in input order."""
    seen: dict[str, bytes] = {}
    for group in plan.files[file_key]:
        rows = plan.groups[group]
        for paper_id, row in zip(rows.ids, rows.rows):
            if paper_id not in seen:
                seen[paper_id] = format_embedding_line(paper_id, None if row == NO_TEXT else vectors[rows.job][row])
    return seen
