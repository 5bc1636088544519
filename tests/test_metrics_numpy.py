"""The retrieval metrics in numpy equal pytrec_eval's (the reference) to 1e-12, on random and adversarial runs: ties
in score (broken by document id, descending), unjudged documents, graded and negative grades, queries without a
relevant document, cut-offs beyond the ranking; and a search's top-k arrays score as the same run given as dicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.metrics import (
    MTEB_K_VALUES,
    mteb_metric_names,
    mteb_retrieval_measures,
    mteb_top_k_measures,
    trec_measures,
)

DOCS = ["d1", "d10", "d2", "d9", "D3", "a", "b", "ab", "é", "z1", "z10", "100", "11"]
"""ids whose string order is not their numeric order, nor case- or prefix-blind."""
SCORES = [-math.inf, -1.0, 0.0, 0.25, 0.5, 0.5000001, 1.0, 3.0]
"""few values, so that scores tie often."""
K_VALUES = (1, 2, 3, 5, 10, 20)

relevance_strategy = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3", "q4", "q5"]),
    st.dictionaries(st.sampled_from(DOCS), st.integers(-2, 4), min_size=1, max_size=8), min_size=1, max_size=5)
run_strategy = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3", "q4", "q5", "q6"]),
    st.dictionaries(st.sampled_from(DOCS), st.sampled_from(SCORES), max_size=len(DOCS)), max_size=6)


def _pytrec_mteb(relevance: dict, run: dict, k_values: tuple[int, ...]) -> dict[str, dict[str, float]]:
    """MTEB's metrics as MTEB computes them: pytrec_eval's measures, MRR from the (score, id)-sorted run."""
    cuts = ",".join(map(str, k_values))
    relevance = _judged_for_pytrec_eval(relevance)
    evaluator = pytrec_eval.RelevanceEvaluator(relevance, {f"{m}.{cuts}" for m in ("ndcg_cut", "map_cut", "recall",
                                                                                  "P", "success")})
    trec = evaluator.evaluate({q: s for q, s in run.items() if s and q in relevance})
    families = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P", "hit_rate": "success"}
    out = {}
    for query, grades in relevance.items():
        values = {f"{family}_at_{k}": trec.get(query, {}).get(f"{measure}_{k}", 0.0)
                  for family, measure in families.items() for k in k_values}
        ranked = sorted(run.get(query, {}).items(), key=lambda item: (item[1], item[0]), reverse=True)
        first = next((rank for rank, (doc, _) in enumerate(ranked, 1) if grades.get(doc, 0) > 0), None)
        values.update({f"mrr_at_{k}": 1 / first if first and first <= k else 0.0 for k in k_values})
        out[query] = values
    return out


def _judged_for_pytrec_eval(relevance: dict) -> dict:
    """`relevance` without the queries whose every grade is negative: trec_eval keeps a static per-query state
    that such a query does not reset (its relevance levels), so pytrec_eval reads the previous query's (or
    crashes: a segmentation fault with measure "ndcg"). Those queries score 0 on every measure here."""
    return {q: grades for q, grades in relevance.items() if max(grades.values()) >= 0}


def _assert_close(ours: dict, theirs: dict) -> None:
    for query in set(ours) - set(theirs):
        assert set(ours[query].values()) == {0.0}, query
    assert [q for q in ours if q in theirs] == list(theirs)
    for query, values in theirs.items():
        for name, value in values.items():
            assert ours[query][name] == pytest.approx(value, abs=1e-12, rel=0), (query, name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relevance_strategy, run_strategy)
def test_trec_measures_equal_pytrec_eval(relevance: dict, run: dict) -> None:
    measures = ["map", "ndcg", "ndcg_cut_3", "map_cut_5", "recall_2", "P_20", "success_1"]
    theirs = pytrec_eval.RelevanceEvaluator(_judged_for_pytrec_eval(relevance), set(measures)).evaluate(
        {q: scores for q, scores in run.items() if scores})  # trec_measures leaves out an empty ranking
    _assert_close(trec_measures(relevance, run, measures), theirs)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relevance_strategy, run_strategy)
def test_mteb_measures_equal_pytrec_eval_and_mtebs_mrr(relevance: dict, run: dict) -> None:
    _assert_close(mteb_retrieval_measures(relevance, run, K_VALUES), _pytrec_mteb(relevance, run, K_VALUES))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relevance_strategy, run_strategy, st.integers(1, len(DOCS)), st.randoms(use_true_random=False))
def test_top_k_arrays_score_as_the_same_run_of_dicts(relevance: dict, run: dict, depth: int, random) -> None:
    """Rows in any order, padded with -1; the arrays path ranks them itself."""
    query_ids = list(run)
    doc_ids = list(DOCS)
    random.shuffle(doc_ids)
    row_of = {doc: row for row, doc in enumerate(doc_ids)}
    indices = np.full((len(query_ids), depth), -1, dtype=np.int64)
    scores = np.full((len(query_ids), depth), -np.inf)
    kept = {}
    for row, query in enumerate(query_ids):
        items = list(run[query].items())[:depth]
        random.shuffle(items)
        kept[query] = dict(items)
        for column, (doc, score) in enumerate(items):
            indices[row, column], scores[row, column] = row_of[doc], score
    ours = mteb_top_k_measures(relevance, query_ids, doc_ids, indices, scores, K_VALUES)
    _assert_close(ours, _pytrec_mteb(relevance, kept, K_VALUES))


def test_random_runs_at_mteb_cutoffs() -> None:
    """A larger random run (200 queries, 1,500 documents, graded judgements) at MTEB's own cut-offs."""
    rng = np.random.default_rng(0)
    docs = [f"doc{i}" for i in range(1500)]
    relevance = {f"q{q}": {docs[d]: int(rng.integers(-1, 4)) for d in rng.choice(1500, rng.integers(1, 30))}
                 for q in range(200)}
    run = {q: {docs[d]: float(np.float32(rng.normal())) if rng.random() > 0.1 else 0.5
               for d in rng.choice(1500, 1100, replace=False)} for q in relevance}
    _assert_close(mteb_retrieval_measures(relevance, run), _pytrec_mteb(relevance, run, MTEB_K_VALUES))
    assert set(next(iter(mteb_retrieval_measures(relevance, run).values()))) == set(mteb_metric_names())


def test_a_nan_score_is_an_error_naming_the_query() -> None:
    with pytest.raises(ScidocsEvalError, match="query 'q1'.*NaN"):
        trec_measures({"q1": {"a": 1}}, {"q1": {"a": math.nan, "b": 1.0}})
    with pytest.raises(ScidocsEvalError, match="query 'q2'.*NaN"):
        mteb_top_k_measures({"q1": {"a": 1}, "q2": {"a": 1}}, ["q1", "q2"], ["a", "b"], np.array([[0, 1], [1, 0]]),
                            np.array([[1.0, 0.5], [0.3, math.nan]]))
