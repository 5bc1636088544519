"""A whole `scidocs-eval run` of top-1000 retrieval against numpy's product of the same two matrices, with the
run's stages, on this checkout's code and (``--before``) another checkout's.

Builds once, under bench/out/, a BEIR-layout retrieval set (the `scidocs-retrieval` task's folder: `--queries`
queries, `--documents` documents with short texts, 5 graded judgements per query) and one `.npz` holding every
query's and document's random float32 vector. Then, per checkout, in one fresh process (the checkout's own virtual
environment, `--tasks scidocs-retrieval --no-cache`): numpy's product of the query matrix by the document matrix
read from the same `.npz` (blocks of 20,000 documents, best of two: the machine's arithmetic floor for the
search), then the command itself, with each stage timed by wrapping the function that does it:

- imports: every import of the run (`-X importtime`: the cumulative time of each top-level import from the run's
  start on, lazy ones included);
- read vectors (`EmbeddingStore.load`), read corpus (`read_retrieval_data`, every call), search (`search`),
  metrics (`mteb_top_k_measures` / `mteb_retrieval_measures`), intervals (`confidence_intervals`);
- other: the rest of the run's wall time (argument checks, the run of dicts the older code builds, writing).

It prints each stage and the ratio of the run's wall time to the product's, the figure that carries across loads,
the stages around the search (everything but the search: they come before it or consume its output) against the
product (a run is ≤ 2× the product only if they fit in one product's time), and beside them the CPU times
(`time.process_time`: every thread of the process) of the run, the product and the stages: on a shared machine
wall times swing with the other jobs, CPU times much less.

    python bench/top1000_run.py                                    # 1,000 x 200,000 x 768: the issue's size
    python bench/top1000_run.py --documents 50000 --before /work/main
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"

CHILD = r"""
import functools, json, sys, time
start = time.perf_counter()
import numpy as np
vectors_file, data, results = sys.argv[1:4]
archive = np.load(vectors_file)
ids, matrix = archive["ids"], archive["embeddings"]
is_query = np.char.startswith(ids.astype(str), "q")
queries, documents = matrix[is_query], matrix[~is_query]
del archive, matrix
product = []
for _ in range(2):
    began, cpu = time.perf_counter(), time.process_time()
    out = np.empty((len(queries), 20_000), dtype=np.float32)
    for block in range(0, len(documents), 20_000):
        part = documents[block:block + 20_000]
        np.matmul(queries, part.T, out=out[:, :len(part)])
    product.append((time.perf_counter() - began, time.process_time() - cpu))
del queries, documents, out

stages, stages_cpu = {}, {}
def timed(owner, name, stage):
    function = getattr(owner, name, None)
    if function is None:
        return
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        began, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            stages[stage] = stages.get(stage, 0.0) + time.perf_counter() - began
            stages_cpu[stage] = stages_cpu.get(stage, 0.0) + time.process_time() - cpu
    setattr(owner, name, staticmethod(wrapper) if isinstance(owner, type) else wrapper)

run_start, run_cpu = time.perf_counter(), time.process_time()
import colorsys  # marks, in -X importtime's output, where the run's imports begin
from scidocs_eval.cli.main import main
import scidocs_eval.evaluation.runner as runner
import scidocs_eval.formats.embeddings as embeddings
import scidocs_eval.tasks.retrieval as retrieval
load = embeddings.EmbeddingStore.load.__func__
def loaded(cls, *args, **kwargs):
    began, cpu = time.perf_counter(), time.process_time()
    try:
        return load(cls, *args, **kwargs)
    finally:
        stages["read vectors"] = stages.get("read vectors", 0.0) + time.perf_counter() - began
        stages_cpu["read vectors"] = stages_cpu.get("read vectors", 0.0) + time.process_time() - cpu
embeddings.EmbeddingStore.load = classmethod(loaded)
timed(retrieval, "read_retrieval_data", "read corpus")
timed(retrieval, "search", "search")
timed(retrieval, "mteb_top_k_measures", "metrics")
timed(retrieval, "mteb_retrieval_measures", "metrics")
timed(runner, "confidence_intervals", "intervals")
status = main(["run", "--embeddings", vectors_file, "--data", data, "--tasks", "scidocs-retrieval", "--no-cache",
               "--quiet", "--overwrite", "-o", results])
run, cpu = time.perf_counter() - run_start, time.process_time() - run_cpu
product_wall, product_cpu = min(product)
print(json.dumps({"status": status, "product": product_wall, "product_cpu": product_cpu, "run": run, "run_cpu": cpu,
                  "stages": stages, "stages_cpu": stages_cpu}))
"""


def build(queries: int, documents: int, dim: int, seed: int) -> tuple[Path, Path]:
    """The suite folder and the `.npz` of a size (written once)."""
    root = OUT / f"top1000-{queries}x{documents}x{dim}"
    folder, vectors = root / "data" / "scidocs-retrieval", root / "vectors.npz"
    if vectors.exists():
        return root / "data", vectors
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    words = np.array(["graph", "neural", "protein", "citation", "model", "retrieval", "cell", "theory", "data"])
    with open(folder / "corpus.jsonl", "w") as corpus:
        for d in range(documents):
            title, text = " ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 12))
            corpus.write(json.dumps({"_id": f"d{d}", "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as lines:
        for q in range(queries):
            lines.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choice(words, 6))}) + "\n")
    with open(folder / "qrels" / "test.tsv", "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for q in range(queries):
            for d in rng.choice(documents, 5, replace=False):
                qrels.write(f"q{q}\td{d}\t{rng.integers(1, 3)}\n")
    ids = np.array([f"q{q}" for q in range(queries)] + [f"d{d}" for d in range(documents)])
    matrix = np.empty((queries + documents, dim), dtype=np.float32)
    for start in range(0, len(matrix), 100_000):
        stop = min(len(matrix), start + 100_000)
        matrix[start:stop] = rng.standard_normal((stop - start, dim), dtype=np.float32)
    np.savez(vectors, ids=ids, embeddings=matrix)
    return root / "data", vectors


def measure(checkout: Path, data: Path, vectors: Path) -> dict:
    """One fresh process of `checkout`'s virtual environment: the product, then the run, its stages timed."""
    python = checkout / ".venv" / "bin" / "python"
    results = OUT / f"top1000-{checkout.name}.results.json"
    began = time.perf_counter()
    done = subprocess.run([str(python), "-X", "importtime", "-c", CHILD, str(vectors), str(data), str(results)],
                          cwd=checkout, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode:
        sys.exit(f"{checkout}: the run failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:") and "cumulative" not in line]
    run_imports = lines[next(i for i, line in enumerate(lines) if line.endswith("| colorsys")):]
    imports = sum(int(line.split("|")[1]) for line in run_imports if not line.split("|")[2][1:].startswith(" ")) / 1e6
    figures["stages"] = {"imports": imports, **figures["stages"]}
    figures["stages"]["other"] = figures["run"] - sum(figures["stages"].values())
    figures["process"] = wall
    return figures


def report(label: str, figures: dict) -> None:
    cpu = figures["stages_cpu"]
    stages = ", ".join(f"{name} {seconds:.1f}" + (f" ({cpu[name]:.1f})" if name in cpu else "")
                       for name, seconds in figures["stages"].items())
    print(f"{label}: run {figures['run']:.1f} s = {figures['run'] / figures['product']:.2f} x numpy's product "
          f"({figures['product']:.1f} s); CPU {figures['run_cpu']:.1f} s = "
          f"{figures['run_cpu'] / figures['product_cpu']:.2f} x the product's ({figures['product_cpu']:.1f} s)  "
          f"[stages, wall (CPU): {stages}]")
    around = figures["run"] - figures["stages"]["search"]
    print(f"{label}: the stages before and after the search, which cannot overlap it (its input, its output's "
          f"consumers), took {around:.1f} s = {around / figures['product']:.2f} x the product: a search that cost "
          f"exactly one product would leave the run at {1 + around / figures['product']:.2f} x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", type=Path, help="another checkout (with its .venv) to measure first")
    args = parser.parse_args()
    data, vectors = build(args.queries, args.documents, args.dim, args.seed)
    print(f"{platform.node()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}, load before "
          f"{os.getloadavg()[0]:.1f}; {args.queries} queries x {args.documents} documents x {args.dim}, "
          f"{vectors.stat().st_size / 2**20:.0f} MiB .npz")
    here = Path(__file__).resolve().parents[1]
    for label, checkout in ([("before", args.before)] if args.before else []) + [("after", here)]:
        report(label, measure(checkout.resolve(), data, vectors))
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
