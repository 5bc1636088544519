"""SciRepEval's data in a local folder: the configs of its two Hugging Face datasets, one JSON lines file a split.

Layout (a copy of what `datasets.load_dataset(NAME, CONFIG)` gives, each split written as JSON lines):

    scirepeval/{config}/evaluation.jsonl         allenai/scirepeval: the papers a task embeds
        flat configs:  {"doc_id", "title", "abstract", ...other fields}
        query configs: {"doc_id", "query": "text" | {"doc_id", "title", "abstract"}, "candidates": [{paper}, ...]}
    scirepeval_test/{config}/{split}.jsonl       allenai/scirepeval_test: labels, qrels and splits
        classification / regression, splits train and test:  {"paper_id", "label"} (multi-label: a 0/1 list)
        proximity / search, split test (reviewer matching: test_hard, test_soft):  {"query_id", "cand_id", "score"}
        reviewers, split metadata:  {"r_id", "papers": [doc_id, ...]}

Ids are read as strings. Every parse error names the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.errors import InputError
from scidocs_eval.formats.judgements import Judgements
from scidocs_eval.formats.lines import json_lines

META_DATASET = "allenai/scirepeval"
TEST_DATASET = "allenai/scirepeval_test"
META_SPLIT = "evaluation"

# SciRepEval's tasks (its scirepeval_tasks.jsonl): name, kind (classification, multi_label, regression, proximity,
# adhoc_search, reviewer_matching), metadata config, test config, metrics, few-shot runs (sample size, iterations).
# Regression tasks add Pearson's r to SciRepEval's Kendall's tau; reviewer matching names its hard and soft P@k.
TASK_TABLE: list[tuple[str, str, str, str, tuple[str, ...], tuple[tuple[int, int], ...]]] = [
    ("Biomimicry", "classification", "biomimicry", "biomimicry", ("f1",), ((64, 50), (16, 100))),
    ("DRSM", "classification", "drsm", "drsm", ("f1_macro",), ((64, 50), (24, 100))),
    ("RELISH", "proximity", "relish", "relish", ("ndcg",), ()),
    ("NFCorpus", "adhoc_search", "nfcorpus", "nfcorpus", ("ndcg",), ()),
    ("TREC-CoVID", "adhoc_search", "trec_covid", "trec_covid", ("ndcg",), ()),
    ("Paper-Reviewer Matching", "reviewer_matching", "paper_reviewer_matching", "paper_reviewer_matching",
     ("hard_P_5", "hard_P_10", "soft_P_5", "soft_P_10"), ()),
    ("Peer Review Score", "regression", "peer_review_score_hIndex", "peer_review_score", ("kendalltau", "pearsonr"),
     ()),
    ("Max hIndex", "regression", "peer_review_score_hIndex", "hIndex", ("kendalltau", "pearsonr"), ()),
    ("Tweet Mentions", "regression", "tweet_mentions", "tweet_mentions", ("kendalltau", "pearsonr"), ()),
    ("SciDocs MAG", "classification", "scidocs_mag_mesh", "scidocs_mag", ("f1_macro",), ()),
    ("SciDocs MeSH", "classification", "scidocs_mag_mesh", "scidocs_mesh", ("f1_macro",), ()),
    ("SciDocs Cite", "proximity", "scidocs_view_cite_read", "scidocs_cite", ("map", "ndcg"), ()),
    ("SciDocs CoView", "proximity", "scidocs_view_cite_read", "scidocs_view", ("map", "ndcg"), ()),
    ("SciDocs CoCite", "proximity", "scidocs_view_cite_read", "scidocs_cocite", ("map", "ndcg"), ()),
    ("SciDocs CoRead", "proximity", "scidocs_view_cite_read", "scidocs_read", ("map", "ndcg"), ()),
    ("Same Author Detection", "proximity", "same_author", "same_author", ("map",), ()),
    ("Highly Influential Citations", "proximity", "high_influence_cite", "high_influence_cite", ("map",), ()),
    ("Search", "adhoc_search", "search", "search", ("ndcg",), ()),
    ("Citation Count", "regression", "cite_count", "cite_count", ("kendalltau", "pearsonr"), ()),
    ("Publication Year", "regression", "pub_year", "pub_year", ("kendalltau", "pearsonr"), ()),
    ("Fields of study", "multi_label", "fos", "fos", ("f1_macro",), ((10, 50), (5, 100))),
    ("MeSH", "classification", "mesh_descriptors", "mesh_descriptors", ("f1_macro",), ()),
]
EXTRA_TEXT_FIELDS = {"search": ("venue", "year")}
"""The fields a task of a metadata config embeds after title and abstract (the "fields" of scirepeval_tasks.jsonl:
Search's are title, abstract, venue, year)."""


def meta_file(config: str) -> str:
    """Folder-relative file of a config's papers (allenai/scirepeval, split "evaluation")."""
    return f"scirepeval/{config}/{META_SPLIT}.jsonl"


def test_file(config: str, split: str) -> str:
    """Folder-relative file of one split of a config of allenai/scirepeval_test."""
    return f"scirepeval_test/{config}/{split}.jsonl"



def _field(path: Path, line: int, record: dict[str, Any], key: str) -> Any:
    if record.get(key) is None:
        raise InputError(path, f"no {key!r} field", line)
    return record[key]


def _identifier(path: Path, line: int, record: dict[str, Any], key: str) -> str:
    value = _field(path, line, record, key)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(path, f"{key!r} must be a string or an integer, got {type(value).__name__}", line)
    return str(value)


@dataclass(frozen=True)
class MetaPapers:
    """The papers of a config, each id once (the first record wins, as SciRepEval's batching keeps it).

    `records[id]` holds the paper's fields as given (ids as strings); `queries` lists the ids that are queries
    in a query config; `conflicts` lists ids given twice with different fields (SciRepEval embeds the first).
    """

    records: dict[str, dict[str, Any]]
    queries: list[str]
    conflicts: list[str]


def read_meta(path: Path) -> MetaPapers:
    """The papers of one `scirepeval/{config}/evaluation.jsonl` (flat or query layout)."""
    records: dict[str, dict[str, Any]] = {}
    queries: list[str] = []
    conflicts: list[str] = []

    def add(line: int, record: Any, what: str) -> str:
        if not isinstance(record, dict):
            raise InputError(path, f"{what} must be an object, got {type(record).__name__}", line)
        paper_id = _identifier(path, line, record, "doc_id")
        paper = {**record, "doc_id": paper_id, "paper_id": paper_id}
        for key in ("title", "abstract"):
            if paper.get(key) is not None and not isinstance(paper[key], str):
                paper[key] = str(paper[key])
        if paper_id not in records:
            records[paper_id] = paper
        elif records[paper_id] != paper:
            conflicts.append(paper_id)
        return paper_id

    for line, record in json_lines(path):
        if "candidates" not in record:
            add(line, record, "a paper")
            continue
        query = record.get("query")
        if isinstance(query, str):
            query = {"title": query, "doc_id": _field(path, line, record, "doc_id")}
        queries.append(add(line, query, "'query'"))
        candidates = record["candidates"]
        if not isinstance(candidates, list):
            raise InputError(path, f"'candidates' must be a list, got {type(candidates).__name__}", line)
        for candidate in candidates:
            add(line, candidate, "a candidate")
    if not records:
        raise InputError(path, "no papers")
    return MetaPapers(records, list(dict.fromkeys(queries)), conflicts)


@dataclass(frozen=True)
class Labelled:
    """A labelled split: `labels` is (n,) for one label or a value a paper, (n, n_labels) 0/1 for multi-label."""

    ids: list[str]
    labels: np.ndarray
    lines: list[int]


def read_labels(path: Path, multi_label: bool = False, numeric: bool = False) -> Labelled:
    """`{"paper_id", "label"}` lines: an int class, a 0/1 list (`multi_label`) or a number (`numeric`)."""
    ids, labels, lines = [], [], []
    for line, record in json_lines(path):
        ids.append(_identifier(path, line, record, "paper_id"))
        label = _field(path, line, record, "label")
        if multi_label:
            ok = isinstance(label, list) and label and all(v in (0, 1) and not isinstance(v, float) for v in label)
            expected = "a list of 0/1 (one per label)"
        elif numeric:
            ok = isinstance(label, (int, float)) and not isinstance(label, bool) and np.isfinite(label)
            expected = "a finite number"
        else:
            ok = isinstance(label, int) and not isinstance(label, bool)
            expected = "an integer class"
        if not ok:
            raise InputError(path, f"label {label!r} is not {expected}", line)
        labels.append(label)
        lines.append(line)
    if not ids:
        raise InputError(path, "no labelled papers")
    if multi_label and len({len(label) for label in labels}) != 1:
        raise InputError(path, "the label lists have different lengths")
    return Labelled(ids, np.asarray(labels, dtype=np.float64 if numeric else np.int64), lines)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`{"query_id", "cand_id", "score"}` lines as {query: {candidate: grade}} (`Judgements`: a pair judged twice
    with different grades is an error; SciRepEval's `get_qc_pairs` would keep the first)."""
    judgements = Judgements(path)
    for line, record in json_lines(path):
        query = _identifier(path, line, record, "query_id")
        candidate = _identifier(path, line, record, "cand_id")
        judgements.add(query, candidate, _field(path, line, record, "score"), line)
    if not judgements.grades:
        raise InputError(path, "no qrel lines")
    return judgements.grades


def read_reviewers(path: Path) -> dict[str, list[str]]:
    """`{"r_id", "papers"}` lines: each reviewer's papers (doc ids)."""
    reviewers: dict[str, list[str]] = {}
    for line, record in json_lines(path):
        reviewer = _identifier(path, line, record, "r_id")
        papers = _field(path, line, record, "papers")
        if not isinstance(papers, list) or not papers:
            raise InputError(path, f"reviewer {reviewer!r}: 'papers' must be a non-empty list of doc ids", line)
        reviewers[reviewer] = [str(p) for p in papers]
    if not reviewers:
        raise InputError(path, "no reviewers")
    return reviewers
