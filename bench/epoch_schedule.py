"""Measure what the training schedule of the corpus-trained baselines does: for each corpus and each number of
epochs, the collapse figure of the fastText vectors (mean cosine of random word pairs) and the cite / co-cite MAP
(test split) of sif, fasttext-sum and doc2vec. This is the evidence behind the default schedule (docs/baselines.md).

    python bench/epoch_schedule.py --suites /tmp/suites/cora,/tmp/suites/citeseer --fasttext-epochs 5,20,50 \\
        --doc2vec-epochs 10,50

Each suite is a directory written by `scidocs-eval data build` (or `scidocs-eval demo`). Models are trained into a
temporary cache (training time included in the seconds column). Prints one markdown row per run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.gensim_training import mean_pair_cosine
from scidocs_eval.models.text import tokenize_papers
from scidocs_eval.models.word_vectors import FasttextSettings, corpus_word_vectors
from scidocs_eval.run.baseline import run_baseline

TASKS = ["cite", "cocite"]


def scores(name: str, suite: Suite, out: Path, params: dict) -> tuple[float, float, float]:
    started = time.perf_counter()
    result = run_baseline(name, RunConfig(data=suite, tasks=TASKS, progress=False), out_dir=out, params=params)
    return result.tasks["cite"].metrics["map"], result.tasks["cocite"].metrics["map"], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", required=True, help="comma-separated suite directories")
    parser.add_argument("--fasttext-epochs", default="5,20,50", help="comma-separated; 'auto' = the default schedule")
    parser.add_argument("--doc2vec-epochs", default="10,50", help="comma-separated; 'auto' = the default schedule")
    parser.add_argument("--lr", type=float, default=0.05, help="fastText's learning rate")
    args = parser.parse_args()
    os.environ["SCIDOCS_EVAL_CACHE"] = tempfile.mkdtemp(prefix="scidocs-epoch-schedule-")
    print("| suite | corpus tokens | model | epochs | lr | random-pair cosine | cite MAP | co-cite MAP | seconds |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for root in args.suites.split(","):
        suite = Suite(root)
        papers = suite.papers()
        tokens = sum(map(len, tokenize_papers(papers, progress=False)))
        out = Path(tempfile.mkdtemp(prefix="scidocs-epoch-schedule-results-"))
        label = Path(root).name
        for text in args.fasttext_epochs.split(","):
            epochs = None if text == "auto" else int(text)
            params = {"epochs": epochs, "lr": args.lr}
            for name in ("sif", "fasttext-sum"):  # sif trains the vectors, fasttext-sum reuses them from the cache
                cite, cocite, seconds = scores(name, suite, out, params)
                vectors = corpus_word_vectors(papers, None, FasttextSettings(epochs=epochs, lr=args.lr))
                print(f"| {label} | {tokens:,} | {name} | {text} | {args.lr:g} | {mean_pair_cosine(vectors.matrix):.3f}"
                      f" | {cite:.2f} | {cocite:.2f} | {seconds:.0f} |", flush=True)
        for text in args.doc2vec_epochs.split(","):
            epochs = None if text == "auto" else int(text)
            cite, cocite, seconds = scores("doc2vec", suite, out, {"epochs": epochs})
            print(f"| {label} | {tokens:,} | doc2vec | {text} | | | {cite:.2f} | {cocite:.2f} | {seconds:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
