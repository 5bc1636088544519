"""`evaluate(...)`: score an embeddings file on a SciDocs suite; what `scidocs-eval run` calls."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError, UndefinedMetricError
from scidocs_eval.evaluation.config import RunConfig, config_from_keywords
from scidocs_eval.evaluation.contamination import (
    AuditReport,
    check_same_suite,
    excluded_items,
    file_sha256,
    report_clean_split,
    without_leaked,
)
from scidocs_eval.evaluation.integrity import apply_findings
from scidocs_eval.evaluation.results import LeakExclusion, RunResult
from scidocs_eval.evaluation.task import (
    TASKS,
    CoverageError,
    MissingPolicy,
    Task,
    TaskResult,
    build_tasks,
    check_coverage,
    claim_task_inputs,
    embedding_groups,
    vectors_given,
)
from scidocs_eval.extras import MissingExtraError
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.embeddings_files import STDIN
from scidocs_eval.formats.embeddings_tables import FilePass, ReadOptions, start_file_pass
from scidocs_eval.formats.provenance import other_papers_cause
from scidocs_eval.formats.safe_output import claim_output, given_as
from scidocs_eval.formats.suite import Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.statistics.significance import confidence_intervals

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

EmbeddingsSource = str | os.PathLike | EmbeddingStore


class _Stores:
    """Loads each embeddings file once, even when several groups share it."""

    def __init__(self, sources: Mapping[str, EmbeddingsSource], cache: bool, dtype: Any, progress: bool,
                 read_options: ReadOptions | None):
        self.sources = sources
        self.cache, self.dtype, self.progress, self.read_options = cache, dtype, progress, read_options
        self.loaded: dict[str, EmbeddingStore] = {}
        self.seconds = 0.0
        self.file_passes: dict[str, FilePass | None] = {}
        """each array file hashed (and its CRCs checked) from the start, while the tasks read their data."""
        for source in sources.values():
            if isinstance(source, (str, os.PathLike)) and str(source) != STDIN:
                key = str(Path(source).resolve())
                if key not in self.file_passes:
                    self.file_passes[key] = start_file_pass(source)

    def close(self) -> None:
        """Stops the file passes of files never loaded (a run that ended before it needed them)."""
        for file_pass in self.file_passes.values():
            if file_pass is not None:
                file_pass.stop()

    def get(self, group: str) -> EmbeddingStore:
        source = self.sources.get(group)
        if source is None:
            raise ScidocsEvalError(f"no embeddings given for the {group!r} tasks")
        if isinstance(source, EmbeddingStore):
            return source
        key = str(Path(source).resolve())
        if key not in self.loaded:
            start = time.perf_counter()
            self.loaded[key] = EmbeddingStore.load(source, cache=self.cache, dtype=self.dtype,
                                                   progress=self.progress, options=self.read_options,
                                                   file_pass=self.file_passes.pop(key, None))
            self.seconds += time.perf_counter() - start
        return self.loaded[key]

    def fingerprints(self) -> dict[str, Any]:
        out = {}
        for group, source in self.sources.items():
            store = source if isinstance(source, EmbeddingStore) else self.loaded.get(str(Path(source).resolve()))
            if store is not None:
                out[group] = {"path": store.source, "sha256": store.sha256, "papers": len(store),
                              "dim": store.dim, "empty": int(store.empty.sum()), "repeated_ids": store.duplicates,
                              "ids_with_whitespace": len(store.padded_ids)}
        return out


def check_defined(task: str, metrics: Mapping[str, float]) -> None:
    """`UndefinedMetricError` naming the metrics of `task` that are not finite numbers (the guard behind every
    task: a NaN is never printed, saved or averaged as a score)."""
    undefined = {name: value for name, value in metrics.items() if not np.isfinite(value)}
    if undefined:
        raise UndefinedMetricError(task, f"{', '.join(f'{k} is {v}' for k, v in undefined.items())} on these "
                                         "embeddings, not a score")


def score_tasks(stores: _Stores | Mapping[str, EmbeddingStore], suite: Suite, names: Sequence[str], split: str,
                missing: MissingPolicy = "official", checked: Mapping[str, Task] | None = None,
                min_coverage: float | None = None, failed: dict[str, str] | None = None,
                ) -> tuple[dict[str, TaskResult], dict[str, str], list[str]]:
    """The scoring core: each task of `names` scored on `split` (timed), without intervals, fingerprints or files.

    `evaluate` adds those; `--tune`'s grid calls this directly. `stores` gives each embeddings group's store;
    `checked` the tasks built with their parameters (default: `build_tasks(names)`); `min_coverage`, when given,
    is checked after each task (`check_coverage`); `failed`, when given, gets the tasks whose optional package is
    missing (`MissingExtraError`, the extra to install) or whose metric is undefined on these embeddings
    (`UndefinedMetricError`: a task never reports a NaN), which else are raised. Returns (results by task,
    skipped tasks with the reason, the suite files read).
    """
    groups = stores.sources if isinstance(stores, _Stores) else stores
    results, skipped, files = {}, {}, []
    checked = checked or build_tasks(names)
    for name in names:
        task = checked[name]
        required = task.input_files(suite, split)
        absent = [f for f in required if not suite.has(f)]
        if absent:
            skipped[name] = f"missing {', '.join(absent)} in {suite.root}"
            log.warning("skipping %s: %s", name, skipped[name])
            continue
        absent_groups = [group for group in task.groups() if group not in groups]
        if absent_groups:
            skipped[name] = f"no {' or '.join(repr(g) for g in absent_groups)} embeddings given"
            continue
        try:
            for requirement in task.requirements():
                requirement.import_module()
        except MissingExtraError as error:
            if failed is None:
                raise
            failed[name] = str(error)  # the CLI reports it (exit status 2); format_run shows it
            continue
        data = task.load(suite, split)
        warnings = apply_findings(suite.root, task.findings(data))  # before its embeddings are read
        files += required
        task_stores = {group: stores.get(group) if isinstance(stores, _Stores) else stores[group]
                       for group in task.groups()}
        log.info("running %s", name)
        task_started = time.perf_counter()
        try:
            result = task.evaluate_groups(data, task_stores, missing=missing)
            check_defined(name, result.metrics)
        except UndefinedMetricError as error:
            if failed is None:
                raise
            failed[name] = error.reason
            continue
        result.seconds = time.perf_counter() - task_started
        report_clean_split(result, warnings)
        if min_coverage is not None:
            try:
                check_coverage(name, result.coverage, min_coverage)
            except CoverageError:  # the same error, naming the likelier cause when a file's record tells it
                check_coverage(name, result.coverage, min_coverage, _other_papers_cause(groups, task, name, split))
        results[name] = result
    return results, skipped, files


def _other_papers_cause(sources: Mapping[str, Any], task: Task, name: str, split: str) -> str | None:
    """Why the embeddings files of `task`'s groups lack its papers, when a file's settings record tells it."""
    files = [source for group in task.groups() if isinstance(source := sources.get(group), (str, os.PathLike))
             and str(source) != STDIN]
    return next(filter(None, (other_papers_cause(file, name, split) for file in files)), None)


def _as_sources(embeddings: EmbeddingsSource | Mapping[str, EmbeddingsSource],
                names: Sequence[str]) -> dict[str, EmbeddingsSource]:
    """{group: source}: a mapping as given (its groups checked), or one source for every group of the tasks in
    `names` and of the suite-metadata tasks of their benchmarks (a SciDocs run records SciDocs' three groups)."""
    groups = tuple(embedding_groups())
    if isinstance(embeddings, Mapping):
        unknown = set(embeddings) - set(groups)
        if unknown:
            raise ScidocsEvalError(f"unknown embeddings group(s) {sorted(unknown)}; use {groups}")
        return dict(embeddings)
    benchmarks = {TASKS[name].spec.benchmark for name in names}
    return dict.fromkeys((group for name, cls in TASKS.items()
                          if name in names or (cls.spec.query_group is None and cls.spec.benchmark in benchmarks)
                          for group in cls.groups()), embeddings)



def _default_model_name(sources: list[tuple[str, Any]]) -> str:
    """A run's name when none is given: the embeddings file's stem; for a file per group, the stem the files
    share once their groups are taken off (`random-queries.jsonl` + `random-corpus.jsonl`: random), else the
    first file's stem."""
    stems = [Path(source).stem.removesuffix(".jsonl") for _, source in sources
             if not isinstance(source, EmbeddingStore) and str(source) != STDIN]
    if not stems:
        return "embeddings"
    bare = {stem.removesuffix(f"-{group}").removesuffix(f"_{group}") for (group, _), stem in zip(sources, stems)}
    return bare.pop() if len(sources) > 1 and len(bare) == 1 and len(stems) == len(sources) else stems[0]


def evaluate(
    embeddings: EmbeddingsSource | Mapping[str, EmbeddingsSource],
    config: RunConfig | None = None,
    *,
    model: str | None = None,
    read_options: ReadOptions | None = None,
    **keywords: Any,
) -> RunResult:
    """Score embeddings on the tasks the configuration names.

    `scidocs-eval run` builds the config from its options and calls this. The keyword form of earlier versions
    (`evaluate(file, "demo", tasks=[...], split="val")`: the suite second, `RunConfig`'s fields and `benchmark=` as
    keywords) still works for a release, with a DeprecationWarning (`config_from_keywords`).

    Args:
        embeddings: one embeddings file (any kind `EmbeddingStore.load` reads; "-" for standard input) or
            EmbeddingStore for every task, or a mapping from the embeddings groups ("cls", "user-citation",
            "recomm", ...) to one each.
        config: what is scored and how (`RunConfig`: suite, tasks, benchmarks, split, missing-embedding rule, task
            parameters, coverage guard, dtype, progress, parsed-embeddings cache, results file, audit exclusion;
            default: `RunConfig()`). Tasks whose files are absent are skipped with a note; a task whose optional
            package is missing is not run and is listed in `result.failed` with the extra to install.
        model: the name results and tables show (default: the embeddings file's stem).
        read_options: where a table or array file holds its ids and vectors (`ReadOptions`: an ids sidecar for
            a .npy, the id and embedding columns of a table).

    Returns:
        a RunResult; `result.tasks[name].metrics` holds the numbers (×100, 2 decimals); `result.settings` the
        `RunSettings` the config recorded.
    """
    config = config_from_keywords("evaluate", config, keywords)
    names = config.task_names()
    checked = config.built_tasks()
    output, exclude = config.output, config.exclude
    started = time.perf_counter()
    suite = resolve_suite(config.data)
    vectors_given(suite)  # the tasks read no text they would only embed
    if output is not None:  # before anything is read: no output where the run reads
        sources = embeddings.values() if isinstance(embeddings, Mapping) else [embeddings]
        claim_task_inputs(suite, checked.values(), config.split, {"output": output},
                          [*given_as("embeddings", [s for s in sources if isinstance(s, (str, os.PathLike))],
                                     "evaluate"),
                           *given_as("exclude", [exclude], "evaluate"),
                           *given_as("data", [config.data] if isinstance(config.data, (str, os.PathLike)) else [],
                                     "evaluate")])
        claim_output(output)
    audit = AuditReport.load(exclude) if exclude is not None else None
    sources = _as_sources(embeddings, names)
    stores = _Stores(sources, config.cache, np.dtype(config.dtype), config.progress, read_options)
    failed: dict[str, str] = {}
    try:
        if audit is not None:  # a mismatched audit is refused before any task is scored
            for name in names:
                inputs = checked[name].input_files(suite, config.split)
                if all(suite.has(f) for f in inputs):
                    check_same_suite(audit, str(exclude), config.split, suite.fingerprint(inputs), [name])
        results, skipped, files = score_tasks(stores, suite, names, config.split, config.missing, checked,
                                              config.min_coverage, failed)
        for store in stores.loaded.values():
            store.check_unchanged()
    finally:
        stores.close()
    for name, result in list(results.items()):
        if audit is not None:
            result = results[name] = without_leaked(result, excluded_items(audit, name, result))
        result.ci = confidence_intervals(result.items, list(result.metrics))
    if not results:
        given = config.data if isinstance(config.data, (str, os.PathLike)) else suite.root  # `demo`, not its cache
        raise ScidocsEvalError(f"no task could run on {given}: " + "; ".join(f"{k}: {v}" for k, v in
                                                                         {**skipped, **failed}.items()))
    exclusion = None if audit is None or exclude is None else LeakExclusion(
        str(exclude), file_sha256(exclude), tuple(audit.data["settings"]["leaked_if"]),
        {name: r.coverage["items_excluded_as_leaked"] for name, r in results.items()})
    timings = {"loading_embeddings": round(stores.seconds, 3), "total": round(time.perf_counter() - started, 3)}
    run = RunResult(
        model=model or _default_model_name(list(sources.items())), tasks=results, skipped=skipped, failed=failed,
        settings=config.settings(suite.root, names, exclusion),
        fingerprints={"embeddings": stores.fingerprints(), "data": suite.fingerprint(sorted(set(files)))},
        timings=timings, synthetic=suite.is_synthetic,
    )
    if output is not None:
        run.save(output)
    return run
