"""Time every SciRepEval task on precomputed embeddings: a synthetic copy in SciRepEval's layout, `--size` times
the default (about 2,000 papers at size 1), 24-d float16-exact vectors; prints the size and seconds of each task.

    python bench/scirepeval_speed.py --size 4

SciRepEval's own evaluator beside ours on the same copy, with both times and their ratio: bench/scirepeval_agreement.py.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

from scidocs_eval.data.scirepeval import write_embeddings_jsonl, write_synthetic_scirepeval
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.evaluators.scirepeval import ENVIRONMENTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1, help="scale of the synthetic copy (papers per config)")
    parser.add_argument("--environment", default="lightning", choices=ENVIRONMENTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scirepeval-speed-") as scratch:
        vectors = write_synthetic_scirepeval(Path(scratch) / "data", size=args.size)
        embeddings = write_embeddings_jsonl(Path(scratch) / "embeddings.jsonl", vectors)
        names = task_names(benchmark="scirepeval")
        params = {name: {"environment": args.environment} for name in names
                  if "environment" in TASKS[name].parameter_constraints}
        started = time.perf_counter()
        cpu = time.process_time()
        run = evaluate(embeddings, Path(scratch) / "data", tasks=names, task_params=params, cache=False,
                       progress=False)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"SciRepEval on precomputed embeddings: synthetic copy size {args.size} ({len(vectors)} papers), "
          f"environment {args.environment}; {platform.node()}, {os.cpu_count()} cores, {datetime.date.today()}")
    print("| task | items scored | seconds (fit and score; intervals not included) |")
    print("|---|---|---|")
    for name, result in run.tasks.items():
        items = len(result.items.get("ids", []))
        print(f"| {name} | {items} | {result.seconds:.2f} |")
    print(f"total: {wall:.1f} s wall, {cpu:.1f} s CPU in this process")


if __name__ == "__main__":
    main()
