"""How many times one run parses each dataset file: a retrieval set (BEIR), a clustering set and the SciDocs suite.

    python bench/parses_per_run.py [--documents N]

Builds a small suite (the demo suite's seven SciDocs tasks, `scidocs-retrieval` as a BEIR set of N documents,
`biorxiv-clustering-p2p`) and, in a fresh process of the same Python (another checkout's environment, e.g.
`/work/main/.venv/bin/python bench/parses_per_run.py`, gives the "before" figures), counts every parse of a file
through the line readers
(`formats.lines.json_lines` / `utf8_lines`, which every dataset reader uses) in two runs: `run`'s road (vectors
given: `evaluate(file)`) and a model's road (`evaluate_model`). Prints one line per run and file: parses, and
whether the retrieval corpus was read with its texts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CASE = r'''
import json, sys
from collections import Counter
from pathlib import Path
import numpy as np
import scidocs_eval.formats.lines as lines
import scidocs_eval.formats.retrieval as retrieval
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS
from scidocs_eval.run.model_object import evaluate_model

TASKS.names()  # every task module imported: each reader's module is patched below

root, vectors, tasks = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
counts, corpus_texts = Counter(), Counter()

def counting(read):
    def wrapped(path, *args, **kwargs):
        counts[str(Path(path).relative_to(root))] += 1
        return read(path, *args, **kwargs)
    return wrapped

originals = {name: getattr(lines, name) for name in ("json_lines", "utf8_lines")}
for module in [m for name, m in list(sys.modules.items()) if name.startswith("scidocs_eval")]:
    for name, read in originals.items():
        if getattr(module, name, None) is read:
            setattr(module, name, counting(read))
read_corpus = retrieval._read_beir_corpus
def texts_read(path):
    corpus_texts[str(Path(path).relative_to(root))] += 1
    return read_corpus(path)
retrieval._read_beir_corpus = texts_read

out = {}
evaluate(vectors, root, tasks=tasks, cache=False, progress=False)
out["run --embeddings"] = [dict(counts), dict(corpus_texts)]
counts.clear(); corpus_texts.clear()
def model(texts):
    return np.random.default_rng(len(texts)).standard_normal((len(texts), 16)).astype(np.float32)
evaluate_model(model, root, tasks=tasks, cache=False, progress=False)
out["evaluate_model"] = [dict(counts), dict(corpus_texts)]
print(json.dumps(out))
'''

TASKS = ["mag", "mesh", "coview", "coread", "cite", "cocite", "recomm", "scidocs-retrieval", "biorxiv-clustering-p2p"]


def build(folder: Path, documents: int) -> tuple[Path, Path]:
    """The suite and one embeddings file with a vector for every paper, query, document and text."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from builders import build_retrieval_dataset, write_clustering_copy, write_vectors

    from scidocs_eval.data.demo import DemoConfig, build_demo_suite
    from scidocs_eval.formats.hf_rows import text_id

    suite = build_demo_suite(folder / "suite", DemoConfig.small(0))
    retrieval = build_retrieval_dataset(suite.root / "scidocs-retrieval", documents=documents, queries=50)
    texts = write_clustering_copy(suite.root, "biorxiv-clustering-p2p", 1200)
    rng = np.random.default_rng(0)
    vectors = {paper.paper_id: rng.standard_normal(16) for paper in suite.papers()}
    vectors.update({k: np.resize(v, 16) for k, v in {**retrieval["queries"], **retrieval["corpus"]}.items()})
    vectors.update({text_id(text): np.resize(vector, 16) for text, vector in texts.items()})
    return suite.root, write_vectors(folder / "vectors.jsonl", vectors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=2000, help="documents of the retrieval set")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root, vectors = build(Path(folder), args.documents)
        env = {**os.environ, "SCIDOCS_EVAL_CACHE": str(Path(folder) / "cache")}
        done = subprocess.run([sys.executable, "-c", CASE, str(root), str(vectors), ",".join(TASKS)], env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode:
            sys.exit(done.stderr)
        result = json.loads(done.stdout.strip().splitlines()[-1])
    import scidocs_eval

    print(f"code: {Path(scidocs_eval.__file__).parents[1]}; retrieval set of {args.documents} documents")
    for road, (counts, corpus_texts) in result.items():
        for file, parses in sorted(counts.items()):
            texts = f"  (with texts: {corpus_texts.get(file, 0)})" if file.endswith("corpus.jsonl") else ""
            print(f"{road:<17} {file:<42} {parses}{texts}")
        print(f"{road:<17} {'files parsed more than once':<42} {sum(n > 1 for n in counts.values())}")


if __name__ == "__main__":
    main()
