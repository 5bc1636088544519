"""Time and peak memory of full-corpus retrieval scoring (what `scidocs-retrieval` does after loading vectors).

Random float32 vectors (SCIDOCS size by default: 1,000 queries x 25,657 documents, 768-d) and random graded
judgements (5 per query); each engine runs in its own subprocess limited to `--threads` BLAS/OpenMP threads, and
reports: the top-1000 search, MTEB's metrics on the run (pytrec_eval + MRR), and the process's peak RSS
(`resource.getrusage`, the vectors included). Embedding and file parsing are not part of it.

Beside the search time it prints the arithmetic rate the search achieved (2 x queries x documents x dim
floating-point operations over the search's seconds) and the machine's measured float32 GEMM rate in the same
process and threads (numpy's product of a 2,048 x dim block by dim x 20,000, best of three), and, with
`--check N`, compares N queries' top k with a straightforward reference (each query's whole row of scores,
sorted by score then document id).

    python bench/bench_retrieval.py                                  # SCIDOCS size, numpy and faiss
    python bench/bench_retrieval.py --documents 100000 --engines numpy --check 32      # about a minute
    python bench/bench_retrieval.py --documents 1000000 --engines numpy               # 3 GB of vectors
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
queries, documents, dim, engine, threads, check = json.loads(sys.argv[1])
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
left, right = rng.standard_normal((2048, dim), dtype=np.float32), rng.standard_normal((dim, 20000), dtype=np.float32)
gemm_times = []
for _ in range(3):
    t0 = time.perf_counter()
    left @ right
    gemm_times.append(time.perf_counter() - t0)
gemm_s = min(gemm_times)
checked = {}
if check:
    from scidocs_eval.evaluators.retrieval_search import prepare
    sample = rng.choice(queries, check, replace=False)
    rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"))
    unit_q = prepare(query_vectors[sample], "cosine")
    reference = np.concatenate([unit_q @ prepare(document_vectors[s:s + 100_000], "cosine").T
                                for s in range(0, documents, 100_000)], axis=1)
    order = np.stack([np.lexsort((-rank, -row))[:1000] for row in reference])
    checked = {"checked_queries": check, "same_documents": bool(np.array_equal(order, found.indices[sample])),
               "max_score_difference": float(np.abs(np.take_along_axis(reference, order, axis=1)
                                                    - found.scores[sample]).max())}
print(json.dumps({"engine": engine, "search_s": round(searched - start, 2), "metrics_s": round(done - searched, 2),
                  "total_s": round(done - start, 2),
                  "search_gflops": round(2 * queries * documents * dim / (searched - start) / 1e9, 1),
                  "gemm_gflops": round(2 * 2048 * dim * 20000 / gemm_s / 1e9, 1), **checked,
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
    parser.add_argument("--check", type=int, default=0, metavar="N",
                        help="compare N queries' top k with a straightforward reference")
    args = parser.parse_args()
    env = {**os.environ, **{name: str(args.threads) for name in
                            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    print(f"{args.queries} queries x {args.documents} documents, {args.dim}-d, {args.threads} threads; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    for engine in args.engines.split(","):
        payload = json.dumps([args.queries, args.documents, args.dim, engine, args.threads, args.check])
        output = subprocess.run([sys.executable, "-c", CHILD, payload], env=env, check=True, capture_output=True,
                                text=True).stdout
        print(output.strip())


if __name__ == "__main__":
    main()
