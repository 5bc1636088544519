"""One way from a model to a score: fit, plan the embedding, encode each distinct text once, score, record.

`embed_and_score` is what `baseline`, `evaluate_model` and SPECTER2's per-group adapters run. It takes an adapter,
or {embeddings group: adapter} when each group has a model of its own; it fits each adapter on every paper of the
metadata files the tasks read (or a separate corpus), plans the embedding of every task of every chosen benchmark
(`scidocs_eval.run.embedding_plan`: each distinct (text, role as the model sees it) once, the embedding cache
first), scores the vectors in memory with `evaluate` and records what embedded them as the result's `ModelInfo`.
Embeddings files are written only when asked (`embeddings_path`), every paper's line in input order. A resumed run
(`resume`) and a run under torchrun (every process embeds a share, rank 0 scores) go through the files
(`run.embedding.write_embeddings`), which then are the checkpoint.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.contamination import file_sha256
from scidocs_eval.evaluation.papers import EmbeddingRole, GroupNeed, embedding_needs, fit_papers
from scidocs_eval.evaluation.results import ModelInfo, RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.embeddings_output import write_embeddings_file
from scidocs_eval.formats.embeddings_writers import output_kind, write_through_json_lines
from scidocs_eval.formats.provenance import WRITTEN_FOR, write_settings
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.formats.vector_cache import VectorCache
from scidocs_eval.models.adapter import Adapter, adapter_inputs, get_adapter
from scidocs_eval.models.distributed import is_main_process
from scidocs_eval.progress import silenced
from scidocs_eval.run.embedding import fitted_settings, output_settings, write_embeddings
from scidocs_eval.run.embedding_plan import (
    EmbeddingPlan,
    encode_plan,
    file_papers,
    group_stores,
    plan_embedding,
    plan_file_lines,
)
from scidocs_eval.run.fit_inputs import fit_adapter
from scidocs_eval.run.sharded_embedding import process_count

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
        resume: keep the papers already in the embeddings files (same settings only, see `write_embeddings`).
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
    stores: Mapping[str, Path | EmbeddingStore]
    if resume or process_count() > 1:
        if embeddings_path is None:
            raise ScidocsEvalError("resuming, or embedding under torchrun, needs embeddings files to write")
        stores = _through_files(plan, embeddings_path, settings, resume, progress, option)
    else:
        vectors = encode_plan(plan, (vector_cache or VectorCache()) if config.cache else None, progress)
        written = _write_files(plan, vectors, embeddings_path, settings, option) if embeddings_path else {}
        stores = group_stores(plan, vectors, np.dtype(config.dtype))
        digests = {key: file_sha256(path) for key, path in written.items()}
        for group, store in stores.items():  # the results name the file a group's vectors were also written to
            key = plan.groups[group].file_key
            if key in written:
                store.source, store.sha256 = str(written[key]), digests[key]
    embedded = time.perf_counter()
    if not is_main_process():
        return None
    result = evaluate(dict(stores), config=replace(config, data=suite, output=None), model=name)
    result.model_info = model_info(model, train_corpus_path, call)
    result.timings.update(fit=round(fitted - started, 3), embed=round(embedded - fitted, 3))
    if config.output is not None:
        result.save(config.output)
    return result


def _file_settings(plan: EmbeddingPlan, key: str | None, settings: Mapping[str, Any]) -> tuple[Adapter, EmbeddingRole,
                                                                                               dict[str, Any]]:
    """The adapter and role of the file `key`'s papers and what its settings record holds."""
    job = plan.jobs[plan.groups[plan.files[key][0]].job]
    return job.adapter, job.role, {**settings, "role": asdict(job.role)} if job.adapter.by_format else dict(settings)


def _write_files(plan: EmbeddingPlan, vectors: Sequence[Any], embeddings_path: EmbeddingsPath,
                 settings: Mapping[str, Any], option: str) -> dict[str | None, Path]:
    """Each file of the plan from the vectors in memory, with its settings record."""
    written = {}
    for key in plan.files:
        adapter, _, record = _file_settings(plan, key, settings)
        path = claim_output(embeddings_path(key), option)

        def write(target: Path, key: str | None = key, record: Mapping[str, Any] = record,
                  adapter: Adapter = adapter) -> None:
            lines = plan_file_lines(plan, vectors, key)
            write_embeddings_file(target, lines.values(), option, paper_ids=lines.keys())
            write_settings(target, output_settings(adapter, record), option)

        if output_kind(path) == "jsonl":
            write(path)
        else:
            write_through_json_lines(path, False, write)
        written[key] = path
    return written


def _through_files(plan: EmbeddingPlan, embeddings_path: EmbeddingsPath, settings: Mapping[str, Any], resume: bool,
                   progress: bool, option: str) -> dict[str, Path]:
    """Each file of the plan by `write_embeddings` (resumable; a share per torchrun process); {group: its file}."""
    files = {}
    for key in plan.files:
        adapter, role, record = _file_settings(plan, key, settings)
        with adapter.embedding_role(role):  # recorded, so a resume never mixes vectors embedded for other uses
            files[key] = write_embeddings(adapter, file_papers(plan, key), embeddings_path(key), resume=resume,
                                          progress=progress, settings=record, option=option)
    return {group: files[rows.file_key] for group, rows in plan.groups.items()}


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
    claim_inputs_are_not_outputs([metadata, *files], {option: out}, folders)
    adapter.validate()  # may read the checkpoint
    if is_main_process():
        claim_output(out, option)
    papers = read_papers(metadata)
    role = EmbeddingRole(input_format)
    with adapter.embedding_role(role):
        path = write_embeddings(adapter, papers, out, resume=resume, progress=progress, option=option,
                                settings={"role": asdict(role)} if adapter.by_format else None)
    return path, len(papers)
