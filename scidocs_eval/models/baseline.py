"""Run a model adapter over a suite: fit, embed every paper into the official JSON lines format, score."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import DEFAULT_MIN_COVERAGE, TASKS, build_tasks
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.provenance import check_dimension, settings_file, start_embeddings_output
from scidocs_eval.formats.safe_output import claim_output, discard, growing_file
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite
from scidocs_eval.models.adapter import Adapter, get_adapter
from scidocs_eval.progress import progress_bar

log = logging.getLogger("scidocs_eval")




def write_embeddings(adapter: Adapter, papers: Sequence[Paper], path: str | os.PathLike[str],
                     resume: bool = True, progress: bool = True, settings: Mapping[str, Any] | None = None,
                     option: str = "output") -> Path:
    """Embed `papers` into `path` (official format), appending batch by batch.

    A paper with neither title nor abstract gets ``"embedding": []``, as the reference embedder writes.
    `{path}.settings.json` records the adapter, its parameters and `settings` (e.g. the corpus it was fitted on).
    With `resume`, papers already in the file are not embedded again, provided the file was written with the
    same settings and dimension (else an error naming what differs; `scidocs_eval.formats.provenance`).
    """
    path = claim_output(path, option)
    record_existed = settings_file(path).exists()
    try:
        return _append_embeddings(adapter, papers, path, resume, progress, output_settings(adapter, settings), option)
    except BaseException:
        if not path.exists() and not record_existed:
            discard(settings_file(path))
        raise


def output_settings(adapter: Adapter, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an embeddings file records of what produced it: the adapter, its parameters and `settings`."""
    return {"adapter": adapter.name, "params": adapter.get_params(), **(settings or {})}


def fitted_settings(corpus: Sequence[Paper], train_corpus: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The `settings` of a baseline's embeddings: the corpus its adapter was fitted on."""
    return {"train_corpus": str(train_corpus) if train_corpus else None, "corpus_sha256": _digest(corpus)}


def _append_embeddings(adapter: Adapter, papers: Sequence[Paper], path: Path, resume: bool, progress: bool,
                       settings: Mapping[str, Any], option: str) -> Path:
    done, dim, whole = start_embeddings_output(path, settings, resume, option)
    todo = [p for p in papers if p.paper_id not in done]
    with growing_file(path, option, append=resume, keep_bytes=whole) as out, progress_bar(
            total=len(todo), unit="paper", desc=f"embedding with {adapter.name}", enabled=progress) as bar:
        for paper in (p for p in todo if not p.has_text):
            out.write(format_embedding_line(paper.paper_id, None))
        bar.update(sum(1 for p in todo if not p.has_text))
        with_text = [p for p in todo if p.has_text]
        if with_text:
            for batch, vectors in adapter.transform_batches(with_text):
                check_dimension(path, dim, vectors.shape[1])
                out.write(b"".join(format_embedding_line(p.paper_id, v) for p, v in zip(batch, vectors)))
                out.flush()
                bar.update(len(batch))
    return path


def _digest(papers: Sequence[Paper]) -> str:
    """sha256 of the papers' ids and texts, in order (what a fitted adapter learnt from)."""
    return hashlib.sha256(orjson.dumps([(p.paper_id, p.title, p.abstract) for p in papers])).hexdigest()


def _metadata_files(suite: Suite, tasks: Sequence[str] | None) -> tuple[str, ...]:
    """The metadata files (those the suite has) whose papers the tasks score (default: every registered task)."""
    wanted = {TASKS[name].spec.metadata_file for name in (TASKS.check(tasks) if tasks else TASKS.names())}
    official = [name for name in METADATA_FILES.values() if name in wanted]
    return tuple(name for name in official + sorted(wanted - set(official)) if suite.has(name))


def run_baseline(
    name: str,
    data: str | os.PathLike[str] | Suite | None = None,
    *,
    out_dir: str | os.PathLike[str] = "scidocs-results",
    params: Mapping[str, Any] | None = None,
    train_corpus: str | os.PathLike[str] | None = None,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    task_params: Mapping[str, Mapping[str, Any]] | None = None,
    resume: bool = False,
    progress: bool = True,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> RunResult:
    """Fit the adapter `name` on the suite's papers (or `train_corpus`), embed them, score, save results.

    With `tasks`, only the papers of the metadata files those tasks read are fitted on and embedded.

    Writes `{out_dir}/{name}.jsonl` (embeddings) and `{out_dir}/{name}.results.json`.
    """
    adapter = get_adapter(name, **(params or {}))
    build_tasks(TASKS.check(tasks) if tasks else [], task_params)
    suite = resolve_suite(data)
    papers = suite.papers(_metadata_files(suite, tasks))
    corpus = read_papers(train_corpus) if train_corpus else papers
    started = time.perf_counter()
    log.info("fitting %s on %d papers", name, len(corpus))
    adapter.fit(corpus, suite)
    fitted = time.perf_counter()
    out_dir = Path(out_dir)
    embeddings = write_embeddings(adapter, papers, out_dir / f"{name}.jsonl", resume=resume, progress=progress,
                                  settings=fitted_settings(corpus, train_corpus), option="--out-dir")
    embedded = time.perf_counter()
    result = evaluate(embeddings, suite, tasks=tasks, split=split, task_params=task_params, model=name,
                      progress=progress, min_coverage=min_coverage)
    result.settings["adapter"] = {"name": name, "paper_row": adapter.paper_row, "params": adapter.get_params(),
                                  "train_corpus": str(train_corpus) if train_corpus else None,
                                  "row_detail": adapter.row_detail(), "row_note": adapter.row_note()}
    result.timings.update(fit=round(fitted - started, 3), embed=round(embedded - fitted, 3))
    result.save(out_dir / f"{name}.results.json")
    return result
