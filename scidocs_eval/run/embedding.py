"""Embeddings files, written from the vectors of an embedding plan, only when asked.

Every vector comes from `run.embedding_plan.encode_plan` (the cache first, the rest encoded, on one process or on
every torchrun process); this module writes them out: `write_plan_outputs` each file of a plan (official JSON
lines, or Parquet, .npz or Arrow by way of a JSON lines staging file) with its settings record, every paper's line
in input order, rank 0 alone under torchrun. `write_embeddings` embeds a list of papers into one file that way
(`embed`, and the public API). An interrupted run loses nothing the cache kept: run it again (`--resume` says so).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import EmbeddingRole
from scidocs_eval.formats.embeddings_output import write_embeddings_file
from scidocs_eval.formats.embeddings_writers import output_kind, write_through_json_lines
from scidocs_eval.formats.provenance import write_settings
from scidocs_eval.formats.safe_output import claim_output
from scidocs_eval.formats.suite import Paper
from scidocs_eval.formats.vector_cache import VectorCache
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.distributed import is_main_process
from scidocs_eval.run.embedding_plan import EmbeddingPlan, GroupRows, Job, encode_plan, plan_file_lines
from scidocs_eval.run.sharded_embedding import process_group

RESUME_NEEDS_CACHE = ("--resume continues from the embedding cache, which this run does not use; drop --no-cache "
                      "(or cache=False)")


def write_embeddings(adapter: Adapter, papers: Sequence[Paper], path: str | os.PathLike[str],
                     resume: bool = False, progress: bool = True, settings: Mapping[str, Any] | None = None,
                     option: str = "output", cache: bool = True, role: EmbeddingRole | None = None) -> Path:
    """Embed `papers` into `path` (official format, one line per paper in the order of `papers`; Parquet, .npz or
    Arrow when its name ends so) through the embedding plan: each distinct input once, the embedding cache first.

    A paper with neither title nor abstract gets ``"embedding": []``, as the reference embedder writes.
    `{path}.settings.json` records the adapter, its parameters, the identity of its weights and `settings`.
    `role`: what the papers are embedded for (default: proximity). An interrupted run is continued by running it
    again: the cache holds what it computed (`resume` asks for that and refuses `cache=False`). Under torchrun
    every process calls this and embeds a share; rank 0 writes `path`.
    """
    if resume and not cache:
        raise ScidocsEvalError(RESUME_NEEDS_CACHE)
    role = role or EmbeddingRole("proximity")
    papers = list(papers)
    if is_main_process():
        claim_output(path, option)
    job = Job(adapter, role, adapter.role_view(role))
    if adapter.transductive:
        job.corpus = papers
    plan = EmbeddingPlan([job], {"papers": GroupRows(0, papers, [job.row(paper) for paper in papers], None)})
    with process_group([adapter]):
        vectors = encode_plan(plan, VectorCache() if cache else None, progress)
    record = {**(settings or {}), **({"role": asdict(role)} if adapter.by_format else {})}
    return write_plan_outputs(plan, vectors, lambda key: Path(path), record, option).get(None, Path(path))


def write_plan_outputs(plan: EmbeddingPlan, vectors: Sequence[Any], path_of: Callable[[str | None], Path],
                       settings: Mapping[str, Any], option: str) -> dict[str | None, Path]:
    """Each file of the plan (`path_of(file_key)`) from the vectors in memory, with its settings record; nothing
    in the torchrun processes but rank 0. Returns {file key: path} of what was written."""
    if not is_main_process():
        return {}
    written = {}
    for key in plan.files:
        job = plan.jobs[plan.groups[plan.files[key][0]].job]
        record = {**settings, "role": asdict(job.role)} if job.adapter.by_format else dict(settings)
        path = claim_output(path_of(key), option)

        def write(target: Path, key: str | None = key, record: Mapping[str, Any] = record,
                  adapter: Adapter = job.adapter) -> None:
            lines = plan_file_lines(plan, vectors, key)
            write_embeddings_file(target, lines.values(), option, paper_ids=lines.keys())
            write_settings(target, output_settings(adapter, record), option)

        if output_kind(path) == "jsonl":
            write(path)
        else:
            write_through_json_lines(path, False, write)
        written[key] = path
    return written


def output_settings(adapter: Adapter, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an embeddings file records of what produced it: the adapter, its parameters, the identity of its
    weights (`Adapter.weights_identity`) and `settings`."""
    identity = adapter.weights_identity()
    return {"adapter": adapter.name, "params": adapter.get_params(), **({"weights": identity} if identity else {}),
            **(settings or {})}


def fitted_settings(corpus: Sequence[Paper], train_corpus: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The `settings` of a baseline's embeddings: the corpus its adapter was fitted on."""
    return {"train_corpus": str(train_corpus) if train_corpus else None, "corpus_sha256": _digest(corpus)}


def _digest(papers: Sequence[Paper]) -> str:
    """sha256 of the papers' ids and texts, in order (what a fitted adapter learnt from)."""
    return hashlib.sha256(orjson.dumps([(p.paper_id, p.title, p.abstract, *p.extra) for p in papers])).hexdigest()
