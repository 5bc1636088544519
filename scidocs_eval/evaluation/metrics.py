"""The metrics, exactly as the official SciDocs code computes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytrec_eval
from sklearn.metrics import f1_score


def percent(value: float) -> float:
    """×100 and rounded to 2 decimals, as the official code prints every number (numpy rounding)."""
    return float(np.round(100 * value, 2))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Macro-averaged F1 × 100, rounded to 2 decimals."""
    return percent(f1_score(y_true, y_pred, average="macro"))


def trec_measures(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  measures: Sequence[str] = ("map", "ndcg")) -> dict[str, dict[str, float]]:
    """Per-query trec_eval measures by pytrec_eval (full depth; ties broken by docid, descending).

    Queries absent from `run`, or with no ranked candidate, are left out, as trec_eval does.
    """
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(grades) for q, grades in relevance.items()}, set(measures))
    return evaluator.evaluate({q: dict(scores) for q, scores in run.items() if scores})


def mean_measures(per_query: Mapping[str, Mapping[str, float]], measures: Sequence[str]) -> dict[str, float]:
    """Mean of each measure over the queries, ×100, rounded to 2 decimals (0 when there is no query)."""
    return {m: percent(float(np.mean([q[m] for q in per_query.values()]))) if per_query else 0.0
            for m in measures}


def rank_terms(clicked_scores: np.ndarray, other_scores: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Per impression, the nDCG and P@1 terms of the clicked paper's rank among those shown (SPEC §5).

    `above` counts others scoring strictly higher plus half of those tied; the nDCG term is 1/log2(2 + above),
    the P@1 term 1.0 only when above == 0. Returns {"adj-NDCG", "adj-P@1"}, each (n_impressions,) float64.
    """
    above = np.array([np.sum(others > clicked) + 0.5 * np.sum(others == clicked)
                      for clicked, others in zip(clicked_scores, other_scores)], dtype=np.float64)
    return {"adj-NDCG": 1.0 / np.log2(2.0 + above), "adj-P@1": (above == 0).astype(np.float64)}


def propensity_adjusted(clicked_scores: np.ndarray, other_scores: Sequence[np.ndarray],
                        weights: np.ndarray, rounded: bool = True) -> dict[str, float]:
    """Propensity-adjusted nDCG and P@1 of the clicked paper's rank among those shown (SPEC §5).

    Args:
        clicked_scores: (n_impressions,) the ranker's score of each impression's clicked paper.
        other_scores: n_impressions arrays with the scores of the other papers shown.
        weights: (n_impressions,) inverse propensity of each clicked paper's display position.

    The weighted means of `rank_terms`: returns {"adj-NDCG", "adj-P@1"} ×100, rounded to 2 decimals (`rounded`)
    or with every digit (for choosing between settings, where rounding would make near-ties exact ones).
    """
    terms = rank_terms(clicked_scores, other_scores)
    ndcg, p_at_1 = terms["adj-NDCG"], terms["adj-P@1"]
    total = weights.sum()
    scale = percent if rounded else (lambda value: 100 * value)
    return {"adj-NDCG": scale(float(weights @ ndcg / total)), "adj-P@1": scale(float(weights @ p_at_1 / total))}
