"""`baseline NAME`: a registered model adapter fitted, embedded and scored on a suite (`embed_and_score`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import DEFAULT_MIN_COVERAGE
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.provenance import settings_file
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.adapter import Adapter, get_adapter
from scidocs_eval.models.distributed import is_main_process
from scidocs_eval.models.pipeline import embed_and_score

OUT_DIR_OPTION = "--out-dir"


def embeddings_files(name: str, adapter: Adapter, out_dir: Path) -> dict[str | None, Path]:
    """{embeddings group (None: one file for every group): the file `baseline NAME` writes in `out_dir`}."""
    groups = adapter.group_adapters()
    if groups:
        return {group: out_dir / f"{name}-{group}.jsonl" for group in groups}
    return {None: out_dir / f"{name}.jsonl"}


def claim_baseline_outputs(name: str, adapter: Adapter, out_dir: Path,
                           inputs: Sequence[str | os.PathLike[str] | None]) -> None:
    """Lock (and check) every file `baseline` writes in `out_dir` before the adapter is fitted; none of them may
    be one of the command's `inputs` (rank 0 alone writes, under torchrun)."""
    for embeddings in embeddings_files(name, adapter, out_dir).values():
        claim_inputs_are_not_outputs([path for path in inputs if path], {OUT_DIR_OPTION: embeddings})
        if is_main_process():
            claim_output(embeddings, OUT_DIR_OPTION)
            claim_output(settings_file(embeddings), OUT_DIR_OPTION)
    if is_main_process():
        claim_output(out_dir / f"{name}.results.json", OUT_DIR_OPTION)


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
) -> RunResult | None:
    """Fit the adapter `name` on the suite's papers (or `train_corpus`), embed the papers the tasks need, score,
    save the results.

    Writes `{out_dir}/{name}.jsonl` (embeddings; `{name}-{group}.jsonl` per embeddings group for an adapter that
    embeds each group with its own, e.g. SPECTER2 by group) and `{out_dir}/{name}.results.json`. Under torchrun
    every process embeds a share and only rank 0 scores: the others return None.
    """
    adapter = get_adapter(name, **(params or {}))
    out_dir = Path(out_dir)
    files = embeddings_files(name, adapter, out_dir)
    claim_baseline_outputs(name, adapter, out_dir,
                           [train_corpus, *(v for v in (params or {}).values() if isinstance(v, (str, Path)))])
    return embed_and_score(
        adapter.group_adapters() or adapter, data, lambda group: files[group], name=name, tasks=tasks, split=split,
        task_params=task_params, train_corpus=read_papers(train_corpus) if train_corpus else None,
        train_corpus_path=train_corpus, resume=resume, progress=progress, min_coverage=min_coverage,
        output=out_dir / f"{name}.results.json", option=OUT_DIR_OPTION)
