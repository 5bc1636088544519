"""Time `scidocs-eval leaderboard` at the scale users have: N results files × every task of the `sci` benchmark.

    python bench/leaderboard_speed.py [--models 30] [--resamples auto] [--repeats 3] [--benchmark sci]

Builds N results files of every task of the benchmark (`sci`: SciDocs' seven, MTEB's SciDocs and scientific
retrieval, clustering and classification sets, SciRepEval's tasks), each task's per-item results of its own kind
(`TaskResult.items`, as the task writes them: per-query values of every metric, per-experiment values of a
clustering or MTEB classification, per-iteration values of a few-shot task, per-paper gold and predicted labels,
per-item gold and predictions of a binary, multi-label or regression task, the recommendation's per-seed
propensity terms) at about the size of each test set (`ITEMS`), the printed metric recomputed from them as the
command checks it. Models lie at random distances from each other. The files go to a temporary folder; then, each
--repeats times, in this order:

- the command in a fresh process (`scidocs-eval leaderboard FOLDER --quiet`, markdown to /dev/null): what a user
  waits for, reading and checking every file included; its wall time and the CPU time (user + sys) of that process;
- in this process, each phase of it on the same files: reading them (`load_runs`), ranking
  (`rank_results`: every task's pairwise tests, the averages, Friedman) and rendering the markdown.

Prints the medians, with the machine, its load average and the resamples. Set OPENBLAS_NUM_THREADS=1 (as the
figures in docs/leaderboard.md) to measure on one core.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS, TaskResult, get_task, task_names
from scidocs_eval.leaderboard.ranking import averages, render_markdown
from scidocs_eval.leaderboard.runs import collect_results, load_runs
from scidocs_eval.statistics.ranking_groups import rank_results, resamples_for
from scidocs_eval.statistics.significance import task_metrics

ITEMS: dict[str, int] = {
    # SciDocs: 1,000 test queries a ranking task; MAG's and MeSH's test papers; recomm's test impressions
    "coview": 1000, "coread": 1000, "cite": 1000, "cocite": 1000, "mag": 2500, "mesh": 2000, "recomm": 1000,
    # MTEB: test queries of each retrieval / reranking set
    "scidocs-retrieval": 1000, "scidocs-rr": 3978, "nano-scidocs": 50, "scifact": 300, "nfcorpus": 323,
    "trec-covid": 50, "birco-dorismae": 60, "scidocs-decontaminated": 1000, "scifact-decontaminated": 300,
    "nfcorpus-decontaminated": 323, "trec-covid-decontaminated": 50, "nano-scifact": 50, "nano-nfcorpus": 50,
    "litsearch": 597, "peerqa": 600, "qasper": 1000,
    # SciRepEval: test papers (classification, regression) or queries (proximity, search)
    "scirepeval-biomimicry": 2200, "scirepeval-drsm": 1700, "scirepeval-relish": 3190, "scirepeval-nfcorpus": 323,
    "scirepeval-trec-covid": 50, "scirepeval-paper-reviewer-matching": 100, "scirepeval-peer-review-score": 2000,
    "scirepeval-max-hindex": 2000, "scirepeval-tweet-mentions": 5000, "scirepeval-scidocs-mag": 2500,
    "scirepeval-scidocs-mesh": 2000, "scirepeval-scidocs-cite": 1000, "scirepeval-scidocs-coview": 1000,
    "scirepeval-scidocs-cocite": 1000, "scirepeval-scidocs-coread": 1000, "scirepeval-same-author-detection": 10000,
    "scirepeval-highly-influential-citations": 1200, "scirepeval-search": 2600, "scirepeval-citation-count": 10000,
    "scirepeval-publication-year": 10000, "scirepeval-fields-of-study": 5000, "scirepeval-mesh": 25000,
}
"""Items a task's results hold (test-set sizes, approximate where the source gives only a dataset's row count).
Tasks not named (clustering, MTEB classification, few-shot) hold one item a experiment or iteration."""
CLASSES = {"mag": 19, "mesh": 11, "scirepeval-scidocs-mag": 19, "scirepeval-scidocs-mesh": 11, "scirepeval-drsm": 4,
           "scirepeval-mesh": 30, "scirepeval-fields-of-study": 23}
"""Classes (labels, for the multi-label fields of study) of the classification tasks."""
SEEDS = 5
"""The recommendation's ranker seeds."""
EXPERIMENTS = 10
"""Experiments of an MTEB clustering level or classification (MTEB's default)."""


def _task_items(task: str, rng: np.random.Generator, shared: dict[str, Any], quality: float) -> dict[str, Any]:
    """One model's per-item results of `task`, of the kind and size the task writes; `shared` holds what every
    model of the task has in common (ids, gold labels, propensity weights, a base difficulty per item)."""
    instance = get_task(task)
    metrics = list(instance.metrics)
    unit, n = _unit_and_size(task, instance)
    if not shared:
        shared["ids"] = [f"{task}-{i}" for i in range(n)]
        shared["base"] = rng.beta(2, 2, (n, len(metrics)))
        shared["gold"] = _gold(task, instance, rng, n)
        shared["weight"] = rng.uniform(1, 3, n)
        shared["difficulty"] = rng.beta(0.5, 2, np.shape(shared["gold"]))  # models err on the same hard items
    ids, base, gold = shared["ids"], shared["base"], shared["gold"]
    items: dict[str, Any] = {"unit": unit, "ids": ids}
    if unit in ("query", "iteration"):
        values = np.clip(base + quality + rng.normal(0, 0.15, base.shape), 0, 1)
        items.update({m: values[:, c].tolist() for c, m in enumerate(metrics)})
    elif unit == "impression":
        items.update({"weight": shared["weight"].tolist(), "seeds": list(range(SEEDS))})
        items["adj-NDCG"] = rng.uniform(0.3, 1, (SEEDS, n)).tolist()
        items["adj-P@1"] = (rng.random((SEEDS, n)) < 0.3 + quality).astype(float).tolist()
    elif unit == "paper":
        k = CLASSES[task]
        predicted = np.where(rng.random(n) < shared["difficulty"] * (1 - 3 * quality), rng.integers(0, k, n), gold)
        items.update({"gold": gold.tolist(), "predicted": predicted.tolist()})
    elif getattr(instance, "numeric", False):
        spread = np.std(gold)
        predicted = gold + rng.normal(0, spread * (1.2 - 2 * quality), n)
        items.update({"statistic": {"kendalltau": "kendalltau", "pearsonr": "pearsonr"}, "gold": gold.tolist(),
                      "predicted": predicted.tolist()})
    else:
        flip = rng.random(gold.shape) < shared["difficulty"] * (0.3 - quality)
        predicted = np.where(flip, 1 - gold, gold)
        statistic = "f1_macro_multilabel" if instance.multi_label else "f1_binary"
        items.update({"statistic": {instance.metric: statistic}, "gold": gold.tolist(),
                      "predicted": predicted.tolist()})
    return items


def _unit_and_size(task: str, instance: Any) -> tuple[str, int]:
    family = TASKS[task].spec.family
    if family == "clustering":
        return "iteration", EXPERIMENTS * (2 if "hierarchical" in task else 1)
    if family == "mteb-classification":
        return "iteration", EXPERIMENTS
    if getattr(instance, "iterations", None):
        return "iteration", instance.iterations
    if family == "recomm":
        return "impression", ITEMS[task]
    if task in CLASSES and not getattr(instance, "multi_label", False):
        return "paper", ITEMS[task]
    if family in ("ranking", "retrieval", "reranking") or not hasattr(instance, "multi_label") or \
            hasattr(instance, "measures") or instance.metric in ("map", "ndcg"):
        return "query", ITEMS[task]
    return "sample", ITEMS[task]


def _gold(task: str, instance: Any, rng: np.random.Generator, n: int) -> np.ndarray:
    if task in CLASSES and getattr(instance, "multi_label", False):
        return (rng.random((n, CLASSES[task])) < 1.5 / CLASSES[task]).astype(np.int64)  # 1.5 labels a paper
    if task in CLASSES:
        return rng.integers(0, CLASSES[task], n)
    if getattr(instance, "numeric", False):
        return rng.poisson(rng.gamma(1.5, 4, n)).astype(np.float64)  # counts, years, scores: many ties
    return (rng.random(n) < 0.3).astype(np.int64)


def results(models: int, benchmark: str = "sci", seed: int = 0) -> list[RunResult]:
    """`models` results of every task of `benchmark`, each task's printed metrics recomputed from its items."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(-0.1, 0.1, models)
    shared: dict[str, dict[str, Any]] = {task: {} for task in task_names(benchmark=benchmark)}
    out = []
    for j in range(models):
        tasks = {}
        for task in shared:
            items = _task_items(task, rng, shared[task], float(quality[j]))
            metrics = [m for m in get_task(task).metrics if m in items or m in items.get("statistic", {})
                       or items["unit"] in ("paper", "impression")]
            values = {m: estimator.value() for m, estimator in task_metrics(items, metrics).items()}
            tasks[task] = TaskResult(task, values, {}, items=items)
        out.append(RunResult(f"model-{j:02d}", tasks, settings={"split": "test"},
                             fingerprints={"data": {"cite/test.qrel": "same"}}))
    return out


def _measured(function: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds user + sys of this process, result) of `function()`."""
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = function()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (time.perf_counter() - started,
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, result)


def _command(folder: Path, resamples: int | None) -> tuple[float, float]:
    """(wall, CPU user + sys) of `scidocs-eval leaderboard FOLDER` in a fresh process."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "leaderboard", str(folder), "--quiet",
                    *(["--resamples", str(resamples)] if resamples else [])],
                   check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - started,
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def _median(pairs: list[tuple[float, float]]) -> str:
    walls, cpus = zip(*pairs)
    return (f"wall {statistics.median(walls):.1f} s (of {', '.join(f'{t:.1f}' for t in walls)}), "
            f"CPU {statistics.median(cpus):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--resamples", default="auto", help="'auto' (the command's default) or a number")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--benchmark", default="sci", help="whose tasks the results hold (default: %(default)s)")
    args = parser.parse_args()
    resamples = None if args.resamples == "auto" else int(args.resamples)
    runs = results(args.models, args.benchmark)
    folder = Path(tempfile.mkdtemp(prefix="leaderboard-bench-"))
    for run in runs:
        run.save(folder / f"{run.model}.results.json")
    size = sum(f.stat().st_size for f in folder.iterdir())
    command, loading, ranking, rendering = [], [], [], []
    for _ in range(args.repeats):
        command.append(_command(folder, resamples))
        wall, cpu, loaded = _measured(lambda: load_runs(collect_results([folder])[0]))
        loading.append((wall, cpu))
        ranked = functools.partial(rank_results, [r.result for r in loaded], [r.label for r in loaded], averages(),
                                   resamples, progress=False)
        wall, cpu, board = _measured(ranked)
        ranking.append((wall, cpu))
        wall, cpu, _ = _measured(functools.partial(render_markdown, board))
        rendering.append((wall, cpu))
    cohort = board.cohorts[0]
    pairs = args.models * (args.models - 1) // 2
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min) at the end; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; {time.strftime('%Y-%m-%d')}")
    print(f"{args.models} results files ({size / 1e6:.0f} MB) x {len(runs[0].tasks)} tasks of {args.benchmark}: "
          f"{len(cohort.rankings)} rankings ({sum(len(r.components) == 1 for r in cohort.rankings)} tasks, "
          f"{sum(len(r.components) > 1 for r in cohort.rankings)} averages) of {pairs} pairs each, "
          f"{resamples or resamples_for(args.models)} resamples per test")
    print(f"leaderboard command, fresh process: {_median(command)}")
    print(f"  reading and checking the files (load_runs): {_median(loading)}")
    print(f"  ranking (rank_results): {_median(ranking)}")
    print(f"  markdown (render_markdown): {_median(rendering)}")


if __name__ == "__main__":
    main()
