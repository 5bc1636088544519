"""SciRepEval's data in a local folder: the configs of its two Hugging Face datasets, one JSON lines file a split.

Layout (a copy of what `datasets.load_dataset(NAME, CONFIG)` gives, each split written as JSON lines):

    scirepeval/{config}/evaluation.jsonl         allenai/scirepeval: the papers a task embeds
        flat configs:  {"doc_id", "title", "abstract", ...other fields}
        query configs: {"doc_id", "query": "text" | {"doc_id", "title", "abstract"}, "candidates": [{paper}, ...]}
    scirepeval_test/{config}/{split}.jsonl       allenai/scirepeval_test: labels, qrels and splits
        classification / regression, splits train and test:  {"paper_id", "label"} (multi-label: a 0/1 list)
        proximity / search, split test (reviewer matching: test_hard, test_soft):  {"query_id", "cand_id", "score"}
        reviewers, split metadata:  {"r_id", "papers": [doc_id, ...]}

Each file kind's rows are declared once (`META_PAPERS`, ..., `REVIEWERS`: `formats.row_schema`); ids are read as
strings. Every parse error names the file, the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from scidocs_eval.errors import InputError
from scidocs_eval.formats.judgements import Judgements
from scidocs_eval.formats.lines import json_lines
from scidocs_eval.formats.row_schema import Field, RowSchema, file_kind, reads
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

META_DATASET = "allenai/scirepeval"
TEST_DATASET = "allenai/scirepeval_test"
META_SPLIT = "evaluation"

EXTRA_TEXT_FIELDS = {"search": ("venue", "year")}
"""The fields a task of a metadata config embeds after title and abstract (the "fields" of scirepeval_tasks.jsonl:
Search's are title, abstract, venue, year)."""


def meta_file(config: str) -> str:
    """Folder-relative file of a config's papers (allenai/scirepeval, split "evaluation")."""
    return f"scirepeval/{config}/{META_SPLIT}.jsonl"


def test_file(config: str, split: str) -> str:
    """Folder-relative file of one split of a config of allenai/scirepeval_test."""
    return f"scirepeval_test/{config}/{split}.jsonl"



_PAPER_FIELDS = (Field("doc_id", "id"), Field("title", "text", required=False, null=True),
                 Field("abstract", "text", required=False, null=True))
PAPER = RowSchema("SciRepEval paper", "an object", _PAPER_FIELDS, keep_other=True)
"""a paper inside a query line (its query, each candidate)."""
META_PAPERS = file_kind(RowSchema("SciRepEval papers", "JSON lines", _PAPER_FIELDS, keep_other=True, example=(
    {"doc_id": "p1", "title": "A title", "abstract": "An abstract.", "year": 2020},
    {"doc_id": "p2", "title": "Another", "abstract": None})))
META_QUERIES = file_kind(RowSchema("SciRepEval query lines", "JSON lines", (
    Field("doc_id", "id", required=False), Field("query", ("text", "object"), of=PAPER),
    Field("candidates", "object", many=True, of=PAPER)), example=(
    {"doc_id": "q1", "query": "a query", "candidates": [{"doc_id": "p1", "title": "A", "abstract": "B"}]},
    {"doc_id": "q2", "query": "another query", "candidates": [{"doc_id": "p2", "title": "C", "abstract": ""}]})))
CLASS_LABELS = file_kind(RowSchema("SciRepEval class labels", "JSON lines", (
    Field("paper_id", "id"), Field("label", "int")), example=({"paper_id": "p1", "label": 0},
                                                            {"paper_id": "p2", "label": 1})))
LABEL_SETS = file_kind(RowSchema("SciRepEval label sets", "JSON lines", (
    Field("paper_id", "id"), Field("label", "flag", many=True)), example=({"paper_id": "p1", "label": [0, 1]},
                                                                         {"paper_id": "p2", "label": [1, 0]})))
VALUES = file_kind(RowSchema("SciRepEval values", "JSON lines", (
    Field("paper_id", "id"), Field("label", "number")), example=({"paper_id": "p1", "label": 2.5},
                                                               {"paper_id": "p2", "label": 7})))
QRELS = file_kind(RowSchema("SciRepEval qrels", "JSON lines", (
    Field("query_id", "id"), Field("cand_id", "id"), Field("score", "grade")),
    example=({"query_id": "q1", "cand_id": "p1", "score": 1}, {"query_id": "q1", "cand_id": "p2", "score": 0})))
REVIEWERS = file_kind(RowSchema("SciRepEval reviewers", "JSON lines", (
    Field("r_id", "id"), Field("papers", "id", many=True)),
    example=({"r_id": "r1", "papers": ["p1", "p2"]}, {"r_id": "r2", "papers": ["p3"]})))


@dataclass(frozen=True)
class MetaPapers:
    """The papers of a config, each id once (the first record wins, as SciRepEval's batching keeps it).

    `records[id]` holds the paper's fields as given (ids as strings); `queries` lists the ids that are queries
    in a query config; `conflicts` lists ids given twice with different fields (SciRepEval embeds the first).
    """

    records: dict[str, dict[str, Any]]
    queries: list[str]
    conflicts: list[str]


@reads(META_PAPERS)
@reads(META_QUERIES)
def read_meta(path: Path) -> MetaPapers:
    """The papers of one `scirepeval/{config}/evaluation.jsonl`, line by line a paper (`META_PAPERS`) or, with a
    `query` or `candidates` field, a query line (`META_QUERIES`)."""
    records: dict[str, dict[str, Any]] = {}
    queries: list[str] = []
    conflicts: list[str] = []

    def add(paper: dict[str, Any]) -> str:
        paper_id = paper["doc_id"]
        paper["paper_id"] = paper_id
        if paper_id not in records:
            records[paper_id] = paper
        elif records[paper_id] != paper:
            conflicts.append(paper_id)
        return paper_id

    papers, query_lines = META_PAPERS.checker(path), META_QUERIES.checker(path)
    for line, record in json_lines(path):
        if "candidates" not in record and "query" not in record:
            add(papers.row(record, line))
            continue
        checked = query_lines.row(record, line)
        query = checked["query"]
        if isinstance(query, str):
            if checked["doc_id"] is None:
                raise InputError(path, "field 'doc_id' is missing (a query given as text takes the line's doc_id)",
                                 line)
            query = {"doc_id": checked["doc_id"], "title": query, "paper_id": checked["doc_id"]}
        queries.append(add(query))
        for candidate in checked["candidates"]:
            add(candidate)
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
    """`{"paper_id", "label"}` lines: an int class (`CLASS_LABELS`), a 0/1 list (`multi_label`: `LABEL_SETS`) or a
    number (`numeric`: `VALUES`)."""
    checker = (LABEL_SETS if multi_label else VALUES if numeric else CLASS_LABELS).checker(path)
    ids, labels, lines = [], [], []
    for line, record in json_lines(path):
        row = checker.row(record, line)
        ids.append(row["paper_id"])
        labels.append(row["label"])
        lines.append(line)
    if not ids:
        raise InputError(path, "no labelled papers")
    if multi_label and len({len(label) for label in labels}) != 1:
        other = next(i for i, label in enumerate(labels) if len(label) != len(labels[0]))
        raise InputError(path, f"field 'label' has {len(labels[other])} items, but line {lines[0]} has "
                         f"{len(labels[0])}: every label list has one item per label", lines[other])
    return Labelled(ids, np.asarray(labels, dtype=np.float64 if numeric else np.int64), lines)


reads(CLASS_LABELS)(read_labels)
reads(LABEL_SETS)(partial(read_labels, multi_label=True))
reads(VALUES)(partial(read_labels, numeric=True))


@reads(QRELS)
def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`{"query_id", "cand_id", "score"}` lines as {query: {candidate: grade}} (`Judgements`: a pair judged twice
    with different grades is an error; SciRepEval's `get_qc_pairs` would keep the first)."""
    judgements = Judgements(path)
    checker = QRELS.checker(path)
    for line, record in json_lines(path):
        row = checker.row(record, line)
        judgements.add(row["query_id"], row["cand_id"], row["score"], line)
    if not judgements.grades:
        raise InputError(path, "no qrel lines")
    return judgements.grades


@reads(REVIEWERS)
def read_reviewers(path: Path) -> dict[str, list[str]]:
    """`{"r_id", "papers"}` lines: each reviewer's papers (doc ids)."""
    reviewers: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    checker = REVIEWERS.checker(path)
    for line, record in json_lines(path):
        row = checker.row(record, line)
        if row["r_id"] in reviewers:
            raise InputError(path, f"reviewer {row['r_id']!r} repeats line {first_line[row['r_id']]}", line)
        reviewers[row["r_id"]], first_line[row["r_id"]] = row["papers"], line
    if not reviewers:
        raise InputError(path, "no reviewers")
    return reviewers
