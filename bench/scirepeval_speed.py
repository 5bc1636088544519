"""Time every SciRepEval task on precomputed embeddings: a synthetic copy in SciRepEval's layout, `--size` times
the default (about 2,000 papers at size 1), `--dim` float16-exact vectors (24-d by default; 96 and 768 are the
widths of models); prints the size and seconds of each task.

    python bench/scirepeval_speed.py --size 4
    python bench/scirepeval_speed.py --dim 768
    python bench/scirepeval_speed.py --multi-label-scale   # one multi-label fit at SciRepEval's size, each environment

`--multi-label-scale`: one `multi_label` fit (3-fold CV over 5 values of C per label, then the refits: 320 exact
hinge solves) on a seeded problem of SciRepEval's size, 1,200 training papers, 96-d float16 vectors, 20 labels;
prints the CPU time and how many solves were left without their optimality certificate (should be 0).

SciRepEval's own evaluator beside ours on the same copy, with both times and their ratio: bench/scirepeval_agreement.py;
beside a whole `scidocs-eval run` at 96-d and 768-d: bench/side_by_side.py --only scirepeval-run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from scidocs_eval.data.scirepeval import write_embeddings_jsonl
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.evaluators import scirepeval as models
from scidocs_eval.evaluators.scirepeval import ENVIRONMENTS
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval


def multi_label_scale(environments: list[str]) -> None:
    rng = np.random.default_rng(0)
    topics = rng.integers(20, size=1400)
    x = (0.4 * rng.normal(size=(20, 96))[topics] + rng.normal(size=(1400, 96))).astype(np.float16).astype(float)
    y = np.stack([(topics == label) | (rng.random(1400) < 0.1) for label in range(20)], axis=1).astype(int)
    for environment in environments:
        started, cpu = time.perf_counter(), time.process_time()
        fit = models.multi_label(x[:1200], y[:1200], x[1200:], environment)
        print(f"multi-label fit, 1,200 x 96-d x 20 labels, {environment}: {time.process_time() - cpu:.1f} s CPU, "
              f"{time.perf_counter() - started:.1f} s wall; solves without a certificate: {fit.not_converged}; "
              f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1, help="scale of the synthetic copy (papers per config)")
    parser.add_argument("--dim", type=int, default=24, help="width of the synthetic vectors")
    parser.add_argument("--environment", default="lightning", choices=ENVIRONMENTS)
    parser.add_argument("--multi-label-scale", action="store_true", help="one multi-label fit at SciRepEval's size "
                        "in each environment instead")
    args = parser.parse_args()
    if args.multi_label_scale:
        multi_label_scale(list(ENVIRONMENTS))
        return
    with tempfile.TemporaryDirectory(prefix="scirepeval-speed-") as scratch:
        vectors = write_synthetic_scirepeval(Path(scratch) / "data", dim=args.dim, size=args.size)
        embeddings = write_embeddings_jsonl(Path(scratch) / "embeddings.jsonl", vectors)
        names = task_names(benchmark="scirepeval")
        params = {name: {"environment": args.environment} for name in names
                  if "environment" in TASKS[name].parameter_constraints}
        started = time.perf_counter()
        cpu = time.process_time()
        run = evaluate(embeddings, RunConfig(data=Path(scratch) / "data", tasks=names, task_params=params, cache=False,
                                             progress=False))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"SciRepEval on precomputed embeddings: synthetic copy size {args.size} ({len(vectors)} papers, "
          f"{args.dim}-d), "
          f"environment {args.environment}; {platform.node()}, {os.cpu_count()} cores, {datetime.date.today()}")
    print("| task | items scored | seconds (fit and score; intervals not included) |")
    print("|---|---|---|")
    for name, result in run.tasks.items():
        items = len(result.items.get("ids", []))
        print(f"| {name} | {items} | {result.seconds:.2f} |")
    print(f"total: {wall:.1f} s wall, {cpu:.1f} s CPU in this process (user + sys); load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
