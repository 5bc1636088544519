"""`baseline NAME`: a registered model adapter fitted, embedded and scored on a suite (`embed_and_score`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.models.pipeline import embed_and_score


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
) -> RunResult | None:
    """Fit the adapter `name` on the suite's papers (or `train_corpus`), embed the papers the tasks need, score,
    save the results.

    Writes `{out_dir}/{name}.jsonl` (embeddings; `{name}-{group}.jsonl` per embeddings group for an adapter that
    embeds each group with its own, e.g. SPECTER2 by group) and `{out_dir}/{name}.results.json`. Under torchrun
    every process embeds a share and only rank 0 scores: the others return None.
    """
    adapter = get_adapter(name, **(params or {}))
    out_dir = Path(out_dir)
    model = adapter.group_adapters() or adapter
    return embed_and_score(
        model, data, lambda group: out_dir / (f"{name}-{group}.jsonl" if group else f"{name}.jsonl"), name=name,
        tasks=tasks, split=split, task_params=task_params,
        train_corpus=read_papers(train_corpus) if train_corpus else None, train_corpus_path=train_corpus,
        resume=resume, progress=progress, output=out_dir / f"{name}.results.json")
