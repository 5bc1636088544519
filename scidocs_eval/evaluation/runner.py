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
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.significance import confidence_intervals
from scidocs_eval.evaluation.task import (
    DEFAULT_MIN_COVERAGE,
    TASKS,
    MissingPolicy,
    build_tasks,
    check_coverage,
    embedding_groups,
    task_names,
)
from scidocs_eval.extras import MissingExtraError
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.safe_output import claim_output
from scidocs_eval.formats.suite import Suite
from scidocs_eval.params import FRACTION, check_value

log = logging.getLogger("scidocs_eval")

EmbeddingsSource = str | os.PathLike | EmbeddingStore


class _Stores:
    """Loads each embeddings file once, even when several groups share it."""

    def __init__(self, sources: Mapping[str, EmbeddingsSource], cache: bool, dtype: Any, progress: bool):
        self.sources = sources
        self.cache, self.dtype, self.progress = cache, dtype, progress
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
                                                   progress=self.progress)
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


def _as_sources(embeddings: EmbeddingsSource | Mapping[str, EmbeddingsSource]) -> dict[str, EmbeddingsSource]:
    groups = tuple(embedding_groups())
    if isinstance(embeddings, Mapping):
        unknown = set(embeddings) - set(groups)
        if unknown:
            raise ScidocsEvalError(f"unknown embeddings group(s) {sorted(unknown)}; use {groups}")
        return dict(embeddings)
    return dict.fromkeys(groups, embeddings)


def evaluate(
    embeddings: EmbeddingsSource | Mapping[str, EmbeddingsSource],
    data: str | os.PathLike[str] | Suite | None = None,
    *,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    missing: MissingPolicy = "official",
    task_params: Mapping[str, Mapping[str, Any]] | None = None,
    model: str | None = None,
    output: str | os.PathLike[str] | None = None,
    cache: bool = True,
    dtype: Any = np.float32,
    progress: bool = True,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> RunResult:
    """Score embeddings on the SciDocs tasks.

    Args:
        embeddings: one JSON lines file (or EmbeddingStore) for every task, or a mapping from the official
            groups ("cls", "user-citation", "recomm") to one file each.
        data: suite directory, "demo", a Suite, or None for the default data directory.
        tasks: task names (default: all registered ones). Tasks whose files are absent are skipped with a note;
            a task whose optional package is missing is not run and is listed in `result.failed` with the
            extra to install (the other tasks are scored; the CLI exits with status 2).
        split: "test" (what the paper reports) or "val".
        missing: "official" (the official rules for papers without an embedding) or "error".
        task_params: constructor parameters per task name, e.g. {"recomm": {"seeds": 3}}.
        model: the name results and tables show (default: the embeddings file's stem).
        output: where to write the results JSON (none by default).
        cache: reuse/write the parsed-embeddings cache.
        dtype: the matrix's dtype (float32; float64 keeps every digit of the file).
        min_coverage: the least share (0..1) of each task's queries, candidates or papers with a usable
            embedding; below it, or with none at all, a CoverageError (a warning line whenever any lacks one).

    Returns:
        a RunResult; `result.tasks[name].metrics` holds the numbers (×100, 2 decimals).
    """
    if split not in ("test", "val"):
        raise ScidocsEvalError(f"split must be 'test' or 'val', not {split!r}")
    if missing not in ("official", "error"):
        raise ScidocsEvalError(f"missing must be 'official' or 'error', not {missing!r}")
    check_value("min_coverage", min_coverage, [FRACTION], "evaluate")
    names = TASKS.check(tasks) if tasks else task_names()
    params = task_params or {}
    checked = build_tasks(names, params)
    if output is not None:
        claim_output(output)
    started = time.perf_counter()
    suite = resolve_suite(data)
    sources = _as_sources(embeddings)
    stores = _Stores(sources, cache, dtype, progress)
    results, skipped, failed, files = {}, {}, {}, []
    for name in names:
        task = checked[name]
        required = task.required_files(split)
        absent = [f for f in required if not suite.has(f)]
        if absent:
            skipped[name] = f"missing {', '.join(absent)} in {suite.root}"
            log.warning("skipping %s: %s", name, skipped[name])
            continue
        if task.embedding_group not in sources:
            skipped[name] = f"no {task.embedding_group!r} embeddings given"
            continue
        try:
            for requirement in task.requirements():
                requirement.import_module()
            files += required
            store = stores.get(task.embedding_group)
            log.info("running %s", name)
            task_started = time.perf_counter()
            result = task.evaluate(suite, store, split=split, missing=missing)
        except MissingExtraError as error:
            failed[name] = str(error)  # the CLI reports it (exit status 2); format_table shows it
            continue
        result.seconds = time.perf_counter() - task_started
        check_coverage(name, result.coverage, min_coverage)
        result.ci = confidence_intervals(result.items, list(result.metrics))
        results[name] = result
    if not results:
        raise ScidocsEvalError(f"no task could run on {suite.root}: " + "; ".join(f"{k}: {v}" for k, v in
                                                                             {**skipped, **failed}.items()))
    first_source = next(iter(sources.values()))
    model = model or (Path(first_source).stem if not isinstance(first_source, EmbeddingStore) else "embeddings")
    timings = {name: round(result.seconds, 3) for name, result in results.items()}
    timings["loading_embeddings"] = round(stores.seconds, 3)
    timings["total"] = round(time.perf_counter() - started, 3)
    run = RunResult(
        model=model, tasks=results, skipped=skipped, failed=failed,
        settings={"data": str(suite.root), "tasks": names, "split": split, "missing": missing,
                  "task_params": {k: dict(v) for k, v in params.items()}, "dtype": np.dtype(dtype).name,
                  "min_coverage": min_coverage},
        fingerprints={"embeddings": stores.fingerprints(), "data": suite.fingerprint(sorted(set(files)))},
        timings=timings, synthetic=suite.is_synthetic,
    )
    if output is not None:
        run.save(output)
    return run
