"""One way from a model to a score: fit, embed the papers the tasks need, write, score, record the model.

`embed_and_score` is what `baseline`, `evaluate_model` and SPECTER2's per-group adapters run, on one process or
under torchrun (every process embeds a share, rank 0 scores). It takes an adapter, or {embeddings group: adapter}
when each group has a model of its own; it fits each adapter on every paper of the metadata files the tasks read
(or a separate corpus), embeds only the papers the chosen tasks score for the split
(`scidocs_eval.evaluation.papers`; the texts of retrieval tasks and a search's queries apart, one file per group),
writes them through `write_embeddings` in input order, scores with `evaluate` and records what embedded them as
the result's `ModelInfo`. Each group is embedded in its role (`Adapter.embedding_role`: its input format, and a
retrieval side's MTEB prompt type); an adapter that embeds by format (`Adapter.by_format`) writes one file per
input format, each paper once in it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import (
    EmbeddingRole,
    fit_papers,
    group_role,
    papers_by_format,
    papers_by_group,
    papers_by_role,
    papers_to_embed,
)
from scidocs_eval.evaluation.results import ModelInfo, RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import (
    DEFAULT_MIN_COVERAGE,
    MissingPolicy,
    build_tasks,
    embedding_groups,
    selected_tasks,
)
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import Adapter, get_adapter
from scidocs_eval.models.distributed import is_main_process
from scidocs_eval.models.embedding import fitted_settings, write_embeddings
from scidocs_eval.progress import silenced

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
                     best_params=dict(getattr(first, "best_params_", {})),
                     train_corpus=str(train_corpus) if train_corpus else None, groups=groups,
                     row_detail=first.row_detail(), row_note=first.row_note(), call=dict(call or {}))


def embed_and_score(
    model: Model,
    data: str | os.PathLike[str] | Suite | None,
    embeddings_path: EmbeddingsPath,
    *,
    name: str,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    missing: MissingPolicy = "official",
    task_params: Mapping[str, Mapping[str, Any]] | None = None,
    train_corpus: Sequence[Paper] | None = None,
    train_corpus_path: str | os.PathLike[str] | None = None,
    resume: bool = False,
    cache: bool = True,
    progress: bool = True,
    call: Mapping[str, Any] | None = None,
    output: str | os.PathLike[str] | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    option: str = "output",
    benchmark: str | None = None,
) -> RunResult | None:
    """Fit `model`, embed the papers the tasks need, score them; None in the torchrun processes but rank 0.

    Args:
        model: an adapter, or {embeddings group: adapter} (each group's papers embedded by its own adapter).
        data: suite directory, "demo", a Suite, or None for the default data directory.
        embeddings_path: where each embeddings file goes (see `EmbeddingsPath`).
        name: the model's name in results and tables.
        tasks, benchmark, split, missing, task_params: as in `evaluate`.
        train_corpus: what a fitted adapter learns from (default: every paper of the tasks' metadata files);
            `train_corpus_path` names it in the results.
        resume: keep the papers already in the embeddings files (same settings only, see `write_embeddings`).
        cache: let `evaluate` reuse or write the parsed-embeddings cache.
        call: how a model object was called (recorded in `ModelInfo.call`).
        output: where to write the results JSON (none by default).
        min_coverage: as in `evaluate`.
        option: the option naming the embeddings files, for messages (`--out-dir`).
    """
    names = selected_tasks(tasks, benchmark)
    build_tasks(names, task_params)  # task parameters checked before any fitting
    started = time.perf_counter()
    suite = resolve_suite(data)
    adapters = dict(model) if isinstance(model, Mapping) else None
    by_group = papers_by_group(suite, names, split)
    apart = papers_by_role(suite, names, split)
    if adapters is not None and (absent := sorted((set(by_group) | set(apart)) - set(adapters))):
        raise ScidocsEvalError(f"no adapter given for the {', '.join(absent)} embeddings group(s) the tasks need")
    corpus = list(train_corpus) if train_corpus is not None else _fit_corpus(suite, names, apart)
    for adapter in {id(a): a for a in (adapters.values() if adapters else [model])}.values():  # type: ignore[union-attr]
        if adapter.requires_fit:
            log.info("fitting %s on %d papers", adapter.name, len(corpus))
        with silenced(not progress):  # an adapter's own bars (its --tune grid) follow `progress` too
            adapter.fit(corpus, suite)
    fitted = time.perf_counter()
    settings = fitted_settings(corpus, train_corpus_path)

    def write(adapter: Adapter, papers: Sequence[Paper], name: str | None, role: EmbeddingRole | None) -> Path:
        if role is None:
            return write_embeddings(adapter, papers, embeddings_path(name), resume=resume, progress=progress,
                                    settings=settings, option=option)
        with adapter.embedding_role(role):  # recorded, so a resume never mixes vectors embedded for other uses
            return write_embeddings(adapter, papers, embeddings_path(name), resume=resume, progress=progress,
                                    settings={**settings, "role": asdict(role)} if adapter.by_format else settings,
                                    option=option)

    files: dict[str, Path] = {}
    if adapters is not None:
        files = {group: write(adapters[group], papers, group, group_role(group, names))
                 for group, papers in by_group.items()}
    elif isinstance(model, Adapter) and model.by_format:
        written = {input_format: write(model, papers, input_format, EmbeddingRole(input_format))
                   for input_format, papers in papers_by_format(suite, by_group, names).items()}
        files = {group: written[group_role(group, names).input_format] for group in by_group}
    elif by_group or not apart:
        assert isinstance(model, Adapter)
        papers = fit_papers(suite, names) if model.transductive else papers_to_embed(suite, names, split)
        files = dict.fromkeys(embedding_groups(), write(model, papers, None, None))
    for group, (papers, prompt_type) in apart.items():
        adapter = adapters[group] if adapters is not None else model
        assert isinstance(adapter, Adapter)
        files[group] = write(adapter, papers, group, group_role(group, names, prompt_type))
    embedded = time.perf_counter()
    if not is_main_process():
        return None
    result = evaluate(_one_file_or_groups(files), suite, tasks=names, split=split, missing=missing,
                      task_params=task_params, model=name, cache=cache, progress=progress, min_coverage=min_coverage)
    result.model_info = model_info(model, train_corpus_path, call)
    result.timings.update(fit=round(fitted - started, 3), embed=round(embedded - fitted, 3))
    if output is not None:
        result.save(output)
    return result


def _fit_corpus(suite: Suite, names: Sequence[str], apart: Mapping[str, tuple[list[Paper], str]]) -> list[Paper]:
    """What a fitted adapter learns from: every paper of the tasks' metadata files, then the papers embedded apart
    that are not among them (a search's queries are in its metadata file already)."""
    corpus = fit_papers(suite, names)
    known = set(corpus)
    return corpus + [paper for papers, _ in apart.values() for paper in papers if paper not in known]


def _one_file_or_groups(files: Mapping[str, Path]) -> Path | dict[str, Path]:
    """One file for every group (what `evaluate` records as a single source) when every group went to one file."""
    paths = set(files.values())
    return paths.pop() if len(paths) == 1 and set(files) == set(embedding_groups()) else dict(files)


def embed_metadata(adapter_name: str, params: Mapping[str, Any], metadata: str | os.PathLike[str],
                   out: str | os.PathLike[str], *, resume: bool = False, progress: bool = True,
                   option: str = "output", input_format: str = "proximity") -> tuple[Path, int]:
    """`embed`: the papers of a metadata file into `out` with a registered adapter that needs no fitting (one
    process or torchrun), embedded for `input_format` (what an adapter that embeds by format is told); returns the
    file and the number of papers. An adapter that learns from a corpus is refused before anything is read or
    claimed."""
    adapter = get_adapter(adapter_name, **params)
    adapter.check_fitted()
    adapter.validate()
    claim_inputs_are_not_outputs([metadata], {option: out})
    if is_main_process():
        claim_output(out, option)
    papers = read_papers(metadata)
    role = EmbeddingRole(input_format)
    with adapter.embedding_role(role):
        path = write_embeddings(adapter, papers, out, resume=resume, progress=progress, option=option,
                                settings={"role": asdict(role)} if adapter.by_format else None)
    return path, len(papers)
