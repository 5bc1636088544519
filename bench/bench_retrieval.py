"""Time and peak memory of full-corpus retrieval scoring (what `scidocs-retrieval` does after loading vectors).

Random float32 vectors (SCIDOCS size by default: 1,000 queries x 25,657 documents, 768-d) and random graded
judgements (5 per query); each engine runs in its own subprocess limited to `--threads` BLAS/OpenMP threads, and
reports: the top-1000 search, MTEB's metrics on the run (pytrec_eval + MRR), and the process's peak RSS
(`resource.getrusage`, the vectors included). Embedding and file parsing are not part of it.

    python bench/bench_retrieval.py                                  # SCIDOCS size, numpy and faiss
    python bench/bench_retrieval.py --documents 1000000 --engines numpy
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

CHILD = """
import json, resource, sys, time
import numpy as np
from scidocs_eval.evaluators.retrieval_search import search
from scidocs_eval.evaluation.metrics import mteb_retrieval_measures, mteb_scores
queries, documents, dim, engine, threads = json.loads(sys.argv[1])
if engine.startswith("faiss"):
    import faiss
    faiss.omp_set_num_threads(threads)
rng = np.random.default_rng(0)
query_vectors = rng.standard_normal((queries, dim), dtype=np.float32)
document_vectors = np.empty((documents, dim), dtype=np.float32)
for start in range(0, documents, 100_000):
    stop = min(documents, start + 100_000)
    document_vectors[start:stop] = rng.standard_normal((stop - start, dim), dtype=np.float32)
ids = [f"d{i}" for i in range(documents)]
qrels = {f"q{q}": {ids[d]: int(rng.integers(1, 3)) for d in rng.choice(documents, 5, replace=False)}
         for q in range(queries)}
start = time.perf_counter()
found = search(query_vectors, document_vectors, ids, 1000, "cosine", engine)
searched = time.perf_counter()
run = {f"q{q}": {ids[i]: float(s) for i, s in zip(row_i, row_s)}
       for q, (row_i, row_s) in enumerate(zip(found.indices, found.scores))}
scores = mteb_scores(mteb_retrieval_measures(qrels, run))
done = time.perf_counter()
print(json.dumps({"engine": engine, "search_s": round(searched - start, 2), "metrics_s": round(done - searched, 2),
                  "total_s": round(done - start, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "vectors_mb": round((query_vectors.nbytes + document_vectors.nbytes) / 2**20),
                  "details": found.details}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--documents", type=int, default=25657)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--engines", default="numpy,faiss", help="comma-separated: numpy, faiss, faiss-hnsw, ...")
    parser.add_argument("--threads", type=int, default=2, help="BLAS/OpenMP threads (default: %(default)s)")
    args = parser.parse_args()
    env = {**os.environ, **{name: str(args.threads) for name in
                            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    print(f"{args.queries} queries x {args.documents} documents, {args.dim}-d, {args.threads} threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for engine in args.engines.split(","):
        payload = json.dumps([args.queries, args.documents, args.dim, engine, args.threads])
        output = subprocess.run([sys.executable, "-c", CHILD, payload], env=env, check=True, capture_output=True,
                                text=True).stdout
        print(output.strip())


if __name__ == "__main__":
    main()
