"""Ranking tasks (co-view, co-read, cite, co-cite): the official rules one by one, by hand and by pytrec_eval."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from scidocs_eval.errors import MissingEmbeddingsError
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite
from scidocs_eval.tasks.ranking import build_run
from tests.builders import score_task


def qrel_suite(root: Path, lines: list[str], task: str = "cite", split: str = "test") -> Suite:
    path = root / task / f"{split}.qrel"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Suite(root)


def dcg(relevant_ranks: list[int]) -> float:
    return sum(1 / math.log2(rank + 1) for rank in relevant_ranks)


def pytrec_means(qrels: dict, run: dict) -> dict[str, float]:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    return {m: round(100 * float(np.mean([q[m] for q in per_query.values()])), 2) for m in ("map", "ndcg")}


QRELS = [
    # q1: the relevant c1 ties with c2 after rounding; trec_eval puts c2 first (ids descending).
    "q1 0 c1 1", "q1 0 c2 0", "q1 0 c1 1",
    # q2: r2 has no embedding (left out of the run, so not retrieved).
    "q2 0 r1 1", "q2 0 r2 1", "q2 0 n1 0",
    # q3: e1 has an empty embedding (-inf, last) though a zero vector would be nearest the query.
    "q3 0 e1 1", "q3 0 n2 0", "q3 0 n3 0",
    # q4: no embedding; q5: empty embedding; q6: every candidate missing.
    "q4 0 x1 1", "q5 0 x1 1", "q6 0 m1 1", "q6 0 m2 0",
]
EMBEDDINGS = {
    "q1": [0.0, 0.0], "c1": [1.000001, 0.0], "c2": [0.0, 1.000004],
    "q2": [0.0, 0.0], "r1": [1.0, 0.0], "n1": [0.3, 0.4],
    "q3": [0.0, 0.0], "e1": [], "n2": [3.0, 0.0], "n3": [0.0, 2.0],
    "q5": [], "x1": [1.0, 1.0], "q6": [5.0, 5.0],
}


@pytest.fixture()
def scored(tmp_path: Path):
    suite = qrel_suite(tmp_path, QRELS)
    return score_task(get_task("cite"), suite, EmbeddingStore.from_mapping(EMBEDDINGS))


def test_metrics_by_hand(scored) -> None:
    average_precision = [1 / 2, (1 / 2) / 2, 1 / 3]
    ndcg = [dcg([2]) / dcg([1]), dcg([2]) / dcg([1, 2]), dcg([3]) / dcg([1])]
    assert scored.metrics == {"map": round(100 * np.mean(average_precision), 2),
                              "ndcg": round(100 * np.mean(ndcg), 2)}
    assert scored.metrics == {"map": 36.11, "ndcg": 50.59}


def test_metrics_equal_pytrec_eval_on_the_run_by_hand(scored) -> None:
    qrels = {"q1": {"c1": 1, "c2": 0}, "q2": {"r1": 1, "r2": 1, "n1": 0}, "q3": {"e1": 1, "n2": 0, "n3": 0},
             "q4": {"x1": 1}, "q5": {"x1": 1}, "q6": {"m1": 1, "m2": 0}}
    run = {"q1": {"c1": -1.0, "c2": -1.0}, "q2": {"r1": -1.0, "n1": -0.5},
           "q3": {"e1": -1e9, "n2": -3.0, "n3": -2.0}}
    assert scored.metrics == pytrec_means(qrels, run)


def test_coverage(scored) -> None:
    assert scored.coverage == {"queries": 6, "queries_missing": 1, "queries_empty": 1, "candidates": 12,
                               "candidates_missing": 3, "candidates_empty": 1, "repeated_qrel_lines": 1,
                               "queries_scored": 3}


def test_build_run_scores(tmp_path: Path) -> None:
    qrels = qrel_suite(tmp_path, QRELS).qrels("cite", "test")
    run, _ = build_run(qrels, EmbeddingStore.from_mapping(EMBEDDINGS))
    assert run == {"q1": {"c1": -1.0, "c2": -1.0}, "q2": {"r1": -1.0, "n1": -0.5},
                   "q3": {"e1": -math.inf, "n2": -3.0, "n3": -2.0}, "q6": {}}


@pytest.mark.parametrize("relevant, expected_map", [("c1", 50.0), ("c9", 100.0)])
def test_rounding_ties_are_broken_by_id_descending(tmp_path: Path, relevant: str, expected_map: float) -> None:
    """Distances 1.000001 (relevant) and 1.000004 both score -1.0; the larger id goes first."""
    suite = qrel_suite(tmp_path, [f"q 0 {relevant} 1", "q 0 c2 0"])
    store = EmbeddingStore.from_mapping({"q": [0.0, 0.0], relevant: [1.000001, 0.0], "c2": [0.0, 1.000004]})
    result = score_task(get_task("cite"), suite, store)
    assert result.metrics["map"] == expected_map
    assert result.metrics == pytrec_means({"q": {relevant: 1, "c2": 0}}, {"q": {relevant: -1.0, "c2": -1.0}})


def test_unrounded_distances_would_not_tie(tmp_path: Path) -> None:
    """Distances differing in the 5th decimal stay apart: the nearer relevant paper ranks first."""
    suite = qrel_suite(tmp_path, ["q 0 c1 1", "q 0 c2 0"])
    store = EmbeddingStore.from_mapping({"q": [0.0, 0.0], "c1": [1.00001, 0.0], "c2": [0.0, 1.00004]})
    assert score_task(get_task("cite"), suite, store).metrics == {"map": 100.0, "ndcg": 100.0}


def test_numeric_looking_ids_are_strings(tmp_path: Path) -> None:
    suite = qrel_suite(tmp_path, ["100 0 200 1", "100 0 0300 0"])
    embeddings = tmp_path / "e.jsonl"
    embeddings.write_text('{"paper_id": 100, "embedding": [0, 0]}\n{"paper_id": 200, "embedding": [1, 0]}\n'
                          '{"paper_id": "0300", "embedding": [2, 0]}\n', encoding="utf-8")
    result = score_task(get_task("cite"), suite, EmbeddingStore.load(embeddings))
    assert result.metrics == {"map": 100.0, "ndcg": 100.0}
    assert result.coverage["queries_missing"] == 0 and result.coverage["candidates_missing"] == 0


def test_missing_error_lists_queries_first(tmp_path: Path) -> None:
    suite = qrel_suite(tmp_path, QRELS)
    with pytest.raises(MissingEmbeddingsError) as caught:
        score_task(get_task("cite"), suite, EmbeddingStore.from_mapping(EMBEDDINGS), missing="error")
    assert str(caught.value) == "task cite: 1 queries have no embedding: q4"
    assert caught.value.missing_ids == ["q4"]


def test_missing_error_lists_first_ten_candidates(tmp_path: Path) -> None:
    lines = [f"q 0 m{i:02d} 0" for i in range(12)]
    suite = qrel_suite(tmp_path, lines)
    with pytest.raises(MissingEmbeddingsError) as caught:
        score_task(get_task("cite"), suite, EmbeddingStore.from_mapping({"q": [1.0]}), missing="error")
    listed = ", ".join(f"m{i:02d}" for i in range(10))
    assert str(caught.value) == f"task cite: 12 candidates have no embedding: {listed} (and 2 more)"


def test_empty_embeddings_do_not_count_as_missing_under_error(tmp_path: Path) -> None:
    suite = qrel_suite(tmp_path, ["q 0 a 1", "q 0 b 0"])
    store = EmbeddingStore.from_mapping({"q": [0.0], "a": [], "b": [1.0]})
    result = score_task(get_task("cite"), suite, store, missing="error")
    assert result.metrics["map"] == 50.0


def test_no_query_scored_gives_zero(tmp_path: Path) -> None:
    suite = qrel_suite(tmp_path, ["q 0 a 1"], task="cocite")
    result = score_task(get_task("cocite"), suite, EmbeddingStore.from_mapping({"a": [1.0]}))
    assert result.metrics == {"map": 0.0, "ndcg": 0.0} and result.coverage["queries_scored"] == 0


def test_metrics_are_percent_rounded_to_two_decimals(tmp_path: Path) -> None:
    """One relevant paper at rank 3 of 3: AP = 1/3 -> 33.33; nDCG = 1/log2(4) = 0.5 -> 50.0."""
    suite = qrel_suite(tmp_path, ["q 0 a 1", "q 0 b 0", "q 0 c 0"], task="coview", split="val")
    store = EmbeddingStore.from_mapping({"q": [0.0], "a": [3.0], "b": [1.0], "c": [2.0]})
    result = score_task(get_task("coview"), suite, store, split="val")
    assert result.metrics == {"map": 33.33, "ndcg": 50.0}


def test_graded_relevance_uses_grade_as_gain(tmp_path: Path) -> None:
    suite = qrel_suite(tmp_path, ["q 0 a 1", "q 0 b 2", "q 0 c 0"])
    store = EmbeddingStore.from_mapping({"q": [0.0], "a": [1.0], "b": [2.0], "c": [3.0]})
    result = score_task(get_task("cite"), suite, store)
    ndcg = (1 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert result.metrics["ndcg"] == round(100 * ndcg, 2)
    assert result.metrics == pytrec_means({"q": {"a": 1, "b": 2, "c": 0}}, {"q": {"a": -1.0, "b": -2.0, "c": -3.0}})
