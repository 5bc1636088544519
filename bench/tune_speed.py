"""Seconds `--tune` spends in its grid (the `fit` phase of `baseline NAME --tune`) on the demo suite and Cora.

    python bench/tune_speed.py [--work-dir DIR] [--corpora demo,cora]

Each adapter gets fixed random word vectors (a .vec file over the suite's words), so that no fastText model is
trained and the figure is the grid's scoring: sif tries 5 values of `a`, fasttext-sum 12 TF-IDF settings, sgc
8 values of k, each scored on the val split of every ranking task. Run it on two versions of the code (from their
checkouts) to compare; it prints one markdown row per corpus and adapter.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

from scidocs_eval.data.build import build_suite
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.text import analyzer
from scidocs_eval.run.baseline import run_baseline

CORA = Path("/work/shared/data/cora")
ADAPTERS = ("sif", "fasttext-sum", "sgc")


def suite_of(corpus: str, work: Path) -> Suite:
    root = work / corpus
    if not root.exists():
        if corpus == "demo":
            build_demo_suite(root, DemoConfig.small(0))
        else:
            build_suite(CORA / "papers.jsonl", CORA / "edges.tsv", root, seed=0)
    return Suite(root)


def random_vectors(suite: Suite, path: Path, dim: int = 50) -> Path:
    analyze = analyzer()
    words = sorted({word for p in suite.papers() for word in analyze(f"{p.title} {p.abstract}")})
    rng = np.random.default_rng(0)
    path.write_text(f"{len(words)} {dim}\n" + "".join(
        f"{word} {' '.join(f'{x:.4f}' for x in rng.standard_normal(dim))}\n" for word in words), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "scidocs-tune-speed")
    parser.add_argument("--corpora", default="demo,cora")
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(f"{platform.node()}, {date.today()}")
    print("| corpus | adapter | --tune fit seconds |\n|---|---|---|")
    for corpus in args.corpora.split(","):
        suite = suite_of(corpus, args.work_dir)
        vectors = random_vectors(suite, args.work_dir / f"{corpus}.vec")
        for name in ADAPTERS:
            started = time.perf_counter()
            result = run_baseline(name, RunConfig(data=suite, tasks=["cite"], progress=False),
                                  out_dir=args.work_dir / f"{corpus}-runs",
                                  params={"tune": True, "vectors": str(vectors)})
            seconds = result.timings.get("fit", time.perf_counter() - started)
            print(f"| {corpus} | {name} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
