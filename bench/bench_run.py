"""Time `scidocs-eval run` end to end, cold, on a SciDocs-scale synthetic suite with 768-d embeddings.

Builds (once, under bench/out/) the demo suite at SciDocs scale (MAG 25K papers, MeSH 23K, four ranking tasks
with 1K queries x 30 candidates) and 768-d embeddings of the papers the six tasks score (the test split's
ranking papers: about 170K papers in all, close to SciDocs' 190K), made from the TF-IDF of the text, randomly
projected, plus noise, then runs the six non-recommendation tasks in a
fresh process with an empty cache (parsing included) and again with the parse cache warm. `--format` picks the
embeddings file's kind: JSON lines (the default, as the official code reads them), `.npz` or Parquet. Each run
prints its wall time and its CPU time (user + sys of the process and its workers: the figure that a shared
machine disturbs least) with the load average before and after it.

    python bench/bench_run.py [--dim 768] [--seed 0] [--format npz]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.formats.embeddings_writers import write_batches
from scidocs_eval.formats.suite import Suite

OUT = Path(__file__).resolve().parent / "out"
TASKS = "mag,mesh,coview,coread,cite,cocite"


def build(dim: int, seed: int, kind: str = "jsonl") -> tuple[Suite, Path]:
    suite_dir = OUT / f"scidocs-scale-{seed}"
    embeddings = OUT / f"scidocs-scale-{seed}-{dim}d.{kind}"
    suite = Suite(suite_dir) if (suite_dir / "SYNTHETIC.md").exists() else build_demo_suite(
        suite_dir, DemoConfig.scidocs(seed))
    if not embeddings.exists():
        test_papers = {p for task in TASKS.split(",")[2:] for q, cs in suite.qrels(task, "test").candidates.items()
                       for p in (q, *cs)}
        papers = suite.papers(("mag_mesh",)) + [p for p in suite.papers(("view_cite_read",))
                                                if p.paper_id in test_papers]
        texts = [f"{p.title} {p.abstract}" for p in papers]
        tfidf = TfidfTransformer().fit_transform(HashingVectorizer(n_features=2**14).transform(texts))
        rng = np.random.default_rng(seed)
        projected = tfidf @ rng.standard_normal((2**14, dim)).astype(np.float32)
        vectors = (projected + 1.5 * rng.standard_normal(projected.shape)).astype(np.float32)
        write_batches(embeddings, [([p.paper_id for p in papers], vectors, np.zeros(len(papers), dtype=bool))])
    return suite, embeddings


def children_cpu() -> float:
    """User + sys seconds of the finished child processes (and their waited-for children) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(suite: Suite, embeddings: Path, cache: str) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds, results) of one `scidocs-eval run`."""
    env = {**os.environ, "SCIDOCS_EVAL_CACHE": cache, "SCIDOCS_EVAL_QUIET": "1"}
    with tempfile.TemporaryDirectory() as scratch:  # a new results file each run: `run` never replaces a file
        result_file = Path(scratch) / "results.json"
        start, cpu = time.perf_counter(), children_cpu()
        subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "run", "--embeddings", str(embeddings), "--data",
                        str(suite.root), "--tasks", TASKS, "--output", str(result_file)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - start, children_cpu() - cpu, json.loads(result_file.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("jsonl", "npz", "parquet"), default="jsonl",
                        help="the embeddings file's kind (default: %(default)s)")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    suite, embeddings = build(args.dim, args.seed, args.format)
    size_mb = embeddings.stat().st_size / 1e6
    print(f"suite: {suite.root}\nembeddings: {embeddings} ({size_mb:.0f} MB, {args.dim}-d)")
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as cache:
        cold, cold_cpu, result = timed_run(suite, embeddings, cache)
        loads.append(os.getloadavg()[0])
        warm, warm_cpu, _ = timed_run(suite, embeddings, cache)
        loads.append(os.getloadavg()[0])
    print(f"cpu cores: {os.cpu_count()}")
    print(f"load average (1 min) before the cold run, between the runs, after: {loads[0]:.1f}, {loads[1]:.1f}, "
          f"{loads[2]:.1f}")
    print(f"cold run (parse + six tasks): {cold:.1f} s wall, {cold_cpu:.1f} s CPU (user + sys)")
    print(f"warm run (parse cache hit):   {warm:.1f} s wall, {warm_cpu:.1f} s CPU (user + sys)")
    print("time per step (cold run): " + ", ".join(f"{k} {v:.1f} s" for k, v in result["timings"].items()))
    print("metrics: " + ", ".join(f"{t}: {m}" for t, m in ((t, r["metrics"]) for t, r in result["tasks"].items())))


if __name__ == "__main__":
    main()
