"""`baseline NAME`: a registered model adapter fitted, embedded and scored on a suite (`embed_and_score`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import TASKS, claim_task_inputs
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.safe_output import claim_output, given_as
from scidocs_eval.models.adapter import Adapter, adapter_inputs

if TYPE_CHECKING:
    from scidocs_eval.evaluation.config import RunConfig
    from scidocs_eval.evaluation.results import RunResult

OUT_DIR_OPTION = "--out-dir"
EMBEDDINGS_FORMATS = ("jsonl", "parquet")
"""what `run_baseline` can write its embeddings as (the file's suffix)."""


def embeddings_path(name: str, out_dir: Path, embeddings_format: str = "jsonl") -> Callable[[str | None], Path]:
    """Where `baseline NAME` writes each embeddings file in `out_dir`: `{name}.{format}` for one file for every
    group (None), `{name}-{group}.{format}` for a group embedded apart (SPECTER2's per-group adapters, the queries
    and documents of retrieval tasks) and `{name}-{input format}.{format}` for the papers of one input format (an
    adapter that embeds by format)."""
    return lambda group: out_dir / (f"{name}.{embeddings_format}" if group is None
                                    else f"{name}-{group}.{embeddings_format}")


def embeddings_files(name: str, adapter: Adapter, out_dir: Path, embeddings_format: str = "jsonl",
                     tasks: Sequence[str] = ()) -> list[Path]:
    """The embeddings files `baseline NAME` writes in `out_dir` for the metadata groups of `tasks` (those
    embedded apart, a retrieval task's or a search's queries, are known once the suite is read, and claimed when
    written)."""
    path = embeddings_path(name, out_dir, embeddings_format)
    if adapter.by_format and not adapter.group_adapters():
        return [path(input_format) for input_format in
                dict.fromkeys(TASKS[task].spec.input_format for task in tasks if TASKS[task].spec.metadata_file)]
    return [path(group) for group in adapter.group_adapters() or [None]]


def claim_baseline_outputs(name: str, adapter: Adapter, out_dir: Path, config: RunConfig,
                           inputs: Sequence[str | os.PathLike[str] | None],
                           folders: Sequence[str | os.PathLike[str]] = (), embeddings_format: str = "jsonl") -> None:
    """Lock (and check) every file `baseline` writes in `out_dir` before the adapter is fitted; none of them may
    be a path the command reads: the tasks' (`claim_task_inputs`), the command's other `inputs` and the `folders`
    it reads whole (a checkpoint). Rank 0 alone writes, under torchrun."""
    from scidocs_eval.data.resolve import resolve_suite
    from scidocs_eval.formats.provenance import settings_file
    from scidocs_eval.models.distributed import is_main_process
    from scidocs_eval.run.fit_inputs import fit_reads

    if out_dir.exists() and not out_dir.is_dir():
        raise ScidocsEvalError(f"{OUT_DIR_OPTION} {out_dir} is a file, not a folder")
    results = out_dir / f"{name}.results.json"
    embeddings = embeddings_files(name, adapter, out_dir, embeddings_format, config.task_names())
    outputs = [*embeddings, *map(settings_file, embeddings), results]
    suite = resolve_suite(config.data)
    guard_files, guard_folders = fit_reads(adapter, suite)  # SGC's leakage guard reads every task's val/test files
    claim_task_inputs(suite, config.built_tasks().values(), config.split,
                      [(OUT_DIR_OPTION, output) for output in outputs], [*inputs, *guard_files],
                      [*folders, *guard_folders])
    if is_main_process():
        for output in outputs:
            claim_output(output, OUT_DIR_OPTION)


def run_baseline(
    name: str,
    config: RunConfig | None = None,
    *,
    out_dir: str | os.PathLike[str] = "scidocs-results",
    params: Mapping[str, Any] | None = None,
    train_corpus: str | os.PathLike[str] | None = None,
    resume: bool = False,
    embeddings_format: str = "jsonl",
    **keywords: Any,
) -> RunResult | None:
    """Fit the adapter `name` on the suite's papers (or `train_corpus`), embed the papers the tasks need, score,
    save the results.

    What is scored and how is `config` (`RunConfig`; default: `RunConfig()`); `scidocs-eval baseline` builds it
    from its options and calls this. Only the papers of its tasks (or of its benchmarks' tasks, one or several,
    embedded with one plan) are fitted on and embedded. `config.cache`: read and add to the embedding cache across
    runs (an adapter that learns from a corpus, a transductive one and a checkpoint whose weights cannot be hashed
    are never cached). The results go to `{out_dir}/{name}.results.json` (the config's `output` must be None).
    Writes `{out_dir}/{name}.{embeddings_format}` (embeddings: "jsonl" or "parquet"; `{name}-{group}.{format}` per
    embeddings group embedded apart: SPECTER2 by group, the queries and documents of retrieval tasks;
    `{name}-{input format}.{format}` per input format for an adapter that embeds by format). Under torchrun every
    process embeds a share and only rank 0 scores: the others return None. The keyword form of earlier versions
    (`run_baseline(name, "demo", tasks=[...])`) still works for a release, with a DeprecationWarning.
    """
    from scidocs_eval.evaluation.config import config_from_keywords
    from scidocs_eval.models.tuning import baseline_adapter
    from scidocs_eval.run.pipeline import embed_and_score

    config = config_from_keywords("run_baseline", config, keywords)
    if config.output is not None:
        raise ScidocsEvalError(f"run_baseline writes its results to {OUT_DIR_OPTION} (out_dir); leave the "
                               f"config's output out, not {str(config.output)!r}")
    if embeddings_format not in EMBEDDINGS_FORMATS:
        raise ScidocsEvalError(f"embeddings_format must be one of {EMBEDDINGS_FORMATS}, not {embeddings_format!r}")
    adapter = baseline_adapter(name, params)
    out_dir = Path(out_dir)
    files, folders = adapter_inputs(name, {key: value for key, value in (params or {}).items() if key != "tune"})
    claim_baseline_outputs(name, adapter, out_dir, config,
                           [*given_as("--train-corpus", [train_corpus]), *given_as("--exclude", [config.exclude]),
                            *files, *given_as("--data", [config.data] if isinstance(config.data, (str, os.PathLike))
                                              else [])],  # suite files
                           folders, embeddings_format)
    return embed_and_score(
        adapter.group_adapters() or adapter, replace(config, output=out_dir / f"{name}.results.json"),
        embeddings_path(name, out_dir, embeddings_format), name=name,
        train_corpus=read_papers(train_corpus) if train_corpus else None, train_corpus_path=train_corpus,
        resume=resume, option=OUT_DIR_OPTION)
