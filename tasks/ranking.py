"""Co-view, co-read, cite and co-cite: rank each query's candidates by L2 distance (official semantics).

Per query: score = -‖query − candidate‖₂ on the raw embeddings, in float64, rounded to 5 decimals (the
rounding creates ties, which trec_eval breaks by candidate id, descending). A query with no embedding, or an
empty one, is skipped; a candidate with no embedding is left out of the run; an empty candidate embedding
scores −inf. MAP and nDCG at full depth by pytrec_eval, averaged over the queries in the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from scidocs_eval.evaluation.integrity import DataShape, JudgedSplit
from scidocs_eval.evaluation.metrics import mean_measures, trec_measures
from scidocs_eval.evaluation.task import (
    MissingPolicy,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.formats.embeddings import EMPTY, MISSING, PRESENT, EmbeddingStore
from scidocs_eval.formats.suite import METADATA_FILES, Qrels, Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import Constraints, InputPath, validate_params

np = lazy_module("numpy", __name__)


def build_run(qrels: Qrels, embeddings: EmbeddingStore) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """The run (query -> candidate -> score) and the coverage counts, by the official rules."""
    run: dict[str, dict[str, float]] = {}
    coverage = dict.fromkeys(("queries", "queries_missing", "queries_empty", "candidates",
                              "candidates_missing", "candidates_empty"), 0)
    coverage["repeated_qrel_lines"] = qrels.repeated
    query_ids = list(qrels.candidates)
    query_status = embeddings.status(query_ids)
    query_rows = embeddings.rows(query_ids)
    coverage["queries"] = len(query_ids)
    for query_id, status, row in zip(query_ids, query_status, query_rows):
        candidates = qrels.candidates[query_id]
        candidate_status = embeddings.status(candidates)
        coverage["candidates"] += len(candidates)
        coverage["candidates_missing"] += int(np.sum(candidate_status == MISSING))
        coverage["candidates_empty"] += int(np.sum(candidate_status == EMPTY))
        if status != PRESENT:
            coverage["queries_missing" if status == MISSING else "queries_empty"] += 1
            continue
        kept = [c for c, s in zip(candidates, candidate_status) if s != MISSING]
        kept_status = candidate_status[candidate_status != MISSING]
        query = embeddings.matrix[row].astype(np.float64)
        vectors = embeddings.vectors(kept, dtype=np.float64)
        scores = np.round(-np.linalg.norm(vectors - query, axis=1), 5)
        scores[kept_status == EMPTY] = -np.inf
        run[query_id] = dict(zip(kept, scores.tolist()))
    return run, coverage


def ranking_spec(name: str, description: str, embedding_group: str = "user-citation",
                 metadata_file: str = METADATA_FILES["view_cite_read"], table1: bool = True) -> TaskSpec:
    """The spec of a ranking task whose qrels are in the folder `name` (Table 1 columns NAME_map, NAME_ndcg)."""
    columns = {"map": f"{name}_map", "ndcg": f"{name}_ndcg"} if table1 else {}
    return TaskSpec(name, description, "ranking", ("map", "ndcg"), "map", embedding_group, metadata_file, columns,
                    paper_pairs=True)


@dataclass(frozen=True)
class JudgedQueries(TaskData):
    """The qrels of the split: each query's candidates and grades."""

    qrels: Qrels


class RankingTask(Task[JudgedQueries]):
    """A qrel-based ranking task (MAP and nDCG); a subclass's spec names the folder of its qrels.

    Args:
        folder: the suite folder of its qrels (default: the one named after the task).
    """

    parameter_constraints: ClassVar[Constraints] = {"folder": [InputPath(folder=True), None]}

    def __init__(self, folder: str | None = None):
        validate_params(self.parameter_constraints, {"folder": folder}, f"task {self.name!r}")
        self.folder = folder

    @property
    def qrels_folder(self) -> str:
        return self.folder or self.name

    def required_files(self, split: str) -> list[str]:
        return [f"{self.qrels_folder}/{split}.qrel"]

    def input_folders(self, suite: Suite, split: str) -> list[Path]:
        return [suite.path(self.qrels_folder)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> JudgedQueries:
        return JudgedQueries(split, texts, suite.qrels(self.qrels_folder, split))

    def paper_ids(self, data: JudgedQueries) -> list[str]:
        return [paper for query, candidates in data.qrels.candidates.items() for paper in (query, *candidates)]

    def data_shapes(self, data: JudgedQueries) -> list[DataShape]:
        qrels = data.qrels
        return [JudgedSplit(self.name, f"{self.qrels_folder}/{data.split}.qrel", qrels.relevance,
                            repeated=qrels.repeated, conflicts=qrels.conflicts)]

    def evaluate(self, data: JudgedQueries, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        qrels = data.qrels
        queries = list(qrels.candidates)
        check_missing(self.name, "queries", queries, embeddings.status(queries), missing)
        candidates = sorted({c for cs in qrels.candidates.values() for c in cs})
        check_missing(self.name, "candidates", candidates, embeddings.status(candidates), missing)
        run, coverage = build_run(qrels, embeddings)
        per_query = trec_measures(qrels.relevance, run, self.metrics)
        coverage["queries_scored"] = len(per_query)
        items = {"unit": "query", "ids": list(per_query),
                 **{m: [values[m] for values in per_query.values()] for m in self.metrics}}
        return TaskResult(self.name, mean_measures(per_query, self.metrics), coverage, items=items)


@register_task
class CoviewTask(RankingTask):
    spec = ranking_spec("coview", "co-view: papers viewed in the same browsing session")


@register_task
class CoreadTask(RankingTask):
    spec = ranking_spec("coread", "co-read: papers whose PDFs were opened in the same session")


@register_task
class CiteTask(RankingTask):
    spec = ranking_spec("cite", "cite: papers the query cites")


@register_task
class CociteTask(RankingTask):
    spec = ranking_spec("cocite", "co-cite: papers cited together with the query")
