"""Cite / co-cite MAP of each baseline's embeddings as written, and with every row scaled to unit length.

    python bench/row_norms.py --work-dir /tmp/rc-work      # the embeddings bench/real_corpora.py wrote there

The official ranking sorts candidates by L2 distance to the query, so a vector's length moves its rank. This
scores each `RESULTS/NAME.jsonl` under `WORK/CORPUS/` twice on the suite built there (test split): as written,
and with rows L2-normalised (L2 ranking of unit vectors is cosine ranking), to show how much of each baseline's
score is its direction and how much its norm.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from scidocs_eval import EmbeddingStore, evaluate
from scidocs_eval.evaluation.config import RunConfig


def unit_rows(store: EmbeddingStore) -> EmbeddingStore:
    norms = np.linalg.norm(store.matrix, axis=1, keepdims=True)
    return EmbeddingStore(store.ids, store.matrix / np.where(norms > 0, norms, 1.0), store.empty)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", required=True, help="bench/real_corpora.py's --work-dir")
    parser.add_argument("--corpora", default="cora,citeseer")
    parser.add_argument("--models", default="random,doc2vec,fasttext-sum,sif,sgc,tfidf")
    args = parser.parse_args()
    print("| corpus | model | cite MAP | cite MAP, unit rows | co-cite MAP | co-cite MAP, unit rows |\n"
          "|---|---|---:|---:|---:|---:|")
    for corpus in args.corpora.split(","):
        root = Path(args.work_dir) / corpus
        for model in args.models.split(","):
            store = EmbeddingStore.load(root / "results" / f"{model}.jsonl", progress=False)
            cells = []
            for embeddings in (store, unit_rows(store)):
                result = evaluate(embeddings, RunConfig(data=root / "suite", tasks=["cite", "cocite"], progress=False))
                cells.append((result.tasks["cite"].metrics["map"], result.tasks["cocite"].metrics["map"]))
            (cite, cocite), (unit_cite, unit_cocite) = cells
            print(f"| {corpus} | {model} | {cite:.2f} | {unit_cite:.2f} | {cocite:.2f} | {unit_cocite:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
