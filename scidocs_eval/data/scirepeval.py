"""SciRepEval's data in a local folder: from the Hugging Face hub (`download_scirepeval`) or synthetic
(`write_synthetic_scirepeval`, what the tests and the demo use). Layout: `scidocs_eval.formats.scirepeval`.

Which configs there are comes from SciRepEval's task table, which the benchmark owns (`scidocs_eval.tasks.scirepeval`
`TASK_TABLE`, the rows of its `scirepeval_tasks.jsonl`): the benchmark hands it to its download source
(`SciRepEvalHub(TASK_TABLE)`), and every function here takes it, so this layer never names a task."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from scidocs_eval.data.sources import DownloadOptions, DownloadSource, TaskDataset
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.safe_output import atomic_write
from scidocs_eval.formats.scirepeval import META_DATASET, META_SPLIT, TEST_DATASET, meta_file, test_file
from scidocs_eval.formats.suite import SYNTHETIC_MARKER
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

REVIEWERS_CONFIG = "reviewers"
REVIEWER_MATCHING = "reviewer_matching"


class TableRow(NamedTuple):
    """One task of SciRepEval's task table (its scirepeval_tasks.jsonl)."""

    title: str
    """its name there ("Fields of study")."""
    kind: str
    """classification, multi_label, regression, proximity, adhoc_search or reviewer_matching."""
    meta_config: str
    """its papers: a config of allenai/scirepeval."""
    test_config: str
    """its labels or qrels: a config of allenai/scirepeval_test."""
    metrics: tuple[str, ...]
    few_shot: tuple[tuple[int, int], ...] = ()
    """its few-shot runs: (sample size, iterations)."""


TaskTable = Sequence[TableRow]


def _write_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, rows=None) as handle:
        for record in records:
            handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")


def _empty_destination(dest: str | os.PathLike[str]) -> Path:
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ScidocsEvalError(f"{dest} exists and is not an empty folder; give a new folder (nothing there is "
                               "replaced)")
    return dest


def configs(table: TaskTable, titles: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """(metadata configs, test configs) of the tasks of `table` named (SciRepEval names; default all), each once."""
    rows = [row for row in table if titles is None or row.title in titles]
    meta = list(dict.fromkeys(row.meta_config for row in rows))
    test = list(dict.fromkeys(row.test_config for row in rows))
    if any(row.kind == REVIEWER_MATCHING for row in rows):
        test.append(REVIEWERS_CONFIG)
    return meta, test


def download_scirepeval(dest: str | os.PathLike[str], table: TaskTable, titles: Sequence[str] | None = None) -> Path:
    """Copy the configs of the tasks of `table` named (default all) from the hub into `dest`, in the local layout.

    Needs the `datasets` package and the network; every split of every config is written as JSON lines.
    """
    datasets = require("datasets", "downloading SciRepEval")
    dest = _empty_destination(dest)
    meta, test = configs(table, titles)
    for config in meta:
        _write_lines(dest / meta_file(config), datasets.load_dataset(META_DATASET, config, split=META_SPLIT))
    for config in test:
        for split, rows in datasets.load_dataset(TEST_DATASET, config).items():
            _write_lines(dest / test_file(config, split), rows)
    return dest


@dataclass(frozen=True)
class SciRepEvalHub(DownloadSource):
    """SciRepEval's two hub datasets, the configs of every task of `table` (`download_scirepeval`), into a new
    folder; `write_synthetic` writes a synthetic copy of the same configs."""

    table: tuple[TableRow, ...]

    def fetch(self, dest: Path, datasets: Sequence[TaskDataset], options: DownloadOptions) -> list[str]:
        return [f"{META_DATASET}, {TEST_DATASET} -> {download_scirepeval(dest, self.table)}"]

    def write_synthetic(self, dest: str | os.PathLike[str], seed: int = 0, dim: int = 24,
                        size: int = 1) -> dict[str, np.ndarray]:
        """`write_synthetic_scirepeval` of this source's table."""
        return write_synthetic_scirepeval(dest, self.table, seed, dim, size)


class _Papers:
    """Synthetic papers: each has a topic; its text uses the topic's words and its vector is near the topic's
    centre (every coordinate exact in float16, so SciRepEval's float16 loader sees the same numbers)."""

    def __init__(self, rng: np.random.Generator, dim: int, topics: int):
        self.rng, self.dim = rng, dim
        self.centres = rng.normal(size=(topics, dim))
        self.words = [[f"w{t}x{i}" for i in range(12)] for t in range(topics)]
        self.vectors: dict[str, np.ndarray] = {}
        self.topic: dict[str, int] = {}

    def paper(self, paper_id: str, topic: int, **fields: Any) -> dict[str, Any]:
        words = self.rng.choice(self.words[topic], size=8)
        self.topic[paper_id] = topic
        self.vectors[paper_id] = (self.centres[topic] + 0.9 * self.rng.normal(size=self.dim)).astype(np.float16)
        return {"doc_id": paper_id, "title": " ".join(words[:3]), "abstract": " ".join(words), **fields}

    def many(self, prefix: str, count: int, topics: int) -> list[dict[str, Any]]:
        return [self.paper(f"{prefix}{i}", int(self.rng.integers(topics))) for i in range(count)]


def write_synthetic_scirepeval(dest: str | os.PathLike[str], table: TaskTable, seed: int = 0, dim: int = 24,
                               size: int = 1) -> dict[str, np.ndarray]:
    """A synthetic copy of every config the tasks of `table` read, in the local layout; returns the vectors of a
    "model" that sees each paper's topic through noise (doc_id -> float16 vector), for tests and demos
    (`scidocs_eval.tasks.scirepeval.write_synthetic_scirepeval`: SciRepEval's own table).

    `size` scales the number of papers (1: about 2,000 papers in all, seconds to score).
    """
    dest = _empty_destination(dest)
    rng = np.random.default_rng(seed)
    topics = 6
    papers = _Papers(rng, dim, topics)
    meta_written: set[str] = set()
    for title, kind, meta_config, test_config, _, few_shot in table:
        prefix = f"{meta_config}-"
        if kind in ("classification", "multi_label", "regression"):
            train_size = 130 * size if few_shot else 60 * size
            records = papers.many(prefix, train_size + 40 * size, topics) if meta_config not in meta_written \
                else None
            if records is not None:
                _write_lines(dest / meta_file(meta_config), records)
                meta_written.add(meta_config)
            ids = [paper_id for paper_id in papers.topic if paper_id.startswith(prefix)]
            labels = [_label(kind, title, papers.topic[i], papers.vectors[i], rng) for i in ids]
            rows = [{"paper_id": i, "label": label} for i, label in zip(ids, labels)]
            _write_lines(dest / test_file(test_config, "train"), rows[:train_size])
            _write_lines(dest / test_file(test_config, "test"), rows[train_size:])
        elif kind == REVIEWER_MATCHING:
            _reviewers(dest, papers, meta_config, test_config, rng)
        else:
            _ranking(dest, papers, kind, meta_config, test_config, meta_config in meta_written, rng)
            meta_written.add(meta_config)
    with atomic_write(dest / SYNTHETIC_MARKER, rows=None) as handle:
        handle.write(f"Synthetic SciRepEval data written by scidocs-eval (write_synthetic_scirepeval, seed {seed}); "
                     "its numbers mean nothing.\n".encode())
    return papers.vectors


def _label(kind: str, title: str, topic: int, vector: np.ndarray, rng: np.random.Generator) -> Any:
    noisy = topic if rng.random() < 0.8 else int(rng.integers(6))
    if kind == "multi_label":
        labels = [int(noisy % 5 == label or rng.random() < 0.15) for label in range(5)]
        return labels
    if kind == "regression":
        value = float(vector[:4].astype(np.float64).sum() + rng.normal())
        return float(round(2000 + 3 * value)) if "Year" in title else round(value, 3)
    classes = 2 if title == "Biomimicry" else 3 + len(title) % 3
    return noisy % classes


def _ranking(dest: Path, papers: _Papers, kind: str, meta_config: str, test_config: str, meta_written: bool,
             rng: np.random.Generator) -> None:
    """A query config: 10 queries with 12 candidates each, graded by topic (0, 1, 2 for RELISH)."""
    prefix = f"{meta_config}-"
    graded = meta_config == "relish"
    if not meta_written:
        records = []
        for q in range(10):
            topic = int(rng.integers(6))
            query: Any = papers.paper(f"{prefix}q{q}", topic)
            if kind == "adhoc_search":
                query = {"query": query["title"], "doc_id": query["doc_id"]}
            else:
                query = {"query": query, "doc_id": query["doc_id"]}
            extra = {"venue": "Synthetic Venue", "year": 2020} if kind == "adhoc_search" else {}
            candidates = [papers.paper(f"{prefix}q{q}c{c}", topic if c < 4 else int(rng.integers(6)), **extra)
                          for c in range(12)]
            records.append({**query, "candidates": candidates})
        if meta_config == "scidocs_view_cite_read":  # SciRepEval reads this config flat ("simple_format")
            records = [paper for record in records for paper in (record["query"], *record["candidates"])]
        _write_lines(dest / meta_file(meta_config), records)
    rows = []
    for q in range(10):
        query = f"{prefix}q{q}"
        for c in range(12):
            candidate = f"{prefix}q{q}c{c}"
            same = papers.topic[candidate] == papers.topic[query]
            grade = int(same) + int(same and graded and rng.random() < 0.5)
            if rng.random() < 0.1:
                grade = int(rng.integers(2))
            rows.append({"query_id": query, "cand_id": candidate, "score": grade})
    _write_lines(dest / test_file(test_config, "test"), rows)


def _reviewers(dest: Path, papers: _Papers, meta_config: str, test_config: str, rng: np.random.Generator) -> None:
    """12 query papers, 15 reviewers with 2 to 5 papers each; every query lists every reviewer, relevant by topic
    (soft: also the reviewers sharing the topic of one of their papers)."""
    prefix = f"{meta_config}-"
    queries = papers.many(f"{prefix}q", 12, 6)
    reviewers = {}
    records = list(queries)
    for r in range(15):
        topic = int(rng.integers(6))
        own = [papers.paper(f"{prefix}r{r}p{p}", topic if p else int(rng.integers(6)))
               for p in range(int(rng.integers(2, 6)))]
        records += own
        reviewers[f"r{r}"] = [paper["doc_id"] for paper in own]
    _write_lines(dest / meta_file(meta_config), records)
    _write_lines(dest / test_file(REVIEWERS_CONFIG, "metadata"),
                 [{"r_id": r, "papers": ids} for r, ids in reviewers.items()])
    hard, soft = [], []
    for query in queries:
        for reviewer, ids in reviewers.items():
            topics = [papers.topic[i] for i in ids]
            hard.append({"query_id": query["doc_id"], "cand_id": reviewer, "score": int(topics[0] ==
                                                                                     papers.topic[query["doc_id"]])})
            soft.append({"query_id": query["doc_id"], "cand_id": reviewer,
                         "score": int(papers.topic[query["doc_id"]] in topics)})
    _write_lines(dest / test_file(test_config, "test_hard"), hard)
    _write_lines(dest / test_file(test_config, "test_soft"), soft)


def write_embeddings_jsonl(path: str | os.PathLike[str], vectors: dict[str, np.ndarray]) -> Path:
    """`vectors` as an embeddings file keyed by `doc_id` (SciRepEval's key; scidocs-eval reads it too)."""
    path = Path(path)
    _write_lines(path, ({"doc_id": k, "embedding": v.astype(np.float64).tolist()} for k, v in vectors.items()))
    return path
