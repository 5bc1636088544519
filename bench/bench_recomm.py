"""Time the recommendation task at SciDocs scale: 4K train, 1K val, 1K test impressions of 10 shown papers.

The clicks come from the synthetic demo generator (20K papers with authors, citations and years; clicks drawn
with known position propensities); the embeddings are 768-d random vectors (timing does not depend on what they
encode). Reports the one-off feature time and, for each ranker, the seconds per seed (fit with the val grid
and early stopping, then score test), wall and CPU; on a shared machine the CPU time is the steadier figure.

    python bench/bench_recomm.py                      # all rankers, 2 seeds each
    python bench/bench_recomm.py --rankers mlp --seeds 3 --threads 2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.evaluators.recomm_rankers import impression_metrics
from scidocs_eval.formats.embeddings import EmbeddingStore

RANKERS = {"mlp": {"ranker": "mlp"}, "mlp-projection": {"ranker": "mlp", "query_projection": True},
           "lgbm": {"ranker": "lgbm"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rankers", default=",".join(RANKERS), help="comma-separated subset of "
                        f"{', '.join(RANKERS)}")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--output", default="bench/out/bench_recomm.json")
    args = parser.parse_args()

    config = DemoConfig(mag_papers=0, mesh_papers=0, ranking_queries=0, recomm_impressions=(4000, 1000, 1000),
                        recomm_papers=20_000)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        suite = build_demo_suite(Path(tmp) / "suite", config)
        ids = sorted(suite.metadata("recomm"))
        vectors = np.random.default_rng(0).standard_normal((len(ids), args.dim)).astype(np.float32)
        store = EmbeddingStore(ids, vectors, np.zeros(len(ids), dtype=bool))
        print(f"suite + embeddings built in {time.perf_counter() - started:.1f} s")

        importlib.import_module("torch")  # imported once per process; not a per-seed cost
        started = time.perf_counter()
        recomm = get_task("recomm")
        shown, coverage = recomm.shown_papers(recomm.load(suite, "test"), store)
        feature_seconds = time.perf_counter() - started
        print(f"features of {coverage['shown_papers']} shown papers: {feature_seconds:.2f} s")

        report = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible",
                  "threads": args.threads, "dim": args.dim, "impressions": [4000, 1000, 1000],
                  "feature_seconds": round(feature_seconds, 2), "rankers": {}}
        for name in args.rankers.split(","):
            task = get_task("recomm", threads=args.threads, **RANKERS[name])
            seconds, cpu_seconds, metrics = [], [], []
            for seed in range(args.seeds):
                started, cpu_started = time.perf_counter(), time.process_time()
                ranker = task.make_ranker(seed).fit(shown["train"], shown["val"])
                metrics.append(impression_metrics(shown["test"], ranker.score(shown["test"])))
                seconds.append(time.perf_counter() - started)
                cpu_seconds.append(time.process_time() - cpu_started)
            report["rankers"][name] = {"seconds_per_seed": [round(s, 2) for s in seconds],
                                       "cpu_seconds_per_seed": [round(s, 2) for s in cpu_seconds],
                                       "test": metrics, "chosen": ranker.best_params_}
            print(f"{name:<15} seconds per seed (wall / CPU): "
                  f"{', '.join(f'{s:.1f}/{c:.1f}' for s, c in zip(seconds, cpu_seconds))}   "
                  f"test adj-nDCG {metrics[-1]['adj-NDCG']}  chosen {ranker.best_params_}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
