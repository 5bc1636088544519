"""Fine-tune all-MiniLM-L6-v2 SPECTER-style on a Cora suite; MAG-style F1, cite and co-cite before and after.

    python bench/cora_finetune.py [--queries 300] [--epochs 1] [--max-length 128] [--lr 5e-5]

Builds the Cora suite (`scidocs_eval.data.build.build_suite`, seed 0) from ../shared/data/cora, keeps the
first `--queries` training and a quarter as many validation queries of its SPECTER training files (the
builder's leakage-free graph: no evaluation query, no query-candidate link), trains with `train_specter` (the
GPU when there is one), and scores the `specter` adapter (CLS pooling) with the base checkpoint and with the
fine-tuned one on the test split. Prints the validation losses and a markdown table for the README.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from scidocs_eval.data.build import build_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.training.specter import train_specter

REPO = Path(__file__).resolve().parents[1]
TASKS = ["mag", "cite", "cocite"]
COLUMNS = (("mag", "f1"), ("cite", "map"), ("cite", "ndcg"), ("cocite", "map"), ("cocite", "ndcg"))


def training_subset(specter_dir: Path, dest: Path, queries: int) -> Path:
    """A copy of the SPECTER training files with the first `queries` train and `queries // 4` val query ids."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("data.json", "metadata.json"):
        shutil.copy(specter_dir / name, dest / name)
    for split, count in (("train", queries), ("val", max(1, queries // 4)), ("test", 0)):
        ids = (specter_dir / f"{split}.txt").read_text(encoding="utf-8").split()[:count]
        (dest / f"{split}.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return dest


def scores(model: str, suite_root: Path, results: Path, max_length: int) -> tuple[list[float], float]:
    started = time.perf_counter()
    result = run_baseline("specter", RunConfig(data=suite_root, tasks=TASKS, progress=False), out_dir=results,
                          params={"model": model, "max_length": max_length})
    return [result.tasks[task].metrics[metric] for task, metric in COLUMNS], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=300, help="training queries kept (5 triplets each)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--shared-data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--work-dir", help="where the suite, checkpoints and embeddings go (default: a temporary one)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="scidocs-cora-finetune-"))
    source = Path(args.shared_data) / "cora"
    suite_root = work / "suite"
    build_suite(source / "papers.jsonl", source / "edges.tsv", suite_root, seed=0)
    subset = training_subset(suite_root / "specter", work / "specter-subset", args.queries)

    before, embed_seconds = scores("all-MiniLM-L6-v2", suite_root, work / "results-base", args.max_length)
    started = time.perf_counter()
    history = train_specter(subset, work / "checkpoint", base_model="all-MiniLM-L6-v2", epochs=args.epochs,
                            learning_rate=args.lr, max_length=args.max_length, batch_size=8, seed=0)
    train_seconds = time.perf_counter() - started
    after, _ = scores(str(work / "checkpoint"), suite_root, work / "results-tuned", args.max_length)

    print(f"validation loss per epoch (before training first): {history.val_loss}")
    print(f"training: {args.queries} queries, {args.epochs} epoch(s), {train_seconds:.0f} s; "
          f"embedding + scoring once: {embed_seconds:.0f} s")
    print("| MiniLM-L6 (CLS) on Cora | MAG-style F1 | cite MAP | cite nDCG | co-cite MAP | co-cite nDCG |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, values in (("before fine-tuning", before), ("after SPECTER fine-tuning", after)):
        print(f"| {label} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    print(f"(suite, checkpoint and embeddings in {work})")


if __name__ == "__main__":
    main()
