"""Cite on Cora two ways: the suite's 30-candidate task and its full-corpus retrieval version (`cite-full`).

    python bench/full_corpus_cora.py [--models random,tfidf,sentence-transformer] [--work-dir DIR]

Builds the Cora suite (`data build`, seed 0) from ../shared/data/cora, its full-corpus version (`data build
--format beir`), runs each baseline on both (`baseline --tasks cite` and `baseline --tasks cite-full`) and prints
a markdown table: the suite task's MAP and nDCG beside the full-corpus task's nDCG@10, MAP@1000 and recall@100.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from scidocs_eval.data.build import build_suite
from scidocs_eval.data.full_corpus import build_full_corpus
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.baseline import run_baseline

SHARED = Path(os.environ.get("SCIDOCS_EVAL_SHARED_DATA", Path(__file__).resolve().parents[1] / ".." / "shared"
                             / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="random,tfidf,sentence-transformer")
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.mkdtemp(prefix="cora-full-")))
    args = parser.parse_args()
    cora = SHARED / "cora"
    suite_dir, full_dir = args.work_dir / "suite", args.work_dir / "full"
    build_suite(cora / "papers.jsonl", cora / "edges.tsv", suite_dir, seed=0)
    report = build_full_corpus(Suite(suite_dir), full_dir, task_names("ranking"))
    print(report.format())
    rows = ["| model | cite MAP (30 candidates) | cite nDCG | cite-full nDCG@10 | cite-full MAP@1000 | "
            "cite-full recall@100 | seconds |", "|---|---|---|---|---|---|---|"]
    for model in args.models.split(","):
        start = time.perf_counter()
        suite = run_baseline(model, RunConfig(data=suite_dir, tasks=["cite"], progress=False),
                             out_dir=args.work_dir / "suite-runs")
        full = run_baseline(model, RunConfig(data=full_dir, tasks=["cite-full"], progress=False),
                            out_dir=args.work_dir / "full-runs")
        cite, cite_full = suite.tasks["cite"].metrics, full.tasks["cite-full"].metrics
        rows.append(f"| {model} | {cite['map']:.2f} | {cite['ndcg']:.2f} | {cite_full['ndcg_at_10']:.2f} | "
                    f"{cite_full['map_at_1000']:.2f} | {cite_full['recall_at_100']:.2f} | "
                    f"{time.perf_counter() - start:.0f} |")
    print(f"Cora ({time.strftime('%Y-%m-%d')}), test split, seed 0")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
