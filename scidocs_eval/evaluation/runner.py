"""`evaluate(...)`: score an embeddings file on a SciDocs suite; what `scidocs-eval run` calls."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.contamination import (
    AuditReport,
    check_same_suite,
    excluded_items,
    file_sha256,
    without_leaked,
)
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.significance import confidence_intervals
from scidocs_eval.evaluation.task import (
    BENCHMARKS,
    DEFAULT_BENCHMARK,
    DEFAULT_MIN_COVERAGE,
    TASKS,
    MissingPolicy,
    build_tasks,
    check_coverage,
    embedding_groups,
    task_names,
)
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.embeddings_files import STDIN
from scidocs_eval.formats.embeddings_tables import ReadOptions
from scidocs_eval.formats.safe_output import claim_output
from scidocs_eval.formats.suite import Suite
from scidocs_eval.params import FRACTION, check_value

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
                                                   progress=self.progress, options=self.read_options)
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


def selected_tasks(tasks: Sequence[str] | None = None, benchmark: str | None = None) -> list[str]:
    """The task names a run scores: `tasks` (each checked, and in `benchmark` when one is named), else the tasks
    of `benchmark` (default "scidocs")."""
    if benchmark is not None:
        BENCHMARKS.check([benchmark])
    if not tasks:
        return task_names(benchmark=benchmark or DEFAULT_BENCHMARK)
    names = TASKS.check(tasks)
    outside = [name for name in names if benchmark is not None and TASKS[name].spec.benchmark != benchmark]
    if outside:
        raise ScidocsEvalError(f"task(s) {', '.join(outside)} are not in benchmark {benchmark!r} (its tasks: "
                               f"{', '.join(task_names(benchmark=benchmark))}); leave out the benchmark to pick "
                               "tasks of any benchmark")
    return names


def evaluate(
    embeddings: EmbeddingsSource | Mapping[str, EmbeddingsSource],
    data: str | os.PathLike[str] | Suite | None = None,
    *,
    tasks: Sequence[str] | None = None,
    benchmark: str | None = None,
    split: str = "test",
    missing: MissingPolicy = "official",
    task_params: Mapping[str, Mapping[str, Any]] | None = None,
    model: str | None = None,
    output: str | os.PathLike[str] | None = None,
    cache: bool = True,
    dtype: Any = np.float32,
    progress: bool = True,
    read_options: ReadOptions | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    exclude: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Score embeddings on the SciDocs tasks.

    Args:
        embeddings: one embeddings file (any kind `EmbeddingStore.load` reads; "-" for standard input) or
            EmbeddingStore for every task, or a mapping from the official
            groups ("cls", "user-citation", "recomm") to one file each.
        data: suite directory, "demo", a Suite, or None for the default data directory.
        tasks: task names, of any benchmark (default: the benchmark's tasks). Tasks whose files are absent are
            skipped with a note.
        benchmark: a registered benchmark (`BENCHMARKS`; default "scidocs", the 2020 suite's seven tasks); with
            `tasks`, each must belong to it.
        split: "test" (what the paper reports) or "val".
        missing: "official" (the official rules for papers without an embedding) or "error".
        task_params: constructor parameters per task name, e.g. {"recomm": {"seeds": 3}}.
        model: the name results and tables show (default: the embeddings file's stem).
        output: where to write the results JSON (none by default).
        cache: reuse/write the parsed-embeddings cache.
        dtype: the matrix's dtype (float32; float64 keeps every digit of the file).
        read_options: where a table or array file holds its ids and vectors (`ReadOptions`: an ids sidecar for
            a .npy, the id and embedding columns of a table).
        min_coverage: the least share (0..1) of each task's queries, candidates or papers with a usable
            embedding; below it, or with none at all, a CoverageError (a warning line whenever any lacks one).
        exclude: an audit file (`scidocs-eval audit --out`): every task is scored without the items it found
            leaked (made on the same suite files and split, and auditing every task run; else an error).

    Returns:
        a RunResult; `result.tasks[name].metrics` holds the numbers (×100, 2 decimals).
    """
    if split not in ("test", "val"):
        raise ScidocsEvalError(f"split must be 'test' or 'val', not {split!r}")
    if missing not in ("official", "error"):
        raise ScidocsEvalError(f"missing must be 'official' or 'error', not {missing!r}")
    check_value("min_coverage", min_coverage, [FRACTION], "evaluate")
    names = selected_tasks(tasks, benchmark)
    params = task_params or {}
    checked = build_tasks(names, params)
    audit = AuditReport.load(exclude) if exclude is not None else None
    if output is not None:
        claim_output(output)
    started = time.perf_counter()
    suite = resolve_suite(data)
    sources = _as_sources(embeddings, names)
    stores = _Stores(sources, cache, dtype, progress, read_options)
    results, skipped, files = {}, {}, []
    for name in names:
        task = checked[name]
        required = task.input_files(suite, split)
        absent = [f for f in required if not suite.has(f)]
        if absent:
            skipped[name] = f"missing {', '.join(absent)} in {suite.root}"
            log.warning("skipping %s: %s", name, skipped[name])
            continue
        absent_groups = [group for group in task.groups() if group not in sources]
        if absent_groups:
            skipped[name] = f"no {' or '.join(repr(g) for g in absent_groups)} embeddings given"
            continue
        if audit is not None:
            check_same_suite(audit, str(exclude), split, suite.fingerprint(required), [name])
        files += required
        task_stores = {group: stores.get(group) for group in task.groups()}
        log.info("running %s", name)
        task_started = time.perf_counter()
        result = task.evaluate_groups(suite, task_stores, split=split, missing=missing)
        result.seconds = time.perf_counter() - task_started
        check_coverage(name, result.coverage, min_coverage)
        if audit is not None:
            result = without_leaked(result, excluded_items(audit, name))
        result.ci = confidence_intervals(result.items, list(result.metrics))
        results[name] = result
    if not results:
        raise ScidocsEvalError(f"no task could run on {suite.root}: " + "; ".join(f"{k}: {v}" for k, v in
                                                                             skipped.items()))
    first_source = next(iter(sources.values()))
    model = model or (Path(first_source).stem if not isinstance(first_source, EmbeddingStore)
                      and str(first_source) != STDIN else "embeddings")
    timings = {name: round(result.seconds, 3) for name, result in results.items()}
    timings["loading_embeddings"] = round(stores.seconds, 3)
    timings["total"] = round(time.perf_counter() - started, 3)
    run = RunResult(
        model=model, tasks=results, skipped=skipped,
        settings={"data": str(suite.root), **({"benchmark": benchmark} if benchmark else {}), "tasks": names,
                  "split": split, "missing": missing,
                  "task_params": {k: dict(v) for k, v in params.items()}, "dtype": np.dtype(dtype).name,
                  "min_coverage": min_coverage},
        fingerprints={"embeddings": stores.fingerprints(), "data": suite.fingerprint(sorted(set(files)))},
        timings=timings, synthetic=suite.is_synthetic,
    )
    if audit is not None:
        run.settings["exclude"] = {
            "audit": str(exclude), "sha256": file_sha256(exclude), "leaked_if": audit.data["settings"]["leaked_if"],
            "items_excluded": {name: r.coverage["items_excluded_as_leaked"] for name, r in results.items()}}
    if output is not None:
        run.save(output)
    return run
