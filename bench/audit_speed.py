"""Time `scidocs-eval audit` at SciDocs scale: SPECTER-size training data against a SciDocs-size suite.

Synthetic data of the real sizes (texts are random words, so only the planted copies match):
- training: a SPECTER folder with 146,000 training queries (train.txt 131,400 / val.txt 14,600), each with 5
  positives (count 5) and 5 hard negatives (count 1) in data.json, drawn from a pool of 300,000 other papers;
  metadata.json holds title and abstract (8 + 120 words) of all 446,000 papers (~0.45 GB);
- suite: the demo generator at SciDocs' scale (`DemoConfig.scidocs()`: MAG 25,000 / MeSH 23,000 papers, 1,000
  queries × 30 candidates per ranking task and split, 1,000 test impressions);
- 200 leaks planted in the training data: test papers copied under new ids (half with a new title, half with
  3 words of the abstract changed) and test query ids used as training queries.

Reports wall and CPU seconds of reading the training data and of the audit itself (all three strengths, default
threshold and permutations), with the machine, date and load average.

    python bench/audit_speed.py                # builds the data in a temporary folder
    python bench/audit_speed.py --keep DIR     # or in DIR, reused when already there
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import orjson

from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.contamination import audit_suite
from scidocs_eval.formats.suite import Suite
from scidocs_eval.formats.training_data import read_training_data

QUERIES, POOL, POSITIVES, NEGATIVES, PLANTED = 146_000, 300_000, 5, 5, 200


def _texts(rng: np.random.Generator, n: int, words: int, vocabulary: list[str]) -> list[str]:
    indices = rng.integers(0, len(vocabulary), size=(n, words))
    return [" ".join(vocabulary[i] for i in row) for row in indices]


def build_training(folder: Path, suite: Suite, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    syllables = [a + b for a in "bcdfghjklmnprstvwz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
    vocabulary = list(dict.fromkeys(a + b + c for a in syllables for b in syllables for c in ("", "n", "s")))[:20_000]
    ids = [f"{i:040x}" for i in range(QUERIES + POOL)]
    titles, abstracts = _texts(rng, len(ids), 8, vocabulary), _texts(rng, len(ids), 120, vocabulary)
    metadata = {i: {"paper_id": i, "title": t, "abstract": a} for i, t, a in zip(ids, titles, abstracts)}
    candidates = rng.integers(QUERIES, QUERIES + POOL, size=(QUERIES, POSITIVES + NEGATIVES))
    data = {ids[q]: {ids[c]: {"count": 5 if k < POSITIVES else 1} for k, c in enumerate(row)}
            for q, row in enumerate(candidates)}
    test_ids = list(suite.qrels("cite", "test").candidates) + suite.labels("mag", "test").ids
    texts = {**suite.metadata("view_cite_read"), **suite.metadata("mag_mesh")}
    for k, paper_id in enumerate(test_ids[:PLANTED]):
        title, abstract = texts[paper_id]["title"], texts[paper_id]["abstract"]
        if k % 3 == 0:
            title = "a new title for a planted copy"
        elif k % 3 == 1:
            words = abstract.split()
            for position in rng.choice(len(words), 3, replace=False):
                words[position] = "edited"
            abstract = " ".join(words)
        else:
            data[paper_id] = {ids[QUERIES]: {"count": 5}}
            continue
        metadata[f"planted-{k}"] = {"paper_id": f"planted-{k}", "title": title, "abstract": abstract}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata.json").write_bytes(orjson.dumps(metadata))
    (folder / "data.json").write_bytes(orjson.dumps(data))
    queries = list(data)
    (folder / "train.txt").write_text("\n".join(queries[:int(0.9 * len(queries))]) + "\n")
    (folder / "val.txt").write_text("\n".join(queries[int(0.9 * len(queries)):]) + "\n")


def _timed(step: str, function, *args, **kwargs):  # noqa: ANN001, ANN202 (a bench helper)
    wall, cpu = time.perf_counter(), time.process_time()
    value = function(*args, **kwargs)
    print(f"{step:<28} wall {time.perf_counter() - wall:6.1f} s   cpu {time.process_time() - cpu:6.1f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the data here (reused when already there)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="audit-bench-"))
    suite_dir, training_dir = root / "suite", root / "specter"
    suite = Suite(suite_dir) if (suite_dir / "cite").is_dir() else build_demo_suite(suite_dir, DemoConfig.scidocs())
    if not (training_dir / "data.json").is_file():
        build_training(training_dir, suite)
    size = sum(p.stat().st_size for p in training_dir.iterdir()) / 1e9
    print(f"{platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, "
          f"affinity {len(os.sched_getaffinity(0))}), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load "
          f"average {os.getloadavg()[0]:.2f} at start; training files {size:.2f} GB")
    total = time.perf_counter()
    training = _timed("read training data", read_training_data, [training_dir])
    report = _timed("audit (3 strengths)", audit_suite, training, suite)
    print(f"{'total':<28} wall {time.perf_counter() - total:6.1f} s   load average {os.getloadavg()[0]:.2f} at end")
    print(f"training: {len(training.roles)} paper ids, {len(training.texts)} with text, "
          f"{sum(map(len, training.positives.values()))} pairs; suite papers checked: {report.data['papers_checked']}")
    print("matched per strength:", report.data["papers_matched"], "; near-duplicate pairs:",
          report.data["near_duplicate_pairs"])
    print("leaked items:", {task: info["leaked"] for task, info in report.tasks.items()})


if __name__ == "__main__":
    main()
