"""Time `compare` and the per-run confidence intervals at SciDocs scale, and measure the results file's size.

Two synthetic results with SciDocs' test-set sizes: MAG 5,000 test papers (19 classes), MeSH 4,600 (11
classes), 1,000 queries for each of the four ranking tasks, 1,000 recommendation impressions × 5 ranker seeds
(the demo generator's `DemoConfig.scidocs()` split sizes). Per-item values are drawn at random, B a little better
than A; timings do not depend on the values. Reports wall and CPU seconds of:
- the 95% intervals of all twelve metrics of one result (what `evaluate` adds to every run);
- `compare(A, B)` over all twelve metrics (paired bootstrap + randomization test + Holm);
and the size of one results JSON file as `RunResult.save` writes it (indented).

    python bench/bench_compare.py                   # 10,000 resamples
    python bench/bench_compare.py --resamples 2000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from scidocs_eval.evaluation.comparison import compare
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.leaderboard.compare_table import format_comparison
from scidocs_eval.statistics.significance import confidence_intervals, task_metrics

RANKING = ("coview", "coread", "cite", "cocite")
CLASSIFICATION = {"mag": (5000, 19), "mesh": (4600, 11)}
QUERIES, IMPRESSIONS, SEEDS = 1000, 1000, 5


def _paper_ids(prefix: str, n: int) -> list[str]:
    """40-hex-digit ids like SciDocs' paper ids (they dominate the file size)."""
    return [f"{prefix}{i:0>{40 - len(prefix)}x}" for i in range(n)]


def synthetic_results(rng: np.random.Generator, skill: float) -> RunResult:
    """A RunResult with SciDocs-scale per-item results; `skill` in [0, 1] raises every metric a little.
    The suite's side (ids, gold labels, propensity weights) is the same for every call."""
    suite = np.random.default_rng(1)
    tasks = {}
    for name, (n, classes) in CLASSIFICATION.items():
        gold = suite.integers(0, classes, size=n)
        correct = rng.uniform(size=n) < 0.75 + 0.05 * skill
        predicted = np.where(correct, gold, rng.integers(0, classes, size=n))
        tasks[name] = {"unit": "paper", "ids": _paper_ids(name, n), "gold": gold.tolist(),
                       "predicted": predicted.tolist()}
    for name in RANKING:
        items: dict = {"unit": "query", "ids": _paper_ids(name, QUERIES)}
        for metric in ("map", "ndcg"):
            items[metric] = np.clip(rng.beta(4, 2, size=QUERIES) + 0.01 * skill, 0, 1).tolist()
        tasks[name] = items
    above = rng.integers(0, 10, size=(SEEDS, IMPRESSIONS)) - int(skill)
    above = np.maximum(above, 0).astype(np.float64)
    tasks["recomm"] = {"unit": "impression", "ids": [f"{i + 2}:{q}" for i, q in
                                                     enumerate(_paper_ids("q", IMPRESSIONS))],
                       "weight": (1 / suite.uniform(0.1, 1, size=IMPRESSIONS)).tolist(), "seeds": list(range(SEEDS)),
                       "adj-NDCG": (1 / np.log2(2 + above)).tolist(), "adj-P@1": (above == 0).astype(float).tolist()}
    results = {}
    for name, items in tasks.items():
        metrics = ["f1"] if items["unit"] == "paper" else \
            ["adj-NDCG", "adj-P@1"] if items["unit"] == "impression" else ["map", "ndcg"]
        values = {m: e.value() for m, e in task_metrics(items, metrics).items()}
        results[name] = TaskResult(name, values, {}, items=items)
    return RunResult(model=f"synthetic-{skill}", tasks=results, settings={"split": "test"},
                     fingerprints={"data": {"mag/test.csv": "0" * 64}})


def _timed(function) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a, b = synthetic_results(rng, 0.0), synthetic_results(rng, 1.0)
    ci_wall, ci_cpu, _ = _timed(lambda: {n: confidence_intervals(r.items, list(r.metrics), args.resamples)
                                         for n, r in a.tasks.items()})
    for result in a.tasks.values():
        result.ci = confidence_intervals(result.items, list(result.metrics), 1000)
    cmp_wall, cmp_cpu, comparison = _timed(lambda: compare(a, b, resamples=args.resamples, progress=False))
    with tempfile.TemporaryDirectory() as tmp:
        size = a.save(Path(tmp) / "a.results.json").stat().st_size
    print(format_comparison(comparison))
    print(json.dumps({
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores visible",
        "resamples": args.resamples, "metrics": sum(len(r.metrics) for r in a.tasks.values()),
        "intervals_one_result_s": {"wall": round(ci_wall, 2), "cpu": round(ci_cpu, 2)},
        "compare_two_results_s": {"wall": round(cmp_wall, 2), "cpu": round(cmp_cpu, 2)},
        "results_json_mb": round(size / 1e6, 2),
    }, indent=2))


if __name__ == "__main__":
    main()
