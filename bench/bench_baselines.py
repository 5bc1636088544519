"""Fit + embed time and peak memory of doc2vec, fasttext-sum, sif and sgc on a synthetic corpus.

Each baseline runs in its own subprocess (fresh cache, so training is not skipped); peak memory is that
subprocess's own max RSS (`resource.getrusage(RUSAGE_SELF)`, gensim's native buffers included). The corpus
is synthetic text from `scidocs_eval.data.demo` (made-up topical words), `--papers` papers of about `--tokens`
tokens; SciDocs scale is about 130K papers of ~200 tokens. Times at a smaller scale can be extrapolated
linearly in corpus size (every step is linear in tokens); label such figures as extrapolated.

    python bench/bench_baselines.py --papers 130000 --tokens 200 [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, resource, sys, time
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.formats.corpus import read_papers
papers = read_papers(sys.argv[1])
adapter = get_adapter(sys.argv[2], **json.loads(sys.argv[3]))
start = time.perf_counter()
adapter.fit(papers)
fitted = time.perf_counter()
matrix = adapter.transform(papers)
print(json.dumps({"fit_s": fitted - start, "embed_s": time.perf_counter() - fitted, "dim": matrix.shape[1],
                  "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def write_corpus(path: Path, papers: int, tokens: int, seed: int) -> list[str]:
    """`papers` synthetic papers (JSON lines) of about `tokens` tokens each, from the demo text generator."""
    from scidocs_eval.data.demo import DemoConfig, _Generator

    generator = _Generator(DemoConfig(seed=seed, topics=200))
    ids = []
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(papers):
            record = generator.paper(int(generator.rng.integers(generator.config.topics)))
            abstract = generator._text(record["_topic"], record["_subtopic"], tokens, (0.2, 0.25, 0.15))
            handle.write(json.dumps({"paper_id": record["paper_id"], "title": record["title"],
                                     "abstract": abstract}) + "\n")
            ids.append(record["paper_id"])
    return ids


def write_citations(path: Path, ids: list[str], per_paper: int, seed: int) -> None:
    """Random citation edges (TSV citing<TAB>cited), `per_paper` references each, for sgc to propagate over."""
    import numpy as np

    rng = np.random.default_rng(seed)
    cited = rng.integers(len(ids), size=(len(ids), per_paper))
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"{ids[i]}\t{ids[j]}\n" for i in range(len(ids)) for j in cited[i])


def run_one(corpus: Path, name: str, params: dict) -> dict:
    """Fit + embed `name` in a fresh subprocess; its timings and max RSS (GiB)."""
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache:
        env = {**os.environ, "SCIDOCS_EVAL_CACHE": cache, "SCIDOCS_EVAL_QUIET": "1"}
        started = time.perf_counter()
        output = subprocess.run([sys.executable, "-c", CHILD, str(corpus), name, json.dumps(params)], env=env,
                                check=True, capture_output=True, text=True).stdout
        wall = time.perf_counter() - started
    result = json.loads(output.strip().splitlines()[-1])
    result.update(name=name, wall_s=wall)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=130_000)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--baselines", default="sif,sgc,fasttext-sum,doc2vec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="training threads (fastText `threads`, doc2vec `workers`); > 1 is not bit-reproducible")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as folder:
        corpus = Path(folder) / "corpus.jsonl"
        ids = write_corpus(corpus, args.papers, args.tokens, args.seed)
        print(f"corpus: {args.papers} papers x ~{args.tokens} tokens; {os.cpu_count()} CPUs", flush=True)
        citations = Path(folder) / "citations.tsv"
        write_citations(citations, ids, 5, args.seed)
        for name in args.baselines.split(","):
            params: dict = {"workers" if name == "doc2vec" else "threads": args.threads}
            if name == "sgc":
                params["citations"] = str(citations)
            result = run_one(corpus, name, params)
            print(f"{name:<13} fit {result['fit_s']:8.1f} s  embed {result['embed_s']:7.1f} s  "
                  f"max RSS {result['max_rss_gib']:.2f} GiB  (dim {result['dim']})", flush=True)


if __name__ == "__main__":
    main()
