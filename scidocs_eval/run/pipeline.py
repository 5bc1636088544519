"""One way from a model to a score: fit, plan the embedding, encode each distinct text once, score, record.

`embed_and_score` is what `baseline`, `evaluate_model` and SPECTER2's per-group adapters run. It takes an adapter,
or {embeddings group: adapter} when each group has a model of its own; it fits each adapter on every paper of the
metadata files the tasks read (or a separate corpus), plans the embedding of every task of every chosen benchmark
(`scidocs_eval.run.embedding_plan`: each distinct (text, role as the model sees it) once, the embedding cache
first), scores the vectors in memory with `evaluate` and records what embedded them as the result's `ModelInfo`.
Embeddings files are written from those vectors only when asked (`embeddings_path`), every paper's line in input
order. There is one road to vectors: under torchrun every process embeds a share of each job's missing rows and
rank 0 scores (`run.sharded_embedding`); an interrupted run is continued from the embedding cache, which a long
encode fills every few batches (`resume` only asks for that).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.contamination import file_sha256
from scidocs_eval.evaluation.papers import EmbeddingRole, GroupNeed, embedding_needs, fit_papers
from scidocs_eval.evaluation.results import ModelInfo, RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.provenance import WRITTEN_FOR
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output, given_as
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.formats.vector_cache import VectorCache
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, adapter_inputs, get_adapter
from scidocs_eval.models.distributed import is_main_process
from scidocs_eval.progress import silenced
from scidocs_eval.run.embedding import RESUME_NEEDS_CACHE, fitted_settings, write_embeddings, write_plan_outputs
from scidocs_eval.run.embedding_plan import encode_plan, group_stores, plan_embedding
from scidocs_eval.run.fit_inputs import fit_adapter
from scidocs_eval.run.sharded_embedding import process_group

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

Model = Adapter | Mapping[str, Adapter]
"""One adapter for every embeddings group, or {group: adapter}."""
EmbeddingsPath = Callable[[str | None], Path]
"""Where the embeddings go: called with None for one file for every group, else with each group's name."""


def model_info(model: Model, train_corpus: str | os.PathLike[str] | None = None,
               call: Mapping[str, Any] | None = None) -> ModelInfo:
    """What the results file records of `model` (a mapping: its first adapter's name and parameters, and which
    task adapter embedded each group)."""
    adapters = model if isinstance(model, Mapping) else {}
    first = next(iter(adapters.values())) if adapters else model
    assert isinstance(first, Adapter)
    groups = {group: str(getattr(adapter, "task_adapter", adapter.name)) for group, adapter in adapters.items()}
    return ModelInfo(name=first.name, paper_row=None if adapters else first.paper_row, params=first.get_params(),
                     best_params=dict(getattr(first, "best_params_", {})), tuning=list(getattr(first, "scores_", [])),
                     train_corpus=str(train_corpus) if train_corpus else None, groups=groups,
                     row_detail=first.row_detail(), row_note=first.row_note(), call=dict(call or {}))


def embed_and_score(
    model: Model,
    config: RunConfig,
    embeddings_path: EmbeddingsPath | None = None,
    *,
    name: str,
    train_corpus: Sequence[Paper] | None = None,
    train_corpus_path: str | os.PathLike[str] | None = None,
    resume: bool = False,
    vector_cache: VectorCache | None = None,
    call: Mapping[str, Any] | None = None,
    option: str = "output",
) -> RunResult | None:
    """Fit `model`, embed what the tasks need (each distinct text once per role), score; None in the torchrun
    processes but rank 0.

    Args:
        model: an adapter, or {embeddings group: adapter} (each group's papers embedded by its own adapter).
        config: what is scored and how (`RunConfig`: data, tasks, benchmarks, planned and embedded together,
            split, ...; `cache`: the embedding cache across runs; `output`: the results JSON).
        embeddings_path: where each embeddings file goes (see `EmbeddingsPath`); None: no files.
        name: the model's name in results and tables.
        train_corpus: what a fitted adapter learns from (default: every paper of the tasks' metadata files);
            `train_corpus_path` names it in the results.
        resume: continue an interrupted run: its vectors come from the embedding cache (as every run's do; with
            `config.cache` off this is an error).
        vector_cache: where the embedding cache is when `config.cache` (default: `VectorCache()`'s folder).
        call: how a model object was called (recorded in `ModelInfo.call`).
        option: the option naming the embeddings files, for messages (`--out-dir`).
    """
    names = config.task_names()
    progress = config.progress
    started = time.perf_counter()
    suite = resolve_suite(config.data)
    adapters = dict(model) if isinstance(model, Mapping) else None
    built = config.built_tasks()
    needs = embedding_needs(suite, {name: built[name] for name in names}, config.split)
    if adapters is not None and (absent := sorted(set(needs) - set(adapters))):
        raise ScidocsEvalError(f"no adapter given for the {', '.join(absent)} embeddings group(s) the tasks need")
    models = list({id(a): a for a in (adapters.values() if adapters else [model])}.values())  # type: ignore[union-attr]
    # the fit corpus is read only where something uses it: a fit, or the files' settings (which record its digest)
    wanted = embeddings_path is not None or any(a.requires_fit or a.citation_files() is not None for a in models)
    corpus = list(train_corpus) if train_corpus is not None else _fit_corpus(suite, names, needs) if wanted else []
    for adapter in models:
        if adapter.requires_fit:
            log.info("fitting %s on %d papers", adapter.name, len(corpus))
        with silenced(not progress):  # an adapter's own bars (its --tune grid) follow `progress` too
            fit_adapter(adapter, corpus, suite)
    fitted = time.perf_counter()
    settings = {**fitted_settings(corpus, train_corpus_path),
                WRITTEN_FOR: {"tasks": list(names), "split": config.split, "data": str(suite.root)}}
    plan = plan_embedding(suite, names, needs, (lambda group: adapters[group]) if adapters is not None
                          else (lambda group: model), per_group=adapters is not None)  # type: ignore[arg-type,return-value]
    log.info("embedding plan: %d distinct texts in %d job(s) for %d group(s)", plan.distinct_inputs(),
             len(plan.jobs), len(plan.groups))
    if resume and not config.cache:
        raise ScidocsEvalError(RESUME_NEEDS_CACHE)
    with process_group(models):
        vectors = encode_plan(plan, (vector_cache or VectorCache()) if config.cache else None, progress)
    if not is_main_process():
        return None
    written = write_plan_outputs(plan, vectors, embeddings_path, settings, option) if embeddings_path else {}
    stores = group_stores(plan, vectors, np.dtype(config.dtype))
    digests = {key: file_sha256(path) for key, path in written.items()}
    for group, store in stores.items():  # the results name the file a group's vectors were also written to
        key = plan.groups[group].file_key
        if key in written:
            store.source, store.sha256 = str(written[key]), digests[key]
    embedded = time.perf_counter()
    result = evaluate(dict(stores), config=replace(config, data=suite, output=None), model=name)
    result.model_info = model_info(model, train_corpus_path, call)
    result.timings.update(fit=round(fitted - started, 3), embed=round(embedded - fitted, 3))
    if config.output is not None:
        result.save(config.output)
    return result


def _fit_corpus(suite: Suite, names: Sequence[str], needs: Mapping[str, GroupNeed]) -> list[Paper]:
    """What a fitted adapter learns from: every paper of the tasks' metadata files, then the texts of the tasks'
    own that are not among them (a search's queries are in its metadata file already)."""
    corpus = fit_papers(suite, names)
    known = set(corpus)
    return corpus + [paper for need in needs.values() for paper in need.papers if paper not in known]


def embed_metadata(adapter_name: str, params: Mapping[str, Any], metadata: str | os.PathLike[str],
                   out: str | os.PathLike[str], *, resume: bool = False, progress: bool = True,
                   option: str = "output", input_format: str = "proximity") -> tuple[Path, int]:
    """`embed`: the papers of a metadata file into `out` with a registered adapter that needs no fitting (one
    process or torchrun), embedded for `input_format` (what an adapter that embeds by format is told); returns the
    file and the number of papers. An adapter that learns from a corpus is refused before anything is read or
    claimed."""
    adapter = get_adapter(adapter_name, **params)
    adapter.check_fitted()
    files, folders = adapter_inputs(adapter_name, params)  # a checkpoint folder, a vectors file, ...
    metadata_option = "--metadata" if option.startswith("--") else "metadata"  # the CLI's words, or the call's
    claim_inputs_are_not_outputs([*given_as(metadata_option, [metadata]), *files], {option: out}, folders)
    adapter.validate()  # may read the checkpoint
    if is_main_process():
        claim_output(out, option)
    papers = read_papers(metadata)
    path = write_embeddings(adapter, papers, out, resume=resume, progress=progress, option=option,
                            role=EmbeddingRole(input_format))
    return path, len(papers)
