"""Time `scidocs-eval leaderboard` at the scale users have: N results files × every task of the scidocs benchmark.

    python bench/leaderboard_speed.py [--models 30] [--resamples auto] [--repeats 3]

Builds N results files with SciDocs' test-set sizes (1,000 queries for each of coview, coread, cite and cocite;
MAG's 2,500 and MeSH's 2,000 test papers with 19 and 11 classes; 1,000 recomm impressions × 5 ranker seeds),
models at random distances from each other, writes them to a temporary folder, and times the whole command
(loading, checking every file, every ranking, Table 1's Avg, Friedman; markdown printed to /dev/null) and the
ranking alone. Prints the median of --repeats runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from scidocs_eval.cli import main
from scidocs_eval.evaluation.metrics import macro_f1
from scidocs_eval.evaluation.ranking_groups import rank_results, resamples_for
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.significance import MeanItems, PropensityItems
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.leaderboard.ranking import averages

QUERIES, SEEDS, IMPRESSIONS = 1000, 5, 1000
CLASSIFICATION = {"mag": (2500, 19), "mesh": (2000, 11)}


def results(models: int, seed: int = 0) -> list[RunResult]:
    rng = np.random.default_rng(seed)
    quality = rng.uniform(-0.1, 0.1, models)
    ranking_base = {task: rng.beta(2, 2, (QUERIES, 2)) for task in ("coview", "coread", "cite", "cocite")}
    golds = {task: rng.integers(0, k, n) for task, (n, k) in CLASSIFICATION.items()}
    weights = rng.uniform(1, 3, IMPRESSIONS)
    out = []
    for j in range(models):
        tasks = {}
        for task, base in ranking_base.items():
            values = np.clip(base + quality[j] + rng.normal(0, 0.15, base.shape), 0, 1)
            ids = [f"q{i}" for i in range(QUERIES)]
            tasks[task] = TaskResult(task, {m: MeanItems(ids, values[:, c]).value() for c, m in enumerate(("map",
                                                                                                      "ndcg"))},
                                     {}, items={"unit": "query", "ids": ids, "map": values[:, 0].tolist(),
                                                "ndcg": values[:, 1].tolist()})
        for task, (n, k) in CLASSIFICATION.items():
            gold = golds[task]
            predicted = np.where(rng.random(n) < 0.7 + quality[j], gold, rng.integers(0, k, n))
            tasks[task] = TaskResult(task, {"f1": macro_f1(gold, predicted)}, {},
                                     items={"unit": "paper", "ids": [f"p{i}" for i in range(n)],
                                            "gold": gold.tolist(), "predicted": predicted.tolist()})
        terms = {"adj-NDCG": rng.uniform(0.3, 1, (SEEDS, IMPRESSIONS)),
                 "adj-P@1": (rng.random((SEEDS, IMPRESSIONS)) < 0.3 + quality[j]).astype(float)}
        ids = [f"{i}:q{i}" for i in range(IMPRESSIONS)]
        tasks["recomm"] = TaskResult("recomm", {m: PropensityItems(ids, weights, t).value() for m, t in terms.items()},
                                     {}, items={"unit": "impression", "ids": ids, "weight": weights.tolist(),
                                                "seeds": list(range(SEEDS)),
                                                **{m: t.tolist() for m, t in terms.items()}})
        out.append(RunResult(f"model-{j:02d}", tasks, settings={"split": "test"},
                             fingerprints={"data": {"cite/test.qrel": "same"}}))
    return out


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--resamples", default="auto", help="'auto' (the command's default) or a number")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    resamples = None if args.resamples == "auto" else int(args.resamples)
    runs = results(args.models)
    folder = Path(tempfile.mkdtemp(prefix="leaderboard-bench-"))
    for run in runs:
        run.save(folder / f"{run.model}.results.json")
    command, ranking_only, cpu = [], [], []
    for _ in range(args.repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        rank_results(runs, [r.model for r in runs], averages(), resamples, progress=False)
        ranking_only.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["leaderboard", str(folder), "--quiet",
                         *(["--resamples", str(resamples)] if resamples else [])])
        command.append(time.perf_counter() - started)
        assert code == 0
    pairs = args.models * (args.models - 1) // 2
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (load average "
          f"{os.getloadavg()[0]:.1f}); {time.strftime('%Y-%m-%d')}")
    print(f"{args.models} results files x 7 scidocs tasks, {pairs} pairs per ranking, "
          f"{resamples or resamples_for(args.models)} resamples per test, 7 rankings + Table 1 Avg")
    print(f"leaderboard command (load, check, rank, markdown): median {statistics.median(command):.1f} s of "
          f"{', '.join(f'{t:.1f}' for t in command)}")
    print(f"ranking alone (rank_results): median {statistics.median(ranking_only):.1f} s of "
          f"{', '.join(f'{t:.1f}' for t in ranking_only)}; CPU time of this process {statistics.median(cpu):.1f} s")


if __name__ == "__main__":
    main_()
